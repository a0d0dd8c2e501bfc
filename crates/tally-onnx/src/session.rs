//! An inference session on one model, its declared inputs and outputs, and
//! synthetic inputs that match them.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use ort::memory::Allocator;
use ort::session::Session;
use ort::value::{DynTensor, DynTensorValueType, DynValue, ValueType};

use crate::dtype::DataType;
use crate::error::{OnnxError, ShapeError};
use crate::runtime::OnnxRuntime;

/// The execution provider every tally session runs on: this build registers
/// no other provider, so ONNX Runtime places every node on its CPU provider.
pub const CPU_EXECUTION_PROVIDER: &str = "CPUExecutionProvider";

/// One dimension of a declared input or output shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dim {
    /// A fixed size.
    Fixed(u64),
    /// A dynamic size, with its symbolic name when the model gives one.
    Symbolic(Option<String>),
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Fixed(size) => write!(f, "{size}"),
            Dim::Symbolic(Some(name)) => f.write_str(name),
            Dim::Symbolic(None) => f.write_str("?"),
        }
    }
}

/// The declared type of an input or output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IoType {
    /// A tensor.
    Tensor {
        /// Element type.
        data_type: DataType,
        /// Shape.
        dims: Vec<Dim>,
    },
    /// Something else (a sequence, a map, an optional), with ONNX Runtime's
    /// description of it.
    Other {
        /// What kind: `sequence`, `map` or `optional`.
        kind: &'static str,
        /// The type as `ort` prints it.
        description: String,
    },
}

/// A declared input or output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoInfo {
    /// Its name.
    pub name: String,
    /// Its type.
    pub io_type: IoType,
}

impl IoInfo {
    fn from_ort(name: &str, value_type: &ValueType) -> Self {
        let io_type = match value_type {
            ValueType::Tensor { ty, shape, dimension_symbols } => IoType::Tensor {
                data_type: DataType::from_ort(*ty),
                dims: shape
                    .iter()
                    .enumerate()
                    .map(|(index, &size)| match u64::try_from(size) {
                        Ok(size) => Dim::Fixed(size),
                        Err(_) => Dim::Symbolic(
                            dimension_symbols.get(index).filter(|symbol| !symbol.is_empty()).cloned(),
                        ),
                    })
                    .collect(),
            },
            ValueType::Sequence(_) => IoType::Other { kind: "sequence", description: value_type.to_string() },
            ValueType::Map { .. } => IoType::Other { kind: "map", description: value_type.to_string() },
            ValueType::Optional(_) => IoType::Other { kind: "optional", description: value_type.to_string() },
        };
        IoInfo { name: name.to_owned(), io_type }
    }
}

/// How symbolic dimensions are sized: `--dim NAME=VALUE` and `--batch`.
///
/// A dimension is sized, in order, by its symbolic name in `dims`, by
/// `INPUT[INDEX]` in `dims` (for unnamed dynamic dimensions), then, for the
/// first dimension of an input, by `batch` (default 1). Any other dynamic
/// dimension left unsized is an error naming it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShapeBindings {
    /// Sizes by symbolic name, or by `INPUT[INDEX]`.
    pub dims: BTreeMap<String, u64>,
    /// The batch size: the first dimension of every input.
    pub batch: Option<u64>,
}

/// A tensor with its data: element type, shape and the bytes as ONNX stores
/// them (little-endian, sub-byte types packed).
#[derive(Debug, Clone, PartialEq)]
pub struct TensorData {
    /// The input or output name.
    pub name: String,
    /// Element type.
    pub data_type: DataType,
    /// Shape.
    pub shape: Vec<u64>,
    /// The data.
    pub bytes: Vec<u8>,
}

