//! Python's spelling of libtorch scalar types.

/// Python's `str(dtype)` for each `c10::ScalarType`, indexed by its value
/// (`AT_FORALL_SCALAR_TYPES_WITH_COMPLEX_AND_QINTS` in libtorch 2.13.0).
const PYTHON_DTYPE_NAMES: [&str; 46] = [
    "torch.uint8",
    "torch.int8",
    "torch.int16",
    "torch.int32",
    "torch.int64",
    "torch.float16",
    "torch.float32",
    "torch.float64",
    "torch.complex32",
    "torch.complex64",
    "torch.complex128",
    "torch.bool",
    "torch.qint8",
    "torch.quint8",
    "torch.qint32",
    "torch.bfloat16",
    "torch.quint4x2",
    "torch.quint2x4",
    "torch.bits1x8",
    "torch.bits2x4",
    "torch.bits4x2",
    "torch.bits8",
    "torch.bits16",
    "torch.float8_e5m2",
    "torch.float8_e4m3fn",
    "torch.float8_e5m2fnuz",
    "torch.float8_e4m3fnuz",
    "torch.uint16",
    "torch.uint32",
    "torch.uint64",
    "torch.uint1",
    "torch.uint2",
    "torch.uint3",
    "torch.uint4",
    "torch.uint5",
    "torch.uint6",
    "torch.uint7",
    "torch.int1",
    "torch.int2",
    "torch.int3",
    "torch.int4",
    "torch.int5",
    "torch.int6",
    "torch.int7",
    "torch.float8_e8m0fnu",
    "torch.float4_e2m1fn_x2",
];

/// Python's name of the `c10::ScalarType` with value `scalar_type`, e.g.
/// `"torch.float32"` for 6, as vertebrae writes weight dtypes.
///
/// ```
/// assert_eq!(tally_torch::python_dtype_name(6), Some("torch.float32"));
/// assert_eq!(tally_torch::python_dtype_name(5), Some("torch.float16"));
/// assert_eq!(tally_torch::python_dtype_name(-1), None);
/// ```
pub fn python_dtype_name(scalar_type: i32) -> Option<&'static str> {
    usize::try_from(scalar_type).ok().and_then(|index| PYTHON_DTYPE_NAMES.get(index).copied())
}

/// Python's name of a tch [`Kind`](tch::Kind).
///
/// ```
/// assert_eq!(tally_torch::kind_name(tch::Kind::BFloat16), "torch.bfloat16");
/// ```
pub fn kind_name(kind: tch::Kind) -> &'static str {
    use tch::Kind;
    match kind {
        Kind::Uint8 => "torch.uint8",
        Kind::Int8 => "torch.int8",
        Kind::Int16 => "torch.int16",
        Kind::Int => "torch.int32",
        Kind::Int64 => "torch.int64",
        Kind::Half => "torch.float16",
        Kind::Float => "torch.float32",
        Kind::Double => "torch.float64",
        Kind::ComplexHalf => "torch.complex32",
        Kind::ComplexFloat => "torch.complex64",
        Kind::ComplexDouble => "torch.complex128",
        Kind::Bool => "torch.bool",
        Kind::QInt8 => "torch.qint8",
        Kind::QUInt8 => "torch.quint8",
        Kind::QInt32 => "torch.qint32",
        Kind::BFloat16 => "torch.bfloat16",
        Kind::Float8e5m2 => "torch.float8_e5m2",
        Kind::Float8e4m3fn => "torch.float8_e4m3fn",
        Kind::Float8e5m2fnuz => "torch.float8_e5m2fnuz",
        Kind::Float8e4m3fnuz => "torch.float8_e4m3fnuz",
    }
}
