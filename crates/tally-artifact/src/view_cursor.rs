//! The view path's JSON cursor: a reading position in one line's bytes
//! that reads the values of a row (strings without escapes, non-negative
//! integers, `null`, entity references) and hashes metadata with Python's
//! equality as it reads it, in any JSON spacing or, faster, in the one
//! spelling of stormlog's writer. The row readers that use it are
//! [`crate::view_rows`]'s.

use tally_core::view::RefView;
use tally_utils::byte_search::{equal_to, first_flagged};
use tally_utils::content_hash::ContentHasher;
use tally_utils::decimal::leading_json_integer;

/// Nesting past this depth in metadata is left to the exact path.
const MAX_DEPTH: usize = 64;

/// A JSON member's value as the view path reads it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) enum Field<T> {
    #[default]
    Absent,
    Null,
    Present(T),
}

impl<T: Copy> Field<T> {
    pub(crate) fn is_absent(&self) -> bool {
        matches!(self, Field::Absent)
    }

    /// `Some` when present; `None` when absent or null (the exact path
    /// decides a missing required field).
    pub(crate) fn required(self) -> Option<T> {
        match self {
            Field::Present(value) => Some(value),
            _ => None,
        }
    }

    /// Absent and null both mean "not given".
    pub(crate) fn optional(self) -> Option<T> {
        self.required()
    }
}

/// What was read of a metadata object.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Meta<'l> {
    pub(crate) hash: u128,
    pub(crate) name: Option<&'l str>,
    pub(crate) first_name: Option<&'l str>,
    pub(crate) intervals: Intervals,
}

/// A metadata object's `intervals` member.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Intervals {
    #[default]
    Absent,
    Null,
    /// A list of pairs, read into the scanner's pair buffer.
    Pairs,
    /// Anything else: an invalid activity, left to the exact path.
    Other,
}

/// A reading position in a line known to be UTF-8 with no control bytes.
pub(crate) struct Cursor<'l> {
    pub(crate) text: &'l str,
    pub(crate) bytes: &'l [u8],
    pub(crate) at: usize,
}

impl<'l> Cursor<'l> {
    #[inline]
    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    #[inline]
    pub(crate) fn space(&mut self) {
        while matches!(self.bytes.get(self.at), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }

    #[inline]
    pub(crate) fn eat(&mut self, byte: u8) -> Option<()> {
        self.space();
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// A string without escapes, at the cursor (after any space).
    #[inline]
    pub(crate) fn string(&mut self) -> Option<&'l str> {
        self.space();
        self.tight_string()
    }

    /// A non-negative integer that fits in 64 bits, in JSON's spelling.
    #[inline]
    fn integer(&mut self) -> Option<u64> {
        self.space();
        let value = self.tight_integer()?;
        // A fraction or exponent next.
        match self.peek() {
            None | Some(b',' | b'}' | b']' | b' ' | b'\t') => Some(value),
            _ => None,
        }
    }

    #[inline]
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.bytes.get(self.at..self.at + word.len())? != word {
            return None;
        }
        self.at += word.len();
        match self.peek() {
            None | Some(b',' | b'}' | b']' | b' ' | b'\t') => Some(()),
            _ => None,
        }
    }

    /// `null` (true) or something else (false, cursor unmoved).
    #[inline]
    fn null(&mut self) -> bool {
        self.space();
        self.peek() == Some(b'n') && self.literal(b"null").is_some()
    }

