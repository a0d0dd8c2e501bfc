//! The runner: the static corpus first, then generated cases; each reply
//! judged against tally's; the first disagreement of each kind shrunk to a
//! minimal case (proptest's `simplify`/`complicate`, re-running the
//! implementation) and written out.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde::Serialize;
use serde_json::{Value, json};

use crate::ConformError;
use crate::answer::{Reply, tally_answer};
use crate::case::{Case, Inputs, Kind, pretty, write_atomically};
use crate::compare::{Difference, Verdict, judge, short_diff};
use crate::corpus::{Corpus, CorpusCase};
use crate::generate::arb_case;
use crate::implementation::Implementation;

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The kinds to check, in order.
    pub kinds: Vec<Kind>,
    /// Generated cases per kind.
    pub cases: u32,
    /// The seed of the generated cases: the same seed, the same cases.
    pub seed: u64,
    /// The static corpus's folder (its `manifest.json`), run first; `None`
    /// runs none.
    pub corpus: Option<PathBuf>,
    /// Where each kind's minimal disagreeing case is written; `None`
    /// writes nothing.
    pub out: Option<PathBuf>,
    /// At most this many runs of the implementation while shrinking one
    /// disagreement.
    pub max_shrink_runs: u32,
    /// Stop a kind's generated cases at its first disagreement (after
    /// shrinking it) instead of running all of them.
    pub stop_at_first_disagreement: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            kinds: Kind::ALL.to_vec(),
            cases: 256,
            seed: 0,
            corpus: None,
            out: None,
            max_shrink_runs: 2_000,
            stop_at_first_disagreement: false,
        }
    }
}

/// How many cases ended which way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Cases run.
    pub run: u32,
    /// Same answer.
    pub agreed: u32,
    /// Different answers (or one refused the inputs and the other did not).
    pub disagreed: u32,
    /// Both refused the inputs.
    pub rejected_by_both: u32,
    /// The implementation could not answer.
    pub implementation_errors: u32,
    /// The implementation ran past the timeout.
    pub timeouts: u32,
}

impl Counts {
    fn add(&mut self, verdict: &Verdict) {
        self.run += 1;
        match verdict {
            Verdict::Agreed => self.agreed += 1,
            Verdict::RejectedByBoth => self.rejected_by_both += 1,
            Verdict::Disagreed(_) => self.disagreed += 1,
            Verdict::ImplementationError(_) => self.implementation_errors += 1,
            Verdict::TimedOut => self.timeouts += 1,
        }
    }

    /// Whether every case agreed or was rejected by both.
    pub fn all_agree(&self) -> bool {
        self.disagreed == 0 && self.implementation_errors == 0 && self.timeouts == 0
    }
}

/// A disagreement, shrunk when it was generated.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// The corpus case's name, or `generated case N` (0-based, of this kind
    /// and seed).
    pub case: String,
    /// For a generated case, its 0-based number: it was caught after
    /// `index + 1` cases.
    pub index: Option<u32>,
    /// What the (shrunk) case holds.
    pub note: String,
    /// Records before shrinking.
    pub original_records: usize,
    /// Records of the minimal case.
    pub records: usize,
    /// Implementation runs spent shrinking.
    pub shrink_runs: u32,
    /// The fields that differ, in the minimal case.
    pub differences: Vec<Difference>,
    /// tally's reply to the minimal case.
    pub tally: Reply,
    /// The implementation's reply to it.
    pub implementation: Reply,
    /// Where it was written.
    pub written_to: Option<PathBuf>,
    /// The minimal case itself.
    #[serde(skip)]
    pub minimal: Option<Case>,
}

/// One kind's results.
#[derive(Debug, Clone, Serialize)]
pub struct KindReport {
    /// The kind.
    pub kind: Kind,
    /// The static corpus's cases of this kind.
    pub corpus: Counts,
    /// The generated cases.
    pub generated: Counts,
    /// The first disagreement, corpus or generated.
    pub finding: Option<Finding>,
    /// Seconds tally spent answering.
    pub tally_seconds: f64,
    /// Seconds the implementation spent answering (shrinking included).
    pub implementation_seconds: f64,
}

impl KindReport {
    /// Whether nothing disagreed, failed or timed out.
    pub fn all_agree(&self) -> bool {
        self.corpus.all_agree() && self.generated.all_agree()
    }
}

