//! Deployment-artifact footprint: vertebrae's `_artifact_footprint`, on the
//! same Python 3.11 path semantics (`Path.expanduser`, `Path.resolve`,
//! `Path.rglob`, `is_file`, `is_symlink`).
//!
//! Each real file is counted once across all declarations, keyed by its
//! resolved path: a file declared twice is a `duplicate`, a file reached
//! again inside a later recursive directory is not counted again. Inside a
//! recursive directory, symlinks that leave the declared root or do not lead
//! to a file, and entries that cannot be read, are skipped and counted, and
//! make the declaration `partial`.
//!
//! Where vertebrae raises and abandons the whole profile (a symlink loop,
//! which Python 3.11's `Path.resolve` reports as `RuntimeError`; a home
//! directory that cannot be determined; a permission error from `is_file`
//! on a declared path), tally records the declaration as `unreadable` with
//! the error as its reason, or counts the entry as skipped inside a
//! recursive directory.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::profile::{ArtifactFootprint, ArtifactStatus, DeploymentArtifact};

use crate::pytext::{os_error_text, python_repr};

fn as_path(bytes: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(bytes))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `str(PurePosixPath(text))`: empty and `.` components dropped, `..` kept,
/// a leading `//` (but not `///`) kept as POSIX allows.
fn pure_path(text: &[u8]) -> Vec<u8> {
    let root: &[u8] = if text.starts_with(b"//") && !text.starts_with(b"///") {
        b"//"
    } else if text.starts_with(b"/") {
        b"/"
    } else {
        b""
    };
    let parts: Vec<&[u8]> =
        text.split(|byte| *byte == b'/').filter(|part| !part.is_empty() && *part != b".").collect();
    let mut out = root.to_vec();
    out.extend_from_slice(&parts.join(&b'/'));
    if out.is_empty() {
        out.push(b'.');
    }
    out
}

/// `posixpath.join(a, b)` for two parts.
fn join(a: &[u8], b: &[u8]) -> Vec<u8> {
    if b.starts_with(b"/") {
        return b.to_vec();
    }
    let mut out = a.to_vec();
    if !out.is_empty() && !out.ends_with(b"/") {
        out.push(b'/');
    }
    out.extend_from_slice(b);
    out
}

/// `posixpath.split(p)`.
fn split(path: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let cut = path.iter().rposition(|byte| *byte == b'/').map_or(0, |index| index + 1);
    let (head, tail) = path.split_at(cut);
    let mut head = head.to_vec();
    if !head.is_empty() && head.iter().any(|byte| *byte != b'/') {
        while head.ends_with(b"/") {
            head.pop();
        }
    }
    (head, tail.to_vec())
}

/// `posixpath.normpath(path)`.
fn normpath(path: &[u8]) -> Vec<u8> {
    if path.is_empty() {
        return b".".to_vec();
    }
    let initial = if path.starts_with(b"//") && !path.starts_with(b"///") {
        2
    } else {
        usize::from(path.starts_with(b"/"))
    };
    let mut parts: Vec<&[u8]> = Vec::new();
    for part in path.split(|byte| *byte == b'/') {
        if part.is_empty() || part == b"." {
            continue;
        }
        let keep = part != b".." || (initial == 0 && parts.is_empty()) || parts.last() == Some(&&b".."[..]);
        if keep {
            parts.push(part);
        } else {
            parts.pop();
        }
    }
    let mut out = vec![b'/'; initial];
    out.extend_from_slice(&parts.join(&b'/'));
    if out.is_empty() {
        out.push(b'.');
    }
    out
}

fn current_dir() -> io::Result<Vec<u8>> {
    Ok(std::env::current_dir()?.into_os_string().into_encoded_bytes())
}

/// `posixpath.abspath(path)`.
fn abspath(path: &[u8]) -> io::Result<Vec<u8>> {
    if path.starts_with(b"/") { Ok(normpath(path)) } else { Ok(normpath(&join(&current_dir()?, path))) }
}

/// `Path.absolute()` (3.11): the working directory prepended, nothing normalized.
fn absolute(path: &[u8]) -> Vec<u8> {
    if path.starts_with(b"/") {
        return path.to_vec();
    }
    match current_dir() {
        Ok(cwd) if path == b"." => cwd,
        Ok(cwd) => join(&cwd, path),
        Err(_) => path.to_vec(),
    }
}

/// Why a path could not be resolved.
enum ResolveError {
    /// `Path.resolve` raises `RuntimeError("Symlink loop from ...")`.
    Loop(String),
    /// An `OSError`, already in Python's words.
    Os(String),
}

impl ResolveError {
    fn reason(self) -> String {
        match self {
            ResolveError::Loop(reason) | ResolveError::Os(reason) => reason,
        }
    }
}

