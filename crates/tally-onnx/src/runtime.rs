//! Finding, checking and loading the ONNX Runtime shared library.
//!
//! `ort` loads the library lazily and panics when `ORT_DYLIB_PATH` is wrong;
//! here the path is resolved and checked first (it exists, is a shared
//! library, exports `OrtGetApiBase`, and is ONNX Runtime 1.x of at least the
//! API version this build needs), then handed to `ort::init_from`, with any
//! panic left in `ort` contained. Every failure is a [`LoadError`] naming
//! the path and where it came from.
//!
//! A process holds one ONNX Runtime: once loaded, a later request for the
//! same file returns the same runtime, and a request for another file fails
//! with [`LoadError::AlreadyLoaded`].

use std::ffi::CStr;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use ort::environment::Environment;

/// The environment variable `ort` and tally read the library path from.
pub const ORT_DYLIB_PATH: &str = "ORT_DYLIB_PATH";

/// The oldest ONNX Runtime minor version this build can drive: `ort`'s API
/// version (`api-31`, ONNX Runtime 1.31).
pub const REQUIRED_MINOR_VERSION: u32 = ort::MINOR_VERSION;

/// The interpreter whose `onnxruntime` package is looked for when no path
/// is given: the `python3` first on `PATH`, as tally-torch's build finds
/// libtorch through the `python` on `PATH`.
pub const PYTHON_INTERPRETER: &str = "python3";

/// Where the library path came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LibrarySource {
    /// Given by the caller.
    Explicit,
    /// The `ORT_DYLIB_PATH` environment variable.
    Environment,
    /// Found in the `onnxruntime` package of [`PYTHON_INTERPRETER`].
    PythonPackage,
}

impl fmt::Display for LibrarySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LibrarySource::Explicit => "given explicitly",
            LibrarySource::Environment => "from ORT_DYLIB_PATH",
            LibrarySource::PythonPackage => "from the onnxruntime package of the python3 on PATH",
        })
    }
}

/// The ONNX Runtime library could not be found or loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// No path given, `ORT_DYLIB_PATH` unset or empty, and no `onnxruntime`
    /// package found for the `python3` on `PATH`.
    #[error(
        "no ONNX Runtime library: none was given, ORT_DYLIB_PATH is not set, and the python3 on PATH \
         has no onnxruntime package (the library is onnxruntime/capi/libonnxruntime.so.1.* of the \
         onnxruntime wheel)"
    )]
    NotConfigured,
    /// The path does not exist (or cannot be inspected).
    #[error("ONNX Runtime library {path} ({origin}) cannot be used: {reason}")]
    NotFound {
        /// The path tried.
        path: PathBuf,
        /// Where it came from.
        origin: LibrarySource,
        /// The operating system's error.
        reason: String,
    },
    /// The path is not a regular file.
    #[error("ONNX Runtime library {path} ({origin}) is not a file")]
    NotAFile {
        /// The path tried.
        path: PathBuf,
        /// Where it came from.
        origin: LibrarySource,
    },
    /// The file is not a shared library for this platform.
    #[error("ONNX Runtime library {path} ({origin}) is not a shared library: {reason}")]
    NotALibrary {
        /// The path tried.
        path: PathBuf,
        /// Where it came from.
        origin: LibrarySource,
        /// What the loader (or the header check) said.
        reason: String,
    },
    /// A shared library, but not ONNX Runtime.
    #[error("{path} ({origin}) is not an ONNX Runtime library: {reason}")]
    NotOnnxRuntime {
        /// The path tried.
        path: PathBuf,
        /// Where it came from.
        origin: LibrarySource,
        /// What is missing.
        reason: String,
    },
    /// ONNX Runtime, but too old (or of another major version).
    #[error(
        "ONNX Runtime {version} at {path} ({origin}) is not supported: this build needs 1.{required} or later \
         (onnxruntime>=1.{required} from PyPI)"
    )]
    UnsupportedVersion {
        /// The path tried.
        path: PathBuf,
        /// Where it came from.
        origin: LibrarySource,
        /// The version the library reports.
        version: String,
        /// The minimum minor version.
        required: u32,
    },
    /// Another ONNX Runtime is loaded in this process already.
    #[error(
        "ONNX Runtime is already loaded from {loaded} in this process; {requested} cannot be loaded as well"
    )]
    AlreadyLoaded {
        /// The library in use.
        loaded: PathBuf,
        /// The one asked for.
        requested: PathBuf,
    },
    /// `ort` failed (or panicked) while initializing the library.
    #[error("ONNX Runtime at {path} ({origin}) failed to initialize: {reason}")]
    Initialization {
        /// The path tried.
        path: PathBuf,
        /// Where it came from.
        origin: LibrarySource,
        /// `ort`'s error or panic message.
        reason: String,
    },
}

/// A located, not yet loaded, library path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryPath {
    /// The path.
    pub path: PathBuf,
    /// Where it came from.
    pub origin: LibrarySource,
}

