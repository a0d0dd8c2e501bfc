//! tally-distributed: see docs/ARCHITECTURE.md.
