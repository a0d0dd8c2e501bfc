//! ONNX tensor element types (`TensorProto.DataType`) and their sizes.

use std::fmt;

#[cfg(feature = "runtime")]
use ort::value::TensorElementType;

/// An ONNX tensor element type, by its `TensorProto.DataType` code.
///
/// Sizes follow the ONNX `raw_data` layout: sub-byte types are packed
/// (4-bit types two to a byte, 2-bit types four to a byte, 6-bit types four
/// to three bytes), so a tensor's size is `ceil(elements × bits / 8)`.
///
/// ```
/// use tally_onnx::DataType;
/// assert_eq!(DataType::Float16.bytes_for(3), Some(6));
/// assert_eq!(DataType::Int4.bytes_for(3), Some(2));
/// assert_eq!(DataType::Float6E2M3.bytes_for(5), Some(4));
/// assert_eq!(DataType::String.bytes_for(3), None);
/// assert_eq!(DataType::from_code(10).name(), "TensorProto.FLOAT16");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum DataType {
    /// `UNDEFINED` (0).
    Undefined,
    /// `FLOAT` (1): IEEE 754 binary32.
    Float,
    /// `UINT8` (2).
    Uint8,
    /// `INT8` (3).
    Int8,
    /// `UINT16` (4).
    Uint16,
    /// `INT16` (5).
    Int16,
    /// `INT32` (6).
    Int32,
    /// `INT64` (7).
    Int64,
    /// `STRING` (8): variable length, no fixed size.
    String,
    /// `BOOL` (9): one byte per element.
    Bool,
    /// `FLOAT16` (10): IEEE 754 binary16.
    Float16,
    /// `DOUBLE` (11).
    Double,
    /// `UINT32` (12).
    Uint32,
    /// `UINT64` (13).
    Uint64,
    /// `COMPLEX64` (14): two binary32.
    Complex64,
    /// `COMPLEX128` (15): two binary64.
    Complex128,
    /// `BFLOAT16` (16).
    Bfloat16,
    /// `FLOAT8E4M3FN` (17).
    Float8E4M3FN,
    /// `FLOAT8E4M3FNUZ` (18).
    Float8E4M3FNUZ,
    /// `FLOAT8E5M2` (19).
    Float8E5M2,
    /// `FLOAT8E5M2FNUZ` (20).
    Float8E5M2FNUZ,
    /// `UINT4` (21), packed two per byte.
    Uint4,
    /// `INT4` (22), packed two per byte.
    Int4,
    /// `FLOAT4E2M1` (23), packed two per byte.
    Float4E2M1,
    /// `FLOAT8E8M0` (24).
    Float8E8M0,
    /// `UINT2` (25), packed four per byte.
    Uint2,
    /// `INT2` (26), packed four per byte.
    Int2,
    /// `FLOAT6E2M3` (27), packed four per three bytes.
    Float6E2M3,
    /// `FLOAT6E3M2` (28), packed four per three bytes.
    Float6E3M2,
    /// A code this version does not know.
    Unknown(i32),
}

const NAMED: [(DataType, &str); 29] = [
    (DataType::Undefined, "UNDEFINED"),
    (DataType::Float, "FLOAT"),
    (DataType::Uint8, "UINT8"),
    (DataType::Int8, "INT8"),
    (DataType::Uint16, "UINT16"),
    (DataType::Int16, "INT16"),
    (DataType::Int32, "INT32"),
    (DataType::Int64, "INT64"),
    (DataType::String, "STRING"),
    (DataType::Bool, "BOOL"),
    (DataType::Float16, "FLOAT16"),
    (DataType::Double, "DOUBLE"),
    (DataType::Uint32, "UINT32"),
    (DataType::Uint64, "UINT64"),
    (DataType::Complex64, "COMPLEX64"),
    (DataType::Complex128, "COMPLEX128"),
    (DataType::Bfloat16, "BFLOAT16"),
    (DataType::Float8E4M3FN, "FLOAT8E4M3FN"),
    (DataType::Float8E4M3FNUZ, "FLOAT8E4M3FNUZ"),
    (DataType::Float8E5M2, "FLOAT8E5M2"),
    (DataType::Float8E5M2FNUZ, "FLOAT8E5M2FNUZ"),
    (DataType::Uint4, "UINT4"),
    (DataType::Int4, "INT4"),
    (DataType::Float4E2M1, "FLOAT4E2M1"),
    (DataType::Float8E8M0, "FLOAT8E8M0"),
    (DataType::Uint2, "UINT2"),
    (DataType::Int2, "INT2"),
    (DataType::Float6E2M3, "FLOAT6E2M3"),
    (DataType::Float6E3M2, "FLOAT6E3M2"),
];