    /// Reads `{`, then members until `}`: `member` gets each key with the
    /// cursor at its value and must read the value.
    #[inline]
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'l str) -> Option<()>) -> Option<usize> {
        self.eat(b'{')?;
        self.space();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(0);
        }
        let mut count = 0;
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            member(self, key)?;
            count += 1;
            self.space();
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(count);
                }
                _ => return None,
            }
        }
    }

    pub(crate) fn field_integer(&mut self) -> Option<Field<u64>> {
        if self.null() {
            return Some(Field::Null);
        }
        self.integer().map(Field::Present)
    }

    pub(crate) fn field_string(&mut self) -> Option<Field<&'l str>> {
        if self.null() {
            return Some(Field::Null);
        }
        // An empty string breaks every string rule of the model.
        self.string().filter(|text| !text.is_empty()).map(Field::Present)
    }

    pub(crate) fn field_ref(&mut self) -> Option<Field<RefView<'l>>> {
        if self.null() {
            return Some(Field::Null);
        }
        if let Some(reference) = self.sorted_ref() {
            return Some(Field::Present(reference));
        }
        let (mut producer, mut id) = (None, None);
        self.object(|cursor, key| {
            let slot = match key {
                "producer_id" => &mut producer,
                "id" => &mut id,
                _ => return None,
            };
            if slot.is_some() {
                return None;
            }
            *slot = Some(cursor.string()?);
            Some(())
        })?;
        RefView::new(producer?, id?).map(Field::Present)
    }

    /// A reference in the one spelling writers use (keys sorted, Python's
    /// separators), read without scanning its keys; `None`, cursor
    /// unmoved, for any other spelling, which [`Cursor::field_ref`] reads.
    #[inline]
    fn sorted_ref(&mut self) -> Option<RefView<'l>> {
        const OPEN: &[u8] = b"{\"id\": \"";
        const MIDDLE: &[u8] = b"\", \"producer_id\": \"";
        let start = self.at;
        let read = |cursor: &mut Self| -> Option<RefView<'l>> {
            cursor.at += OPEN.len();
            let id_end = cursor.at + quote_or_backslash(&cursor.bytes[cursor.at..])?;
            let id = cursor.text.get(cursor.at..id_end)?;
            if !starts_with(&cursor.bytes[id_end..], MIDDLE) {
                return None;
            }
            cursor.at = id_end + MIDDLE.len();
            let producer_end = cursor.at + quote_or_backslash(&cursor.bytes[cursor.at..])?;
            let producer = cursor.text.get(cursor.at..producer_end)?;
            if cursor.bytes.get(producer_end..producer_end + 2)? != b"\"}" {
                return None;
            }
            cursor.at = producer_end + 2;
            RefView::new(producer, id)
        };
        if !starts_with(&self.bytes[self.at..], OPEN) {
            return None;
        }
        let found = read(self);
        if found.is_none() {
            self.at = start;
        }
        found
    }

    /// An object hashed as it is read; its keys must come in ascending
    /// order (every writer of artifacts sorts them), else the exact path
    /// decides. `seen` gets each key with the span of its value's text.
    fn hashed_object(
        &mut self,
        hasher: &mut ContentHasher,
        depth: usize,
        mut seen: impl FnMut(&mut Self, &'l str, usize) -> Option<()>,
    ) -> Option<usize> {
        if depth >= MAX_DEPTH {
            return None;
        }
        hasher.json_object_start();
        let mut previous: Option<&str> = None;
        let count = self.object(|cursor, key| {
            // Strictly ascending: also refuses duplicate keys, which Python
            // resolves to the last value.
            if previous.is_some_and(|previous| previous >= key) {
                return None;
            }
            previous = Some(key);
            hasher.json_key(key);
            cursor.space();
            let start = cursor.at;
            cursor.value::<AnySpacing>(hasher, depth)?;
            seen(cursor, key, start)
        })?;
        hasher.json_object_end(count);
        Some(count)
    }

    /// The metadata object: its hash, its name candidates, and its
    /// `intervals` read into `pairs` when they are a list of pairs.
    pub(crate) fn metadata(&mut self, pairs: &mut Vec<(u64, u64)>) -> Option<Meta<'l>> {
        let mut hasher = ContentHasher::default();
        let mut meta = Meta::default();
        self.hashed_object(&mut hasher, 1, |cursor, key, start| {
            match key {
                "name" => meta.name = cursor.text.get(start..cursor.at).and_then(plain_string),
                "first_name" => meta.first_name = cursor.text.get(start..cursor.at).and_then(plain_string),
                "intervals" => {
                    meta.intervals = cursor
                        .text
                        .get(start..cursor.at)
                        .map_or(Intervals::Other, |text| read_pairs(text, pairs));
                }
                _ => {}
            }
            Some(())
        })?;
        meta.hash = hasher.finish128();
        Some(meta)
    }
}

