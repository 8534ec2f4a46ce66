//! The carrier health board (`polling:carrier:health`) against a real Redis.

mod common;

use common::{TestRedis, t0};
use domain::{CarrierHealth, CarrierHealthState, CarrierId};
use fred::prelude::*;
use polling_queue::{CarrierHealthBoard, Keys, RedisKey};

fn health(id: i64, state: CarrierHealthState) -> CarrierHealth {
    CarrierHealth {
        carrier_id: CarrierId(id),
        state,
        last_ok_at: Some(t0()),
        last_error_at: None,
        last_error_kind: None,
        last_error: None,
        calls_ok: 3,
        calls_failed: 0,
        updated_at: t0(),
    }
}

#[tokio::test]
async fn published_health_is_read_back_and_garbage_is_skipped() -> anyhow::Result<()> {
    let redis = TestRedis::new().await?;
    let pool = redis.pool().await?;
    let keys = Keys::new(redis.prefix.clone());
    let board = CarrierHealthBoard::new(pool.clone(), keys.clone());

    assert!(board.read_all().await?.is_empty());
    assert_eq!(board.read(CarrierId(1)).await?, None);

    let mut failing = health(2, CarrierHealthState::AuthFailed);
    failing.last_error_kind = Some("auth_error".into());
    failing.last_error = Some("the platform refused the credentials".into());
    failing.last_error_at = Some(t0());
    board.publish(&failing).await?;
    board
        .publish(&health(1, CarrierHealthState::Failing))
        .await?;
    // A newer publish of the same carrier replaces the older.
    board.publish(&health(1, CarrierHealthState::Ok)).await?;

    let key = keys.render(&RedisKey::CarrierHealth);
    let _: () = pool.hset(&key, ("3", "not json")).await?;
    let ttl: i64 = pool.ttl(&key).await?;
    assert!(ttl > 0, "the board expires after its last publish");

    let all = board.read_all().await?;
    assert_eq!(
        all,
        vec![health(1, CarrierHealthState::Ok), failing.clone()]
    );
    assert_eq!(board.read(CarrierId(2)).await?, Some(failing));
    assert_eq!(board.read(CarrierId(3)).await?, None, "undecodable");
    Ok(())
}
