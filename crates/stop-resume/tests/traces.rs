//! Traces of a stop: with `CMP_OTEL_ENDPOINT` set, the spans of one stop (the
//! decision and its carrier call) reach an OTLP/HTTP receiver started here, and the card's new
//! state-log row carries their trace id; unset, nothing is built and the row's trace id is NULL.
//! The subscriber is the one both binaries install (`ops::subscriber`), the service the real
//! one against an in-process gateway-sim.

mod common;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use common::World;
use domain::{GatewayOutcome, StopReason};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use prost::Message;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use stop_resume::{Action, Trigger};

/// One span as the receiver got it.
#[derive(Debug, Clone)]
struct Received {
    service: String,
    name: String,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    attributes: BTreeMap<String, String>,
    linked_traces: Vec<String>,
}

type Inbox = Arc<Mutex<Vec<Received>>>;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(value: Option<&Value>) -> String {
    match value {
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

/// `POST /v1/traces` with a protobuf `ExportTraceServiceRequest`, as an OTLP/HTTP collector.
async fn collect(State(inbox): State<Inbox>, body: Bytes) -> Vec<u8> {
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return Vec::new();
    };
    let mut got = Vec::new();
    for resource in request.resource_spans {
        let service = resource
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|kv| kv.key == "service.name")
            .map(|kv| text(kv.value.as_ref().and_then(|v| v.value.as_ref())))
            .unwrap_or_default();
        for span in resource.scope_spans.into_iter().flat_map(|s| s.spans) {
            got.push(Received {
                service: service.clone(),
                name: span.name,
                trace_id: hex(&span.trace_id),
                span_id: hex(&span.span_id),
                parent_span_id: hex(&span.parent_span_id),
                attributes: span
                    .attributes
                    .iter()
                    .map(|kv| {
                        (
                            kv.key.clone(),
                            text(kv.value.as_ref().and_then(|v| v.value.as_ref())),
                        )
                    })
                    .collect(),
                linked_traces: span.links.iter().map(|l| hex(&l.trace_id)).collect(),
            });
        }
    }
    inbox.lock().expect("inbox").extend(got);
    ExportTraceServiceResponse::default().encode_to_vec()
}

