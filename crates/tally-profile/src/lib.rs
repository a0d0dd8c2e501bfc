//! tally-profile: see docs/ARCHITECTURE.md.
