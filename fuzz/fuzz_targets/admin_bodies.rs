//! The admin API's bodies are untrusted bytes: an imported card file, a polling config, an
//! alert rule (with its webhook URL), a cleanup config. Each is decoded as the API decodes it
//! (`serde_json`), then checked as the services check it before any write. None of it may
//! panic, and a body found clean holds what the checks promise.
//!
//! Input: one byte choosing the body, then the JSON document.

#![no_main]

use admin::{ConfigBody, ImportBody, MAX_IMPORT, iccid_problem, msisdn_problem};
use domain::{AlertRuleInput, CleanupConfigInput};
use libfuzzer_sys::fuzz_target;
use std::collections::HashSet;

fn import(bytes: &[u8]) {
    let Ok(body) = serde_json::from_slice::<ImportBody>(bytes) else {
        return;
    };
    let problems = body.problems();
    for p in &problems {
        assert!(p.pointer.starts_with("/cards"), "{p:?}");
    }
    if problems.is_empty() {
        assert!((1..=MAX_IMPORT).contains(&body.cards.len()));
        let mut seen = HashSet::new();
        for card in &body.cards {
            let iccid = card.iccid.trim();
            assert_eq!(iccid_problem(iccid), None, "{iccid:?} passed");
            assert!(seen.insert(iccid.to_owned()), "{iccid:?} twice");
            if let Some(m) = &card.msisdn {
                assert_eq!(msisdn_problem(m.trim()), None, "{m:?} passed");
            }
            assert!(card.carrier_id > 0);
            assert!(card.device_id.is_none_or(|d| d > 0));
        }
    }
}

fn config(bytes: &[u8]) {
    if let Ok(body) = serde_json::from_slice::<ConfigBody>(bytes)
        && let Ok(input) = body.validate()
    {
        for secs in [
            input.intervals.realname_interval_secs,
            input.intervals.carddata_interval_secs,
            input.intervals.package_interval_secs,
            input.intervals.protect_interval_secs,
        ]
        .into_iter()
        .flatten()
        {
            assert!((1..=admin::MAX_INTERVAL_SECS).contains(&secs), "{secs} passed");
        }
    }
}

fn alert_rule(bytes: &[u8]) {
    if let Ok(input) = serde_json::from_slice::<AlertRuleInput>(bytes)
        && admin::alerts::validate(&input).is_empty()
        && let Some(url) = &input.webhook_url
    {
        // The scheme and host are the URL parser's to judge (it strips blanks and folds case,
        // as the webhook sender's parse does); the size is ours.
        assert!(!url.is_empty() && url.len() <= 512, "{url:?} passed");
    }
}

fn cleanup(bytes: &[u8]) {
    if let Ok(input) = serde_json::from_slice::<CleanupConfigInput>(bytes)
        && admin::cleanup::validate(&input).is_empty()
    {
        assert!(input.retention_days > 0 && input.batch_size > 0);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&choice, json)) = data.split_first() else {
        return;
    };
    match choice % 4 {
        0 => import(json),
        1 => config(json),
        2 => alert_rule(json),
        _ => cleanup(json),
    }
});
