//! The model footprint read from the `.onnx` file itself: every initializer
//! (and constant) tensor with its type, shape, size and where its bytes are.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use tally_profile::profile::{DeploymentArtifact, ModelFootprintMeasurement, ModelFootprintReadings};

use crate::dtype::DataType;
use crate::wire::{Wire, WireError, WireResult, WireType};

/// Subgraphs (the bodies of `If`, `Loop`, `Scan`) nest at most this deep;
/// protobuf's own default recursion limit is 100.
const MAX_GRAPH_DEPTH: usize = 64;
/// Names and external-data entries longer than this are cut (never in a
/// valid model; the limit bounds memory on a damaged one).
const MAX_TEXT: usize = 64 * 1024;
/// A tensor has at most this many dimensions.
const MAX_DIMS: usize = 1024;

/// The model file could not be read as an ONNX model.
#[derive(Debug, thiserror::Error)]
pub enum ModelReadError {
    /// The file (or an external data file) could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The protobuf data ends early, or a length runs past its message.
    #[error("{path}: not a valid ONNX model: data truncated at byte {offset}")]
    Truncated {
        /// The model file.
        path: PathBuf,
        /// Where.
        offset: u64,
    },
    /// The bytes are not valid protobuf, or not a valid ONNX structure.
    #[error("{path}: not a valid ONNX model: {what} at byte {offset}")]
    Malformed {
        /// The model file.
        path: PathBuf,
        /// Where.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// The model has no graph.
    #[error("{path}: not a valid ONNX model: ModelProto has no graph")]
    NoGraph {
        /// The model file.
        path: PathBuf,
    },
    /// A tensor's bytes were asked for but are not stored as raw bytes.
    #[error("tensor '{name}': {reason}")]
    TensorData {
        /// The tensor.
        name: String,
        /// Why its bytes cannot be returned.
        reason: String,
    },
}

impl ModelReadError {
    fn from_wire(path: &Path, error: WireError) -> Self {
        match error {
            WireError::Io(source) => ModelReadError::Io { path: path.to_path_buf(), source },
            WireError::Truncated { offset } => ModelReadError::Truncated { path: path.to_path_buf(), offset },
            WireError::Malformed { offset, what } => {
                ModelReadError::Malformed { path: path.to_path_buf(), offset, what }
            }
        }
    }
}

/// Where a tensor's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    /// `raw_data` inside the model file, at this byte range.
    Raw {
        /// Offset of the first byte in the model file.
        offset: u64,
        /// Number of bytes.
        length: u64,
    },
    /// The typed repeated fields (`float_data`, `int64_data`, ...) or
    /// `string_data` inside the model file.
    Typed,
    /// An external data file (`data_location: EXTERNAL`).
    External {
        /// The file: `location` relative to the model's directory.
        path: PathBuf,
        /// The `location` entry as written.
        location: String,
        /// The `offset` entry (0 when absent).
        offset: u64,
        /// The `length` entry, when present.
        length: Option<u64>,
    },
}

/// Whether a tensor is a graph initializer or a constant held in a node
/// attribute (a `Constant` node's value, a `ConstantOfShape` fill value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorRole {
    /// `GraphProto.initializer` or `sparse_initializer`: a parameter.
    Initializer,
    /// A tensor-valued node attribute: counted as a buffer.
    Constant,
}

/// One tensor stored in the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// The tensor's name (empty for unnamed attribute tensors).
    pub name: String,
    /// Element type.
    pub data_type: DataType,
    /// Shape; for a sparse tensor the dense shape.
    pub dims: Vec<u64>,
    /// Stored elements: the product of `dims`, or for a sparse tensor the
    /// number of stored (non-default) values.
    pub elements: u64,
    /// Bytes of the stored data: packed element size for fixed-size types,
    /// the string lengths for `STRING`, plus the indices for a sparse tensor;
    /// `None` for a type without a known size.
    pub bytes: Option<u64>,
    /// Where the data is (for a sparse tensor, where its values are).
    pub storage: Storage,
    /// Initializer or constant.
    pub role: TensorRole,
    /// Stored in sparse form.
    pub sparse: bool,
    /// Belongs to a subgraph (a control-flow body), not the main graph.
    pub in_subgraph: bool,
}

