//! `tally account --format json`: tally-gpu-time's [`AccountingReport`],
//! pretty-printed. The schema lives there (and in tests/conformance/README.md);
//! `--detail` adds `device_detail`.

use std::io::{self, Write};

use tally_gpu_time::{AccountingReport, RunAccounting};
use tally_resolve::ResolvedEvidence;

/// Writes the report, pretty-printed, with a final newline.
pub(crate) fn write(
    out: &mut impl Write,
    graph: &impl ResolvedEvidence,
    accounting: &RunAccounting<'_>,
    detail: bool,
) -> io::Result<()> {
    let report = AccountingReport::of(graph, accounting, detail);
    crate::cmd::output::write_pretty(out, &report)?;
    out.write_all(b"\n")
}
