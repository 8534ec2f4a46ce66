//! SIM ids: emnify's numeric id of a SIM, stable per ICCID; the two ICCID forms; the card a
//! list filter criterion names.

use crate::SimState;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Every SIM id the simulator has shown, to find the card back (shared by the simulators of one
/// process: the id depends on the ICCID alone, so they agree).
fn registry() -> &'static Mutex<HashMap<u64, Box<str>>> {
    static IDS: OnceLock<Mutex<HashMap<u64, Box<str>>>> = OnceLock::new();
    IDS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The SIM id of an ICCID: FNV-1a, kept within JSON's exact integers (2^53).
pub(super) fn sim_id_of(iccid: &str) -> u64 {
    let h = iccid.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let id = h & ((1 << 53) - 1);
    let id = id.max(1);
    registry()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(id)
        .or_insert_with(|| iccid.into());
    id
}

pub(super) fn iccid_of_id(id: u64) -> Option<String> {
    registry()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&id)
        .map(|s| s.to_string())
}

/// The Luhn check digit of a digit string; `None` if it holds anything but digits.
pub(super) fn luhn_digit(digits: &str) -> Option<char> {
    let mut sum = 0u32;
    for (i, c) in digits.bytes().rev().enumerate() {
        if !c.is_ascii_digit() {
            return None;
        }
        let mut d = u32::from(c - b'0');
        if i % 2 == 0 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
    }
    char::from_digit((10 - sum % 10) % 10, 10)
}

/// (`iccid`, `iccid_with_luhn`) of a fleet ICCID.
pub(super) fn iccid_forms(fleet_iccid: &str) -> (String, String) {
    if fleet_iccid.len() == 20 {
        (fleet_iccid[..19].to_owned(), fleet_iccid.to_owned())
    } else {
        let luhn = luhn_digit(fleet_iccid).unwrap_or('0');
        (fleet_iccid.to_owned(), format!("{fleet_iccid}{luhn}"))
    }
}

/// The fleet card a `q` criterion names, if any.
pub(super) fn find_by(st: &SimState, field: &str, value: &str) -> Option<String> {
    let fleet = &st.0.fleet;
    let known = |iccid: &str| fleet.network(iccid).is_some();
    match field {
        "iccid_with_luhn" => {
            if value.len() == 20 && known(value) {
                return Some(value.to_owned());
            }
            let base = value.get(..value.len().checked_sub(1)?)?;
            (base.len() != 20 && known(base) && iccid_forms(base).1 == value)
                .then(|| base.to_owned())
        }
        "iccid" => {
            if value.len() != 20 && known(value) {
                return Some(value.to_owned());
            }
            (0..10)
                .map(|d| format!("{value}{d}"))
                .find(|c| c.len() == 20 && known(c))
        }
        "id" => {
            let id = value.parse::<u64>().ok()?;
            iccid_of_id(id).filter(|i| known(i))
        }
        _ => None,
    }
}