/// What an `.onnx` file holds, read without ONNX Runtime.
///
/// ```no_run
/// use tally_onnx::ModelInfo;
/// let info = ModelInfo::read("model.onnx")?;
/// println!("{} parameters in {} bytes", info.parameter_count(), info.parameter_bytes().unwrap_or(0));
/// for file in info.external_data_files() {
///     println!("external data: {}", file.display());
/// }
/// # Ok::<(), tally_onnx::ModelReadError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    path: PathBuf,
    ir_version: Option<u64>,
    producer_name: Option<String>,
    graph_name: Option<String>,
    tensors: Vec<TensorInfo>,
}

#[derive(Default)]
struct RawTensor {
    name: String,
    data_type: i64,
    dims: Vec<u64>,
    raw: Option<(u64, u64)>,
    string_bytes: u64,
    external: Vec<(String, String)>,
    data_location: u64,
}

struct Parser {
    directory: PathBuf,
    tensors: Vec<TensorInfo>,
}

impl ModelInfo {
    /// Reads the model's structure from `path`, streaming: tensor payloads
    /// are skipped, not loaded.
    pub fn read(path: impl AsRef<Path>) -> Result<Self, ModelReadError> {
        let path = path.as_ref();
        let io_error = |source| ModelReadError::Io { path: path.to_path_buf(), source };
        let file = File::open(path).map_err(io_error)?;
        let length = file.metadata().map_err(io_error)?.len();
        let directory = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut parser = Parser { directory, tensors: Vec::new() };
        let mut wire = Wire::new(BufReader::with_capacity(64 * 1024, file));
        let mut info = ModelInfo {
            path: path.to_path_buf(),
            ir_version: None,
            producer_name: None,
            graph_name: None,
            tensors: Vec::new(),
        };
        let mut saw_graph = false;
        let result: WireResult<()> = (|| {
            while wire.pos() < length {
                let (field, wire_type) = wire.key(length)?;
                match (field, wire_type) {
                    (1, WireType::Varint) => info.ir_version = Some(wire.varint(length)?),
                    (2, WireType::Len) => info.producer_name = Some(wire.string(length, MAX_TEXT)?),
                    (7, WireType::Len) => {
                        let end = wire.len_end(length)?;
                        info.graph_name = parser.graph(&mut wire, end, 0)?;
                        saw_graph = true;
                    }
                    (_, other) => wire.skip(other, length)?,
                }
            }
            Ok(())
        })();
        result.map_err(|error| ModelReadError::from_wire(path, error))?;
        if !saw_graph {
            return Err(ModelReadError::NoGraph { path: path.to_path_buf() });
        }
        info.tensors = parser.tensors;
        Ok(info)
    }

    /// The model file as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `ModelProto.ir_version`.
    pub fn ir_version(&self) -> Option<u64> {
        self.ir_version
    }

    /// `ModelProto.producer_name`.
    pub fn producer_name(&self) -> Option<&str> {
        self.producer_name.as_deref()
    }

    /// The main graph's name.
    pub fn graph_name(&self) -> Option<&str> {
        self.graph_name.as_deref()
    }

    /// Every stored tensor: initializers and constants of the main graph and
    /// of its subgraphs, in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    /// The initializers (the parameters).
    pub fn initializers(&self) -> impl Iterator<Item = &TensorInfo> {
        self.tensors.iter().filter(|tensor| tensor.role == TensorRole::Initializer)
    }

    /// The initializer named `name` (the first, searching the main graph
    /// before subgraphs in file order).
    pub fn initializer(&self, name: &str) -> Option<&TensorInfo> {
        self.initializers()
            .find(|tensor| tensor.name == name && !tensor.in_subgraph)
            .or_else(|| self.initializers().find(|tensor| tensor.name == name))
    }

    /// Parameters: stored elements of every initializer.
    pub fn parameter_count(&self) -> u64 {
        self.initializers().fold(0u64, |sum, tensor| sum.saturating_add(tensor.elements))
    }

    /// Bytes of every initializer; `None` when one has a type without a
    /// known size.
    pub fn parameter_bytes(&self) -> Option<u64> {
        sum_bytes(self.initializers())
    }

    /// Bytes of the constant tensors held in node attributes.
    pub fn constant_bytes(&self) -> Option<u64> {
        sum_bytes(self.tensors.iter().filter(|tensor| tensor.role == TensorRole::Constant))
    }

