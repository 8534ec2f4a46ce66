//! The records carriers push: 1NCE's and emnify's Data Streamer (the REST/webhook
//! integration), one JSON record or an array of them per POST (1NCE: up to 3,000). The two
//! platforms share the record format (1NCE's platform is built on emnify's):
//!
//! * a **usage record** has `traffic_type` (`id` 5 data, 6 SMS); a data record carries its
//!   unique `id` (a 64-bit number), `sim.iccid`, `start_timestamp`/`end_timestamp` (UTC) and
//!   `volume` {`total`, `rx`, `tx`} in **megabytes**, decimal with 6 places (`DECIMAL(14,6)`);
//!   1NCE sends one per open PDP context every 15 minutes once 100 kB were used and one when it
//!   closes (emnify every 45 s), each with the usage since the previous record of the session;
//! * an **event record** has `event_type` and no `traffic_type` (network events, SIM changes).
//!
//! Only data usage records count; the rest are reported by kind. Figures are read as decimal
//! text, never as `f64` (an exponent form is read exactly). `docs/carriers/1nce.md` and
//! `emnify.md` say where each field comes from.

use super::emnify::wire::{figure, timestamp};
use super::units::MAX_MONTH_TOTAL_MB;
use chrono::{DateTime, Utc};
use domain::Megabytes;
use serde_json::Value;

/// The most records one post may carry (1NCE documents at most 3,000; room for emnify's bulk
/// mode). A larger post is refused whole.
pub const MAX_STREAM_RECORDS: usize = 10_000;
/// The longest record id taken (`tb_carrier_event.record_id`).
pub const MAX_RECORD_ID_LEN: usize = 64;
/// The most faults one refusal lists.
const MAX_FAULTS: usize = 20;

/// One record of a post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamRecord {
    /// A data usage record: `megabytes` used in the session part that ended at `ended_at`.
    DataUsage {
        record_id: String,
        iccid: String,
        ended_at: DateTime<Utc>,
        megabytes: Megabytes,
    },
    /// Anything else, by kind: `sms`, `event`, `traffic_type_<id>`.
    Other { kind: String },
}

/// Why a post is refused: the JSON pointer of the field, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamFault {
    pub pointer: String,
    pub message: String,
}

