//! Bodies of the asset routes: cards, the import, devices, polling status, packages.

use crate::mirror::body;
use domain::{
    CardCategory, CardId, DeviceId, NetworkStatus, PackageId, RealNameStatus, ResetCycle,
};
use rust_decimal::Decimal;

body! {
    /// A card to create (one, or a row of an import).
    #[schema(example = json!({"iccid": "89860000000000000501", "msisdn": "8613800000501",
        "carrier_id": 1, "card_category": "normal", "status": 1, "real_name_status": 1,
        "network_status": 1, "enable_polling": true, "device_id": null}))]
    struct CardBody into admin::CardBody {
        /// An ICCID: 18 to 22 letters or digits starting with `89`; unique among live cards.
        #[schema(pattern = "^89[0-9A-Za-z]{16,20}$", example = "89860000000000000501")]
        iccid: String,
        /// An optional `+` and 1 to 20 digits.
        #[serde(default)]
        #[schema(min_length = 1, max_length = 21, pattern = "^\\+?[0-9]{1,20}$")]
        msisdn: Option<String>,
        #[schema(minimum = 1)]
        carrier_id: i64,
        #[serde(default = "super::normal")]
        card_category: CardCategory,
        /// The platform's status code of the card's business lifecycle.
        #[serde(default = "super::one")]
        #[schema(minimum = -32768, maximum = 32767)]
        status: i16,
        #[serde(default = "super::not_verified")]
        real_name_status: RealNameStatus,
        #[serde(default = "super::online")]
        network_status: NetworkStatus,
        #[serde(default = "super::yes")]
        enable_polling: bool,
        /// The device the card is bound to; `null`: a standalone card.
        #[serde(default)]
        #[schema(minimum = 1)]
        device_id: Option<i64>,
    }
}

body! {
    /// `PATCH /cards/{id}/status`.
    struct CardStatusBody into admin::CardStatusBody {
        /// The platform's status code.
        #[schema(minimum = -32768, maximum = 32767)]
        status: i16,
    }
}

body! {
    /// The body of an import.
    struct ImportBody into admin::ImportBody {
        /// 1 to 100,000 cards.
        #[schema(min_items = 1, max_items = 100000)]
        cards: Vec<CardBody>,
    }
}

body! {
    /// A device to create.
    #[schema(example = json!({"device_no": "DEV-0001", "enable_polling": true}))]
    struct DeviceBody into admin::DeviceBody {
        /// Unique among live devices.
        #[schema(min_length = 1, max_length = 64, pattern = "^\\S(.*\\S)?$")]
        device_no: String,
        #[serde(default = "super::yes")]
        enable_polling: bool,
    }
}

body! {
    /// `POST /devices/{id}/cards`.
    struct BindBody into admin::BindBody {
        card_id: CardId,
    }
}

body! {
    /// The body.
    struct PollingStatusBody into admin::PollingStatusBody {
        enable_polling: bool,
    }
}

body! {
    /// A product to create.
    #[schema(example = json!({"name": "1 GB monthly", "data_limit_mb": "1024", "virtual_ratio": "1",
        "duration_days": 365, "reset_cycle": "monthly"}))]
    struct PackageBody into admin::PackageBody {
        #[schema(min_length = 1, max_length = 128, pattern = "^\\S(.*\\S)?$")]
        name: String,
        /// Megabytes sold (a decimal string); `null`: unlimited.
        #[serde(default)]
        #[schema(value_type = Option<String>)]
        data_limit_mb: Option<Decimal>,
        /// Virtual megabytes charged per real megabyte, at least 1 (default 1).
        #[serde(default = "super::one_decimal")]
        #[schema(value_type = String)]
        virtual_ratio: Decimal,
        /// 1 to 3660 days.
        #[schema(minimum = 1, maximum = 3660)]
        duration_days: i32,
        #[serde(default = "super::no_reset")]
        reset_cycle: ResetCycle,
    }
}

body! {
    /// A purchase of a product for a card or a device (exactly one of the two).
    #[schema(example = json!({"card_id": 500, "package_id": 1}))]
    struct PackageUsageBody into admin::PackageUsageBody {
        #[serde(default)]
        card_id: Option<CardId>,
        #[serde(default)]
        device_id: Option<DeviceId>,
        package_id: PackageId,
        /// The carrier's identifier of the package, if it reports one.
        #[serde(default)]
        #[schema(min_length = 1, max_length = 64)]
        external_id: Option<String>,
        /// Stay pending until the card's first real-name verification.
        #[serde(default)]
        activate_on_realname: bool,
    }
}
