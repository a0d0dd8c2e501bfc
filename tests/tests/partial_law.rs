//! The law of partial results (docs/partials.md), as properties over
//! tally-conformance's generated runs: for any run, any partition of its
//! files (each file's records dealt at random into new files, whole traces
//! added at random, imported per launch or per kernel), any grouping of
//! those files into partials and any merge tree (some partials travelling
//! as bytes), the merged partial gives `tally account`'s and `tally
//! breakdown`'s JSON byte for byte as one process reading every file;
//! merging is commutative and associative; a rejected run is rejected by
//! the same rule, and a conflicting redelivery is reported at the same two
//! original lines.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};
use tally_conformance::generate::arb_case;
use tally_conformance::runs::RUN_ID;
use tally_conformance::{Case, CaseFile, Kind};
use tally_gpu_time::breakdown::{BreakdownOptions, breakdown};
use tally_gpu_time::category::CategoryRules;
use tally_gpu_time::{AccountingReport, account_gpu_time};
use tally_ingest::{
    RunError, RunOptions, Unwatched, default_import_options, open_inputs, origin, resolve_inputs,
};
use tally_partial::{Partial, PartialError, merge};
use tally_resolve::{ResolveError, StreamedRun};
use tally_trace::{Detail, ImportOptions};

/// The small Kineto fixtures: whole traces a layout may add to the run
/// (a trace cannot be split by line; it goes whole into some partial).
const TRACES: [&str; 3] =
    ["inference-rank-1-minimal.json.gz", "triton-single-kernel.json.gz", "rocm-mi250-train.json.gz"];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/tally-trace/tests/fixtures/kineto").join(name)
}

/// A small deterministic random source (xorshift): a layout is one seed,
/// which proptest generates and shrinks.
struct Dice(u64);

