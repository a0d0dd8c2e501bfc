//! The dataclass table (`tally_profile::profile::schema`) against the JSON
//! the profile types write: the same fields in the same order, so the
//! `tally` package's dataclasses and tally-profile's `asdict` JSON agree.

use serde::Serialize;
use tally_profile::BaseResourceProfileAdapter;
use tally_profile::ResourceProfileAdapter as _;
use tally_profile::profile::schema::{DATACLASSES, Nested, dataclass_schema};
use tally_profile::profile::{
    AdapterOperationResult, ArtifactFootprint, DeploymentArtifact, DeviceMemoryMeasurement,
    DeviceMemoryProfile, DeviceMemoryStatus, EmbeddingFootprint, FootprintStatus, HostMemoryProfile,
    HostMemoryStatus, InferenceProfile, ModelFootprint, PersistedArtifactFootprint, PersistedStatus,
    ProfileStatus, ResourceAdapterMetadata, ResourceProfile,
};
use tally_testkit::json::Ordered;

/// The top-level keys of a JSON object's text, in the order written.
fn keys(text: &str) -> Vec<String> {
    let Ordered::Object(members) = Ordered::parse(text) else { panic!("a profile type writes an object") };
    members.into_iter().map(|(key, _)| key).collect()
}

fn check<T: Serialize>(name: &str, value: &T) {
    let schema = dataclass_schema(name).unwrap_or_else(|| panic!("{name} is in the table"));
    let text = serde_json::to_string(value).expect("profile types serialize");
    let fields: Vec<&str> = schema.fields.iter().map(|field| field.name).collect();
    assert_eq!(keys(&text), fields, "{name}");
}

fn from_text<T: serde::de::DeserializeOwned>(text: &str) -> T {
    serde_json::from_str(text).expect("the sample is valid")
}

#[test]
fn table_matches_the_json_of_every_profile_type() {
    check("AdapterOperationResult", &AdapterOperationResult::succeeded());
    check("ResourceAdapterMetadata", &ResourceAdapterMetadata::default());
    check("DeviceMemoryMeasurement", &DeviceMemoryMeasurement::unavailable(None::<String>));
    let footprint = BaseResourceProfileAdapter.model_footprint().expect("the base adapter answers");
    check("ModelFootprintMeasurement", &footprint);
    check("DeploymentArtifact", &DeploymentArtifact::new("model.bin").expect("a valid path"));
    let artifact: ArtifactFootprint = from_text(
        r#"{"path": "a", "resolved_path": "/a", "role": "checkpoint", "recursive": false, "status": "measured"}"#,
    );
    check("ArtifactFootprint", &artifact);
    check("InferenceProfile", &InferenceProfile::unmeasured(ProfileStatus::NotMeasured));
    check("HostMemoryProfile", &HostMemoryProfile::unmeasured(HostMemoryStatus::Disabled));
    check("DeviceMemoryProfile", &DeviceMemoryProfile::unmeasured(DeviceMemoryStatus::Disabled));
    check("ModelFootprint", &ModelFootprint::unmeasured(FootprintStatus::Unavailable));
    let persisted = PersistedArtifactFootprint::with_status(PersistedStatus::NotPersisted);
    check("PersistedArtifactFootprint", &persisted);
    let embedding: EmbeddingFootprint = from_text(
        r#"{"raw_bytes": 8, "evaluated_bytes": 4, "bytes_per_embedding": 4.0, "compression_savings_ratio": 0.5}"#,
    );
    check("EmbeddingFootprint", &embedding);
    let profile = ResourceProfile::from_json_str(
        r#"{"status": "not_measured", "inference": {"status": "not_measured"},
            "host_memory": {"status": "disabled"}, "device_memory": {"status": "disabled"},
            "model": {"status": "unavailable"}, "embedding": null}"#,
    )
    .expect("a valid profile");
    check("ResourceProfile", &profile);
}

#[test]
fn nested_classes_are_in_the_table() {
    for class in DATACLASSES {
        for field in class.fields {
            if let Nested::One(inner) | Nested::Optional(inner) | Nested::ListOf(inner) = field.nested {
                assert!(dataclass_schema(inner).is_some(), "{}.{} holds {inner}", class.name, field.name);
            }
        }
    }
}
