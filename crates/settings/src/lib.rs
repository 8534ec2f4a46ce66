//! The settings of both binaries: one typed struct, loaded once in `main` from `CMP_*`
//! environment variables and, optionally, a TOML file named by `CMP_CONFIG` (the environment
//! wins). A bad or missing value stops start-up with a one-line message naming the variable.
//!
//! There are no global settings: `main` passes what each component needs down to it.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

/// A setting that cannot be used. The message names the variable.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SettingsError {
    #[error("{var} is required but not set")]
    Missing { var: &'static str },
    #[error("{var}={value:?} is invalid: {reason}")]
    Invalid {
        var: &'static str,
        value: String,
        reason: String,
    },
    #[error("CMP_CONFIG={path}: {reason}")]
    File { path: String, reason: String },
}

/// Handler pool sizes per task type (`CMP_WORKER_POOL_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSizes {
    pub realname: usize,
    pub carddata: usize,
    pub package: usize,
    pub protect: usize,
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Pretty,
    Json,
}

/// Everything both binaries can be told. Fields are documented where the default is not
/// obvious; `docs/contract.md` ("Settings") lists them all.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `CMP_DATABASE_URL` (required).
    pub database_url: String,
    /// `CMP_DATABASE_MAX_CONNECTIONS` (default 16).
    pub database_max_connections: u32,
    /// `CMP_REDIS_URL` (required). `redis-cluster://` URLs select cluster mode.
    pub redis_url: String,
    /// `CMP_REDIS_POOL_SIZE` (default 8).
    pub redis_pool_size: usize,
    /// `CMP_REDIS_KEY_PREFIX` (default empty): prefixes every `polling:*` key, so that several
    /// deployments (or a benchmark) can share one Redis.
    pub redis_key_prefix: String,
    /// `CMP_GATEWAY_URL` (default `http://127.0.0.1:7070`).
    pub gateway_url: String,
    /// `CMP_API_BIND` (default `0.0.0.0:8080`).
    pub api_bind: SocketAddr,
    /// `CMP_WORKER_BIND` (default `0.0.0.0:9090`).
    pub worker_bind: SocketAddr,
    /// `CMP_SHARD_COUNT` (default 16): fixed per deployment.
    pub shard_count: u32,
    /// `CMP_LEASE_SECS` (default 300): how long a dequeued card stays invisible.
    pub lease: Duration,
    /// `CMP_SCHEDULER_TICK_MS` (default 1000).
    pub scheduler_tick: Duration,
    /// `CMP_SCHEDULER_BATCH` (default 1000): most cards taken from one shard per tick.
    pub scheduler_batch: usize,
    /// `CMP_WORKER_POOL_{REALNAME,CARDDATA,PACKAGE,PROTECT}` (defaults 64, 256, 64, 32).
    pub pools: PoolSizes,
    /// `CMP_RETRY_INTERVAL_SECS` (default 60): delay after a failed poll.
    pub retry_interval: Duration,
    /// `CMP_PROTECT_PERIOD_SECS` (default 3600).
    pub protect_period: Duration,
    /// `CMP_GATEWAY_TIMEOUT_MS` (default 5000).
    pub gateway_timeout: Duration,
    /// `CMP_GATEWAY_RATE_LIMIT` (default 0 = none): calls per second per carrier, cluster-wide,
    /// for every carrier without an override.
    pub gateway_rate_limit: u32,
    /// `CMP_GATEWAY_RATE_LIMITS` (default empty): per-carrier overrides of the rate,
    /// `carrier_id=per_second` separated by commas, e.g. `1=200,2=50` (0 = no limit).
    pub gateway_rate_limits: BTreeMap<i64, u32>,
    /// `CMP_BATCH_LINGER_MS` (default 20; 0 = send what has gathered at once): how long a
    /// real-name, usage or network-status query of a carrier whose protocol answers several
    /// cards a call waits for company before its batch call goes.
    pub batch_linger: Duration,
    /// `CMP_CARRIER_SYNC_PAGES` (default 20; 0 = off): most pages of a carrier's own listing
    /// (Control Center's Search Devices since the watermark, 1NCE's SIM list) the record sync
    /// reads per carrier each minute, on one node of the cluster.
    pub carrier_sync_pages: u32,
    /// `CMP_CHECK_INTERVAL_SECS` (default 21600 = 6 h; 0 = off): how often one worker of the
    /// cluster runs the queue check (`cmp-worker check`, reporting only) and exports its counts.
    pub check_interval: Duration,
    /// `CMP_TIMEZONE` (default `Asia/Shanghai`): the carriers' calendar for month rollover.
    pub timezone: chrono_tz::Tz,
    /// `CMP_LOG` (default `info,sqlx=warn,sqlx::pool::acquire=error,sea_orm_migration=warn`): a tracing filter.
    pub log_filter: String,
    /// `CMP_LOG_FORMAT` (default `pretty`).
    pub log_format: LogFormat,
    /// `CMP_OTEL_ENDPOINT` (default unset = no traces, no exporter): the OTLP/HTTP base URL of
    /// a collector, e.g. `http://otel-collector:4318`; spans go to `{endpoint}/v1/traces`.
    pub otel_endpoint: Option<String>,
    /// `CMP_OTEL_POLL_SAMPLE` (default 0.01): the fraction of polls (and of other roots, API
    /// reads included) whose traces are exported. Stops, starts and API writes always are.
    pub otel_poll_sample: f64,
    /// `CMP_OTEL_SERVICE_NAME` (default unset = the binary's name, `cmp-worker` or `cmp-api`).
    pub otel_service_name: Option<String>,
}