/// The whole run's results.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The seed of the generated cases.
    pub seed: u64,
    /// Generated cases per kind.
    pub cases: u32,
    /// Whether the static corpus ran.
    pub corpus: bool,
    /// Per kind, in the order asked.
    pub kinds: Vec<KindReport>,
    /// Seconds, all told.
    pub elapsed_seconds: f64,
}

impl Report {
    /// Whether every case of every kind agreed or was rejected by both.
    pub fn all_agree(&self) -> bool {
        self.kinds.iter().all(KindReport::all_agree)
    }

    /// The report as one JSON object.
    pub fn to_json(&self) -> Value {
        // Invariant: every field is plain data that serializes.
        serde_json::to_value(self).expect("the report serializes")
    }

    /// The report as a table for people, with each finding's short diff.
    pub fn table(&self) -> String {
        let mut text = format!(
            "{:<8} {:<9} {:>6} {:>7} {:>9} {:>14} {:>11} {:>8}\n",
            "kind", "source", "run", "agreed", "disagreed", "rejected-both", "impl-errors", "timeouts"
        );
        for kind in &self.kinds {
            for (source, counts) in [("corpus", &kind.corpus), ("generated", &kind.generated)] {
                if source == "corpus" && !self.corpus {
                    continue;
                }
                text.push_str(&format!(
                    "{:<8} {:<9} {:>6} {:>7} {:>9} {:>14} {:>11} {:>8}\n",
                    kind.kind.name(),
                    source,
                    counts.run,
                    counts.agreed,
                    counts.disagreed,
                    counts.rejected_by_both,
                    counts.implementation_errors,
                    counts.timeouts
                ));
            }
        }
        for kind in &self.kinds {
            let Some(finding) = &kind.finding else { continue };
            text.push_str(&format!(
                "\n{} disagrees on {} ({}; {} records, shrunk from {} in {} runs):\n{}",
                kind.kind,
                finding.case,
                finding.note,
                finding.records,
                finding.original_records,
                finding.shrink_runs,
                short_diff(&finding.differences, 10)
            ));
            if let Some(dir) = &finding.written_to {
                text.push_str(&format!("  written to {}\n", dir.display()));
            }
        }
        text.push_str(&format!(
            "\nseed {}, {} generated cases per kind, {:.1} s: {}\n",
            self.seed,
            self.cases,
            self.elapsed_seconds,
            if self.all_agree() { "all agree" } else { "NOT all agree" }
        ));
        text
    }
}

/// The random source of a kind's cases: the seed and the kind, so a kind
/// gets the same cases whichever others run beside it.
fn rng_for(seed: u64, kind: Kind) -> TestRng {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8] = kind as u8 + 1;
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// Runs one case: writes it into a fresh folder under `scratch`, asks tally
/// and the implementation, judges.
struct Judge<'a> {
    implementation: &'a mut dyn Implementation,
    scratch: tempfile::TempDir,
    serial: u64,
    tally_time: Duration,
    implementation_time: Duration,
}

/// A case's replies and verdict.
struct Outcome {
    tally: Reply,
    implementation: Reply,
    verdict: Verdict,
}

impl Judge<'_> {
    fn run_case(&mut self, case: &Case) -> Result<Outcome, ConformError> {
        self.serial += 1;
        let dir = self.scratch.path().join(format!("case-{}", self.serial));
        std::fs::create_dir(&dir).map_err(|error| ConformError::io(&dir, error))?;
        let inputs = case.write(&dir)?;
        let outcome = self.run_inputs(&inputs);
        let _ = std::fs::remove_dir_all(&dir);
        Ok(outcome)
    }

    fn run_inputs(&mut self, inputs: &Inputs) -> Outcome {
        let started = Instant::now();
        let tally = tally_answer(inputs);
        let between = Instant::now();
        let implementation = self.implementation.answer(inputs);
        self.tally_time += between - started;
        self.implementation_time += between.elapsed();
        let verdict = judge(&tally, &implementation);
        Outcome { tally, implementation, verdict }
    }
}