impl LibraryPath {
    /// The library to use: `explicit` when given, else `ORT_DYLIB_PATH`
    /// (an empty value counts as unset, as in `ort`), else the library of
    /// the `onnxruntime` package of the `python3` on `PATH`
    /// ([`python_package_library`]).
    pub fn locate(explicit: Option<&Path>) -> Result<Self, LoadError> {
        if let Some(path) = explicit {
            return Ok(Self { path: path.to_path_buf(), origin: LibrarySource::Explicit });
        }
        match std::env::var_os(ORT_DYLIB_PATH) {
            Some(value) if !value.is_empty() => {
                Ok(Self { path: PathBuf::from(value), origin: LibrarySource::Environment })
            }
            _ => python_package_library(Path::new(PYTHON_INTERPRETER))
                .map(|path| Self { path, origin: LibrarySource::PythonPackage })
                .ok_or(LoadError::NotConfigured),
        }
    }
}

/// Asks `python` where its `onnxruntime` package is, without importing it
/// (`importlib.util.find_spec`, a few milliseconds rather than the package's
/// import), and returns the package's `capi/libonnxruntime.so.<version>`
/// (`.dylib` on macOS), the newest should there be several. `None` when
/// there is no such interpreter, package or library.
pub fn python_package_library(python: &Path) -> Option<PathBuf> {
    const WHERE: &str = "import importlib.util as u\n\
                         s = u.find_spec('onnxruntime')\n\
                         print(next(iter(s.submodule_search_locations)) if s and s.submodule_search_locations else '')";
    let output = std::process::Command::new(python)
        .args(["-c", WHERE])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let package = String::from_utf8(output.stdout).ok()?;
    let package = package.trim();
    if package.is_empty() {
        return None;
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(Path::new(package).join("capi"))
        .ok()?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name().and_then(|name| name.to_str()).is_some_and(|name| {
                name.starts_with("libonnxruntime.so.")
                    || (name.starts_with("libonnxruntime.") && name.ends_with(".dylib"))
            })
        })
        .collect();
    found.sort();
    found.pop()
}

/// A loaded ONNX Runtime and its process-wide environment. Cheap to clone.
#[derive(Clone)]
pub struct OnnxRuntime {
    library: PathBuf,
    version: String,
    environment: Environment,
}

impl fmt::Debug for OnnxRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnnxRuntime").field("library", &self.library).field("version", &self.version).finish()
    }
}

/// The runtime loaded in this process, and the library `ort` holds even if
/// building the environment then failed (`ort` cannot unload it).
struct Loaded {
    runtime: Option<OnnxRuntime>,
    library_in_ort: Option<PathBuf>,
}

static LOADED: Mutex<Loaded> = Mutex::new(Loaded { runtime: None, library_in_ort: None });

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    tally_profile::panic_text(payload).unwrap_or("panic").to_owned()
}

impl OnnxRuntime {
    /// Loads ONNX Runtime from `explicit`, else from `ORT_DYLIB_PATH`; see
    /// the module documentation for what is checked. Never panics.
    ///
    /// ```no_run
    /// use tally_onnx::OnnxRuntime;
    /// let runtime = OnnxRuntime::load(None)?; // ORT_DYLIB_PATH
    /// println!("ONNX Runtime {} from {}", runtime.version(), runtime.library().display());
    /// # Ok::<(), tally_onnx::LoadError>(())
    /// ```
    pub fn load(explicit: Option<&Path>) -> Result<Self, LoadError> {
        Self::load_from(&LibraryPath::locate(explicit)?)
    }

    /// Loads ONNX Runtime from a located path.
    pub fn load_from(library: &LibraryPath) -> Result<Self, LoadError> {
        let LibraryPath { path, origin } = library;
        let origin = *origin;
        let metadata = std::fs::metadata(path).map_err(|error| LoadError::NotFound {
            path: path.clone(),
            origin,
            reason: error.to_string(),
        })?;
        if !metadata.is_file() {
            return Err(LoadError::NotAFile { path: path.clone(), origin });
        }
        // The same file reached by another name is the same library.
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(runtime) = &loaded.runtime {
            return if runtime.library == canonical {
                Ok(runtime.clone())
            } else {
                Err(LoadError::AlreadyLoaded { loaded: runtime.library.clone(), requested: path.clone() })
            };
        }
        if let Some(held) = &loaded.library_in_ort
            && *held != canonical
        {
            return Err(LoadError::AlreadyLoaded { loaded: held.clone(), requested: path.clone() });
        }
        check_header(path, origin)?;
        let version = probe(path, origin)?;
        let initialization =
            |reason: String| LoadError::Initialization { path: path.clone(), origin, reason };
        match catch_unwind(|| {
            ort::init_from(&canonical).map(|builder| builder.with_name("tally").with_telemetry(false))
        }) {
            Ok(Ok(builder)) => {
                loaded.library_in_ort = Some(canonical.clone());
                let environment = match catch_unwind(AssertUnwindSafe(|| builder.build())) {
                    Ok(Ok(environment)) => environment,
                    Ok(Err(error)) => return Err(initialization(error.to_string())),
                    Err(payload) => return Err(initialization(panic_text(payload.as_ref()))),
                };
                let runtime = OnnxRuntime { library: canonical, version, environment };
                loaded.runtime = Some(runtime.clone());
                Ok(runtime)
            }
            Ok(Err(error)) => Err(initialization(error.to_string())),
            Err(payload) => Err(initialization(panic_text(payload.as_ref()))),
        }
    }

