//! Tidy checks of the workspace's shape, as tests so that a plain
//! `cargo test` keeps docs/ARCHITECTURE.md true:
//!
//! - the dependency boundaries: tally-core on serde, serde_json,
//!   thiserror and tally-utils only; no light crate pulls a native runtime in; the profile
//!   half and the accounting half never depend on each other, and only
//!   tally-distributed and the umbrella see both; framework adapters are
//!   depended on by the umbrella and the Python package's features alone,
//!   and the Python package builds no native runtime;
//! - the crate table (what each crate may depend on, dev-dependencies
//!   included, and its half) is the manifests' dependencies on our crates,
//!   no more and no less;
//! - only the umbrella knows the command line: no library crate's message
//!   names a command-line flag;
//! - every crate under crates/ is `publish = false` or carries what
//!   crates.io needs (docs/RELEASING.md): description, license,
//!   documentation, an existing readme, keywords.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Crates that link or load a native runtime; only the adapters and the
/// umbrella's optional features may pull them in.
const NATIVE_CRATES: &[&str] = &["tch", "torch-sys", "ort", "ort-sys", "mpi", "mpi-sys", "cudarc"];

/// The accounting half: correlation evidence to GPU time.
const ACCOUNTING_HALF: &[&str] = &[
    "tally-artifact",
    "tally-clock",
    "tally-resolve",
    "tally-gpu-time",
    "tally-trace",
    "tally-ingest",
    "tally-partial",
    "tally-conformance",
    "tally-report",
];

/// The profile half: the profiler and the framework adapters.
const PROFILE_HALF: &[&str] = &[
    "tally-profile",
    "tally-cuda",
    "tally-onnx",
    "tally-torch",
    "tally-jax",
    "tally-tensorflow",
    "tally-keras",
];

/// The framework adapters: leaves only the umbrella and the Python package
/// depend on, behind features.
const ADAPTERS: &[&str] =
    &["tally-cuda", "tally-onnx", "tally-torch", "tally-jax", "tally-tensorflow", "tally-keras"];

/// Adapters whose framework runs on another's: each may depend on the
/// adapters of the frameworks it delegates to, and on no other.
const DELEGATING_ADAPTERS: &[(&str, &[&str])] =
    &[("tally-keras", &["tally-tensorflow", "tally-jax", "tally-torch"])];

/// The crates that may see both halves.
const BOTH_HALVES: &[&str] = &["tally-distributed", "tally-ml", "tally-python"];

/// The umbrella's package (folder `crates/tally`; its command is `tally`).
const UMBRELLA: &str = "tally-ml";

/// Crates a user may take alone, expecting no native runtime with them.
const LIGHT_CRATES: &[&str] = &[
    "tally-utils",
    "tally-core",
    "tally-artifact",
    "tally-clock",
    "tally-resolve",
    "tally-gpu-time",
    "tally-profile",
    "tally-trace",
    "tally-ingest",
    "tally-partial",
    "tally-conformance",
    "tally-report",
    "tally-distributed",
];

/// The only direct dependencies tally-core may have.
const CORE_DEPENDENCIES: &[&str] = &["serde", "serde_json", "thiserror", "tally-utils"];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is inside the workspace").to_path_buf()
}

/// The names in `cargo tree -e normal -p PACKAGE` (default features), the
/// package itself first.
fn normal_tree(package: &str, depth: Option<&str>) -> Vec<String> {
    tree_of(package, depth, &[])
}

/// [`normal_tree`] with extra `cargo tree` arguments (features).
fn tree_of(package: &str, depth: Option<&str>, extra: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace_root())
        .args(["tree", "-q", "-e", "normal", "--prefix", "none", "-p", package])
        .args(extra);
    if let Some(depth) = depth {
        command.args(["--depth", depth]);
    }
    let output = command.output().expect("cargo runs");
    assert!(output.status.success(), "cargo tree -p {package}: {}", String::from_utf8_lossy(&output.stderr));
    let mut names: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect();
    let first = names.first().cloned();
    names.dedup();
    // The package itself stays first; the rest are what it pulls in.
    if let Some(first) = first {
        names.retain(|name| *name != first);
        names.insert(0, first);
    }
    names
}