/// The index of the first `"` or `\\` in `text`. The strings of a row are
/// a few to a few dozen bytes: eight bytes a step, with no call, beats a
/// vectorized search that must first be set up.
#[inline]
fn quote_or_backslash(text: &[u8]) -> Option<usize> {
    let quote_or_backslash = |word| equal_to(word, b'"') | equal_to(word, b'\\');
    let at = first_flagged(text, quote_or_backslash, |byte| byte == b'"' || byte == b'\\');
    (at < text.len()).then_some(at)
}

/// `text.starts_with(prefix)` for the short prefixes of a row's keys, a
/// word at a time, the last word overlapping the one before it: the
/// library's comparison is a call per key, and a byte loop for the last
/// few bytes was the hottest spot of [`scan`](crate::view_rows::scan).
#[inline]
pub(crate) fn starts_with(text: &[u8], prefix: &[u8]) -> bool {
    let Some(head) = text.get(..prefix.len()) else {
        return false;
    };
    let length = prefix.len();
    if length < 8 {
        return head == prefix;
    }
    let word = |bytes: &[u8], at: usize| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(word)
    };
    let mut at = 0;
    while at + 8 < length {
        if word(head, at) != word(prefix, at) {
            return false;
        }
        at += 8;
    }
    word(head, length - 8) == word(prefix, length - 8)
}

/// The content of a JSON string's text (quotes included), which the hashing
/// walk has already checked has no escapes.
fn plain_string(text: &str) -> Option<&str> {
    text.strip_prefix('"')?.strip_suffix('"')
}

