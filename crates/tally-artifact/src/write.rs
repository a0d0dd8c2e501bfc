//! Writing artifacts byte for byte as stormlog does, atomically.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use tally_core::{
    CONTEXT_REFERENCE_SCHEMA_VERSION, CorrelationContext, CorrelationEvent, EventType, InferenceRecord,
    RecordMember,
};

use crate::decode::CONTEXT_EVENT_TYPE;
use crate::error::{ArtifactError, ErrorKind};
use crate::pyjson::{Separators, write_map, write_record_member, write_str, write_u64};

/// How events carry their context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Form {
    /// Each event embeds its context (schema 2, or 3 for an activity with
    /// `metadata.intervals`), as `event.to_record()` in stormlog.
    #[default]
    Embedded,
    /// Schema 4: each distinct context written once as an `infer.context`
    /// row, events referring to it by `context_id`, as stormlog's
    /// `CorrelationRecordEncoder` writes. An activity whose
    /// `metadata.intervals` is `null` stays embedded (v4 cannot carry it).
    Compact,
}

/// The `context_id` stormlog generates for a context: `ctx-` and the first
/// 16 hex digits of the SHA-256 of its JSON (sorted keys, compact
/// separators, ASCII only).
///
/// ```
/// use tally_core::{ClockKind, CollectionMode, CorrelationContext, NonEmptyString, Provenance};
/// let text = |value: &str| NonEmptyString::new(value).unwrap();
/// let context = CorrelationContext::new(text("r"), text("s"), text("p"), text("t"), text("host"),
///     ClockKind::Monotonic, CollectionMode::Active, Provenance::Observed);
/// let id = tally_artifact::context_id(&context);
/// assert!(id.starts_with("ctx-") && id.len() == 20);
/// ```
pub fn context_id(context: &CorrelationContext) -> String {
    let mut canonical = Vec::new();
    crate::pyjson::write_value(&mut canonical, &context.to_json(), Separators::COMPACT);
    let digest = Sha256::digest(&canonical);
    // 16 hex digits are the first 8 bytes of the digest.
    let hex: String = digest[..8].iter().map(|byte| format!("{byte:02x}")).collect();
    format!("ctx-{hex}")
}

/// Why a record cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EncodeError(String);

/// Turns records into artifact lines, keeping the context IDs it has
/// defined (for [`Form::Compact`]). Each line is `json.dumps(row,
/// sort_keys=True)` plus `\n`, as stormlog writes it.
///
/// ```
/// use tally_artifact::{ArtifactEncoder, Form};
/// let record = tally_core::parse_inference_record(serde_json::json!({
///     "schema_version": 1, "event_type": "infer.session", "b": [1.5, "é"], "a": null
/// })).unwrap();
/// let mut out = Vec::new();
/// ArtifactEncoder::new(Form::Compact).encode(&record, &mut out).unwrap();
/// assert_eq!(out, b"{\"a\": null, \"b\": [1.5, \"\\u00e9\"], \"event_type\": \"infer.session\", \"schema_version\": 1}\n");
/// ```
#[derive(Debug, Default)]
pub struct ArtifactEncoder {
    form: Form,
    /// Defined IDs by context pointer (the common, cheap hit) ...
    by_pointer: HashMap<usize, (Arc<CorrelationContext>, Arc<str>)>,
    /// ... and by value.
    by_value: HashMap<Arc<CorrelationContext>, Arc<str>>,
    by_id: HashMap<Arc<str>, Arc<CorrelationContext>>,
    /// The JSON of each context written embedded, by pointer: events share
    /// a few contexts, and building the JSON of one for every line cost
    /// more than writing the rest of the line.
    embedded: HashMap<usize, (Arc<CorrelationContext>, Vec<u8>)>,
}

impl ArtifactEncoder {
    /// An encoder for `form` that has defined no context yet.
    pub fn new(form: Form) -> Self {
        Self { form, ..Self::default() }
    }

    /// The form it writes.
    pub fn form(&self) -> Form {
        self.form
    }

    /// Appends the lines of one record to `out`: for a compact event whose
    /// context is new, its definition line first.
    pub fn encode(&mut self, record: &InferenceRecord, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        match record {
            InferenceRecord::Legacy(legacy) => {
                let raw = legacy.raw();
                let transport = raw.contains_key("context_id")
                    || legacy.event_type() == CONTEXT_EVENT_TYPE
                    || raw.get("schema_version").is_some_and(|version| {
                        tally_utils::json_eq::python_json_eq(
                            version,
                            &Value::from(CONTEXT_REFERENCE_SCHEMA_VERSION),
                        )
                    });
                if transport {
                    // It would not read back; stormlog's encoder refuses it too.
                    return Err(EncodeError("writer accepts embedded semantic records only".into()));
                }
                write_line(out, raw);
            }
            InferenceRecord::Event(event) if self.form == Form::Embedded || stays_embedded(event) => {
                let context = self.embedded_json(event.context_arc());
                write_event_line(out, event, ContextMember::Embedded(context));
            }
            InferenceRecord::Event(event) => {
                let id = self.define(event.context_arc(), out)?;
                write_event_line(out, event, ContextMember::Reference(&id));
            }
        }
        Ok(())
    }

