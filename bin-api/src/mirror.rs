//! The HTTP contract's types are bin-api's (`crate::body`, `crate::view`); the admin services
//! keep plain structs without OpenAPI derives. Each contract type is declared once, by
//! [`view!`], [`body!`] or [`mirror_enum!`], from one field list that gives both the documented
//! struct and its field-by-field conversion from (or into) the admin type. The conversion
//! destructures the admin type without `..`: a field added on one side and not the other does
//! not compile.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use std::collections::BTreeMap;

/// Built field by field from `T` (an admin type into its view, a body into the admin input).
pub(crate) trait Mirror<T> {
    fn mirror(from: T) -> Self;
}

/// `B` built from `a` (the target is inferred: `Json(mirror(answer))`, `&mirror(body)`).
pub(crate) fn mirror<A, B: Mirror<A>>(a: A) -> B {
    B::mirror(a)
}

impl<A, B: Mirror<A>> Mirror<Vec<A>> for Vec<B> {
    fn mirror(from: Vec<A>) -> Self {
        from.into_iter().map(B::mirror).collect()
    }
}

impl<A, B: Mirror<A>> Mirror<Option<A>> for Option<B> {
    fn mirror(from: Option<A>) -> Self {
        from.map(B::mirror)
    }
}

impl<A, B: Mirror<A>> Mirror<domain::store::Paged<A>> for domain::store::Paged<B> {
    fn mirror(from: domain::store::Paged<A>) -> Self {
        let domain::store::Paged {
            items,
            total,
            page,
            page_size,
        } = from;
        Self {
            items: Mirror::mirror(items),
            total,
            page,
            page_size,
        }
    }
}

/// Types that are the same on both sides (scalars, and the domain's own documented types).
macro_rules! unchanged {
    ($($t:ty),* $(,)?) => {
        $(impl Mirror<$t> for $t {
            fn mirror(from: $t) -> Self {
                from
            }
        })*
    };
}

unchanged!(
    bool,
    i16,
    i32,
    i64,
    u32,
    u64,
    usize,
    f64,
    String,
    Decimal,
    DateTime<Utc>,
    serde_json::Value,
    BTreeMap<String, String>,
    BTreeMap<String, usize>,
    crate::error::Problem,
    domain::CardId,
    domain::DeviceId,
    domain::CarrierId,
    domain::PackageId,
    domain::PollingConfigId,
    domain::CleanupConfigId,
    domain::TaskType,
    domain::Card,
    domain::CardStateLog,
    domain::CardCategory,
    domain::CardCondition,
    domain::CardMatchFields,
    domain::RealNameStatus,
    domain::NetworkStatus,
    domain::StopReason,
    domain::PackageStatus,
    domain::PackageOwner,
    domain::PackageUsage,
    domain::ResetCycle,
    domain::Intervals,
    domain::PollingConfig,
    domain::Device,
    domain::AlertRule,
    domain::FleetCounts,
    domain::MetricsPoint,
    domain::HistoryResolution,
    domain::UsageHour,
    domain::CarrierProtocol,
    domain::CarrierLimits,
    domain::AssumedCall,
    domain::AssumedCalls,
    domain::CarrierHealth,
);

/// A documented answer, built from the admin type `from` names:
/// `view! { /// doc \n struct Name from admin::Name { /// doc \n field: Type, ... } }`.
/// Fields keep their serde and schema attributes; a field whose type is itself a view names
/// the view (`Vec<PackageEvidence>`).
macro_rules! view {
    ($($t:tt)*) => { $crate::mirror::mirrored!(view $($t)*); };
}

/// A documented request body, turned into the admin input `into` names:
/// `body! { struct Name into admin::Name { ... } }`, fields as in [`view!`].
macro_rules! body {
    ($($t:tt)*) => { $crate::mirror::mirrored!(body $($t)*); };
}

/// [`view!`] and [`body!`]: the struct (`derive`s first, then the given attributes, every
/// field `pub(crate)`) and its conversion, from one field list.
macro_rules! mirrored {
    (view $(#[$meta:meta])* struct $name:ident from $($src:ident)::+ { $($fields:tt)* }) => {
        $crate::mirror::mirrored!(@struct [derive(Debug, serde::Serialize, utoipa::ToSchema)]
            $(#[$meta])* $name { $($fields)* });
        $crate::mirror::mirrored!(@convert [$($src)::+] => [$name] { $($fields)* });
    };
    (body $(#[$meta:meta])* struct $name:ident into $($dst:ident)::+ { $($fields:tt)* }) => {
        $crate::mirror::mirrored!(@struct [derive(Debug, serde::Deserialize, utoipa::ToSchema)]
            $(#[$meta])* $name { $($fields)* });
        $crate::mirror::mirrored!(@convert [$name] => [$($dst)::+] { $($fields)* });
    };
    (@struct [$derive:meta] $(#[$meta:meta])* $name:ident {
        $( $(#[$fmeta:meta])* $field:ident : $fty:ty ),* $(,)?
    }) => {
        #[$derive]
        $(#[$meta])*
        pub(crate) struct $name {
            $( $(#[$fmeta])* pub(crate) $field: $fty, )*
        }
    };
    (@convert [$($from:ident)::+] => [$($to:ident)::+] {
        $( $(#[$fmeta:meta])* $field:ident : $fty:ty ),* $(,)?
    }) => {
        impl $crate::mirror::Mirror<$($from)::+> for $($to)::+ {
            fn mirror(from: $($from)::+) -> Self {
                let $($from)::+ { $($field),* } = from;
                Self { $( $field: $crate::mirror::Mirror::mirror($field) ),* }
            }
        }
    };
}

/// A documented enum of unit variants, both ways (a path or query value, and an answer's
/// field).
macro_rules! mirror_enum {
    (
        $(#[$meta:meta])*
        enum $name:ident mirrors $src:path {
            $( $(#[$vmeta:meta])* $variant:ident ),* $(,)?
        }
    ) => {
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize,
            utoipa::ToSchema,
        )]
        $(#[$meta])*
        pub(crate) enum $name {
            $( $(#[$vmeta])* $variant, )*
        }

        impl $crate::mirror::Mirror<$src> for $name {
            fn mirror(from: $src) -> Self {
                type Src = $src;
                match from {
                    $( Src::$variant => Self::$variant, )*
                }
            }
        }

        impl $crate::mirror::Mirror<$name> for $src {
            fn mirror(from: $name) -> Self {
                match from {
                    $( $name::$variant => Self::$variant, )*
                }
            }
        }
    };
}

pub(crate) use {body, mirror_enum, mirrored, view};
