//! The audit of writes through the API (`tb_admin_audit_log`): the API appends, admins read.

use crate::error::StoreResultExt;
use crate::{Admin, AdminError};
use domain::AdminAudit;
use domain::store::{Page, Paged};

impl Admin {
    /// Newest first.
    pub async fn audit_log(&self, page: Page) -> Result<Paged<AdminAudit>, AdminError> {
        self.stores.audit.list(page).await.admin()
    }
}
