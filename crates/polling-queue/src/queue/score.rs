//! Conversions between queue scores, times and members.

use crate::QueueError;
use chrono::{DateTime, Utc};
use domain::CardId;

/// The score of a scheduled queue entry: unix seconds, fractional, in whole milliseconds. The
/// sub-millisecond digits are reserved for lease scores (see `lua/dequeue.lua`), so that a card
/// in flight can be told from a card waiting.
pub fn to_score(at: DateTime<Utc>) -> f64 {
    at.timestamp_millis() as f64 / 1e3
}

/// Whether `score` is a lease score (microseconds modulo 1000 in 500..999) rather than a
/// scheduled time.
pub fn is_lease_score(score: f64) -> bool {
    ((score * 1e6).round() as i64).rem_euclid(1000) >= 500
}

/// A lease as the scripts take it: whole milliseconds, at least 1.
pub(crate) fn lease_ms(d: std::time::Duration) -> i64 {
    d.as_millis().clamp(1, i64::MAX as u128) as i64
}

/// Parses queue members into card ids; a member that is not a decimal id is reported.
pub(crate) fn parse_members(key: &str, members: Vec<String>) -> Result<Vec<CardId>, QueueError> {
    members
        .into_iter()
        .map(|m| {
            m.parse::<CardId>().map_err(|e| QueueError::Corrupt {
                key: key.to_owned(),
                detail: format!("member `{m}` is not a card id: {e}"),
                source: Some(domain::Cause::new(e)),
            })
        })
        .collect()
}

/// Groups `(card, at)` pairs by shard, as `(shard, [(score, member)])`, in shard order.
pub(crate) fn group_by_shard(
    entries: &[(CardId, DateTime<Utc>)],
    shard_count: u32,
) -> Vec<(u32, Vec<(f64, String)>)> {
    let mut groups = std::collections::BTreeMap::<u32, Vec<(f64, String)>>::new();
    for (card, at) in entries {
        groups
            .entry(card.shard(shard_count))
            .or_default()
            .push((to_score(*at), card.to_string()));
    }
    groups.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn score_is_fractional_unix_seconds() {
        let at = Utc.timestamp_opt(1_767_225_600, 250_000_000).single();
        assert_eq!(at.map(to_score), Some(1_767_225_600.25));
    }

    #[test]
    fn groups_by_card_modulo_shards() {
        let at = Utc::now();
        let g = group_by_shard(&[(CardId(1000), at), (CardId(8), at), (CardId(1), at)], 16);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].0, 1);
        assert_eq!(g[1].0, 8);
        assert_eq!(g[1].1.len(), 2);
    }

    #[test]
    fn rejects_non_numeric_members() {
        assert!(parse_members("k", vec!["12".into(), "x".into()]).is_err());
        assert_eq!(
            parse_members("k", vec!["12".into()]).ok(),
            Some(vec![CardId(12)])
        );
    }
}
