//! What every carrier adapter's suite needs: the simulated platform's account as a carrier
//! configuration, a context with short back-offs, scripted faults, and the checks on errors.

use chrono::{NaiveDate, Utc};
use domain::{
    CarrierAccount, CarrierId, CarrierLimits, CarrierProtocol, Clock, Credentials, NetworkStatus,
    RealNameStatus, SystemClock,
};
use gateway::carriers::units::month_of;
use gateway::carriers::{AdapterContext, build_adapter};
use gateway::{AnswerFault, CallKind, CarrierGateway, GatewayError, RetryPolicy};
use gateway_sim::{
    Malformed, Script, ScriptStep, SimAccount, SimAccountPatch, SimCardPatch, SimCardSpec,
    SimCardView, SimHandle,
};
use rust_decimal::Decimal;
use std::sync::Arc;
use std::time::Duration;

/// The simulator's default credentials of `protocol`.
pub fn default_credentials(protocol: CarrierProtocol) -> Credentials {
    SimAccount::default_for(protocol)
        .credentials
        .into_iter()
        .fold(Credentials::new(), |c, (k, v)| c.with(k, v))
}

/// Carrier `carrier` on `protocol` at the simulator's root of that platform, with the
/// protocol's default limits and `timeout_ms`.
pub fn account(
    sim: &SimHandle,
    protocol: CarrierProtocol,
    carrier: CarrierId,
    credentials: Credentials,
    timeout_ms: u32,
) -> CarrierAccount {
    CarrierAccount {
        carrier_id: carrier,
        name: format!("{protocol} under test"),
        protocol,
        base_url: sim.url_of(protocol),
        credentials,
        limits: CarrierLimits {
            timeout_ms,
            ..protocol.default_limits()
        },
        enabled: true,
        created_at: Utc::now(),
        updated_at: Utc::now(),
    }
}

/// Shanghai time, `clock`, no shared limiter, short back-offs so retry tests stay fast.
pub fn ctx_with(clock: Arc<dyn Clock>) -> AdapterContext {
    let mut ctx = AdapterContext::new(chrono_tz::Asia::Shanghai, clock);
    ctx.retry = RetryPolicy {
        base_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(100),
        ..RetryPolicy::default()
    };
    ctx
}

/// [`ctx_with`] the system clock.
pub fn ctx() -> AdapterContext {
    ctx_with(Arc::new(SystemClock))
}

/// The adapter of `account`.
pub fn adapter(account: &CarrierAccount, ctx: &AdapterContext) -> Arc<dyn CarrierGateway> {
    build_adapter(account, ctx).expect("adapter builds")
}

/// The next requests of `call` fail as `steps` list.
pub fn set_script(sim: &SimHandle, call: CallKind, steps: Vec<ScriptStep>) {
    sim.state().set_script(Script {
        fail_next: steps,
        call: Some(call),
    });
}

/// The kind of an answer not understood, if the error is one.
pub fn unintelligible(e: &GatewayError) -> Option<AnswerFault> {
    match e {
        GatewayError::Unintelligible { kind, .. } => Some(*kind),
        _ => None,
    }
}

/// Asserts that neither the error's `Display` nor its `Debug` shows any of `secrets`.
pub fn assert_no_secret(e: &GatewayError, secrets: &[&str]) {
    let texts = [e.to_string(), format!("{e:?}")];
    for text in &texts {
        for s in secrets {
            assert!(!text.contains(s), "a secret shows in `{text}`");
        }
    }
}

/// A simulator with `cards`, and the adapter `gw` makes of it.
pub async fn with_cards_and(
    cards: Vec<SimCardSpec>,
    gw: impl FnOnce(&SimHandle) -> Arc<dyn CarrierGateway>,
) -> (SimHandle, Arc<dyn CarrierGateway>) {
    let sim = super::sim().await;
    sim.state().upsert_cards(cards).expect("cards register");
    let gw = gw(&sim);
    (sim, gw)
}

/// Card `iccid` with `total` MB this month.
pub fn card(iccid: &str, total: Decimal) -> SimCardSpec {
    SimCardSpec {
        month_total_mb: total,
        ..SimCardSpec::new(iccid)
    }
}

/// The ICCIDs as a batch call takes them.
pub fn iccids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// The month now in the adapters' time zone (Shanghai, as [`ctx`]).
pub fn this_month() -> NaiveDate {
    month_of(Utc::now(), chrono_tz::Asia::Shanghai)
}

/// Requests the simulator received of `kind` (on token platforms, token requests count as
/// `realname`).
pub fn requests(sim: &SimHandle, kind: CallKind) -> u64 {
    sim.state().stats().by_call[kind.as_str()]
}

/// The platform's real-name status of card `iccid` becomes `status`.
pub fn set_realname(sim: &SimHandle, iccid: &str, status: RealNameStatus) {
    sim.state()
        .patch_card(
            iccid,
            SimCardPatch {
                real_name_status: Some(status),
                ..SimCardPatch::default()
            },
        )
        .expect("card patched");
}

/// The simulated `protocol` platform's own limit of requests per second (0: none).
pub fn rate_limit(sim: &SimHandle, protocol: CarrierProtocol, per_sec: u64) {
    sim.state().set_account(
        protocol,
        SimAccountPatch {
            rate_limit_per_sec: Some(per_sec),
            ..SimAccountPatch::default()
        },
    );
}

/// One card's calls, to run several through one table.
#[derive(Debug, Clone, Copy)]
pub enum Call {
    Realname,
    NetworkStatus,
    Usage,
    Packages,
    Stop,
    Start,
}

