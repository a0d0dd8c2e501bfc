//! tally-clock: see docs/ARCHITECTURE.md.