impl StreamFault {
    fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

/// The records of a Data Streamer post, or every fault found (at most 20): a post with one bad
/// record is refused whole, so nothing of it is written and the carrier resends it.
pub fn parse_data_streamer(body: &Value) -> Result<Vec<StreamRecord>, Vec<StreamFault>> {
    let (records, single) = match body {
        Value::Array(items) => (items.as_slice(), false),
        Value::Object(_) => (std::slice::from_ref(body), true),
        _ => {
            return Err(vec![StreamFault::new(
                "",
                "expected a JSON array of records, or one record",
            )]);
        }
    };
    if records.len() > MAX_STREAM_RECORDS {
        return Err(vec![StreamFault::new(
            "",
            format!(
                "{} records in one post; at most {MAX_STREAM_RECORDS}",
                records.len()
            ),
        )]);
    }
    let mut out = Vec::with_capacity(records.len());
    let mut faults = Vec::new();
    for (i, record) in records.iter().enumerate() {
        let at = if single {
            String::new()
        } else {
            format!("/{i}")
        };
        match parse_record(record, &at) {
            Ok(r) => out.push(r),
            Err(f) => {
                faults.push(f);
                if faults.len() >= MAX_FAULTS {
                    break;
                }
            }
        }
    }
    if faults.is_empty() {
        Ok(out)
    } else {
        Err(faults)
    }
}

fn parse_record(record: &Value, at: &str) -> Result<StreamRecord, StreamFault> {
    let Some(fields) = record.as_object() else {
        return Err(StreamFault::new(at, "a record must be a JSON object"));
    };
    let traffic = match fields.get("traffic_type") {
        None | Some(Value::Null) => {
            return if fields.contains_key("event_type") {
                Ok(StreamRecord::Other {
                    kind: "event".to_owned(),
                })
            } else {
                Err(StreamFault::new(
                    at,
                    "neither a usage record (traffic_type) nor an event record (event_type)",
                ))
            };
        }
        Some(t) => t,
    };
    let traffic_id = traffic
        .get("id")
        .and_then(Value::as_i64)
        .ok_or_else(|| StreamFault::new(format!("{at}/traffic_type/id"), "must be an integer"))?;
    match traffic_id {
        5 => {}
        6 => {
            return Ok(StreamRecord::Other {
                kind: "sms".to_owned(),
            });
        }
        other => {
            return Ok(StreamRecord::Other {
                kind: format!("traffic_type_{other}"),
            });
        }
    }
    let record_id = match fields.get("id") {
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
        _ => {
            return Err(StreamFault::new(
                format!("{at}/id"),
                "the record id must be an integer or a non-empty string",
            ));
        }
    };
    if record_id.len() > MAX_RECORD_ID_LEN {
        return Err(StreamFault::new(
            format!("{at}/id"),
            format!("the record id is longer than {MAX_RECORD_ID_LEN} characters"),
        ));
    }
    let iccid = fields
        .get("sim")
        .and_then(|s| s.get("iccid"))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty() && s.len() <= 32)
        .ok_or_else(|| {
            StreamFault::new(
                format!("{at}/sim/iccid"),
                "must be an ICCID of 1 to 32 characters",
            )
        })?
        .to_owned();
    let ended_at = fields
        .get("end_timestamp")
        .and_then(Value::as_str)
        .and_then(timestamp)
        .ok_or_else(|| {
            StreamFault::new(
                format!("{at}/end_timestamp"),
                "must be a timestamp (ISO 8601, UTC)",
            )
        })?;
    let megabytes = fields
        .get("volume")
        .and_then(|v| v.get("total"))
        .and_then(figure)
        .filter(|mb| *mb <= MAX_MONTH_TOTAL_MB)
        .ok_or_else(|| {
            StreamFault::new(
                format!("{at}/volume/total"),
                "must be a non-negative decimal number of megabytes",
            )
        })?;
    Ok(StreamRecord::DataUsage {
        record_id,
        iccid,
        ended_at,
        megabytes,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;
    use serde_json::json;

    /// A data usage record as 1NCE's documentation shows one (placeholders filled in).
    fn onence_data() -> Value {
        json!({
            "imsi": "901405100000001",
            "organisation": {"name": "8100xxxx", "id": 1234},
            "start_timestamp": "2021-08-09T12:59:05Z",
            "sim": {"msisdn": "882285100000001", "iccid": "89882806660000000001",
                    "id": 123456, "production_date": "2018-04-17T15:01:50Z"},
            "currency": {"id": 1, "symbol": "€", "code": "EUR"},
            "traffic_type": {"description": "Data", "id": 5},
            "id": 1234567890_u64,
            "end_timestamp": "2021-08-09T13:14:05Z",
            "endpoint": {"tags": null, "ip_address": "10.0.0.1", "name": "n", "imei": "1", "id": 1},
            "cost": 0.001176,
            "volume": {"total": 0.080912, "rx": 0.066377, "tx": 0.014535}
        })
    }

    #[test]
    fn a_data_record_is_read_exactly() {
        let records = parse_data_streamer(&json!([onence_data()])).unwrap();
        assert_eq!(
            records,
            vec![StreamRecord::DataUsage {
                record_id: "1234567890".to_owned(),
                iccid: "89882806660000000001".to_owned(),
                ended_at: "2021-08-09T13:14:05Z".parse().unwrap(),
                megabytes: dec!(0.080912),
            }]
        );
    }

    #[test]
    fn one_record_alone_sms_and_events_and_emnify_timestamps() {
        let mut r = onence_data();
        r["end_timestamp"] = json!("2019-01-31T00:00:00.000+0000");
        r["volume"]["total"] = json!("1.5E-6");
        let one = parse_data_streamer(&r).unwrap();
        let StreamRecord::DataUsage {
            ended_at,
            megabytes,
            ..
        } = &one[0]
        else {
            panic!("{one:?}")
        };
        assert_eq!(
            *ended_at,
            "2019-01-31T00:00:00Z".parse::<DateTime<Utc>>().unwrap()
        );
        assert_eq!(*megabytes, dec!(0.0000015));
        let mut sms = onence_data();
        sms["traffic_type"] = json!({"description": "SMS", "id": 6});
        let event = json!({"id": 1, "event_type": {"id": 1, "description": "Update location"}});
        let records = parse_data_streamer(&json!([sms, event])).unwrap();
        assert_eq!(
            records,
            vec![
                StreamRecord::Other { kind: "sms".into() },
                StreamRecord::Other {
                    kind: "event".into()
                }
            ]
        );
    }

    #[test]
    fn a_bad_record_refuses_the_post_naming_each_field() {
        let mut no_volume = onence_data();
        no_volume["volume"] = json!({"rx": 1});
        let mut negative = onence_data();
        negative["volume"]["total"] = json!(-1);
        let mut no_iccid = onence_data();
        no_iccid["sim"] = json!({});
        let faults = parse_data_streamer(&json!([onence_data(), no_volume, negative, no_iccid, 7]))
            .unwrap_err();
        let pointers: Vec<&str> = faults.iter().map(|f| f.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            ["/1/volume/total", "/2/volume/total", "/3/sim/iccid", "/4"]
        );
        assert_eq!(parse_data_streamer(&json!("x")).unwrap_err()[0].pointer, "");
        assert!(parse_data_streamer(&json!({"foo": 1})).is_err());
        let mut long_id = onence_data();
        long_id["id"] = json!("x".repeat(65));
        assert_eq!(parse_data_streamer(&long_id).unwrap_err()[0].pointer, "/id");
    }
}
