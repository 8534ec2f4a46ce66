//! Stop and resume: LC002 `disabledNumberService` (`orderTypeId` 19 停机保号 / 20 停机保号复机),
//! a signed GET that answers XML (`RESULT`, `RESULTMSG`, `ACCESS_NUMBER`); the gateway's own
//! refusals stay JSON.

use super::super::transport::Answer;
use super::Ctcc;
use super::wire::Envelope;
use crate::{AnswerFault, GatewayError};
use domain::NetworkStatus;

const DISABLED_NUMBER_PATH: &str = "/5gcmp/openapi/v1/common/disabledNumberService";

impl Ctcc {
    /// LC002 with `orderTypeId` 19 (stop) or 20 (resume); the status after it.
    pub(super) async fn change(
        &self,
        call: &'static str,
        iccid: &str,
        order: &str,
        after: NetworkStatus,
    ) -> Result<NetworkStatus, GatewayError> {
        self.http
            .retry_command(call, || async move {
                let answer = self
                    .get(
                        call,
                        DISABLED_NUMBER_PATH,
                        &[
                            ("access_number", iccid),
                            ("acctCd", ""),
                            ("orderTypeId", order),
                        ],
                        true,
                    )
                    .await?;
                self.parse_disabled(call, iccid, &answer)?;
                Ok(after)
            })
            .await
    }

    fn parse_disabled(&self, call: &str, iccid: &str, answer: &Answer) -> Result<(), GatewayError> {
        self.check_http(answer)?;
        self.http.refuse_html(call, answer)?;
        let text = String::from_utf8_lossy(&answer.body);
        let trimmed = text.trim_start();
        if trimmed.starts_with('{') {
            // The gateway's own refusals are JSON whatever the API answers.
            let env: Envelope = self.http.json(call, answer)?;
            self.data_of(call, answer, env)?;
            return Err(self.http.fault(
                AnswerFault::NotJson,
                format!("{call}: a JSON success where the XML answer was expected"),
            ));
        }
        if !trimmed.starts_with('<') {
            return Err(self.http.fault(
                AnswerFault::NotJson,
                format!(
                    "{call}: neither XML nor JSON: {}",
                    self.http.excerpt(answer)
                ),
            ));
        }
        if let Some(n) = xml_text(&text, "ACCESS_NUMBER")
            && !n.is_empty()
            && n != iccid
        {
            return Err(self.http.fault(
                AnswerFault::WrongIccid,
                format!("{call}: the answer names {n}, asked {iccid}"),
            ));
        }
        let result = xml_text(&text, "RESULT").ok_or_else(|| {
            self.http.fault(
                AnswerFault::MissingField,
                format!("{call}: no RESULT in the answer"),
            )
        })?;
        let msg = self
            .http
            .scrub(&xml_text(&text, "RESULTMSG").unwrap_or_default());
        match result.as_str() {
            "0" => Ok(()),
            "-1" | "-2" => Err(GatewayError::NotFound),
            "100008" => Err(GatewayError::Carrier {
                status: answer.status,
                body: format!("RESULT 100008: {msg}"),
            }),
            other => Err(self.http.fault(
                AnswerFault::UnknownCode,
                format!("{call}: RESULT {other}: {msg}"),
            )),
        }
    }
}

/// The text of the first `<tag>…</tag>` (tag matched without regard to case), unescaped for the
/// five predefined entities.
pub(super) fn xml_text(doc: &str, tag: &str) -> Option<String> {
    let lower = doc.to_ascii_lowercase();
    let open = format!("<{}>", tag.to_ascii_lowercase());
    let close = format!("</{}>", tag.to_ascii_lowercase());
    let start = lower.find(&open)? + open.len();
    let end = start + lower[start..].find(&close)?;
    Some(
        doc[start..end]
            .trim()
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}