impl TensorData {
    /// The elements as `f64` for the numeric types that convert exactly
    /// (floats of 16 to 64 bits, integers up to 32 bits, bool); 64-bit
    /// integers convert with rounding above 2^53. `None` for other types.
    pub fn to_f64(&self) -> Option<Vec<f64>> {
        let chunks = |width: usize| self.bytes.chunks_exact(width);
        Some(match self.data_type {
            DataType::Float => {
                chunks(4).map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))).collect()
            }
            DataType::Double => chunks(8).map(|b| f64::from_le_bytes(array8(b))).collect(),
            DataType::Float16 => chunks(2).map(|b| f16_to_f64(u16::from_le_bytes([b[0], b[1]]))).collect(),
            DataType::Bfloat16 => chunks(2)
                .map(|b| f64::from(f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16)))
                .collect(),
            DataType::Int8 => self.bytes.iter().map(|&b| f64::from(b as i8)).collect(),
            DataType::Uint8 => self.bytes.iter().map(|&b| f64::from(b)).collect(),
            DataType::Bool => self.bytes.iter().map(|&b| f64::from(u8::from(b != 0))).collect(),
            DataType::Int16 => chunks(2).map(|b| f64::from(i16::from_le_bytes([b[0], b[1]]))).collect(),
            DataType::Uint16 => chunks(2).map(|b| f64::from(u16::from_le_bytes([b[0], b[1]]))).collect(),
            DataType::Int32 => {
                chunks(4).map(|b| f64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))).collect()
            }
            DataType::Uint32 => {
                chunks(4).map(|b| f64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))).collect()
            }
            DataType::Int64 => chunks(8).map(|b| i64::from_le_bytes(array8(b)) as f64).collect(),
            DataType::Uint64 => chunks(8).map(|b| u64::from_le_bytes(array8(b)) as f64).collect(),
            _ => return None,
        })
    }
}

fn array8(bytes: &[u8]) -> [u8; 8] {
    let mut array = [0u8; 8];
    array.copy_from_slice(&bytes[..8]);
    array
}

/// IEEE 754 binary16 to binary64, exactly (every half is a double).
pub fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let fraction = f64::from(bits & 0x3ff);
    match exponent {
        0 => sign * fraction * 2f64.powi(-24),
        31 if fraction == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + fraction / 1024.0) * 2f64.powi(exponent - 15),
    }
}

/// IEEE 754 binary64 to binary16, rounding to nearest even.
pub fn f64_to_f16(value: f64) -> u16 {
    let bits = value.to_bits();
    let sign = ((bits >> 48) & 0x8000) as u16;
    if value.is_nan() {
        return sign | 0x7e00;
    }
    let magnitude = value.abs();
    if magnitude >= 65520.0 {
        return sign | 0x7c00;
    }
    // Scale so the half's unit in the last place becomes 1, then round half to even.
    let mut exponent = -14;
    if magnitude >= 2f64.powi(-14) {
        // log2 may land one off next to a power of two: correct it exactly.
        exponent = magnitude.log2().floor() as i32;
        if magnitude < 2f64.powi(exponent) {
            exponent -= 1;
        } else if magnitude >= 2f64.powi(exponent + 1) {
            exponent += 1;
        }
    }
    let mut units = round_half_even(magnitude / 2f64.powi(exponent - 10)) as u32;
    if units >= 2048 {
        // Rounded up to the next binade: exactly 2048.
        units /= 2;
        exponent += 1;
    }
    if exponent == -14 && units < 1024 {
        // Subnormal: exponent field 0, fraction = units.
        return sign | units as u16;
    }
    let field = (exponent + 15) as u16;
    if field >= 31 {
        return sign | 0x7c00;
    }
    sign | (field << 10) | (units as u16 & 0x3ff)
}

fn round_half_even(value: f64) -> f64 {
    let floor = value.floor();
    let difference = value - floor;
    if difference > 0.5 || (difference == 0.5 && floor % 2.0 != 0.0) { floor + 1.0 } else { floor }
}

/// A run's output: a tensor's data, or a description of a value tally does
/// not copy out (a sequence, a map, a string tensor, device memory).
#[derive(Debug, Clone, PartialEq)]
pub enum OutputValue {
    /// A tensor read back from host memory.
    Tensor(TensorData),
    /// Not copied: what it is.
    Other {
        /// The output name.
        name: String,
        /// Its type.
        description: String,
    },
}

/// Inputs built once to match the model's declaration and fed to every call.
pub struct SyntheticInputs {
    values: Vec<(String, DynTensor)>,
    data: Vec<TensorData>,
    samples: u64,
}

