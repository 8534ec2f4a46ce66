//! OpenAPI links (the Link Object of OpenAPI 3.1) on the answers of the document, so a client
//! that follows them (schemathesis' stateful phase, `just api-fuzz`) chains a create to the
//! reads, updates and deletes of what it created, across every resource.
//!
//! Most links follow from the paths, so a new route under a resource gets them without being
//! listed here. A *resource by id* is a path `{C}/{id}` and everything under it with no other
//! path parameter (`/cards/{id}`, `/cards/{id}/stop`, ...); `C` is its collection.
//! - **create**: the 201 of `POST C` links to every operation by id of `C`, `id` taken from the
//!   answer (`$response.body#/id`);
//! - **same resource**: every success answer of an operation on `{C}/{id}...` links to the other
//!   operations by id of the same resource, with the same id (`$request.path.id`), so a chain
//!   goes on after its first step (update, then read, then delete, then read again: 404).
//!
//! The links the paths do not tell (between resources) are listed in [`between_resources`]: a
//! device to its cards and back (bind, unbind), a card or device to its polling status, a
//! package, card or device to a purchase, a card to its config match and a manual trigger.
//! Link names are the target's `operationId`. The test `document_links` checks that every
//! expression names a field of the answer or request it reads.

mod between;

use between::between_resources;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::path::Operation;
use utoipa::openapi::{OpenApi, RefOr};

/// One operation of the document, as the link rules see it.
struct Op {
    id: String,
    method: &'static str,
    path: String,
    /// The success status codes it documents (`200`, `201`, `204`...).
    successes: Vec<String>,
}

impl Op {
    /// `Some(C)` when the operation is on a resource by id of collection `C` and has no
    /// other path parameter.
    fn by_id_collection(&self) -> Option<&str> {
        let (collection, _) = self.path.split_once("/{id}")?;
        (self.path.matches('{').count() == 1).then_some(collection)
    }

    /// `{C}/{id}` when the path is on a resource by id, whatever its other parameters.
    fn resource(&self) -> Option<&str> {
        let at = self.path.find("/{id}")?;
        Some(&self.path[..at + "/{id}".len()])
    }
}

