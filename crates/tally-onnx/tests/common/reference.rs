//! The fixture networks of python/fixtures/make_onnx_models.py, computed in
//! plain Rust from the initializers read out of the model files: if ONNX
//! Runtime's outputs match these, it really ran the model on the inputs.

use std::path::Path;

use tally_onnx::{DataType, ModelInfo, TensorData, f16_to_f64, f64_to_f16};

/// An initializer as `f64`s with its shape.
pub fn weights(model: &Path, name: &str) -> (Vec<u64>, Vec<f64>) {
    let info = ModelInfo::read(model).expect("fixture model reads");
    let tensor =
        info.initializer(name).unwrap_or_else(|| panic!("initializer {name} in {}", model.display()));
    let bytes = info.tensor_bytes(tensor).expect("initializer bytes");
    let data =
        TensorData { name: name.to_owned(), data_type: tensor.data_type, shape: tensor.dims.clone(), bytes };
    (tensor.dims.clone(), data.to_f64().expect("numeric initializer"))
}

/// `a [n, k] @ b [k, m]` in f64.
pub fn matmul(a: &[f64], n: usize, k: usize, b: &[f64], m: usize) -> Vec<f64> {
    let mut out = vec![0.0; n * m];
    for row in 0..n {
        for column in 0..m {
            out[row * m + column] = (0..k).map(|inner| a[row * k + inner] * b[inner * m + column]).sum();
        }
    }
    out
}

fn add_bias(values: &mut [f64], bias: &[f64]) {
    for (index, value) in values.iter_mut().enumerate() {
        *value += bias[index % bias.len()];
    }
}

fn round_f16(value: f64) -> f64 {
    f16_to_f64(f64_to_f16(value))
}

fn round_f32(value: f64) -> f64 {
    f64::from(value as f32)
}

/// mlp_f32_f16.onnx on `x` [rows, 8].
pub fn mlp(model: &Path, x: &[f64], rows: usize) -> Vec<f64> {
    let (_, w1) = weights(model, "w1");
    let (_, b1) = weights(model, "b1");
    let (_, w2) = weights(model, "w2");
    let (_, b2) = weights(model, "b2");
    let mut hidden = matmul(x, rows, 8, &w1, 16);
    add_bias(&mut hidden, &b1);
    let hidden: Vec<f64> = hidden.into_iter().map(|v| round_f16(round_f32(v).max(0.0))).collect();
    let product: Vec<f64> = matmul(&hidden, rows, 16, &w2, 4).into_iter().map(round_f16).collect();
    product.iter().enumerate().map(|(index, v)| round_f16(v + b2[index % 4])).collect()
}

/// external_data.onnx on `x` [1, 32]: 64 values (shaped [8, 8]).
pub fn external(model: &Path, x: &[f64]) -> Vec<f64> {
    let (_, w) = weights(model, "w");
    let (_, b) = weights(model, "b");
    let mut out = matmul(x, 1, 32, &w, 64);
    add_bias(&mut out, &b);
    out
}

/// symbolic_batch.onnx on `x` [batch, seq, 4] (as batch*seq rows).
pub fn symbolic(model: &Path, x: &[f64], rows: usize) -> Vec<f64> {
    let (_, w) = weights(model, "w");
    let (_, b) = weights(model, "b");
    let mut out = matmul(x, rows, 4, &w, 3);
    add_bias(&mut out, &b);
    out.into_iter().map(f64::tanh).collect()
}

/// Asserts `actual` matches `expected` within `relative` (of max(1, |expected|)).
pub fn assert_close(actual: &[f64], expected: &[f64], relative: f64, what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: length");
    for (index, (a, e)) in actual.iter().zip(expected).enumerate() {
        let tolerance = relative * e.abs().max(1.0);
        assert!((a - e).abs() <= tolerance, "{what}[{index}]: runtime {a} vs reference {e}");
    }
    // The outputs must not be trivially equal to a constant (a run that did nothing).
    let first = expected.first().copied().unwrap_or(0.0);
    assert!(expected.iter().any(|value| (value - first).abs() > 1e-6), "{what}: reference is constant");
}

/// The input's data type must be float32 for these networks.
pub fn float_input(tensor: &TensorData) -> Vec<f64> {
    assert_eq!(tensor.data_type, DataType::Float, "input {}", tensor.name);
    tensor.to_f64().expect("float input")
}
