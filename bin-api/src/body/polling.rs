//! Bodies of the polling routes: configs and their dry run, the manual trigger, concurrency.

use crate::mirror::body;
use domain::{
    CardCategory, CardCondition, CardId, CarrierId, DeviceId, NetworkStatus, PollingConfigId,
    TaskType,
};

body! {
    /// A polling config to create, or the new content of one (`PUT` replaces every field).
    #[schema(example = json!({"name": "online cards", "priority": 10, "enabled": true,
        "card_condition": "online", "card_category": null, "carrier_id": null,
        "realname_interval_secs": 86400, "carddata_interval_secs": 3600,
        "package_interval_secs": 3600, "protect_interval_secs": 600}))]
    struct ConfigBody into admin::ConfigBody {
        #[schema(min_length = 1, max_length = 128, pattern = "^\\S(.*\\S)?$")]
        name: String,
        /// Lower is tried first; ties broken by id.
        #[serde(default)]
        priority: i32,
        #[serde(default = "super::yes")]
        enabled: bool,
        /// `null`: any card state.
        #[serde(default)]
        card_condition: Option<CardCondition>,
        #[serde(default)]
        card_category: Option<CardCategory>,
        #[serde(default)]
        #[schema(minimum = 1)]
        carrier_id: Option<i64>,
        /// Seconds between two real-name polls; `null`: not scheduled.
        #[serde(default)]
        #[schema(minimum = 1, maximum = 31622400)]
        realname_interval_secs: Option<u32>,
        #[serde(default)]
        #[schema(minimum = 1, maximum = 31622400)]
        carddata_interval_secs: Option<u32>,
        #[serde(default)]
        #[schema(minimum = 1, maximum = 31622400)]
        package_interval_secs: Option<u32>,
        #[serde(default)]
        #[schema(minimum = 1, maximum = 31622400)]
        protect_interval_secs: Option<u32>,
    }
}

body! {
    /// A config to try, optionally as the new content of an existing one.
    struct DryRunBody into admin::DryRunBody {
        /// The config it would replace; absent: a new config.
        #[serde(default)]
        id: Option<PollingConfigId>,
        config: ConfigBody,
    }
}

body! {
    /// `POST /polling-manual-trigger/single`.
    #[schema(example = json!({"card_id": 500, "task_types": ["carddata"]}))]
    struct TriggerSingle into admin::TriggerSingle {
        card_id: CardId,
        /// Default: every task type.
        #[serde(default)]
        task_types: Option<Vec<TaskType>>,
    }
}

body! {
    /// `POST /polling-manual-trigger/batch`.
    struct TriggerBatch into admin::TriggerBatch {
        /// 1 to 10,000 card ids.
        #[schema(min_items = 1, max_items = 10000)]
        card_ids: Vec<CardId>,
        #[serde(default)]
        task_types: Option<Vec<TaskType>>,
    }
}

body! {
    /// `POST /polling-manual-trigger/by-filter`: at least one filter.
    #[schema(example = json!({"carrier_id": 1, "task_types": ["package"]}))]
    struct TriggerByFilter into admin::TriggerByFilter {
        #[serde(default)]
        device_id: Option<DeviceId>,
        #[serde(default)]
        carrier_id: Option<CarrierId>,
        /// The platform status code.
        #[serde(default)]
        #[schema(minimum = -32768, maximum = 32767)]
        status: Option<i16>,
        #[serde(default)]
        network_status: Option<NetworkStatus>,
        #[serde(default)]
        card_category: Option<CardCategory>,
        #[serde(default)]
        task_types: Option<Vec<TaskType>>,
    }
}

body! {
    /// `POST /polling-manual-trigger/cancel`.
    struct TriggerCancel into admin::TriggerCancel {
        /// The list to empty; absent: every type's.
        #[serde(default)]
        task_type: Option<TaskType>,
    }
}

body! {
    /// `PUT /polling-concurrency/{task_type}`.
    struct SetConcurrency into admin::concurrency::SetConcurrency {
        max: i64,
    }
}

body! {
    /// `POST /polling-concurrency/reset`: which types (all when absent) and whether to also drop
    /// the operator's max (back to the default).
    struct ResetConcurrency into admin::concurrency::ResetConcurrency {
        #[serde(default)]
        task_types: Option<Vec<TaskType>>,
        #[serde(default)]
        clear_max: bool,
    }
}