/// `call` of `iccid` at `carrier`, its answer dropped.
pub async fn one(
    gw: &dyn CarrierGateway,
    carrier: CarrierId,
    call: Call,
    iccid: &str,
) -> Result<(), GatewayError> {
    match call {
        Call::Realname => gw.realname(carrier, iccid).await.map(drop),
        Call::NetworkStatus => gw.network_status(carrier, iccid).await.map(drop),
        Call::Usage => gw.usage(carrier, iccid).await.map(drop),
        Call::Packages => gw.packages(carrier, iccid).await.map(drop),
        Call::Stop => gw.stop(carrier, iccid).await.map(drop),
        Call::Start => gw.start(carrier, iccid).await.map(drop),
    }
}

/// The next request of `call` is answered malformed as `m`.
pub fn malformed_next(sim: &SimHandle, call: CallKind, m: Malformed) {
    set_script(sim, call, vec![ScriptStep::Malformed(m)]);
}

/// `err` is an answer not understood, of `kind`.
pub fn assert_fault(err: &GatewayError, kind: AnswerFault) {
    assert_eq!(unintelligible(err), Some(kind), "{err:?}");
}

/// For each `(scripted kind, call)`: `step` scripted for the next request of that kind, then
/// `call` of `iccid` is an answer not understood of `fault`.
pub async fn assert_faults(
    sim: &SimHandle,
    gw: &dyn CarrierGateway,
    (carrier, iccid): (CarrierId, &str),
    step: ScriptStep,
    calls: &[(CallKind, Call)],
    fault: AnswerFault,
) {
    for &(kind, call) in calls {
        set_script(sim, kind, vec![step]);
        let e = one(gw, carrier, call, iccid).await.expect_err("a fault");
        assert_eq!(unintelligible(&e), Some(fault), "{call:?}: {e:?}");
    }
}

/// Each of `calls` of `iccid` at `carrier` is `NotFound`.
pub async fn assert_not_found(
    gw: &dyn CarrierGateway,
    carrier: CarrierId,
    iccid: &str,
    calls: &[Call],
) {
    for &call in calls {
        assert_eq!(
            one(gw, carrier, call, iccid).await,
            Err(GatewayError::NotFound),
            "{call:?}"
        );
    }
}

/// The stop of `iccid` answers stopped, which the platform's card and a status read show, then
/// the start answers online.
pub async fn assert_stop_then_start(
    sim: &SimHandle,
    gw: &dyn CarrierGateway,
    carrier: CarrierId,
    iccid: &str,
) {
    assert_eq!(gw.stop(carrier, iccid).await, Ok(NetworkStatus::Stopped));
    assert_eq!(
        sim.state().card(iccid).expect("card").network_status,
        NetworkStatus::Stopped
    );
    assert_eq!(
        gw.network_status(carrier, iccid).await,
        Ok(NetworkStatus::Stopped)
    );
    assert_eq!(gw.start(carrier, iccid).await, Ok(NetworkStatus::Online));
}

/// The platform's card `iccid` got one stop and one start, each applied; the card.
pub fn assert_one_stop_one_start(sim: &SimHandle, iccid: &str) -> SimCardView {
    let v = sim.state().card(iccid).expect("card");
    assert_eq!(
        (
            v.stop_calls,
            v.start_calls,
            v.stops_applied,
            v.starts_applied
        ),
        (1, 1, 1, 1)
    );
    v
}

/// With the `protocol` platform's limit lowered to 1 request a second, one of five `call`s of
/// `iccid` in a row is throttled with the platform's Retry-After of 1 s; the limit is lifted
/// again after.
pub async fn assert_the_platform_limit_throttles(
    sim: &SimHandle,
    gw: &dyn CarrierGateway,
    (protocol, carrier): (CarrierProtocol, CarrierId),
    call: Call,
    iccid: &str,
) {
    rate_limit(sim, protocol, 1);
    let mut throttled = None;
    for _ in 0..5 {
        if let Err(e) = one(gw, carrier, call, iccid).await {
            throttled = Some(e);
            break;
        }
    }
    assert_eq!(
        throttled,
        Some(GatewayError::Throttled {
            retry_after: Some(Duration::from_secs(1))
        })
    );
    rate_limit(sim, protocol, 0);
}

/// A scripted 429 of the usage call of `iccid` is throttled and carries the injected
/// Retry-After.
pub async fn assert_a_scripted_429_is_throttled(
    sim: &SimHandle,
    gw: &dyn CarrierGateway,
    carrier: CarrierId,
    iccid: &str,
) {
    set_script(sim, CallKind::Usage, vec![ScriptStep::Status(429)]);
    let e = gw.usage(carrier, iccid).await.expect_err("throttled");
    assert!(
        matches!(
            e,
            GatewayError::Throttled {
                retry_after: Some(_)
            }
        ),
        "{e:?}"
    );
}

/// The usage of `iccid` at `carrier` is `total` MB, of this month.
pub async fn assert_usage_this_month(
    gw: &dyn CarrierGateway,
    carrier: CarrierId,
    iccid: &str,
    total: Decimal,
) {
    let u = gw.usage(carrier, iccid).await.expect("usage");
    assert_eq!(u.month, this_month());
    assert_eq!(u.month_total_mb, total);
}

/// Two 401s in a row to the usage call of `iccid` (the token, then its renewal, refused): `Auth`,
/// which is returned.
pub async fn assert_two_401s_are_auth(
    sim: &SimHandle,
    gw: &dyn CarrierGateway,
    carrier: CarrierId,
    iccid: &str,
) -> GatewayError {
    set_script(
        sim,
        CallKind::Usage,
        vec![ScriptStep::Status(401), ScriptStep::Status(401)],
    );
    let e = gw.usage(carrier, iccid).await.expect_err("refused");
    assert!(matches!(e, GatewayError::Auth(_)), "{e:?}");
    e
}
