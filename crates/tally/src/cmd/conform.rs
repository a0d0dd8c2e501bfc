//! `tally conform --impl 'CMD ARGS' | --impl-batch 'CMD'`: property-based
//! differential testing of another implementation against tally
//! (tally-conformance does the work; this module parses the flags).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use tally_conformance::corpus::default_corpus_dir;
use tally_conformance::{BatchImplementation, CommandImplementation, Implementation, Kind, Options, check};

use super::Layout;

/// Arguments of `tally conform`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = CONTRACT)]
pub struct Args {
    /// The implementation in the command form: `CMD ARGS`, run once per case
    /// with the input paths appended (or in place of `{}`).
    #[arg(
        long = "impl",
        value_name = "CMD ARGS",
        conflicts_with = "impl_batch",
        required_unless_present = "impl_batch"
    )]
    pub implementation: Option<String>,
    /// The implementation in the batch form: `CMD ARGS`, started once,
    /// one JSON line per case on stdin and stdout.
    #[arg(long, value_name = "CMD ARGS")]
    pub impl_batch: Option<String>,
    /// The kinds to check, comma-separated: account, shares, align.
    #[arg(long, value_delimiter = ',', default_value = "account", value_parser = parse_kind)]
    pub kinds: Vec<Kind>,
    /// Generated cases per kind (after the static corpus).
    #[arg(long, default_value_t = 256)]
    pub cases: u32,
    /// The seed of the generated cases: the same seed, the same cases.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where to write each kind's minimal disagreeing case.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Layout::Table)]
    pub format: Layout,
    /// Seconds an implementation may take for one case.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0, value_parser = parse_seconds)]
    pub timeout: f64,
    /// The static corpus's folder (default: tests/conformance of this
    /// source tree, when present).
    #[arg(long, value_name = "DIR", conflicts_with = "no_corpus")]
    pub corpus: Option<PathBuf>,
    /// Run no static corpus, generated cases only.
    #[arg(long)]
    pub no_corpus: bool,
    /// Stop each kind at its first disagreement (after shrinking it).
    #[arg(long)]
    pub fail_fast: bool,
}

const CONTRACT: &str = "\
The implementation under test:

  Each case is a folder of input artifacts of one run (JSONL: embedded v2/v3
  or compact v4, sometimes gzip, sometimes several rank files, resolved
  together in the order given), plus model.json (kind shares) or
  queries.json (kind align, [{timestamp_ns, from, to}]) beside them.

  Command form (--impl 'CMD ARGS'): runs `CMD ARGS FILE...`; an argument
  `{}` is replaced by the files instead, and `{kind}`, `{model}`, `{queries}`
  inside an argument by the kind and the paths (also in the environment:
  TALLY_CONFORM_KIND, TALLY_CONFORM_MODEL, TALLY_CONFORM_QUERIES). Print the
  answer as JSON on stdout and exit 0, or exit non-zero to reject the input
  (optionally printing {\"error\": \"...\"}).

  Batch form (--impl-batch 'CMD'): started once; per case it reads one line
  {\"kind\", \"inputs\": [paths], \"model\"?, \"queries\"?} on stdin and writes
  one JSON line on stdout: the answer, or {\"error\": \"...\"} to reject.

  Answers by kind:
    account  the accounting object of tests/conformance/README.md
    shares   {\"valid\": true, budget_ns, attributed_ns, unattributed_ns,
             share_count} or {\"valid\": false, rule, message}
    align    {\"answers\": [{covering, value_ns, uncertainty_ns, clock_domain}
             or {covering, error}]}, one per query

  The static corpus runs first, then --cases generated cases per kind. Each
  answer is compared with tally's field by field; the first disagreement of
  each kind is shrunk to a minimal case, written under --out (inputs,
  tally.json, implementation.json, diff.txt, README) and its diff printed.

Exit status: 0 when every case agrees (or both reject it), 1 on any
disagreement, implementation error or timeout, 2 on usage errors.";

fn parse_kind(text: &str) -> Result<Kind, String> {
    Kind::parse(text.trim()).ok_or_else(|| format!("unknown kind {text:?} (account, shares, align)"))
}

fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 => Ok(seconds),
        _ => Err(format!("{text:?} is not a positive number of seconds")),
    }
}

/// Runs the command: exit 0 when all agree, 1 on any disagreement, 2 when
/// the implementation's command or the corpus cannot be used.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let usage = |message: String| {
        eprintln!("tally conform: {message}");
        Ok(ExitCode::from(2))
    };
    let timeout = Duration::from_secs_f64(args.timeout);
    let mut implementation: Box<dyn Implementation> = match (&args.implementation, &args.impl_batch) {
        (Some(line), _) => match CommandImplementation::new(line, timeout) {
            Ok(implementation) => Box::new(implementation),
            Err(error) => return usage(format!("--impl: {error}")),
        },
        (None, Some(line)) => match BatchImplementation::new(line, timeout) {
            Ok(implementation) => Box::new(implementation),
            Err(error) => return usage(format!("--impl-batch: {error}")),
        },
        (None, None) => return usage("give --impl or --impl-batch".into()),
    };
    let corpus = match (&args.corpus, args.no_corpus) {
        (_, true) => None,
        (Some(dir), false) => {
            if !dir.join("manifest.json").is_file() {
                return usage(format!("--corpus {}: no manifest.json there", dir.display()));
            }
            Some(dir.clone())
        }
        (None, false) => default_corpus_dir(),
    };
    let mut kinds = args.kinds.clone();
    kinds.dedup();
    let options = Options {
        kinds,
        cases: args.cases,
        seed: args.seed,
        corpus,
        out: args.out.clone(),
        stop_at_first_disagreement: args.fail_fast,
        ..Options::default()
    };
    let report = match check(implementation.as_mut(), &options) {
        Ok(report) => report,
        Err(error) => {
            eprintln!("tally conform: {error}");
            return Ok(ExitCode::from(2));
        }
    };
    match args.format {
        Layout::Json => println!("{}", serde_json::to_string_pretty(&report.to_json())?),
        Layout::Table => print!("{}", report.table()),
    }
    Ok(if report.all_agree() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
