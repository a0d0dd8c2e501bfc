//! A run's answer does not depend on how its files are read: in any order
//! (for a valid run; a rejected run is rejected in every order, though the
//! first broken line found may differ) and on any number of decoding
//! threads (then exactly, errors included), on tally-conformance's
//! generated rank sets and cases.

use std::path::PathBuf;

use proptest::prelude::*;
use tally_conformance::Kind;
use tally_conformance::generate::arb_case;
use tally_gpu_time::{AccountingReport, account_gpu_time};
use tally_ingest::{RunOptions, Unwatched, default_import_options, open_inputs, resolve_inputs};

/// The run's accounting in full, or the rejection's message.
fn resolve(paths: &[PathBuf], threads: usize) -> Result<String, String> {
    let inputs = open_inputs(paths, None).map_err(|error| error.to_string())?;
    let traces: Vec<&tally_trace::OpenedInput> = inputs.iter().filter(|input| input.is_trace()).collect();
    let import = default_import_options(&traces, None).map(|mut options| {
        options.threads = threads;
        options
    });
    let options = RunOptions {
        max_record_bytes: tally_artifact::DEFAULT_MAX_RECORD_BYTES,
        import: Some(&import),
        keep_labels: false,
        threads,
        // The pipeline, with its decoding threads, even for small files.
        inline_small_inputs: false,
    };
    let run = resolve_inputs(inputs, &options, &mut Unwatched).map_err(|error| error.to_string())?;
    let report = AccountingReport::of(&run, &account_gpu_time(&run), true);
    Ok(format!("{report:?}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn file_order_and_threads_do_not_change_the_answer(
        spec in arb_case(Kind::Account),
        rotation in 0usize..8,
        threads in 1usize..5,
    ) {
        let case = spec.build();
        let directory = tempfile::tempdir().expect("temporary directory");
        let inputs = case.write(directory.path()).expect("the case is written");
        let paths = inputs.inputs.clone();
        let reference = resolve(&paths, 1);
        prop_assert_eq!(&resolve(&paths, threads), &reference, "{}", case.note);
        let mut turned = paths.clone();
        let turn = rotation % turned.len().max(1);
        turned.rotate_left(turn);
        turned.reverse();
        match (&reference, resolve(&turned, threads)) {
            (Ok(expected), Ok(found)) => prop_assert_eq!(expected, &found, "{}", case.note),
            (Err(_), Err(_)) => {}
            (expected, found) => prop_assert!(false, "{}: in order {expected:?}, turned {found:?}", case.note),
        }
    }
}
