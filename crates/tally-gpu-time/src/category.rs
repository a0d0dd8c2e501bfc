//! The one rule that gives every measured GPU activity a category, and the
//! rule that tells a synchronisation call among the runtime calls.
//!
//! # The category rule
//!
//! An activity is read through two facts of the resolved evidence, the same
//! for imported traces and native artifacts: its `activity_kind` and its
//! name ([`tally_resolve::activity_name`]: `metadata.name`, else
//! `metadata.first_name`, the kernel's name in an imported trace). The
//! first rule that applies decides:
//!
//! 1. **User patterns**, in the order given ([`CategoryRules::with_pattern`]):
//!    a case-insensitive glob (`*` any run of characters, `?` one) over the
//!    name, or over the kind when the activity has no name.
//! 2. **`communication`**: the kind marks it (a word of the kind, split at
//!    non-alphanumerics, is `communication`, `collective`, `comm`, `nccl` or
//!    `rccl`, any case), or the name starts with `nccl` or `rccl`, any case.
//! 3. **`memory`**: a word of the kind is `memcpy` or `memset` (Kineto's
//!    `gpu_memcpy` and `gpu_memset`). A copy's direction is the first word
//!    `HtoD`, `DtoH`, `DtoD` or `PtoP` (any case) of its kind or name
//!    (Kineto writes `Memcpy HtoD (Pageable -> Device)`); without one it is
//!    [`MemoryKind::MemcpyUnspecified`].
//! 4. **`compute`**: a word of the kind is `kernel` (`gpu_kernel`, Kineto's
//!    `kernel`).
//! 5. **`other`**: everything else (a GPU activity of a kind tally does not
//!    know).
//!
//! Names are never guessed from: a kernel named `...memcpy...` is compute
//! (HTA calls it memory), and a kernel is communication only by the name
//! prefix or its kind, so renamed NCCL kernels are caught by a user pattern
//! rather than by a substring that also matches unrelated kernels.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// What a GPU activity was doing, by [the rule](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Every other kernel.
    Compute,
    /// Collective kernels (NCCL, RCCL) or activities the producer marked as
    /// communication.
    Communication,
    /// Copies and sets.
    Memory,
    /// GPU activity of an unknown kind.
    Other,
}

impl Category {
    /// Every category, in the order reports list them.
    pub const ALL: [Category; 4] =
        [Category::Compute, Category::Communication, Category::Memory, Category::Other];

    /// The name reports key it by.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Compute => "compute",
            Category::Communication => "communication",
            Category::Memory => "memory",
            Category::Other => "other",
        }
    }

    /// Its bit in a label set of [`tally_utils::interval::LabelCoverage`].
    pub(crate) fn bit(self) -> u8 {
        match self {
            Category::Compute => 1,
            Category::Communication => 2,
            Category::Memory => 4,
            Category::Other => 8,
        }
    }

    /// The category a user pattern names: its [`Category::as_str`] name.
    pub fn parse(text: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|category| category.as_str() == text)
    }
}

/// What kind of memory activity, where the evidence says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum MemoryKind {
    /// Host to device.
    #[serde(rename = "memcpy_htod")]
    MemcpyHtoD,
    /// Device to host.
    #[serde(rename = "memcpy_dtoh")]
    MemcpyDtoH,
    /// Device to device (one device).
    #[serde(rename = "memcpy_dtod")]
    MemcpyDtoD,
    /// Peer to peer (between devices).
    #[serde(rename = "memcpy_ptop")]
    MemcpyPtoP,
    /// A copy whose direction the evidence does not state.
    #[serde(rename = "memcpy_unspecified")]
    MemcpyUnspecified,
    /// A memset.
    #[serde(rename = "memset")]
    Memset,
    /// Memory by a user pattern, neither a copy nor a set by its kind.
    #[serde(rename = "other")]
    Other,
}

impl MemoryKind {
    /// Every kind, in the order reports list them.
    pub const ALL: [MemoryKind; 7] = [
        MemoryKind::MemcpyHtoD,
        MemoryKind::MemcpyDtoH,
        MemoryKind::MemcpyDtoD,
        MemoryKind::MemcpyPtoP,
        MemoryKind::MemcpyUnspecified,
        MemoryKind::Memset,
        MemoryKind::Other,
    ];

    /// The name reports key it by.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::MemcpyHtoD => "memcpy_htod",
            MemoryKind::MemcpyDtoH => "memcpy_dtoh",
            MemoryKind::MemcpyDtoD => "memcpy_dtod",
            MemoryKind::MemcpyPtoP => "memcpy_ptop",
            MemoryKind::MemcpyUnspecified => "memcpy_unspecified",
            MemoryKind::Memset => "memset",
            MemoryKind::Other => "other",
        }
    }
}