/// Every package of the workspace (`crates/*`, `tests`, `xtask`), from
/// `cargo metadata` (workspace inheritance resolved), sorted by name.
fn workspace_packages() -> Vec<serde_json::Value> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(workspace_root())
        .args(["metadata", "-q", "--no-deps", "--format-version", "1"])
        .output()
        .expect("cargo runs");
    assert!(output.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&output.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("cargo metadata's JSON");
    let mut packages = metadata["packages"].as_array().expect("packages").clone();
    packages.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    packages
}

/// Every package under `crates/`, sorted by name.
fn crate_packages() -> Vec<serde_json::Value> {
    let crates_dir = workspace_root().join("crates");
    workspace_packages().into_iter().filter(|package| package_dir(package).starts_with(&crates_dir)).collect()
}

/// The folder of a package from [`crate_packages`].
fn package_dir(package: &serde_json::Value) -> PathBuf {
    let manifest = Path::new(package["manifest_path"].as_str().expect("manifest_path"));
    manifest.parent().expect("a manifest's folder").to_path_buf()
}

/// The package names under `crates/` (tally-testkit aside), with their folders
/// (`crates/tally` is `tally-ml`).
fn every_crate_with_dir() -> Vec<(String, PathBuf)> {
    crate_packages()
        .iter()
        .map(|package| (package["name"].as_str().expect("name").to_owned(), package_dir(package)))
        .filter(|(name, _)| name != "tally-testkit")
        .collect()
}

fn every_crate() -> Vec<String> {
    every_crate_with_dir().into_iter().map(|(name, _)| name).collect()
}

#[test]
fn tally_core_depends_on_serde_serde_json_thiserror_and_utils_only() {
    let direct = normal_tree("tally-core", Some("1"));
    let extra: Vec<&String> =
        direct.iter().skip(1).filter(|name| !CORE_DEPENDENCIES.contains(&name.as_str())).collect();
    assert!(extra.is_empty(), "tally-core depends on {extra:?}; it may use only {CORE_DEPENDENCIES:?}");
}

#[test]
fn no_light_crate_pulls_a_native_runtime_in() {
    for package in LIGHT_CRATES {
        let names = normal_tree(package, None);
        let native: Vec<&String> =
            names.iter().filter(|name| NATIVE_CRATES.contains(&name.as_str())).collect();
        assert!(
            native.is_empty(),
            "{package} depends on {native:?} with default features: see docs/ARCHITECTURE.md"
        );
    }
}

#[test]
fn the_python_package_builds_no_native_runtime() {
    // Its adapters are the Python forms (tally-torch's and tally-onnx's
    // `python` features): the frameworks are the ones in the user's Python.
    let names = tree_of("tally-python", None, &["--all-features"]);
    let native: Vec<&String> = names.iter().filter(|name| NATIVE_CRATES.contains(&name.as_str())).collect();
    assert!(native.is_empty(), "the tally wheel would build {native:?}: see docs/ARCHITECTURE.md");
}

#[test]
fn the_two_halves_never_depend_on_each_other() {
    let mut checked = 0;
    for package in every_crate() {
        let names = normal_tree(&package, None);
        let dependencies = &names[1..];
        let sees = |half: &[&str]| {
            dependencies.iter().filter(|name| half.contains(&name.as_str())).cloned().collect::<Vec<String>>()
        };
        let (accounting, profile) = (sees(ACCOUNTING_HALF), sees(PROFILE_HALF));
        if PROFILE_HALF.contains(&package.as_str()) {
            assert!(
                accounting.is_empty(),
                "{package} (profile half) depends on {accounting:?} (accounting half)"
            );
        }
        if ACCOUNTING_HALF.contains(&package.as_str()) {
            assert!(profile.is_empty(), "{package} (accounting half) depends on {profile:?} (profile half)");
        }
        if !accounting.is_empty() && !profile.is_empty() {
            assert!(
                BOTH_HALVES.contains(&package.as_str()),
                "{package} sees both halves ({accounting:?} and {profile:?}); only {BOTH_HALVES:?} may"
            );
        }
        let adapters = sees(ADAPTERS);
        if package == "tally-python" {
            // Only behind its features: without them it pulls in none.
            let bare = tree_of(&package, None, &["--no-default-features"]);
            let pulled: Vec<&String> = bare.iter().filter(|name| ADAPTERS.contains(&name.as_str())).collect();
            assert!(pulled.is_empty(), "tally-python depends on the adapters {pulled:?} without a feature");
        } else if let Some((_, delegates)) = DELEGATING_ADAPTERS.iter().find(|(name, _)| *name == package) {
            let others: Vec<&String> =
                adapters.iter().filter(|name| !delegates.contains(&name.as_str())).collect();
            assert!(
                others.is_empty(),
                "{package} depends on the adapters {others:?}; it delegates only to {delegates:?}"
            );
        } else if package != UMBRELLA {
            assert!(
                adapters.is_empty(),
                "{package} depends on the adapters {adapters:?}; only the umbrella and the Python package may"
            );
        }
        checked += 1;
    }
    assert!(checked >= 12, "only {checked} crates found under crates/");
}

