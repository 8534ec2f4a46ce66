//! [`PgPackageStore`]: products (`tb_package`) and bought packages (`tb_package_usage`),
//! including the deduction shared with `record_usage` and the periodic batch jobs.

use crate::batch::package::{CarrierReport, ReportAnswer};
use crate::bulk::{BULK_CHUNK, insert_usages};
use crate::convert::{self, owner_of};
use crate::entity::{package, package_usage};
use crate::error::db_err;
use crate::package_sql::{
    ACTIVATE_ON_REALNAME, ADD_USED, APPLY_RESETS, EXPIRE_AND_ACTIVATE, LOCK_DUE_RESETS, LOCK_VALID,
};
use crate::sql::{col, models, stmt};
use async_trait::async_trait;
use batch::Batcher;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use domain::calendar::{local_day, next_monthly_reset};
use domain::store::{PackageBatch, PackageStore, StoreResult};
use domain::{
    CarrierPackage, DeductionStep, Megabytes, NewPackage, NewPackageUsage, Package, PackageId,
    PackageOwner, PackageUsage, plan_deduction,
};
use rust_decimal::Decimal;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection,
    DatabaseTransaction, EntityTrait, QueryFilter, QueryOrder, TransactionTrait, Value,
};
use std::collections::HashMap;

/// The PostgreSQL [`PackageStore`]. Cheap to clone: the connection is a pool.
#[derive(Debug, Clone)]
pub struct PgPackageStore {
    db: DatabaseConnection,
    /// Group commit of `upsert_carrier_packages` (see `batch/package.rs`), shared by clones.
    carrier: Batcher<CarrierReport, ReportAnswer>,
}

impl PgPackageStore {
    pub fn new(db: DatabaseConnection) -> Self {
        PgPackageStore {
            carrier: crate::batch::package::writer(db.clone()),
            db,
        }
    }
}

/// Every package of the owners of `cards` and of `devices`, in id order.
const USAGES_OF_MANY: &str = "SELECT * FROM tb_package_usage \
     WHERE iot_card_id = ANY($1) OR device_id = ANY($2) ORDER BY id";

/// Plans and applies a deduction inside the caller's transaction: locks the owner's valid
/// packages (`FOR UPDATE`, in deduction order), plans with `domain::plan_deduction` and adds
/// each step in one `UPDATE ... FROM UNNEST`.
pub(crate) async fn deduct_in(
    txn: &DatabaseTransaction,
    owner: PackageOwner,
    delta_real_mb: Megabytes,
    now: DateTime<Utc>,
) -> StoreResult<(Vec<DeductionStep>, Option<Vec<PackageUsage>>)> {
    if delta_real_mb <= Decimal::ZERO {
        return Ok((Vec::new(), None));
    }
    let (sql, id) = LOCK_VALID.pick(owner);
    let rows = models::<package_usage::Entity, _>(txn, stmt(sql, [id.into(), now.into()])).await?;
    let mut packages: Vec<PackageUsage> = rows
        .into_iter()
        .map(convert::package_usage)
        .collect::<StoreResult<_>>()?;
    let steps = plan_deduction(&packages, delta_real_mb, now);
    if !steps.is_empty() {
        let ids: Vec<i64> = steps.iter().map(|s| s.id.get()).collect();
        let adds: Vec<Decimal> = steps.iter().map(|s| s.add_virtual_mb).collect();
        txn.execute_raw(stmt(ADD_USED, [ids.into(), adds.into(), now.into()]))
            .await
            .map_err(db_err)?;
        for step in &steps {
            if let Some(p) = packages.iter_mut().find(|p| p.id == step.id) {
                p.spec.used_mb += step.add_virtual_mb;
            }
        }
    }
    Ok((steps, Some(packages)))
}

