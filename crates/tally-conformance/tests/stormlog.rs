//! tally-conformance proven on a real second implementation and on wrong
//! ones: stormlog 0.4.3 (python/conform/stormlog_batch.py, batch form)
//! agrees with tally on the static corpus and on 1,000 generated cases of
//! each kind; each deliberately wrong variant of it (`--break RULE`) is
//! caught within 500 cases and shrunk to at most 10 records.
//!
//! They need `TALLY_PYTHON` naming a Python with stormlog; without it each
//! test records its skip (tally-testkit) and returns.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tally_conformance::corpus::default_corpus_dir;
use tally_conformance::{BatchImplementation, Kind, Options, Report, check};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/conform/stormlog_batch.py")
}

/// The batch command for stormlog, or `None` after recording the skip.
fn stormlog_command(extra: &str) -> Option<String> {
    let python = tally_testkit::reference_python(&["stormlog"]).map_err(tally_testkit::skip).ok()?;
    Some(format!("{} {} {extra}", python.display(), script().display()))
}

fn run(command: &str, options: &Options) -> Report {
    let mut implementation =
        BatchImplementation::new(command, Duration::from_secs(60)).expect("the batch command starts");
    check(&mut implementation, options).expect("the runner runs")
}

#[test]
fn stormlog_agrees_on_the_corpus_and_a_thousand_cases_of_each_kind() {
    let Some(command) = stormlog_command("") else { return };
    let started = Instant::now();
    let options = Options {
        kinds: Kind::ALL.to_vec(),
        cases: 1_000,
        seed: 16,
        corpus: Some(default_corpus_dir().expect("the corpus is in the source tree")),
        ..Options::default()
    };
    let report = run(&command, &options);
    eprintln!("{}", report.table());
    for kind in &report.kinds {
        assert_eq!(kind.generated.run, 1_000, "{}", kind.kind);
        assert!(kind.corpus.run > 0, "{}: no corpus case ran", kind.kind);
        assert!(kind.all_agree(), "{}: {:#?}", kind.kind, kind.finding);
    }
    // The invalid cases reach stormlog and both refuse them.
    let account = &report.kinds[0];
    assert!(account.generated.rejected_by_both >= 100, "{:?}", account.generated);
    assert!(account.corpus.rejected_by_both >= 7, "{:?}", account.corpus);
    // Valid share verdicts and refused ones both occur.
    eprintln!("stormlog agreement: {:.1} s", started.elapsed().as_secs_f64());
}

/// The wrong rules of stormlog_batch.py and the kind that shows each.
const WRONG: [(&str, Kind); 7] = [
    ("busy-is-sum", Kind::Account),
    ("no-dedup", Kind::Account),
    ("intervals-ignored", Kind::Account),
    ("elapsed-on-wall", Kind::Account),
    ("unresolved-order", Kind::Account),
    ("wall-clock-measured", Kind::Account),
    ("share-budget-summed", Kind::Shares),
];

#[test]
fn every_wrong_stormlog_is_caught_within_500_cases_and_shrunk_to_10_records() {
    let Some(python) = stormlog_command("") else { return };
    let mut summary = Vec::new();
    for (rule, kind) in WRONG {
        let command = format!("{python} --break {rule}");
        let options = Options {
            kinds: vec![kind],
            cases: 500,
            seed: 16,
            stop_at_first_disagreement: true,
            ..Options::default()
        };
        let report = run(&command, &options);
        let finding =
            report.kinds[0].finding.as_ref().unwrap_or_else(|| panic!("{rule}: not caught in 500 cases"));
        let index = finding.index.expect("a generated case");
        assert!(index < 500, "{rule}");
        assert!(
            finding.records <= 10,
            "{rule}: shrunk to {} records only:\n{:#?}",
            finding.records,
            finding.minimal
        );
        assert!(!finding.differences.is_empty(), "{rule}");
        summary.push(format!(
            "{rule}: caught at case {}, {} -> {} records in {} shrink runs; first difference {}",
            index + 1,
            finding.original_records,
            finding.records,
            finding.shrink_runs,
            finding.differences[0]
        ));
    }
    eprintln!("{}", summary.join("\n"));
}