/// `posixpath._joinrealpath` (strict=False).
fn join_realpath(
    mut path: Vec<u8>,
    rest: &[u8],
    seen: &mut HashMap<Vec<u8>, Option<Vec<u8>>>,
) -> Result<(Vec<u8>, bool), ResolveError> {
    let mut rest = rest;
    if let Some(stripped) = rest.strip_prefix(b"/") {
        rest = stripped;
        path = b"/".to_vec();
    }
    while !rest.is_empty() {
        let (name, tail) = match rest.iter().position(|byte| *byte == b'/') {
            Some(index) => (&rest[..index], &rest[index + 1..]),
            None => (rest, &b""[..]),
        };
        rest = tail;
        if name.is_empty() || name == b"." {
            continue;
        }
        if name == b".." {
            if path.is_empty() {
                path = b"..".to_vec();
            } else {
                let (head, last) = split(&path);
                path = head;
                if last == b".." {
                    path = join(&join(&path, b".."), b"..");
                }
            }
            continue;
        }
        let candidate = join(&path, name);
        let is_link = std::fs::symlink_metadata(as_path(&candidate))
            .is_ok_and(|metadata| metadata.file_type().is_symlink());
        if !is_link {
            path = candidate;
            continue;
        }
        if let Some(known) = seen.get(&candidate) {
            match known {
                Some(resolved) => {
                    path = resolved.clone();
                    continue;
                }
                None => return Ok((join(&candidate, rest), false)),
            }
        }
        seen.insert(candidate.clone(), None);
        let target = std::fs::read_link(as_path(&candidate))
            .map_err(|error| ResolveError::Os(os_error_text(&error, &text(&candidate))))?;
        let (resolved, ok) = join_realpath(path, target.as_os_str().as_bytes(), seen)?;
        path = resolved;
        if !ok {
            return Ok((join(&path, rest), false));
        }
        seen.insert(candidate, Some(path.clone()));
    }
    Ok((path, true))
}

/// `Path(path).resolve()` (strict=False) in Python 3.11.
fn resolve(path: &[u8]) -> Result<Vec<u8>, ResolveError> {
    let (joined, _) = join_realpath(Vec::new(), path, &mut HashMap::new())?;
    let resolved = abspath(&joined).map_err(|error| ResolveError::Os(error.to_string()))?;
    if let Err(error) = std::fs::metadata(as_path(&resolved))
        && error.raw_os_error() == Some(libc::ELOOP)
    {
        return Err(ResolveError::Loop(format!("Symlink loop from {}", python_repr(&text(&resolved)))));
    }
    Ok(resolved)
}

/// pathlib's `_ignore_error`: errors that make `is_file` and friends answer `False`.
fn ignorable(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR | libc::EBADF | libc::ELOOP))
}

fn is_file(path: &[u8]) -> Result<bool, io::Error> {
    match std::fs::metadata(as_path(path)) {
        Ok(metadata) => Ok(metadata.file_type().is_file()),
        Err(error) if ignorable(&error) => Ok(false),
        Err(error) => Err(error),
    }
}

fn is_dir(path: &[u8]) -> Result<bool, io::Error> {
    match std::fs::metadata(as_path(path)) {
        Ok(metadata) => Ok(metadata.is_dir()),
        Err(error) if ignorable(&error) => Ok(false),
        Err(error) => Err(error),
    }
}

fn is_symlink(path: &[u8]) -> Result<bool, io::Error> {
    match std::fs::symlink_metadata(as_path(path)) {
        Ok(metadata) => Ok(metadata.file_type().is_symlink()),
        Err(error) if ignorable(&error) => Ok(false),
        Err(error) => Err(error),
    }
}

/// The home directory `os.path.expanduser` would use for `~` or `~user`.
fn home_of(user: &[u8]) -> Option<Vec<u8>> {
    if user.is_empty()
        && let Some(home) = std::env::var_os("HOME")
    {
        return Some(home.into_encoded_bytes());
    }
    let passwd = std::fs::read("/etc/passwd").ok()?;
    let uid = if user.is_empty() { Some(own_uid()?) } else { None };
    passwd.split(|byte| *byte == b'\n').find_map(|line| {
        let fields: Vec<&[u8]> = line.split(|byte| *byte == b':').collect();
        let matches = match &uid {
            Some(uid) => fields.get(2) == Some(&uid.as_bytes()),
            None => fields.first() == Some(&user),
        };
        if matches { fields.get(5).map(|home| home.to_vec()) } else { None }
    })
}

fn own_uid() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|line| line.strip_prefix("Uid:"))?;
    line.split_whitespace().next().map(str::to_owned)
}

