use super::request::transid_ok;
use super::wire::kb;
use rust_decimal_macros::dec;

#[test]
fn transid_is_appid_stamp_and_sequence() {
    assert!(transid_ok("A1", "A12026040112000000000001"));
    assert!(!transid_ok("A1", "A1202604011200000000001"));
    assert!(!transid_ok("A1", "B12026040112000000000001"));
    assert!(!transid_ok("A1", "A12026139912000000000001"));
}

#[test]
fn megabytes_become_exact_kilobytes() {
    assert_eq!(kb(dec!(1)), "1024");
    assert_eq!(kb(dec!(100.5)), "102912");
    assert_eq!(kb(dec!(0.0009765625)), "1");
    assert_eq!(kb(dec!(0)), "0");
}
