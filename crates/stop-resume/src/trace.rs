//! The span of a stop, start or reason change, and the trace id its state-log row carries.
//!
//! With traces off (no OpenTelemetry layer installed) every call here finds no OpenTelemetry
//! context and the row's `trace_id` stays NULL; the span itself is an `info` span, which exists
//! only when a decision acts (a few per thousand polls), not on every poll.

use crate::Trigger;
use crate::decision::Action;
use domain::Card;
use opentelemetry::trace::TraceContextExt;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The span a decision that acts runs in (`Span::none()` for one that does nothing). It is
/// always exported (`always_sampled`, see `ops::RootSampler`); when the poll around it was not
/// sampled it starts a trace of its own, linked to the poll's, so the exported trace has no
/// missing parent. `trace_id` is recorded on it so the log lines inside it carry the id.
pub(crate) fn decision_span(card: &Card, action: &Action, trigger: Trigger) -> Span {
    let (name, reason) = match action {
        Action::Stopped { reason } => ("stop", Some(*reason)),
        Action::Started => ("start", None),
        Action::ReasonChanged { to, .. } => ("reason_change", Some(*to)),
        Action::Nothing { .. } => return Span::none(),
    };
    let span = tracing::info_span!(
        "stop_start",
        card_id = %card.id,
        carrier_id = %card.facts.carrier_id,
        action = name,
        reason = reason.map(|r| r.as_str()),
        trigger = %trigger,
        always_sampled = true,
        trace_id = tracing::field::Empty,
        outcome = tracing::field::Empty,
    );
    let around = Span::current().context();
    let around = around.span().span_context().clone();
    if around.is_valid() && !around.is_sampled() {
        // Not started yet (it starts when first entered), so the parent can still change.
        let _ = span.set_parent(opentelemetry::Context::new());
        span.add_link(around);
    }
    if let Some(trace_id) = sampled_trace_id(&span) {
        span.record("trace_id", trace_id.as_str());
    }
    span
}

/// The trace id of the current span when it is exported; `None` with traces off or in a
/// trace that is not sampled.
pub(crate) fn current_trace_id() -> Option<String> {
    sampled_trace_id(&Span::current())
}

fn sampled_trace_id(span: &Span) -> Option<String> {
    let context = span.context();
    let span_context = context.span().span_context().clone();
    (span_context.is_valid() && span_context.is_sampled())
        .then(|| span_context.trace_id().to_string())
}