impl Settings {
    /// Loads from the process environment (and `CMP_CONFIG`, if set).
    pub fn from_env() -> Result<Settings, SettingsError> {
        Settings::from_source(&std::env::vars().collect())
    }

    /// Loads from the given variables (tests pass their own map).
    pub fn from_source(env: &HashMap<String, String>) -> Result<Settings, SettingsError> {
        let file = match env.get("CMP_CONFIG").filter(|p| !p.is_empty()) {
            Some(path) => load_file(path)?,
            None => HashMap::new(),
        };
        let src = Source { env, file };
        Ok(Settings {
            database_url: src.required("CMP_DATABASE_URL")?,
            database_max_connections: src.parse("CMP_DATABASE_MAX_CONNECTIONS", 16, 1..=1000)?,
            redis_url: src.required("CMP_REDIS_URL")?,
            redis_pool_size: src.parse("CMP_REDIS_POOL_SIZE", 8, 1..=256)?,
            redis_key_prefix: src.string("CMP_REDIS_KEY_PREFIX", ""),
            gateway_url: src.string("CMP_GATEWAY_URL", "http://127.0.0.1:7070"),
            api_bind: src.parse_any("CMP_API_BIND", "0.0.0.0:8080")?,
            worker_bind: src.parse_any("CMP_WORKER_BIND", "0.0.0.0:9090")?,
            shard_count: src.parse("CMP_SHARD_COUNT", 16, 1..=1024)?,
            lease: src.duration("CMP_LEASE_SECS", 300, 1..=86_400)?,
            scheduler_tick: src.duration("CMP_SCHEDULER_TICK_MS", 1000, 10..=60_000)?,
            scheduler_batch: src.parse("CMP_SCHEDULER_BATCH", 1000, 1..=100_000)?,
            pools: PoolSizes {
                realname: src.parse("CMP_WORKER_POOL_REALNAME", 64, 1..=10_000)?,
                carddata: src.parse("CMP_WORKER_POOL_CARDDATA", 256, 1..=10_000)?,
                package: src.parse("CMP_WORKER_POOL_PACKAGE", 64, 1..=10_000)?,
                protect: src.parse("CMP_WORKER_POOL_PROTECT", 32, 1..=10_000)?,
            },
            retry_interval: src.duration("CMP_RETRY_INTERVAL_SECS", 60, 1..=86_400)?,
            protect_period: src.duration("CMP_PROTECT_PERIOD_SECS", 3600, 1..=31 * 86_400)?,
            gateway_timeout: src.duration("CMP_GATEWAY_TIMEOUT_MS", 5000, 1..=600_000)?,
            gateway_rate_limit: src.parse("CMP_GATEWAY_RATE_LIMIT", 0, 0..=1_000_000)?,
            gateway_rate_limits: src.rate_limits("CMP_GATEWAY_RATE_LIMITS")?,
            batch_linger: src.duration("CMP_BATCH_LINGER_MS", 20, 0..=10_000)?,
            carrier_sync_pages: src.parse("CMP_CARRIER_SYNC_PAGES", 20, 0..=10_000)?,
            check_interval: src.duration("CMP_CHECK_INTERVAL_SECS", 21_600, 0..=7 * 86_400)?,
            timezone: src.parse_any("CMP_TIMEZONE", "Asia/Shanghai")?,
            log_filter: src.string(
                "CMP_LOG",
                "info,sqlx=warn,sqlx::pool::acquire=error,sea_orm_migration=warn",
            ),
            log_format: match src.string("CMP_LOG_FORMAT", "pretty").as_str() {
                "pretty" => LogFormat::Pretty,
                "json" => LogFormat::Json,
                other => {
                    return Err(SettingsError::Invalid {
                        var: "CMP_LOG_FORMAT",
                        value: other.to_owned(),
                        reason: "expected pretty or json".to_owned(),
                    });
                }
            },
            otel_endpoint: src.endpoint("CMP_OTEL_ENDPOINT")?,
            otel_poll_sample: src.parse("CMP_OTEL_POLL_SAMPLE", 0.01, 0.0..=1.0)?,
            otel_service_name: src.get("CMP_OTEL_SERVICE_NAME"),
        })
    }
}

