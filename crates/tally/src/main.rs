//! The `tally` command.

fn main() {}
