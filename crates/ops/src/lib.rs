//! Process plumbing shared by the two binaries, so that each `main` only wires things
//! together: logging, the Redis and PostgreSQL connections, `/healthz` `/readyz` `/metrics`,
//! and the shutdown signal. Nothing here knows about cards or queues.

use anyhow::Context;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use fred::prelude::*;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use sea_orm::{ConnectOptions, Database, DatabaseConnection};
use settings::{LogFormat, Settings};
use std::sync::OnceLock;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

mod readiness;
mod traces;
pub use readiness::{Readiness, ReadinessReport};
pub use traces::{ALWAYS_SAMPLED, RootSampler, Traces, sampled_trace_id};

/// A command that ran to its end with an answer that is not plain success (e.g. `check` found
/// wrong entries): exits with `code`, its message logged at `level`, never as a failure.
#[derive(Debug, Clone)]
pub struct Finished {
    pub code: u8,
    pub level: tracing::Level,
    pub message: String,
}

impl std::fmt::Display for Finished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Finished {}

/// The common `main` of both binaries: loads the settings (a bad one stops with exit code 2 and
/// one line naming the variable), starts logging and the runtime, runs `body`, and turns an
/// error into one line on stderr and exit code 1 ([`Finished`]: its own code and level).
pub fn main<F, Fut>(name: &str, body: F) -> std::process::ExitCode
where
    F: FnOnce(Settings) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    use std::process::ExitCode;
    let settings = match Settings::from_env() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{name}: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{name}: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut traces = None;
    let result = runtime.block_on(async {
        traces = init_tracing(&settings, name)?;
        body(settings).await
    });
    // Off the runtime: the exporter's last send blocks until the collector answered.
    drop(runtime);
    if let Some(traces) = traces
        && let Err(e) = traces.shutdown()
    {
        eprintln!("{name}: {e:#}");
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<Finished>().is_some() => {
            let Some(done) = e.downcast_ref::<Finished>() else {
                return ExitCode::FAILURE;
            };
            match done.level {
                tracing::Level::ERROR => tracing::error!("{}", done.message),
                tracing::Level::WARN => tracing::warn!("{}", done.message),
                _ => tracing::info!("{}", done.message),
            }
            ExitCode::from(done.code)
        }
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "{name} failed");
            eprintln!("{name}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `migrate`: applies every pending migration.
pub async fn migrate(settings: &Settings) -> anyhow::Result<()> {
    use migrations::MigratorTrait;
    let db = connect_database(settings).await?;
    migrations::Migrator::up(&db, None)
        .await
        .context("apply migrations")?;
    tracing::info!("migrations applied");
    Ok(())
}

/// Starts logging to stderr with the `CMP_LOG` filter in the `CMP_LOG_FORMAT` format and, when
/// `CMP_OTEL_ENDPOINT` is set, the trace exporter (returned: keep it, shut it down at the end).
pub fn init_tracing(settings: &Settings, binary: &str) -> anyhow::Result<Option<Traces>> {
    use tracing_subscriber::util::SubscriberInitExt;
    let traces = Traces::start(settings, binary)?;
    subscriber(settings, traces.as_ref())?
        .try_init()
        .map_err(|e| anyhow::anyhow!("install the log subscriber: {e}"))?;
    Ok(traces)
}

/// The subscriber [`init_tracing`] installs: the log lines (`CMP_LOG` filters them, not the
/// spans exported) and, with `traces`, the OpenTelemetry layer (its own filter: our crates'
/// spans). Tests install it for themselves with `tracing::subscriber::set_default`.
pub fn subscriber(
    settings: &Settings,
    traces: Option<&Traces>,
) -> anyhow::Result<impl tracing::Subscriber + Send + Sync + 'static> {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    let filter = tracing_subscriber::EnvFilter::try_new(&settings.log_filter)
        .with_context(|| format!("CMP_LOG={:?} is not a valid filter", settings.log_filter))?;
    let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let lines = match settings.log_format {
        LogFormat::Json => lines.json().with_filter(filter).boxed(),
        LogFormat::Pretty => lines.with_filter(filter).boxed(),
    };
    Ok(tracing_subscriber::registry()
        .with(lines)
        .with(traces.map(Traces::layer)))
}

