use super::search::instant_param;
use super::wire::{network_of, segment};
use chrono::{TimeZone, Utc};
use domain::NetworkStatus;

#[test]
fn every_documented_status_has_a_network_meaning() {
    for s in ["ACTIVATED", "ACTIVATION_READY", "TEST_READY"] {
        assert_eq!(network_of(s), Some(NetworkStatus::Online), "{s}");
    }
    for s in ["DEACTIVATED", "INVENTORY", "RETIRED", "PURGED", "REPLACED"] {
        assert_eq!(network_of(s), Some(NetworkStatus::Stopped), "{s}");
    }
    assert_eq!(network_of("activated"), None);
    assert_eq!(network_of("SUSPENDED"), None);
}

#[test]
fn request_texts_are_encoded() {
    assert_eq!(segment("89860012345"), "89860012345");
    assert_eq!(segment("89/86 0"), "89%2F86%200");
    let at = Utc.with_ymd_and_hms(2016, 4, 18, 17, 31, 34).unwrap();
    assert_eq!(instant_param(at), "2016-04-18T17:31:34%2B00%3A00");
}
