//! Cards by ICCID: emnify's numeric SIM id, found through the SIM list filter and kept in
//! memory; a 404 on a remembered id forgets it and looks the card up once more.

use super::super::transport::Answer;
use super::wire::{SimRecord, id_of, network_of};
use super::{Emnify, ID_CACHE_MAX, LOOKUP_PER_PAGE};
use crate::{AnswerFault, GatewayError};
use domain::NetworkStatus;

impl Emnify {
    fn cached(&self, iccid: &str) -> Option<u64> {
        self.ids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(iccid)
            .copied()
    }

    fn remember(&self, iccid: &str, id: u64) {
        let mut ids = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        if ids.len() >= ID_CACHE_MAX {
            ids.clear();
        }
        ids.insert(iccid.to_owned(), id);
    }

    fn forget(&self, iccid: &str) {
        self.ids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(iccid);
    }

    /// Finds the SIM by ICCID through the list filter and remembers its id.
    async fn lookup(&self, call: &'static str, iccid: &str) -> Result<SimRecord, GatewayError> {
        let field = if iccid.len() == 20 {
            "iccid_with_luhn"
        } else {
            "iccid"
        };
        let q = format!("{field}:{iccid}");
        let url = reqwest::Url::parse_with_params(
            &self.http.url("/api/v1/sim"),
            &[
                ("q", q.as_str()),
                ("page", "1"),
                ("per_page", LOOKUP_PER_PAGE),
            ],
        )
        .map_err(|e| GatewayError::Transport(format!("SIM lookup URL: {e}")))?;
        let answer = self
            .send(call, false, |t| self.get_at(url.clone(), t))
            .await?;
        if !answer.is_success() {
            return Err(self.refused(call, &answer));
        }
        let sims: Vec<SimRecord> = self.http.json("SIM lookup", &answer)?;
        let Some(pos) = sims.iter().position(|s| s.names(iccid)) else {
            return Err(match sims.first() {
                None => GatewayError::NotFound,
                Some(other) => self.http.fault(
                    AnswerFault::WrongIccid,
                    format!(
                        "SIM lookup of {iccid} answered {} SIM(s), none of them it (first: {})",
                        sims.len(),
                        other.shown_iccid()
                    ),
                ),
            });
        };
        let sim = sims.into_iter().nth(pos).ok_or(GatewayError::NotFound)?;
        self.remember(iccid, sim.id);
        Ok(sim)
    }

    /// The SIM record: `GET /api/v1/sim/{id}` when the id is known, else the lookup.
    pub(super) async fn read_sim(
        &self,
        call: &'static str,
        iccid: &str,
    ) -> Result<SimRecord, GatewayError> {
        if let Some(id) = self.cached(iccid) {
            let path = format!("/api/v1/sim/{id}");
            let answer = self.send(call, false, |t| self.get(&path, t)).await?;
            if answer.status == 404 {
                // Deleted, or not the id we thought: ask by ICCID once more.
                self.forget(iccid);
            } else if !answer.is_success() {
                return Err(self.refused(call, &answer));
            } else {
                let sim: SimRecord = self.http.json("SIM", &answer)?;
                if !sim.names(iccid) {
                    self.forget(iccid);
                    return Err(self.http.fault(
                        AnswerFault::WrongIccid,
                        format!(
                            "SIM {id} of {iccid} answered for ICCID {}",
                            sim.shown_iccid()
                        ),
                    ));
                }
                return Ok(sim);
            }
        }
        self.lookup(call, iccid).await
    }

    /// A request about the SIM of `iccid`, by its id; a 404 on a remembered id forgets it, looks
    /// the card up again and asks once more.
    pub(super) async fn on_sim<F>(
        &self,
        call: &'static str,
        iccid: &str,
        command: bool,
        build: F,
    ) -> Result<(u64, Answer), GatewayError>
    where
        F: Fn(&str, u64) -> reqwest::RequestBuilder,
    {
        let cached = self.cached(iccid);
        let id = match cached {
            Some(id) => id,
            None => self.lookup(call, iccid).await?.id,
        };
        let answer = self.send(call, command, |t| build(t, id)).await?;
        if answer.status == 404 && cached.is_some() {
            self.forget(iccid);
            let id = self.lookup(call, iccid).await?.id;
            let answer = self.send(call, command, |t| build(t, id)).await?;
            return Ok((id, answer));
        }
        Ok((id, answer))
    }

    /// The network status a SIM record says, through the status table.
    pub(super) fn network_status_of(&self, sim: &SimRecord) -> Result<NetworkStatus, GatewayError> {
        id_of(&sim.status.id).and_then(network_of).ok_or_else(|| {
            self.http.fault(
                AnswerFault::UnknownStatus,
                format!(
                    "SIM {} has status {} ({}), outside the documented table",
                    sim.id,
                    sim.status.id,
                    sim.status
                        .description
                        .as_deref()
                        .unwrap_or("no description")
                ),
            )
        })
    }
}