/// Checks `implementation` against tally: see the module docs. Errors are
/// the runner's own (a scratch folder, the corpus, the output folder), not
/// the implementation's, which the report counts.
///
/// ```
/// use tally_conformance::{Kind, Options, Reply, check, tally_answer};
/// // A Rust implementation under test is any closure from the case's
/// // inputs to a reply; this one is tally itself, so everything agrees.
/// let mut mine = |inputs: &tally_conformance::Inputs| tally_answer(inputs);
/// let options = Options { kinds: vec![Kind::Account], cases: 20, ..Options::default() };
/// let report = check(&mut mine, &options).unwrap();
/// assert!(report.all_agree());
/// assert_eq!(report.kinds[0].generated.run, 20);
/// ```
pub fn check(implementation: &mut dyn Implementation, options: &Options) -> Result<Report, ConformError> {
    let started = Instant::now();
    let scratch = tempfile::Builder::new()
        .prefix("tally-conform-")
        .tempdir()
        .map_err(|error| ConformError::io(&std::env::temp_dir(), error))?;
    let mut judge = Judge {
        implementation,
        scratch,
        serial: 0,
        tally_time: Duration::ZERO,
        implementation_time: Duration::ZERO,
    };
    let corpus = match &options.corpus {
        Some(dir) => Some(crate::corpus::load(dir)?),
        None => None,
    };
    let mut kinds = Vec::new();
    for &kind in &options.kinds {
        judge.tally_time = Duration::ZERO;
        judge.implementation_time = Duration::ZERO;
        let mut report = KindReport {
            kind,
            corpus: Counts::default(),
            generated: Counts::default(),
            finding: None,
            tally_seconds: 0.0,
            implementation_seconds: 0.0,
        };
        if let Some(corpus) = &corpus {
            run_corpus(&mut judge, corpus, kind, options, &mut report)?;
        }
        run_generated(&mut judge, kind, options, &mut report)?;
        report.tally_seconds = judge.tally_time.as_secs_f64();
        report.implementation_seconds = judge.implementation_time.as_secs_f64();
        kinds.push(report);
    }
    Ok(Report {
        seed: options.seed,
        cases: options.cases,
        corpus: corpus.is_some(),
        kinds,
        elapsed_seconds: started.elapsed().as_secs_f64(),
    })
}

fn run_corpus(
    judge: &mut Judge<'_>,
    corpus: &Corpus,
    kind: Kind,
    options: &Options,
    report: &mut KindReport,
) -> Result<(), ConformError> {
    for case in corpus.cases.iter().filter(|case| case.inputs.kind == kind) {
        let outcome = judge.run_inputs(&case.inputs);
        report.corpus.add(&outcome.verdict);
        if let (Verdict::Disagreed(differences), None) = (&outcome.verdict, &report.finding) {
            let written_to = match &options.out {
                Some(out) => Some(write_corpus_finding(out, kind, case, &outcome, judge.implementation)?),
                None => None,
            };
            report.finding = Some(Finding {
                case: format!("corpus {}", case.name),
                index: None,
                note: case.note.clone(),
                original_records: 0,
                records: 0,
                shrink_runs: 0,
                differences: differences.clone(),
                tally: outcome.tally,
                implementation: outcome.implementation,
                written_to,
                minimal: None,
            });
        }
    }
    Ok(())
}

fn run_generated(
    judge: &mut Judge<'_>,
    kind: Kind,
    options: &Options,
    report: &mut KindReport,
) -> Result<(), ConformError> {
    let strategy = arb_case(kind);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng_for(options.seed, kind));
    for index in 0..options.cases {
        let mut tree =
            strategy.new_tree(&mut runner).map_err(|reason| ConformError::Generate(reason.to_string()))?;
        let case = tree.current().build();
        let outcome = judge.run_case(&case)?;
        report.generated.add(&outcome.verdict);
        if !matches!(outcome.verdict, Verdict::Disagreed(_)) || report.finding.is_some() {
            continue;
        }
        let mut finding = shrink(judge, &mut tree, case, outcome, options.max_shrink_runs)?;
        finding.case = format!("generated case {index}");
        finding.index = Some(index);
        if let (Some(out), Some(minimal)) = (&options.out, &finding.minimal) {
            finding.written_to =
                Some(write_finding(out, kind, options.seed, minimal, &finding, judge.implementation)?);
        }
        report.finding = Some(finding);
        if options.stop_at_first_disagreement {
            break;
        }
    }
    Ok(())
}

