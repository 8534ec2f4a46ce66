use crate::services::redis_url;
use crate::{run_blocking_cleanup, unique_name};
use anyhow::Context;
use fred::prelude::*;
use fred::types::scan::Scanner;
use futures::StreamExt;
use std::time::Duration;

/// An isolated key space on the test Redis: every key the test writes starts with `prefix`
/// (the key builders of `polling-queue` take it). The keys are deleted on drop.
pub struct TestRedis {
    pub url: String,
    /// e.g. `t1764460000_0a1b2c3d4e5f:`
    pub prefix: String,
}

impl TestRedis {
    pub async fn new() -> anyhow::Result<TestRedis> {
        let url = redis_url().await?;
        let prefix = format!("{}:", unique_name("t"));
        Ok(TestRedis { url, prefix })
    }

    /// A connected pool of `size` clients on the test Redis.
    pub async fn pool_of(&self, size: usize) -> anyhow::Result<Pool> {
        connect(&self.url, size).await
    }

    /// A connected pool of 4 clients on the test Redis.
    pub async fn pool(&self) -> anyhow::Result<Pool> {
        self.pool_of(4).await
    }
}

async fn connect(url: &str, size: usize) -> anyhow::Result<Pool> {
    let pool =
        Builder::from_config(Config::from_url(url).with_context(|| format!("redis url {url}"))?)
            .with_connection_config(|c| c.connection_timeout = Duration::from_secs(2))
            .with_performance_config(|p| p.default_command_timeout = Duration::from_secs(10))
            .build_pool(size)?;
    pool.init()
        .await
        .with_context(|| format!("connect to {url}"))?;
    Ok(pool)
}

impl Drop for TestRedis {
    fn drop(&mut self) {
        let url = self.url.clone();
        let pattern = format!("{}*", self.prefix);
        run_blocking_cleanup("redis", async move {
            let pool = connect(&url, 1).await?;
            let client = pool.next().clone();
            let mut scan = client.scan(pattern, Some(1000), None);
            while let Some(page) = scan.next().await {
                let mut page = page?;
                if let Some(keys) = page.take_results()
                    && !keys.is_empty()
                {
                    let _: i64 = client.unlink(keys).await?;
                }
            }
            pool.quit().await?;
            Ok(())
        });
    }
}
