//! The model footprint read from `.onnx` files: the committed fixtures
//! (made by python/fixtures/make_onnx_models.py, whose expected.json holds
//! what the script put in them, computed by numpy), models written here
//! with every ONNX data type and storage, and damaged files.

mod common;

use std::path::PathBuf;

use common::{expected, fixture, fixtures};
use proptest::prelude::*;
use tally_onnx::write::{GraphWriter, Node, TensorPayload};
use tally_onnx::{DataType, ModelInfo, ModelReadError, Storage, TensorRole};
use tally_profile::profile::ModelMeasurementStatus;

const MODELS: [&str; 6] = [
    "mlp_f32_f16.onnx",
    "external_data.onnx",
    "symbolic_batch.onnx",
    "string_input.onnx",
    "sequence_input.onnx",
    "map_input.onnx",
];

#[test]
fn fixtures_match_what_the_script_put_in_them() {
    let expected = expected();
    for name in MODELS {
        let want = &expected[name];
        let info = ModelInfo::read(fixture(name)).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(Some(info.parameter_count()), want["parameter_count"].as_u64(), "{name} parameter count");
        assert_eq!(info.parameter_bytes(), want["parameter_bytes"].as_u64(), "{name} parameter bytes");
        let dtypes: Vec<String> = want["weight_dtypes"]
            .as_array()
            .expect("list")
            .iter()
            .map(|value| value.as_str().expect("string").to_owned())
            .collect();
        assert_eq!(info.weight_dtypes(), dtypes, "{name} dtypes");
        let files: Vec<PathBuf> = want["external_data"]
            .as_object()
            .expect("object")
            .keys()
            .map(|file| fixtures().join(file))
            .collect();
        assert_eq!(info.external_data_files(), files, "{name} external files");
        assert_eq!(info.has_external_data(), !files.is_empty(), "{name}");
        let footprint = info.footprint();
        assert_eq!(footprint.status(), ModelMeasurementStatus::Measured, "{name}");
        assert_eq!(footprint.readings().parameter_count, want["parameter_count"].as_u64());
        assert_eq!(
            footprint.readings().in_memory_bytes,
            want["parameter_bytes"].as_u64(),
            "{name}: no constants"
        );
    }
}

#[test]
fn external_tensors_are_the_ones_the_script_moved_out() {
    let expected = expected();
    let info = ModelInfo::read(fixture("external_data.onnx")).expect("reads");
    let external: Vec<&str> = info
        .tensors()
        .iter()
        .filter(|tensor| matches!(tensor.storage, Storage::External { .. }))
        .map(|tensor| tensor.name.as_str())
        .collect();
    let want: Vec<&str> = expected["external_data.onnx"]["external_tensors"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(external, want);
    // The external file holds exactly the external tensors' bytes.
    let file_size = expected["external_data.onnx"]["external_data"]["external_data.bin"].as_u64();
    let external_bytes: u64 = info
        .tensors()
        .iter()
        .filter(|tensor| matches!(tensor.storage, Storage::External { .. }))
        .filter_map(|tensor| tensor.bytes)
        .sum();
    assert_eq!(Some(external_bytes), file_size);
    let weight = info.initializer("w").expect("w");
    assert_eq!(info.tensor_bytes(weight).expect("bytes").len() as u64, external_bytes);
    let artifacts = info.deployment_artifacts();
    let roles: Vec<(&str, &str)> =
        artifacts.iter().map(|artifact| (artifact.path.as_str(), artifact.role.as_str())).collect();
    let model = fixture("external_data.onnx").display().to_string();
    let data = fixture("external_data.bin").display().to_string();
    assert_eq!(roles, [(model.as_str(), "checkpoint"), (data.as_str(), "external_weights")]);
}

/// Every known type with a fixed size: elements x bits / 8, rounded up.
#[test]
fn every_data_type_is_sized() {
    let cases: &[(DataType, u64, u64)] = &[
        (DataType::Float, 3, 12),
        (DataType::Uint8, 3, 3),
        (DataType::Int8, 3, 3),
        (DataType::Uint16, 3, 6),
        (DataType::Int16, 3, 6),
        (DataType::Int32, 3, 12),
        (DataType::Int64, 3, 24),
        (DataType::Bool, 3, 3),
        (DataType::Float16, 3, 6),
        (DataType::Double, 3, 24),
        (DataType::Uint32, 3, 12),
        (DataType::Uint64, 3, 24),
        (DataType::Complex64, 3, 24),
        (DataType::Complex128, 3, 48),
        (DataType::Bfloat16, 3, 6),
        (DataType::Float8E4M3FN, 3, 3),
        (DataType::Float8E4M3FNUZ, 3, 3),
        (DataType::Float8E5M2, 3, 3),
        (DataType::Float8E5M2FNUZ, 3, 3),
        (DataType::Uint4, 3, 2),
        (DataType::Int4, 3, 2),
        (DataType::Float4E2M1, 3, 2),
        (DataType::Float8E8M0, 3, 3),
        (DataType::Uint2, 5, 2),
        (DataType::Int2, 5, 2),
        (DataType::Float6E2M3, 5, 4),
        (DataType::Float6E3M2, 4, 3),
    ];
    let known_sized: Vec<DataType> = DataType::KNOWN.into_iter().filter(|t| t.bits().is_some()).collect();
    let covered: Vec<DataType> = cases.iter().map(|case| case.0).collect();
    assert_eq!(known_sized, covered, "every sized type has a case");
    for &(data_type, elements, bytes) in cases {
        assert_eq!(data_type.bytes_for(elements), Some(bytes), "{data_type}");
        assert_eq!(DataType::from_code(data_type.code()), data_type);
    }
    assert_eq!(DataType::from_code(99), DataType::Unknown(99));
    assert_eq!(DataType::Unknown(99).bytes_for(1), None);
}

fn write_model(dir: &std::path::Path, name: &str, graph: &GraphWriter) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, graph.model_bytes(17)).expect("write model");
    path
}