/// `[[offset, duration], ...]` of non-negative integers, read from JSON
/// text the hashing walk has already checked.
fn read_pairs(text: &str, pairs: &mut Vec<(u64, u64)>) -> Intervals {
    if text == "null" {
        return Intervals::Null;
    }
    pairs.clear();
    let mut cursor = Cursor { text, bytes: text.as_bytes(), at: 0 };
    let mut list = || -> Option<()> {
        cursor.eat(b'[')?;
        cursor.space();
        if cursor.peek()? == b']' {
            cursor.at += 1;
        } else {
            loop {
                cursor.eat(b'[')?;
                let offset = cursor.integer()?;
                cursor.eat(b',')?;
                let duration = cursor.integer()?;
                cursor.eat(b']')?;
                pairs.push((offset, duration));
                cursor.space();
                match cursor.peek()? {
                    b',' => cursor.at += 1,
                    b']' => {
                        cursor.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        cursor.space();
        (cursor.at == cursor.bytes.len()).then_some(())
    };
    match list() {
        Some(()) => Intervals::Pairs,
        None => Intervals::Other,
    }
}

/// Whether a line may be read by the view path at all: UTF-8 (checked once
/// for all its strings) with no control byte anywhere (JSON allows none
/// inside a string, and tabs between tokens are rare enough to leave).
#[inline]
pub(crate) fn plain_text(line: &[u8]) -> Option<&str> {
    // Branch-free over blocks of a fixed size, so the check vectorizes
    // (about 1.5x the speed of blocks of any size).
    let mut blocks = line.chunks_exact(32);
    for block in &mut blocks {
        if block.iter().fold(0u8, |bad, &byte| bad | u8::from(byte < 0x20)) != 0 {
            return None;
        }
    }
    if blocks.remainder().iter().any(|&byte| byte < 0x20) {
        return None;
    }
    // SIMD validation: about 1.7x std's on these lines.
    simdutf8::basic::from_utf8(line).ok()
}

/// A value read in the one spelling writers use: no space around it.
pub(crate) trait Tight<'l>: Sized {
    fn tight(cursor: &mut Cursor<'l>) -> Option<Self>;
}

impl<'l> Tight<'l> for Field<u64> {
    #[inline(always)]
    fn tight(cursor: &mut Cursor<'l>) -> Option<Self> {
        if cursor.tight_null() {
            return Some(Field::Null);
        }
        // A fraction or exponent next fails the separator the template
        // expects.
        cursor.tight_integer().map(Field::Present)
    }
}

impl<'l> Tight<'l> for Field<&'l str> {
    #[inline(always)]
    fn tight(cursor: &mut Cursor<'l>) -> Option<Self> {
        if cursor.tight_null() {
            return Some(Field::Null);
        }
        // An empty string breaks every string rule of the model.
        cursor.tight_string().filter(|text| !text.is_empty()).map(Field::Present)
    }
}

impl<'l> Tight<'l> for Field<RefView<'l>> {
    #[inline(always)]
    fn tight(cursor: &mut Cursor<'l>) -> Option<Self> {
        if cursor.tight_null() {
            return Some(Field::Null);
        }
        cursor.sorted_ref().map(Field::Present)
    }
}

impl<'l> Cursor<'l> {
    /// `literal` next, with nothing between.
    #[inline(always)]
    pub(crate) fn expect(&mut self, literal: &[u8]) -> Option<()> {
        if !starts_with(&self.bytes[self.at..], literal) {
            return None;
        }
        self.at += literal.len();
        Some(())
    }

    /// `null` right at the cursor (true), or not (false, cursor unmoved).
    #[inline(always)]
    fn tight_null(&mut self) -> bool {
        let found = self.bytes.get(self.at..self.at + 4) == Some(b"null");
        if found {
            self.at += 4;
        }
        found
    }

    /// A string without escapes right at the cursor.
    #[inline(always)]
    pub(crate) fn tight_string(&mut self) -> Option<&'l str> {
        if self.bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        let start = self.at + 1;
        let length = quote_or_backslash(&self.bytes[start..])?;
        if self.bytes[start + length] != b'"' {
            return None;
        }
        self.at = start + length + 1;
        // Both ends are ASCII quotes, so char boundaries.
        self.text.get(start..start + length)
    }
}

/// How the tokens of a value are spaced: [`AnySpacing`] as JSON allows
/// (blanks between tokens), [`WriterSpacing`] as stormlog's writer spaces
/// them (`", "` between elements, nothing else); one reader,
/// [`Cursor::value`], hashes either the same way.
trait Spacing {
    /// Nesting past this is refused (the exact path decides).
    const MAX_DEPTH: usize;
    /// Moves past the blanks the spacing allows before a token.
    fn blank(cursor: &mut Cursor<'_>);
    /// A string without escapes.
    fn string<'l>(cursor: &mut Cursor<'l>) -> Option<&'l str>;
    /// An object of values, hashed; `depth` is its own.
    fn object(cursor: &mut Cursor<'_>, hasher: &mut ContentHasher, depth: usize) -> Option<()>;
    /// Past the `,` at the cursor and what follows it before the next
    /// element.
    fn comma(cursor: &mut Cursor<'_>) -> Option<()>;
    /// `true`, `false` or `null`.
    fn literal(cursor: &mut Cursor<'_>, word: &[u8]) -> Option<()>;
    /// A non-negative integer within 64 bits.
    fn integer(cursor: &mut Cursor<'_>) -> Option<u64>;
}

/// Any JSON spacing: the member loop's.
struct AnySpacing;

impl Spacing for AnySpacing {
    const MAX_DEPTH: usize = MAX_DEPTH;

    #[inline]
    fn blank(cursor: &mut Cursor<'_>) {
        cursor.space();
    }

    #[inline]
    fn string<'l>(cursor: &mut Cursor<'l>) -> Option<&'l str> {
        cursor.string()
    }

    fn object(cursor: &mut Cursor<'_>, hasher: &mut ContentHasher, depth: usize) -> Option<()> {
        cursor.hashed_object(hasher, depth, |_, _, _| Some(())).map(drop)
    }

    #[inline]
    fn comma(cursor: &mut Cursor<'_>) -> Option<()> {
        cursor.at += 1;
        Some(())
    }

    #[inline]
    fn literal(cursor: &mut Cursor<'_>, word: &[u8]) -> Option<()> {
        cursor.literal(word)
    }

    #[inline]
    fn integer(cursor: &mut Cursor<'_>) -> Option<u64> {
        cursor.integer()
    }
}

/// The spacing of stormlog's writer: the canonical readers'.
struct WriterSpacing;

impl Spacing for WriterSpacing {
    const MAX_DEPTH: usize = TIGHT_DEPTH;

    #[inline(always)]
    fn blank(_: &mut Cursor<'_>) {}

    #[inline(always)]
    fn string<'l>(cursor: &mut Cursor<'l>) -> Option<&'l str> {
        cursor.tight_string()
    }

    fn object(cursor: &mut Cursor<'_>, hasher: &mut ContentHasher, depth: usize) -> Option<()> {
        cursor.tight_object(hasher, depth, |cursor, hasher, _| cursor.value::<Self>(hasher, depth))
    }

    #[inline(always)]
    fn comma(cursor: &mut Cursor<'_>) -> Option<()> {
        cursor.expect(b", ")
    }

    #[inline(always)]
    fn literal(cursor: &mut Cursor<'_>, word: &[u8]) -> Option<()> {
        cursor.expect(word)
    }

    #[inline(always)]
    fn integer(cursor: &mut Cursor<'_>) -> Option<u64> {
        cursor.tight_integer()
    }
}

impl Cursor<'_> {
    /// Any JSON value Python's `==` compares, spaced as `S` allows, hashed
    /// as it is read.
    fn value<S: Spacing>(&mut self, hasher: &mut ContentHasher, depth: usize) -> Option<()> {
        S::blank(self);
        match self.peek()? {
            b'"' => hasher.json_string(S::string(self)?),
            b'{' => S::object(self, hasher, depth + 1)?,
            b'[' => {
                if depth >= S::MAX_DEPTH {
                    return None;
                }
                self.at += 1;
                hasher.json_array_start();
                S::blank(self);
                let mut count = 0;
                if self.peek()? == b']' {
                    self.at += 1;
                } else {
                    loop {
                        self.value::<S>(hasher, depth + 1)?;
                        count += 1;
                        S::blank(self);
                        match self.peek()? {
                            b',' => S::comma(self)?,
                            b']' => {
                                self.at += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
                hasher.json_array_end(count);
            }
            b't' => {
                S::literal(self, b"true")?;
                hasher.json_integer(1);
            }
            b'f' => {
                S::literal(self, b"false")?;
                hasher.json_integer(0);
            }
            b'n' => {
                S::literal(self, b"null")?;
                hasher.json_null();
            }
            _ => hasher.json_integer(i128::from(S::integer(self)?)),
        }
        Some(())
    }
}

/// Nesting past this depth in metadata is left to [`Cursor::metadata`].
const TIGHT_DEPTH: usize = 16;

impl<'l> Cursor<'l> {
    /// The metadata object in the spelling of stormlog's writer (keys
    /// ascending, `", "` and `": "` between tokens, no other space), read
    /// and hashed as [`Cursor::metadata`] reads it; `None` for any other
    /// spelling, which that reads.
    pub(crate) fn tight_metadata(&mut self, pairs: &mut Vec<(u64, u64)>) -> Option<Meta<'l>> {
        let mut hasher = ContentHasher::default();
        let mut meta = Meta::default();
        self.tight_object(&mut hasher, 1, |cursor, hasher, key| {
            match key {
                "name" | "first_name" => {
                    let name = if cursor.bytes.get(cursor.at) == Some(&b'"') {
                        let text = cursor.tight_string()?;
                        hasher.json_string(text);
                        Some(text)
                    } else {
                        cursor.value::<WriterSpacing>(hasher, 1)?;
                        None
                    };
                    if key == "name" {
                        meta.name = name;
                    } else {
                        meta.first_name = name;
                    }
                }
                "intervals" => meta.intervals = cursor.tight_intervals(hasher, pairs)?,
                _ => cursor.value::<WriterSpacing>(hasher, 1)?,
            }
            Some(())
        })?;
        meta.hash = hasher.finish128();
        Some(meta)
    }

    /// An object in the writer's spelling, hashed as
    /// [`Cursor::hashed_object`] hashes it; `member` reads each value.
    #[inline]
    fn tight_object(
        &mut self,
        hasher: &mut ContentHasher,
        depth: usize,
        mut member: impl FnMut(&mut Self, &mut ContentHasher, &'l str) -> Option<()>,
    ) -> Option<()> {
        if depth >= TIGHT_DEPTH || self.bytes.get(self.at) != Some(&b'{') {
            return None;
        }
        self.at += 1;
        hasher.json_object_start();
        let mut count = 0;
        if self.bytes.get(self.at) == Some(&b'}') {
            self.at += 1;
        } else {
            let mut previous: Option<&str> = None;
            loop {
                let key = self.tight_string()?;
                // Strictly ascending, as the member loop's object requires.
                if previous.is_some_and(|previous| previous >= key) {
                    return None;
                }
                previous = Some(key);
                self.expect(b": ")?;
                hasher.json_key(key);
                member(self, hasher, key)?;
                count += 1;
                match self.bytes.get(self.at)? {
                    b',' => self.expect(b", ")?,
                    b'}' => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        hasher.json_object_end(count);
        Some(())
    }

    /// A non-negative integer right at the cursor, without leading zeros;
    /// a fraction or exponent after it fails the separator that follows.
    #[inline(always)]
    fn tight_integer(&mut self) -> Option<u64> {
        let (value, digits) = leading_json_integer(self.bytes.get(self.at..)?)?;
        self.at += digits;
        Some(value)
    }

    /// `metadata.intervals` in the writer's spelling: `null`, or a list of
    /// `[offset, duration]` pairs of integers, read into `pairs` and hashed
    /// as [`Cursor::value`] hashes them; `None` for anything else
    /// (an invalid activity, which [`Cursor::metadata`] reads as
    /// [`Intervals::Other`]).
    fn tight_intervals(
        &mut self,
        hasher: &mut ContentHasher,
        pairs: &mut Vec<(u64, u64)>,
    ) -> Option<Intervals> {
        if self.tight_null() {
            hasher.json_null();
            return Some(Intervals::Null);
        }
        self.expect(b"[")?;
        pairs.clear();
        hasher.json_array_start();
        if self.bytes.get(self.at) == Some(&b']') {
            self.at += 1;
        } else {
            loop {
                self.expect(b"[")?;
                let offset = self.tight_integer()?;
                self.expect(b", ")?;
                let duration = self.tight_integer()?;
                self.expect(b"]")?;
                hasher.json_array_start();
                hasher.json_integer(i128::from(offset));
                hasher.json_integer(i128::from(duration));
                hasher.json_array_end(2);
                pairs.push((offset, duration));
                match self.bytes.get(self.at)? {
                    b',' => self.expect(b", ")?,
                    b']' => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        hasher.json_array_end(pairs.len());
        Some(Intervals::Pairs)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn quote_or_backslash_finds_the_first(text in prop::collection::vec(
            prop::sample::select(vec![b'a', b'"', b'\\', 0x80, 0xff, 0x22 ^ 0x80, 0x5c ^ 0x01, 0x21, 0x23]), 0..40)
        ) {
            let naive = text.iter().position(|&byte| byte == b'"' || byte == b'\\');
            prop_assert_eq!(super::quote_or_backslash(&text), naive);
        }

        /// The word-at-a-time prefix test is the library's, for prefixes
        /// that match, that differ at any one byte, and that run past the
        /// text.
        #[test]
        fn starts_with_is_the_library_test(
            text in prop::collection::vec(any::<u8>(), 0..48),
            length in 0usize..56,
            flip in prop::option::of((0usize..56, 1u8..=255)),
        ) {
            let mut prefix: Vec<u8> = text.iter().copied().chain(std::iter::repeat(b'x')).take(length).collect();
            if let Some((at, bits)) = flip && at < prefix.len() {
                prefix[at] ^= bits;
            }
            prop_assert_eq!(super::starts_with(&text, &prefix), text.starts_with(&prefix));
        }
    }
}
