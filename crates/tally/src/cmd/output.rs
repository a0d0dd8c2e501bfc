//! What every command shares about its output: writing to a standard
//! output that may close early (`tally validate FILE | head -1`), and the
//! limits on what it reads, with the flags that raise them.

use std::io::{self, Write};
use std::path::Path;

use anyhow::Context;
use tally_artifact::{ArtifactError, AtomicFile, DEFAULT_MAX_RECORD_BYTES, ErrorKind};
use tally_ingest::{InputError, RunError};
use tally_utils::document::{DEFAULT_MAX_DOCUMENT_BYTES, DocumentError, read_document};

/// serde_json's pretty layout (two spaces a level), with each line's
/// indentation written at once: serde_json's own `PrettyFormatter` writes
/// it two bytes at a time, and indentation is most of a large report's
/// bytes (4.7 MB for the 150 MB bench artifact's accounting, where its
/// writes were a third of the serialization).
#[derive(Debug, Default)]
pub struct Pretty {
    level: usize,
    has_value: bool,
}

impl Pretty {
    fn indent<W: ?Sized + Write>(&self, writer: &mut W) -> io::Result<()> {
        const SPACES: &[u8; 64] = &[b' '; 64];
        let mut left = self.level * 2;
        while left > 0 {
            let step = left.min(SPACES.len());
            writer.write_all(&SPACES[..step])?;
            left -= step;
        }
        Ok(())
    }

    /// A line break and the indentation after it, after a separator.
    fn next_line<W: ?Sized + Write>(&self, writer: &mut W, first: bool) -> io::Result<()> {
        writer.write_all(if first { b"\n" } else { b",\n" })?;
        self.indent(writer)
    }

    /// The start of an array or object, which has no value yet.
    fn open<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        writer.write_all(bracket)
    }

    /// The end of an array or object: its last value's line closed.
    fn close<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            writer.write_all(b"\n")?;
            self.indent(writer)?;
        }
        writer.write_all(bracket)
    }
}

