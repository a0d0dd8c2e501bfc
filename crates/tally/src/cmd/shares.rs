//! `tally shares FILE... --model MODEL.json`: check a model of each member
//! request's share of one iteration's GPU time against the measured budget,
//! with stormlog's `validate_request_shares` rules.
//!
//! The model is one JSON object:
//!
//! ```json
//! {"iteration_ref": {"producer_id": "engine-0", "id": "step-7"},
//!  "device_clock": {"device_uuid": "GPU-0", "clock_domain": "cuda:0", "clock_kind": "device"},
//!  "shares": [{"request_ref": {"producer_id": "api", "id": "req-1"},
//!              "attempt_ref": null, "duration_ns": 1200, "model": "tokens"}],
//!  "unattributed_ns": 300}
//! ```
//!
//! `clock_kind` defaults to `monotonic` and `attempt_ref` to none, as in
//! stormlog.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{Map, Value, json};
use tally_core::{ClockKind, EntityRef};
use tally_gpu_time::{
    DeviceClock, RequestShareEstimate, ShareError, account_gpu_time, validate_request_shares,
};

use super::account::{Layout, readable_ns, resolve_files};
use super::input::TraceArgs;

/// Arguments of `tally shares`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Artifacts of one run, read and resolved together (as `tally account`).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The share model (JSON; see `tally shares --help`).
    #[arg(long)]
    pub model: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Layout::Table)]
    pub format: Layout,
    #[command(flatten)]
    pub limits: super::output::LimitArgs,
}

/// A parsed model file, before stormlog's rules are applied.
struct Model {
    iteration_ref: EntityRef,
    device_uuid: String,
    clock_domain: String,
    clock_kind: ClockKind,
    shares: Result<Vec<RequestShareEstimate>, ShareError>,
    unattributed_ns: i128,
}

/// Runs the command: exit 0 when the model matches its budget, 1 when it
/// breaks a rule or an input is rejected.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let text = match super::output::read_document_text(&args.model, args.limits.max_document_bytes) {
        Ok(text) => text,
        Err(message) => {
            eprintln!("{message}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let model = match read_model(&text) {
        Ok(model) => model,
        Err(reason) => {
            eprintln!("{}: {reason}", args.model.display());
            return Ok(ExitCode::FAILURE);
        }
    };
    let graph = match resolve_files(&args.files, &TraceArgs::default(), &args.limits) {
        Ok(run) => run,
        Err(message) => {
            eprintln!("{message}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let accounting = account_gpu_time(&graph);
    let clock = DeviceClock::new(&model.device_uuid, &model.clock_domain, model.clock_kind);
    // stormlog builds the share estimates before it validates them, so
    // their own rules come first.
    let outcome = model.shares.and_then(|shares| {
        validate_request_shares(
            &graph,
            &accounting,
            &model.iteration_ref,
            &clock,
            &shares,
            model.unattributed_ns,
        )
    });
    let mut out = std::io::stdout().lock();
    match (&outcome, args.format) {
        (Ok(budget), Layout::Json) => writeln!(
            out,
            "{}",
            json!({"valid": true, "budget_ns": budget.budget_ns, "attributed_ns": budget.attributed_ns,
                   "unattributed_ns": budget.unattributed_ns, "share_count": budget.share_count})
        )?,
        (Err(error), Layout::Json) => {
            writeln!(out, "{}", json!({"valid": false, "rule": error.rule(), "message": error.to_string()}))?
        }
        (Ok(budget), Layout::Table) => writeln!(
            out,
            "valid: budget {} ns ({}) on {} {} ({}) for iteration {}/{}: {} shares = {} ns, unattributed {} ns",
            budget.budget_ns,
            readable_ns(u128::from(budget.budget_ns)),
            clock.device_uuid,
            clock.clock_domain,
            clock.clock_kind,
            model.iteration_ref.producer_id(),
            model.iteration_ref.id(),
            budget.share_count,
            budget.attributed_ns,
            budget.unattributed_ns,
        )?,
        (Err(error), Layout::Table) => {
            let extra = match error {
                ShareError::SumMismatch { budget_ns, total_ns } => {
                    format!(" (budget {budget_ns} ns, shares + remainder {total_ns} ns)")
                }
                ShareError::NotMember { share }
                | ShareError::Duplicate { share }
                | ShareError::GenericAndAttempt { share } => format!(" (share {})", share + 1),
                _ => String::new(),
            };
            writeln!(out, "rejected ({}): {error}{extra}", error.rule())?;
        }
    }
    Ok(if outcome.is_ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn read_model(text: &str) -> Result<Model, String> {
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
    let unattributed_ns = integer(&take(&mut map, "unattributed_ns")?).unwrap_or(-1);
    if let Some(key) = map.keys().next() {
        return Err(format!("unexpected key {key:?}"));
    }
    Ok(Model { iteration_ref, device_uuid, clock_domain, clock_kind, shares, unattributed_ns })
}

fn take(map: &mut Map<String, Value>, key: &str) -> Result<Value, String> {
    map.remove(key).ok_or_else(|| format!("missing key {key:?}"))
}

/// A JSON integer (not a float, not a boolean), as Python's `isinstance(x, int)`.
fn integer(value: &Value) -> Option<i128> {
    match value {
        Value::Number(number) => number.as_i64().map(i128::from).or_else(|| number.as_u64().map(i128::from)),
        _ => None,
    }
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
    let duration = integer(&take(&mut map, "duration_ns")?).unwrap_or(-1);
    let model = match take(&mut map, "model")? {
        Value::String(text) => text,
        _ => return Err("a share's model must be a string".into()),
    };
    if let Some(key) = map.keys().next() {
        return Err(format!("unexpected key {key:?} in a share"));
    }
    Ok(RequestShareEstimate::new(request_ref, attempt_ref, duration, &model))
}
