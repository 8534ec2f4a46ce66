//! The durable intent of stop/resume: `append_state_if`, `close_intent`,
//! `interrupt_stale_intents` and the one-intent-per-card index.

use crate::common::{new_card, setup};
use domain::store::{IntentClose, Page, StateWrite};
use domain::{CardId, GatewayOutcome, NetworkStatus, NewCardStateLog, StopReason, StoreError};
use sea_orm::{ConnectionTrait, DbBackend, Statement};
use std::time::Duration;

fn stop(card: CardId, outcome: GatewayOutcome) -> NewCardStateLog {
    NewCardStateLog {
        card_id: card,
        from_status: NetworkStatus::Online,
        to_status: NetworkStatus::Stopped,
        stop_reason: Some(StopReason::NoPackage),
        trigger: "carddata".into(),
        gateway_outcome: outcome,
        // Written and read back as given (the stop-resume service passes the decision's).
        trace_id: Some(format!("{:032x}", card.get())),
    }
}

fn written(w: StateWrite) -> anyhow::Result<i64> {
    match w {
        StateWrite::Written(row) => Ok(row),
        other => anyhow::bail!("expected a written row, got {other:?}"),
    }
}

async fn outcomes(s: &store::Stores, card: CardId) -> anyhow::Result<Vec<GatewayOutcome>> {
    let mut log = s.cards.state_log(card, Page::new(1, 50)).await?.items;
    log.reverse();
    Ok(log.iter().map(|l| l.entry.gateway_outcome).collect())
}

#[tokio::test]
async fn an_intent_leaves_the_card_until_the_carriers_yes_and_blocks_a_second_one()
-> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let card = s.cards.insert(&new_card("8986000000000000101")).await?;

    let row = written(
        s.cards
            .append_state_if(&stop(card.id, GatewayOutcome::Pending), None)
            .await?,
    )?;
    let c = s
        .cards
        .get(card.id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("gone"))?;
    assert_eq!(
        c.facts.network_status,
        NetworkStatus::Online,
        "the intent changes no card"
    );

    // A second intent while the first is in flight: refused, whatever the caller read.
    assert_eq!(
        s.cards
            .append_state_if(&stop(card.id, GatewayOutcome::Pending), None)
            .await?,
        StateWrite::InFlight
    );
    // A reason change neither, while a call is in flight.
    assert_eq!(
        s.cards
            .append_state_if(&stop(card.id, GatewayOutcome::NotCalled), None)
            .await?,
        StateWrite::InFlight
    );

    let closed = s.cards.close_intent(row, GatewayOutcome::Ok).await?;
    let c = s
        .cards
        .get(card.id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("gone"))?;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Stopped, Some(StopReason::NoPackage))
    );
    // The card it returns is the card as written: the caller aligns on it without a read.
    assert_eq!(closed, IntentClose::Followed(c));
    assert_eq!(outcomes(&s, card.id).await?, vec![GatewayOutcome::Ok]);
    // Closed once: a second close changes nothing.
    assert_eq!(
        s.cards.close_intent(row, GatewayOutcome::Failed).await?,
        IntentClose::Unchanged
    );

    // The card is stopped now: an intent decided on "online" is a stale read.
    assert_eq!(
        s.cards
            .append_state_if(&stop(card.id, GatewayOutcome::Pending), None)
            .await?,
        StateWrite::Changed
    );
    // So is one decided on the right status but another reason.
    let start = NewCardStateLog {
        from_status: NetworkStatus::Stopped,
        to_status: NetworkStatus::Online,
        stop_reason: None,
        ..stop(card.id, GatewayOutcome::Pending)
    };
    assert_eq!(
        s.cards
            .append_state_if(&start, Some(StopReason::Manual))
            .await?,
        StateWrite::Changed
    );
    let start_row = written(
        s.cards
            .append_state_if(&start, Some(StopReason::NoPackage))
            .await?,
    )?;
    assert_eq!(
        s.cards
            .close_intent(start_row, GatewayOutcome::Failed)
            .await?,
        IntentClose::Closed
    );
    let c = s
        .cards
        .get(card.id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("gone"))?;
    assert_eq!(
        c.facts.network_status,
        NetworkStatus::Stopped,
        "a refusal changes no card"
    );
    assert_eq!(
        outcomes(&s, card.id).await?,
        vec![GatewayOutcome::Ok, GatewayOutcome::Failed]
    );

    // A missing card: nothing written.
    assert_eq!(
        s.cards
            .append_state_if(&stop(CardId(987_654), GatewayOutcome::Pending), None)
            .await?,
        StateWrite::Gone
    );
    // An intent is not closed as pending or not_called.
    assert!(matches!(
        s.cards.close_intent(row, GatewayOutcome::Pending).await,
        Err(StoreError::Invalid(_))
    ));
    Ok(())
}