/// `Path(path).expanduser()` (3.11), on an already normalized path.
fn expanduser(path: &[u8]) -> Result<Vec<u8>, String> {
    if !path.starts_with(b"~") {
        return Ok(path.to_vec());
    }
    let (first, rest) = match path.iter().position(|byte| *byte == b'/') {
        Some(index) => (&path[..index], &path[index + 1..]),
        None => (path, &b""[..]),
    };
    let Some(mut home) = home_of(&first[1..]) else {
        return Err("Could not determine home directory.".to_owned());
    };
    while home.len() > 1 && home.ends_with(b"/") {
        home.pop();
    }
    if home.is_empty() {
        home.push(b'/');
    }
    if home.starts_with(b"~") {
        return Err("Could not determine home directory.".to_owned());
    }
    Ok(pure_path(&join(&home, rest)))
}

fn result(
    declaration: &DeploymentArtifact,
    resolved: &[u8],
    status: ArtifactStatus,
    bytes: u64,
    file_count: u64,
    reason: Option<String>,
) -> ArtifactFootprint {
    ArtifactFootprint {
        path: declaration.path.to_string(),
        resolved_path: text(resolved),
        role: declaration.role.to_string(),
        recursive: declaration.recursive,
        status,
        bytes,
        file_count,
        reason,
    }
}

/// Every entry under `root` as `Path.rglob("*")` lists it: directories are
/// entered unless they are symlinks; a directory that cannot be listed for
/// lack of permission is silently left out, any other listing error fails.
fn rglob(root: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    let entries = match std::fs::read_dir(root).and_then(|entries| entries.collect::<io::Result<Vec<_>>>()) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::PermissionDenied => return Ok(()),
        Err(error) => return Err(error),
    };
    for entry in entries {
        let path = entry.path();
        let enter = match entry.file_type() {
            Ok(kind) => kind.is_dir(),
            Err(error) if ignorable(&error) => false,
            // pathlib stops listing this directory on a permission error.
            Err(error) if error.kind() == io::ErrorKind::PermissionDenied => return Ok(()),
            Err(error) => return Err(error),
        };
        out.push(path.clone());
        if enter {
            rglob(&path, out)?;
        }
    }
    Ok(())
}

/// What one entry of a recursive directory contributes.
enum Entry {
    Counted(Vec<u8>, u64),
    Ignored,
    Skipped,
}

fn walk_entry(child: &Path, root: &[u8], measured: &HashSet<Vec<u8>>) -> Result<Entry, ()> {
    let child_bytes = child.as_os_str().as_bytes();
    let resolved = resolve(child_bytes).map_err(|_| ())?;
    let within = as_path(&resolved).starts_with(as_path(root));
    if !within || !is_file(&resolved).map_err(|_| ())? {
        return Ok(if is_symlink(child_bytes).map_err(|_| ())? { Entry::Skipped } else { Entry::Ignored });
    }
    if measured.contains(&resolved) {
        return Ok(Entry::Ignored);
    }
    let size = std::fs::metadata(as_path(&resolved)).map_err(|_| ())?.len();
    Ok(Entry::Counted(resolved, size))
}

fn measure_directory(
    declaration: &DeploymentArtifact,
    resolved: &[u8],
    measured: &mut HashSet<Vec<u8>>,
) -> ArtifactFootprint {
    let mut children = Vec::new();
    if let Err(error) = rglob(as_path(resolved), &mut children) {
        let reason = os_error_text(&error, &text(resolved));
        return result(declaration, resolved, ArtifactStatus::Unreadable, 0, 0, Some(reason));
    }
    // pathlib sorts paths by their components.
    children.sort_by(|a, b| a.components().cmp(b.components()));
    let (mut total, mut count, mut skipped) = (0u64, 0u64, 0u64);
    for child in &children {
        match walk_entry(child, resolved, measured) {
            Ok(Entry::Counted(key, size)) => {
                total = total.saturating_add(size);
                count += 1;
                measured.insert(key);
            }
            Ok(Entry::Ignored) => {}
            Ok(Entry::Skipped) | Err(()) => skipped += 1,
        }
    }
    let (status, reason) = if skipped > 0 {
        (ArtifactStatus::Partial, Some(format!("Skipped {skipped} unreadable or out-of-root paths.")))
    } else {
        (ArtifactStatus::Measured, None)
    };
    result(declaration, resolved, status, total, count, reason)
}

