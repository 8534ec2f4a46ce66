//! Not written yet.

use crate::SimState;
use axum::Router;

pub(super) fn routes() -> Router<SimState> {
    Router::new()
}
