//! Batched dispatch: the single-card queries of many polls of one carrier, one carrier call.
//!
//! Every poll keeps its one-card call (`usage(carrier, iccid)`) and its exact path: its lease,
//! its lock, its usage rules, its reschedule, its audit. [`BatchingGateway`] only changes how
//! the question reaches the carrier. For a carrier whose protocol answers several cards a call
//! ([`CarrierGateway::batch_size`] above 1), the real-name, usage and network-status queries of
//! concurrent polls wait in a lane of that carrier and that query, at most the linger
//! (`CMP_BATCH_LINGER_MS`) after the first of them or until the lane holds a full batch, and
//! go as one batch call; each poll gets its own card's answer. Per-card protocols pass through
//! unchanged, without the linger.
//!
//! What a batch call can answer, and what each poll then sees:
//! - the whole call failed (timeout, 5xx, throttled, budget exhausted): every card of the batch
//!   gets that error, so each follows its own retry rule;
//! - the answer left a card out: that card gets [`GatewayError::MissingFromBatch`] (retried at
//!   the retry interval, nothing written), the others their answers;
//! - an answer of the wrong length: nothing is known of any card, each gets `MissingFromBatch`.
//!
//! A lane has at most [`LANE_CALLS_IN_FLIGHT`] batch calls out; while they all are, the next
//! batch keeps filling: under a tight carrier budget, calls go out full.
//!
//! A lane never mixes carriers or queries. Two polls of one card in one batch (two task types
//! never share a lane, but a manual trigger can race a scheduled poll) ask the carrier once and
//! share the answer. The carrier's rate and concurrency limits are the adapter's, one slot per
//! call.

use crate::{CarrierGateway, GatewayError};
use domain::{CarrierId, CarrierPackage, MonthUsage, NetworkStatus, RealNameStatus};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::time::Instant;

/// Where one lane's queries wait: per carrier, the sending end of its lane task.
type LaneMap<T> = Mutex<HashMap<CarrierId, mpsc::UnboundedSender<Ask<T>>>>;

type BatchAnswer<'a, T> =
    Pin<Box<dyn Future<Output = Result<Vec<Result<T, GatewayError>>, GatewayError>> + Send + 'a>>;

/// One poll's question: its card, and where its answer goes.
struct Ask<T> {
    iccid: String,
    reply: oneshot::Sender<Result<T, GatewayError>>,
}

/// The lanes of every batched query.
#[derive(Default)]
struct Lanes {
    realname: LaneMap<RealNameStatus>,
    usage: LaneMap<MonthUsage>,
    network_status: LaneMap<NetworkStatus>,
}

/// An answer a batch call fetches: which lane it waits in and which call of the trait asks.
trait Batched: Clone + Send + Sync + 'static {
    /// The `call` label of the metrics.
    const CALL: &'static str;
    fn lane(lanes: &Lanes) -> &LaneMap<Self>;
    fn ask<'a>(
        gateway: &'a dyn CarrierGateway,
        carrier: CarrierId,
        iccids: &'a [String],
    ) -> BatchAnswer<'a, Self>;
}

impl Batched for RealNameStatus {
    const CALL: &'static str = "realname";
    fn lane(lanes: &Lanes) -> &LaneMap<Self> {
        &lanes.realname
    }
    fn ask<'a>(
        gateway: &'a dyn CarrierGateway,
        carrier: CarrierId,
        iccids: &'a [String],
    ) -> BatchAnswer<'a, Self> {
        gateway.realname_batch(carrier, iccids)
    }
}

impl Batched for MonthUsage {
    const CALL: &'static str = "usage";
    fn lane(lanes: &Lanes) -> &LaneMap<Self> {
        &lanes.usage
    }
    fn ask<'a>(
        gateway: &'a dyn CarrierGateway,
        carrier: CarrierId,
        iccids: &'a [String],
    ) -> BatchAnswer<'a, Self> {
        gateway.usage_batch(carrier, iccids)
    }
}

impl Batched for NetworkStatus {
    const CALL: &'static str = "network_status";
    fn lane(lanes: &Lanes) -> &LaneMap<Self> {
        &lanes.network_status
    }
    fn ask<'a>(
        gateway: &'a dyn CarrierGateway,
        carrier: CarrierId,
        iccids: &'a [String],
    ) -> BatchAnswer<'a, Self> {
        gateway.network_status_batch(carrier, iccids)
    }
}

