//! `tally shares FILE... --model MODEL.json`: check a model of each member
//! request's share of one iteration's GPU time against the measured budget,
//! with stormlog's `validate_request_shares` rules.
//!
//! The model file is `tally_gpu_time::ShareModel`'s JSON (see there).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use tally_gpu_time::{ShareError, ShareModel, account_gpu_time};

use super::Layout;
use super::account::{Purpose, readable_ns, resolve_files};
use super::input::TraceArgs;

/// Arguments of `tally shares`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Artifacts of one run, or partials of it (`tally partial`), read and
    /// resolved together (as `tally account`).
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
    #[command(flatten)]
    pub partials: super::partial::PartialArgs,
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
    let model = match ShareModel::from_json_str(&text) {
        Ok(model) => model,
        Err(reason) => {
            eprintln!("{}: {reason}", args.model.display());
            return Ok(ExitCode::FAILURE);
        }
    };
    let trace = TraceArgs::default();
    let graph = match resolve_files(&args.files, &trace, &args.limits, &args.partials, Purpose::Accounting) {
        Ok(run) => run,
        Err(message) => {
            eprintln!("{message}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let accounting = account_gpu_time(&graph);
    let clock = model.device_clock();
    let outcome = model.validate(&graph, &accounting);
    let mut out = std::io::stdout().lock();
    match (&outcome, args.format) {
        (_, Layout::Json) => writeln!(out, "{}", ShareModel::verdict_json(&outcome))?,
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
