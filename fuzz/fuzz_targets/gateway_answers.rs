//! The carrier's answers are untrusted bytes: every answer type is parsed, and a usage answer
//! goes on through what the carddata handler does with it (month, delta against the card's
//! counters, the deduction plan over a limited and an unlimited package). None of it may panic.
//!
//! Input: one byte choosing the card's packages (a limited one at ratio 1.25, an unlimited one,
//! or both), then two JSON documents separated by a 0xFF byte (the previous poll's answer and
//! this one).

#![no_main]

use chrono::{TimeZone, Utc};
use domain::{MonthUsage, apply_month_total};
use domain::{
    CardId, MonthCounters, NewPackageUsage, PackageOwner, PackageUsage, PackageUsageId,
    plan_deduction,
};
use gateway::protocol::{
    NetworkAnswer, PackagesAnswer, RealNameAnswer, UsageAnswer, format_month, parse_month,
};
use libfuzzer_sys::fuzz_target;
use rust_decimal::Decimal;

fn usage(bytes: &[u8]) -> Option<MonthUsage> {
    let answer: UsageAnswer = serde_json::from_slice(bytes).ok()?;
    let month = parse_month(&answer.month)?;
    assert_eq!(parse_month(&format_month(month)), Some(month));
    Some(MonthUsage {
        month,
        month_total_mb: answer.month_total_mb,
    })
}

fn package(id: i64, limit: Option<Decimal>, ratio: Decimal) -> PackageUsage {
    let now = Utc.timestamp_opt(1_780_000_000, 0).single().unwrap_or_default();
    let owner = PackageOwner::Card(CardId(1));
    let bought = now - chrono::Duration::days(1);
    let expires = now + chrono::Duration::days(30);
    NewPackageUsage::active(owner, limit, ratio, Decimal::from(100), bought, expires)
        .stored(PackageUsageId(id), now)
}

fuzz_target!(|data: &[u8]| {
    let _ = serde_json::from_slice::<RealNameAnswer>(data);
    let _ = serde_json::from_slice::<NetworkAnswer>(data);
    let _ = serde_json::from_slice::<PackagesAnswer>(data);
    let Some((choice, data)) = data.split_first() else {
        return;
    };
    let (first, second) = match data.iter().position(|b| *b == 0xFF) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &data[..0]),
    };
    let mut counters = MonthCounters::default();
    let limited = package(1, Some(Decimal::from(1024)), Decimal::new(125, 2));
    let unlimited = package(2, None, Decimal::ONE);
    let packages = match choice % 3 {
        0 => vec![limited],
        1 => vec![unlimited],
        _ => vec![limited, unlimited],
    };
    let now = Utc.timestamp_opt(1_780_000_000, 0).single().unwrap_or_default();
    for answer in [first, second].into_iter().filter_map(usage) {
        let update = apply_month_total(&counters, &answer);
        assert!(update.delta_mb >= Decimal::ZERO);
        let _ = plan_deduction(&packages, update.delta_mb, now);
        counters = update.counters;
    }
});