impl Dice {
    fn new(seed: u64) -> Self {
        Dice((seed ^ 0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// A number in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// Each of the case's files dealt into one to three files of its form,
/// each record to a random one, in their order: a truncated last line is
/// still the last line of the file that gets it. The encoder writes each
/// compact (v4) file's own context definitions.
fn deal(case: &Case, dice: &mut Dice) -> Vec<CaseFile> {
    let mut dealt = Vec::new();
    for (number, file) in case.files.iter().enumerate() {
        let shares = 1 + dice.below(3);
        let extension = if file.gzip { "jsonl.gz" } else { "jsonl" };
        let mut parts: Vec<CaseFile> = (0..shares)
            .map(|share| CaseFile {
                name: format!("f{number}-{share}.{extension}"),
                records: Vec::new(),
                truncate_last_line: None,
                ..file.clone()
            })
            .collect();
        let mut last = 0;
        for record in &file.records {
            last = dice.below(shares);
            parts[last].records.push(record.clone());
        }
        parts[last].truncate_last_line = file.truncate_last_line;
        dealt.extend(parts);
    }
    dealt
}

/// Writes the files into `dir`, and the traces among them at random
/// places: the paths in the order one process reads them.
fn write(files: &[CaseFile], traces: &[&str], dir: &Path, dice: &mut Dice) -> Vec<PathBuf> {
    let mut paths = Vec::with_capacity(files.len() + traces.len());
    for file in files {
        let path = dir.join(&file.name);
        std::fs::write(&path, file.encode().expect("a case file encodes")).expect("a case file is written");
        paths.push(path);
    }
    for trace in traces {
        let path = dir.join(trace);
        std::fs::copy(fixture(trace), &path).expect("a trace fixture is copied");
        paths.insert(dice.below(paths.len() + 1), path);
    }
    paths
}

/// The files grouped into one to five partials, each file into a random
/// one (a partial may have none), in the order given.
fn group(paths: &[PathBuf], dice: &mut Dice) -> Vec<Vec<PathBuf>> {
    let count = 1 + dice.below(paths.len().clamp(1, 5));
    let mut groups = vec![Vec::new(); count];
    for path in paths {
        groups[dice.below(count)].push(path.clone());
    }
    groups
}

/// The run's import options everywhere: one run ID, so traces split
/// between partials are one run's; one record per launch (`tally account`)
/// or per kernel (`tally breakdown`).
fn import(per_kernel: bool) -> Result<ImportOptions, String> {
    default_import_options(&[], Some(RUN_ID)).map(|mut options| {
        options.created_at_ns = 0;
        options.detail = if per_kernel { Detail::Kernel } else { Detail::Launch };
        options
    })
}

fn options(import: &Result<ImportOptions, String>, labels: bool) -> RunOptions<'_> {
    RunOptions {
        max_record_bytes: tally_artifact::DEFAULT_MAX_RECORD_BYTES,
        import: Some(import),
        keep_labels: labels,
        threads: 1,
        inline_small_inputs: true,
    }
}

/// What `tally account --format json` and `tally breakdown --by iteration
/// --format json` print of a run.
#[derive(Debug, Clone, PartialEq)]
struct Reports {
    account: String,
    breakdown: String,
}

type Outcome = Result<Reports, RunError>;

fn reports(resolve: impl Fn(bool) -> Result<StreamedRun, RunError>) -> Outcome {
    let run = resolve(false)?;
    let account = AccountingReport::of(&run, &account_gpu_time(&run), true);
    let account = serde_json::to_string(&account).expect("a report serializes");
    let run = resolve(true)?;
    let options = BreakdownOptions { rules: CategoryRules::new(), by_iteration: true };
    let breakdown = serde_json::to_string(&breakdown(&run, &options)).expect("a breakdown serializes");
    Ok(Reports { account, breakdown })
}

/// One process reading every file, as `tally account` and `tally
/// breakdown` do.
fn single(paths: &[PathBuf], per_kernel: bool) -> Outcome {
    let import = import(per_kernel);
    reports(|labels| resolve_inputs(open_inputs(paths, None)?, &options(&import, labels), &mut Unwatched))
}

/// The run a partial resolves to, or the rejection of its evidence.
fn resolve(partial: &Partial, labels: bool) -> Result<StreamedRun, RunError> {
    partial.resolve(labels).map_err(|error| match error {
        PartialError::Run(error) => error,
        // Partials in memory were checked when they were made or read.
        other => panic!("a partial in memory reads again: {other}"),
    })
}

fn resolved(partial: &Partial) -> Outcome {
    reports(|labels| resolve(partial, labels))
}

/// One partial per group, made with the single process's options.
fn partials(groups: &[Vec<PathBuf>], per_kernel: bool) -> Result<Vec<Partial>, RunError> {
    let import = import(per_kernel);
    groups
        .iter()
        .map(|group| Partial::of_inputs(open_inputs(group, None)?, &options(&import, true), &mut Unwatched))
        .collect()
}

/// Sometimes the partial's bytes instead of the partial.
fn travel(partial: Partial, dice: &mut Dice) -> Partial {
    if dice.below(3) > 0 {
        return partial;
    }
    let bytes = partial.into_bytes();
    Partial::from_bytes(&bytes, "travelled").expect("a partial's bytes decode")
}

/// The partials merged: partials of one run, their traces imported alike,
/// always merge.
fn join(parts: impl IntoIterator<Item = Partial>) -> Partial {
    merge(parts).expect("partials of one run merge")
}

/// A random binary merge tree over the partials.
fn merge_tree(mut nodes: Vec<Partial>, dice: &mut Dice) -> Partial {
    while nodes.len() > 1 {
        let left = travel(nodes.swap_remove(dice.below(nodes.len())), dice);
        let right = travel(nodes.swap_remove(dice.below(nodes.len())), dice);
        nodes.push(join([left, right]));
    }
    travel(nodes.pop().unwrap_or_default(), dice)
}

/// The rule a rejection broke: the resolver's rule name, or an input's
/// whole message (which names the file and line).
fn rule(error: &RunError) -> String {
    match error {
        RunError::Resolve { error, .. } => error.rule().to_owned(),
        other => other.to_string(),
    }
}

/// An outcome as the law compares it: the reports, or the rule broken.
fn verdict(outcome: &Outcome) -> Result<&Reports, String> {
    outcome.as_ref().map_err(rule)
}

/// The partials split into three consecutive runs, each merged.
fn thirds(parts: &[Partial]) -> [Partial; 3] {
    let third = parts.len().div_ceil(3);
    let chunk = |at: usize| join(parts.iter().skip(at * third).take(third).cloned());
    [chunk(0), chunk(1), chunk(2)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn any_partition_grouping_and_merge_tree_gives_the_single_process_answer(
        spec in arb_case(Kind::Account),
        seed in any::<u64>(),
        traces in proptest::sample::subsequence(TRACES.to_vec(), 0..=2),
        per_kernel in any::<bool>(),
    ) {
        let case = spec.build();
        let mut dice = Dice::new(seed);
        let directory = tempfile::tempdir().expect("a temporary directory");
        let files = deal(&case, &mut dice);
        let paths = write(&files, &traces, directory.path(), &mut dice);
        let expected = single(&paths, per_kernel);
        let groups = group(&paths, &mut dice);
        let parts = match partials(&groups, per_kernel) {
            Ok(parts) => parts,
            Err(error) => {
                // Reading a partial's files fails only where reading them
                // all does, with the same message.
                prop_assert_eq!(verdict(&expected), Err(rule(&error)), "{}", case.note);
                return Ok(());
            }
        };
        let merged = resolved(&merge_tree(parts.clone(), &mut dice));
        if let (Ok(_), Err(error)) = (&expected, &merged) {
            prop_assert!(false, "{}: the merged partial rejects a valid run: {error}", case.note);
        }
        prop_assert_eq!(verdict(&merged), verdict(&expected), "{}: {} groups", case.note, groups.len());
        let [a, b, c] = thirds(&parts);
        let ab = join([a.clone(), b.clone()]);
        let ba = join([b.clone(), a.clone()]);
        let (forward, backward) = (resolved(&ab), resolved(&ba));
        prop_assert_eq!(verdict(&forward), verdict(&backward), "commutative: {}", case.note);
        let left = resolved(&join([ab, c.clone()]));
        let right = resolved(&join([a, join([b, c])]));
        prop_assert_eq!(verdict(&left), verdict(&right), "associative: {}", case.note);
        prop_assert_eq!(verdict(&left), verdict(&expected), "{}", case.note);
    }
}

/// An event's identity: `(session_id, producer_id, event_id)`; `None` for
/// a legacy (v1) record.
fn identity(record: &Value) -> Option<(&Value, &Value, &Value)> {
    let version = record.get("schema_version").and_then(Value::as_u64)?;
    (version >= 2)
        .then(|| (&record["context"]["session_id"], &record["context"]["producer_id"], &record["event_id"]))
}

/// The events delivered once in all the files: `(file, record)`.
fn delivered_once(files: &[CaseFile]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    for (file_number, file) in files.iter().enumerate() {
        for (number, record) in file.records.iter().enumerate() {
            let Some(key) = identity(record) else { continue };
            let count = files
                .iter()
                .flat_map(|file| &file.records)
                .filter(|other| identity(other).is_some_and(|other| other == key))
                .count();
            if count == 1 {
                found.push((file_number, number));
            }
        }
    }
    found
}

/// The two records a conflict names, as `(source, line)`, in order.
fn places(error: &RunError, sources: &[String]) -> Option<[(String, u64); 2]> {
    let RunError::Resolve { error: ResolveError::ConflictingEventIdentity { record, earlier }, .. } = error
    else {
        return None;
    };
    let place = |position: usize| {
        let (file, line) = origin(position);
        (sources[file].clone(), line)
    };
    let mut pair = [place(*record), place(*earlier)];
    pair.sort();
    Some(pair)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// One event of a valid run copied, one field changed, into another
    /// file: the partials reject it as the single process does, naming the
    /// same two original lines (either may be called the earlier).
    #[test]
    fn a_conflicting_redelivery_names_the_same_two_lines(
        spec in arb_case(Kind::Account),
        seed in any::<u64>(),
        pick in any::<Index>(),
        at in any::<Index>(),
    ) {
        let case = spec.build();
        prop_assume!(case.note == "valid run");
        let mut dice = Dice::new(seed);
        let mut files = deal(&case, &mut dice);
        let once = delivered_once(&files);
        prop_assume!(!once.is_empty());
        let (from, record) = once[pick.index(once.len())];
        let mut copy = files[from].records[record].clone();
        match copy.get_mut("metadata").and_then(Value::as_object_mut) {
            Some(metadata) => {
                metadata.insert("law_conflict".into(), json!(1));
            }
            None => copy["metadata"] = json!({"law_conflict": 1}),
        }
        if files.len() == 1 {
            files.push(CaseFile {
                name: "conflict.jsonl".into(),
                records: Vec::new(),
                truncate_last_line: None,
                gzip: false,
                ..files[0].clone()
            });
        }
        let into = (from + 1 + dice.below(files.len() - 1)) % files.len();
        let records = &mut files[into].records;
        records.insert(at.index(records.len() + 1), copy);
        let directory = tempfile::tempdir().expect("a temporary directory");
        let paths = write(&files, &[], directory.path(), &mut dice);
        let names: Vec<String> = paths.iter().map(|path| path.display().to_string()).collect();
        let expected = match single(&paths, false) {
            Err(error) => error,
            Ok(_) => return Err(TestCaseError::fail("the single process accepts a conflicting redelivery")),
        };
        let expected_places = places(&expected, &names);
        prop_assert!(expected_places.is_some(), "the single process: {expected}");
        let Some(expected_places) = expected_places else { return Ok(()) };
        let mut files_named: Vec<&str> = expected_places.iter().map(|(name, _)| name.as_str()).collect();
        files_named.sort_unstable();
        let mut files_used = vec![names[from].as_str(), names[into].as_str()];
        files_used.sort_unstable();
        prop_assert_eq!(files_named, files_used, "the conflict is between the original's and the copy's files");
        let groups = group(&paths, &mut dice);
        let parts = partials(&groups, false).expect("reading without resolving accepts the files");
        let merged = merge_tree(parts, &mut dice);
        let found = resolve(&merged, false).map(|_| ()).expect_err("the merged partial rejects the conflict");
        prop_assert_eq!(rule(&found), rule(&expected));
        prop_assert_eq!(places(&found, merged.sources()), Some(expected_places), "{}", found);
    }
}