/// One row of the crate table in docs/ARCHITECTURE.md ("Arrows point down").
struct TableRow {
    /// The row as written, for messages.
    text: String,
    /// The packages it is about (`tests/` and `xtask/` are folders: their
    /// packages).
    crates: Vec<String>,
    /// Its "half" column.
    half: String,
    /// Its "may depend on (ours)" column: each crate with whether the row puts
    /// it behind a feature; `None` for "anything".
    may_use: Option<Vec<(String, bool)>>,
    /// Its "dev-dependencies (ours)" column: the dev-dependencies it may have
    /// beyond tally-testkit, itself and `may_use`; `None` for "anything".
    dev: Option<Vec<String>>,
}

/// `text` without its parenthesized remarks ("(its backends)").
fn without_parentheses(text: &str) -> String {
    let mut depth = 0usize;
    let mut kept = String::new();
    for character in text.chars() {
        match character {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => kept.push(character),
            _ => {}
        }
    }
    kept
}

/// The crates a dependency cell names, as package names, each with whether
/// it is behind a feature; `None` for "anything". The cell is clauses
/// separated by `;`, each a comma-separated list of short names (`gpu-time`
/// for `tally-gpu-time`) or package names, "nothing" or "—"; a clause ending
/// in "behind features" or "with `FEATURE`" is behind a feature, and "the
/// Python forms of" only says which form of an adapter is used.
fn crates_in_cell(cell: &str) -> Option<Vec<(String, bool)>> {
    let cell = without_parentheses(cell);
    if cell.trim() == "anything" {
        return None;
    }
    let mut named = Vec::new();
    for clause in cell.split(';') {
        let (names, behind_feature) = match clause.split_once(" with `") {
            Some((names, _feature)) => (names, true),
            None => match clause.split_once(" behind features") {
                Some((names, _)) => (names, true),
                None => (clause, false),
            },
        };
        let names = names.replace("the Python forms of ", "");
        for name in names.split(',').map(str::trim) {
            if name == "nothing" || name == "—" {
                continue;
            }
            let package = if name.starts_with("tally-") { name.to_owned() } else { format!("tally-{name}") };
            named.push((package, behind_feature));
        }
    }
    Some(named)
}

/// The crate table of docs/ARCHITECTURE.md, its columns found by their
/// headers. `packages` turns a folder (`xtask/`) into its package.
fn architecture_table(packages: &[serde_json::Value]) -> Vec<TableRow> {
    let path = workspace_root().join("docs/ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path).expect("docs/ARCHITECTURE.md");
    let cells = |line: &str| -> Vec<String> {
        let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
        inner.split('|').map(|cell| cell.trim().to_owned()).collect()
    };
    let mut lines = text.lines().skip_while(|line| !line.starts_with("| crate | half |"));
    let header = cells(lines.next().expect("docs/ARCHITECTURE.md has a `| crate | half | ...` table"));
    let column = |title: &str| {
        header
            .iter()
            .position(|cell| cell == title)
            .unwrap_or_else(|| panic!("the crate table has no {title:?} column"))
    };
    let (crate_column, half_column) = (column("crate"), column("half"));
    let (uses_column, dev_column) = (column("may depend on (ours)"), column("dev-dependencies (ours)"));
    let package_in = |folder: &str| {
        let dir = workspace_root().join(folder);
        let package = packages.iter().find(|package| package_dir(package) == dir);
        package.and_then(|package| package["name"].as_str()).map(str::to_owned)
    };
    lines
        .skip(1) // the `| --- |` line
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let row = cells(line);
            assert_eq!(
                row.len(),
                header.len(),
                "a row of the crate table with another number of cells: {line}"
            );
            let mut crates = Vec::new();
            for name in row[crate_column].split('`').skip(1).step_by(2) {
                let package = if name.ends_with('/') {
                    package_in(name)
                        .unwrap_or_else(|| panic!("no package in the folder {name} of the row {line}"))
                } else {
                    name.to_owned()
                };
                if !crates.contains(&package) {
                    crates.push(package);
                }
            }
            let dev = crates_in_cell(&row[dev_column]);
            TableRow {
                text: line.to_owned(),
                crates,
                half: row[half_column].clone(),
                may_use: crates_in_cell(&row[uses_column]),
                dev: dev.map(|dev| dev.into_iter().map(|(name, _)| name).collect()),
            }
        })
        .collect()
}