impl serde_json::ser::Formatter for Pretty {
    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open(writer, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        self.next_line(writer, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open(writer, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        self.next_line(writer, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// `value` as serde_json's pretty JSON, through [`Pretty`].
pub fn write_pretty<T: serde::Serialize + ?Sized>(out: &mut impl Write, value: &T) -> io::Result<()> {
    let mut serializer = serde_json::Serializer::with_formatter(out, Pretty::default());
    value.serialize(&mut serializer).map_err(io::Error::other)
}

/// Writes a report to standard output, buffered and flushed: `value` as
/// pretty JSON with a final newline when `json`, else what `table` writes.
pub fn write_report<T: serde::Serialize>(
    value: &T,
    json: bool,
    table: impl FnOnce(&mut io::BufWriter<io::StdoutLock<'static>>) -> io::Result<()>,
) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    if json {
        write_pretty(&mut out, value)?;
        out.write_all(b"\n")?;
    } else {
        table(&mut out)?;
    }
    out.flush()
}

/// Writes `text` to standard output and flushes it. A reader that closed
/// the pipe ends the command quietly: `main` treats the `BrokenPipe` error
/// this returns as success, as Unix tools do.
pub fn print(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Whether an error is standard output closed under the command (directly,
/// or as the cause of a wrapped error).
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<io::Error>().is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// The limits on what a command reads, as flags.
#[derive(Debug, Clone, clap::Args)]
pub struct LimitArgs {
    /// The longest artifact line (record) accepted, in bytes (suffixes K, M,
    /// G are powers of 1024): input without line ends stops there instead of
    /// taking the machine's memory. A line is parsed into up to about 40
    /// times its size: at the default no input takes more than about 400 MB.
    #[arg(long, value_name = "BYTES", default_value = "8M", value_parser = parse_size)]
    pub max_record_bytes: usize,
    /// The largest JSON document read whole (a share model, a request, a
    /// profile), in bytes (suffixes K, M, G); parsed into up to about 20
    /// times its size.
    #[arg(long, value_name = "BYTES", default_value = "16M", value_parser = parse_size)]
    pub max_document_bytes: usize,
}

impl Default for LimitArgs {
    fn default() -> Self {
        Self {
            max_record_bytes: DEFAULT_MAX_RECORD_BYTES,
            max_document_bytes: DEFAULT_MAX_DOCUMENT_BYTES as usize,
        }
    }
}

/// Reads a JSON document whole (a path, or `-` for standard input), at most
/// `limit` bytes, as text. The error names the file and, for the limit, the
/// flag that raises it.
pub fn read_document_text(path: &Path, limit: usize) -> Result<String, String> {
    let shown = path.display();
    let bytes = if path.as_os_str() == "-" {
        read_document(io::stdin().lock(), limit as u64)
    } else {
        let file = std::fs::File::open(path).map_err(|error| format!("{shown}: cannot read: {error}"))?;
        read_document(file, limit as u64)
    };
    let bytes = bytes.map_err(|error| match error {
        DocumentError::TooLarge { .. } => format!("{shown}: {error} (raise it with --max-document-bytes)"),
        DocumentError::Io(_) => format!("{shown}: {error}"),
    })?;
    String::from_utf8(bytes)
        .map_err(|error| format!("{shown}: not UTF-8 text (byte {})", error.utf8_error().valid_up_to()))
}

/// `1048576`, `64K`, `256M`, `2G` (powers of 1024; `KiB`-style suffixes too).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let trimmed = text.trim();
    let digits_end = trimmed.find(|c: char| !c.is_ascii_digit()).unwrap_or(trimmed.len());
    let (digits, suffix) = trimmed.split_at(digits_end);
    let number: u64 =
        digits.parse().map_err(|_| format!("'{text}' is not a size (e.g. 1048576, 64K, 256M)"))?;
    let shift = match suffix.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return Err(format!("'{text}': the size suffix must be K, M or G")),
    };
    let bytes = number.checked_mul(1 << shift).filter(|&bytes| bytes > 0);
    bytes
        .and_then(|bytes| usize::try_from(bytes).ok())
        .ok_or_else(|| format!("'{text}' is not a size between 1 byte and this machine's address space"))
}

/// Writes a file the way every command writes one: through
/// `tally_artifact::AtomicFile` (a temporary beside `target`, renamed over
/// it when `write` succeeds), registered with [`super::interrupt`] so that
/// SIGINT or SIGTERM removes it.
pub fn write_atomically<T>(
    target: &Path,
    write: impl FnOnce(&mut AtomicFile) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    target.file_name().with_context(|| format!("{}: the output has no file name", target.display()))?;
    let mut file = AtomicFile::create(target).with_context(|| format!("creating {}", target.display()))?;
    let _pending = super::interrupt::Pending::new(file.temporary_path());
    let value = write(&mut file)?;
    file.commit().with_context(|| format!("writing {}", target.display()))?;
    Ok(value)
}

/// A trace error as a command prints it: where the event limit was hit
/// (tally-trace's `ValueTooLarge`, which names no flag), it also says which
/// flag raises it.
pub fn trace_message(message: String) -> String {
    if message.contains("than the event limit of") && !message.contains("--max-event-bytes") {
        format!("{message} (raise it with --max-event-bytes)")
    } else {
        message
    }
}

/// A run's rejection as a command prints it: an artifact's or a trace's,
/// with the flag that raises a limit it hit; an input that cannot be
/// opened as its opener words it.
pub fn run_message(error: &RunError) -> String {
    match error {
        RunError::Artifact(error) => artifact_message(error),
        RunError::Input(InputError::Open(error)) => error.to_string(),
        other => trace_message(other.to_string()),
    }
}

/// An artifact error as a command prints it: where a limit was hit, it also
/// says which flag raises it.
pub fn artifact_message(error: &ArtifactError) -> String {
    match error.kind() {
        ErrorKind::Limit => format!("{error} (raise it with --max-record-bytes)"),
        _ => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    /// Any JSON value: scalars, and arrays and objects nested a few deep,
    /// empty ones included.
    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter_map("finite", |float| serde_json::Number::from_f64(float).map(Value::Number)),
            ".{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map(".{0,6}", inner, 0..5)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// [`Pretty`] lays out what serde_json's pretty printer does.
        #[test]
        fn pretty_is_serde_jsons_pretty(value in json()) {
            let mut ours = Vec::new();
            write_pretty(&mut ours, &value).expect("writing to memory");
            prop_assert_eq!(String::from_utf8(ours).expect("JSON"), serde_json::to_string_pretty(&value).expect("JSON"));
        }
    }

    use super::*;

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("256m"), Ok(256 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        for bad in ["", "0", "-1", "12X", "M", "99999999999G"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}