impl fmt::Debug for SyntheticInputs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyntheticInputs").field("data", &self.data).field("samples", &self.samples).finish()
    }
}

impl SyntheticInputs {
    /// The inputs' data, in the model's input order.
    pub fn tensors(&self) -> &[TensorData] {
        &self.data
    }

    /// Samples one call processes: the batch size (the first dimension of
    /// the first input with one), 1 for scalar-only inputs.
    pub fn samples(&self) -> u64 {
        self.samples
    }
}

/// Options for opening a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionOptions {
    /// Threads for one operator; `None` lets ONNX Runtime choose.
    pub intra_op_threads: Option<usize>,
}

/// An ONNX Runtime inference session on one model file.
pub struct OnnxSession {
    session: Session,
    model_path: PathBuf,
    inputs: Vec<IoInfo>,
    outputs: Vec<IoInfo>,
    providers: Vec<String>,
}

impl fmt::Debug for OnnxSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnnxSession")
            .field("model_path", &self.model_path)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .field("providers", &self.providers)
            .finish()
    }
}

impl OnnxSession {
    /// Creates a session on `model_path`.
    pub fn open(
        runtime: &OnnxRuntime,
        model_path: &Path,
        options: &SessionOptions,
    ) -> Result<Self, OnnxError> {
        let session_error = |message: String| OnnxError::Session { path: model_path.to_path_buf(), message };
        let builder =
            Session::builder(runtime.environment()).map_err(|error| session_error(error.to_string()))?;
        let mut builder = match options.intra_op_threads {
            Some(threads) => {
                builder.with_intra_threads(threads).map_err(|error| session_error(error.to_string()))?
            }
            None => builder,
        };
        let session =
            builder.commit_from_file(model_path).map_err(|error| session_error(error.to_string()))?;
        let inputs =
            session.inputs().iter().map(|outlet| IoInfo::from_ort(outlet.name(), outlet.dtype())).collect();
        let outputs =
            session.outputs().iter().map(|outlet| IoInfo::from_ort(outlet.name(), outlet.dtype())).collect();
        Ok(Self {
            session,
            model_path: model_path.to_path_buf(),
            inputs,
            outputs,
            providers: vec![CPU_EXECUTION_PROVIDER.to_owned()],
        })
    }

    /// The model file.
    pub fn model_path(&self) -> &Path {
        &self.model_path
    }

    /// The declared inputs, in order.
    pub fn inputs(&self) -> &[IoInfo] {
        &self.inputs
    }

    /// The declared outputs, in order.
    pub fn outputs(&self) -> &[IoInfo] {
        &self.outputs
    }

    /// The session's execution providers, in priority order.
    pub fn providers(&self) -> &[String] {
        &self.providers
    }

    /// Builds inputs matching the declaration, sized by `bindings`.
    ///
    /// Floating-point inputs are filled with a fixed pseudo-random sequence
    /// in [-1, 1] (seeded by the input's position); integer and bool inputs
    /// with zeros, the one value valid as an index into any non-empty axis.
    /// Strings, sequences, maps and optionals cannot be synthesized: the
    /// error names the input.
    pub fn synthetic_inputs(&self, bindings: &ShapeBindings) -> Result<SyntheticInputs, OnnxError> {
        let shapes = resolve_shapes(&self.inputs, bindings)?;
        let mut values = Vec::with_capacity(shapes.len());
        let mut data = Vec::with_capacity(shapes.len());
        let mut samples = None;
        for (index, (input, data_type, shape)) in shapes.into_iter().enumerate() {
            let element = data_type.to_ort().ok_or_else(|| OnnxError::UnsupportedInput {
                input: input.clone(),
                reason: format!("element type {data_type} cannot be synthesized"),
            })?;
            let elements = shape.iter().try_fold(1u64, |product, &dim| product.checked_mul(dim));
            let byte_count = elements.and_then(|elements| data_type.bytes_for(elements));
            let byte_count = byte_count.and_then(|count| usize::try_from(count).ok()).ok_or_else(|| {
                OnnxError::UnsupportedInput {
                    input: input.clone(),
                    reason: format!("shape {shape:?} is too large"),
                }
            })?;
            let bytes = fill(data_type, byte_count, index as u64);
            let ort_shape: Vec<i64> =
                shape.iter().map(|&dim| i64::try_from(dim).unwrap_or(i64::MAX)).collect();
            let mut tensor = DynTensor::new(&Allocator::default(), element, ort_shape).map_err(|error| {
                OnnxError::UnsupportedInput { input: input.clone(), reason: error.to_string() }
            })?;
            crate::raw::write_tensor_bytes(&mut tensor, &bytes)
                .map_err(|reason| OnnxError::UnsupportedInput { input: input.clone(), reason })?;
            if samples.is_none() {
                samples = shape.first().copied();
            }
            data.push(TensorData { name: input.clone(), data_type, shape, bytes });
            values.push((input, tensor));
        }
        Ok(SyntheticInputs { values, data, samples: bindings.batch.or(samples).unwrap_or(1) })
    }

