//! Footprint paths the vertebrae fixtures cannot hold: where vertebrae
//! raises (symlink loops, unknown home directories), relative paths, and
//! the local artifact store's error kinds.

mod support;

use std::path::Path;

use tally_profile::profile::{ArtifactStatus, DeploymentArtifact, PersistedStatus};
use tally_profile::{
    EmbeddingError, EmbeddingMetadata, EmbeddingStore, LocalEmbeddingStore, PersistedSizes, StoreError,
    deployment_artifact_footprint, dtype_itemsize, persisted_array_footprint,
};

fn declare(path: &Path, recursive: bool) -> DeploymentArtifact {
    DeploymentArtifact::new(path.to_string_lossy()).expect("non-empty").recursive(recursive)
}

#[test]
fn symlink_loops_are_unreadable_or_skipped_not_fatal() {
    let temp = tempfile::tempdir().expect("tempdir");
    let root = std::fs::canonicalize(temp.path()).expect("canonical");
    std::os::unix::fs::symlink(root.join("loop-b"), root.join("loop-a")).expect("symlink");
    std::os::unix::fs::symlink(root.join("loop-a"), root.join("loop-b")).expect("symlink");
    std::fs::create_dir(root.join("bundle")).expect("mkdir");
    std::fs::write(root.join("bundle/weights.bin"), [0u8; 64]).expect("write");
    std::os::unix::fs::symlink("self", root.join("bundle/self")).expect("symlink");
    let results = deployment_artifact_footprint(&[
        declare(&root.join("loop-a"), false),
        declare(&root.join("bundle"), true),
    ]);
    assert_eq!(results[0].status, ArtifactStatus::Unreadable);
    let reason = results[0].reason.as_deref().expect("a reason");
    assert!(reason.starts_with("Symlink loop from '"), "{reason}");
    assert_eq!(results[1].status, ArtifactStatus::Partial);
    assert_eq!((results[1].bytes, results[1].file_count), (64, 1));
    assert_eq!(results[1].reason.as_deref(), Some("Skipped 1 unreadable or out-of-root paths."));
}

#[test]
fn unknown_home_directories_are_unreadable() {
    let results = deployment_artifact_footprint(&[
        DeploymentArtifact::new("~no_such_user_4711/model.bin").expect("path")
    ]);
    assert_eq!(results[0].status, ArtifactStatus::Unreadable);
    assert_eq!(results[0].reason.as_deref(), Some("Could not determine home directory."));
}

#[test]
fn relative_paths_resolve_against_the_working_directory() {
    let cwd = std::env::current_dir().expect("cwd");
    let results = deployment_artifact_footprint(&[DeploymentArtifact::new("./Cargo.toml").expect("path")]);
    assert_eq!(results[0].status, ArtifactStatus::Measured);
    assert_eq!(results[0].path, "./Cargo.toml", "the declared path is kept as declared");
    let expected = std::fs::canonicalize(cwd.join("Cargo.toml")).expect("exists");
    assert_eq!(results[0].resolved_path, expected.to_string_lossy());
    assert_eq!(results[0].bytes, std::fs::metadata(&expected).expect("exists").len());
}

#[test]
fn an_empty_recursive_directory_is_measured_with_nothing() {
    let temp = tempfile::tempdir().expect("tempdir");
    let results = deployment_artifact_footprint(&[declare(temp.path(), true)]);
    assert_eq!(results[0].status, ArtifactStatus::Measured);
    assert_eq!((results[0].bytes, results[0].file_count, results[0].reason.as_deref()), (0, 0, None));
}

fn copy_store() -> tempfile::TempDir {
    let temp = tempfile::tempdir().expect("tempdir");
    let source = support::store_dir();
    for key in ["emb/raw", "emb/eval"] {
        let to = temp.path().join(key);
        std::fs::create_dir_all(&to).expect("mkdir");
        for entry in std::fs::read_dir(source.join(key)).expect("fixture store") {
            let entry = entry.expect("entry");
            std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
        }
    }
    temp
}

fn failure(store: &LocalEmbeddingStore, key: &str) -> (String, String) {
    match store.stat(key) {
        Err(StoreError::Failed { kind, message }) => (kind.into_owned(), message),
        other => panic!("expected a failure for {key:?}, got {other:?}"),
    }
}

