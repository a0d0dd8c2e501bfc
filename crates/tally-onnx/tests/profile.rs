//! Profiling runs on the real ONNX Runtime: the adapter's metadata,
//! footprint and artifacts in the profile, call counts, batch sizes and
//! throughput, and the outputs checked against the same networks computed
//! in Rust from the initializers. Skipped (with a message) where no ONNX
//! Runtime library is found.

mod common;

use common::reference::{self, assert_close, float_input};
use common::{expected, fixture, runtime_library};
use tally_onnx::{
    OnnxError, OnnxResourceProfileAdapter, OnnxRuntime, OnnxSession, OutputValue, ProfileOptions, ProfileRun,
    SessionOptions, ShapeBindings, profile_model,
};
use tally_profile::profile::{
    ArtifactStatus, DeviceMemoryStatus, FootprintStatus, ProfileStatus, ResourceProfile,
};
use tally_profile::{ProfilerConfig, ResourceProfileAdapter};

fn options(library: &std::path::Path, calls: u64, warmup: bool, bindings: ShapeBindings) -> ProfileOptions {
    ProfileOptions { library: Some(library.to_path_buf()), bindings, calls, warmup, ..Default::default() }
}

fn output(run: &ProfileRun, index: usize) -> (Vec<u64>, Vec<f64>) {
    match &run.outputs[index] {
        OutputValue::Tensor(tensor) => (tensor.shape.clone(), tensor.to_f64().expect("numeric output")),
        OutputValue::Other { name, description } => panic!("output {name} is {description}"),
    }
}

/// The parts every profile of these models shares.
fn check_common(profile: &ResourceProfile, model: &str, calls: u64, samples: u64) {
    let want = &expected()[model];
    assert_eq!(profile.status, ProfileStatus::Measured);
    let inference = &profile.inference;
    assert_eq!(inference.status, ProfileStatus::Measured);
    assert_eq!(inference.batch_sizes, vec![samples; calls as usize]);
    assert_eq!(inference.warm_call_count, calls - 1);
    assert_eq!(inference.materialized_samples, samples * calls);
    let total = inference.total_materialized_seconds.expect("total");
    let throughput = inference.throughput_samples_per_second.expect("throughput");
    assert!(total > 0.0);
    assert!((throughput - (samples * calls) as f64 / total).abs() <= 1e-9 * throughput);
    // vertebrae's ONNX adapter: synchronized by InferenceSession.run, device memory unavailable.
    let context = &profile.context;
    assert_eq!(context["backend"], "onnxruntime");
    assert_eq!(context["device"], "CPUExecutionProvider");
    assert_eq!(context["device_resolution"], "active_provider");
    assert_eq!(context["asynchronous"], false);
    assert_eq!(context["synchronization_method"], "InferenceSession.run");
    assert_eq!(context["synchronization_status"], "synchronized");
    assert_eq!(context["resource_adapter"], "tally_onnx.OnnxResourceProfileAdapter");
    assert_eq!(context["weight_dtypes"], want["weight_dtypes"]);
    assert!(context["onnxruntime_version"].as_str().is_some_and(|v| v.starts_with("1.")));
    let device = &profile.device_memory;
    assert_eq!(device.status, DeviceMemoryStatus::Unavailable);
    assert_eq!(device.unavailable_reason.as_deref(), Some(tally_onnx::NO_ALLOCATOR_PEAK_API));
    assert_eq!(device.backend.as_deref(), Some("onnxruntime"));
    assert_eq!(device.device.as_deref(), Some("CPUExecutionProvider"));
    assert!(
        profile
            .warnings
            .contains(&format!("Peak device memory is unavailable: {}", tally_onnx::NO_ALLOCATOR_PEAK_API))
    );
    // The footprint beyond vertebrae: from the model file.
    let model_footprint = &profile.model;
    assert_eq!(model_footprint.status, FootprintStatus::Measured);
    assert_eq!(model_footprint.parameter_status, FootprintStatus::Measured);
    assert_eq!(model_footprint.checkpoint_status, FootprintStatus::Measured);
    assert_eq!(model_footprint.parameter_count, want["parameter_count"].as_u64());
    assert_eq!(model_footprint.parameter_bytes, want["parameter_bytes"].as_u64());
    assert_eq!(serde_json::json!(model_footprint.weight_dtypes), want["weight_dtypes"]);
    let model_bytes = std::fs::metadata(fixture(model)).expect("model").len();
    let external: u64 =
        want["external_data"].as_object().expect("object").values().filter_map(|v| v.as_u64()).sum();
    assert_eq!(model_footprint.checkpoint_bytes, Some(model_bytes + external));
    assert_eq!(model_footprint.artifacts.len(), 1 + want["external_data"].as_object().expect("object").len());
    assert_eq!(model_footprint.artifacts[0].role, "checkpoint");
    assert!(model_footprint.artifacts.iter().all(|a| a.status == ArtifactStatus::Measured));
    assert!(model_footprint.artifacts[1..].iter().all(|a| a.role == "external_weights"));
    // The JSON is vertebrae's.
    let json = profile.to_json_value().expect("finite profile");
    let back = ResourceProfile::from_json_value(json).expect("reloads");
    assert_eq!(&back, profile);
}