static PROMETHEUS: OnceLock<PrometheusHandle> = OnceLock::new();

/// How often the recorder folds recorded histogram samples into its buckets.
pub const METRICS_UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The histogram buckets of every `*_seconds` and size histogram both binaries export.
pub fn metrics_builder() -> anyhow::Result<PrometheusBuilder> {
    PrometheusBuilder::new()
        .set_buckets(&[
            0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
        ])
        .context("histogram buckets")
}

/// Installs the Prometheus recorder once per process, starts its upkeep, and returns its
/// handle.
pub fn install_metrics() -> anyhow::Result<PrometheusHandle> {
    if let Some(h) = PROMETHEUS.get() {
        return Ok(h.clone());
    }
    let handle = metrics_builder()?
        .install_recorder()
        .context("install the metrics recorder")?;
    let handle = PROMETHEUS.get_or_init(|| handle).clone();
    spawn_metrics_upkeep(handle.clone(), METRICS_UPKEEP_EVERY)?;
    Ok(handle)
}

/// Runs the recorder's upkeep every `every` on a thread of its own, for the life of the process.
///
/// The recorder keeps every histogram sample in a queue until something drains it into the
/// buckets; a render (a `/metrics` scrape) does, and so does the upkeep. Without it a process
/// nobody scrapes keeps every sample: ~3 histogram samples a poll grew a soaking worker by
/// ~2.4 MB a minute. A plain thread, not a task: it must run whatever the runtime is doing, and
/// it holds no lock the pollers take (the upkeep swaps the samples out of lock-free buckets).
pub fn spawn_metrics_upkeep(handle: PrometheusHandle, every: Duration) -> anyhow::Result<()> {
    std::thread::Builder::new()
        .name("metrics-upkeep".into())
        .spawn(move || {
            loop {
                std::thread::sleep(every);
                handle.run_upkeep();
            }
        })
        .context("start the metrics upkeep thread")?;
    Ok(())
}

/// Connects the PostgreSQL pool.
pub async fn connect_database(settings: &Settings) -> anyhow::Result<DatabaseConnection> {
    let mut opts = ConnectOptions::new(settings.database_url.clone());
    opts.max_connections(settings.database_max_connections)
        .min_connections(1)
        .connect_timeout(Duration::from_secs(5))
        .acquire_timeout(Duration::from_secs(10))
        .sqlx_logging(false);
    Database::connect(opts)
        .await
        .context("connect to PostgreSQL (CMP_DATABASE_URL)")
}

/// Connects a pool of Redis clients. A `redis-cluster://host:port?node=host:port&node=…` URL
/// (fred's form) selects cluster mode: commands go to the node owning their key, and the
/// topology is re-read after a `MOVED` (a failover or a resharding).
pub async fn connect_redis(settings: &Settings) -> anyhow::Result<Pool> {
    let config =
        Config::from_url(&settings.redis_url).context("CMP_REDIS_URL is not a valid Redis URL")?;
    if config.server.is_clustered() && has_hash_tag(&settings.redis_key_prefix) {
        tracing::warn!(
            prefix = %settings.redis_key_prefix,
            "CMP_REDIS_KEY_PREFIX contains a {{hash tag}}: on a cluster every key lands in one slot, one node"
        );
    }
    let pool = Builder::from_config(config)
        .with_connection_config(|c| c.connection_timeout = Duration::from_secs(2))
        .with_performance_config(|p| p.default_command_timeout = Duration::from_secs(5))
        .set_policy(ReconnectPolicy::new_exponential(0, 100, 2_000, 2))
        .build_pool(settings.redis_pool_size)
        .context("build the Redis pool")?;
    pool.init()
        .await
        .context("connect to Redis (CMP_REDIS_URL)")?;
    Ok(pool)
}

/// Whether `key` has a Redis Cluster hash tag: a `{` followed later by a `}` with something
/// between them.
fn has_hash_tag(key: &str) -> bool {
    key.find('{')
        .and_then(|open| key[open + 1..].find('}'))
        .is_some_and(|len| len > 0)
}

