//! A minimal ONNX model writer, for tests and benchmarks that need models
//! of a chosen size without Python: graphs of plain nodes with integer
//! attributes, tensor inputs and outputs, and initializers stored inline,
//! in typed fields, or in external data.
//!
//! ```
//! use tally_onnx::DataType;
//! use tally_onnx::write::{GraphWriter, Node, TensorPayload};
//! let mut graph = GraphWriter::new("double");
//! graph.input("x", DataType::Float, &[Some(2)]);
//! graph.output("y", DataType::Float, &[Some(2)]);
//! graph.initializer("two", DataType::Float, &[1], TensorPayload::Raw(2f32.to_le_bytes().to_vec()));
//! graph.node(Node::new("Mul", &["x", "two"], &["y"]));
//! let bytes = graph.model_bytes(17);
//! assert!(bytes.len() > 20);
//! ```

use crate::dtype::DataType;

/// Where an initializer's data goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TensorPayload {
    /// `raw_data`.
    Raw(Vec<u8>),
    /// `string_data` (for `STRING`).
    Strings(Vec<Vec<u8>>),
    /// `int64_data` values (a typed field).
    Int64s(Vec<i64>),
    /// External data: `location`, `offset`, `length` entries.
    External {
        /// Path relative to the model's directory.
        location: String,
        /// Byte offset in that file.
        offset: u64,
        /// Byte length (the entry is omitted when `None`).
        length: Option<u64>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Attribute {
    Int(i64),
    Tensor(Vec<u8>),
    Graph(Vec<u8>),
}

/// One node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    op_type: String,
    inputs: Vec<String>,
    outputs: Vec<String>,
    attributes: Vec<(String, Attribute)>,
}

impl Node {
    /// A node of the default domain.
    pub fn new(op_type: &str, inputs: &[&str], outputs: &[&str]) -> Self {
        Self {
            op_type: op_type.to_owned(),
            inputs: inputs.iter().map(|name| (*name).to_owned()).collect(),
            outputs: outputs.iter().map(|name| (*name).to_owned()).collect(),
            attributes: Vec::new(),
        }
    }

    /// Adds an integer attribute (e.g. `Cast`'s `to`).
    pub fn int(mut self, name: &str, value: i64) -> Self {
        self.attributes.push((name.to_owned(), Attribute::Int(value)));
        self
    }

    /// Adds a tensor attribute (e.g. `Constant`'s `value`) with raw data.
    pub fn tensor(mut self, name: &str, data_type: DataType, dims: &[u64], raw: Vec<u8>) -> Self {
        let tensor = tensor_proto("", data_type, dims, &TensorPayload::Raw(raw));
        self.attributes.push((name.to_owned(), Attribute::Tensor(tensor)));
        self
    }

    /// Adds a graph attribute (e.g. an `If` branch).
    pub fn subgraph(mut self, name: &str, graph: &GraphWriter) -> Self {
        self.attributes.push((name.to_owned(), Attribute::Graph(graph.graph_bytes())));
        self
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for input in &self.inputs {
            put_bytes(&mut out, 1, input.as_bytes());
        }
        for output in &self.outputs {
            put_bytes(&mut out, 2, output.as_bytes());
        }
        put_bytes(&mut out, 4, self.op_type.as_bytes());
        for (name, value) in &self.attributes {
            // AttributeProto: name 1, i 3, t 5, g 6, type 20 (INT 2, TENSOR 4, GRAPH 5).
            let mut attribute = Vec::new();
            put_bytes(&mut attribute, 1, name.as_bytes());
            match value {
                Attribute::Int(value) => {
                    put_varint_field(&mut attribute, 3, *value as u64);
                    put_varint_field(&mut attribute, 20, 2);
                }
                Attribute::Tensor(tensor) => {
                    put_bytes(&mut attribute, 5, tensor);
                    put_varint_field(&mut attribute, 20, 4);
                }
                Attribute::Graph(graph) => {
                    put_bytes(&mut attribute, 6, graph);
                    put_varint_field(&mut attribute, 20, 5);
                }
            }
            put_bytes(&mut out, 5, &attribute);
        }
        out
    }
}

/// A graph being written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GraphWriter {
    name: String,
    nodes: Vec<Vec<u8>>,
    initializers: Vec<Vec<u8>>,
    inputs: Vec<Vec<u8>>,
    outputs: Vec<Vec<u8>>,
}

impl GraphWriter {
    /// An empty graph.
    pub fn new(name: &str) -> Self {
        Self { name: name.to_owned(), ..Default::default() }
    }