    /// The library file (canonical path).
    pub fn library(&self) -> &Path {
        &self.library
    }

    /// The version the library reports, e.g. `1.32.0`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The `ort` environment sessions are created in.
    pub fn environment(&self) -> &Environment {
        &self.environment
    }
}

/// Rejects files that are not shared libraries before handing them to the
/// dynamic loader, with a message that says so.
fn check_header(path: &Path, origin: LibrarySource) -> Result<(), LoadError> {
    use std::io::Read;
    let mut header = [0u8; 4];
    let read = std::fs::File::open(path).and_then(|mut file| file.read(&mut header));
    let read = read.map_err(|error| LoadError::NotFound {
        path: path.to_path_buf(),
        origin,
        reason: error.to_string(),
    })?;
    let expected: &[&[u8]] = if cfg!(target_os = "linux") {
        &[b"\x7fELF"]
    } else if cfg!(target_os = "macos") {
        &[b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe"]
    } else if cfg!(windows) {
        &[b"MZ"]
    } else {
        return Ok(());
    };
    if expected.iter().any(|magic| header[..read].starts_with(magic)) {
        Ok(())
    } else {
        Err(LoadError::NotALibrary {
            path: path.to_path_buf(),
            origin,
            reason: "its header is not that of a shared library for this platform".to_owned(),
        })
    }
}

/// The loader's answer for one library: its reported version, or why it is
/// not a usable ONNX Runtime. The library is unloaded again before `ort`
/// loads it for good.
#[allow(unsafe_code, reason = "dlopen and calling the library's C entry points")]
fn probe(path: &Path, origin: LibrarySource) -> Result<String, LoadError> {
    let not_onnx = |reason: &str| LoadError::NotOnnxRuntime {
        path: path.to_path_buf(),
        origin,
        reason: reason.to_owned(),
    };
    let outcome =
        catch_unwind(|| -> Result<String, LoadError> {
            // SAFETY: loading a library runs its initializers; the caller named
            // this file as the ONNX Runtime library, which is what will be loaded
            // anyway.
            let library = unsafe { libloading::Library::new(path) }.map_err(|error| {
                LoadError::NotALibrary { path: path.to_path_buf(), origin, reason: error.to_string() }
            })?;
            type GetApiBase = unsafe extern "system" fn() -> *const ort::sys::OrtApiBase;
            // SAFETY: the symbol's type is ONNX Runtime's `OrtGetApiBase`.
            let get_base = unsafe { library.get::<GetApiBase>(b"OrtGetApiBase") }
                .map_err(|_| not_onnx("it does not export OrtGetApiBase"))?;
            // SAFETY: OrtGetApiBase takes no arguments and returns a pointer to a
            // static struct (or null).
            let base = unsafe { get_base() };
            if base.is_null() {
                return Err(not_onnx("OrtGetApiBase returned null"));
            }
            // SAFETY: `base` is non-null and points to the library's static
            // OrtApiBase; GetVersionString returns a static C string or null.
            let version_ptr = unsafe { ((*base).GetVersionString)() };
            if version_ptr.is_null() {
                return Err(not_onnx("it reports no version"));
            }
            // SAFETY: non-null, NUL-terminated, static in the library, which is
            // loaded for the whole of this scope.
            let version = unsafe { CStr::from_ptr(version_ptr) }.to_string_lossy().into_owned();
            let unsupported = || LoadError::UnsupportedVersion {
                path: path.to_path_buf(),
                origin,
                version: version.clone(),
                required: REQUIRED_MINOR_VERSION,
            };
            if !version_supported(&version, REQUIRED_MINOR_VERSION) {
                return Err(unsupported());
            }
            // SAFETY: as above; GetApi returns null for an unsupported version.
            let api = unsafe { ((*base).GetApi)(ort::sys::ORT_API_VERSION) };
            if api.is_null() {
                return Err(unsupported());
            }
            Ok(version)
        });
    outcome.unwrap_or_else(|payload| {
        Err(LoadError::Initialization {
            path: path.to_path_buf(),
            origin,
            reason: panic_text(payload.as_ref()),
        })
    })
}

/// Whether a version string `1.<minor>[.<patch>...]` has `minor >= required`.
///
/// ```
/// use tally_onnx::runtime::version_supported;
/// assert!(version_supported("1.32.0", 31));
/// assert!(version_supported("1.31.1", 31));
/// assert!(!version_supported("1.30.0", 31));
/// assert!(!version_supported("2.0.0", 31));
/// assert!(!version_supported("garbage", 31));
/// ```
pub fn version_supported(version: &str, required: u32) -> bool {
    let mut parts = version.trim().split('.');
    parts.next() == Some("1")
        && parts.next().and_then(|minor| minor.parse::<u32>().ok()).is_some_and(|minor| minor >= required)
}
