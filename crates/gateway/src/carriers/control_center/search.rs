//! Search Devices (`GET /v1/devices?modifiedSince=…`): the delta sync the trait has no call
//! for, and the probe.

use super::ControlCenter;
use super::wire::network_of;
use crate::{AnswerFault, GatewayError};
use chrono::{DateTime, Utc};
use domain::{NetworkStatus, SyncPage, SyncScope, SyncedCard};
use serde::Deserialize;

/// Records one Search Devices page may hold (Cisco: "Page size is limited to 50 records").
pub const SEARCH_PAGE_SIZE: u32 = 50;

/// One Search Devices page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevicePage {
    pub page_number: u32,
    pub devices: Vec<ModifiedDevice>,
    /// No page follows this one.
    pub last_page: bool,
}

/// A device of a Search Devices page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModifiedDevice {
    pub iccid: String,
    /// The platform's word, as answered.
    pub status: String,
    /// `status` through [`network_of`]; an undocumented value is
    /// [`GatewayError::Unintelligible`] for this device alone.
    pub network: Result<NetworkStatus, GatewayError>,
    pub rate_plan: Option<String>,
    pub communication_plan: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SearchAnswer {
    page_number: u32,
    devices: Vec<SearchDevice>,
    last_page: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SearchDevice {
    iccid: String,
    status: String,
    #[serde(default)]
    rate_plan: Option<String>,
    #[serde(default)]
    communication_plan: Option<String>,
}

/// `2016-04-18T17:31:34+00:00` (the documented form), query-encoded.
pub(super) fn instant_param(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%%2B00%%3A00").to_string()
}

impl ControlCenter {
    /// Search Devices: the devices modified since `since`, page `page` (from 1) of
    /// [`SEARCH_PAGE_SIZE`], in the platform's order. Follow `last_page` for the next page.
    pub async fn modified_since(
        &self,
        since: DateTime<Utc>,
        page: u32,
    ) -> Result<DevicePage, GatewayError> {
        let page = page.max(1);
        let answer = self
            .search(since, SEARCH_PAGE_SIZE, page, "search_devices")
            .await?;
        let devices = answer
            .devices
            .into_iter()
            .map(|d| ModifiedDevice {
                network: network_of(&d.status).ok_or_else(|| {
                    self.http.fault(
                        AnswerFault::UnknownStatus,
                        format!(
                            "search_devices: SIM status `{}` of {} is not a documented value",
                            d.status, d.iccid
                        ),
                    )
                }),
                iccid: d.iccid,
                status: d.status,
                rate_plan: d.rate_plan,
                communication_plan: d.communication_plan,
            })
            .collect();
        Ok(DevicePage {
            page_number: answer.page_number,
            devices,
            last_page: answer.last_page,
        })
    }

    /// One Search Devices request, its page checked to be the one asked.
    pub(super) async fn search(
        &self,
        since: DateTime<Utc>,
        page_size: u32,
        page: u32,
        call: &'static str,
    ) -> Result<SearchAnswer, GatewayError> {
        let path = format!(
            "/v1/devices?modifiedSince={}&pageSize={page_size}&pageNumber={page}",
            instant_param(since)
        );
        let found: SearchAnswer = self.fetch(call, &path).await?;
        if found.page_number != page {
            return Err(self.http.fault(
                AnswerFault::BadValue,
                format!(
                    "{call}: asked page {page}, the answer is page {}",
                    found.page_number
                ),
            ));
        }
        Ok(found)
    }
}

impl ControlCenter {
    /// Search Devices as a record-sync page: the devices changed since `since`. The record
    /// carries no real-name (Control Center has none), only the SIM status; a device with an
    /// undocumented status is listed with no network status.
    pub(super) async fn listing(
        &self,
        since: DateTime<Utc>,
        page: u32,
    ) -> Result<SyncPage, GatewayError> {
        let found = self.modified_since(since, page).await?;
        Ok(SyncPage {
            scope: SyncScope::ChangedSince,
            cards: found
                .devices
                .into_iter()
                .map(|d| SyncedCard {
                    iccid: d.iccid,
                    network: d.network.ok(),
                    realname: None,
                })
                .collect(),
            last_page: found.last_page,
        })
    }
}
