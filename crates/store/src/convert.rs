//! Rows to domain models. A stored string the domain does not know (which the CHECK
//! constraints should make impossible) is reported as `StoreError::Invalid`, never a panic.

use crate::entity::{
    api_key, card_state_log, data_cleanup_config, data_cleanup_log, device, iot_card, package,
    package_usage, polling_alert_history, polling_alert_rule, polling_config,
    polling_manual_trigger_log,
};
use crate::error::bad_column;
use domain::store::StoreResult;
use domain::{
    AlertHistory, AlertRule, AlertRuleId, AlertRuleInput, ApiKey, ApiKeyId, Card, CardId,
    CardStateLog, CarrierId, CleanupConfig, CleanupConfigId, CleanupConfigInput, CleanupLog,
    Device, DeviceId, Intervals, ManualTriggerLog, MonthCounters, NetworkStatus, NewCard,
    NewCardStateLog, NewPackage, NewPackageUsage, Package, PackageId, PackageOwner, PackageUsage,
    PackageUsageId, PollingConfig, PollingConfigId, PollingConfigInput, RealNameStatus, StopReason,
};
use std::str::FromStr;

fn parse<T: FromStr>(column: &str, s: &str) -> StoreResult<T>
where
    T::Err: std::fmt::Display,
{
    s.parse().map_err(|e| bad_column(column, e))
}

fn parse_opt<T: FromStr>(column: &str, s: Option<&str>) -> StoreResult<Option<T>>
where
    T::Err: std::fmt::Display,
{
    s.map(|s| parse(column, s)).transpose()
}

fn interval(column: &str, v: Option<i32>) -> StoreResult<Option<u32>> {
    v.map(|s| u32::try_from(s).map_err(|e| bad_column(column, e)))
        .transpose()
}

/// The owner of a package row: exactly one of the two columns is set.
pub(crate) fn owner_of(card: Option<i64>, device: Option<i64>) -> StoreResult<PackageOwner> {
    match (card, device) {
        (Some(c), None) => Ok(PackageOwner::Card(CardId(c))),
        (None, Some(d)) => Ok(PackageOwner::Device(DeviceId(d))),
        _ => Err(bad_column(
            "tb_package_usage owner",
            "exactly one of card and device",
        )),
    }
}

pub(crate) fn card(m: iot_card::Model) -> StoreResult<Card> {
    Ok(Card {
        id: CardId(m.id),
        facts: NewCard {
            card_category: parse("card_category", &m.card_category)?,
            real_name_status: RealNameStatus::try_from(m.real_name_status)
                .map_err(|e| bad_column("real_name_status", e))?,
            network_status: NetworkStatus::try_from(m.network_status)
                .map_err(|e| bad_column("network_status", e))?,
            iccid: m.iccid,
            msisdn: m.msisdn,
            carrier_id: CarrierId(m.carrier_id),
            status: m.status,
            enable_polling: m.enable_polling,
            device_id: m.device_id.map(DeviceId),
        },
        stop_reason: StopReason::from_column(&m.stop_reason)
            .map_err(|e| bad_column("stop_reason", e))?,
        data_usage_mb: m.data_usage_mb,
        usage: MonthCounters {
            current_month_start_date: m.current_month_start_date,
            current_month_usage_mb: m.current_month_usage_mb,
            last_gateway_total_mb: m.last_gateway_total_mb,
            last_month_total_mb: m.last_month_total_mb,
            streamed_ahead_mb: m.streamed_ahead_mb,
        },
        created_at: m.created_at,
        updated_at: m.updated_at,
        deleted_at: m.deleted_at,
    })
}

pub(crate) fn device(m: device::Model) -> Device {
    Device {
        id: DeviceId(m.id),
        device_no: m.device_no,
        enable_polling: m.enable_polling,
        created_at: m.created_at,
        updated_at: m.updated_at,
        deleted_at: m.deleted_at,
    }
}

pub(crate) fn package(m: package::Model) -> StoreResult<Package> {
    Ok(Package {
        id: PackageId(m.id),
        spec: NewPackage {
            reset_cycle: parse("reset_cycle", &m.reset_cycle)?,
            name: m.name,
            data_limit_mb: m.data_limit_mb,
            virtual_ratio: m.virtual_ratio,
            duration_days: m.duration_days,
        },
    })
}

pub(crate) fn package_usage(m: package_usage::Model) -> StoreResult<PackageUsage> {
    Ok(PackageUsage {
        id: PackageUsageId(m.id),
        spec: NewPackageUsage {
            owner: owner_of(m.iot_card_id, m.device_id)?,
            package_id: m.package_id.map(PackageId),
            status: parse("status", &m.status)?,
            reset_cycle: parse("reset_cycle", &m.reset_cycle)?,
            external_id: m.external_id,
            data_limit_mb: m.data_limit_mb,
            virtual_ratio: m.virtual_ratio,
            used_mb: m.used_mb,
            activate_on_realname: m.activate_on_realname,
            activated_at: m.activated_at,
            expires_at: m.expires_at,
            next_reset_at: m.next_reset_at,
        },
        created_at: m.created_at,
    })
}