    /// Declares a tensor input; `None` dimensions are dynamic, named
    /// `d<index>` after their position.
    pub fn input(&mut self, name: &str, data_type: DataType, dims: &[Option<u64>]) -> &mut Self {
        self.inputs.push(value_info(name, data_type, dims));
        self
    }

    /// Declares a tensor output.
    pub fn output(&mut self, name: &str, data_type: DataType, dims: &[Option<u64>]) -> &mut Self {
        self.outputs.push(value_info(name, data_type, dims));
        self
    }

    /// Adds an initializer.
    pub fn initializer(
        &mut self,
        name: &str,
        data_type: DataType,
        dims: &[u64],
        payload: TensorPayload,
    ) -> &mut Self {
        self.initializers.push(tensor_proto(name, data_type, dims, &payload));
        self
    }

    /// Adds a node.
    pub fn node(&mut self, node: Node) -> &mut Self {
        self.nodes.push(node.encode());
        self
    }

    /// The encoded `GraphProto`.
    pub fn graph_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for node in &self.nodes {
            put_bytes(&mut out, 1, node);
        }
        put_bytes(&mut out, 2, self.name.as_bytes());
        for initializer in &self.initializers {
            put_bytes(&mut out, 5, initializer);
        }
        for input in &self.inputs {
            put_bytes(&mut out, 11, input);
        }
        for output in &self.outputs {
            put_bytes(&mut out, 12, output);
        }
        out
    }

    /// The encoded `ModelProto` (IR version 8) importing the default domain
    /// at `opset`.
    pub fn model_bytes(&self, opset: i64) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint_field(&mut out, 1, 8);
        put_bytes(&mut out, 2, b"tally-onnx");
        put_bytes(&mut out, 7, &self.graph_bytes());
        let mut import = Vec::new();
        put_bytes(&mut import, 1, b"");
        put_varint_field(&mut import, 2, opset as u64);
        put_bytes(&mut out, 8, &import);
        out
    }
}

fn value_info(name: &str, data_type: DataType, dims: &[Option<u64>]) -> Vec<u8> {
    let mut shape = Vec::new();
    for (index, dim) in dims.iter().enumerate() {
        let mut dimension = Vec::new();
        match dim {
            Some(size) => put_varint_field(&mut dimension, 1, *size),
            None => put_bytes(&mut dimension, 2, format!("d{index}").as_bytes()),
        }
        put_bytes(&mut shape, 1, &dimension);
    }
    let mut tensor_type = Vec::new();
    put_varint_field(&mut tensor_type, 1, data_type.code() as u64);
    put_bytes(&mut tensor_type, 2, &shape);
    let mut type_proto = Vec::new();
    put_bytes(&mut type_proto, 1, &tensor_type);
    let mut out = Vec::new();
    put_bytes(&mut out, 1, name.as_bytes());
    put_bytes(&mut out, 2, &type_proto);
    out
}

/// An encoded `TensorProto`.
pub fn tensor_proto(name: &str, data_type: DataType, dims: &[u64], payload: &TensorPayload) -> Vec<u8> {
    let mut out = Vec::new();
    let mut packed = Vec::new();
    for &dim in dims {
        put_varint(&mut packed, dim);
    }
    if !dims.is_empty() {
        put_bytes(&mut out, 1, &packed);
    }
    put_varint_field(&mut out, 2, data_type.code() as u64);
    put_bytes(&mut out, 8, name.as_bytes());
    match payload {
        TensorPayload::Raw(bytes) => put_bytes(&mut out, 9, bytes),
        TensorPayload::Strings(strings) => {
            for string in strings {
                put_bytes(&mut out, 6, string);
            }
        }
        TensorPayload::Int64s(values) => {
            let mut packed = Vec::new();
            for &value in values {
                put_varint(&mut packed, value as u64);
            }
            put_bytes(&mut out, 7, &packed);
        }
        TensorPayload::External { location, offset, length } => {
            let mut entries = vec![("location", location.clone()), ("offset", offset.to_string())];
            if let Some(length) = length {
                entries.push(("length", length.to_string()));
            }
            for (key, value) in entries {
                let mut entry = Vec::new();
                put_bytes(&mut entry, 1, key.as_bytes());
                put_bytes(&mut entry, 2, value.as_bytes());
                put_bytes(&mut out, 13, &entry);
            }
            put_varint_field(&mut out, 14, 1);
        }
    }
    out
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn put_varint_field(out: &mut Vec<u8>, field: u32, value: u64) {
    put_varint(out, u64::from(field) << 3);
    put_varint(out, value);
}

fn put_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_varint(out, (u64::from(field) << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}
