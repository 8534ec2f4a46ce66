//! The answers the API documents, each built from the admin service's type
//! ([`crate::mirror::Mirror`]); they serialize exactly as the admin types do.

mod assets;
mod explain;
mod ops;

pub(crate) use assets::*;
pub(crate) use explain::*;
pub(crate) use ops::*;

use crate::mirror::view;

view! {
    /// One rejected field: a JSON pointer (`/interval_secs`) and what is wrong with it.
    #[derive(Clone, PartialEq, Eq, serde::Deserialize)]
    struct FieldError from admin::FieldError {
        /// JSON pointer (RFC 6901) to the value, e.g. `/realname_interval_secs` or `/cards/3/iccid`.
        #[schema(example = "/name")]
        pointer: String,
        #[schema(example = "must not be empty")]
        message: String,
    }
}