    /// The JSON of `context` as an embedded member, made once per context.
    fn embedded_json(&mut self, context: &Arc<CorrelationContext>) -> &[u8] {
        let (_, json) = self.embedded.entry(Arc::as_ptr(context) as usize).or_insert_with(|| {
            let mut json = Vec::new();
            crate::pyjson::write_value(&mut json, &context.to_json(), Separators::DEFAULT);
            // Holding the Arc keeps the pointer from being reused by another context.
            (Arc::clone(context), json)
        });
        json
    }

    /// The ID of `context`, writing its definition first if it is new.
    fn define(
        &mut self,
        context: &Arc<CorrelationContext>,
        out: &mut Vec<u8>,
    ) -> Result<Arc<str>, EncodeError> {
        let pointer = Arc::as_ptr(context) as usize;
        if let Some((_, id)) = self.by_pointer.get(&pointer) {
            return Ok(Arc::clone(id));
        }
        let id = match self.by_value.get(context) {
            Some(id) => Arc::clone(id),
            None => {
                let id: Arc<str> = context_id(context).into();
                if self.by_id.get(&id).is_some_and(|known| **known != **context) {
                    return Err(EncodeError(format!("conflicting context definition: {id}")));
                }
                let mut row = Map::new();
                row.insert("schema_version".into(), Value::from(CONTEXT_REFERENCE_SCHEMA_VERSION));
                row.insert("event_type".into(), Value::from(CONTEXT_EVENT_TYPE));
                row.insert("context_id".into(), Value::String(id.to_string()));
                row.insert("context".into(), context.to_json());
                write_line(out, &row);
                self.by_value.insert(Arc::clone(context), Arc::clone(&id));
                self.by_id.insert(Arc::clone(&id), Arc::clone(context));
                id
            }
        };
        // Holding the Arc keeps the pointer from being reused by another context.
        self.by_pointer.insert(pointer, (Arc::clone(context), Arc::clone(&id)));
        Ok(id)
    }
}

/// Whether the compact form cannot carry `event`, so it is written
/// embedded: an activity naming `intervals` without a value (stormlog's
/// `_null_intervals`; v4 could not express it).
pub fn stays_embedded(event: &CorrelationEvent) -> bool {
    event.event_type() == EventType::ActivityRef && event.metadata().get("intervals") == Some(&Value::Null)
}

