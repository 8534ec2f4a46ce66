use super::auth::base64_decode;
use super::device::other_iccid;
use super::search::parse_instant;
use chrono::{TimeZone, Utc};

#[test]
fn base64_decodes_basic_credentials() {
    assert_eq!(
        base64_decode("c2ltLWNjLXVzZXI6c2ltLWNjLWFwaS1rZXk=").as_deref(),
        Some(&b"sim-cc-user:sim-cc-api-key"[..])
    );
    assert_eq!(base64_decode("YQ==").as_deref(), Some(&b"a"[..]));
    assert_eq!(base64_decode("YWI=").as_deref(), Some(&b"ab"[..]));
    assert_eq!(base64_decode("YWJj").as_deref(), Some(&b"abc"[..]));
    assert_eq!(base64_decode("YQ=="), base64_decode("YQ=="));
    assert!(base64_decode("YQ=").is_none());
    assert!(base64_decode("Y===").is_none());
    assert!(base64_decode("YQ==YWJj").is_none());
    assert!(base64_decode("!!!!").is_none());
}

#[test]
fn another_iccid_differs() {
    assert_eq!(other_iccid("8986001"), "8986000");
    assert_eq!(other_iccid("8986000"), "8986001");
}

#[test]
fn instants_parse_in_the_documented_forms() {
    let want = Utc.with_ymd_and_hms(2016, 4, 18, 17, 31, 34).single();
    assert_eq!(parse_instant("2016-04-18T17:31:34+00:00"), want);
    assert_eq!(parse_instant("2016-04-18T17:31:34Z"), want);
    assert_eq!(parse_instant("2016-04-18T19:31:34+0200"), want);
    // A `+` the client forgot to encode arrives as a space.
    assert_eq!(parse_instant("2016-04-18T17:31:34 00:00"), None);
}
