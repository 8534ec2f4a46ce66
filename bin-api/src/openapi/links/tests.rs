//! The links the document carries, read back from the served JSON.

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
                        .unwrap_or_else(|| panic!("{what}: the target has no parameter {param}"));
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
