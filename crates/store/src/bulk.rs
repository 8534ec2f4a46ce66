//! Column-array statements for bulk inserts: one `INSERT ... SELECT FROM UNNEST($1, $2, ...)`
//! per chunk, whatever the number of rows. sea-query's array values cannot hold NULL elements,
//! so each nullable column travels with a `has_*` flag array.

use chrono::{DateTime, Utc};
use domain::{DeviceId, NewCard, NewPackageUsage, PackageId, PackageOwner};
use rust_decimal::Decimal;
use sea_orm::{Statement, Value};

use crate::sql::stmt;

/// Rows per `INSERT ... SELECT FROM UNNEST` statement of a bulk insert: large enough that the
/// per-statement cost vanishes, small enough to keep each statement's memory modest.
pub(crate) const BULK_CHUNK: usize = 20_000;

/// Column arrays of one chunk of cards.
#[derive(Default)]
struct CardColumns {
    iccid: Vec<String>,
    msisdn: Vec<String>,
    has_msisdn: Vec<bool>,
    carrier_id: Vec<i64>,
    card_category: Vec<String>,
    status: Vec<i16>,
    real_name_status: Vec<i16>,
    network_status: Vec<i16>,
    enable_polling: Vec<bool>,
    device_id: Vec<i64>,
    has_device: Vec<bool>,
}

impl CardColumns {
    fn of(cards: &[NewCard]) -> Self {
        let mut c = CardColumns::default();
        for card in cards {
            c.iccid.push(card.iccid.clone());
            c.msisdn.push(card.msisdn.clone().unwrap_or_default());
            c.has_msisdn.push(card.msisdn.is_some());
            c.carrier_id.push(card.carrier_id.get());
            c.card_category.push(card.card_category.as_str().to_owned());
            c.status.push(card.status);
            c.real_name_status.push(i16::from(card.real_name_status));
            c.network_status.push(i16::from(card.network_status));
            c.enable_polling.push(card.enable_polling);
            c.device_id.push(card.device_id.map_or(0, DeviceId::get));
            c.has_device.push(card.device_id.is_some());
        }
        c
    }

    fn values(self) -> Vec<Value> {
        vec![
            self.iccid.into(),
            self.msisdn.into(),
            self.has_msisdn.into(),
            self.carrier_id.into(),
            self.card_category.into(),
            self.status.into(),
            self.real_name_status.into(),
            self.network_status.into(),
            self.enable_polling.into(),
            self.device_id.into(),
            self.has_device.into(),
        ]
    }
}

/// Inserts one chunk and returns the new ids in input order. `RETURNING` order is not
/// guaranteed by PostgreSQL, so the ids are joined back to the input by `iccid` (unique among
/// live cards, hence within the chunk, or the insert fails) and sorted by the input's ordinal.
const INSERT_CARDS: &str = r#"
WITH input AS (
    SELECT * FROM UNNEST($1::varchar[], $2::varchar[], $3::bool[], $4::bigint[], $5::varchar[],
                         $6::smallint[], $7::smallint[], $8::smallint[], $9::bool[],
                         $10::bigint[], $11::bool[])
        WITH ORDINALITY AS t(iccid, msisdn, has_msisdn, carrier_id, card_category, status,
                             real_name_status, network_status, enable_polling, device_id,
                             has_device, ord)
),
inserted AS (
    INSERT INTO tb_iot_card (iccid, msisdn, carrier_id, card_category, status,
                             real_name_status, network_status, enable_polling, device_id)
    SELECT iccid, CASE WHEN has_msisdn THEN msisdn END, carrier_id, card_category, status,
           real_name_status, network_status, enable_polling,
           CASE WHEN has_device THEN device_id END
    FROM input
    ORDER BY ord
    RETURNING id, iccid
)
SELECT inserted.id FROM inserted JOIN input USING (iccid) ORDER BY input.ord
"#;

/// The statement inserting one chunk of cards; it returns their ids in input order.
pub(crate) fn insert_cards(cards: &[NewCard]) -> Statement {
    stmt(INSERT_CARDS, CardColumns::of(cards).values())
}

/// The statement inserting one chunk of bought packages.
pub(crate) fn insert_usages(usages: &[NewPackageUsage]) -> Statement {
    stmt(INSERT_USAGES, UsageColumns::of(usages).values())
}