/// proptest's shrinking loop over the case's value tree: simplify while the
/// implementation still disagrees, complicate when a step went too far.
fn shrink<T: ValueTree<Value = crate::generate::CaseSpec>>(
    judge: &mut Judge<'_>,
    tree: &mut T,
    case: Case,
    outcome: Outcome,
    max_runs: u32,
) -> Result<Finding, ConformError> {
    let original_records = case.record_count();
    let mut best = (case, outcome);
    let mut runs = 0;
    if tree.simplify() {
        while runs < max_runs {
            runs += 1;
            let candidate = tree.current().build();
            let outcome = judge.run_case(&candidate)?;
            if matches!(outcome.verdict, Verdict::Disagreed(_)) {
                best = (candidate, outcome);
                if !tree.simplify() {
                    break;
                }
            } else if !tree.complicate() {
                break;
            }
        }
    }
    let (case, outcome) = best;
    let differences = match outcome.verdict {
        Verdict::Disagreed(differences) => differences,
        // Invariant: only disagreeing outcomes are kept as the best.
        _ => unreachable!("the kept case disagrees"),
    };
    Ok(Finding {
        case: String::new(),
        index: None,
        note: case.note.clone(),
        original_records,
        records: case.record_count(),
        shrink_runs: runs,
        differences,
        tally: outcome.tally,
        implementation: outcome.implementation,
        written_to: None,
        minimal: Some(case),
    })
}

/// A reply as the finding's file holds it.
fn reply_json(reply: &Reply) -> Value {
    match reply {
        Reply::Answer(value) => value.clone(),
        Reply::Rejected(message) => json!({"error": message}),
        Reply::Failed(reason) => json!({"failed": reason}),
        Reply::TimedOut => json!({"timed_out": true}),
    }
}

/// Writes a minimal case to `out/<kind>/`: its inputs, `tally.json`,
/// `implementation.json`, `diff.txt` and a README saying how to re-run it;
/// every file through a temporary file renamed into place.
fn write_finding(
    out: &Path,
    kind: Kind,
    seed: u64,
    case: &Case,
    finding: &Finding,
    implementation: &dyn Implementation,
) -> Result<PathBuf, ConformError> {
    let dir = out.join(kind.name());
    std::fs::create_dir_all(&dir).map_err(|error| ConformError::io(&dir, error))?;
    let inputs = case.write_atomically(&dir)?;
    write_replies(&dir, &finding.tally, &finding.implementation, &finding.differences)?;
    let names: Vec<String> = inputs
        .inputs
        .iter()
        .map(|path| path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default())
        .collect();
    // The command line is the umbrella's to know: name the commands only.
    let tally_command = match kind {
        Kind::Account => format!("what `tally account` prints in JSON for {}", names.join(" ")),
        Kind::Shares => format!("what `tally shares` prints in JSON for model.json and {}", names.join(" ")),
        Kind::Align => "tally_clock::query_answer for each query of queries.json".to_owned(),
    };
    let rerun = implementation
        .rerun_hint(&inputs)
        .unwrap_or_else(|| "(run your implementation on the inputs)".into());
    let readme = format!(
        "A minimal {kind} case on which the implementation disagrees with tally \
         ({note}; {case}, seed {seed}, shrunk to {records} records).\n\
         Re-run the implementation: {rerun}\n\
         tally's answer (tally.json): {tally_command}\n",
        note = finding.note,
        case = finding.case,
        records = finding.records,
    );
    write_atomically(&dir.join("README"), readme.as_bytes())?;
    Ok(dir)
}

fn write_replies(
    dir: &Path,
    tally: &Reply,
    implementation: &Reply,
    differences: &[Difference],
) -> Result<(), ConformError> {
    write_atomically(&dir.join("tally.json"), pretty(&reply_json(tally)).as_bytes())?;
    write_atomically(&dir.join("implementation.json"), pretty(&reply_json(implementation)).as_bytes())?;
    write_atomically(&dir.join("diff.txt"), short_diff(differences, usize::MAX).as_bytes())
}

fn write_corpus_finding(
    out: &Path,
    kind: Kind,
    case: &CorpusCase,
    outcome: &Outcome,
    implementation: &dyn Implementation,
) -> Result<PathBuf, ConformError> {
    let dir = out.join(format!("corpus-{}", kind.name()));
    std::fs::create_dir_all(&dir).map_err(|error| ConformError::io(&dir, error))?;
    let differences = match &outcome.verdict {
        Verdict::Disagreed(differences) => differences.as_slice(),
        _ => &[],
    };
    write_replies(&dir, &outcome.tally, &outcome.implementation, differences)?;
    let rerun = implementation.rerun_hint(&case.inputs).unwrap_or_default();
    let readme = format!(
        "The corpus case {} ({}) on which the implementation disagrees with tally.\nRe-run: {rerun}\n",
        case.name, case.note
    );
    write_atomically(&dir.join("README"), readme.as_bytes())?;
    Ok(dir)
}