/// A [`CarrierGateway`] that gathers concurrent single-card queries of a batch-capable carrier
/// into batch calls of `inner` (see the module's documentation). Commands (`stop`, `start`),
/// packages and every explicit batch call pass through.
pub struct BatchingGateway {
    inner: Arc<dyn CarrierGateway>,
    linger: Duration,
    lanes: Lanes,
}

impl std::fmt::Debug for BatchingGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchingGateway")
            .field("linger", &self.linger)
            .finish_non_exhaustive()
    }
}

impl BatchingGateway {
    /// Batches the queries of `inner`'s batch-capable carriers, each batch waiting at most
    /// `linger` for company after its first card.
    pub fn new(inner: Arc<dyn CarrierGateway>, linger: Duration) -> Self {
        Self {
            inner,
            linger,
            lanes: Lanes::default(),
        }
    }

    /// The longest a query waits in its lane before its batch goes.
    pub fn linger(&self) -> Duration {
        self.linger
    }

    /// Puts the card's question in the lane of `carrier` and waits for its answer.
    async fn queued<T: Batched>(&self, carrier: CarrierId, iccid: &str) -> Result<T, GatewayError> {
        let (reply, answer) = oneshot::channel();
        let mut ask = Ask {
            iccid: iccid.to_owned(),
            reply,
        };
        {
            let mut lanes = T::lane(&self.lanes)
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            // A lane whose task is gone (the runtime it ran on shut down) is replaced once: a
            // fresh lane's receiver lives until its task has run.
            for _ in 0..2 {
                let lane = lanes
                    .entry(carrier)
                    .or_insert_with(|| self.open_lane::<T>(carrier));
                match lane.send(ask) {
                    Ok(()) => break,
                    Err(mpsc::error::SendError(back)) => {
                        ask = back;
                        lanes.remove(&carrier);
                    }
                }
            }
        }
        answer.await.unwrap_or_else(|_| {
            Err(GatewayError::Transport(
                "the batch dispatch ended before answering".to_owned(),
            ))
        })
    }

    fn open_lane<T: Batched>(&self, carrier: CarrierId) -> mpsc::UnboundedSender<Ask<T>> {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run_lane::<T>(self.inner.clone(), carrier, self.linger, rx));
        tx
    }

    fn batches(&self, carrier: CarrierId) -> bool {
        self.inner.batch_size(carrier) > 1
    }
}

/// Batch calls of one lane in flight at once. While they are all out (the carrier is slow, or
/// its budget makes each call wait for its slot), the next batch keeps filling past the linger:
/// a call the budget holds back anyway goes out full instead of half empty.
pub const LANE_CALLS_IN_FLIGHT: usize = 4;