#[tokio::test]
async fn the_index_allows_one_pending_row_per_card() -> anyhow::Result<()> {
    let (db, s) = setup().await?;
    let card = s.cards.insert(&new_card("8986000000000000102")).await?;
    let insert = format!(
        "INSERT INTO tb_card_state_log (iot_card_id, from_status, to_status, stop_reason, \
         trigger, gateway_outcome) VALUES ({}, 1, 0, 'no_package', 'carddata', 'pending')",
        card.id.get()
    );
    let raw = |sql: &str| Statement::from_string(DbBackend::Postgres, sql.to_owned());
    db.conn.execute_raw(raw(&insert)).await?;
    assert!(
        db.conn.execute_raw(raw(&insert)).await.is_err(),
        "a second pending row of the card is refused by uq_card_state_log_pending"
    );
    let bad = insert.replace("'pending'", "'maybe'");
    assert!(
        db.conn.execute_raw(raw(&bad)).await.is_err(),
        "an unknown outcome is refused by ck_card_state_log_outcome"
    );
    Ok(())
}

#[tokio::test]
async fn a_stale_intent_becomes_interrupted_and_a_late_yes_still_counts() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let card = s.cards.insert(&new_card("8986000000000000103")).await?;
    let row = written(
        s.cards
            .append_state_if(&stop(card.id, GatewayOutcome::Pending), None)
            .await?,
    )?;
    // Younger than the bound: left alone.
    assert_eq!(
        s.cards
            .interrupt_stale_intents(card.id, Duration::from_secs(3600))
            .await?,
        0
    );
    assert_eq!(outcomes(&s, card.id).await?, vec![GatewayOutcome::Pending]);
    // Older than the bound (here: any age): its holder is taken for dead.
    assert_eq!(
        s.cards
            .interrupt_stale_intents(card.id, Duration::ZERO)
            .await?,
        1
    );
    assert_eq!(
        outcomes(&s, card.id).await?,
        vec![GatewayOutcome::Interrupted]
    );
    // A refusal arriving after that changes nothing.
    assert_eq!(
        s.cards.close_intent(row, GatewayOutcome::Failed).await?,
        IntentClose::Unchanged
    );
    // A yes arriving after that: the carrier did change the card, so row and card say so.
    assert!(matches!(
        s.cards.close_intent(row, GatewayOutcome::Ok).await?,
        IntentClose::Followed(_)
    ));
    let c = s
        .cards
        .get(card.id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("gone"))?;
    assert_eq!(c.facts.network_status, NetworkStatus::Stopped);
    assert_eq!(outcomes(&s, card.id).await?, vec![GatewayOutcome::Ok]);

    // A late yes behind a reason change written meanwhile: the carrier's word wins (the reason
    // change was decided on a state the carrier no longer has).
    let start = NewCardStateLog {
        from_status: NetworkStatus::Stopped,
        to_status: NetworkStatus::Online,
        stop_reason: None,
        ..stop(card.id, GatewayOutcome::Pending)
    };
    let late = written(
        s.cards
            .append_state_if(&start, Some(StopReason::NoPackage))
            .await?,
    )?;
    s.cards
        .interrupt_stale_intents(card.id, Duration::ZERO)
        .await?;
    let reason = NewCardStateLog {
        stop_reason: Some(StopReason::Manual),
        to_status: NetworkStatus::Stopped,
        ..stop(card.id, GatewayOutcome::NotCalled)
    };
    let reason = NewCardStateLog {
        from_status: NetworkStatus::Stopped,
        ..reason
    };
    written(
        s.cards
            .append_state_if(&reason, Some(StopReason::NoPackage))
            .await?,
    )?;
    assert!(matches!(
        s.cards.close_intent(late, GatewayOutcome::Ok).await?,
        IntentClose::Followed(_)
    ));
    let c = s
        .cards
        .get(card.id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("gone"))?;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Online, None)
    );
    assert_eq!(
        outcomes(&s, card.id).await?,
        vec![
            GatewayOutcome::Ok,
            GatewayOutcome::Ok,
            GatewayOutcome::NotCalled
        ]
    );

    // A late yes behind a later word of the carrier: the row says ok, the card keeps the
    // later word.
    let stop_again = written(
        s.cards
            .append_state_if(&stop(card.id, GatewayOutcome::Pending), None)
            .await?,
    )?;
    s.cards
        .interrupt_stale_intents(card.id, Duration::ZERO)
        .await?;
    let later = written(
        s.cards
            .append_state_if(&stop(card.id, GatewayOutcome::Pending), None)
            .await?,
    )?;
    assert!(matches!(
        s.cards.close_intent(later, GatewayOutcome::Ok).await?,
        IntentClose::Followed(_)
    ));
    let start_after = NewCardStateLog {
        from_status: NetworkStatus::Stopped,
        to_status: NetworkStatus::Online,
        stop_reason: None,
        ..stop(card.id, GatewayOutcome::Ok)
    };
    // Written straight as ok (the carrier's later yes to a start).
    written(
        s.cards
            .append_state_if(&start_after, Some(StopReason::NoPackage))
            .await?,
    )?;
    // Overtaken: the row is closed, the card not followed.
    assert_eq!(
        s.cards.close_intent(stop_again, GatewayOutcome::Ok).await?,
        IntentClose::Closed
    );
    let c = s
        .cards
        .get(card.id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("gone"))?;
    assert_eq!(
        c.facts.network_status,
        NetworkStatus::Online,
        "the later word stands"
    );
    Ok(())
}