    /// Sorted distinct `TensorProto.<TYPE>` names of every stored tensor.
    pub fn weight_dtypes(&self) -> Vec<String> {
        let names: BTreeSet<String> = self.tensors.iter().map(|tensor| tensor.data_type.name()).collect();
        names.into_iter().collect()
    }

    /// Whether any tensor's data is in an external file.
    pub fn has_external_data(&self) -> bool {
        self.tensors.iter().any(|tensor| matches!(tensor.storage, Storage::External { .. }))
    }

    /// The external data files, each once, in order of first use.
    pub fn external_data_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = Vec::new();
        for tensor in &self.tensors {
            if let Storage::External { path, .. } = &tensor.storage
                && !files.contains(path)
            {
                files.push(path.clone());
            }
        }
        files
    }

    /// The model footprint as the profiler takes it: parameters are the
    /// initializers, buffers the attribute constants, in-memory bytes their
    /// sum. Trainable counts are not reported (an ONNX file does not say).
    pub fn footprint(&self) -> ModelFootprintMeasurement {
        let parameter_bytes = self.parameter_bytes();
        let buffer_bytes = self.constant_bytes();
        let readings = ModelFootprintReadings {
            parameter_count: Some(self.parameter_count()),
            parameter_bytes,
            buffer_bytes,
            in_memory_bytes: parameter_bytes.zip(buffer_bytes).map(|(p, b)| p.saturating_add(b)),
            weight_dtypes: self.weight_dtypes(),
            ..Default::default()
        };
        // parameter_count is always present, which is all `measured` requires.
        ModelFootprintMeasurement::measured(readings)
            .unwrap_or_else(|error| ModelFootprintMeasurement::unavailable(Some(error.to_string())))
    }

    /// The deployment artifacts: the model file (role `checkpoint`) and each
    /// external data file (role `external_weights`).
    pub fn deployment_artifacts(&self) -> Vec<DeploymentArtifact> {
        let mut artifacts = Vec::new();
        if let Ok(model) = DeploymentArtifact::new(self.path.to_string_lossy()) {
            artifacts.push(model);
        }
        for file in self.external_data_files() {
            if let Ok(artifact) = DeploymentArtifact::new(file.to_string_lossy())
                .and_then(|artifact| artifact.with_role("external_weights"))
            {
                artifacts.push(artifact);
            }
        }
        artifacts
    }

    /// The stored bytes of a dense tensor kept as `raw_data` or in external
    /// data (little-endian, packed as ONNX stores them).
    pub fn tensor_bytes(&self, tensor: &TensorInfo) -> Result<Vec<u8>, ModelReadError> {
        let data_error = |reason: &str| ModelReadError::TensorData {
            name: tensor.name.clone(),
            reason: reason.to_owned(),
        };
        if tensor.sparse {
            return Err(data_error("sparse tensors are not returned as bytes"));
        }
        let expected = tensor.bytes.ok_or_else(|| data_error("its type has no fixed size"))?;
        let (path, offset, length) = match &tensor.storage {
            Storage::Raw { offset, length } => (self.path.clone(), *offset, *length),
            Storage::External { path, offset, length, .. } => {
                (path.clone(), *offset, length.unwrap_or(expected))
            }
            Storage::Typed => return Err(data_error("it is stored in typed fields, not raw_data")),
        };
        if length != expected {
            return Err(data_error(&format!(
                "{length} bytes stored where its type and shape need {expected}"
            )));
        }
        let io_error = |source| ModelReadError::Io { path: path.clone(), source };
        let mut file = File::open(&path).map_err(io_error)?;
        file.seek(SeekFrom::Start(offset)).map_err(io_error)?;
        let size = usize::try_from(length).map_err(|_| data_error("too large for this platform"))?;
        let mut buffer = vec![0u8; size];
        file.read_exact(&mut buffer).map_err(io_error)?;
        Ok(buffer)
    }
}

fn sum_bytes<'a>(mut tensors: impl Iterator<Item = &'a TensorInfo>) -> Option<u64> {
    tensors.try_fold(0u64, |sum, tensor| Some(sum.saturating_add(tensor.bytes?)))
}

impl Parser {
    fn malformed(offset: u64, what: impl Into<String>) -> WireError {
        WireError::Malformed { offset, what: what.into() }
    }

