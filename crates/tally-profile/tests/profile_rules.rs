//! Every validation rule of the resource-profile types, with vertebrae
//! 1.1.0's messages, and the JSON shape rules of `resource_profile_from_dict`.

use serde_json::{Value, json};
use tally_profile::profile::stats::{
    int_true_div, ns_to_seconds, numpy_max, numpy_mean, numpy_median, numpy_percentile, numpy_sum, python_sum,
};
use tally_profile::profile::{
    AdapterOperationResult, ArtifactStatus, DeploymentArtifact, DeviceMeasurementStatus,
    DeviceMemoryMeasurement, DeviceMemoryProfile, DeviceMemoryReadings, DeviceMemoryStatus,
    EmbeddingFootprint, FootprintStatus, HostMemoryStatus, ModelFootprintMeasurement, ModelFootprintReadings,
    ModelMeasurementStatus, OperationStatus, PersistedArtifactFootprint, PersistedStatus, ProfileStatus,
    ResourceAdapterMetadata, ResourceProfile, common_profile_columns, resource_profile_columns,
};

fn error_of<T: serde::de::DeserializeOwned + std::fmt::Debug>(value: Value) -> String {
    match serde_json::from_value::<T>(value.clone()) {
        Ok(parsed) => panic!("accepted {value} as {parsed:?}"),
        Err(error) => error.to_string(),
    }
}

fn minimal() -> Value {
    json!({
        "inference": {"status": "not_measured"},
        "host_memory": {"status": "disabled"},
        "device_memory": {"status": "disabled"},
        "model": {"status": "unavailable"},
    })
}

fn with(mut base: Value, path: &[&str], value: Value) -> Value {
    let mut target = &mut base;
    for key in &path[..path.len() - 1] {
        target = &mut target[*key];
    }
    target[path[path.len() - 1]] = value;
    base
}

