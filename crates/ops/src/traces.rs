//! Traces: OpenTelemetry spans sent over OTLP/HTTP (protobuf bodies) to the collector named by
//! `CMP_OTEL_ENDPOINT`. Unset, nothing here is built: no exporter, no layer, no thread, and the
//! spans of our crates cost what they cost before.
//!
//! What is exported is decided once per trace, at its root, by [`RootSampler`]:
//!
//! * a span with the field `always_sampled = true` (a stop, start or reason change; an API
//!   write) is always exported, and so is everything under it;
//! * any other root (a poll, an API read, a periodic job) is exported at the ratio
//!   `CMP_OTEL_POLL_SAMPLE`, chosen from its trace id (so every node agrees);
//! * any other child follows its parent.
//!
//! A decision taken inside a poll that was not sampled starts a root of its own, linked to
//! the poll (`stop-resume` does that), so the exported trace has no missing parent.

use anyhow::Context as _;
use opentelemetry::trace::{Link, SpanKind, TraceContextExt, TraceId, TracerProvider as _};
use opentelemetry::{Context, KeyValue, Value};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SamplingDecision, SamplingResult,
    SdkTracerProvider, ShouldSample,
};
use settings::Settings;
use std::time::Duration;
use tracing::Metadata;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// The span field that makes a span, and its trace from there on, always exported.
pub const ALWAYS_SAMPLED: &str = "always_sampled";

/// The crates whose spans are exported (their module paths' first segment). Spans of the
/// libraries below us (sqlx, hyper, fred, the exporter's own HTTP client) are not: they would
/// multiply the records, and the exporter's client would trace itself.
const OUR_TARGETS: &[&str] = &[
    "scheduler",
    "task_handlers",
    "stop_resume",
    "gateway",
    "admin",
    "lifecycle",
    "cmp_api",
    "cmp_worker",
];

/// How long a batch of spans waits before it is sent (the SDK's default is 5 s).
const SEND_EVERY: Duration = Duration::from_secs(2);
/// The longest one export may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// The trace pipeline of a process: present only when `CMP_OTEL_ENDPOINT` is set. Keep it
/// for the life of the process and [`shutdown`](Self::shutdown) it at the end, which sends
/// what is still buffered.
#[derive(Debug)]
pub struct Traces {
    provider: SdkTracerProvider,
    service: String,
}

impl Traces {
    /// Builds the exporter and its batch thread when `CMP_OTEL_ENDPOINT` is set; `None` when
    /// it is not. `binary` names the service unless `CMP_OTEL_SERVICE_NAME` does.
    pub fn start(settings: &Settings, binary: &str) -> anyhow::Result<Option<Traces>> {
        let Some(endpoint) = &settings.otel_endpoint else {
            return Ok(None);
        };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("{endpoint}/v1/traces"))
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .with_context(|| format!("CMP_OTEL_ENDPOINT={endpoint}: build the OTLP exporter"))?;
        let batches = BatchSpanProcessor::builder(exporter)
            .with_batch_config(
                BatchConfigBuilder::default()
                    .with_scheduled_delay(SEND_EVERY)
                    .build(),
            )
            .build();
        let service = settings
            .otel_service_name
            .clone()
            .unwrap_or_else(|| binary.to_owned());
        let provider = SdkTracerProvider::builder()
            .with_span_processor(batches)
            .with_sampler(RootSampler::new(settings.otel_poll_sample))
            .with_resource(
                Resource::builder()
                    .with_service_name(service.clone())
                    .build(),
            )
            .build();
        Ok(Some(Traces { provider, service }))
    }

    /// The layer that turns our crates' spans into OpenTelemetry spans.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    {
        let tracer = self.provider.tracer(self.service.clone());
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            // Decided once per callsite (the predicate reads only its metadata), and no level
            // below `debug` is turned on for the rest of the process.
            .with_filter(
                tracing_subscriber::filter::filter_fn(is_exported)
                    .with_max_level_hint(tracing_subscriber::filter::LevelFilter::DEBUG),
            )
    }

    /// Sends every finished span now. Blocks the calling thread until the collector answered
    /// (or the export timed out): call it off the async runtime's threads.
    pub fn flush(&self) -> anyhow::Result<()> {
        self.provider
            .force_flush()
            .map_err(|e| anyhow::anyhow!("flush the traces: {e}"))
    }

    /// Sends what is buffered and stops the batch thread. Blocks like [`flush`](Self::flush).
    pub fn shutdown(self) -> anyhow::Result<()> {
        self.provider
            .shutdown()
            .map_err(|e| anyhow::anyhow!("shut the trace exporter down: {e}"))
    }
}