/// Reads `(iot_card_id, device_id)` rows into owners.
fn owners(rows: &[sea_orm::QueryResult]) -> StoreResult<Vec<PackageOwner>> {
    let mut out: Vec<PackageOwner> = rows
        .iter()
        .map(|r| owner_of(col(r, "iot_card_id")?, col(r, "device_id")?))
        .collect::<StoreResult<_>>()?;
    out.sort_by_key(|o| match o {
        PackageOwner::Card(c) => (0, c.get()),
        PackageOwner::Device(d) => (1, d.get()),
    });
    out.dedup();
    Ok(out)
}

#[async_trait]
impl PackageStore for PgPackageStore {
    async fn create_package(&self, input: &NewPackage) -> StoreResult<Package> {
        let model = package::ActiveModel {
            name: Set(input.name.clone()),
            data_limit_mb: Set(input.data_limit_mb),
            virtual_ratio: Set(input.virtual_ratio),
            duration_days: Set(input.duration_days),
            reset_cycle: Set(input.reset_cycle.as_str().to_owned()),
            ..Default::default()
        }
        .insert(&self.db)
        .await
        .map_err(db_err)?;
        convert::package(model)
    }

    async fn get_package(&self, id: PackageId) -> StoreResult<Option<Package>> {
        package::Entity::find_by_id(id.get())
            .one(&self.db)
            .await
            .map_err(db_err)?
            .map(convert::package)
            .transpose()
    }

    async fn create_usage(&self, u: &NewPackageUsage) -> StoreResult<PackageUsage> {
        let (card, device) = match u.owner {
            PackageOwner::Card(id) => (Some(id.get()), None),
            PackageOwner::Device(id) => (None, Some(id.get())),
        };
        let model = package_usage::ActiveModel {
            iot_card_id: Set(card),
            device_id: Set(device),
            package_id: Set(u.package_id.map(PackageId::get)),
            external_id: Set(u.external_id.clone()),
            status: Set(u.status.as_str().to_owned()),
            data_limit_mb: Set(u.data_limit_mb),
            virtual_ratio: Set(u.virtual_ratio),
            used_mb: Set(u.used_mb),
            activate_on_realname: Set(u.activate_on_realname),
            activated_at: Set(u.activated_at),
            expires_at: Set(u.expires_at),
            reset_cycle: Set(u.reset_cycle.as_str().to_owned()),
            next_reset_at: Set(u.next_reset_at),
            ..Default::default()
        }
        .insert(&self.db)
        .await
        .map_err(db_err)?;
        convert::package_usage(model)
    }

    async fn create_usages_bulk(&self, usages: &[NewPackageUsage]) -> StoreResult<u64> {
        if usages.is_empty() {
            return Ok(0);
        }
        let txn = self.db.begin().await.map_err(db_err)?;
        let mut written = 0;
        for chunk in usages.chunks(BULK_CHUNK) {
            let res = txn
                .execute_raw(insert_usages(chunk))
                .await
                .map_err(db_err)?;
            written += res.rows_affected();
        }
        txn.commit().await.map_err(db_err)?;
        Ok(written)
    }

    async fn usages_of(&self, owner: PackageOwner) -> StoreResult<Vec<PackageUsage>> {
        let q = package_usage::Entity::find();
        let q = match owner {
            PackageOwner::Card(c) => q.filter(package_usage::Column::IotCardId.eq(c.get())),
            PackageOwner::Device(d) => q.filter(package_usage::Column::DeviceId.eq(d.get())),
        };
        q.order_by_asc(package_usage::Column::Id)
            .all(&self.db)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(convert::package_usage)
            .collect()
    }

    async fn usages_of_many(
        &self,
        owners: &[PackageOwner],
    ) -> StoreResult<HashMap<PackageOwner, Vec<PackageUsage>>> {
        let (mut cards, mut devices) = (Vec::new(), Vec::new());
        for owner in owners {
            match owner {
                PackageOwner::Card(c) => cards.push(c.get()),
                PackageOwner::Device(d) => devices.push(d.get()),
            }
        }
        if cards.is_empty() && devices.is_empty() {
            return Ok(HashMap::new());
        }
        let rows = models::<package_usage::Entity, _>(
            &self.db,
            stmt(USAGES_OF_MANY, [cards.into(), devices.into()]),
        )
        .await?;
        let mut found: HashMap<PackageOwner, Vec<PackageUsage>> = HashMap::new();
        for row in rows {
            let usage = convert::package_usage(row)?;
            found.entry(usage.spec.owner).or_default().push(usage);
        }
        Ok(found)
    }

