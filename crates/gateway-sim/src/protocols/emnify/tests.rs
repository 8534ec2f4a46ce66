use super::ids::{iccid_forms, iccid_of_id, luhn_digit, sim_id_of};
use super::jwt::{b64url, b64url_decode, issue, verify};

#[test]
fn luhn_and_iccid_forms() {
    // The documents' sample SIM: 8988303000008013931 → 89883030000080139311.
    assert_eq!(luhn_digit("8988303000008013931"), Some('1'));
    assert_eq!(
        iccid_forms("8988303000008013931"),
        (
            "8988303000008013931".to_owned(),
            "89883030000080139311".to_owned()
        )
    );
    assert_eq!(iccid_forms("89860000000000000001").0, "8986000000000000000");
}

#[test]
fn sim_ids_are_stable_and_found_back() {
    let a = sim_id_of("89860000000000000001");
    assert_eq!(a, sim_id_of("89860000000000000001"));
    assert!(a < (1 << 53));
    assert_eq!(iccid_of_id(a).as_deref(), Some("89860000000000000001"));
}

#[test]
fn base64url_round_trips() {
    for s in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
        assert_eq!(b64url_decode(&b64url(s.as_bytes())).unwrap(), s.as_bytes());
    }
    assert_eq!(b64url(b"foobar"), "Zm9vYmFy");
    assert_eq!(b64url(b"fo"), "Zm8");
}

#[test]
fn a_jwt_verifies_and_a_tampered_one_does_not() {
    let t = issue("abc", 1, 2, 7);
    assert_eq!(t.split('.').count(), 3);
    assert_eq!(verify(&t, 7).as_deref(), Some("abc"));
    assert_eq!(verify(&t, 8), None);
    let mut parts: Vec<&str> = t.split('.').collect();
    let forged = b64url(br#"{"jti":"abc","exp":99999999999}"#);
    parts[1] = &forged;
    assert_eq!(verify(&parts.join("."), 7), None);
}