/// The trace id (32 hex digits) of `span` when it is exported; `None` with traces off (no
/// OpenTelemetry layer: nothing is allocated) or in a trace that is not sampled.
pub fn sampled_trace_id(span: &tracing::Span) -> Option<String> {
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let context = span.context();
    let span_context = context.span().span_context().clone();
    (span_context.is_valid() && span_context.is_sampled())
        .then(|| span_context.trace_id().to_string())
}

/// Spans (never events) of our crates, down to `debug`: the carrier calls of a poll are
/// `debug` spans, so they cost nothing while traces are off (the log filter, `info` by
/// default, disables them).
fn is_exported(meta: &Metadata<'_>) -> bool {
    meta.is_span()
        && *meta.level() <= tracing::Level::DEBUG
        && OUR_TARGETS.contains(&meta.target().split("::").next().unwrap_or_default())
}

/// The sampler of module doc: always for [`ALWAYS_SAMPLED`] spans, the parent's decision for
/// other children, the ratio for other roots.
#[derive(Debug, Clone)]
pub struct RootSampler {
    ratio: Sampler,
}

impl RootSampler {
    /// `ratio` in 0..=1 (the settings check it).
    pub fn new(ratio: f64) -> Self {
        Self {
            ratio: Sampler::TraceIdRatioBased(ratio),
        }
    }
}

impl ShouldSample for RootSampler {
    fn should_sample(
        &self,
        parent_context: Option<&Context>,
        trace_id: TraceId,
        name: &str,
        span_kind: &SpanKind,
        attributes: &[KeyValue],
        links: &[Link],
    ) -> SamplingResult {
        let parent = parent_context
            .filter(|cx| cx.has_active_span())
            .map(|cx| cx.span().span_context().clone())
            .filter(|parent| parent.is_valid());
        let always = attributes
            .iter()
            .any(|kv| kv.key.as_str() == ALWAYS_SAMPLED && kv.value == Value::Bool(true));
        let decision = match &parent {
            _ if always => SamplingDecision::RecordAndSample,
            Some(parent) if parent.is_sampled() => SamplingDecision::RecordAndSample,
            Some(_) => SamplingDecision::Drop,
            None => {
                self.ratio
                    .should_sample(None, trace_id, name, span_kind, attributes, links)
                    .decision
            }
        };
        SamplingResult {
            decision,
            attributes: Vec::new(),
            trace_state: parent
                .map(|parent| parent.trace_state().clone())
                .unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceState};

    fn parent(sampled: bool) -> Context {
        let flags = if sampled {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        };
        Context::new().with_remote_span_context(SpanContext::new(
            TraceId::from(7_u128),
            SpanId::from(9_u64),
            flags,
            false,
            TraceState::default(),
        ))
    }

    fn decide(sampler: &RootSampler, parent: Option<&Context>, attrs: &[KeyValue]) -> bool {
        sampler
            .should_sample(
                parent,
                TraceId::from(u128::MAX / 3),
                "span",
                &SpanKind::Internal,
                attrs,
                &[],
            )
            .decision
            == SamplingDecision::RecordAndSample
    }

    #[test]
    fn roots_follow_the_ratio_children_their_parent_and_decisions_always_go() {
        let none = RootSampler::new(0.0);
        let all = RootSampler::new(1.0);
        let always = [KeyValue::new(ALWAYS_SAMPLED, true)];
        assert!(!decide(&none, None, &[]));
        assert!(decide(&all, None, &[]));
        assert!(decide(&none, None, &always));
        assert!(decide(&none, Some(&parent(true)), &[]));
        assert!(!decide(&all, Some(&parent(false)), &[]));
        assert!(decide(&none, Some(&parent(false)), &always));
        assert!(!decide(
            &none,
            None,
            &[KeyValue::new(ALWAYS_SAMPLED, false)]
        ));
    }

    #[test]
    fn a_ratio_exports_about_that_fraction_of_roots() {
        let sampler = RootSampler::new(0.01);
        let sampled = (0..100_000_u128)
            .filter(|i| {
                sampler
                    .should_sample(
                        None,
                        TraceId::from(i.wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835)),
                        "poll",
                        &SpanKind::Internal,
                        &[],
                        &[],
                    )
                    .decision
                    == SamplingDecision::RecordAndSample
            })
            .count();
        assert!((700..1300).contains(&sampled), "{sampled} of 100000");
    }
}
