//! What an implementation answers for a case, and tally's own answer: the
//! reference every other answer is compared with.

use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};
use tally_gpu_time::{AccountingReport, ShareModel, account_gpu_time};

use crate::case::{Inputs, Kind};

/// One implementation's reply to one case.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reply {
    /// The answer: the accounting object (`account`), the verdict on the
    /// share model (`shares`), or `{"answers": [...]}` (`align`).
    Answer(Value),
    /// The implementation refused the input, with its message.
    Rejected(String),
    /// The implementation could not answer (it crashed, or printed no JSON).
    Failed(String),
    /// The implementation ran past the per-case timeout.
    TimedOut,
}

/// tally's answer for a case: what `tally account --format json` prints
/// (tally-gpu-time's [`AccountingReport`]), the share model's verdict
/// ([`ShareModel::verdict_json`]), or each query's translation
/// ([`tally_clock::query_answer`]).
///
/// Inputs that do not resolve are [`Reply::Rejected`] with tally's message;
/// a share model or query document that cannot be read is
/// [`Reply::Failed`]: the case itself is broken.
pub fn tally_answer(inputs: &Inputs) -> Reply {
    match inputs.kind {
        Kind::Account => match tally_ingest::resolve_paths(&inputs.inputs) {
            Ok(run) => to_reply(&AccountingReport::from_resolved(&run, false)),
            Err(error) => Reply::Rejected(error.to_string()),
        },
        Kind::Shares => {
            let Some(path) = &inputs.model else { return Reply::Failed("no share model".into()) };
            let model = match read_text(path).and_then(|text| {
                ShareModel::from_json_str(&text).map_err(|error| format!("{}: {error}", path.display()))
            }) {
                Ok(model) => model,
                Err(reason) => return Reply::Failed(reason),
            };
            match tally_ingest::resolve_paths(&inputs.inputs) {
                Ok(run) => {
                    let accounting = account_gpu_time(&run);
                    Reply::Answer(ShareModel::verdict_json(&model.validate(&run, &accounting)))
                }
                Err(error) => Reply::Rejected(error.to_string()),
            }
        }
        Kind::Align => {
            let Some(path) = &inputs.queries else { return Reply::Failed("no queries".into()) };
            let queries = match read_queries(path) {
                Ok(queries) => queries,
                Err(reason) => return Reply::Failed(reason),
            };
            // A case's files are small: the reader decodes each on this
            // thread, with no pipeline to start.
            let mut records = Vec::new();
            for input in &inputs.inputs {
                match tally_artifact::read_artifact(input) {
                    Ok(read) => records.extend(read),
                    Err(error) => return Reply::Rejected(error.to_string()),
                }
            }
            match tally_resolve::resolve_inference_events(&records) {
                Ok(graph) => {
                    let alignments: Vec<&tally_core::CorrelationEvent> = graph.alignment_events().collect();
                    let answers: Vec<Value> = queries
                        .iter()
                        .map(|(timestamp, from, to)| {
                            tally_clock::query_answer(*timestamp, from, to, alignments.iter().copied())
                        })
                        .collect();
                    Reply::Answer(json!({ "answers": answers }))
                }
                Err(error) => Reply::Rejected(error.to_string()),
            }
        }
    }
}

fn to_reply(report: &AccountingReport) -> Reply {
    match serde_json::to_value(report) {
        Ok(value) => Reply::Answer(value),
        Err(error) => Reply::Failed(format!("the report does not serialize: {error}")),
    }
}

fn read_text(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))
}

/// The queries document: `[{"timestamp_ns", "from", "to"}]` (other keys,
/// such as the corpus's expected answers, are ignored).
pub fn read_queries(path: &Path) -> Result<Vec<(i128, String, String)>, String> {
    let text = read_text(path)?;
    let value: Value = serde_json::from_str(&text).map_err(|error| format!("{}: {error}", path.display()))?;
    let items = value.as_array().ok_or_else(|| format!("{}: the queries must be a list", path.display()))?;
    items
        .iter()
        .map(|item| {
            let timestamp = item["timestamp_ns"].as_i64().map(i128::from);
            let from = item["from"].as_str();
            let to = item["to"].as_str();
            match (timestamp, from, to) {
                (Some(timestamp), Some(from), Some(to)) => Ok((timestamp, from.to_owned(), to.to_owned())),
                _ => Err(format!(
                    "{}: a query needs an integer timestamp_ns, from and to: {item}",
                    path.display()
                )),
            }
        })
        .collect()
}