#[test]
fn strings_constants_subgraphs_typed_and_unknown_types() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut branch = GraphWriter::new("branch");
    branch.initializer("inner", DataType::Int32, &[2, 3], TensorPayload::Raw(vec![0; 24]));
    let mut graph = GraphWriter::new("main");
    graph.initializer(
        "words",
        DataType::String,
        &[2],
        TensorPayload::Strings(vec![b"ab".to_vec(), b"cde".to_vec()]),
    );
    graph.initializer("typed", DataType::Int64, &[3], TensorPayload::Int64s(vec![1, -2, 3]));
    graph.node(Node::new("Constant", &[], &["c"]).tensor("value", DataType::Float16, &[4], vec![0; 8]));
    graph.node(Node::new("If", &["cond"], &["out"]).subgraph("then_branch", &branch));
    let path = write_model(dir.path(), "mixed.onnx", &graph);
    let info = ModelInfo::read(&path).expect("reads");
    assert_eq!(info.graph_name(), Some("main"));
    assert_eq!(info.parameter_count(), 2 + 3 + 6);
    assert_eq!(info.parameter_bytes(), Some(5 + 24 + 24));
    assert_eq!(info.constant_bytes(), Some(8));
    let inner = info.initializer("inner").expect("subgraph initializer");
    assert!(inner.in_subgraph);
    assert_eq!(info.initializer("typed").map(|t| &t.storage), Some(&Storage::Typed));
    let constant = info.tensors().iter().find(|t| t.role == TensorRole::Constant).expect("constant");
    assert_eq!(constant.data_type, DataType::Float16);
    assert_eq!(
        info.weight_dtypes(),
        ["TensorProto.FLOAT16", "TensorProto.INT32", "TensorProto.INT64", "TensorProto.STRING"]
    );
    assert!(matches!(
        info.tensor_bytes(info.initializer("typed").expect("typed")),
        Err(ModelReadError::TensorData { .. })
    ));
    let footprint = info.footprint();
    assert_eq!(footprint.readings().buffer_bytes, Some(8));
    assert_eq!(footprint.readings().in_memory_bytes, Some(5 + 24 + 24 + 8));

    let mut unknown = GraphWriter::new("future");
    unknown.initializer("f", DataType::Unknown(77), &[4], TensorPayload::Raw(vec![0; 4]));
    let path = write_model(dir.path(), "future.onnx", &unknown);
    let info = ModelInfo::read(&path).expect("reads");
    assert_eq!(info.parameter_count(), 4);
    assert_eq!(info.parameter_bytes(), None, "an unknown type has no size");
    assert_eq!(info.footprint().status(), ModelMeasurementStatus::Measured);
}

