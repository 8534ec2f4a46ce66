//! The real binary against real PostgreSQL and Redis: `cmp-worker check [--repair]` exit codes
//! and repairs, and a running worker that re-initialises the queues by itself after Redis lost
//! every key, with `/readyz` red meanwhile and green again after.

mod common;

use common::*;
use domain::TaskType;
use fred::prelude::*;
use std::time::Duration;
use tokio::process::Command;

/// Runs `cmp-worker <args>` to the end against the world: (exit code, stdout).
async fn cmp_worker(w: &World, args: &[&str]) -> anyhow::Result<(i32, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_cmp-worker"))
        .args(args)
        .env("CMP_DATABASE_URL", &w.env.db.url)
        .env("CMP_REDIS_URL", &w.env.redis.url)
        .env("CMP_REDIS_KEY_PREFIX", &w.env.redis.prefix)
        .env("CMP_LOG", "warn")
        .output()
        .await?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

/// The summary line of one kind, e.g. `missing      1  e.g. 5/carddata`.
fn line<'a>(stdout: &'a str, kind: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(kind))
        .unwrap_or("")
}

/// Deletes every key under the test's prefix (never FLUSHALL: other tests share the server;
/// SCAN per primary and one UNLINK per key, so it works on a cluster too).
async fn flush_prefix(pool: &Pool, prefix: &str) -> anyhow::Result<usize> {
    let deleted = test_support::unlink_prefix(pool.next(), prefix).await?;
    Ok(usize::try_from(deleted)?)
}

/// `GET path` on `addr`: the status code, or `None` while nothing answers.
fn free_port() -> anyhow::Result<String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.to_string())
}

#[tokio::test]
async fn check_exits_1_on_damage_repairs_it_and_exits_0_when_clean() -> anyhow::Result<()> {
    let w = world(40, 600, 0).await?;
    assert_eq!(cmp_worker(&w, &["init"]).await?.0, 0);
    let (code, out) = cmp_worker(&w, &["check"]).await?;
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("checked 40 polling-enabled cards and 160 queue members"),
        "{out}"
    );

    // Damage: one card out of its carddata queue, a member that is no card.
    let pool = w.env.redis.pool().await?;
    let card = w.cards[3];
    let own = w
        .queue
        .keys()
        .shard_queue(w.queue.shard_of(card), TaskType::Carddata);
    let _: i64 = pool.zrem(&own, card.to_string()).await?;
    let other = w.queue.keys().shard_queue(999_999 % 16, TaskType::Realname);
    let _: i64 = pool
        .zadd(&other, None, None, false, false, (1.0, "999999"))
        .await?;
    let before = w.queue.score_of(w.cards[4], TaskType::Carddata).await?;

    let (code, out) = cmp_worker(&w, &["check"]).await?;
    assert_eq!(code, 1, "{out}");
    assert!(
        line(&out, "missing").contains(&format!(" 1  e.g. {card}/carddata")),
        "{out}"
    );
    assert!(
        line(&out, "not_live").contains(" 1  e.g. 999999/realname"),
        "{out}"
    );
    assert!(out.contains("NOT CLEAN"), "{out}");

    let (code, out) = cmp_worker(&w, &["check", "--repair"]).await?;
    assert_eq!(code, 1, "it was not clean: {out}");
    assert!(
        !out.contains("failed") && !out.contains("ERROR"),
        "a repair that fixed everything is no failure: {out}"
    );
    assert!(line(&out, "missing").contains("1, 1 repaired"), "{out}");
    assert!(line(&out, "not_live").contains("1, 1 repaired"), "{out}");
    assert!(w.queue.score_of(card, TaskType::Carddata).await?.is_some());
    assert_eq!(
        w.queue.score_of(w.cards[4], TaskType::Carddata).await?,
        before
    );

    let (code, out) = cmp_worker(&w, &["check"]).await?;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("clean"), "{out}");
    Ok(())
}

#[tokio::test]
async fn a_worker_reinitialises_by_itself_after_redis_lost_every_key() -> anyhow::Result<()> {
    let w = world(50, 600, 0).await?;
    let bind = free_port()?;
    let mut worker = spawn_worker(&w, &[("CMP_WORKER_BIND", bind.as_str())])?;
    let ready = eventually(Duration::from_secs(30), || async {
        Ok(http_status(&bind, "/readyz").await == Some(200) && all_queued(&w).await?)
    })
    .await?;
    assert!(ready, "initialised and ready at start");

    let pool = w.env.redis.pool().await?;
    let deleted = flush_prefix(&pool, &w.env.redis.prefix).await?;
    assert!(deleted > 0);
    let red = eventually(Duration::from_secs(5), || async {
        Ok(http_status(&bind, "/readyz").await == Some(503) || all_queued(&w).await?)
    })
    .await?;
    assert!(red, "readiness went red (or the queues were already back)");
    // The watchdog looks every 10 s.
    let back = eventually(Duration::from_secs(40), || async {
        Ok(all_queued(&w).await? && http_status(&bind, "/readyz").await == Some(200))
    })
    .await?;
    assert!(back, "every card queued again and ready");
    assert_eq!(http_status(&bind, "/healthz").await, Some(200));
    assert!(terminate(&mut worker).await?.success());
    let (code, out) = cmp_worker(&w, &["check"]).await?;
    assert_eq!(code, 0, "{out}");
    Ok(())
}
