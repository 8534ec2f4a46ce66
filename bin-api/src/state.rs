//! [`AppState`]: what every handler, the guard and the dashboard get. Its own module so that
//! the routes and the router that nests them (`app.rs`) both depend on it, not on each other.

use crate::auth::Authenticator;
use admin::Admin;
use domain::store::AdminAuditStore;
use std::sync::Arc;

/// What every handler gets. Cheap to clone.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) admin: Admin,
    pub(crate) auth: Authenticator,
    /// Dashboard sign-ins (`POST /ui/session`), shared by every replica through Redis.
    pub(crate) sessions: crate::session::Sessions,
    /// Background card imports (`POST /cards/import?background=true`).
    pub(crate) imports: crate::imports::ImportJobs,
    pub(crate) audit: Arc<dyn AdminAuditStore>,
    /// Monitoring, concurrency, alerts, cleanup, history (`docs/admin-ops.md`).
    pub(crate) ops: crate::ops_state::OpsServices,
    /// Operators' stops and starts go to the card's carrier's adapter (`tb_carrier`).
    pub(crate) carriers: Arc<gateway::carriers::CarrierRouter>,
    /// Carriers' push streams (`POST /api/carriers/{carrier_id}/stream`).
    pub(crate) streams: admin::carriers::stream::StreamService,
}