    /// A `GraphProto` ending at `end`; returns its name.
    fn graph<R: Read + Seek>(
        &mut self,
        wire: &mut Wire<R>,
        end: u64,
        depth: usize,
    ) -> WireResult<Option<String>> {
        if depth > MAX_GRAPH_DEPTH {
            return Err(Self::malformed(
                wire.pos(),
                format!("subgraphs nested deeper than {MAX_GRAPH_DEPTH}"),
            ));
        }
        let mut name = None;
        while wire.pos() < end {
            let (field, wire_type) = wire.key(end)?;
            match (field, wire_type) {
                (1, WireType::Len) => {
                    let node_end = wire.len_end(end)?;
                    self.node(wire, node_end, depth)?;
                }
                (2, WireType::Len) => name = Some(wire.string(end, MAX_TEXT)?),
                (5, WireType::Len) => {
                    let tensor_end = wire.len_end(end)?;
                    let start = wire.pos();
                    let raw = self.tensor(wire, tensor_end)?;
                    let info = self.dense(raw, start, TensorRole::Initializer, depth > 0)?;
                    self.tensors.push(info);
                }
                (15, WireType::Len) => {
                    let sparse_end = wire.len_end(end)?;
                    let info = self.sparse(wire, sparse_end, TensorRole::Initializer, depth > 0)?;
                    self.tensors.push(info);
                }
                (_, other) => wire.skip(other, end)?,
            }
        }
        Ok(name)
    }

    /// A `NodeProto`: only its attributes matter (subgraphs, constants).
    fn node<R: Read + Seek>(&mut self, wire: &mut Wire<R>, end: u64, depth: usize) -> WireResult<()> {
        while wire.pos() < end {
            let (field, wire_type) = wire.key(end)?;
            match (field, wire_type) {
                (5, WireType::Len) => {
                    let attribute_end = wire.len_end(end)?;
                    self.attribute(wire, attribute_end, depth)?;
                }
                (_, other) => wire.skip(other, end)?,
            }
        }
        Ok(())
    }

    /// An `AttributeProto`: `t` (5), `g` (6), `tensors` (10), `graphs`
    /// (11), `sparse_tensor` (22), `sparse_tensors` (23).
    fn attribute<R: Read + Seek>(&mut self, wire: &mut Wire<R>, end: u64, depth: usize) -> WireResult<()> {
        let in_subgraph = depth > 0;
        while wire.pos() < end {
            let (field, wire_type) = wire.key(end)?;
            match (field, wire_type) {
                (5 | 10, WireType::Len) => {
                    let tensor_end = wire.len_end(end)?;
                    let start = wire.pos();
                    let raw = self.tensor(wire, tensor_end)?;
                    let info = self.dense(raw, start, TensorRole::Constant, in_subgraph)?;
                    self.tensors.push(info);
                }
                (6 | 11, WireType::Len) => {
                    let graph_end = wire.len_end(end)?;
                    self.graph(wire, graph_end, depth + 1)?;
                }
                (22 | 23, WireType::Len) => {
                    let sparse_end = wire.len_end(end)?;
                    let info = self.sparse(wire, sparse_end, TensorRole::Constant, in_subgraph)?;
                    self.tensors.push(info);
                }
                (_, other) => wire.skip(other, end)?,
            }
        }
        Ok(())
    }

    /// A `TensorProto`'s fields, payloads skipped.
    fn tensor<R: Read + Seek>(&mut self, wire: &mut Wire<R>, end: u64) -> WireResult<RawTensor> {
        let mut tensor = RawTensor::default();
        while wire.pos() < end {
            let (field, wire_type) = wire.key(end)?;
            match (field, wire_type) {
                (1, WireType::Varint | WireType::Len) => {
                    wire.varints_into(wire_type, end, &mut tensor.dims, MAX_DIMS)?;
                }
                (2, WireType::Varint) => tensor.data_type = wire.varint(end)? as i64,
                (6, WireType::Len) => {
                    let string_end = wire.len_end(end)?;
                    tensor.string_bytes = tensor.string_bytes.saturating_add(string_end - wire.pos());
                    wire.skip_to(string_end)?;
                }
                (8, WireType::Len) => tensor.name = wire.string(end, MAX_TEXT)?,
                (9, WireType::Len) => {
                    let raw_end = wire.len_end(end)?;
                    tensor.raw = Some((wire.pos(), raw_end - wire.pos()));
                    wire.skip_to(raw_end)?;
                }
                (13, WireType::Len) => {
                    let entry_end = wire.len_end(end)?;
                    let mut key = String::new();
                    let mut value = String::new();
                    while wire.pos() < entry_end {
                        match wire.key(entry_end)? {
                            (1, WireType::Len) => key = wire.string(entry_end, MAX_TEXT)?,
                            (2, WireType::Len) => value = wire.string(entry_end, MAX_TEXT)?,
                            (_, other) => wire.skip(other, entry_end)?,
                        }
                    }
                    tensor.external.push((key, value));
                }
                (14, WireType::Varint) => tensor.data_location = wire.varint(end)?,
                (_, other) => wire.skip(other, end)?,
            }
        }
        Ok(tensor)
    }