fn load_error(value: Value) -> String {
    match ResourceProfile::from_json_value(value.clone()) {
        Ok(profile) => panic!("accepted {value} as {profile:?}"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn operation_result_status_is_one_of_three() {
    let error = error_of::<AdapterOperationResult>(json!({"status": "done"}));
    assert!(
        error.contains(
            "AdapterOperationResult.status must be 'succeeded', 'not_applicable', or 'unavailable'."
        )
    );
    let parsed: AdapterOperationResult =
        serde_json::from_value(json!({"status": "unavailable"})).expect("accepted");
    assert_eq!(parsed, AdapterOperationResult::unavailable(None::<String>));
    assert_eq!(
        serde_json::to_value(AdapterOperationResult::succeeded()).expect("accepted"),
        json!({"status": "succeeded", "reason": null})
    );
    assert!(
        error_of::<AdapterOperationResult>(json!({"status": "succeeded", "extra": 1}))
            .contains("unknown field")
    );
    assert_eq!(
        "not_applicable".parse::<OperationStatus>().expect("accepted"),
        OperationStatus::NotApplicable
    );
}

#[test]
fn adapter_metadata_needs_a_device_resolution() {
    let error = error_of::<ResourceAdapterMetadata>(json!({"device_resolution": ""}));
    assert!(error.contains("ResourceAdapterMetadata.device_resolution must be non-empty."), "{error}");
    let defaults: ResourceAdapterMetadata = serde_json::from_value(json!({})).expect("accepted");
    assert_eq!(defaults, ResourceAdapterMetadata::default());
    assert_eq!(defaults.device_resolution.as_str(), "unavailable");
    assert!(!defaults.asynchronous);
    assert!(ResourceAdapterMetadata::default().with_device_resolution("").is_err());
    assert_eq!(
        ResourceAdapterMetadata::default()
            .with_device_resolution("explicit")
            .expect("accepted")
            .device_resolution
            .as_str(),
        "explicit"
    );
}

#[test]
fn device_measurement_rules() {
    let status_error = error_of::<DeviceMemoryMeasurement>(json!({"status": "partial"}));
    assert!(
        status_error.contains(
            "DeviceMemoryMeasurement.status must be 'measured', 'not_applicable', or 'unavailable'."
        )
    );
    let no_peak = error_of::<DeviceMemoryMeasurement>(
        json!({"status": "measured", "measurement_scope": "profile_window"}),
    );
    assert!(no_peak.contains("Measured DeviceMemoryMeasurement requires peak_allocated_bytes."), "{no_peak}");
    let no_scope =
        error_of::<DeviceMemoryMeasurement>(json!({"status": "measured", "peak_allocated_bytes": 1}));
    assert!(no_scope.contains("requires measurement_scope='profile_window'."), "{no_scope}");
    let wrong_scope = error_of::<DeviceMemoryMeasurement>(
        json!({"status": "measured", "peak_allocated_bytes": 1, "measurement_scope": "process"}),
    );
    assert!(wrong_scope.contains("requires measurement_scope='profile_window'."));
    let scoped = error_of::<DeviceMemoryMeasurement>(
        json!({"status": "unavailable", "measurement_scope": "profile_window"}),
    );
    assert!(
        scoped.contains("Unmeasured DeviceMemoryMeasurement must not declare a measurement_scope."),
        "{scoped}"
    );
    for field in
        ["baseline_allocated_bytes", "baseline_reserved_bytes", "peak_allocated_bytes", "peak_reserved_bytes"]
    {
        let mut value = json!({"status": "unavailable"});
        value[field] = json!(-1);
        let negative = error_of::<DeviceMemoryMeasurement>(value);
        assert!(negative.contains(&format!("{field} must be >= 0 when provided.")), "{negative}");
    }
    assert!(
        DeviceMemoryMeasurement::new(DeviceMeasurementStatus::Measured, DeviceMemoryReadings::default())
            .expect_err("rejected")
            .to_string()
            .contains("requires peak_allocated_bytes")
    );
    let measured = DeviceMemoryMeasurement::measured(DeviceMemoryReadings {
        peak_allocated_bytes: Some(5),
        ..Default::default()
    })
    .expect("accepted");
    let written = serde_json::to_value(&measured).expect("accepted");
    assert_eq!(written["measurement_scope"], "profile_window");
    let keys: Vec<&String> = written.as_object().expect("accepted").keys().collect();
    assert_eq!(keys.len(), 9);
    let back: DeviceMemoryMeasurement = serde_json::from_value(written).expect("accepted");
    assert_eq!(back, measured);
    assert_eq!(DeviceMemoryMeasurement::not_applicable(None::<String>).measurement_scope(), None);
}

#[test]
fn model_measurement_rules() {
    let status = error_of::<ModelFootprintMeasurement>(json!({"status": "partial"}));
    assert!(status.contains("ModelFootprintMeasurement.status must be 'measured' or 'unavailable'."));
    let empty = error_of::<ModelFootprintMeasurement>(json!({"status": "measured", "buffer_bytes": 3}));
    assert!(
        empty.contains("Measured ModelFootprintMeasurement requires parameter or in-memory data."),
        "{empty}"
    );
    for field in ["parameter_count", "parameter_bytes", "in_memory_bytes"] {
        let mut value = json!({"status": "measured"});
        value[field] = json!(0);
        serde_json::from_value::<ModelFootprintMeasurement>(value).expect("any one of the three suffices");
    }
    // The trainable bounds hold whatever the status.
    let count = error_of::<ModelFootprintMeasurement>(
        json!({"status": "unavailable", "parameter_count": 2, "trainable_parameter_count": 3}),
    );
    assert!(count.contains("trainable_parameter_count must not exceed parameter_count."), "{count}");
    let bytes = error_of::<ModelFootprintMeasurement>(
        json!({"status": "measured", "parameter_bytes": 8, "trainable_parameter_bytes": 9}),
    );
    assert!(bytes.contains("trainable_parameter_bytes must not exceed parameter_bytes."), "{bytes}");
    let equal = ModelFootprintMeasurement::measured(ModelFootprintReadings {
        parameter_count: Some(4),
        trainable_parameter_count: Some(4),
        parameter_bytes: Some(16),
        trainable_parameter_bytes: Some(16),
        ..Default::default()
    });
    assert!(equal.is_ok(), "equal trainable and total counts are fine");
    let unknown_total = ModelFootprintMeasurement::measured(ModelFootprintReadings {
        in_memory_bytes: Some(1),
        trainable_parameter_count: Some(99),
        ..Default::default()
    });
    assert!(unknown_total.is_ok(), "no total, nothing to exceed");
    let negative =
        error_of::<ModelFootprintMeasurement>(json!({"status": "unavailable", "buffer_bytes": -2}));
    assert!(negative.contains("buffer_bytes must be >= 0 when provided."));
    assert_eq!(
        ModelFootprintMeasurement::unavailable(Some("x")).status(),
        ModelMeasurementStatus::Unavailable
    );
}

#[test]
fn deployment_artifact_rules() {
    assert_eq!(
        DeploymentArtifact::new("").expect_err("rejected").to_string(),
        "DeploymentArtifact.path must be non-empty."
    );
    let artifact = DeploymentArtifact::new("m.onnx").expect("accepted");
    assert_eq!(
        artifact.with_role("").expect_err("rejected").to_string(),
        "DeploymentArtifact.role must be non-empty."
    );
    let parsed: DeploymentArtifact =
        serde_json::from_value(json!({"path": "dir", "recursive": true})).expect("accepted");
    assert_eq!(parsed.role.as_str(), "checkpoint");
    assert!(parsed.recursive);
    assert!(
        error_of::<DeploymentArtifact>(json!({"path": ""}))
            .contains("DeploymentArtifact.path must be non-empty.")
    );
    assert!(
        error_of::<DeploymentArtifact>(json!({"path": "a", "role": ""})).contains("role must be non-empty")
    );
}

#[test]
fn device_profile_scope_follows_status() {
    let measured_without_scope =
        load_error(with(minimal(), &["device_memory"], json!({"status": "measured"})));
    assert!(
        measured_without_scope
            .contains("Measured DeviceMemoryProfile requires measurement_scope='profile_window'."),
        "{measured_without_scope}"
    );
    let scoped_unmeasured = load_error(with(
        minimal(),
        &["device_memory"],
        json!({"status": "unavailable", "measurement_scope": "profile_window"}),
    ));
    assert!(scoped_unmeasured.contains("Unmeasured DeviceMemoryProfile must not declare a scope."));
    let profile = ResourceProfile::from_json_value(with(
        minimal(),
        &["device_memory"],
        json!({"status": "measured", "measurement_scope": "profile_window"}),
    ))
    .expect("accepted");
    assert_eq!(profile.device_memory.measurement_scope(), Some("profile_window"));
    assert_eq!(DeviceMemoryProfile::unmeasured(DeviceMemoryStatus::Disabled).measurement_scope(), None);
}

#[test]
fn profile_loading_follows_resource_profile_from_dict() {
    let profile = ResourceProfile::from_json_value(minimal()).expect("accepted");
    assert_eq!(profile.status, ProfileStatus::NotMeasured, "status defaults to not_measured");
    assert!(profile.embedding.is_none() && profile.context.is_empty() && profile.warnings.is_empty());
    assert_eq!(profile.model.parameter_status, FootprintStatus::Unavailable);
    assert_eq!(profile.host_memory.status, HostMemoryStatus::Disabled);
    // Unknown top-level keys are ignored, as `value.get(...)` ignores them.
    assert!(ResourceProfile::from_json_value(with(minimal(), &["scope"], json!("x"))).is_ok());
    // Nested parts are built with Class(**dict): unknown and missing fields fail.
    assert!(load_error(with(minimal(), &["inference", "speed"], json!(1))).contains("unknown field `speed`"));
    let mut no_inference = minimal();
    no_inference.as_object_mut().expect("accepted").remove("inference");
    assert!(load_error(no_inference).contains("missing field `inference`"));
    assert!(load_error(with(minimal(), &["model"], json!({}))).contains("missing field `status`"));
    // None-defaulted fields accept null; others do not.
    assert!(
        ResourceProfile::from_json_value(with(minimal(), &["inference", "first_call_seconds"], Value::Null))
            .is_ok()
    );
    assert!(
        load_error(with(minimal(), &["inference", "warm_call_count"], Value::Null))
            .contains("invalid type: null")
    );
    assert!(load_error(with(minimal(), &["context"], Value::Null)).contains("invalid type: null"));
    assert!(ResourceProfile::from_json_value(with(minimal(), &["embedding"], Value::Null)).is_ok());
    // Statuses are the ones vertebrae writes.
    assert!(load_error(with(minimal(), &["status"], json!("done"))).contains("status must be"));
    assert!(
        load_error(with(minimal(), &["host_memory", "status"], json!("measured-ish")))
            .contains("HostMemoryProfile.status")
    );
    assert!(load_error(json!([1])).contains("must be a JSON object"));
    assert!(
        load_error(with(minimal(), &["inference", "batch_sizes"], json!([-1]))).contains("invalid value")
    );
    let artifact = json!({"path": "a", "resolved_path": "/a", "role": "checkpoint", "recursive": false, "status": "gone"});
    assert!(
        load_error(with(minimal(), &["model", "artifacts"], json!([artifact])))
            .contains("ArtifactFootprint.status")
    );
    let persisted = json!({"raw_bytes": 1, "evaluated_bytes": 1, "bytes_per_embedding": 1.0,
                           "compression_savings_ratio": 0.0, "raw_persisted": {"status": "lost"}});
    assert!(
        load_error(with(minimal(), &["embedding"], persisted)).contains("PersistedArtifactFootprint.status")
    );
    let incomplete = json!({"raw_bytes": 1, "evaluated_bytes": 1, "bytes_per_embedding": 1.0});
    assert!(load_error(with(minimal(), &["embedding"], incomplete)).contains("compression_savings_ratio"));
}

#[test]
fn json_text_round_trip_and_finiteness() {
    let mut profile = ResourceProfile::from_json_value(minimal()).expect("accepted");
    let text = profile.to_json_string().expect("accepted");
    assert_eq!(ResourceProfile::from_json_str(&text).expect("accepted"), profile);
    profile.inference.throughput_samples_per_second = Some(f64::INFINITY);
    let error = profile.to_json_value().expect_err("rejected");
    assert_eq!(error.field(), "inference.throughput_samples_per_second");
    profile.inference.throughput_samples_per_second = None;
    profile.embedding = Some(EmbeddingFootprint {
        raw_bytes: 0,
        evaluated_bytes: 0,
        bytes_per_embedding: f64::NAN,
        compression_savings_ratio: 0.0,
        raw_persisted: None,
        evaluated_persisted: None,
    });
    assert!(profile.to_json_string().is_err());
    assert!(ResourceProfile::from_json_str("{not json").is_err());
}

#[test]
fn columns_read_embedding_and_context() {
    let mut profile = ResourceProfile::from_json_value(minimal()).expect("accepted");
    profile.context.insert("branch".into(), json!("b1"));
    let columns = resource_profile_columns(&profile, "x_");
    let get = |name: &str| columns.iter().find(|(column, _)| column == name).map(|(_, value)| value.clone());
    assert_eq!(get("x_resource_profile_scope"), Some(json!("local")));
    assert_eq!(get("x_branch"), Some(json!("b1")));
    assert_eq!(get("x_modality"), Some(Value::Null));
    assert_eq!(get("x_embedding_persisted_status"), Some(Value::Null));
    assert_eq!(columns.len(), 17);
    let embedding = EmbeddingFootprint {
        raw_bytes: 10,
        evaluated_bytes: 4,
        bytes_per_embedding: 2.0,
        compression_savings_ratio: 0.6,
        raw_persisted: None,
        evaluated_persisted: Some(PersistedArtifactFootprint {
            bytes: Some(99),
            ..PersistedArtifactFootprint::with_status(PersistedStatus::Measured)
        }),
    };
    let common = common_profile_columns("distributed_shards", Some(&embedding), "");
    assert_eq!(
        common,
        vec![
            ("resource_profile_scope".to_owned(), json!("distributed_shards")),
            ("embedding_logical_bytes".to_owned(), json!(4)),
            ("embedding_persisted_bytes".to_owned(), json!(99)),
            ("embedding_persisted_status".to_owned(), json!("measured")),
        ]
    );
}

#[test]
fn status_strings_round_trip() {
    for status in ArtifactStatus::ALL {
        assert_eq!(status.as_str().parse::<ArtifactStatus>().expect("accepted"), *status);
    }
    for status in DeviceMemoryStatus::ALL {
        let text = serde_json::to_string(status).expect("accepted");
        assert_eq!(serde_json::from_str::<DeviceMemoryStatus>(&text).expect("accepted"), *status);
    }
    assert_eq!(ProfileStatus::NotMeasuredCacheHit.to_string(), "not_measured_cache_hit");
}

#[test]
fn statistics_follow_numpy() {
    // Reference values computed with numpy 2.4 (np.percentile(x, 95) etc.).
    let values = [0.5, 0.1, 0.3, 0.2, 0.4];
    assert_eq!(numpy_median(&values), Some(0.3));
    assert_eq!(numpy_percentile(&values, 95.0), Some(0.48));
    assert_eq!(numpy_percentile(&[7.0], 95.0), Some(7.0));
    assert_eq!(numpy_median(&[1.0, 2.0]), Some(1.5));
    assert_eq!(numpy_mean(&[0.1, 0.2, 0.3]), Some(0.20000000000000004));
    assert_eq!(numpy_max(&[0.1, 3.0, 2.0]), Some(3.0));
    assert_eq!(numpy_mean(&[]), None);
    assert_eq!(numpy_median(&[]), None);
    assert_eq!(numpy_percentile(&[], 95.0), None);
    // Eight or more values use eight interleaved accumulators, which differs
    // from a left-to-right sum in the last bits.
    let tenths = [0.1; 8];
    assert_eq!(numpy_sum(&tenths), 0.8);
    assert_eq!(python_sum(&tenths), 0.7999999999999999);
    assert_eq!(numpy_percentile(&[1.0, 2.0, 3.0, 4.0], 95.0), Some(3.8499999999999996));
    assert_eq!(ns_to_seconds(1), 1e-9);
    assert_eq!(ns_to_seconds(3_000_000_000), 3.0);
}

#[test]
fn integer_division_rounds_once() {
    assert_eq!(int_true_div(0, 7), Some(0.0));
    assert_eq!(int_true_div(7, 2), Some(3.5));
    // 2^63 + 1 over 2^10: the exact quotient 2^53 + 2^-10 rounds to 2^53.
    assert_eq!(int_true_div((1 << 63) + 1, 1 << 10), Some(9007199254740992.0));
    // (2^53 + 1) / 3 is exactly 3002399751580331; converting 2^53 + 1 to a
    // float first loses the 1 and the quotient lands half a unit lower.
    let dividend = (1u64 << 53) + 1;
    assert_eq!(int_true_div(dividend, 3), Some(3002399751580331.0));
    assert_eq!((dividend as f64) / 3.0, 3002399751580330.5, "naive conversion rounds twice");
    assert_eq!(int_true_div(u64::MAX, u64::MAX), Some(1.0));
    assert_eq!(int_true_div(1, u64::MAX), Some(1.0 / 18446744073709551615.0));
}
