//! What every carrier adapter's suite needs: the simulated platform's account as a carrier
//! configuration, a context with short back-offs, scripted faults, and the checks on errors.

use chrono::Utc;
use domain::{
    CarrierAccount, CarrierId, CarrierLimits, CarrierProtocol, Clock, Credentials, SystemClock,
};
use gateway::carriers::{AdapterContext, build_adapter};
use gateway::{AnswerFault, CallKind, CarrierGateway, GatewayError, RetryPolicy};
use gateway_sim::{Script, ScriptStep, SimAccount, SimHandle};
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