#[test]
fn mlp_with_float32_and_float16_weights() {
    let Some(library) = runtime_library() else { return };
    let model = fixture("mlp_f32_f16.onnx");
    let run =
        profile_model(&model, &options(&library, 5, false, ShapeBindings::default())).expect("profiles");
    check_common(&run.profile, "mlp_f32_f16.onnx", 5, 4);
    assert_eq!(run.samples_per_call, 4);
    assert_eq!(run.inputs.len(), 1);
    assert_eq!(run.inputs[0].shape, [4, 8]);
    let x = float_input(&run.inputs[0]);
    let (shape, y) = output(&run, 0);
    assert_eq!(shape, [4, 4]);
    // ONNX Runtime's CPU provider runs the float16 layer in float32 (it inserts casts around
    // kernels it lacks in float16); the reference rounds every float16 step: a few half ulps apart.
    assert_close(&y, &reference::mlp(&model, &x, 4), 4e-3, "mlp y");
}

#[test]
fn external_data_model() {
    let Some(library) = runtime_library() else { return };
    let model = fixture("external_data.onnx");
    let run = profile_model(&model, &options(&library, 3, true, ShapeBindings::default())).expect("profiles");
    // The warmup is the first call; the 3 calls are all warm.
    check_common(&run.profile, "external_data.onnx", 4, 1);
    assert_eq!(run.profile.context["call_types"], serde_json::json!(["warmup", "batch", "batch", "batch"]));
    let x = float_input(&run.inputs[0]);
    let (shape, y) = output(&run, 0);
    assert_eq!(shape, [8, 8]);
    assert_close(&y, &reference::external(&model, &x), 1e-5, "external y");
}

#[test]
fn symbolic_batch_model_with_dims() {
    let Some(library) = runtime_library() else { return };
    let model = fixture("symbolic_batch.onnx");
    let mut bindings = ShapeBindings { batch: Some(3), ..Default::default() };
    bindings.dims.insert("seq".into(), 5);
    let run = profile_model(&model, &options(&library, 4, false, bindings)).expect("profiles");
    check_common(&run.profile, "symbolic_batch.onnx", 4, 3);
    assert_eq!(run.inputs[0].shape, [3, 5, 4]);
    let x = float_input(&run.inputs[0]);
    let (shape, y) = output(&run, 0);
    assert_eq!(shape, [3, 5, 3]);
    assert_close(&y, &reference::symbolic(&model, &x, 15), 1e-5, "symbolic y");

    // Without --dim seq the error names the input and the dimension.
    let error = profile_model(&model, &options(&library, 1, false, ShapeBindings::default()))
        .expect_err("seq unsized");
    let text = error.to_string();
    assert!(text.contains("'x'") && text.contains("seq"), "{text}");
}

#[test]
fn unsynthesizable_inputs_are_named() {
    let Some(library) = runtime_library() else { return };
    for (model, input, kind) in [
        ("string_input.onnx", "text", "string"),
        ("sequence_input.onnx", "items", "sequence"),
        ("map_input.onnx", "features", "map"),
    ] {
        let error = profile_model(&fixture(model), &options(&library, 1, false, ShapeBindings::default()))
            .expect_err(model);
        assert!(
            matches!(&error, OnnxError::UnsupportedInput { input: name, .. } if name == input),
            "{model}: {error}"
        );
        assert!(error.to_string().contains(kind), "{model}: {error}");
    }
}