/// A link to add: on answer `status` of operation `from`, to operation `to`.
struct Planned {
    from: String,
    status: String,
    to: String,
    parameters: Vec<(&'static str, Value)>,
    body: Option<Value>,
}

fn planned(from: &str, status: &str, to: &str, parameters: &[(&'static str, Value)]) -> Planned {
    Planned {
        from: from.to_owned(),
        status: status.to_owned(),
        to: to.to_owned(),
        parameters: parameters.to_vec(),
        body: None,
    }
}

/// The links the paths tell (module doc).
fn derived(ops: &[Op]) -> Vec<Planned> {
    let mut links = Vec::new();
    for from in ops {
        let targets = |collection: &str| -> Vec<String> {
            ops.iter()
                .filter(|t| t.by_id_collection() == Some(collection))
                .map(|t| t.id.clone())
                .collect()
        };
        let answers = |status: &str| from.successes.iter().any(|s| s == status);
        if from.method == "post" && answers("201") {
            for to in targets(&from.path) {
                links.push(planned(
                    &from.id,
                    "201",
                    &to,
                    &[("id", json!("$response.body#/id"))],
                ));
            }
        }
        if let Some(resource) = from.resource() {
            let collection = &resource[..resource.len() - "/{id}".len()];
            for status in &from.successes {
                for to in targets(collection).into_iter().filter(|to| *to != from.id) {
                    links.push(planned(
                        &from.id,
                        status,
                        &to,
                        &[("id", json!("$request.path.id"))],
                    ));
                }
            }
        }
    }
    links
}

fn operations(api: &mut OpenApi) -> impl Iterator<Item = (&str, &'static str, &mut Operation)> {
    api.paths.paths.iter_mut().flat_map(|(path, item)| {
        [
            ("get", item.get.as_mut()),
            ("post", item.post.as_mut()),
            ("put", item.put.as_mut()),
            ("patch", item.patch.as_mut()),
            ("delete", item.delete.as_mut()),
        ]
        .into_iter()
        .filter_map(move |(method, op)| op.map(|op| (path.as_str(), method, op)))
    })
}

/// Adds every link to `api`, whose operations already have their `operationId`. A link to or
/// from an operation the document does not have is a bug caught by the tests, not here.
pub(super) fn add(api: &mut OpenApi) {
    let ops: Vec<Op> = operations(api)
        .filter_map(|(path, method, op)| {
            Some(Op {
                id: op.operation_id.clone()?,
                method,
                path: path.to_owned(),
                successes: op
                    .responses
                    .responses
                    .keys()
                    .filter(|code| code.starts_with('2'))
                    .cloned()
                    .collect(),
            })
        })
        .collect();
    // A link between resources replaces the derived one to the same operation (it says more:
    // the unbind's link to bind also carries the card).
    let mut by_source: BTreeMap<(String, String), BTreeMap<String, Planned>> = BTreeMap::new();
    for link in derived(&ops).into_iter().chain(between_resources()) {
        by_source
            .entry((link.from.clone(), link.status.clone()))
            .or_default()
            .insert(link.to.clone(), link);
    }
    for (_, _, op) in operations(api) {
        let Some(id) = op.operation_id.clone() else {
            continue;
        };
        for (status, response) in op.responses.responses.iter_mut() {
            let (Some(links), RefOr::T(response)) =
                (by_source.remove(&(id.clone(), status.clone())), response)
            else {
                continue;
            };
            for (name, link) in links {
                let mut builder = LinkBuilder::new()
                    .operation_id(link.to)
                    .request_body(link.body);
                for (name, value) in link.parameters {
                    builder = builder.parameter(name, value);
                }
                response.links.insert(name, RefOr::T(builder.build()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::Value;

    fn document() -> Value {
        serde_json::from_str(&super::super::document_json().unwrap()).unwrap()
    }

    /// `(operationId, method, path, operation)` of every operation.
    fn operations(doc: &Value) -> Vec<(String, String, String, Value)> {
        let mut ops = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let id = op["operationId"].as_str().unwrap().to_owned();
                ops.push((id, method.clone(), path.clone(), op.clone()));
            }
        }
        ops
    }

    fn deref<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
        match schema["$ref"].as_str() {
            Some(r) => {
                let name = r.strip_prefix("#/components/schemas/").unwrap();
                deref(doc, &doc["components"]["schemas"][name])
            }
            None => schema,
        }
    }

    /// Whether a JSON pointer (segments) can name a value of `schema`.
    fn reaches(doc: &Value, schema: &Value, segments: &[&str]) -> bool {
        let schema = deref(doc, schema);
        let Some((head, rest)) = segments.split_first() else {
            return true;
        };
        for combinator in ["allOf", "oneOf", "anyOf"] {
            if let Some(parts) = schema[combinator].as_array()
                && parts.iter().any(|s| reaches(doc, s, segments))
            {
                return true;
            }
        }
        if let Some(property) = schema["properties"].get(*head) {
            return reaches(doc, property, rest);
        }
        head.parse::<usize>().is_ok() && schema.get("items").is_some_and(|i| reaches(doc, i, rest))
    }

    fn pointer(expression: &str, prefix: &str) -> Option<Vec<String>> {
        let rest = expression.strip_prefix(prefix)?;
        Some(rest.split('/').skip(1).map(str::to_owned).collect())
    }

    fn json_schema(holder: &Value) -> &Value {
        &holder["content"]["application/json"]["schema"]
    }

    /// Checks one runtime expression read on the answer `status` of `source`.
    fn check_expression(doc: &Value, source: &Value, status: &str, expression: &Value, what: &str) {
        let Some(text) = expression.as_str() else {
            return;
        };
        if let Some(segments) = pointer(text, "$response.body#") {
            let schema = json_schema(&source["responses"][status]);
            let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
            assert!(
                reaches(doc, schema, &segments),
                "{what}: {text} names no field of the answer"
            );
        } else if let Some(segments) = pointer(text, "$request.body#") {
            let schema = json_schema(&source["requestBody"]);
            let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
            assert!(
                reaches(doc, schema, &segments),
                "{what}: {text} names no field of the request"
            );
        } else if let Some(name) = text.strip_prefix("$request.path.") {
            let params = source["parameters"].as_array().unwrap();
            assert!(
                params
                    .iter()
                    .any(|p| p["in"] == "path" && p["name"] == name),
                "{what}: {text} is no path parameter of the source"
            );
        } else {
            assert!(
                !text.starts_with('$'),
                "{what}: unexpected expression {text}"
            );
        }
    }

    /// Every link names an operation of the document, gives each of its path parameters, names
    /// only parameters and body fields it has, and reads only fields that exist.
    #[test]
    fn every_link_resolves() {
        let doc = document();
        let ops = operations(&doc);
        let mut links = 0;
        for (id, _, _, op) in &ops {
            for (status, response) in op["responses"].as_object().unwrap() {
                let Some(out) = response["links"].as_object() else {
                    continue;
                };
                assert!(status.starts_with('2'), "{id}: a link on {status}");
                for (name, link) in out {
                    links += 1;
                    let what = format!("{id} {status} -> {name}");
                    let target_id = link["operationId"].as_str().unwrap();
                    assert_eq!(name, target_id, "{what}: named after its target");
                    let (_, _, _, target) = ops
                        .iter()
                        .find(|(i, ..)| i == target_id)
                        .unwrap_or_else(|| panic!("{what}: no operation {target_id}"));
                    let params = target["parameters"].as_array().cloned().unwrap_or_default();
                    let given = link["parameters"].as_object().cloned().unwrap_or_default();
                    for p in params.iter().filter(|p| p["in"] == "path") {
                        let name = p["name"].as_str().unwrap();
                        assert!(
                            given.contains_key(name),
                            "{what}: path parameter {name} not given"
                        );
                    }
                    for (param, expression) in &given {
                        let declared = params
                            .iter()
                            .find(|p| p["name"] == param.as_str())
                            .unwrap_or_else(|| {
                                panic!("{what}: the target has no parameter {param}")
                            });
                        if let Some(literal) = expression.as_str().filter(|e| !e.starts_with('$')) {
                            let schema = deref(&doc, &declared["schema"]);
                            assert!(
                                schema["enum"]
                                    .as_array()
                                    .unwrap()
                                    .iter()
                                    .any(|v| v == literal),
                                "{what}: {literal} is not a value of {param}"
                            );
                        }
                        check_expression(&doc, op, status, expression, &what);
                    }
                    if let Some(body) = link.get("requestBody") {
                        let schema = json_schema(&target["requestBody"]);
                        for (field, expression) in body.as_object().unwrap() {
                            assert!(
                                reaches(&doc, schema, &[field.as_str()]),
                                "{what}: the target's body has no field {field}"
                            );
                            check_expression(&doc, op, status, expression, &what);
                        }
                    }
                }
            }
        }
        assert!(links >= 140, "only {links} links");
    }

    /// The links of `id`'s answer `status`, by name.
    fn links_of(doc: &Value, id: &str, status: &str) -> serde_json::Map<String, Value> {
        let (_, _, _, op) = operations(doc).into_iter().find(|(i, ..)| i == id).unwrap();
        op["responses"][status]["links"]
            .as_object()
            .cloned()
            .unwrap_or_default()
    }

    /// Every POST that creates a resource (201) links to every operation on it by id, the GET
    /// first of all; every operation by id links to the others of the same resource.
    #[test]
    fn every_create_links_to_its_resource_by_id() {
        let doc = document();
        let ops = operations(&doc);
        let by_id = |collection: &str| -> Vec<String> {
            ops.iter()
                .filter(|(_, _, path, _)| {
                    path.strip_prefix(collection)
                        .is_some_and(|rest| rest.starts_with("/{id}"))
                        && path.matches('{').count() == 1
                })
                .map(|(id, ..)| id.clone())
                .collect()
        };
        let mut creates = Vec::new();
        for (id, method, path, op) in &ops {
            if method != "post" || op["responses"].get("201").is_none() {
                continue;
            }
            let targets = by_id(path);
            if targets.is_empty() {
                continue;
            }
            let links = links_of(&doc, id, "201");
            assert!(
                targets.iter().any(|t| t.starts_with("get_")),
                "{id}: no GET by id"
            );
            for target in &targets {
                let link = links
                    .get(target)
                    .unwrap_or_else(|| panic!("{id} 201 does not link {target}"));
                assert_eq!(
                    link["parameters"]["id"], "$response.body#/id",
                    "{id} -> {target}"
                );
                let (_, _, _, t) = ops.iter().find(|(i, ..)| i == target).unwrap();
                for (status, _) in t["responses"].as_object().unwrap() {
                    if !status.starts_with('2') {
                        continue;
                    }
                    let next = links_of(&doc, target, status);
                    for other in targets.iter().filter(|o| *o != target) {
                        let link = next
                            .get(other)
                            .unwrap_or_else(|| panic!("{target} {status} does not link {other}"));
                        assert!(link["parameters"]["id"].as_str().unwrap().starts_with('$'));
                    }
                }
            }
            creates.push(path.trim_start_matches(crate::guard::PREFIX).to_owned());
        }
        creates.sort();
        assert_eq!(
            creates,
            [
                "/cards",
                "/data-cleanup-configs",
                "/devices",
                "/polling-alert-rules",
                "/polling-configs"
            ]
        );
    }

    /// The links between resources: devices and their cards, purchases, polling status.
    #[test]
    fn resources_link_to_each_other() {
        let doc = document();
        let has = |from: &str, status: &str, to: &str| {
            links_of(&doc, from, status)
                .get(to)
                .cloned()
                .unwrap_or_else(|| panic!("{from} {status} does not link {to}"))
        };
        assert_eq!(
            has("post_devices", "201", "post_cards")["requestBody"]["device_id"],
            "$response.body#/id"
        );
        assert_eq!(
            has("post_cards", "201", "post_devices_id_cards")["requestBody"]["card_id"],
            "$response.body#/id"
        );
        has("post_cards", "201", "delete_devices_id_cards_card_id");
        has(
            "post_devices_id_cards",
            "200",
            "delete_devices_id_cards_card_id",
        );
        assert_eq!(
            has(
                "delete_devices_id_cards_card_id",
                "200",
                "post_devices_id_cards"
            )["requestBody"]["card_id"],
            "$request.path.card_id"
        );
        for from in ["post_packages", "post_cards", "post_devices"] {
            has(from, "201", "post_package_usages");
        }
        for (from, kind) in [("post_cards", "card"), ("post_devices", "device")] {
            let link = has(from, "201", "patch_assets_asset_type_id_polling_status");
            assert_eq!(link["parameters"]["asset_type"], kind);
        }
        has(
            "post_package_usages",
            "201",
            "patch_assets_asset_type_id_polling_status",
        );
        // After a delete, the reads of the same id (404 expected).
        has("delete_cards_id", "204", "get_cards_id");
        has("delete_devices_id", "204", "get_devices_id");
        has("delete_polling_configs_id", "204", "get_polling_configs_id");
    }
}