/// One lane: takes the first waiting question, gathers more until the batch is full or the
/// linger has passed since that first one, then until one of the lane's calls in flight is
/// free, and sends the batch in a task of its own.
async fn run_lane<T: Batched>(
    inner: Arc<dyn CarrierGateway>,
    carrier: CarrierId,
    linger: Duration,
    mut rx: mpsc::UnboundedReceiver<Ask<T>>,
) {
    let calls = Arc::new(Semaphore::new(LANE_CALLS_IN_FLIGHT));
    let mut asks: Vec<Ask<T>> = Vec::new();
    while rx.recv_many(&mut asks, 1).await > 0 {
        // Read per batch: an operator's edit of the carrier can change it.
        let size = inner.batch_size(carrier).max(1);
        let deadline = Instant::now() + linger;
        while asks.len() < size {
            let room = size - asks.len();
            match tokio::time::timeout_at(deadline, rx.recv_many(&mut asks, room)).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let mut open = true;
        let call = loop {
            let room = size.saturating_sub(asks.len());
            if room == 0 || !open {
                break calls.clone().acquire_owned().await;
            }
            tokio::select! {
                permit = calls.clone().acquire_owned() => break permit,
                got = rx.recv_many(&mut asks, room) => open = got > 0,
            }
        };
        // The semaphore is never closed.
        let Ok(call) = call else { return };
        let (inner, batch) = (inner.clone(), std::mem::take(&mut asks));
        tokio::spawn(async move {
            send_batch(inner, carrier, batch).await;
            drop(call);
        });
    }
}

/// One carrier call for `asks`; answers each poll with its card's result.
async fn send_batch<T: Batched>(
    inner: Arc<dyn CarrierGateway>,
    carrier: CarrierId,
    asks: Vec<Ask<T>>,
) {
    // Each card once, however many polls of it wait: `slot[i]` is ask i's card in `cards`.
    let mut cards: Vec<String> = Vec::with_capacity(asks.len());
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(asks.len());
    let slot: Vec<usize> = asks
        .iter()
        .map(|ask| {
            *seen.entry(ask.iccid.as_str()).or_insert_with(|| {
                cards.push(ask.iccid.clone());
                cards.len() - 1
            })
        })
        .collect();
    let carrier_label = carrier.to_string();
    metrics::counter!("cmp_carrier_batch_calls_total", "carrier" => carrier_label.clone(), "call" => T::CALL)
        .increment(1);
    metrics::histogram!("cmp_carrier_batch_cards", "carrier" => carrier_label, "call" => T::CALL)
        .record(cards.len() as f64);
    let answers = match T::ask(inner.as_ref(), carrier, &cards).await {
        Ok(answers) if answers.len() == cards.len() => answers,
        Ok(answers) => {
            tracing::error!(
                carrier = %carrier,
                call = T::CALL,
                asked = cards.len(),
                answered = answers.len(),
                "a batch answer of the wrong length: every card of it is retried"
            );
            vec![Err(GatewayError::MissingFromBatch); cards.len()]
        }
        Err(e) => vec![Err(e); cards.len()],
    };
    for (ask, at) in asks.into_iter().zip(slot) {
        let _ = ask.reply.send(answers[at].clone());
    }
}

#[async_trait::async_trait]
impl CarrierGateway for BatchingGateway {
    async fn realname(
        &self,
        carrier: CarrierId,
        iccid: &str,
    ) -> Result<RealNameStatus, GatewayError> {
        if self.batches(carrier) {
            self.queued(carrier, iccid).await
        } else {
            self.inner.realname(carrier, iccid).await
        }
    }

    async fn usage(&self, carrier: CarrierId, iccid: &str) -> Result<MonthUsage, GatewayError> {
        if self.batches(carrier) {
            self.queued(carrier, iccid).await
        } else {
            self.inner.usage(carrier, iccid).await
        }
    }

    async fn packages(
        &self,
        carrier: CarrierId,
        iccid: &str,
    ) -> Result<Vec<CarrierPackage>, GatewayError> {
        self.inner.packages(carrier, iccid).await
    }

    async fn stop(&self, carrier: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.inner.stop(carrier, iccid).await
    }

    async fn start(&self, carrier: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.inner.start(carrier, iccid).await
    }

    async fn network_status(
        &self,
        carrier: CarrierId,
        iccid: &str,
    ) -> Result<NetworkStatus, GatewayError> {
        if self.batches(carrier) {
            self.queued(carrier, iccid).await
        } else {
            self.inner.network_status(carrier, iccid).await
        }
    }

    fn batch_size(&self, carrier: CarrierId) -> usize {
        self.inner.batch_size(carrier)
    }

    async fn realname_batch(
        &self,
        carrier: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<RealNameStatus, GatewayError>>, GatewayError> {
        self.inner.realname_batch(carrier, iccids).await
    }

    async fn usage_batch(
        &self,
        carrier: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<MonthUsage, GatewayError>>, GatewayError> {
        self.inner.usage_batch(carrier, iccids).await
    }

    async fn network_status_batch(
        &self,
        carrier: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<NetworkStatus, GatewayError>>, GatewayError> {
        self.inner.network_status_batch(carrier, iccids).await
    }

    /// A listing is one call already: no lane.
    async fn sync_page(
        &self,
        carrier: CarrierId,
        since: chrono::DateTime<chrono::Utc>,
        page: u32,
    ) -> Result<domain::SyncPage, GatewayError> {
        self.inner.sync_page(carrier, since, page).await
    }

    async fn probe(&self, carrier: CarrierId) -> Result<(), GatewayError> {
        self.inner.probe(carrier).await
    }
}

#[cfg(test)]
mod tests;