/// `cmp_readiness_check{check}`: 1 when the part of `/readyz` named `check` (`postgres`,
/// `redis`, and the binary's own, e.g. `queues`) answered when `/metrics` was last scraped, else 0.
pub const READINESS_CHECK: &str = "cmp_readiness_check";
/// `cmp_process_resident_memory_bytes`: the process's resident set size at the last scrape
/// (Linux: `VmRSS` of `/proc/self/status`; absent elsewhere).
pub const RESIDENT_MEMORY: &str = "cmp_process_resident_memory_bytes";

/// `/healthz` (process up: liveness), `/readyz` (PostgreSQL, Redis and the binary's probes:
/// 200, or 503 naming what is not ready) and `/metrics` (which asks the same parts first, for
/// [`READINESS_CHECK`], and reads [`RESIDENT_MEMORY`]).
pub fn health_router(readiness: Readiness, metrics: PrometheusHandle) -> Router {
    let parts = readiness.clone();
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz).with_state(readiness))
        .route(
            "/metrics",
            get(move || {
                let (parts, handle) = (parts.clone(), metrics.clone());
                async move {
                    record_readiness(&parts.report().await);
                    if let Some(bytes) = std::fs::read_to_string("/proc/self/status")
                        .ok()
                        .and_then(|s| vm_rss_bytes(&s))
                    {
                        metrics::gauge!(RESIDENT_MEMORY).set(bytes as f64);
                    }
                    handle.render()
                }
            }),
        )
}

/// Sets [`READINESS_CHECK`] for every part of `report`.
pub fn record_readiness(report: &ReadinessReport) {
    for (name, result) in &report.parts {
        metrics::gauge!(READINESS_CHECK, "check" => *name).set(if result.is_ok() {
            1.0
        } else {
            0.0
        });
    }
}

/// The `VmRSS:   1234 kB` line of a `/proc/<pid>/status` text, in bytes.
fn vm_rss_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    let mut fields = line.split_whitespace();
    let value: u64 = fields.next()?.parse().ok()?;
    match fields.next() {
        Some("kB") => Some(value * 1024),
        _ => None,
    }
}

async fn readyz(State(r): State<Readiness>) -> impl IntoResponse {
    let report = r.report().await;
    let status = if report.ready() {
        StatusCode::OK
    } else {
        tracing::warn!(body = %report.to_json(), "not ready");
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, axum::Json(report.to_json()))
}

/// A token cancelled on SIGTERM or Ctrl-C.
pub fn shutdown_token() -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutdown requested");
        t.cancel();
    });
    token
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM; Ctrl-C only");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Serves `router` on `bind` until `shutdown` is cancelled.
pub async fn serve(
    bind: std::net::SocketAddr,
    router: Router,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .with_context(|| format!("bind {bind}"))?;
    tracing::info!(addr = %listener.local_addr().map_or_else(|_| bind.to_string(), |a| a.to_string()), "listening");
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .context("http server")
}

#[cfg(test)]
mod tests {
    use super::{has_hash_tag, vm_rss_bytes};

    #[test]
    fn resident_memory_is_read_from_the_vmrss_line() {
        let status = "Name:\tcmp-worker\nVmPeak:\t  200000 kB\nVmRSS:\t   51234 kB\nThreads:\t9\n";
        assert_eq!(vm_rss_bytes(status), Some(51234 * 1024));
        assert_eq!(vm_rss_bytes("Name:\tx\n"), None);
        assert_eq!(vm_rss_bytes("VmRSS:\t12 MB\n"), None);
        let own = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        if !own.is_empty() {
            assert!(vm_rss_bytes(&own).is_some_and(|b| b > 0), "{own}");
        }
    }

    #[test]
    fn hash_tags_are_recognised_as_redis_does() {
        assert!(has_hash_tag("{demo}:"));
        assert!(has_hash_tag("a{b}c"));
        assert!(!has_hash_tag(""));
        assert!(!has_hash_tag("demo:"));
        assert!(!has_hash_tag("{}x"), "an empty tag hashes the whole key");
        assert!(!has_hash_tag("}{"));
    }
}