/// An activity's category and, for memory, what kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Classified {
    /// The category.
    pub category: Category,
    /// For [`Category::Memory`], the copy direction or set.
    pub memory: Option<MemoryKind>,
}

/// A glob over names: `*` matches any run of characters, `?` one character;
/// ASCII letters match in any case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamePattern {
    text: String,
    lowered: Vec<char>,
}

/// Why a pattern is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PatternError {
    /// The pattern is empty.
    #[error("a name pattern must not be empty")]
    Empty,
    /// The category is none of the four.
    #[error("{0:?} is not a category (compute, communication, memory or other)")]
    UnknownCategory(String),
    /// The text is not `CATEGORY=GLOB`.
    #[error("{0:?}: expected CATEGORY=GLOB, e.g. communication=*allreduce*")]
    Form(String),
}

impl NamePattern {
    /// A pattern from its text.
    pub fn new(text: &str) -> Result<Self, PatternError> {
        if text.is_empty() {
            return Err(PatternError::Empty);
        }
        Ok(Self { text: text.to_owned(), lowered: text.chars().map(|c| c.to_ascii_lowercase()).collect() })
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `name` matches the whole pattern.
    pub fn matches(&self, name: &str) -> bool {
        let name: Vec<char> = name.chars().map(|c| c.to_ascii_lowercase()).collect();
        glob(&self.lowered, &name)
    }
}

/// Iterative glob matching with one backtrack point: linear in practice,
/// never exponential.
fn glob(pattern: &[char], name: &[char]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((star_p, star_n)) => {
                    p = star_p + 1;
                    n = star_n + 1;
                    star = Some((star_p, star_n + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// The category rule, with the user's patterns (see [the module](self)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CategoryRules {
    patterns: Vec<(NamePattern, Category)>,
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|word| !word.is_empty())
}

fn has_word(text: &str, wanted: &[&str]) -> bool {
    words(text).any(|word| wanted.iter().any(|candidate| word.eq_ignore_ascii_case(candidate)))
}

fn starts_with_ignoring_case(text: &str, prefix: &str) -> bool {
    text.get(..prefix.len()).is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

impl CategoryRules {
    /// The built-in rule alone.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a pattern, tried after the ones added before it and before the
    /// built-in rule.
    pub fn with_pattern(mut self, category: Category, pattern: NamePattern) -> Self {
        self.patterns.push((pattern, category));
        self
    }

    /// Adds a pattern written `CATEGORY=GLOB`.
    pub fn with_pattern_text(self, text: &str) -> Result<Self, PatternError> {
        let (category, glob) = text.split_once('=').ok_or_else(|| PatternError::Form(text.to_owned()))?;
        let category = Category::parse(category.trim())
            .ok_or_else(|| PatternError::UnknownCategory(category.trim().to_owned()))?;
        Ok(self.with_pattern(category, NamePattern::new(glob)?))
    }

    /// The user's patterns, in order.
    pub fn patterns(&self) -> impl Iterator<Item = (&NamePattern, Category)> {
        self.patterns.iter().map(|(pattern, category)| (pattern, *category))
    }

    /// The category of a GPU activity of kind `kind` named `name`.
    pub fn classify(&self, kind: &str, name: Option<&str>) -> Classified {
        let subject = name.unwrap_or(kind);
        if let Some((_, category)) = self.patterns.iter().find(|(pattern, _)| pattern.matches(subject)) {
            let memory = (*category == Category::Memory).then(|| memory_kind(kind, name));
            return Classified { category: *category, memory };
        }
        let named_collective = name.is_some_and(|name| {
            starts_with_ignoring_case(name, "nccl") || starts_with_ignoring_case(name, "rccl")
        });
        if named_collective || has_word(kind, &["communication", "collective", "comm", "nccl", "rccl"]) {
            return Classified { category: Category::Communication, memory: None };
        }
        if has_word(kind, &["memcpy", "memset"]) {
            return Classified { category: Category::Memory, memory: Some(memory_kind(kind, name)) };
        }
        if has_word(kind, &["kernel"]) {
            return Classified { category: Category::Compute, memory: None };
        }
        Classified { category: Category::Other, memory: None }
    }
}

/// The memory kind of an activity classified as memory.
fn memory_kind(kind: &str, name: Option<&str>) -> MemoryKind {
    if has_word(kind, &["memset"]) {
        return MemoryKind::Memset;
    }
    if !has_word(kind, &["memcpy"]) {
        return MemoryKind::Other;
    }
    const DIRECTIONS: [(&str, MemoryKind); 4] = [
        ("htod", MemoryKind::MemcpyHtoD),
        ("dtoh", MemoryKind::MemcpyDtoH),
        ("dtod", MemoryKind::MemcpyDtoD),
        ("ptop", MemoryKind::MemcpyPtoP),
    ];
    words(kind)
        .chain(name.into_iter().flat_map(words))
        .find_map(|word| {
            DIRECTIONS.iter().find(|(text, _)| word.eq_ignore_ascii_case(text)).map(|(_, kind)| *kind)
        })
        .unwrap_or(MemoryKind::MemcpyUnspecified)
}

/// Whether a runtime or driver call named `name` makes the host wait for
/// the device: its name contains `synchronize`, any case
/// (`cudaDeviceSynchronize`, `cudaStreamSynchronize`,
/// `cudaEventSynchronize`, `cuCtxSynchronize`, `hipDeviceSynchronize`, ...).
pub fn is_synchronization(name: &str) -> bool {
    name.to_ascii_lowercase().contains("synchronize")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails by panicking")]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_rule() {
        let rules = CategoryRules::new();
        let of = |kind: &str, name: Option<&str>| rules.classify(kind, name);
        assert_eq!(
            of("kernel", Some("ncclKernel_AllReduce_RING_LL_Sum_float")).category,
            Category::Communication
        );
        assert_eq!(of("gpu_kernel", Some("RCCL_allgather")).category, Category::Communication);
        assert_eq!(
            of("gpu_kernel", Some("void at::native::vectorized_elementwise_kernel")).category,
            Category::Compute
        );
        assert_eq!(of("gpu_kernel", Some("my_nccl_like")).category, Category::Compute);
        assert_eq!(of("gpu_communication", None).category, Category::Communication);
        assert_eq!(of("Kernel", Some("memcpy_kernel")).category, Category::Compute);
        let copy = of("gpu_memcpy", Some("Memcpy HtoD (Pageable -> Device)"));
        assert_eq!((copy.category, copy.memory), (Category::Memory, Some(MemoryKind::MemcpyHtoD)));
        assert_eq!(
            of("gpu_memcpy", Some("Memcpy DtoD (Device -> Device)")).memory,
            Some(MemoryKind::MemcpyDtoD)
        );
        assert_eq!(of("memcpy_ptop", None).memory, Some(MemoryKind::MemcpyPtoP));
        assert_eq!(of("gpu_memcpy", None).memory, Some(MemoryKind::MemcpyUnspecified));
        assert_eq!(of("gpu_memset", Some("Memset (Device)")).memory, Some(MemoryKind::Memset));
        assert_eq!(of("cuda_sync", Some("Stream Sync")).category, Category::Other);
    }

    #[test]
    fn user_patterns_come_first_in_order() {
        let rules = CategoryRules::new()
            .with_pattern_text("communication=*AllReduce*")
            .unwrap()
            .with_pattern_text("compute=*")
            .unwrap();
        assert_eq!(rules.classify("gpu_kernel", Some("my_allreduce_v2")).category, Category::Communication);
        assert_eq!(rules.classify("gpu_memset", Some("Memset")).category, Category::Compute);
        let memory = CategoryRules::new().with_pattern_text("memory=copy?").unwrap();
        let classified = memory.classify("gpu_kernel", Some("COPY1"));
        assert_eq!((classified.category, classified.memory), (Category::Memory, Some(MemoryKind::Other)));
        assert_eq!(memory.classify("gpu_kernel", Some("copy12")).category, Category::Compute);
        for bad in ["compute", "nope=*", "compute="] {
            assert!(CategoryRules::new().with_pattern_text(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn globs() {
        let matches = |pattern: &str, name: &str| NamePattern::new(pattern).unwrap().matches(name);
        assert!(matches("nccl*", "ncclDevKernel_AllGather"));
        assert!(matches("*gemm*", "sm80_xmma_GEMM_bf16"));
        assert!(matches("a?c", "abc") && !matches("a?c", "abbc"));
        assert!(matches("*a*b*c*", "xxaxxbxxcxx") && !matches("*a*b*c*", "cba"));
        assert!(!matches("abc", "abcd") && matches("**", ""));
    }

    #[test]
    fn synchronisation_calls() {
        assert!(is_synchronization("cudaStreamSynchronize"));
        assert!(is_synchronization("hipDeviceSynchronize"));
        assert!(!is_synchronization("cudaStreamWaitEvent"));
    }
}
