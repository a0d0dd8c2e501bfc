//! tally-artifact: see docs/ARCHITECTURE.md.