/// Column arrays of one chunk of `create_usages_bulk`; nullable columns travel with a `has_*`
/// flag array (sea-query array values cannot hold NULL elements).
#[derive(Default)]
struct UsageColumns {
    card: Vec<i64>,
    has_card: Vec<bool>,
    device: Vec<i64>,
    has_device: Vec<bool>,
    package: Vec<i64>,
    has_package: Vec<bool>,
    external: Vec<String>,
    has_external: Vec<bool>,
    status: Vec<String>,
    limit: Vec<Decimal>,
    has_limit: Vec<bool>,
    ratio: Vec<Decimal>,
    used: Vec<Decimal>,
    on_realname: Vec<bool>,
    activated: Vec<DateTime<Utc>>,
    has_activated: Vec<bool>,
    expires: Vec<DateTime<Utc>>,
    has_expires: Vec<bool>,
    reset_cycle: Vec<String>,
    next_reset: Vec<DateTime<Utc>>,
    has_next_reset: Vec<bool>,
}

pub(crate) fn push_opt<T: Default>(values: &mut Vec<T>, flags: &mut Vec<bool>, v: Option<T>) {
    flags.push(v.is_some());
    values.push(v.unwrap_or_default());
}

impl UsageColumns {
    fn of(usages: &[NewPackageUsage]) -> Self {
        let mut c = UsageColumns::default();
        for u in usages {
            let (card, device) = match u.owner {
                PackageOwner::Card(id) => (Some(id.get()), None),
                PackageOwner::Device(id) => (None, Some(id.get())),
            };
            push_opt(&mut c.card, &mut c.has_card, card);
            push_opt(&mut c.device, &mut c.has_device, device);
            push_opt(
                &mut c.package,
                &mut c.has_package,
                u.package_id.map(PackageId::get),
            );
            push_opt(&mut c.external, &mut c.has_external, u.external_id.clone());
            c.status.push(u.status.as_str().to_owned());
            push_opt(&mut c.limit, &mut c.has_limit, u.data_limit_mb);
            c.ratio.push(u.virtual_ratio);
            c.used.push(u.used_mb);
            c.on_realname.push(u.activate_on_realname);
            push_opt(&mut c.activated, &mut c.has_activated, u.activated_at);
            push_opt(&mut c.expires, &mut c.has_expires, u.expires_at);
            c.reset_cycle.push(u.reset_cycle.as_str().to_owned());
            push_opt(&mut c.next_reset, &mut c.has_next_reset, u.next_reset_at);
        }
        c
    }

    fn values(self) -> Vec<Value> {
        vec![
            self.card.into(),
            self.has_card.into(),
            self.device.into(),
            self.has_device.into(),
            self.package.into(),
            self.has_package.into(),
            self.external.into(),
            self.has_external.into(),
            self.status.into(),
            self.limit.into(),
            self.has_limit.into(),
            self.ratio.into(),
            self.used.into(),
            self.on_realname.into(),
            self.activated.into(),
            self.has_activated.into(),
            self.expires.into(),
            self.has_expires.into(),
            self.reset_cycle.into(),
            self.next_reset.into(),
            self.has_next_reset.into(),
        ]
    }
}

const INSERT_USAGES: &str = r#"
INSERT INTO tb_package_usage (iot_card_id, device_id, package_id, external_id, status,
                              data_limit_mb, virtual_ratio, used_mb, activate_on_realname,
                              activated_at, expires_at, reset_cycle, next_reset_at)
SELECT CASE WHEN has_card THEN card END, CASE WHEN has_device THEN device END,
       CASE WHEN has_package THEN package END, CASE WHEN has_external THEN external END,
       status, CASE WHEN has_limit THEN lim END, ratio, used, on_realname,
       CASE WHEN has_activated THEN activated END, CASE WHEN has_expires THEN expires END,
       reset_cycle, CASE WHEN has_next_reset THEN next_reset END
FROM UNNEST($1::bigint[], $2::bool[], $3::bigint[], $4::bool[], $5::bigint[], $6::bool[],
            $7::varchar[], $8::bool[], $9::varchar[], $10::numeric[], $11::bool[],
            $12::numeric[], $13::numeric[], $14::bool[], $15::timestamptz[], $16::bool[],
            $17::timestamptz[], $18::bool[], $19::varchar[], $20::timestamptz[], $21::bool[])
     AS t(card, has_card, device, has_device, package, has_package, external, has_external,
          status, lim, has_limit, ratio, used, on_realname, activated, has_activated,
          expires, has_expires, reset_cycle, next_reset, has_next_reset)
"#;
