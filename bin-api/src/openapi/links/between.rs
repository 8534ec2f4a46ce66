//! The links the paths do not tell, listed by hand (see the parent module's doc): a table,
//! kept apart from the machinery that derives the others and writes them into the document.

use super::{Planned, planned};
use serde_json::{Value, json};

/// The links between resources, by `operationId` (see the module doc for the derived ones).
pub(super) fn between_resources() -> Vec<Planned> {
    let new_id = || json!("$response.body#/id");
    let with_body = |mut p: Planned, body: Value| {
        p.body = Some(body);
        p
    };
    let mut links = vec![
        // Polling on or off, for the card or device just created.
        planned(
            "post_cards",
            "201",
            "patch_assets_asset_type_id_polling_status",
            &[("asset_type", json!("card")), ("id", new_id())],
        ),
        planned(
            "post_devices",
            "201",
            "patch_assets_asset_type_id_polling_status",
            &[("asset_type", json!("device")), ("id", new_id())],
        ),
        // A device, then a card created on it; the card bound to (again) and unbound from its
        // device; an unbound card bound back; the card of a bind or unbind read.
        with_body(
            planned("post_devices", "201", "post_cards", &[]),
            json!({"device_id": "$response.body#/id"}),
        ),
        with_body(
            planned(
                "post_cards",
                "201",
                "post_devices_id_cards",
                &[("id", json!("$response.body#/device_id"))],
            ),
            json!({"card_id": "$response.body#/id"}),
        ),
        planned(
            "post_cards",
            "201",
            "delete_devices_id_cards_card_id",
            &[
                ("id", json!("$response.body#/device_id")),
                ("card_id", new_id()),
            ],
        ),
        planned(
            "post_devices_id_cards",
            "200",
            "delete_devices_id_cards_card_id",
            &[
                ("id", json!("$request.path.id")),
                ("card_id", json!("$response.body#/card/id")),
            ],
        ),
        with_body(
            planned(
                "delete_devices_id_cards_card_id",
                "200",
                "post_devices_id_cards",
                &[("id", json!("$request.path.id"))],
            ),
            json!({"card_id": "$request.path.card_id"}),
        ),
        planned(
            "post_devices_id_cards",
            "200",
            "get_cards_id",
            &[("id", json!("$response.body#/card/id"))],
        ),
        planned(
            "delete_devices_id_cards_card_id",
            "200",
            "get_cards_id",
            &[("id", json!("$response.body#/card/id"))],
        ),
        // Purchases: of the package just created, for the card or device just created; then
        // the owner's polling status and the card's month of usage.
        with_body(
            planned("post_packages", "201", "post_package_usages", &[]),
            json!({"package_id": "$response.body#/id"}),
        ),
        with_body(
            planned("post_cards", "201", "post_package_usages", &[]),
            json!({"card_id": "$response.body#/id"}),
        ),
        with_body(
            planned("post_devices", "201", "post_package_usages", &[]),
            json!({"device_id": "$response.body#/id"}),
        ),
        planned(
            "post_package_usages",
            "201",
            "patch_assets_asset_type_id_polling_status",
            &[
                ("asset_type", json!("$response.body#/usage/owner/kind")),
                ("id", json!("$response.body#/usage/owner/id")),
            ],
        ),
        planned(
            "post_package_usages",
            "201",
            "get_cards_id_usage",
            &[("id", json!("$response.body#/usage/owner/id"))],
        ),
        // A new card's config match and a manual poll of it.
        planned(
            "post_cards",
            "201",
            "get_polling_configs_match",
            &[("card_id", new_id())],
        ),
        with_body(
            planned(
                "post_cards",
                "201",
                "post_polling_manual_trigger_single",
                &[],
            ),
            json!({"card_id": "$response.body#/id"}),
        ),
        // The first card of an import.
        planned(
            "post_cards_import",
            "201",
            "get_cards_id",
            &[("id", json!("$response.body#/ids/0"))],
        ),
    ];
    links.extend(carrier_links());
    links
}

/// A carrier's routes are keyed `{carrier_id}`, not `{id}`, so the derived rules do not see
/// them: the carrier just created, and every operation on one carrier, link to the others.
fn carrier_links() -> Vec<Planned> {
    const BY_ID: [&str; 4] = [
        "get_carriers_carrier_id",
        "put_carriers_carrier_id",
        "patch_carriers_carrier_id_status",
        "post_carriers_carrier_id_test",
    ];
    let mut links: Vec<Planned> = BY_ID
        .iter()
        .map(|to| {
            planned(
                "post_carriers",
                "201",
                to,
                &[("carrier_id", json!("$response.body#/carrier_id"))],
            )
        })
        .collect();
    for from in BY_ID {
        for to in BY_ID.iter().filter(|to| **to != from) {
            links.push(planned(
                from,
                "200",
                to,
                &[("carrier_id", json!("$request.path.carrier_id"))],
            ));
        }
    }
    links
}
