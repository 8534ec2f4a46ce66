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
mod tests;