/// One dependency of a workspace package on another.
struct Dependency {
    from: String,
    to: String,
    /// `normal`, `build` or `dev`.
    kind: &'static str,
    optional: bool,
}

/// Every dependency of a workspace package on a workspace package, as its
/// manifest declares it (normal, build and dev; optional ones too).
fn internal_dependencies(packages: &[serde_json::Value]) -> Vec<Dependency> {
    let names: Vec<&str> = packages.iter().filter_map(|package| package["name"].as_str()).collect();
    let mut found = Vec::new();
    for package in packages {
        for dependency in package["dependencies"].as_array().into_iter().flatten() {
            let to = dependency["name"].as_str().expect("a dependency's name");
            if !names.contains(&to) {
                continue;
            }
            found.push(Dependency {
                from: package["name"].as_str().expect("name").to_owned(),
                to: to.to_owned(),
                kind: match dependency["kind"].as_str() {
                    None => "normal",
                    Some("build") => "build",
                    Some("dev") => "dev",
                    Some(other) => panic!("a dependency of kind {other:?}"),
                },
                optional: dependency["optional"].as_bool().unwrap_or(false),
            });
        }
    }
    found
}

/// Where `krate`'s dependencies on our crates and its `row` of the crate
/// table differ, each as a message naming the arrow and the row.
fn differences_from_row(row: &TableRow, krate: &str, dependencies: &[Dependency]) -> Vec<String> {
    let mut problems = Vec::new();
    let of = |dev: bool| dependencies.iter().filter(move |d| d.from == krate && (d.kind == "dev") == dev);
    let in_row = |to: &str| row.may_use.iter().flatten().find(|(name, _)| name == to);
    // What it uses (normal and build dependencies), optional ones behind a
    // feature; and no more than it uses.
    if let Some(may_use) = &row.may_use {
        for dependency in of(false) {
            let optional = if dependency.optional { ", optional" } else { "" };
            let arrow = format!("{krate} -> {} ({} dependency{optional})", dependency.to, dependency.kind);
            match in_row(&dependency.to) {
                None => problems.push(format!("{arrow} is not in its row\n    {}", row.text)),
                Some((_, behind_feature)) if *behind_feature != dependency.optional => {
                    let behind = if *behind_feature { "behind" } else { "not behind" };
                    problems.push(format!("{arrow} is {behind} a feature in its row\n    {}", row.text));
                }
                Some(_) => {}
            }
        }
        for (listed, _) in may_use {
            if !of(false).any(|dependency| dependency.to == *listed) {
                problems.push(format!(
                    "{krate} -> {listed} is in its row but not a dependency\n    {}",
                    row.text
                ));
            }
        }
    }
    // Its dev-dependencies: tally-testkit, itself, what it may use and its
    // dev-dependencies column; and every one of that column.
    if let Some(dev) = &row.dev {
        for dependency in of(true) {
            let to = dependency.to.as_str();
            let allowed =
                to == "tally-testkit" || to == krate || in_row(to).is_some() || dev.iter().any(|d| d == to);
            if !allowed {
                problems
                    .push(format!("{krate} -> {to} (dev-dependency) is not in its row\n    {}", row.text));
            }
        }
        for listed in dev {
            if !of(true).any(|dependency| dependency.to == *listed) {
                problems.push(format!(
                    "{krate} -> {listed} is in its row but not a dev-dependency\n    {}",
                    row.text
                ));
            }
        }
    }
    problems
}