    /// A dense tensor's description; `start` is where its message began
    /// (for error offsets).
    fn dense(
        &self,
        raw: RawTensor,
        start: u64,
        role: TensorRole,
        in_subgraph: bool,
    ) -> WireResult<TensorInfo> {
        // int32 fields are sign-extended to 64 bits on the wire.
        let data_type = DataType::from_code(raw.data_type as i32);
        let mut elements = 1u64;
        for &dim in &raw.dims {
            // Dims are int64 on the wire: a "huge" u64 is a negative dim.
            if dim > i64::MAX as u64 {
                return Err(Self::malformed(
                    start,
                    format!("tensor '{}' has a negative dimension", raw.name),
                ));
            }
            elements = elements.checked_mul(dim).ok_or_else(|| {
                Self::malformed(start, format!("tensor '{}' has more than 2^64 elements", raw.name))
            })?;
        }
        let storage = if raw.data_location == 1 {
            let entry = |key: &str| {
                raw.external.iter().rev().find(|(name, _)| name == key).map(|(_, value)| value.as_str())
            };
            let number = |key: &str| -> WireResult<Option<u64>> {
                entry(key)
                    .map(|text| {
                        text.trim().parse::<u64>().map_err(|_| {
                            Self::malformed(
                                start,
                                format!("tensor '{}' has external {key} '{text}'", raw.name),
                            )
                        })
                    })
                    .transpose()
            };
            let location = entry("location").ok_or_else(|| {
                Self::malformed(start, format!("external tensor '{}' has no location", raw.name))
            })?;
            Storage::External {
                path: self.directory.join(location),
                location: location.to_owned(),
                offset: number("offset")?.unwrap_or(0),
                length: number("length")?,
            }
        } else if let Some((offset, length)) = raw.raw {
            Storage::Raw { offset, length }
        } else {
            Storage::Typed
        };
        let bytes = if data_type == DataType::String {
            Some(raw.string_bytes)
        } else {
            data_type.bytes_for(elements)
        };
        Ok(TensorInfo {
            name: raw.name,
            data_type,
            dims: raw.dims,
            elements,
            bytes,
            storage,
            role,
            sparse: false,
            in_subgraph,
        })
    }

    /// A `SparseTensorProto`: `values` (1), `indices` (2), `dims` (3).
    fn sparse<R: Read + Seek>(
        &mut self,
        wire: &mut Wire<R>,
        end: u64,
        role: TensorRole,
        in_subgraph: bool,
    ) -> WireResult<TensorInfo> {
        let start = wire.pos();
        let mut values = None;
        let mut indices = None;
        let mut dims = Vec::new();
        while wire.pos() < end {
            let (field, wire_type) = wire.key(end)?;
            match (field, wire_type) {
                (1 | 2, WireType::Len) => {
                    let tensor_end = wire.len_end(end)?;
                    let tensor_start = wire.pos();
                    let raw = self.tensor(wire, tensor_end)?;
                    let info = self.dense(raw, tensor_start, role, in_subgraph)?;
                    if field == 1 {
                        values = Some(info);
                    } else {
                        indices = Some(info);
                    }
                }
                (3, WireType::Varint | WireType::Len) => {
                    wire.varints_into(wire_type, end, &mut dims, MAX_DIMS)?
                }
                (_, other) => wire.skip(other, end)?,
            }
        }
        let values = values.ok_or_else(|| Self::malformed(start, "sparse tensor without values"))?;
        let index_bytes = match indices {
            Some(indices) => indices.bytes,
            None => Some(0),
        };
        Ok(TensorInfo {
            bytes: values.bytes.zip(index_bytes).map(|(v, i)| v.saturating_add(i)),
            dims,
            sparse: true,
            ..values
        })
    }
}
