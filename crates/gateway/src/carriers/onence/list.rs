//! The SIM list (`GET /v1/sims`), a page at a time: it cannot be filtered by ICCID, so it
//! serves no batch; it serves the probe and the record sync (`sync_page`: every SIM of the
//! account, a hundred a call, with the real-name status the per-card query would answer).

use super::OneNce;
use super::wire::{SimAnswer, with_query};
use crate::GatewayError;
use domain::{NetworkStatus, RealNameStatus, SyncPage, SyncScope, SyncedCard};

/// Most SIMs one page of `GET /v1/sims` holds (the documented maximum of `pageSize`).
pub(crate) const PAGE_SIZE_MAX: u32 = 100;

/// One page of the SIM list ([`OneNce::sims_page`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SimsPage {
    /// The SIMs of the page in the platform's order: ICCID and network status (a status outside
    /// the table is an error of that SIM alone).
    pub(crate) sims: Vec<(String, Result<NetworkStatus, GatewayError>)>,
    /// `X-Current-Page`, else the page asked.
    pub(crate) page: u32,
    /// `X-Total-Count`: SIMs of the account, when sent.
    pub(crate) total_count: Option<u64>,
    /// `X-Total-Pages`, when sent.
    pub(crate) total_pages: Option<u64>,
}

impl OneNce {
    /// One page (from 1) of the account's SIMs, up to 100 (`GET /v1/sims?page&pageSize=100`),
    /// with the totals of the response headers.
    /// The admin API's probe reads page 1.
    pub(crate) async fn sims_page(&self, page: u32) -> Result<SimsPage, GatewayError> {
        let page = page.max(1);
        let url = with_query(
            self.http.url("/v1/sims"),
            &[
                ("page", page.to_string()),
                ("pageSize", PAGE_SIZE_MAX.to_string()),
            ],
        );
        let answer = self.get_url("sims", &url).await?;
        let header = |name: &str| {
            answer
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        let (current, total_count, total_pages) = (
            header("X-Current-Page"),
            header("X-Total-Count"),
            header("X-Total-Pages"),
        );
        let items: Vec<SimAnswer> = self.http.json("sims", &answer)?;
        let sims = items
            .into_iter()
            .map(|s| {
                let status = self.status_of("sims", &s.iccid, &s.status);
                (s.iccid, status)
            })
            .collect();
        Ok(SimsPage {
            sims,
            page: current.and_then(|p| u32::try_from(p).ok()).unwrap_or(page),
            total_count,
            total_pages,
        })
    }
}

impl OneNce {
    /// Page `page` of the SIM list as a record-sync page. Every listed SIM is `Verified`, as
    /// [`OneNce`]'s per-card real-name query answers for a SIM the platform knows. The last page
    /// is the one `X-Total-Pages` names, else the first one short of a full page.
    pub(crate) async fn listing(&self, page: u32) -> Result<SyncPage, GatewayError> {
        let found = self.sims_page(page).await?;
        let full = found.sims.len() >= PAGE_SIZE_MAX as usize;
        let last_page = match found.total_pages {
            Some(total) => u64::from(found.page) >= total,
            None => !full,
        };
        Ok(SyncPage {
            scope: SyncScope::Everything,
            cards: found
                .sims
                .into_iter()
                .map(|(iccid, network)| SyncedCard {
                    iccid,
                    network: network.ok(),
                    realname: Some(RealNameStatus::Verified),
                })
                .collect(),
            last_page,
        })
    }
}
