use super::wire::{figure, id_of, jwt_exp, network_of, quota_status_of, timestamp};
use chrono::Utc;
use domain::{NetworkStatus, PackageStatus};
use rust_decimal_macros::dec;
use serde_json::Value;

#[test]
fn figures_are_read_exactly_even_in_exponent_form() {
    let v: Value = serde_json::from_str("100.5").unwrap();
    assert_eq!(figure(&v), Some(dec!(100.5)));
    let v: Value = serde_json::from_str("9.5367431640625E-7").unwrap();
    assert_eq!(figure(&v), Some(dec!(0.00000095367431640625)));
    assert_eq!(
        figure(&Value::String("0.0009765625".into())),
        Some(dec!(0.0009765625))
    );
    assert_eq!(figure(&Value::String("-1".into())), None);
    assert_eq!(figure(&Value::String("abc".into())), None);
    assert_eq!(figure(&Value::Null), None);
}

#[test]
fn the_status_tables_are_explicit() {
    assert_eq!(network_of(1), Some(NetworkStatus::Online));
    assert_eq!(network_of(2), Some(NetworkStatus::Stopped));
    assert_eq!(network_of(0), Some(NetworkStatus::Stopped));
    assert_eq!(network_of(3), Some(NetworkStatus::Stopped));
    assert_eq!(network_of(4), Some(NetworkStatus::Online));
    assert_eq!(network_of(5), None);
    assert_eq!(
        quota_status_of(3).map(|s| s.0),
        Some(PackageStatus::Expired)
    );
    assert_eq!(quota_status_of(0), None);
    assert_eq!(id_of(&Value::String("2".into())), Some(2));
}

#[test]
fn the_jwt_exp_is_read_without_verifying() {
    // {"alg":"HS256"} . {"exp":1700000000} . sig
    let token = "eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjE3MDAwMDAwMDB9.c2ln";
    assert_eq!(jwt_exp(token), Some(1_700_000_000));
    assert_eq!(jwt_exp("opaque"), None);
}

#[test]
fn emnify_timestamps_parse() {
    let want = chrono::TimeZone::with_ymd_and_hms(&Utc, 2019, 1, 31, 0, 0, 0).unwrap();
    assert_eq!(timestamp("2019-01-31T00:00:00.000+0000"), Some(want));
    assert_eq!(timestamp("2019-01-31T00:00:00Z"), Some(want));
    assert_eq!(timestamp("2019-01-31"), Some(want));
    assert_eq!(timestamp("soon"), None);
}
