use super::command::xml_text;
use super::wire::{cst_datetime, encode, sign, to_mb};
use chrono::{TimeZone, Utc};
use rust_decimal_macros::dec;

#[test]
fn sign_follows_the_documented_example() {
    assert_eq!(
        sign(
            "a=1&b=2&c=3",
            r#"{"name":"xf","age":"dd"}"#,
            "d1209cfefe895364e03",
            "20201101021435"
        ),
        "3863613035653132306631333231313733383637376333326536316631643934"
    );
}

#[test]
fn units_and_dates_convert_exactly() {
    assert_eq!(to_mb(dec!(1025), "KB"), Some(dec!(1.0009765625)));
    assert_eq!(to_mb(dec!(42118.59), "MB"), Some(dec!(42118.59)));
    assert_eq!(to_mb(dec!(1.5), "GB"), Some(dec!(1536)));
    assert_eq!(to_mb(dec!(1), "TB"), None);
    assert_eq!(
        cst_datetime("2026-03-01 08:00:00"),
        Some(
            Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0)
                .single()
                .unwrap_or_default()
        )
    );
    assert_eq!(cst_datetime("2026/03/01"), None);
}

#[test]
fn xml_fields_are_read_without_regard_to_case() {
    let doc = "<?xml version=\"1.0\"?><SvcCont><RESULT>0</RESULT><resultMsg>a &amp; b</resultMsg></SvcCont>";
    assert_eq!(xml_text(doc, "result").as_deref(), Some("0"));
    assert_eq!(xml_text(doc, "RESULTMSG").as_deref(), Some("a & b"));
    assert_eq!(xml_text(doc, "ACCESS_NUMBER"), None);
    assert_eq!(encode("8986 0A+"), "8986%200A%2B");
}