#[test]
fn the_architecture_table_lists_every_internal_dependency() {
    // docs/ARCHITECTURE.md's crate table, held to the manifests both ways:
    // every dependency on one of ours is in its crate's row (optional ones
    // in a clause behind a feature, the others outside one), and every crate
    // a row names is a dependency. Dev-dependencies may be tally-testkit, the
    // crate itself (for a test feature) or what the row lists in either column.
    let packages = workspace_packages();
    let names: Vec<&str> = packages.iter().filter_map(|package| package["name"].as_str()).collect();
    let table = architecture_table(&packages);
    let dependencies = internal_dependencies(&packages);
    let mut problems = Vec::new();
    for name in &names {
        let rows = table.iter().filter(|row| row.crates.iter().any(|krate| krate == name)).count();
        if rows != 1 {
            problems.push(format!("{name} has {rows} rows in the table (one each)"));
        }
    }
    for row in &table {
        let listed = row.may_use.iter().flatten().map(|(name, _)| name).chain(row.dev.iter().flatten());
        for name in row.crates.iter().chain(listed) {
            if !names.contains(&name.as_str()) {
                problems.push(format!("{name} is no workspace package, in the row\n    {}", row.text));
            }
        }
        for krate in &row.crates {
            problems.extend(differences_from_row(row, krate, &dependencies));
        }
    }
    assert!(
        problems.is_empty(),
        "docs/ARCHITECTURE.md's crate table and the manifests differ:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_architecture_table_halves_are_the_tidy_lists() {
    // The "half" column and this file's lists of the halves say the same.
    let table = architecture_table(&workspace_packages());
    let mut problems = Vec::new();
    for row in &table {
        for krate in &row.crates {
            let half = row.half.as_str();
            let expected = [
                ("ACCOUNTING_HALF", half == "accounting", ACCOUNTING_HALF.contains(&krate.as_str())),
                ("PROFILE_HALF", half.starts_with("profile"), PROFILE_HALF.contains(&krate.as_str())),
                ("ADAPTERS", half.starts_with("profile (adapter"), ADAPTERS.contains(&krate.as_str())),
                (
                    "BOTH_HALVES",
                    half == "both" && krate != "tally-core" && krate != "tally-utils",
                    BOTH_HALVES.contains(&krate.as_str()),
                ),
            ];
            for (list, in_table, in_list) in expected {
                if in_table != in_list {
                    let is = if in_list { "is" } else { "is not" };
                    problems
                        .push(format!("{krate} {is} in {list}, but its half is {half:?}\n    {}", row.text));
                }
            }
        }
    }
    for name in ACCOUNTING_HALF.iter().chain(PROFILE_HALF).chain(ADAPTERS).chain(BOTH_HALVES) {
        if !table.iter().any(|row| row.crates.iter().any(|krate| krate == name)) {
            problems.push(format!("{name} has no row in the table"));
        }
    }
    assert!(
        problems.is_empty(),
        "docs/ARCHITECTURE.md's halves and tidy.rs's differ:\n{}",
        problems.join("\n")
    );
}

/// `--flag` spelled inside a string literal of a library crate's source
/// (comments and `#[cfg(test)]` modules aside): the crate would be telling
/// its users about a command line it does not own.
fn flags_in_literals(source: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in (1..).zip(source.lines()) {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        if code.starts_with("#[cfg(test)]") {
            break;
        }
        let mut inside = false;
        let mut literal = String::new();
        let mut previous = ' ';
        for character in line.chars() {
            if character == '"' && previous != '\\' {
                if inside && flag_in(&literal) {
                    found.push((number, literal.clone()));
                }
                inside = !inside;
                literal.clear();
            } else if inside {
                literal.push(character);
            }
            previous = character;
        }
        // A literal continued on the next line is checked as far as it goes.
        if inside && flag_in(&literal) {
            found.push((number, literal));
        }
    }
    found
}

fn flag_in(text: &str) -> bool {
    text.match_indices("--").any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + 2..].chars().next();
        before.is_none_or(|c| c.is_whitespace() || c == '(' || c == '`' || c == '\'')
            && after.is_some_and(|c| c.is_ascii_lowercase())
    })
}

