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
pub mod partial;
pub mod profile;
pub mod progress;
mod readable;
pub mod report;
pub mod shares;
pub mod validate;

/// How a command that prints tables prints its result (`account`,
/// `breakdown`, `shares`, `diff`, `profile`, `aggregate`, `conform`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Layout {
    /// Readable tables for people.
    #[default]
    #[value(alias = "text")]
    Table,
    /// One JSON object; integers stay integers.
    Json,
}

/// How a command that prints prose prints its result (`validate`,
/// `cuda-info`): its own value names, `text` and `json`, which scripts
/// already pass, so it stays apart from [`Layout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// Aligned text for people.
    #[default]
    Text,
    /// One JSON object.
    Json,
}