fn measure_one(declaration: &DeploymentArtifact, measured: &mut HashSet<Vec<u8>>) -> ArtifactFootprint {
    let declared = pure_path(declaration.path.as_bytes());
    let raw = match expanduser(&declared) {
        Ok(raw) => raw,
        Err(reason) => {
            return result(declaration, &absolute(&declared), ArtifactStatus::Unreadable, 0, 0, Some(reason));
        }
    };
    let resolved = match resolve(&raw) {
        Ok(resolved) => resolved,
        Err(error) => {
            return result(
                declaration,
                &absolute(&raw),
                ArtifactStatus::Unreadable,
                0,
                0,
                Some(error.reason()),
            );
        }
    };
    let unreadable = |error: io::Error| {
        let reason = os_error_text(&error, &text(&resolved));
        result(declaration, &resolved, ArtifactStatus::Unreadable, 0, 0, Some(reason))
    };
    match is_file(&resolved) {
        Err(error) => return unreadable(error),
        Ok(true) => {
            if measured.contains(&resolved) {
                let reason = Some("The resolved file was already counted.".to_owned());
                return result(declaration, &resolved, ArtifactStatus::Duplicate, 0, 0, reason);
            }
            return match std::fs::metadata(as_path(&resolved)) {
                Ok(metadata) => {
                    measured.insert(resolved.clone());
                    result(declaration, &resolved, ArtifactStatus::Measured, metadata.len(), 1, None)
                }
                Err(error) => unreadable(error),
            };
        }
        Ok(false) => {}
    }
    match is_dir(&resolved) {
        Err(error) => unreadable(error),
        Ok(true) if !declaration.recursive => {
            let reason = Some("Set recursive=True to measure a deployment bundle directory.".to_owned());
            result(declaration, &resolved, ArtifactStatus::DirectoryRequiresRecursive, 0, 0, reason)
        }
        Ok(true) => measure_directory(declaration, &resolved, measured),
        Ok(false) => {
            let reason = Some("The path does not exist.".to_owned());
            result(declaration, &resolved, ArtifactStatus::Missing, 0, 0, reason)
        }
    }
}

/// Measures each declared artifact in order; vertebrae's `_artifact_footprint`.
///
/// ```
/// use tally_profile::profile::{ArtifactStatus, DeploymentArtifact};
/// use tally_profile::deployment_artifact_footprint;
/// let missing = DeploymentArtifact::new("/nonexistent/model.onnx").unwrap();
/// let results = deployment_artifact_footprint(&[missing]);
/// assert_eq!(results[0].status, ArtifactStatus::Missing);
/// assert_eq!(results[0].reason.as_deref(), Some("The path does not exist."));
/// ```
pub fn deployment_artifact_footprint(declarations: &[DeploymentArtifact]) -> Vec<ArtifactFootprint> {
    let mut measured = HashSet::new();
    declarations.iter().map(|declaration| measure_one(declaration, &mut measured)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normpath_follows_posixpath() {
        let cases: &[(&str, &str)] = &[
            ("", "."),
            ("/", "/"),
            ("//", "//"),
            ("///", "/"),
            ("//a/../b", "//b"),
            ("a/../../b", "../b"),
            ("/../a", "/a"),
            ("a/./b/", "a/b"),
        ];
        for (input, expected) in cases {
            assert_eq!(text(&normpath(input.as_bytes())), *expected, "normpath({input:?})");
        }
    }

    #[test]
    fn pure_path_follows_pathlib() {
        let cases: &[(&str, &str)] =
            &[(".", "."), ("./a//b/./", "a/b"), ("/x/../y", "/x/../y"), ("//a", "//a"), ("///a", "/a")];
        for (input, expected) in cases {
            assert_eq!(text(&pure_path(input.as_bytes())), *expected, "PurePosixPath({input:?})");
        }
    }

    #[test]
    fn split_follows_posixpath() {
        assert_eq!(split(b"/a/b"), (b"/a".to_vec(), b"b".to_vec()));
        assert_eq!(split(b"/a"), (b"/".to_vec(), b"a".to_vec()));
        assert_eq!(split(b"a"), (b"".to_vec(), b"a".to_vec()));
        assert_eq!(split(b"//"), (b"//".to_vec(), b"".to_vec()));
    }

    #[test]
    fn expanduser_uses_home_for_a_bare_tilde() {
        let Some(home) = std::env::var_os("HOME") else {
            return tally_testkit::skip("HOME is not set");
        };
        let expanded = expanduser(b"~/models").map(|bytes| text(&bytes));
        let mut expected = home.into_encoded_bytes();
        while expected.len() > 1 && expected.ends_with(b"/") {
            expected.pop();
        }
        assert_eq!(expanded, Ok(text(&pure_path(&join(&expected, b"models")))));
        assert_eq!(expanduser(b"~no_such_user_x9/m"), Err("Could not determine home directory.".to_owned()));
    }
}