#[test]
fn the_local_store_reports_vertebrae_errors() {
    let temp = copy_store();
    let store = LocalEmbeddingStore::new(temp.path());
    let raw = store.stat("emb/raw").expect("committed array");
    assert_eq!(raw.storage_format.as_str(), "npy");
    assert!(raw.uri.ends_with(".npy"));
    assert!(matches!(store.stat("emb/none"), Err(StoreError::NotFound(_))));
    assert_eq!(failure(&store, "/abs").1, "Artifact key must be relative and must not start with '/'.");
    assert_eq!(failure(&store, "a//b").1, "Artifact key must not contain empty path components.");
    assert_eq!(failure(&store, "a\\b").1, "Artifact key must use '/' separators and must not contain '\\'.");
    assert_eq!(failure(&store, "").1, "Artifact key must be non-empty.");
    // A truncated content file no longer matches its manifest.
    let content = std::fs::read_dir(temp.path().join("emb/raw"))
        .expect("dir")
        .map(|entry| entry.expect("entry").path())
        .find(|path| path.extension().is_some_and(|ext| ext == "npy"))
        .expect("the .npy");
    let committed = std::fs::metadata(&content).expect("exists").len();
    assert_eq!(raw.size_bytes, committed);
    std::fs::write(&content, b"short").expect("truncate");
    let (kind, message) = failure(&store, "emb/raw");
    assert_eq!(kind, "ValueError");
    let tail = format!("has size 5, expected {committed} from its manifest.");
    assert!(message.ends_with(&tail), "{message}");
    // A manifest that is not JSON.
    std::fs::write(temp.path().join("emb/eval/artifact-manifest.json"), b"{").expect("corrupt");
    let (_, message) = failure(&store, "emb/eval");
    assert!(message.starts_with("Artifact manifest under ") && message.ends_with(" is not valid JSON."));
    // A labels commit holds no array.
    std::fs::write(temp.path().join("emb/eval/artifact-manifest.json"), br#"{"kind": "labels+metadata"}"#)
        .expect("write");
    assert_eq!(
        failure(&store, "emb/eval").1,
        "Committed artifact for key emb/eval does not contain an array."
    );
    // Missing content file: not persisted, as FileNotFoundError is in vertebrae.
    std::fs::remove_file(&content).expect("remove");
    assert!(
        matches!(store.stat("emb/raw"), Err(StoreError::NotFound(message)) if message.contains("missing file"))
    );
    let (footprint, warning) = persisted_array_footprint(Some(&store), Some("emb/raw"), None, true);
    assert_eq!((footprint.status, warning), (PersistedStatus::NotPersisted, None));
}

#[test]
fn incomplete_embedding_metadata_is_rejected_as_vertebrae_rejects_it() {
    let complete = EmbeddingMetadata::dense(2, 3, "float32");
    let cases = [
        EmbeddingMetadata { shape: vec![2, 3, 4], ..complete.clone() },
        EmbeddingMetadata { dtype: None, ..complete.clone() },
        EmbeddingMetadata { sparse: true, nnz: None, ..complete.clone() },
        EmbeddingMetadata { shape: Vec::new(), ..complete.clone() },
    ];
    for metadata in cases {
        assert_eq!(metadata.resident_bytes(), Err(EmbeddingError::IncompleteMetadata), "{metadata:?}");
    }
    assert_eq!(
        EmbeddingError::IncompleteMetadata.to_string(),
        "Embedding metadata must define shape, dtype, sparse, and nnz when used for resource-footprint calculation."
    );
    assert!(matches!(dtype_itemsize("bfloat16"), Err(EmbeddingError::UnknownDtype(_))));
    assert_eq!(
        EmbeddingMetadata::dense(u64::MAX, 2, "float64").resident_bytes(),
        Err(EmbeddingError::Overflow)
    );
    // No profile: nothing is computed, as vertebrae returns None first.
    let bad = EmbeddingMetadata { dtype: None, ..complete };
    let none = tally_profile::with_embedding_footprint(None, &bad, &bad, &PersistedSizes::default());
    assert_eq!(none, Ok(None));
    let from_json = EmbeddingMetadata::from_json(&serde_json::json!({"shape": [4, 8], "dtype": "int8",
                                                                     "sparse": 0, "nnz": null}))
    .expect("metadata");
    assert_eq!(from_json.resident_bytes(), Ok(32));
}
