//! The trace id a poll's log lines carry (`trace_id` on its span) when traces are on and the
//! poll is sampled. With traces off no OpenTelemetry layer is installed: the lookup finds none
//! and nothing is allocated. (`stop-resume` has the same five lines for its decisions; the
//! crates share no dependency where one copy could live.)

use opentelemetry::trace::TraceContextExt;
use tracing_opentelemetry::OpenTelemetrySpanExt;

pub(crate) fn sampled_trace_id(span: &tracing::Span) -> Option<String> {
    let context = span.context();
    let span_context = context.span().span_context().clone();
    (span_context.is_valid() && span_context.is_sampled())
        .then(|| span_context.trace_id().to_string())
}