#[test]
fn the_flag_finder_finds_flags_and_nothing_else() {
    assert_eq!(flags_in_literals(r#"let e = format!("give --dim {name}=N");"#).len(), 1);
    assert_eq!(flags_in_literals(r#"Err("(--ort-lib) not given".into())"#).len(), 1);
    assert!(flags_in_literals(r#"let dashes = "a -- b"; let rule = "----";"#).is_empty());
    assert!(flags_in_literals("// see --dim\nlet x = 1;").is_empty());
    assert!(flags_in_literals("#[cfg(test)]\nmod tests { const A: &str = \"--x\"; }").is_empty());
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            // Programs (`src/bin`) own their command lines.
            if path.file_name().is_some_and(|name| name == "bin") {
                continue;
            }
            rust_files(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
}

#[test]
fn no_library_crate_names_a_command_line_flag() {
    let mut offences = Vec::new();
    let mut files = Vec::new();
    for (package, dir) in every_crate_with_dir() {
        // The umbrella owns the command line.
        if package == UMBRELLA {
            continue;
        }
        rust_files(&dir.join("src"), &mut files);
    }
    assert!(files.len() > 50, "only {} source files found", files.len());
    for file in &files {
        let source = std::fs::read_to_string(file).expect("readable source");
        for (line, literal) in flags_in_literals(&source) {
            offences.push(format!("{}:{line}: \"{literal}\"", file.display()));
        }
    }
    assert!(offences.is_empty(), "library crates naming command-line flags:\n{}", offences.join("\n"));
}

/// A keyword crates.io accepts: ASCII, at most 20 characters, starting with a
/// letter, of letters, digits, `-` and `_`.
fn valid_keyword(keyword: &str) -> bool {
    keyword.len() <= 20
        && keyword.starts_with(|c: char| c.is_ascii_alphabetic())
        && keyword.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[test]
fn every_publishable_crate_has_its_crates_io_metadata() {
    // docs/RELEASING.md: a crate under crates/ is either `publish = false` or
    // carries what crates.io and docs.rs show, and its README exists.
    let mut problems = Vec::new();
    let mut publishable = 0;
    for package in crate_packages() {
        let name = package["name"].as_str().expect("name");
        if package["publish"].as_array().is_some_and(Vec::is_empty) {
            continue;
        }
        publishable += 1;
        for field in ["description", "license", "documentation", "readme"] {
            if package[field].as_str().is_none_or(|value| value.trim().is_empty()) {
                problems.push(format!("{name}: no `{field}`"));
            }
        }
        let documentation = format!("https://docs.rs/{name}");
        if package["documentation"].as_str().is_some_and(|value| value != documentation) {
            problems.push(format!("{name}: documentation is not {documentation}"));
        }
        if let Some(readme) = package["readme"].as_str()
            && !package_dir(&package).join(readme).is_file()
        {
            problems.push(format!("{name}: its readme {readme} is missing"));
        }
        let keywords: Vec<&str> =
            package["keywords"].as_array().into_iter().flatten().filter_map(|value| value.as_str()).collect();
        if keywords.is_empty() || keywords.len() > 5 {
            problems.push(format!("{name}: {} keywords (crates.io takes 1 to 5)", keywords.len()));
        }
        for keyword in keywords.iter().filter(|keyword| !valid_keyword(keyword)) {
            problems.push(format!("{name}: keyword {keyword:?} is not one crates.io accepts"));
        }
        let categories = package["categories"].as_array().map_or(0, Vec::len);
        if categories > 5 {
            problems.push(format!("{name}: {categories} categories (crates.io takes at most 5)"));
        }
    }
    assert!(publishable >= 12, "only {publishable} publishable crates found under crates/");
    assert!(problems.is_empty(), "crates.io metadata missing (docs/RELEASING.md):\n{}", problems.join("\n"));
}

#[test]
fn one_version_for_every_crate_and_the_wheel() {
    // docs/RELEASING.md: every crate under crates/ (the wheel's tally-python
    // among them: maturin takes its version) has the workspace's version, and
    // every dependency on one of them asks for exactly that version.
    let packages = crate_packages();
    let version = packages
        .iter()
        .find(|package| package["name"] == UMBRELLA)
        .and_then(|package| package["version"].as_str())
        .expect("the umbrella's version")
        .to_owned();
    let names: Vec<&str> = packages.iter().filter_map(|package| package["name"].as_str()).collect();
    let mut problems = Vec::new();
    for package in &packages {
        let name = package["name"].as_str().expect("name");
        if package["version"] != version.as_str() {
            problems.push(format!("{name} is version {}, the workspace {version}", package["version"]));
        }
        for dependency in package["dependencies"].as_array().into_iter().flatten() {
            let (Some(dependency_name), Some(requirement)) =
                (dependency["name"].as_str(), dependency["req"].as_str())
            else {
                continue;
            };
            // Path-only dev-dependencies (tally-testkit, a crate on itself for
            // a test feature) are left out of a published manifest.
            if names.contains(&dependency_name)
                && dependency_name != "tally-testkit"
                && dependency_name != name
                && requirement != format!("^{version}")
            {
                problems.push(format!("{name} asks for {dependency_name} {requirement}, not ^{version}"));
            }
        }
    }
    assert!(problems.is_empty(), "versions differ:\n{}", problems.join("\n"));
}
