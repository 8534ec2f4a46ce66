//! The polling configs a new deployment starts with (`cmp-worker seed` writes them, the bench's
//! fleet-capacity scenario measures them). One list, so that what is seeded and what is measured
//! cannot drift apart.

use domain::{CardCategory, CardCondition, Intervals, PollingConfigInput};

/// Seconds between polls: realname, carddata, package, protect (`None`: not scheduled).
type Row = [Option<u32>; 4];

/// The default configs in priority order: industry cards, not real-named, stopped, everything
/// else. `demo` polls more often, sized so that one worker node on a laptop keeps up with
/// 100,000 cards (about 500 polls a second in all).
pub fn default_configs(demo: bool) -> Vec<PollingConfigInput> {
    let [industry, not_realnamed, stopped, default]: [Row; 4] = if demo {
        [
            [None, Some(600), Some(1_800), Some(1_800)],
            [Some(300), Some(1_800), Some(1_800), None],
            [Some(1_800), Some(600), Some(120), Some(1_800)],
            [Some(3_600), Some(300), Some(1_800), Some(1_800)],
        ]
    } else {
        [
            [None, Some(600), Some(3_600), Some(3_600)],
            [Some(120), Some(1_800), Some(3_600), None],
            [Some(3_600), Some(600), Some(300), Some(1_800)],
            [Some(3_600), Some(300), Some(1_800), Some(1_800)],
        ]
    };
    let defs = [
        (
            "industry cards",
            10,
            None,
            Some(CardCategory::Industry),
            industry,
        ),
        (
            "not real-named",
            20,
            Some(CardCondition::NotRealname),
            None,
            not_realnamed,
        ),
        (
            "stopped cards",
            30,
            Some(CardCondition::Stopped),
            None,
            stopped,
        ),
        ("default", 100, None, None, default),
    ];
    defs.into_iter()
        .map(
            |(name, priority, card_condition, card_category, iv)| PollingConfigInput {
                name: name.to_owned(),
                priority,
                enabled: true,
                card_condition,
                card_category,
                carrier_id: None,
                intervals: Intervals {
                    realname_interval_secs: iv[0],
                    carddata_interval_secs: iv[1],
                    package_interval_secs: iv[2],
                    protect_interval_secs: iv[3],
                },
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catch_all_polls_usage_every_five_minutes() {
        let configs = default_configs(false);
        let last = configs
            .last()
            .map(|c| (c.name.as_str(), c.card_condition, c.card_category));
        assert_eq!(last, Some(("default", None, None)));
        assert_eq!(
            configs
                .last()
                .and_then(|c| c.intervals.carddata_interval_secs),
            Some(300)
        );
        assert!(configs.windows(2).all(|w| w[0].priority < w[1].priority));
    }
}