#[test]
fn adapter_before_and_after_a_session() {
    let Some(library) = runtime_library() else { return };
    let model = fixture("mlp_f32_f16.onnx");
    let mut configured = OnnxResourceProfileAdapter::configured(&model, Vec::new());
    let metadata = configured.metadata().expect("metadata");
    assert_eq!(metadata.device.as_deref(), Some("CPUExecutionProvider"));
    assert_eq!(metadata.device_resolution.as_str(), "configured_provider");
    let runtime = OnnxRuntime::load(Some(&library)).expect("loads");
    let session = OnnxSession::open(&runtime, &model, &SessionOptions::default()).expect("session");
    let mut active = OnnxResourceProfileAdapter::for_session(&session);
    let metadata = active.metadata().expect("metadata");
    assert_eq!(metadata.device_resolution.as_str(), "active_provider");
    assert_eq!(metadata.weight_dtypes, ["TensorProto.FLOAT", "TensorProto.FLOAT16"]);
    let sync = active.synchronize().expect("sync");
    assert_eq!(sync.status, tally_profile::profile::OperationStatus::Succeeded);
    let artifacts = active.deployment_artifacts().expect("artifacts");
    assert_eq!(artifacts.len(), 1);
    assert_eq!(artifacts[0].path.as_str(), model.to_string_lossy());
    // With the profiler's device memory off, the status is `disabled`, not a warning.
    let run = profile_model(
        &model,
        &ProfileOptions {
            library: Some(library.clone()),
            calls: 2,
            profiler: ProfilerConfig { device_memory: false, ..ProfilerConfig::default() },
            ..Default::default()
        },
    )
    .expect("profiles");
    assert_eq!(run.profile.device_memory.status, DeviceMemoryStatus::Disabled);
    // An unreadable model file gives an unavailable footprint with the reason, not a failure.
    let mut missing =
        OnnxResourceProfileAdapter::configured(std::path::Path::new("/nonexistent/model.onnx"), Vec::new());
    let footprint = missing.model_footprint().expect("hook answers");
    assert!(
        footprint.readings().unavailable_reason.as_deref().is_some_and(|r| r.contains("could not be read"))
    );
}

#[test]
fn zero_calls_is_an_error() {
    let Some(library) = runtime_library() else { return };
    let error =
        profile_model(&fixture("mlp_f32_f16.onnx"), &options(&library, 0, false, ShapeBindings::default()))
            .expect_err("zero calls");
    assert!(matches!(error, OnnxError::Options(_)));
}

/// Inputs of float16, bfloat16, int64 and bool are synthesized as bytes and
/// read back: the model casts or copies each to an output.
#[test]
fn typed_inputs_round_trip_through_the_runtime() {
    use tally_onnx::DataType;
    use tally_onnx::write::{GraphWriter, Node};
    let Some(library) = runtime_library() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut graph = GraphWriter::new("typed");
    graph.input("half", DataType::Float16, &[None, Some(3)]);
    graph.input("brain", DataType::Bfloat16, &[None, Some(2)]);
    graph.input("ids", DataType::Int64, &[None]);
    graph.input("mask", DataType::Bool, &[None, Some(4)]);
    graph.output("half_f32", DataType::Float, &[None, Some(3)]);
    graph.output("brain_f32", DataType::Float, &[None, Some(2)]);
    graph.output("ids_out", DataType::Int64, &[None]);
    graph.output("mask_out", DataType::Bool, &[None, Some(4)]);
    graph.node(Node::new("Cast", &["half"], &["half_f32"]).int("to", 1));
    graph.node(Node::new("Cast", &["brain"], &["brain_f32"]).int("to", 1));
    graph.node(Node::new("Identity", &["ids"], &["ids_out"]));
    graph.node(Node::new("Identity", &["mask"], &["mask_out"]));
    let model = dir.path().join("typed.onnx");
    std::fs::write(&model, graph.model_bytes(17)).expect("write");
    let bindings = ShapeBindings { batch: Some(5), ..Default::default() };
    let run = profile_model(&model, &options(&library, 2, false, bindings)).expect("profiles");
    assert_eq!(run.samples_per_call, 5);
    assert_eq!(run.profile.inference.batch_sizes, [5, 5]);
    assert_eq!(run.profile.model.parameter_count, Some(0));
    for (index, (input, output)) in run.inputs.iter().zip(&run.outputs).enumerate() {
        let OutputValue::Tensor(output) = output else { panic!("output {index} is not a tensor") };
        assert_eq!(input.shape, output.shape, "{}", input.name);
        assert_eq!(input.to_f64(), output.to_f64(), "{}", input.name);
    }
    // Floating inputs vary; integer and bool inputs are zeros.
    let half = run.inputs[0].to_f64().expect("numeric");
    assert!(half.iter().any(|v| *v != half[0]) && half.iter().all(|v| (-1.0..=1.0).contains(v)));
    assert!(run.inputs[2].to_f64().expect("numeric").iter().all(|v| *v == 0.0));
}