    /// Runs the model once and drops the outputs.
    pub fn run(&mut self, inputs: &SyntheticInputs) -> Result<(), OnnxError> {
        let feeds: Vec<(&str, &DynTensor)> =
            inputs.values.iter().map(|(name, value)| (name.as_str(), value)).collect();
        self.session.run(feeds).map(drop).map_err(|error| OnnxError::Run { message: error.to_string() })
    }

    /// Runs the model once and copies the outputs out, in the model's
    /// output order.
    pub fn run_with_outputs(&mut self, inputs: &SyntheticInputs) -> Result<Vec<OutputValue>, OnnxError> {
        let feeds: Vec<(&str, &DynTensor)> =
            inputs.values.iter().map(|(name, value)| (name.as_str(), value)).collect();
        let outputs =
            self.session.run(feeds).map_err(|error| OnnxError::Run { message: error.to_string() })?;
        Ok(outputs.iter().map(|(name, value)| output_value(name, &value)).collect())
    }
}

fn output_value(name: &str, value: &DynValue) -> OutputValue {
    let other = || OutputValue::Other { name: name.to_owned(), description: value.dtype().to_string() };
    let ValueType::Tensor { ty, shape, .. } = value.dtype() else {
        return other();
    };
    let Ok(tensor) = value.view().downcast::<DynTensorValueType>() else {
        return other();
    };
    let Some(bytes) = crate::raw::read_tensor_bytes(&tensor) else {
        return other();
    };
    OutputValue::Tensor(TensorData {
        name: name.to_owned(),
        data_type: DataType::from_ort(*ty),
        shape: shape.iter().map(|&dim| u64::try_from(dim).unwrap_or(0)).collect(),
        bytes,
    })
}

/// SplitMix64: a fixed, portable sequence.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1) on a grid of 2^-23 steps, exact in every float type
    /// from 32 bits up; 16-bit types round it.
    fn unit(&mut self) -> f64 {
        let step = (self.next() >> 40) as f64; // 24 bits
        step / f64::from(1u32 << 23) - 1.0
    }
}

/// The synthetic data of one input.
fn fill(data_type: DataType, byte_count: usize, seed: u64) -> Vec<u8> {
    let mut random = SplitMix(seed.wrapping_mul(0x2545_f491_4f6c_dd1d).wrapping_add(1));
    let mut bytes = Vec::with_capacity(byte_count);
    match data_type {
        DataType::Float | DataType::Complex64 => {
            while bytes.len() < byte_count {
                bytes.extend_from_slice(&(random.unit() as f32).to_le_bytes());
            }
        }
        DataType::Double | DataType::Complex128 => {
            while bytes.len() < byte_count {
                bytes.extend_from_slice(&random.unit().to_le_bytes());
            }
        }
        DataType::Float16 => {
            while bytes.len() < byte_count {
                bytes.extend_from_slice(&f64_to_f16(random.unit()).to_le_bytes());
            }
        }
        DataType::Bfloat16 => {
            while bytes.len() < byte_count {
                // The grid value's top 16 bits: exact for multiples of 2^-7.
                let value = (random.unit() * 128.0).floor() / 128.0;
                bytes.extend_from_slice(&(((value as f32).to_bits() >> 16) as u16).to_le_bytes());
            }
        }
        _ => bytes.resize(byte_count, 0),
    }
    bytes.truncate(byte_count);
    bytes
}

