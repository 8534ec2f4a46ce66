//! Bodies of the carrier routes. Credentials are write-only.

use crate::mirror::body;
use domain::CarrierProtocol;
use serde_json::Value;

/// A carrier body: the fields given, then the call budget and `enabled` that a new carrier
/// and a carrier's new content share.
macro_rules! with_limits {
    ($(#[$meta:meta])* struct $name:ident into $($dst:ident)::+ { $($fields:tt)* }) => {
        body! {
            $(#[$meta])*
            struct $name into $($dst)::+ {
                $($fields)*
                /// Calls per second shared by every node; 0 = no limit. Absent: the protocol's default.
                #[serde(default)]
                #[schema(maximum = 100000)]
                rate_limit_per_sec: Option<u32>,
                /// Calls in flight per process; 0 = no limit. Absent: the protocol's default.
                #[serde(default)]
                #[schema(maximum = 10000)]
                max_concurrent: Option<u32>,
                /// Most cards one batch call carries. Absent: the protocol's default.
                #[serde(default)]
                #[schema(minimum = 1, maximum = 1000)]
                batch_size: Option<u32>,
                /// Bound of one HTTP request in milliseconds. Absent: the protocol's default.
                #[serde(default)]
                #[schema(minimum = 100, maximum = 120000)]
                timeout_ms: Option<u32>,
                /// The *assumed* calls (no public source shows them) the adapter may make:
                /// `realname_batch`, `usage_batch`, `network_status_batch`; the protocol's page
                /// in `docs/carriers/` says which it has. Absent: none, documented calls only.
                #[serde(default)]
                #[schema(value_type = Option<Vec<domain::AssumedCall>>)]
                assumed_calls: Option<domain::AssumedCalls>,
                #[serde(default = "super::yes")]
                enabled: bool,
            }
        }
    };
}

with_limits! {
    /// A new carrier (`POST /carriers`).
    #[schema(example = json!({"carrier_id": 1, "name": "China Mobile OneLink",
        "protocol": "onelink", "base_url": "https://api.iot.10086.cn/v5/ec",
        "credentials": {"appid": "your-appid", "password": "your-password"},
        "rate_limit_per_sec": 20, "enabled": true}))]
    struct NewCarrierBody into admin::carriers::NewCarrierBody {
        /// The `carrier_id` of the cards this carrier serves (`tb_iot_card.carrier_id`).
        #[schema(minimum = 1)]
        carrier_id: i64,
        #[schema(min_length = 1, max_length = 100)]
        name: String,
        protocol: CarrierProtocol,
        /// The platform's API root, `http://` or `https://`.
        #[schema(max_length = 500, pattern = "^https?://\\S+$")]
        base_url: String,
        /// The protocol's credential fields, each a non-empty string (`{}` for `cmp-json`):
        /// `onelink` appid, password; `ctcc-5gcmp` app_key, secret; `control-center` username,
        /// api_key; `1nce` client_id, client_secret; `emnify` application_token. Write-only.
        #[schema(value_type = std::collections::HashMap<String, String>)]
        credentials: Value,
    }
}

with_limits! {
    /// The new content of a carrier (`PUT /carriers/{carrier_id}` replaces every field but the
    /// credentials, which are kept when absent).
    #[schema(example = json!({"name": "China Mobile OneLink", "protocol": "onelink",
        "base_url": "https://api.iot.10086.cn/v5/ec", "rate_limit_per_sec": 20,
        "enabled": true}))]
    struct CarrierBody into admin::carriers::CarrierBody {
        #[schema(min_length = 1, max_length = 100)]
        name: String,
        protocol: CarrierProtocol,
        #[schema(max_length = 500, pattern = "^https?://\\S+$")]
        base_url: String,
        /// Absent or `null`: keep the stored credentials (they must fit the protocol). Given: the
        /// new credentials, whole; a field sent as `""` keeps that field's stored value. Write-only.
        #[serde(default)]
        #[schema(value_type = Option<std::collections::HashMap<String, String>>)]
        credentials: Option<Value>,
    }
}

body! {
    /// `PATCH /carriers/{carrier_id}/status`.
    struct CarrierStatusBody into admin::carriers::CarrierStatusBody {
        enabled: bool,
    }
}
