//! The request bodies the API deserializes and documents, each turned into the admin service's
//! plain input ([`crate::mirror::Mirror`]). Absent fields take the same defaults as the admin
//! inputs'.

mod assets;
mod carriers;
mod polling;

pub(crate) use assets::*;
pub(crate) use carriers::*;
use domain::{CardCategory, NetworkStatus, RealNameStatus, ResetCycle};
pub(crate) use polling::*;
use rust_decimal::Decimal;

/// The defaults of absent fields, as the admin inputs have them.
macro_rules! defaults {
    ($($name:ident: $t:ty = $v:expr;)*) => {
        $(fn $name() -> $t { $v })*
    };
}

defaults! {
    yes: bool = true;
    one: i16 = 1;
    one_decimal: Decimal = Decimal::ONE;
    normal: CardCategory = CardCategory::Normal;
    not_verified: RealNameStatus = RealNameStatus::NotVerified;
    online: NetworkStatus = NetworkStatus::Online;
    no_reset: ResetCycle = ResetCycle::None;
}
