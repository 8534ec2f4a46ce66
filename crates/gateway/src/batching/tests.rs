//! The lanes against a scripted carrier (the neighbour of the unit under test): what each poll
//! gets back, and how many carrier calls carried them. On paused time, so the linger is exact.

use super::*;
use chrono::NaiveDate;
use rust_decimal::Decimal;

/// What the scripted carrier does with a batch call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// Every card's usage: its number in MB.
    All,
    /// Leaves the last card out.
    DropLast,
    /// Fails the whole call.
    Fail,
}

/// A carrier answering `size` cards a call, recording each batch call's cards.
struct Scripted {
    size: usize,
    answer: Answer,
    calls: Mutex<Vec<Vec<String>>>,
    single: Mutex<u32>,
}

impl Scripted {
    fn new(size: usize, answer: Answer) -> Arc<Self> {
        Arc::new(Self {
            size,
            answer,
            calls: Mutex::new(Vec::new()),
            single: Mutex::new(0),
        })
    }

    fn calls(&self) -> Vec<Vec<String>> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

fn month_usage(iccid: &str) -> MonthUsage {
    MonthUsage {
        month: NaiveDate::from_ymd_opt(2026, 12, 1).unwrap_or_default(),
        month_total_mb: iccid.parse::<Decimal>().unwrap_or_default(),
    }
}

#[async_trait::async_trait]
impl CarrierGateway for Scripted {
    async fn realname(&self, _: CarrierId, _: &str) -> Result<RealNameStatus, GatewayError> {
        Err(GatewayError::Unsupported("realname"))
    }
    async fn usage(&self, _: CarrierId, iccid: &str) -> Result<MonthUsage, GatewayError> {
        *self.single.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        Ok(month_usage(iccid))
    }
    async fn packages(&self, _: CarrierId, _: &str) -> Result<Vec<CarrierPackage>, GatewayError> {
        Ok(Vec::new())
    }
    async fn stop(&self, _: CarrierId, _: &str) -> Result<NetworkStatus, GatewayError> {
        Ok(NetworkStatus::Stopped)
    }
    async fn start(&self, _: CarrierId, _: &str) -> Result<NetworkStatus, GatewayError> {
        Ok(NetworkStatus::Online)
    }
    fn batch_size(&self, _: CarrierId) -> usize {
        self.size
    }
    async fn usage_batch(
        &self,
        _: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<MonthUsage, GatewayError>>, GatewayError> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(iccids.to_vec());
        tokio::time::sleep(Duration::from_millis(30)).await;
        match self.answer {
            Answer::Fail => Err(GatewayError::Timeout),
            Answer::All | Answer::DropLast => Ok(iccids
                .iter()
                .enumerate()
                .map(|(i, iccid)| {
                    if self.answer == Answer::DropLast && i + 1 == iccids.len() {
                        Err(GatewayError::MissingFromBatch)
                    } else {
                        Ok(month_usage(iccid))
                    }
                })
                .collect()),
        }
    }
}

const LINGER: Duration = Duration::from_millis(50);
const CARRIER: CarrierId = CarrierId(3);

/// `n` polls asking the usage of cards "1".."n" at once: each one's answer, in card order.
async fn polls(
    gateway: &Arc<BatchingGateway>,
    cards: &[u32],
) -> Vec<Result<MonthUsage, GatewayError>> {
    let mut tasks = tokio::task::JoinSet::new();
    for (i, card) in cards.iter().enumerate() {
        let (g, iccid) = (gateway.clone(), card.to_string());
        tasks.spawn(async move { (i, g.usage(CARRIER, &iccid).await) });
    }
    let mut out: Vec<Option<Result<MonthUsage, GatewayError>>> = vec![None; cards.len()];
    while let Some(joined) = tasks.join_next().await {
        let (i, answer) = joined.unwrap_or_else(|e| panic!("poll task: {e}"));
        out[i] = Some(answer);
    }
    out.into_iter()
        .map(|a| a.unwrap_or(Err(GatewayError::Timeout)))
        .collect()
}

fn batching(inner: &Arc<Scripted>) -> Arc<BatchingGateway> {
    Arc::new(BatchingGateway::new(inner.clone(), LINGER))
}

#[tokio::test(start_paused = true)]
async fn concurrent_polls_of_one_carrier_share_full_batch_calls() {
    let carrier = Scripted::new(100, Answer::All);
    let g = batching(&carrier);
    let cards: Vec<u32> = (1..=250).collect();

    let answers = polls(&g, &cards).await;

    for (card, answer) in cards.iter().zip(&answers) {
        assert_eq!(
            answer,
            &Ok(month_usage(&card.to_string())),
            "card {card} gets its own answer"
        );
    }
    let sizes: Vec<usize> = carrier.calls().iter().map(Vec::len).collect();
    assert_eq!(
        sizes,
        vec![100, 100, 50],
        "three carrier calls for 250 cards"
    );
    assert_eq!(
        *carrier
            .single
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
        0
    );
}

#[tokio::test(start_paused = true)]
async fn a_lone_poll_waits_at_most_the_linger() {
    let carrier = Scripted::new(100, Answer::All);
    let g = batching(&carrier);
    let started = Instant::now();

    assert_eq!(g.usage(CARRIER, "7").await, Ok(month_usage("7")));

    // The linger, then the carrier's 30 ms.
    assert_eq!(started.elapsed(), LINGER + Duration::from_millis(30));
    assert_eq!(carrier.calls(), vec![vec!["7".to_owned()]]);
}

#[tokio::test(start_paused = true)]
async fn a_per_card_carrier_is_asked_card_by_card_without_waiting() {
    let carrier = Scripted::new(1, Answer::All);
    let g = batching(&carrier);
    let started = Instant::now();

    let answers = polls(&g, &[1, 2, 3]).await;

    assert!(answers.iter().all(Result::is_ok), "{answers:?}");
    assert_eq!(started.elapsed(), Duration::ZERO, "no linger");
    assert!(carrier.calls().is_empty(), "no batch call");
    assert_eq!(
        *carrier
            .single
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
        3
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_batch_call_fails_every_poll_of_it_with_the_cause() {
    let carrier = Scripted::new(100, Answer::Fail);
    let g = batching(&carrier);

    let answers = polls(&g, &[1, 2, 3]).await;

    assert_eq!(answers, vec![Err(GatewayError::Timeout); 3]);
    assert_eq!(carrier.calls().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_card_left_out_of_the_answer_is_missing_and_the_others_answered() {
    let carrier = Scripted::new(100, Answer::DropLast);
    let g = batching(&carrier);

    let answers = polls(&g, &[1, 2, 3]).await;

    let missing = answers
        .iter()
        .filter(|a| **a == Err(GatewayError::MissingFromBatch))
        .count();
    assert_eq!(missing, 1, "{answers:?}");
    assert_eq!(answers.iter().filter(|a| a.is_ok()).count(), 2);
}

#[tokio::test(start_paused = true)]
async fn two_polls_of_one_card_in_a_batch_ask_the_carrier_once() {
    let carrier = Scripted::new(100, Answer::All);
    let g = batching(&carrier);

    let answers = polls(&g, &[5, 5, 6]).await;

    assert_eq!(
        answers,
        vec![
            Ok(month_usage("5")),
            Ok(month_usage("5")),
            Ok(month_usage("6"))
        ]
    );
    assert_eq!(carrier.calls(), vec![vec!["5".to_owned(), "6".to_owned()]]);
}

#[tokio::test(start_paused = true)]
async fn while_the_lanes_calls_are_all_out_the_next_batch_keeps_filling() {
    let carrier = Scripted::new(100, Answer::All);
    let g = batching(&carrier);
    // Polls arriving one every 5 ms for 1 s (200 of them): each call takes 30 ms, so after the
    // first few calls (a linger's worth of cards each) the lane's calls are all out and the
    // batches fill while they wait.
    let mut tasks = tokio::task::JoinSet::new();
    for card in 1..=200u32 {
        let g = g.clone();
        tasks.spawn(async move { g.usage(CARRIER, &card.to_string()).await });
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    while let Some(joined) = tasks.join_next().await {
        assert!(joined.unwrap_or_else(|e| panic!("poll: {e}")).is_ok());
    }
    let sizes: Vec<usize> = carrier.calls().iter().map(Vec::len).collect();
    assert_eq!(sizes.iter().sum::<usize>(), 200);
    // A linger (50 ms) gathers 10; four calls out (30 ms each) cap the lane at ~4 calls per
    // 30 ms, so no more than about one call per 7.5 ms of arrivals: never one per card.
    assert!(sizes.len() <= 25, "{sizes:?}");
}

#[tokio::test(start_paused = true)]
async fn commands_are_never_held() {
    let carrier = Scripted::new(100, Answer::All);
    let g = batching(&carrier);
    let started = Instant::now();

    assert_eq!(g.stop(CARRIER, "1").await, Ok(NetworkStatus::Stopped));

    assert_eq!(started.elapsed(), Duration::ZERO);
    assert!(carrier.calls().is_empty());
}