/// A receiver on 127.0.0.1:0; its base URL and what it got.
async fn receiver() -> (String, Inbox) {
    let inbox = Inbox::default();
    let router = Router::new()
        .route("/v1/traces", post(collect))
        .with_state(inbox.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the receiver");
    let addr = listener.local_addr().expect("receiver address");
    tokio::spawn(async move { axum::serve(listener, router).await });
    (format!("http://{addr}"), inbox)
}

fn settings(vars: &[(&str, &str)]) -> settings::Settings {
    let mut env: HashMap<String, String> = [
        ("CMP_DATABASE_URL", "postgres://unused"),
        ("CMP_REDIS_URL", "redis://unused"),
        ("CMP_LOG", "warn"),
    ]
    .iter()
    .chain(vars)
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    env.remove("CMP_CONFIG");
    settings::Settings::from_source(&env).expect("valid settings")
}

/// A poll as the scheduler opens it (same target and name, so the same filter and sampler).
fn poll_span(card: domain::CardId) -> tracing::Span {
    tracing::info_span!(target: "scheduler::type_loop", "poll", card_id = %card, task = "carddata")
}

/// A usage poll's evaluation of `card`, inside a `poll` span; it must stop the card (it has no
/// package).
async fn stops_in_a_poll(w: &World, card: domain::CardId) {
    let decision = tracing::Instrument::instrument(
        w.service.evaluate_and_act(card, Trigger::Carddata),
        poll_span(card),
    )
    .await
    .expect("evaluates");
    assert_eq!(
        decision.action,
        Action::Stopped {
            reason: StopReason::NoPackage
        }
    );
}

/// Waits until `inbox` holds spans satisfying `done`, or fails after `within`.
async fn received(
    inbox: &Inbox,
    within: Duration,
    done: impl Fn(&[Received]) -> bool,
) -> Vec<Received> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let got = inbox.lock().expect("inbox").clone();
        if done(&got) {
            return got;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the receiver did not get the spans within {within:?}; it got {got:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spans_of_a_stop_reach_the_collector_with_the_state_log_rows_trace_id() {
    let (endpoint, inbox) = receiver().await;
    // No poll is sampled: the stop must be exported all the same.
    let settings = settings(&[
        ("CMP_OTEL_ENDPOINT", endpoint.as_str()),
        ("CMP_OTEL_POLL_SAMPLE", "0"),
    ]);
    let traces = Arc::new(
        ops::Traces::start(&settings, "cmp-worker")
            .expect("exporter builds")
            .expect("traces are on"),
    );
    let subscriber = ops::subscriber(&settings, Some(&traces)).expect("subscriber");
    let _installed = tracing::subscriber::set_default(subscriber);

    let w = World::new().await;
    let card = w.card("89301", None).await;
    // A poll that decides nothing: not sampled, nothing exported.
    let online = w.card("89302", None).await;
    w.package(
        domain::PackageOwner::Card(online),
        None,
        rust_decimal::Decimal::ONE,
        domain::Megabytes::ZERO,
        30,
    )
    .await;
    let nothing = tracing::Instrument::instrument(
        w.service.evaluate_and_act(online, Trigger::Carddata),
        poll_span(online),
    )
    .await
    .expect("evaluates");
    assert!(
        matches!(nothing.action, Action::Nothing { .. }),
        "{nothing:?}"
    );

    stops_in_a_poll(&w, card).await;
    let log = w.log(card).await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].entry.gateway_outcome, GatewayOutcome::Ok);
    let trace_id = log[0]
        .entry
        .trace_id
        .clone()
        .expect("the state-log row carries the trace id");
    assert_eq!(trace_id.len(), 32, "{trace_id}");
    assert!(
        trace_id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{trace_id}"
    );

    // Sent now rather than at the next batch; a blocking call, so off the runtime's threads.
    let flushing = traces.clone();
    tokio::task::spawn_blocking(move || flushing.flush())
        .await
        .expect("flush runs")
        .expect("flush");
    let card_attr = card.to_string();
    let got = received(&inbox, Duration::from_secs(20), |got| {
        ["stop_start", "carrier_call", "carrier_request"]
            .iter()
            .all(|name| got.iter().any(|s| s.name == *name))
    })
    .await;

    let decision_span = got
        .iter()
        .find(|s| s.name == "stop_start")
        .expect("decision span");
    assert_eq!(
        decision_span.trace_id, trace_id,
        "the row's trace is the stop's"
    );
    assert_eq!(decision_span.service, "cmp-worker");
    assert_eq!(decision_span.attributes.get("card_id"), Some(&card_attr));
    assert_eq!(
        decision_span.attributes.get("action").map(String::as_str),
        Some("stop")
    );
    assert_eq!(
        decision_span.attributes.get("reason").map(String::as_str),
        Some("no_package")
    );
    assert_eq!(
        decision_span.attributes.get("outcome").map(String::as_str),
        Some("ok")
    );
    assert_eq!(
        decision_span.attributes.get("trace_id"),
        Some(&trace_id),
        "log lines inside the decision carry the id"
    );
    // The poll was not sampled: the decision is the root of its own trace, linked to it.
    assert_eq!(decision_span.parent_span_id, "", "{decision_span:?}");
    assert_eq!(decision_span.linked_traces.len(), 1, "{decision_span:?}");
    assert_ne!(decision_span.linked_traces[0], trace_id);

    let call = got
        .iter()
        .find(|s| s.name == "carrier_call")
        .expect("carrier call span");
    assert_eq!(call.trace_id, trace_id);
    assert_eq!(call.parent_span_id, decision_span.span_id);
    assert_eq!(call.attributes.get("card_id"), Some(&card_attr));
    assert_eq!(
        call.attributes.get("call").map(String::as_str),
        Some("stop")
    );
    assert_eq!(
        call.attributes.get("outcome").map(String::as_str),
        Some("ok")
    );
    // The HTTP request the gateway client made for it (a `debug` span: off with traces off).
    let request = got
        .iter()
        .find(|s| s.name == "carrier_request")
        .expect("carrier request span");
    assert_eq!(request.trace_id, trace_id);
    assert_eq!(request.parent_span_id, call.span_id);
    assert_eq!(
        request.attributes.get("call").map(String::as_str),
        Some("stop")
    );
    assert_eq!(
        request.attributes.get("carrier_id").map(String::as_str),
        Some("1")
    );

    // Neither unsampled poll nor anything under it was exported.
    assert!(
        got.iter()
            .all(|s| s.name != "poll" && s.name != "evaluate_and_act"),
        "{got:#?}"
    );
    let online_attr = online.to_string();
    assert!(
        got.iter()
            .all(|s| s.attributes.get("card_id") != Some(&online_attr)),
        "{got:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampled_poll_holds_its_stop_in_one_trace() {
    let (endpoint, inbox) = receiver().await;
    let settings = settings(&[
        ("CMP_OTEL_ENDPOINT", endpoint.as_str()),
        ("CMP_OTEL_POLL_SAMPLE", "1"),
    ]);
    let traces = Arc::new(
        ops::Traces::start(&settings, "cmp-worker")
            .expect("exporter builds")
            .expect("traces are on"),
    );
    let _installed = tracing::subscriber::set_default(
        ops::subscriber(&settings, Some(&traces)).expect("subscriber"),
    );

    let w = World::new().await;
    let card = w.card("89303", None).await;
    tracing::Instrument::instrument(
        w.service.evaluate_and_act(card, Trigger::Carddata),
        poll_span(card),
    )
    .await
    .expect("evaluates");
    let trace_id = w.log(card).await[0]
        .entry
        .trace_id
        .clone()
        .expect("trace id");

    let flushing = traces.clone();
    tokio::task::spawn_blocking(move || flushing.flush())
        .await
        .expect("flush runs")
        .expect("flush");
    let got = received(&inbox, Duration::from_secs(20), |got| {
        ["poll", "evaluate_and_act", "stop_start", "carrier_call"]
            .iter()
            .all(|name| got.iter().any(|s| s.name == *name))
    })
    .await;
    let span = |name: &str| got.iter().find(|s| s.name == name).expect(name);
    let (poll, evaluate, decision, call) = (
        span("poll"),
        span("evaluate_and_act"),
        span("stop_start"),
        span("carrier_call"),
    );
    for s in [poll, evaluate, decision, call] {
        assert_eq!(s.trace_id, trace_id, "one trace: {s:?}");
    }
    assert_eq!(poll.parent_span_id, "");
    assert_eq!(evaluate.parent_span_id, poll.span_id);
    assert_eq!(decision.parent_span_id, evaluate.span_id);
    assert_eq!(call.parent_span_id, decision.span_id);
    assert!(decision.linked_traces.is_empty());
}

#[tokio::test]
async fn with_traces_off_nothing_is_built_and_the_row_has_no_trace_id() {
    let settings = settings(&[("CMP_OTEL_POLL_SAMPLE", "1")]);
    assert!(
        ops::Traces::start(&settings, "cmp-worker")
            .expect("nothing to build")
            .is_none()
    );
    let _installed =
        tracing::subscriber::set_default(ops::subscriber(&settings, None).expect("subscriber"));

    let w = World::new().await;
    let card = w.card("89304", None).await;
    stops_in_a_poll(&w, card).await;
    let log = w.log(card).await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].entry.trace_id, None);
}
