//! [`SimControl`]: the control API of a simulator running elsewhere (another process, the
//! bench), over HTTP. In-process tests can use [`super::SimState`] directly.

use super::{
    Faults, FaultsPatch, MAX_CARDS_PER_CALL, Script, SimCardPatch, SimCardSpec, SimCardView,
    SimStats,
};
use anyhow::Context;
use reqwest::StatusCode;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::time::Duration;

/// A client of a simulator's `/sim/*` routes.
#[derive(Debug, Clone)]
pub struct SimControl {
    client: reqwest::Client,
    base: String,
}

#[derive(Serialize)]
struct CardsBody<'a> {
    cards: &'a [SimCardSpec],
}

#[derive(serde::Deserialize)]
struct Pending {
    pending: usize,
}

impl SimControl {
    /// `base_url`: e.g. `http://127.0.0.1:7070`.
    pub fn new(base_url: impl Into<String>) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(120))
            .no_proxy()
            .build()
            .context("building the sim control client")?;
        Ok(Self {
            client,
            base: base_url.into().trim_end_matches('/').to_owned(),
        })
    }

    async fn send<T: DeserializeOwned>(
        &self,
        req: reqwest::RequestBuilder,
        what: &str,
    ) -> anyhow::Result<Option<T>> {
        let resp = req
            .send()
            .await
            .with_context(|| format!("{what}: request"))?;
        let status = resp.status();
        if status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let body = resp
            .bytes()
            .await
            .with_context(|| format!("{what}: reading the answer"))?;
        if !status.is_success() {
            anyhow::bail!("{what}: {status}: {}", String::from_utf8_lossy(&body));
        }
        serde_json::from_slice(&body)
            .with_context(|| format!("{what}: decoding the answer"))
            .map(Some)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Registers cards (replacing same ICCIDs), in calls of at most 100,000.
    pub async fn put_cards(&self, cards: &[SimCardSpec]) -> anyhow::Result<usize> {
        let mut n = 0;
        for chunk in cards.chunks(MAX_CARDS_PER_CALL) {
            let req = self
                .client
                .post(self.url("/sim/cards"))
                .json(&CardsBody { cards: chunk });
            let _: Option<serde_json::Value> = self.send(req, "POST /sim/cards").await?;
            n += chunk.len();
        }
        Ok(n)
    }

    /// `None`: unknown card.
    pub async fn card(&self, iccid: &str) -> anyhow::Result<Option<SimCardView>> {
        let req = self.client.get(self.url(&format!("/sim/cards/{iccid}")));
        self.send(req, "GET /sim/cards/{iccid}").await
    }

    /// `None`: unknown card.
    pub async fn patch_card(
        &self,
        iccid: &str,
        patch: &SimCardPatch,
    ) -> anyhow::Result<Option<SimCardView>> {
        let req = self
            .client
            .patch(self.url(&format!("/sim/cards/{iccid}")))
            .json(patch);
        self.send(req, "PATCH /sim/cards/{iccid}").await
    }

    pub async fn set_faults(&self, patch: &FaultsPatch) -> anyhow::Result<Faults> {
        let req = self.client.put(self.url("/sim/faults")).json(patch);
        self.send(req, "PUT /sim/faults")
            .await?
            .context("PUT /sim/faults: route missing")
    }

    /// Answers the number of pending steps.
    pub async fn set_script(&self, script: &Script) -> anyhow::Result<usize> {
        let req = self.client.put(self.url("/sim/script")).json(script);
        let p: Pending = self
            .send(req, "PUT /sim/script")
            .await?
            .context("PUT /sim/script: route missing")?;
        Ok(p.pending)
    }

    /// Changes fields of a platform's account (credentials, token lifetime, limits).
    pub async fn set_account(
        &self,
        protocol: domain::CarrierProtocol,
        patch: &crate::SimAccountPatch,
    ) -> anyhow::Result<crate::SimAccount> {
        let req = self
            .client
            .put(self.url(&format!("/sim/accounts/{protocol}")))
            .json(patch);
        self.send(req, "PUT /sim/accounts/{protocol}")
            .await?
            .context("PUT /sim/accounts/{protocol}: route missing")
    }

    /// Makes every token issued for `protocol` expire now.
    pub async fn expire_tokens(&self, protocol: domain::CarrierProtocol) -> anyhow::Result<()> {
        let req = self
            .client
            .post(self.url(&format!("/sim/accounts/{protocol}/expire-tokens")));
        let _: Option<serde_json::Value> = self.send(req, "POST expire-tokens").await?;
        Ok(())
    }

    pub async fn stats(&self) -> anyhow::Result<SimStats> {
        let req = self.client.get(self.url("/sim/stats"));
        self.send(req, "GET /sim/stats")
            .await?
            .context("GET /sim/stats: route missing")
    }
}