impl DataType {
    /// Every known type, in code order (0 to 28).
    pub const KNOWN: [DataType; 29] = {
        let mut all = [DataType::Undefined; 29];
        let mut index = 0;
        while index < 29 {
            all[index] = NAMED[index].0;
            index += 1;
        }
        all
    };

    /// The type with ONNX code `code`; [`DataType::Unknown`] for codes this
    /// version does not know.
    pub fn from_code(code: i32) -> Self {
        usize::try_from(code)
            .ok()
            .and_then(|index| NAMED.get(index))
            .map_or(DataType::Unknown(code), |(data_type, _)| *data_type)
    }

    /// The ONNX code.
    pub fn code(self) -> i32 {
        match self {
            DataType::Unknown(code) => code,
            // The table is in code order, so the index is the code (at most 28).
            known => {
                NAMED.iter().position(|(data_type, _)| *data_type == known).map_or(-1, |index| index as i32)
            }
        }
    }

    /// The ONNX enum name without prefix, e.g. `FLOAT16`; `UNKNOWN(<code>)`
    /// for an unknown code.
    pub fn onnx_name(self) -> String {
        match self {
            DataType::Unknown(code) => format!("UNKNOWN({code})"),
            known => NAMED
                .iter()
                .find(|(data_type, _)| *data_type == known)
                .map_or_else(String::new, |(_, name)| (*name).to_owned()),
        }
    }

    /// The name reported in `weight_dtypes`: `TensorProto.<NAME>`, as
    /// Python's `onnx.TensorProto.FLOAT16` spells it (vertebrae's torch
    /// adapter writes `torch.float16` the same way).
    pub fn name(self) -> String {
        format!("TensorProto.{}", self.onnx_name())
    }

    /// Bits per element; `None` for `STRING`, `UNDEFINED` and unknown codes.
    pub fn bits(self) -> Option<u64> {
        Some(match self {
            DataType::Uint2 | DataType::Int2 => 2,
            DataType::Uint4 | DataType::Int4 | DataType::Float4E2M1 => 4,
            DataType::Float6E2M3 | DataType::Float6E3M2 => 6,
            DataType::Uint8
            | DataType::Int8
            | DataType::Bool
            | DataType::Float8E4M3FN
            | DataType::Float8E4M3FNUZ
            | DataType::Float8E5M2
            | DataType::Float8E5M2FNUZ
            | DataType::Float8E8M0 => 8,
            DataType::Uint16 | DataType::Int16 | DataType::Float16 | DataType::Bfloat16 => 16,
            DataType::Float | DataType::Int32 | DataType::Uint32 => 32,
            DataType::Int64 | DataType::Uint64 | DataType::Double | DataType::Complex64 => 64,
            DataType::Complex128 => 128,
            DataType::String | DataType::Undefined | DataType::Unknown(_) => return None,
        })
    }

    /// Bytes of `elements` elements as ONNX stores them packed:
    /// `ceil(elements × bits / 8)`; `None` without a fixed size or on
    /// overflow.
    pub fn bytes_for(self, elements: u64) -> Option<u64> {
        let bits = u128::from(self.bits()?) * u128::from(elements);
        u64::try_from(bits.div_ceil(8)).ok()
    }

