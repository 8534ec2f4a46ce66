//! Unit tests of the settings: defaults, bad values naming the variable, the file.

use super::*;

fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    let mut m: HashMap<String, String> = [
        ("CMP_DATABASE_URL", "postgres://postgres@127.0.0.1/test"),
        ("CMP_REDIS_URL", "redis://127.0.0.1:6379"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    for (k, v) in pairs {
        m.insert((*k).to_owned(), (*v).to_owned());
    }
    m
}

#[test]
fn defaults_follow_the_contract() {
    let s = Settings::from_source(&env(&[])).expect("valid");
    assert_eq!(s.shard_count, 16);
    assert_eq!(s.lease, Duration::from_secs(300));
    assert_eq!(s.scheduler_tick, Duration::from_millis(1000));
    assert_eq!(s.scheduler_batch, 1000);
    assert_eq!(s.retry_interval, Duration::from_secs(60));
    assert_eq!(s.protect_period, Duration::from_secs(3600));
    assert_eq!(s.gateway_timeout, Duration::from_millis(5000));
    assert_eq!(s.gateway_rate_limit, 0);
    assert_eq!(s.check_interval, Duration::from_secs(21_600));
    assert_eq!(s.timezone, chrono_tz::Asia::Shanghai);
    assert_eq!(s.api_bind.to_string(), "0.0.0.0:8080");
    assert_eq!(s.worker_bind.to_string(), "0.0.0.0:9090");
    assert_eq!(s.log_format, LogFormat::Pretty);
}

#[test]
fn missing_database_url_names_the_variable() {
    let mut e = env(&[]);
    e.remove("CMP_DATABASE_URL");
    let err = Settings::from_source(&e).expect_err("must fail");
    assert_eq!(
        err,
        SettingsError::Missing {
            var: "CMP_DATABASE_URL"
        }
    );
    let line = err.to_string();
    assert!(
        line.contains("CMP_DATABASE_URL") && !line.contains('\n'),
        "{line}"
    );
}

#[test]
fn malformed_shard_count_names_the_variable() {
    for bad in ["sixteen", "0", "-3"] {
        let err = Settings::from_source(&env(&[("CMP_SHARD_COUNT", bad)])).expect_err("must fail");
        let line = err.to_string();
        assert!(line.starts_with("CMP_SHARD_COUNT="), "{line}");
        assert!(!line.contains('\n'));
    }
}

#[test]
fn per_carrier_rate_limits_parse_and_bad_ones_name_the_variable() {
    let s = Settings::from_source(&env(&[
        ("CMP_GATEWAY_RATE_LIMIT", "100"),
        ("CMP_GATEWAY_RATE_LIMITS", " 1=200, 2=50 ,3=0"),
    ]))
    .expect("valid");
    assert_eq!(s.gateway_rate_limit, 100);
    assert_eq!(
        s.gateway_rate_limits,
        BTreeMap::from([(1, 200), (2, 50), (3, 0)])
    );
    assert!(
        Settings::from_source(&env(&[]))
            .expect("valid")
            .gateway_rate_limits
            .is_empty()
    );
    for bad in ["1:200", "x=5", "1=fast", "1=-2", "1=5,1=6", "1=2000000"] {
        let err = Settings::from_source(&env(&[("CMP_GATEWAY_RATE_LIMITS", bad)]))
            .expect_err("must fail");
        let line = err.to_string();
        assert!(line.starts_with("CMP_GATEWAY_RATE_LIMITS="), "{line}");
        assert!(!line.contains('\n'));
    }
}

#[test]
fn bad_timezone_and_bind_are_refused() {
    assert!(Settings::from_source(&env(&[("CMP_TIMEZONE", "Mars/Olympus")])).is_err());
    assert!(Settings::from_source(&env(&[("CMP_API_BIND", "nowhere")])).is_err());
    assert!(Settings::from_source(&env(&[("CMP_LOG_FORMAT", "xml")])).is_err());
}

#[test]
fn toml_file_fills_in_and_environment_wins() {
    let dir = std::env::temp_dir().join(format!("cmp-settings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let path = dir.join("cmp.toml");
    std::fs::write(
        &path,
        "shard_count = 32\nLEASE_SECS = 120\nlog_format = \"json\"\n",
    )
    .expect("write");
    let p = path.to_string_lossy().into_owned();
    let s = Settings::from_source(&env(&[("CMP_CONFIG", &p), ("CMP_LEASE_SECS", "60")]))
        .expect("valid");
    assert_eq!(s.shard_count, 32);
    assert_eq!(s.lease, Duration::from_secs(60));
    assert_eq!(s.log_format, LogFormat::Json);
    std::fs::write(&path, "shard_count = [").expect("write");
    let err = Settings::from_source(&env(&[("CMP_CONFIG", &p)])).expect_err("bad toml");
    assert!(err.to_string().starts_with("CMP_CONFIG="));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_batch_linger_defaults_to_20_ms_and_a_bad_one_names_the_variable() {
    let default = Settings::from_source(&env(&[])).expect("valid");
    assert_eq!(default.batch_linger, Duration::from_millis(20));
    let off = Settings::from_source(&env(&[("CMP_BATCH_LINGER_MS", "0")])).expect("valid");
    assert_eq!(off.batch_linger, Duration::ZERO);
    for bad in ["-1", "fast", "10001"] {
        let err =
            Settings::from_source(&env(&[("CMP_BATCH_LINGER_MS", bad)])).expect_err("must fail");
        assert!(err.to_string().starts_with("CMP_BATCH_LINGER_MS="), "{err}");
    }
}

#[test]
fn the_carrier_sync_reads_20_pages_a_run_by_default_and_a_bad_count_names_the_variable() {
    let default = Settings::from_source(&env(&[])).expect("valid");
    assert_eq!(default.carrier_sync_pages, 20);
    let off = Settings::from_source(&env(&[("CMP_CARRIER_SYNC_PAGES", "0")])).expect("valid");
    assert_eq!(off.carrier_sync_pages, 0);
    for bad in ["-1", "10001", "many"] {
        let err =
            Settings::from_source(&env(&[("CMP_CARRIER_SYNC_PAGES", bad)])).expect_err("must fail");
        assert!(
            err.to_string().starts_with("CMP_CARRIER_SYNC_PAGES="),
            "{err}"
        );
    }
}

#[test]
fn traces_are_off_by_default_and_sample_one_poll_in_a_hundred() {
    let s = Settings::from_source(&env(&[])).expect("valid");
    assert_eq!(s.otel_endpoint, None);
    assert!((s.otel_poll_sample - 0.01).abs() < f64::EPSILON);
    assert_eq!(s.otel_service_name, None);
    let s = Settings::from_source(&env(&[
        ("CMP_OTEL_ENDPOINT", "http://collector:4318/"),
        ("CMP_OTEL_POLL_SAMPLE", "0.25"),
        ("CMP_OTEL_SERVICE_NAME", "cmp-worker-eu"),
    ]))
    .expect("valid");
    assert_eq!(s.otel_endpoint.as_deref(), Some("http://collector:4318"));
    assert!((s.otel_poll_sample - 0.25).abs() < f64::EPSILON);
    assert_eq!(s.otel_service_name.as_deref(), Some("cmp-worker-eu"));
}

#[test]
fn bad_trace_settings_name_their_variable() {
    for (var, bad) in [
        ("CMP_OTEL_ENDPOINT", "collector:4318"),
        ("CMP_OTEL_ENDPOINT", "http://"),
        ("CMP_OTEL_ENDPOINT", "grpc://collector:4317"),
        ("CMP_OTEL_POLL_SAMPLE", "1.5"),
        ("CMP_OTEL_POLL_SAMPLE", "-0.1"),
        ("CMP_OTEL_POLL_SAMPLE", "NaN"),
        ("CMP_OTEL_POLL_SAMPLE", "1%"),
    ] {
        let err = Settings::from_source(&env(&[(var, bad)])).expect_err(bad);
        let line = err.to_string();
        assert!(line.starts_with(&format!("{var}=")), "{line}");
        assert!(!line.contains('\n'), "{line}");
    }
}
