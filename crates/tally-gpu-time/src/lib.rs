//! tally-gpu-time: see docs/ARCHITECTURE.md.
