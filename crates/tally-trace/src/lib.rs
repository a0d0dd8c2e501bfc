//! tally-trace: see docs/ARCHITECTURE.md.
