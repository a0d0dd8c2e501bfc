//! The share model of `tally shares --model`: one iteration's per-request
//! GPU-time shares as a JSON document, read into what
//! [`crate::validate_request_shares`] takes.

use serde_json::{Map, Value, json};
use tally_core::{ClockKind, EntityRef, json_integer, shown};
use tally_resolve::ResolvedEvidence;

use crate::{
    DeviceClock, RequestShareEstimate, RunAccounting, ShareBudget, ShareError, validate_request_shares,
};

/// A share model, before stormlog's rules are applied: one JSON object
///
/// ```json
/// {"iteration_ref": {"producer_id": "engine-0", "id": "step-7"},
///  "device_clock": {"device_uuid": "GPU-0", "clock_domain": "cuda:0", "clock_kind": "device"},
///  "shares": [{"request_ref": {"producer_id": "api", "id": "req-1"},
///              "attempt_ref": null, "duration_ns": 1200, "model": "tokens"}],
///  "unattributed_ns": 300}
/// ```
///
/// `clock_kind` defaults to `monotonic` and `attempt_ref` to none, as in
/// stormlog. A malformed document is a [`ShareModelError`]; shares that
/// break stormlog's own rules (a negative duration, an empty model name)
/// are kept as that rule's [`ShareError`], which validation reports.
///
/// ```
/// let model = tally_gpu_time::ShareModel::from_json_str(
///     r#"{"iteration_ref": {"producer_id": "e", "id": "i"},
///         "device_clock": {"device_uuid": "GPU-0", "clock_domain": "cuda:0"},
///         "shares": [], "unattributed_ns": 0}"#,
/// )?;
/// assert_eq!(model.clock_kind, tally_core::ClockKind::Monotonic);
/// # Ok::<(), tally_gpu_time::ShareModelError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareModel {
    /// The iteration whose budget the shares split.
    pub iteration_ref: EntityRef,
    /// The device of the budget.
    pub device_uuid: String,
    /// Its clock domain.
    pub clock_domain: String,
    /// Its clock kind.
    pub clock_kind: ClockKind,
    /// The shares, or the stormlog rule the first bad one breaks.
    pub shares: Result<Vec<RequestShareEstimate>, ShareError>,
    /// The remainder no request is charged with; `-1` when the document's
    /// value is not a non-negative integer (stormlog checks it after the
    /// budget, so validation reports it then).
    pub unattributed_ns: i128,
}

/// A share model document that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ShareModelError(String);

impl ShareModel {
    /// Reads a share model from its JSON text.
    pub fn from_json_str(text: &str) -> Result<Self, ShareModelError> {
        // Python reads `-0` as the integer 0 (a share's `duration_ns: -0`).
        read_model(&tally_utils::json_text::pythonic_json_text(text)).map_err(ShareModelError)
    }

    /// The device clock the budget is measured on.
    pub fn device_clock(&self) -> DeviceClock<'_> {
        DeviceClock::new(&self.device_uuid, &self.clock_domain, self.clock_kind)
    }

    /// Validates the model against `accounting` (`account_gpu_time(graph)`)
    /// with [`validate_request_shares`]. stormlog builds the share estimates
    /// before it validates them, so a share's own rule (a negative duration,
    /// no model name) comes first.
    pub fn validate(
        &self,
        graph: &(impl ResolvedEvidence + ?Sized),
        accounting: &RunAccounting<'_>,
    ) -> Result<ShareBudget, ShareError> {
        let shares = self.shares.as_ref().map_err(Clone::clone)?;
        validate_request_shares(
            graph,
            accounting,
            &self.iteration_ref,
            &self.device_clock(),
            shares,
            self.unattributed_ns,
        )
    }

    /// The verdict as the conformance corpus writes it (and `tally shares
    /// --format json` prints it): `{"valid": true, "budget_ns",
    /// "attributed_ns", "unattributed_ns", "share_count"}` or `{"valid":
    /// false, "rule", "message"}` with stormlog's message.
    pub fn verdict_json(outcome: &Result<ShareBudget, ShareError>) -> Value {
        match outcome {
            Ok(budget) => {
                json!({"valid": true, "budget_ns": budget.budget_ns, "attributed_ns": budget.attributed_ns,
                                 "unattributed_ns": budget.unattributed_ns, "share_count": budget.share_count})
            }
            Err(error) => json!({"valid": false, "rule": error.rule(), "message": error.to_string()}),
        }
    }
}

fn read_model(text: &str) -> Result<ShareModel, String> {
    let value: Value = serde_json::from_str(text).map_err(|error| format!("not JSON: {error}"))?;
    let Value::Object(mut map) = value else {
        return Err("a share model must be a JSON object".into());
    };
    let iteration_ref = EntityRef::from_json(take(&mut map, "iteration_ref")?, "iteration_ref")
        .map_err(|error| error.to_string())?;
    let Value::Object(mut clock) = take(&mut map, "device_clock")? else {
        return Err("device_clock must be an object".into());
    };
    let text_field = |clock: &mut Map<String, Value>, name: &str| match clock.remove(name) {
        Some(Value::String(text)) if !text.is_empty() => Ok(text),
        _ => Err(format!("device_clock.{name} must be a non-empty string")),
    };
    let device_uuid = text_field(&mut clock, "device_uuid")?;
    let clock_domain = text_field(&mut clock, "clock_domain")?;
    let clock_kind = match clock.remove("clock_kind") {
        None => ClockKind::Monotonic,
        Some(Value::String(text)) => ClockKind::parse(&text).map_err(|error| error.to_string())?,
        Some(_) => return Err("device_clock.clock_kind must be monotonic, wall, or device".into()),
    };
    let Value::Array(items) = take(&mut map, "shares")? else {
        return Err("shares must be a list".into());
    };
    let shares = items.into_iter().map(share).collect::<Result<Result<Vec<_>, ShareError>, String>>()?;
    // stormlog checks the remainder after the budget, and only a
    // non-negative integer passes; anything else fails that same check.
    let unattributed_ns = json_integer(&take(&mut map, "unattributed_ns")?).unwrap_or(-1);
    if let Some(key) = map.keys().next() {
        return Err(format!("unexpected key {:?}", shown(key)));
    }
    Ok(ShareModel { iteration_ref, device_uuid, clock_domain, clock_kind, shares, unattributed_ns })
}

fn take(map: &mut Map<String, Value>, key: &str) -> Result<Value, String> {
    map.remove(key).ok_or_else(|| format!("missing key {key:?}"))
}

/// One share: malformed JSON is the outer error; stormlog's own rules
/// (a non-negative integer duration, a model name) are the inner one.
fn share(value: Value) -> Result<Result<RequestShareEstimate, ShareError>, String> {
    let Value::Object(mut map) = value else {
        return Err("each share must be an object".into());
    };
    let request_ref = EntityRef::from_json(take(&mut map, "request_ref")?, "request_ref")
        .map_err(|error| error.to_string())?;
    let attempt_ref = match map.remove("attempt_ref") {
        None | Some(Value::Null) => None,
        Some(value) => Some(EntityRef::from_json(value, "attempt_ref").map_err(|error| error.to_string())?),
    };
    let duration = json_integer(&take(&mut map, "duration_ns")?).unwrap_or(-1);
    let model = match take(&mut map, "model")? {
        Value::String(text) => text,
        _ => return Err("a share's model must be a string".into()),
    };
    if let Some(key) = map.keys().next() {
        return Err(format!("unexpected key {:?} in a share", shown(key)));
    }
    Ok(RequestShareEstimate::new(request_ref, attempt_ref, duration, &model))
}