    async fn deduct_data_usage(
        &self,
        owner: PackageOwner,
        delta_real_mb: Megabytes,
        now: DateTime<Utc>,
    ) -> StoreResult<Vec<DeductionStep>> {
        if delta_real_mb <= Decimal::ZERO {
            return Ok(Vec::new());
        }
        let txn = self.db.begin().await.map_err(db_err)?;
        let (steps, _) = deduct_in(&txn, owner, delta_real_mb, now).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(steps)
    }

    async fn upsert_carrier_packages(
        &self,
        owner: PackageOwner,
        packages: &[CarrierPackage],
    ) -> StoreResult<u64> {
        if packages.is_empty() {
            return Ok(0);
        }
        let report = CarrierReport {
            owner,
            packages: packages.to_vec(),
        };
        self.carrier
            .submit(report)
            .await
            .map_err(|closed| domain::StoreError::Database(domain::Cause::new(closed)))?
    }

    async fn activate_on_realname(
        &self,
        owner: PackageOwner,
        now: DateTime<Utc>,
        tz: Tz,
    ) -> StoreResult<u64> {
        let (sql, id) = ACTIVATE_ON_REALNAME.pick(owner);
        let res = self
            .db
            .execute_raw(stmt(sql, [id.into(), now.into(), tz.name().into()]))
            .await
            .map_err(db_err)?;
        Ok(res.rows_affected())
    }

    async fn expire_and_activate(
        &self,
        now: DateTime<Utc>,
        tz: Tz,
        limit: u32,
    ) -> StoreResult<PackageBatch> {
        let values: [Value; 3] = [now.into(), tz.name().into(), i64::from(limit.max(1)).into()];
        let rows = self
            .db
            .query_all_raw(stmt(EXPIRE_AND_ACTIVATE, values))
            .await
            .map_err(db_err)?;
        let expired: i64 = match rows.first() {
            Some(row) => col(row, "n")?,
            None => 0,
        };
        Ok(PackageBatch {
            rows: u64::try_from(expired).unwrap_or(0),
            owners: owners(&rows)?,
        })
    }

    async fn reset_monthly(
        &self,
        now: DateTime<Utc>,
        tz: Tz,
        limit: u32,
    ) -> StoreResult<PackageBatch> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let due = txn
            .query_all_raw(stmt(
                LOCK_DUE_RESETS,
                [now.into(), i64::from(limit.max(1)).into()],
            ))
            .await
            .map_err(db_err)?;
        if due.is_empty() {
            txn.commit().await.map_err(db_err)?;
            return Ok(PackageBatch::default());
        }
        let (mut ids, mut next, mut anchors) = (Vec::new(), Vec::new(), Vec::new());
        for row in &due {
            let at: DateTime<Utc> = col(row, "next_reset_at")?;
            // Rows from before the anchor column take the local day they are due on.
            let anchor = col::<Option<i16>>(row, "reset_anchor_day")?
                .and_then(|d| u32::try_from(d).ok())
                .unwrap_or_else(|| local_day(at, &tz));
            ids.push(col::<i64>(row, "id")?);
            next.push(next_monthly_reset(at, anchor, now, &tz));
            anchors.push(i16::try_from(anchor).unwrap_or(31));
        }
        let values: [Value; 4] = [ids.into(), next.into(), anchors.into(), now.into()];
        txn.execute_raw(stmt(APPLY_RESETS, values))
            .await
            .map_err(db_err)?;
        txn.commit().await.map_err(db_err)?;
        Ok(PackageBatch {
            rows: due.len() as u64,
            owners: owners(&due)?,
        })
    }
}
