//! One module per subcommand, plus what they share.

pub mod account;
pub mod aggregate;
pub mod breakdown;
pub mod conform;
#[cfg(feature = "cuda")]
pub mod cuda_info;
pub mod diff;
pub mod export;
pub mod import;
pub mod input;
pub mod interrupt;
pub mod memory;
pub mod output;
pub mod profile;
pub mod progress;
mod readable;
pub mod shares;
pub mod validate;

/// How a command prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// Aligned text for people.
    #[default]
    Text,
    /// One JSON object.
    Json,
}