    /// The type of an ONNX Runtime tensor element.
    #[cfg(feature = "runtime")]
    pub fn from_ort(element: TensorElementType) -> Self {
        match element {
            TensorElementType::Float32 => DataType::Float,
            TensorElementType::Uint8 => DataType::Uint8,
            TensorElementType::Int8 => DataType::Int8,
            TensorElementType::Uint16 => DataType::Uint16,
            TensorElementType::Int16 => DataType::Int16,
            TensorElementType::Int32 => DataType::Int32,
            TensorElementType::Int64 => DataType::Int64,
            TensorElementType::String => DataType::String,
            TensorElementType::Bool => DataType::Bool,
            TensorElementType::Float16 => DataType::Float16,
            TensorElementType::Float64 => DataType::Double,
            TensorElementType::Uint32 => DataType::Uint32,
            TensorElementType::Uint64 => DataType::Uint64,
            TensorElementType::Bfloat16 => DataType::Bfloat16,
            TensorElementType::Complex64 => DataType::Complex64,
            TensorElementType::Complex128 => DataType::Complex128,
            TensorElementType::Float8E4M3FN => DataType::Float8E4M3FN,
            TensorElementType::Float8E4M3FNUZ => DataType::Float8E4M3FNUZ,
            TensorElementType::Float8E5M2 => DataType::Float8E5M2,
            TensorElementType::Float8E5M2FNUZ => DataType::Float8E5M2FNUZ,
            TensorElementType::Uint4 => DataType::Uint4,
            TensorElementType::Int4 => DataType::Int4,
            TensorElementType::Float4E2M1 => DataType::Float4E2M1,
            TensorElementType::Uint2 => DataType::Uint2,
            TensorElementType::Int2 => DataType::Int2,
            TensorElementType::Float8E8M0 => DataType::Float8E8M0,
            // `ort` may add element types; they are unknown here.
            _ => DataType::Undefined,
        }
    }

    /// The ONNX Runtime element type; `None` where `ort` has none.
    #[cfg(feature = "runtime")]
    pub fn to_ort(self) -> Option<TensorElementType> {
        Some(match self {
            DataType::Float => TensorElementType::Float32,
            DataType::Uint8 => TensorElementType::Uint8,
            DataType::Int8 => TensorElementType::Int8,
            DataType::Uint16 => TensorElementType::Uint16,
            DataType::Int16 => TensorElementType::Int16,
            DataType::Int32 => TensorElementType::Int32,
            DataType::Int64 => TensorElementType::Int64,
            DataType::String => TensorElementType::String,
            DataType::Bool => TensorElementType::Bool,
            DataType::Float16 => TensorElementType::Float16,
            DataType::Double => TensorElementType::Float64,
            DataType::Uint32 => TensorElementType::Uint32,
            DataType::Uint64 => TensorElementType::Uint64,
            DataType::Bfloat16 => TensorElementType::Bfloat16,
            DataType::Complex64 => TensorElementType::Complex64,
            DataType::Complex128 => TensorElementType::Complex128,
            DataType::Float8E4M3FN => TensorElementType::Float8E4M3FN,
            DataType::Float8E4M3FNUZ => TensorElementType::Float8E4M3FNUZ,
            DataType::Float8E5M2 => TensorElementType::Float8E5M2,
            DataType::Float8E5M2FNUZ => TensorElementType::Float8E5M2FNUZ,
            DataType::Uint4 => TensorElementType::Uint4,
            DataType::Int4 => TensorElementType::Int4,
            DataType::Float4E2M1 => TensorElementType::Float4E2M1,
            DataType::Float8E8M0 => TensorElementType::Float8E8M0,
            DataType::Uint2 => TensorElementType::Uint2,
            DataType::Int2 => TensorElementType::Int2,
            DataType::Undefined | DataType::Float6E2M3 | DataType::Float6E3M2 | DataType::Unknown(_) => {
                return None;
            }
        })
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.onnx_name())
    }
}