/// Each input's name, element type and concrete shape under `bindings`.
fn resolve_shapes(
    inputs: &[IoInfo],
    bindings: &ShapeBindings,
) -> Result<Vec<(String, DataType, Vec<u64>)>, OnnxError> {
    let mut used: Vec<&str> = Vec::new();
    let mut shapes = Vec::with_capacity(inputs.len());
    for input in inputs {
        let (data_type, dims) = match &input.io_type {
            IoType::Tensor { data_type, dims } => (*data_type, dims),
            IoType::Other { kind, description } => {
                return Err(OnnxError::UnsupportedInput {
                    input: input.name.clone(),
                    reason: format!("it is a {kind} ({description}); only tensors can be synthesized"),
                });
            }
        };
        if data_type == DataType::String {
            return Err(OnnxError::UnsupportedInput {
                input: input.name.clone(),
                reason: "it is a string tensor; only numeric and bool tensors can be synthesized".to_owned(),
            });
        }
        let mut shape = Vec::with_capacity(dims.len());
        for (index, dim) in dims.iter().enumerate() {
            let positional = format!("{}[{index}]", input.name);
            let by_position = bindings.dims.get_key_value(positional.as_str());
            let size = match dim {
                Dim::Fixed(size) => {
                    if index == 0
                        && let Some(batch) = bindings.batch
                        && batch != *size
                    {
                        return Err(
                            ShapeError::FixedBatch { input: input.name.clone(), size: *size, batch }.into()
                        );
                    }
                    *size
                }
                Dim::Symbolic(symbol) => {
                    let by_name = symbol.as_deref().and_then(|name| bindings.dims.get_key_value(name));
                    match (by_name.or(by_position), index) {
                        (Some((key, &size)), _) => {
                            used.push(key);
                            if index == 0
                                && let Some(batch) = bindings.batch
                                && batch != size
                            {
                                return Err(ShapeError::BindingConflictsWithBatch {
                                    input: input.name.clone(),
                                    binding: key.clone(),
                                    size,
                                    batch,
                                }
                                .into());
                            }
                            size
                        }
                        (None, 0) => bindings.batch.unwrap_or(1),
                        (None, _) => {
                            return Err(ShapeError::Unbound {
                                input: input.name.clone(),
                                index,
                                dimension: dim.to_string(),
                                binding: symbol.clone().unwrap_or(positional),
                            }
                            .into());
                        }
                    }
                }
            };
            shape.push(size);
        }
        shapes.push((input.name.clone(), data_type, shape));
    }
    let unused: Vec<&String> = bindings.dims.keys().filter(|key| !used.contains(&key.as_str())).collect();
    if let Some(key) = unused.first() {
        return Err(ShapeError::UnusedBinding { binding: (*key).clone() }.into());
    }
    Ok(shapes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_conversions_round_trip_every_finite_half() {
        for bits in 0u16..=0xffff {
            let value = f16_to_f64(bits);
            if value.is_nan() {
                continue;
            }
            assert_eq!(f64_to_f16(value), bits, "bits {bits:#06x} value {value}");
        }
    }

    #[test]
    fn half_rounding_is_to_nearest_even() {
        // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: rounds to even (1).
        assert_eq!(f64_to_f16(1.0 + 2f64.powi(-11)), 0x3c00);
        // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: rounds to even.
        assert_eq!(f64_to_f16(1.0 + 3.0 * 2f64.powi(-11)), 0x3c02);
        assert_eq!(f64_to_f16(1e6), 0x7c00);
        assert_eq!(f64_to_f16(-0.0), 0x8000);
    }

    fn data(data_type: DataType, bytes: Vec<u8>) -> TensorData {
        TensorData { name: "t".into(), data_type, shape: vec![], bytes }
    }

    #[test]
    fn tensor_bytes_convert_to_f64_per_type() {
        assert_eq!(data(DataType::Int8, vec![0xff, 2]).to_f64(), Some(vec![-1.0, 2.0]));
        assert_eq!(data(DataType::Uint16, vec![0x34, 0x12]).to_f64(), Some(vec![4660.0]));
        assert_eq!(data(DataType::Bool, vec![0, 1, 7]).to_f64(), Some(vec![0.0, 1.0, 1.0]));
        // bfloat16 0x3fc0 is 1.5; float16 0xc000 is -2.
        assert_eq!(data(DataType::Bfloat16, vec![0xc0, 0x3f]).to_f64(), Some(vec![1.5]));
        assert_eq!(data(DataType::Float16, vec![0x00, 0xc0]).to_f64(), Some(vec![-2.0]));
        assert_eq!(data(DataType::Int64, (-3i64).to_le_bytes().to_vec()).to_f64(), Some(vec![-3.0]));
        assert_eq!(data(DataType::Double, 0.25f64.to_le_bytes().to_vec()).to_f64(), Some(vec![0.25]));
        assert_eq!(data(DataType::Int4, vec![0x21]).to_f64(), None);
    }

    #[test]
    fn synthetic_fill_is_sized_and_deterministic() {
        for data_type in
            [DataType::Float, DataType::Float16, DataType::Bfloat16, DataType::Double, DataType::Int32]
        {
            let bytes = data_type.bytes_for(7).expect("sized") as usize;
            let first = fill(data_type, bytes, 3);
            assert_eq!(first.len(), bytes);
            assert_eq!(first, fill(data_type, bytes, 3));
            let values = data(data_type, first).to_f64().expect("numeric");
            assert!(values.iter().all(|v| (-1.0..=1.0).contains(v)), "{data_type}: {values:?}");
        }
        assert_ne!(fill(DataType::Float, 16, 0), fill(DataType::Float, 16, 1));
    }

    fn tensor(name: &str, dims: Vec<Dim>) -> IoInfo {
        IoInfo { name: name.to_owned(), io_type: IoType::Tensor { data_type: DataType::Float, dims } }
    }

    #[test]
    fn shapes_resolve_by_name_position_and_batch() {
        let inputs = vec![tensor(
            "x",
            vec![
                Dim::Symbolic(Some("batch".into())),
                Dim::Symbolic(Some("seq".into())),
                Dim::Symbolic(None),
                Dim::Fixed(4),
            ],
        )];
        let mut bindings = ShapeBindings { batch: Some(3), ..Default::default() };
        bindings.dims.insert("seq".into(), 7);
        bindings.dims.insert("x[2]".into(), 5);
        let shapes = resolve_shapes(&inputs, &bindings).map_err(|error| error.to_string());
        assert_eq!(shapes, Ok(vec![("x".to_owned(), DataType::Float, vec![3, 7, 5, 4])]));
    }

    #[test]
    fn unsized_dimension_and_unused_dim_are_errors_naming_them() {
        let inputs = vec![tensor("x", vec![Dim::Fixed(2), Dim::Symbolic(Some("seq".into()))])];
        let shape_error = |bindings: &ShapeBindings| match resolve_shapes(&inputs, bindings) {
            Err(OnnxError::Shape(error)) => error,
            other => panic!("expected a shape error, got {other:?}"),
        };
        assert_eq!(
            shape_error(&ShapeBindings::default()),
            ShapeError::Unbound {
                input: "x".into(),
                index: 1,
                dimension: "seq".into(),
                binding: "seq".into()
            }
        );
        let mut bindings = ShapeBindings::default();
        bindings.dims.insert("seq".into(), 3);
        bindings.dims.insert("sequence".into(), 3);
        assert_eq!(shape_error(&bindings), ShapeError::UnusedBinding { binding: "sequence".into() });
        let fixed_batch = ShapeBindings { batch: Some(3), ..Default::default() };
        let error = shape_error(&fixed_batch);
        assert_eq!(error, ShapeError::FixedBatch { input: "x".into(), size: 2, batch: 3 });
        assert!(!error.to_string().contains("--"), "a library error names no flag: {error}");
    }
}
