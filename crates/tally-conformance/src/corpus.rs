//! The static corpus (`tests/conformance/`, see its README): each case of
//! its manifest as [`Inputs`] for an implementation.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::ConformError;
use crate::case::{Inputs, Kind, QUERIES_FILE, pretty};

/// The corpus folder of this source tree, when it is there (a `tally`
/// built from a checkout); installed elsewhere, name one.
pub fn default_corpus_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance");
    dir.join("manifest.json").is_file().then_some(dir)
}

/// One case of the corpus.
#[derive(Debug, Clone)]
pub struct CorpusCase {
    /// Its name in the manifest.
    pub name: String,
    /// Its note (what it holds).
    pub note: String,
    /// What an implementation is given. `rejected` cases are `account`
    /// cases whose answer is a rejection; align queries are given without
    /// their expected answers.
    pub inputs: Inputs,
}

/// The corpus's cases, with the folder holding the align queries stripped
/// of their answers.
#[derive(Debug)]
pub struct Corpus {
    /// Every case of the manifest, in its order.
    pub cases: Vec<CorpusCase>,
    _queries: tempfile::TempDir,
}

/// Reads the corpus of `dir` (its `manifest.json`).
pub fn load(dir: &Path) -> Result<Corpus, ConformError> {
    let manifest_path = dir.join("manifest.json");
    let text =
        std::fs::read_to_string(&manifest_path).map_err(|error| ConformError::io(&manifest_path, error))?;
    let manifest: Value = serde_json::from_str(&text)
        .map_err(|error| ConformError::Corpus(format!("{}: {error}", manifest_path.display())))?;
    let bad = |what: &str| ConformError::Corpus(format!("{}: {what}", manifest_path.display()));
    let scratch = tempfile::Builder::new()
        .prefix("tally-conform-corpus-")
        .tempdir()
        .map_err(|error| ConformError::io(&std::env::temp_dir(), error))?;
    let mut cases = Vec::new();
    for (position, case) in manifest["cases"].as_array().ok_or_else(|| bad("no cases"))?.iter().enumerate() {
        let text = |key: &str| case[key].as_str().map(str::to_owned);
        let name = text("name").ok_or_else(|| bad("a case without a name"))?;
        let kind = match case["kind"].as_str() {
            Some("account" | "rejected") => Kind::Account,
            Some("shares") => Kind::Shares,
            Some("align") => Kind::Align,
            _ => return Err(bad(&format!("{name}: an unknown kind"))),
        };
        let inputs: Vec<PathBuf> = case["inputs"]
            .as_array()
            .ok_or_else(|| bad(&format!("{name}: no inputs")))?
            .iter()
            .map(|input| input.as_str().map(|path| dir.join(path)))
            .collect::<Option<_>>()
            .ok_or_else(|| bad(&format!("{name}: an input that is not a path")))?;
        let model = match kind {
            Kind::Shares => Some(dir.join(text("model").ok_or_else(|| bad(&format!("{name}: no model")))?)),
            _ => None,
        };
        let queries = match kind {
            Kind::Align => {
                let expected = dir.join(text("expected").ok_or_else(|| bad(&format!("{name}: no queries")))?);
                Some(strip_answers(&expected, &scratch.path().join(format!("{position}-{QUERIES_FILE}")))?)
            }
            _ => None,
        };
        let note = text("note").unwrap_or_default();
        cases.push(CorpusCase { name, note, inputs: Inputs { kind, inputs, model, queries } });
    }
    Ok(Corpus { cases, _queries: scratch })
}

/// Writes the queries of `expected` without their answers to `target`.
fn strip_answers(expected: &Path, target: &Path) -> Result<PathBuf, ConformError> {
    let text = std::fs::read_to_string(expected).map_err(|error| ConformError::io(expected, error))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|error| ConformError::Corpus(format!("{}: {error}", expected.display())))?;
    let queries: Vec<Value> = value
        .as_array()
        .ok_or_else(|| ConformError::Corpus(format!("{}: not a list", expected.display())))?
        .iter()
        .map(|query| serde_json::json!({"timestamp_ns": query["timestamp_ns"], "from": query["from"], "to": query["to"]}))
        .collect();
    std::fs::write(target, pretty(&Value::Array(queries)))
        .map_err(|error| ConformError::io(target, error))?;
    Ok(target.to_path_buf())
}
