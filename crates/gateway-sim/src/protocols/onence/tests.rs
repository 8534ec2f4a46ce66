use super::auth::base64_decode;
use super::wire::{luhn_digit, other_iccid};

#[test]
fn base64_and_luhn() {
    assert_eq!(
        base64_decode("c2ltLTFuY2UtY2xpZW50OnNpbS0xbmNlLXNlY3JldA==").as_deref(),
        Some(&b"sim-1nce-client:sim-1nce-secret"[..])
    );
    assert_eq!(base64_decode("a*b"), None);
    // 7992739871 has the Luhn check digit 3.
    assert_eq!(luhn_digit("7992739871"), Some(3));
    assert_eq!(other_iccid("8988"), "8989");
    assert_eq!(other_iccid("8989"), "8980");
}