/// How an event line carries its context.
enum ContextMember<'a> {
    /// The context's JSON under `context`, the event's own schema version.
    Embedded(&'a [u8]),
    /// Its ID under `context_id`, schema version 4.
    Reference(&'a str),
}

/// Writes an event's line as [`write_line`] writes its record map, member by
/// member straight from the event: the members come in the order of their
/// keys, and `context_id` sorts where `context` does.
fn write_event_line(out: &mut Vec<u8>, event: &CorrelationEvent, context: ContextMember<'_>) {
    let separators = Separators::DEFAULT;
    out.push(b'{');
    let mut first = true;
    event.for_each_record_member(|name, member| {
        if !first {
            out.extend_from_slice(separators.item());
        }
        first = false;
        let name = match (member, &context) {
            (RecordMember::Context(_), ContextMember::Reference(_)) => "context_id",
            _ => name,
        };
        // The record's keys are plain ASCII names: nothing to escape.
        out.push(b'"');
        out.extend_from_slice(name.as_bytes());
        out.push(b'"');
        out.extend_from_slice(separators.key());
        match (member, &context) {
            (RecordMember::Context(_), ContextMember::Embedded(json)) => out.extend_from_slice(json),
            (RecordMember::Context(_), ContextMember::Reference(id)) => write_str(out, id),
            (_, ContextMember::Reference(_)) if name == "schema_version" => {
                write_u64(out, u64::from(CONTEXT_REFERENCE_SCHEMA_VERSION));
            }
            (member, _) => write_record_member(out, member, separators),
        }
    });
    out.extend_from_slice(b"}\n");
}

fn write_line(out: &mut Vec<u8>, row: &Map<String, Value>) {
    write_map(out, row, Separators::DEFAULT);
    out.push(b'\n');
}

/// The whole artifact text of `records` in `form`.
pub fn encode_artifact(records: &[InferenceRecord], form: Form) -> Result<Vec<u8>, EncodeError> {
    let mut encoder = ArtifactEncoder::new(form);
    let mut out = Vec::new();
    for record in records {
        encoder.encode(record, &mut out)?;
    }
    Ok(out)
}

/// Writes `records` to `path` in `form`, atomically: the text goes to a
/// temporary file beside `path`, which is synced and renamed over it only
/// when complete, so a crash never leaves half an artifact. `-` writes to
/// standard output.
pub fn write_artifact(path: &Path, records: &[InferenceRecord], form: Form) -> Result<(), ArtifactError> {
    let mut writer = ArtifactWriter::create(path, form)?;
    for record in records {
        writer.write(record)?;
    }
    writer.finish()
}

static TEMPORARY_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A file written beside its target (`.NAME.PID-TIME-N.tmp`) and moved
/// into place only when [`AtomicFile::commit`] succeeds: a failure, a
/// crash or an interruption never leaves half a file at the target, and a
/// pre-existing target stays as it was. Dropping it uncommitted removes the
/// temporary file; creating one removes the temporaries of the same target
/// that a process no longer running left behind (killed before it could
/// clean up). Every tally command that writes a file writes it this way.
///
/// ```
/// use std::io::Write;
/// let dir = tempfile::tempdir()?;
/// let target = dir.path().join("out.json");
/// let mut file = tally_artifact::AtomicFile::create(&target)?;
/// file.write_all(b"{}")?;
/// assert!(!target.exists());
/// file.commit()?;
/// assert_eq!(std::fs::read(&target)?, b"{}");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct AtomicFile {
    file: Option<BufWriter<File>>,
    temporary: PathBuf,
    target: PathBuf,
}

impl AtomicFile {
    /// Starts writing `target`.
    pub fn create(target: &Path) -> io::Result<Self> {
        remove_stale_temporaries(target);
        let (file, temporary) = create_temporary(target)?;
        Ok(Self {
            file: Some(BufWriter::with_capacity(PASS_BYTES, file)),
            temporary,
            target: target.to_path_buf(),
        })
    }

    /// Where the text goes until it is committed (for a caller that must
    /// remove it should the process be interrupted).
    pub fn temporary_path(&self) -> &Path {
        &self.temporary
    }

    /// Flushes, syncs and renames the file over its target.
    pub fn commit(mut self) -> io::Result<()> {
        let Some(file) = self.file.take() else { return Ok(()) };
        let result = finish_file(file, &self.temporary, &self.target);
        if result.is_err() {
            let _ = fs::remove_file(&self.temporary);
        }
        result
    }
}

impl Write for AtomicFile {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self.file.as_mut() {
            Some(file) => file.write(bytes),
            None => Err(io::Error::other("the file was committed")),
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self.file.as_mut() {
            Some(file) => file.write_all(bytes),
            None => Err(io::Error::other("the file was committed")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().map_or(Ok(()), Write::flush)
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.temporary);
        }
    }
}

enum Sink {
    File(AtomicFile),
    /// Standard output, spooled through an unnamed temporary file until
    /// [`ArtifactWriter::finish`], so that a failure half-way writes
    /// nothing to it (the artifact is as large as the disk allows, not the
    /// memory).
    Stdout(BufWriter<File>),
}

/// How many bytes of encoded lines an [`ArtifactWriter`] gathers before
/// handing them to its file, and the size of the file's own buffer: a
/// write as large as that buffer goes straight through it.
const PASS_BYTES: usize = 1 << 20;

/// Writes an artifact record by record, atomically (see
/// [`write_artifact`] and [`AtomicFile`]). Dropping it without
/// [`ArtifactWriter::finish`] removes the temporary file and leaves `path`
/// as it was. For `-` the records are spooled and reach standard output
/// only when `finish` is called: nothing, not half an artifact, is written
/// there for an input that fails.
pub struct ArtifactWriter {
    name: String,
    sink: Option<Sink>,
    encoder: ArtifactEncoder,
    buffer: Vec<u8>,
    records: u64,
}

impl ArtifactWriter {
    /// Starts writing `path` (or standard output for `-`).
    pub fn create(path: &Path, form: Form) -> Result<Self, ArtifactError> {
        let name = path.display().to_string();
        let sink = if path.as_os_str() == "-" {
            let spool = tempfile::tempfile().map_err(|error| ArtifactError::io(&name, &error))?;
            Sink::Stdout(BufWriter::with_capacity(PASS_BYTES, spool))
        } else {
            Sink::File(AtomicFile::create(path).map_err(|error| ArtifactError::io(&name, &error))?)
        };
        Ok(Self {
            name,
            sink: Some(sink),
            encoder: ArtifactEncoder::new(form),
            // Room past the mark for the line that crosses it, so the
            // buffer is not grown (and copied) for it.
            buffer: Vec::with_capacity(PASS_BYTES + (64 << 10)),
            records: 0,
        })
    }

