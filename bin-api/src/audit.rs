//! The audit row of one write: who, what (route, target ids, a summary of the body), outcome.

use crate::auth::Caller;
use axum::body::Bytes;
use axum::http::{Method, StatusCode};
use domain::NewAdminAudit;
use serde_json::{Map, Value};

/// Arrays longer than this are summarised by their length (an import of 100,000 rows is
/// recorded as its size, not its content).
const MAX_ARRAY: usize = 20;
/// Strings are cut to this many characters.
const MAX_STRING: usize = 200;
/// Nesting kept.
const MAX_DEPTH: usize = 4;

/// The row for a write to `template` (matched) at `path` (actual).
pub(crate) fn entry(
    caller: Option<&Caller>,
    method: &Method,
    template: &str,
    path: &str,
    body: &Bytes,
    status: StatusCode,
) -> NewAdminAudit {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let mut target = path_ids(template, path);
    if let Some(Value::Object(obj)) = &parsed {
        for key in ["card_id", "device_id", "id", "card_ids"] {
            if let Some(v) = obj.get(key) {
                target.insert(key.to_owned(), summarise(v, 0));
            }
        }
    }
    if template.starts_with(CARRIERS)
        && let Some(Value::Object(obj)) = &parsed
        && let Some(id) = obj.get("carrier_id")
    {
        target.insert("carrier_id".to_owned(), summarise(id, 0));
    }
    let summary = match parsed {
        Some(v) if template.starts_with(CARRIERS) => carrier_summary(&v),
        Some(v) => summarise(&v, 0),
        None if body.is_empty() => Value::Object(Map::new()),
        None => serde_json::json!({ "unparsed_bytes": body.len() }),
    };
    NewAdminAudit {
        api_key_id: caller.map(|c| c.id),
        key_name: caller.map(|c| c.name.clone()),
        method: method.as_str().to_owned(),
        route: template.to_owned(),
        target: Value::Object(target),
        summary,
        status: status.as_u16(),
        // The request's span (`app::request_span`) is the current one here.
        trace_id: ops::sampled_trace_id(&tracing::Span::current()),
    }
}

/// The carrier routes' prefix: their bodies carry credentials.
const CARRIERS: &str = "/api/admin/carriers";

/// The fields of a carrier body that may be recorded; anything else (a credential sent in the
/// wrong place, say) is named but not kept.
const CARRIER_FIELDS: &[&str] = &[
    "carrier_id",
    "name",
    "protocol",
    "base_url",
    "rate_limit_per_sec",
    "max_concurrent",
    "batch_size",
    "timeout_ms",
    "enabled",
];

/// A carrier body without secrets: the known fields, `credentials` as the list of its field
/// names (`credential_fields`), the names of unknown fields (`other_fields`), never a value of
/// either.
fn carrier_summary(v: &Value) -> Value {
    let Value::Object(obj) = v else {
        return serde_json::json!({ "unparsed": true });
    };
    let mut out = Map::new();
    let mut other = Vec::new();
    for (k, v) in obj {
        if k == "credentials" {
            let names = match v {
                Value::Object(fields) => fields.keys().map(|f| Value::String(clean(f))).collect(),
                _ => Vec::new(),
            };
            out.insert("credential_fields".to_owned(), Value::Array(names));
        } else if CARRIER_FIELDS.contains(&k.as_str()) {
            out.insert(k.clone(), summarise(v, 1));
        } else {
            other.push(Value::String(clean(k)));
        }
    }
    if !other.is_empty() {
        other.truncate(MAX_ARRAY);
        out.insert("other_fields".to_owned(), Value::Array(other));
    }
    Value::Object(out)
}

/// `{id}` segments of the template with their values in the path.
fn path_ids(template: &str, path: &str) -> Map<String, Value> {
    let mut out = Map::new();
    for (t, p) in template.split('/').zip(path.split('/')) {
        if let Some(name) = t.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
            let value = p
                .parse::<i64>()
                .map_or_else(|_| Value::String(clean(p)), Value::from);
            out.insert(name.to_owned(), value);
        }
    }
    out
}

/// PostgreSQL's JSONB refuses `\u0000`.
fn clean(s: &str) -> String {
    s.chars().filter(|c| *c != '\0').take(MAX_STRING).collect()
}

/// JSONB keeps numbers exactly, and a huge float would come back as an integer too large to
/// read: such numbers are kept as text.
fn number(n: &serde_json::Number) -> Value {
    if n.is_i64() || n.is_u64() {
        return Value::Number(n.clone());
    }
    match n.as_f64() {
        Some(f) if f.is_finite() && f.abs() < 1e15 => Value::Number(n.clone()),
        _ => Value::String(n.to_string()),
    }
}

fn summarise(v: &Value, depth: usize) -> Value {
    match v {
        Value::Number(n) => number(n),
        Value::Array(items) if items.len() > MAX_ARRAY || depth >= MAX_DEPTH => {
            serde_json::json!({ "count": items.len() })
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| summarise(i, depth + 1)).collect())
        }
        Value::Object(_) if depth >= MAX_DEPTH => Value::String("…".to_owned()),
        Value::Object(obj) => Value::Object(
            obj.iter()
                .map(|(k, v)| (clean(k), summarise(v, depth + 1)))
                .collect(),
        ),
        Value::String(s) => Value::String(clean(s)),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_and_summaries() {
        let body = Bytes::from(
            r#"{"card_ids":[1,2,3],"cards":[{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}]}"#,
        );
        let e = entry(
            None,
            &Method::POST,
            "/api/admin/devices/{id}/cards/{card_id}",
            "/api/admin/devices/7/cards/9",
            &body,
            StatusCode::OK,
        );
        assert_eq!(e.target["id"], 7);
        assert_eq!(e.target["card_id"], 9);
        assert_eq!(e.target["card_ids"], serde_json::json!([1, 2, 3]));
        assert_eq!(e.summary["cards"], serde_json::json!({"count": 21}));
    }

    #[test]
    fn carrier_bodies_keep_credential_names_only() {
        let body = Bytes::from(
            r#"{"carrier_id":4,"name":"cm","protocol":"onelink","base_url":"http://x",
               "credentials":{"appid":"A-pp","password":"S3cr3t"},"password":"S3cr3t-too",
               "batch_size":5}"#,
        );
        let e = entry(
            None,
            &Method::POST,
            "/api/admin/carriers",
            "/api/admin/carriers",
            &body,
            StatusCode::CREATED,
        );
        let text = format!("{} {}", e.summary, e.target);
        assert!(!text.contains("S3cr3t") && !text.contains("A-pp"), "{text}");
        assert_eq!(e.target["carrier_id"], 4);
        assert_eq!(
            e.summary["credential_fields"],
            serde_json::json!(["appid", "password"])
        );
        assert_eq!(e.summary["other_fields"], serde_json::json!(["password"]));
        assert_eq!(e.summary["batch_size"], 5);
        let e = entry(
            None,
            &Method::PUT,
            "/api/admin/carriers/{carrier_id}",
            "/api/admin/carriers/4",
            &Bytes::from(r#"{"credentials":"S3cr3t"}"#),
            StatusCode::UNPROCESSABLE_ENTITY,
        );
        assert!(!e.summary.to_string().contains("S3cr3t"));
        assert_eq!(e.target["carrier_id"], 4);
    }
}
