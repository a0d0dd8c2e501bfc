//! tally-resolve: see docs/ARCHITECTURE.md.
