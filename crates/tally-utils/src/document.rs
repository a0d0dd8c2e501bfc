//! The bound on a JSON document read whole (a share model, an aggregation
//! request, a profile, a store manifest): what the readers of every crate
//! use, so that `/dev/zero` or a runaway file given as one is rejected at
//! the limit instead of taking the machine's memory.

use std::io::Read;

/// The largest JSON document read whole by default: 16 MiB. Models,
/// requests, profiles and manifests are kilobytes; the bound is for input
/// that is not one of them. A document is parsed whole, into up to about
/// 19 times its text (a 60 MiB array of `0,`s took 1.1 GB), so 16 MiB keeps
/// the worst under about 330 MB.
pub const DEFAULT_MAX_DOCUMENT_BYTES: u64 = 16 << 20;

/// Why a document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// Reading failed.
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// The document is longer than the limit.
    #[error("the document is longer than the limit of {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
}

/// Reads all of `reader`, at most `limit` bytes: one byte more is
/// [`DocumentError::TooLarge`], and nothing past it is read.
///
/// ```
/// use tally_utils::document::{DocumentError, read_document};
/// assert_eq!(read_document(&b"{}"[..], 2).unwrap(), b"{}");
/// assert!(matches!(read_document(std::io::repeat(0), 1 << 20), Err(DocumentError::TooLarge { .. })));
/// ```
pub fn read_document(reader: impl Read, limit: u64) -> Result<Vec<u8>, DocumentError> {
    let mut bytes = Vec::new();
    reader.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(DocumentError::TooLarge { limit });
    }
    Ok(bytes)
}
