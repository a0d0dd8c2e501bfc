//! `mpi-account`: a run's GPU-time accounting with each MPI rank reading
//! its share of the files.
//!
//! ```text
//! mpirun -np N mpi-account [--breakdown] [--run-id ID] [--threads N] [--format json] FILES...
//! ```
//!
//! Rank `r` reads `FILES[r::N]` into a partial; the partials are reduced to
//! rank 0 along a binomial tree and merged in rank order, and rank 0 prints
//! what `tally account --format json FILES...` prints (with `--breakdown`,
//! `tally breakdown --format json FILES...`), byte for byte. `--run-id`
//! names the run of imported traces (by default the ID one process derives
//! from all the traces, for which every rank with traces opens every file).
//! Each rank reads its files on `--threads` threads (default 1, as MPI runs
//! a rank per core; 0 for every core). Only the JSON layout is written:
//! the tables are the `tally` command's.
//!
//! Exit status 0 on every rank with the report; 1 on every rank when a
//! rank could not read its files (it prints the file and line) or the run
//! was rejected; 2 for a bad command line. See
//! `tally_distributed::mpi::account`.

use std::path::PathBuf;
use std::process::ExitCode;

use tally_distributed::mpi::account::{AccountRequest, run};

const USAGE: &str =
    "usage: mpirun -np N mpi-account [--breakdown] [--run-id ID] [--threads N] [--format json] FILES...";

fn parse_request() -> Result<AccountRequest, String> {
    let mut request = AccountRequest { threads: 1, ..AccountRequest::default() };
    let mut args = std::env::args().skip(1);
    let mut files_only = false;
    while let Some(arg) = args.next() {
        if files_only || !arg.starts_with("--") {
            request.files.push(PathBuf::from(arg));
            continue;
        }
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--" => files_only = true,
            "--breakdown" => request.breakdown = true,
            "--run-id" => request.run_id = Some(value()?),
            "--threads" => {
                let text = value()?;
                request.threads =
                    text.parse().map_err(|_| format!("--threads {text}: not a number of threads"))?;
            }
            "--format" => match value()?.as_str() {
                "json" => {}
                other => {
                    return Err(format!(
                        "--format {other}: only json is written (the tables are the tally command's)"
                    ));
                }
            },
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if request.files.is_empty() {
        return Err("no FILES given".into());
    }
    Ok(request)
}

fn main() -> ExitCode {
    let request = match parse_request() {
        Ok(request) => request,
        Err(message) => {
            eprintln!("mpi-account: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let Some(universe) = mpi::initialize() else {
        eprintln!("mpi-account: MPI is already initialized");
        return ExitCode::FAILURE;
    };
    if run(&universe.world(), &request) { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
