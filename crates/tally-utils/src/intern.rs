//! String interning: each distinct string stored once and named by a
//! number, the names, kinds, clock domains and IDs that the streaming
//! readers and resolvers meet again and again.

use crate::fast_hash::FastHashMap;

/// Distinct strings, each stored once and named by its number: 0, 1, 2, ...
/// in the order they were first interned.
///
/// Beyond `u32::MAX - 1` distinct strings the last number is given again;
/// no input comes near (that many strings take tens of gigabytes), and
/// `u32::MAX` stays free for the callers' "none".
///
/// ```
/// use tally_utils::intern::Interner;
/// let mut names = Interner::default();
/// assert_eq!(names.intern("gemm"), 0);
/// assert_eq!(names.intern("copy"), 1);
/// assert_eq!(names.intern("gemm"), 0);
/// assert_eq!(names.get(1), Some("copy"));
/// assert_eq!(names.find("relu"), None);
/// ```
#[derive(Debug, Default, Clone)]
pub struct Interner {
    numbers: FastHashMap<Box<str>, u32>,
    strings: Vec<Box<str>>,
}

impl Interner {
    /// The number of `text`, stored on first sight (the only time it
    /// allocates).
    #[inline]
    pub fn intern(&mut self, text: &str) -> u32 {
        if let Some(&number) = self.numbers.get(text) {
            return number;
        }
        let number = u32::try_from(self.strings.len()).unwrap_or(u32::MAX - 1).min(u32::MAX - 1);
        self.strings.push(text.into());
        self.numbers.insert(text.into(), number);
        number
    }

    /// The number of `text` if it was interned.
    #[inline]
    pub fn find(&self, text: &str) -> Option<u32> {
        self.numbers.get(text).copied()
    }

    /// The string numbered `number`.
    #[inline]
    pub fn get(&self, number: u32) -> Option<&str> {
        self.strings.get(number as usize).map(|text| &**text)
    }

    /// How many distinct strings there are.
    pub fn len(&self) -> usize {
        self.strings.len()
    }

    /// Whether nothing was interned.
    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }

    /// The strings in the order of their numbers.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.strings.iter().map(|text| &**text)
    }

    /// The strings, indexed by their numbers.
    pub fn into_strings(self) -> Vec<Box<str>> {
        self.strings
    }
}