#[tokio::test]
async fn a_noted_close_says_how_the_outcome_was_learnt_in_the_trigger() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let card = s.cards.insert(&new_card("8986000000000000131")).await?;

    let row = written(
        s.cards
            .append_state_if(&stop(card.id, GatewayOutcome::Pending), None)
            .await?,
    )?;
    s.cards
        .close_intent_noted(row, GatewayOutcome::Failed, "refused")
        .await?;
    let row = written(
        s.cards
            .append_state_if(&stop(card.id, GatewayOutcome::Pending), None)
            .await?,
    )?;
    let closed = s
        .cards
        .close_intent_noted(row, GatewayOutcome::Ok, "already_at_carrier")
        .await?;
    assert!(
        matches!(&closed, IntentClose::Followed(c) if c.facts.network_status == NetworkStatus::Stopped),
        "the card follows a noted yes: {closed:?}"
    );

    let mut log = s.cards.state_log(card.id, Page::new(1, 50)).await?.items;
    log.reverse();
    let got: Vec<(GatewayOutcome, &str)> = log
        .iter()
        .map(|l| (l.entry.gateway_outcome, l.entry.trigger.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (GatewayOutcome::Failed, "carddata:refused"),
            (GatewayOutcome::Ok, "carddata:already_at_carrier"),
        ]
    );
    Ok(())
}