#[test]
fn damaged_and_foreign_files_are_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = std::fs::read(fixture("mlp_f32_f16.onnx")).expect("fixture");
    for cut in [1, good.len() / 3, good.len() / 2, good.len() - 1] {
        let path = dir.path().join(format!("cut{cut}.onnx"));
        std::fs::write(&path, &good[..cut]).expect("write");
        assert!(ModelInfo::read(&path).is_err(), "a model cut at {cut} bytes is rejected");
    }
    let text = dir.path().join("text.onnx");
    std::fs::write(&text, "this is not a model\n").expect("write");
    assert!(ModelInfo::read(&text).is_err());
    let empty = dir.path().join("empty.onnx");
    std::fs::write(&empty, b"").expect("write");
    assert!(matches!(ModelInfo::read(&empty), Err(ModelReadError::NoGraph { .. })));
    assert!(matches!(ModelInfo::read(dir.path().join("missing.onnx")), Err(ModelReadError::Io { .. })));
    // A negative dimension.
    let mut graph = GraphWriter::new("g");
    graph.initializer("neg", DataType::Float, &[u64::MAX], TensorPayload::Raw(Vec::new()));
    let path = write_model(dir.path(), "negative.onnx", &graph);
    let error = ModelInfo::read(&path).expect_err("negative dim");
    assert!(error.to_string().contains("negative dimension"), "{error}");
}

fn sized_type() -> impl Strategy<Value = DataType> {
    proptest::sample::select(DataType::KNOWN.into_iter().filter(|t| t.bits().is_some()).collect::<Vec<_>>())
}

#[derive(Debug, Clone)]
struct Spec {
    data_type: DataType,
    dims: Vec<u64>,
    external: bool,
}

fn spec() -> impl Strategy<Value = Spec> {
    (sized_type(), proptest::collection::vec(0u64..6, 0..4), any::<bool>())
        .prop_map(|(data_type, dims, external)| Spec { data_type, dims, external })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Models of random initializers, inline or external: counts, bytes and
    /// stored data come back as written.
    #[test]
    fn written_initializers_read_back(specs in proptest::collection::vec(spec(), 0..8)) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut graph = GraphWriter::new("random");
        let mut external = Vec::new();
        let mut want_count = 0u64;
        let mut want_bytes = 0u64;
        for (index, spec) in specs.iter().enumerate() {
            let elements: u64 = spec.dims.iter().product();
            let bytes = spec.data_type.bytes_for(elements).expect("sized");
            want_count += elements;
            want_bytes += bytes;
            let data: Vec<u8> = (0..bytes).map(|i| (i as u8).wrapping_mul(31).wrapping_add(index as u8)).collect();
            let payload = if spec.external {
                let offset = external.len() as u64;
                external.extend_from_slice(&data);
                TensorPayload::External { location: "weights.bin".into(), offset, length: Some(bytes) }
            } else {
                TensorPayload::Raw(data.clone())
            };
            graph.initializer(&format!("t{index}"), spec.data_type, &spec.dims, payload);
        }
        std::fs::write(dir.path().join("weights.bin"), &external).expect("write");
        let path = write_model(dir.path(), "random.onnx", &graph);
        let info = ModelInfo::read(&path).expect("reads");
        prop_assert_eq!(info.parameter_count(), want_count);
        prop_assert_eq!(info.parameter_bytes(), Some(want_bytes));
        prop_assert_eq!(info.has_external_data(), specs.iter().any(|spec| spec.external));
        for (index, spec) in specs.iter().enumerate() {
            let tensor = info.initializer(&format!("t{index}")).expect("initializer");
            prop_assert_eq!(tensor.data_type, spec.data_type);
            prop_assert_eq!(&tensor.dims, &spec.dims);
            let bytes = info.tensor_bytes(tensor).expect("bytes");
            let want: Vec<u8> = (0..bytes.len()).map(|i| (i as u8).wrapping_mul(31).wrapping_add(index as u8)).collect();
            prop_assert_eq!(bytes, want);
        }
    }

    /// Arbitrary bytes never panic the reader.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("noise.onnx");
        std::fs::write(&path, &bytes).expect("write");
        let _ = ModelInfo::read(&path);
    }

    /// A real model with bytes flipped never panics the reader.
    #[test]
    fn corrupted_models_never_panic(flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let mut bytes = std::fs::read(fixture("mlp_f32_f16.onnx")).expect("fixture");
        for (index, value) in flips {
            let at = index.index(bytes.len());
            bytes[at] ^= value;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("flipped.onnx");
        std::fs::write(&path, &bytes).expect("write");
        let _ = ModelInfo::read(&path);
    }
}