/// Reads the TOML file: keys are the variable names without the `CMP_` prefix, in any case
/// (`shard_count = 32` or `SHARD_COUNT = 32`).
fn load_file(path: &str) -> Result<HashMap<String, String>, SettingsError> {
    let err = |reason: String| SettingsError::File {
        path: path.to_owned(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let table: HashMap<String, toml::Value> =
        toml::from_str(&text).map_err(|e| err(e.to_string()))?;
    table
        .into_iter()
        .map(|(k, v)| {
            let value = match v {
                toml::Value::String(s) => s,
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                toml::Value::Float(f) => f.to_string(),
                other => return Err(err(format!("{k}: unsupported value {other}"))),
            };
            Ok((format!("CMP_{}", k.to_ascii_uppercase()), value))
        })
        .collect()
}

struct Source<'a> {
    env: &'a HashMap<String, String>,
    file: HashMap<String, String>,
}

impl Source<'_> {
    fn get(&self, var: &str) -> Option<String> {
        self.env
            .get(var)
            .or_else(|| self.file.get(var))
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    fn required(&self, var: &'static str) -> Result<String, SettingsError> {
        self.get(var).ok_or(SettingsError::Missing { var })
    }

    fn string(&self, var: &'static str, default: &str) -> String {
        self.get(var).unwrap_or_else(|| default.to_owned())
    }

    fn parse<T>(
        &self,
        var: &'static str,
        default: T,
        range: std::ops::RangeInclusive<T>,
    ) -> Result<T, SettingsError>
    where
        T: FromStr + PartialOrd + std::fmt::Display + Copy,
        T::Err: std::fmt::Display,
    {
        let Some(raw) = self.get(var) else {
            return Ok(default);
        };
        let value: T = raw.parse().map_err(|e: T::Err| SettingsError::Invalid {
            var,
            value: raw.clone(),
            reason: e.to_string(),
        })?;
        if !range.contains(&value) {
            return Err(SettingsError::Invalid {
                var,
                value: raw,
                reason: format!("must be between {} and {}", range.start(), range.end()),
            });
        }
        Ok(value)
    }

    /// [`parse`](Self::parse) of a duration in the unit the variable's name ends with: `_MS`
    /// milliseconds, else (`_SECS`) seconds.
    fn duration(
        &self,
        var: &'static str,
        default: u64,
        range: std::ops::RangeInclusive<u64>,
    ) -> Result<Duration, SettingsError> {
        let n = self.parse(var, default, range)?;
        Ok(if var.ends_with("_MS") {
            Duration::from_millis(n)
        } else {
            Duration::from_secs(n)
        })
    }

    /// `carrier_id=per_second,...`; an empty value is no override.
    fn rate_limits(&self, var: &'static str) -> Result<BTreeMap<i64, u32>, SettingsError> {
        let Some(raw) = self.get(var) else {
            return Ok(BTreeMap::new());
        };
        let invalid = |reason: String| SettingsError::Invalid {
            var,
            value: raw.clone(),
            reason,
        };
        let mut limits = BTreeMap::new();
        for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (carrier, rate) = entry.split_once('=').ok_or_else(|| {
                invalid(format!(
                    "`{entry}`: expected carrier_id=per_second, e.g. 1=200,2=50"
                ))
            })?;
            let carrier: i64 = carrier
                .trim()
                .parse()
                .map_err(|e| invalid(format!("carrier id `{}`: {e}", carrier.trim())))?;
            let rate: u32 = rate
                .trim()
                .parse()
                .map_err(|e| invalid(format!("rate `{}`: {e}", rate.trim())))?;
            if rate > 1_000_000 {
                return Err(invalid(format!(
                    "rate {rate} must be between 0 and 1000000"
                )));
            }
            if limits.insert(carrier, rate).is_some() {
                return Err(invalid(format!("carrier {carrier} is listed twice")));
            }
        }
        Ok(limits)
    }

    /// An `http://` or `https://` URL with a host, without a trailing `/`; unset is `None`.
    fn endpoint(&self, var: &'static str) -> Result<Option<String>, SettingsError> {
        let Some(raw) = self.get(var) else {
            return Ok(None);
        };
        let rest = raw
            .strip_prefix("http://")
            .or_else(|| raw.strip_prefix("https://"));
        match rest {
            Some(rest) if !rest.is_empty() && !rest.starts_with('/') && !rest.contains(' ') => {
                Ok(Some(raw.trim_end_matches('/').to_owned()))
            }
            _ => Err(SettingsError::Invalid {
                var,
                value: raw,
                reason: "expected an http:// or https:// URL of an OTLP/HTTP collector, e.g. \
                         http://127.0.0.1:4318"
                    .to_owned(),
            }),
        }
    }

    fn parse_any<T>(&self, var: &'static str, default: &str) -> Result<T, SettingsError>
    where
        T: FromStr,
        T::Err: std::fmt::Display,
    {
        let raw = self.string(var, default);
        raw.parse().map_err(|e: T::Err| SettingsError::Invalid {
            var,
            value: raw.clone(),
            reason: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests;