    /// The temporary file the records go to until [`ArtifactWriter::finish`]
    /// (`None` for standard output).
    pub fn temporary_path(&self) -> Option<&Path> {
        match &self.sink {
            Some(Sink::File(file)) => Some(file.temporary_path()),
            _ => None,
        }
    }

    /// Appends one record.
    pub fn write(&mut self, record: &InferenceRecord) -> Result<(), ArtifactError> {
        let written = self.buffer.len();
        self.records += 1;
        if let Err(error) = self.encoder.encode(record, &mut self.buffer) {
            self.buffer.truncate(written);
            return Err(ArtifactError::whole(
                &self.name,
                ErrorKind::Unwritable,
                format!("record {}: {error}", self.records),
            ));
        }
        if self.buffer.len() >= PASS_BYTES { self.pass_on() } else { Ok(()) }
    }

    /// Hands the encoded lines to the sink. Lines are encoded into this one
    /// buffer and handed on a megabyte at a time, which the sink's own
    /// buffer passes straight to the file: a copy into it per record was a
    /// tenth of an import's time.
    fn pass_on(&mut self) -> Result<(), ArtifactError> {
        let result = match self.sink.as_mut() {
            Some(Sink::File(file)) => file.write_all(&self.buffer),
            Some(Sink::Stdout(out)) => out.write_all(&self.buffer),
            None => Ok(()),
        };
        self.buffer.clear();
        result.map_err(|error| ArtifactError::io(&self.name, &error))
    }

    /// Flushes, syncs and moves the file into place.
    pub fn finish(mut self) -> Result<(), ArtifactError> {
        self.pass_on()?;
        let name = self.name.clone();
        let io_error = |error: io::Error| ArtifactError::io(&name, &error);
        match self.sink.take() {
            None => Ok(()),
            Some(Sink::Stdout(spool)) => {
                let mut spool = spool.into_inner().map_err(|error| io_error(error.into_error()))?;
                spool.seek(io::SeekFrom::Start(0)).map_err(io_error)?;
                let mut out = io::stdout().lock();
                io::copy(&mut spool, &mut out).map_err(io_error)?;
                out.flush().map_err(io_error)
            }
            Some(Sink::File(file)) => file.commit().map_err(io_error),
        }
    }
}

/// The temporaries of `target` (`.NAME.PID-…tmp`) whose process is gone:
/// left by a writer killed before it could remove them. Only Linux can tell
/// a live process (`/proc/PID`); elsewhere nothing is removed.
fn remove_stale_temporaries(target: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let directory = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let base = target.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!(".{base}.");
    let Ok(entries) = fs::read_dir(&directory) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&prefix).filter(|rest| rest.ends_with(".tmp")) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|pid| pid.parse::<u32>().ok()) else { continue };
        // Only our own naming, with all three parts, counts as ours.
        if rest.split('-').count() != 3 || pid == std::process::id() {
            continue;
        }
        if !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// A new file beside `target`, created with the default mode (0o666 less
/// the umask, as stormlog's writer does; a `tempfile` file would be 0o600).
fn create_temporary(target: &Path) -> io::Result<(File, PathBuf)> {
    let directory = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let base = target.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|elapsed| elapsed.as_nanos()).unwrap_or(0);
    loop {
        let serial = TEMPORARY_COUNTER.fetch_add(1, Ordering::Relaxed);
        let temporary = directory.join(format!(".{base}.{}-{nanos:x}-{serial}.tmp", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&temporary) {
            Ok(file) => return Ok((file, temporary)),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(error),
        }
    }
}

fn finish_file(file: BufWriter<File>, temporary: &Path, target: &Path) -> io::Result<()> {
    let file = file.into_inner().map_err(|error| error.into_error())?;
    file.sync_all()?;
    // An existing artifact keeps its permissions, as with stormlog.
    if let Ok(metadata) = fs::metadata(target) {
        fs::set_permissions(temporary, metadata.permissions())?;
    }
    drop(file);
    fs::rename(temporary, target)?;
    if let Some(parent) = target.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        // Make the rename itself durable; not all filesystems allow it.
        if let Ok(directory) = File::open(parent) {
            let _ = directory.sync_all();
        }
    }
    Ok(())
}