pub(crate) fn polling_config(m: polling_config::Model) -> StoreResult<PollingConfig> {
    Ok(PollingConfig {
        id: PollingConfigId(m.id),
        spec: PollingConfigInput {
            card_condition: parse_opt("card_condition", m.card_condition.as_deref())?,
            card_category: parse_opt("card_category", m.card_category.as_deref())?,
            intervals: Intervals {
                realname_interval_secs: interval(
                    "realname_interval_secs",
                    m.realname_interval_secs,
                )?,
                carddata_interval_secs: interval(
                    "carddata_interval_secs",
                    m.carddata_interval_secs,
                )?,
                package_interval_secs: interval("package_interval_secs", m.package_interval_secs)?,
                protect_interval_secs: interval("protect_interval_secs", m.protect_interval_secs)?,
            },
            name: m.name,
            priority: m.priority,
            enabled: m.enabled,
            carrier_id: m.carrier_id.map(CarrierId),
        },
        created_at: m.created_at,
        updated_at: m.updated_at,
    })
}

pub(crate) fn state_log(m: card_state_log::Model) -> StoreResult<CardStateLog> {
    Ok(CardStateLog {
        id: m.id,
        entry: NewCardStateLog {
            card_id: CardId(m.iot_card_id),
            from_status: NetworkStatus::try_from(m.from_status)
                .map_err(|e| bad_column("from_status", e))?,
            to_status: NetworkStatus::try_from(m.to_status)
                .map_err(|e| bad_column("to_status", e))?,
            stop_reason: StopReason::from_column(&m.stop_reason)
                .map_err(|e| bad_column("stop_reason", e))?,
            gateway_outcome: parse("gateway_outcome", &m.gateway_outcome)?,
            trigger: m.trigger,
            trace_id: m.trace_id,
        },
        created_at: m.created_at,
    })
}

pub(crate) fn alert_rule(m: polling_alert_rule::Model) -> StoreResult<AlertRule> {
    Ok(AlertRule {
        id: AlertRuleId(m.id),
        rule: AlertRuleInput {
            task_type: parse_opt("task_type", m.task_type.as_deref())?,
            operator: parse("operator", &m.operator)?,
            metric: parse("metric", &m.metric)?,
            stop_reason: parse_opt("stop_reason", m.stop_reason.as_deref())?,
            webhook_secret: Some(m.webhook_secret),
            name: m.name,
            threshold: m.threshold,
            window_secs: m.window_secs,
            enabled: m.enabled,
            webhook_url: m.webhook_url,
            cooldown_secs: m.cooldown_secs,
        },
        created_at: m.created_at,
        updated_at: m.updated_at,
    })
}

pub(crate) fn alert_history(m: polling_alert_history::Model) -> AlertHistory {
    AlertHistory {
        id: m.id,
        rule_id: AlertRuleId(m.rule_id),
        value: m.value,
        fired_at: m.fired_at,
        resolved_at: m.resolved_at,
        notified: m.notified,
        notify_error: m.notify_error,
        resolve_notified: m.resolve_notified,
    }
}

pub(crate) fn cleanup_config(m: data_cleanup_config::Model) -> CleanupConfig {
    CleanupConfig {
        id: CleanupConfigId(m.id),
        config: CleanupConfigInput {
            table_name: m.table_name,
            retention_days: m.retention_days,
            enabled: m.enabled,
            batch_size: m.batch_size,
        },
        created_at: m.created_at,
        updated_at: m.updated_at,
    }
}

pub(crate) fn cleanup_log(m: data_cleanup_log::Model) -> CleanupLog {
    CleanupLog {
        id: m.id,
        table_name: m.table_name,
        rows_deleted: m.rows_deleted,
        started_at: m.started_at,
        finished_at: m.finished_at,
        status: m.status,
        error: m.error,
        run_id: m.run_id,
    }
}

pub(crate) fn manual_trigger_log(
    m: polling_manual_trigger_log::Model,
) -> StoreResult<ManualTriggerLog> {
    Ok(ManualTriggerLog {
        id: m.id,
        task_types: m
            .task_types
            .iter()
            .map(|t| parse("task_types", t))
            .collect::<StoreResult<_>>()?,
        who: m.who,
        scope: m.scope,
        count: m.count,
        created_at: m.created_at,
    })
}

pub(crate) fn api_key(m: api_key::Model) -> StoreResult<ApiKey> {
    Ok(ApiKey {
        id: ApiKeyId(m.id),
        role: parse("role", &m.role)?,
        name: m.name,
        key_hash: m.key_hash,
        created_at: m.created_at,
        last_used_at: m.last_used_at,
        revoked_at: m.revoked_at,
    })
}
