//! The fast path of the event reader: one trace event read straight from
//! the buffered bytes, without serde.
//!
//! Real traces are mostly CPU-op, runtime and flow events of a few hundred
//! bytes, and serde's generic machinery (a deserializer per event, a
//! visitor per value, UTF-8 checks of every key) cost more than the rest of
//! the import together. This scanner reads the common shape of an event in
//! one pass. It is an accelerator, not a second parser: whenever it meets
//! anything it does not handle exactly as serde_json does (an escape in a
//! string it keeps, a float where an integer is read, a repeated `args`
//! key, invalid JSON, an event cut by the end of the buffer) it gives up and
//! the serde path reads the event, so errors, their offsets and every odd
//! case stay what they were. What it accepts, serde accepts with the same
//! result; `tests::agrees_with_serde` checks that on generated events.

use std::borrow::Cow;

use tally_utils::byte_search::{below, equal_to, first_flagged};
use tally_utils::decimal::{digit_run, leading_json_integer};

use super::{Args, Id, RawEvent, Text};

/// Nesting beyond this is left to serde (which has its own limit).
const MAX_DEPTH: u32 = 96;

/// Reads the event object at the start of `bytes`: the event and the bytes
/// it took, or `None` to have serde read it.
///
/// The event's bytes are checked as UTF-8 once, whole: serde checks each
/// key and each string it keeps, and an event that is all valid passes both.
/// An event with invalid UTF-8 anywhere (even where serde would not look) is
/// serde's.
pub(super) fn scan_event<'a>(bytes: &'a [u8], layout: &mut Layout) -> Option<(RawEvent<'a>, usize)> {
    let mut scanner = Scanner { bytes, at: 0 };
    let found = scanner.event(layout)?;
    let used = scanner.at;
    let text = simdutf8::basic::from_utf8(&bytes[..used]).ok()?;
    // Every range ends at an ASCII quote or delimiter and starts after one,
    // so slicing the checked text cannot split a character.
    let piece = |(start, end): (usize, usize)| text.get(start..end);
    let id = |id: Option<FoundId>| -> Option<Option<Id<'_>>> {
        Some(match id {
            None => None,
            Some(FoundId::Number(number)) => Some(Id::Number(number)),
            Some(FoundId::Text(range)) => Some(Id::Text(Text(Cow::Borrowed(piece(range)?)))),
        })
    };
    let text_of = |range: Option<(usize, usize)>| -> Option<Option<Text<'_>>> {
        Some(match range {
            None => None,
            Some(range) => Some(Text(Cow::Borrowed(piece(range)?))),
        })
    };
    let raw = |range: Option<(usize, usize)>| -> Option<Option<&str>> {
        Some(match range {
            None => None,
            Some(range) => Some(piece(range)?),
        })
    };
    let event = RawEvent {
        ph: text_of(found.ph)?,
        cat: text_of(found.cat)?,
        name: text_of(found.name)?,
        pid: id(found.pid)?,
        tid: id(found.tid)?,
        ts: raw(found.ts)?,
        dur: raw(found.dur)?,
        args: found.args,
    };
    Some((event, used))
}

/// A `pid` or `tid` as found: a number, or where its text is.
#[derive(Clone, Copy)]
enum FoundId {
    Number(u64),
    Text((usize, usize)),
}

/// Where the kept values of an event are in its bytes.
#[derive(Default)]
struct Found {
    ph: Option<(usize, usize)>,
    cat: Option<(usize, usize)>,
    name: Option<(usize, usize)>,
    pid: Option<FoundId>,
    tid: Option<FoundId>,
    ts: Option<(usize, usize)>,
    dur: Option<(usize, usize)>,
    args: Option<Args>,
}

/// Bytes that end the plain run of a string: a quote, a backslash, or a
/// control character (invalid there).
const SPECIAL: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = byte < 0x20 || byte == b'"' as usize || byte == b'\\' as usize;
        byte += 1;
    }
    table
};

/// The separators met in the events read so far: the bytes from the end of
/// one member's value (or the object's `{`) to the start of the next one's
/// (`, "cat": `), with the key they name, by the member's position.
///
/// A trace writes its events in a few shapes with the same keys, order and
/// spacing, so the bytes after a value are nearly always a separator seen
/// there before; one comparison of them then stands for the whitespace, the
/// comma, the key, its quotes and the colon. That is exact: those bytes are
/// read from the same state (after a value, inside the object) every time,
/// and the same bytes read from the same state read the same way. A miss
/// reads the member as before and remembers its separator.
#[derive(Default)]
pub(super) struct Layout {
    event: Guesses<Field>,
    args: Guesses<ArgField>,
}

/// A member of an event that the import keeps.
#[derive(Clone, Copy, Default)]
enum Field {
    Ph,
    Cat,
    Name,
    Pid,
    Tid,
    Ts,
    Dur,
    Args,
    #[default]
    Other,
}

impl Field {
    fn of(key: &[u8]) -> Self {
        match key {
            b"ph" => Self::Ph,
            b"cat" => Self::Cat,
            b"name" => Self::Name,
            b"pid" => Self::Pid,
            b"tid" => Self::Tid,
            b"ts" => Self::Ts,
            b"dur" => Self::Dur,
            b"args" => Self::Args,
            _ => Self::Other,
        }
    }
}

/// A member of `args` that the import reads.
#[derive(Clone, Copy, Default)]
enum ArgField {
    Device,
    Stream,
    Correlation,
    GraphId,
    #[default]
    Other,
}

impl ArgField {
    fn of(key: &[u8]) -> Self {
        match key {
            b"device" => Self::Device,
            b"stream" => Self::Stream,
            b"correlation" => Self::Correlation,
            b"graph id" => Self::GraphId,
            _ => Self::Other,
        }
    }
}

/// Separators longer than this are read every time.
const GUESSED_BYTES: usize = 32;
/// Members past this position are read every time (the memory stays small
/// whatever the events hold).
const GUESSED_MEMBERS: usize = 48;
/// Separators remembered per position: real traces interleave three or four
/// shapes of event (operators, flow starts and ends, instants).
const WAYS: usize = 4;

/// The separators remembered for each member position.
struct Guesses<K> {
    slots: Vec<([Guess<K>; WAYS], usize)>,
}

impl<K> Default for Guesses<K> {
    fn default() -> Self {
        Self { slots: Vec::new() }
    }
}

/// One remembered separator: its bytes as two little-endian words, a mask
/// of its length, and the key it names. A zero `length` is an empty way (a
/// separator holds at least a key's two quotes and a colon).
#[derive(Clone, Copy, Default)]
struct Guess<K> {
    text: [u128; 2],
    mask: [u128; 2],
    length: usize,
    key: K,
}

impl<K: Copy + Default> Guesses<K> {
    /// The key of the separator at the start of `bytes`, if one remembered
    /// for `member` is there, and its length.
    fn find(&self, member: usize, bytes: &[u8]) -> Option<(K, usize)> {
        let (ways, _) = self.slots.get(member)?;
        let words = bytes.get(..GUESSED_BYTES)?;
        let (low, high) = words.split_at(16);
        let low = u128::from_le_bytes(low.try_into().ok()?);
        let high = u128::from_le_bytes(high.try_into().ok()?);
        ways.iter()
            .find(|guess| {
                guess.length != 0
                    && (low ^ guess.text[0]) & guess.mask[0] == 0
                    && (high ^ guess.text[1]) & guess.mask[1] == 0
            })
            .map(|guess| (guess.key, guess.length))
    }

    /// Remembers `separator` for `member`, in place of the oldest one there.
    fn remember(&mut self, member: usize, separator: &[u8], key: K) {
        if member >= GUESSED_MEMBERS || separator.is_empty() || separator.len() > GUESSED_BYTES {
            return;
        }
        if self.slots.len() <= member {
            self.slots.resize_with(member + 1, || ([Guess::default(); WAYS], 0));
        }
        let mut padded = [0u8; GUESSED_BYTES];
        padded[..separator.len()].copy_from_slice(separator);
        let mut mask = [0u8; GUESSED_BYTES];
        mask[..separator.len()].fill(0xff);
        let word = |bytes: &[u8; GUESSED_BYTES], half: usize| {
            let mut word = [0u8; 16];
            word.copy_from_slice(&bytes[half * 16..half * 16 + 16]);
            u128::from_le_bytes(word)
        };
        let (ways, oldest) = &mut self.slots[member];
        ways[*oldest] = Guess {
            text: [word(&padded, 0), word(&padded, 1)],
            mask: [word(&mask, 0), word(&mask, 1)],
            length: separator.len(),
            key,
        };
        *oldest = (*oldest + 1) % WAYS;
    }
}

/// JSON whitespace.
fn is_blank(byte: u8) -> bool {
    matches!(byte, b' ' | b'\n' | b'\r' | b'\t')
}

struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// The next byte that is not JSON whitespace, consumed.
    fn next_token(&mut self) -> Option<u8> {
        let byte = *self.bytes.get(self.at)?;
        self.at += 1;
        if !is_blank(byte) {
            return Some(byte);
        }
        self.next_token_after_space()
    }

    /// [`Scanner::next_token`] past the first whitespace byte: pretty-printed
    /// traces indent every line.
    #[inline(never)]
    fn next_token_after_space(&mut self) -> Option<u8> {
        let rest = &self.bytes[self.at.min(self.bytes.len())..];
        let skip = rest.iter().position(|&byte| !is_blank(byte))?;
        self.at += skip + 1;
        Some(rest[skip])
    }

    /// Consumes whitespace, then `expected`.
    fn expect(&mut self, expected: u8) -> Option<()> {
        (self.next_token()? == expected).then_some(())
    }

    /// Skips a string after its opening quote (consumed), through the
    /// closing one; returns where its bytes are and whether it had escapes
    /// (then the bytes are escaped text, checked but not decoded). UTF-8 is
    /// checked once for the whole event, in [`scan_event`].
    fn string(&mut self) -> Option<(usize, usize, bool)> {
        let start = self.at;
        let mut escaped = false;
        loop {
            self.skip_plain();
            let byte = *self.bytes.get(self.at)?;
            self.at += 1;
            match byte {
                b'"' => return Some((start, self.at - 1, escaped)),
                b'\\' => {
                    escaped = true;
                    self.escape()?;
                }
                // A control character: serde's error to report.
                _ => return None,
            }
        }
    }

    /// Moves to the next quote, backslash or control character, eight bytes
    /// at a time (as serde_json's `skip_to_escape` does), bytewise over the
    /// last few of the buffer. Keys, which are mostly short, are seldom
    /// read here: the remembered separators hold them.
    fn skip_plain(&mut self) {
        let rest = self.bytes.get(self.at..).unwrap_or_default();
        let special = |word| below(word, 0x20) | equal_to(word, b'"') | equal_to(word, b'\\');
        self.at += first_flagged(rest, special, |byte| SPECIAL[usize::from(byte)]);
    }

    /// One escape after its backslash, as serde_json's `ignore_escape`
    /// accepts it.
    fn escape(&mut self) -> Option<()> {
        let byte = *self.bytes.get(self.at)?;
        self.at += 1;
        match byte {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(()),
            b'u' => {
                let digits = self.bytes.get(self.at..self.at + 4)?;
                self.at += 4;
                digits.iter().all(u8::is_ascii_hexdigit).then_some(())
            }
            _ => None,
        }
    }

    /// A string serde would deserialize as a borrowed `str` (a key, a kept
    /// value): where it is. Escaped strings are serde's.
    fn text(&mut self) -> Option<(usize, usize)> {
        let (start, end, escaped) = self.string()?;
        (!escaped).then_some((start, end))
    }

    /// A key: its bytes, unescaped.
    fn key(&mut self) -> Option<&'a [u8]> {
        let (start, end) = self.text()?;
        Some(&self.bytes[start..end])
    }

    /// A JSON number's text, its first byte already consumed; whether it is
    /// an integer (no fraction or exponent). The grammar is JSON's, which
    /// serde_json enforces; anything else is left to serde.
    #[inline(always)]
    fn number(&mut self, first: u8) -> Option<((usize, usize), bool)> {
        let start = self.at - 1;
        let lead = if first == b'-' {
            let byte = self.peek()?;
            self.at += 1;
            byte
        } else {
            first
        };
        match lead {
            b'0' => {
                if self.peek().is_some_and(|byte| byte.is_ascii_digit()) {
                    return None;
                }
            }
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        let mut integer = true;
        if self.peek() == Some(b'.') {
            self.at += 1;
            integer = false;
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            integer = false;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        // A number must be followed by something in the buffer: at its end
        // it may go on in the next read.
        self.peek()?;
        Some(((start, self.at), integer))
    }

    /// Moves past a run of decimal digits.
    #[inline(always)]
    fn digits(&mut self) {
        self.at += digit_run(self.bytes.get(self.at..).unwrap_or_default());
    }

    /// `true`, `false` or `null`, its first byte consumed.
    fn literal(&mut self, first: u8) -> Option<()> {
        let rest: &[u8] = match first {
            b't' => b"rue",
            b'f' => b"alse",
            b'n' => b"ull",
            _ => return None,
        };
        let found = self.bytes.get(self.at..self.at + rest.len())?;
        self.at += rest.len();
        (found == rest).then_some(())
    }

    /// Skips one value, checking it as serde_json's `IgnoredAny` does.
    fn skip_value(&mut self, depth: u32) -> Option<()> {
        let first = self.next_token()?;
        self.skip_after(first, depth)
    }

    fn skip_after(&mut self, first: u8, depth: u32) -> Option<()> {
        match first {
            b'"' => self.string().map(drop),
            b'{' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                let mut token = self.next_token()?;
                if token == b'}' {
                    return Some(());
                }
                loop {
                    if token != b'"' {
                        return None;
                    }
                    self.string()?;
                    self.expect(b':')?;
                    self.skip_value(depth + 1)?;
                    match self.next_token()? {
                        b',' => token = self.next_token()?,
                        b'}' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b'[' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                let mut token = self.next_token()?;
                if token == b']' {
                    return Some(());
                }
                loop {
                    self.skip_after(token, depth + 1)?;
                    match self.next_token()? {
                        b',' => token = self.next_token()?,
                        b']' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b'-' | b'0'..=b'9' => self.number(first).map(drop),
            _ => self.literal(first),
        }
    }

    /// A string value kept as [`Text`]; anything else is serde's to judge
    /// (a mismatch, an escape).
    fn text_value(&mut self) -> Option<(usize, usize)> {
        (self.next_token()? == b'"').then_some(())?;
        self.text()
    }

    /// A `pid` or `tid`: a non-negative integer within `u64` or a string.
    fn id_value(&mut self) -> Option<FoundId> {
        match self.next_token()? {
            b'"' => Some(FoundId::Text(self.text()?)),
            b'0'..=b'9' => Some(FoundId::Number(self.unsigned()?)),
            _ => None,
        }
    }

    /// A non-negative integer, its first digit consumed, read and
    /// valued in one pass (reading its grammar, then its digits again, was
    /// ~220 instructions an ID); a leading zero, a value past `u64`, a
    /// fraction, an exponent and a number the buffer ends in are serde's.
    #[inline(always)]
    fn unsigned(&mut self) -> Option<u64> {
        let start = self.at - 1;
        let (value, digits) = leading_json_integer(&self.bytes[start..])?;
        self.at = start + digits;
        match self.peek()? {
            b'.' | b'e' | b'E' => None,
            _ => Some(value),
        }
    }

    /// `ts` or `dur`: where a number's text is, as serde's `RawValue` would
    /// give it.
    fn raw_number(&mut self) -> Option<(usize, usize)> {
        let first = self.next_token()?;
        if !matches!(first, b'-' | b'0'..=b'9') {
            return None;
        }
        Some(self.number(first)?.0)
    }

    /// An `args` field read as `lenient` reads it, for the values that are
    /// read the same way whatever the reader: integers and `null`.
    fn lenient_value(&mut self) -> Option<Option<u64>> {
        match self.next_token()? {
            b'0'..=b'9' => Some(Some(self.unsigned()?)),
            b'-' => {
                if !self.peek()?.is_ascii_digit() {
                    return None;
                }
                self.at += 1;
                let magnitude = self.unsigned()?;
                // A negative integer within i64 is no ID; -0, and one beyond
                // i64 (a float to serde), are serde's.
                (1..=i64::MAX as u64).contains(&magnitude).then_some(None)
            }
            b'n' => self.literal(b'n').map(|()| None),
            _ => None,
        }
    }

    /// The `args` object: the four fields the import reads, every other
    /// value skipped. A repeated field is an error to serde's derive, so it
    /// is serde's.
    fn args(&mut self, layout: &mut Layout) -> Option<Args> {
        (self.next_token()? == b'{').then_some(())?;
        let mut args = Args::default();
        let mut seen = 0u8;
        for member in 0.. {
            let Some(field) = self.member(&mut layout.args, member, ArgField::of)? else { break };
            let (slot, bit) = match field {
                ArgField::Device => (&mut args.device, 1),
                ArgField::Stream => (&mut args.stream, 2),
                ArgField::Correlation => (&mut args.correlation, 4),
                ArgField::GraphId => (&mut args.graph_id, 8),
                ArgField::Other => {
                    self.skip_value(2)?;
                    continue;
                }
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            *slot = self.lenient_value()?;
        }
        Some(args)
    }

    /// One event object; a repeated key keeps its last value, as the serde
    /// path does.
    fn event(&mut self, layout: &mut Layout) -> Option<Found> {
        (self.next_token()? == b'{').then_some(())?;
        let mut event = Found::default();
        for member in 0.. {
            let Some(field) = self.member(&mut layout.event, member, Field::of)? else { break };
            match field {
                Field::Ph => event.ph = Some(self.text_value()?),
                Field::Cat => event.cat = Some(self.text_value()?),
                Field::Name => event.name = Some(self.text_value()?),
                Field::Pid => event.pid = Some(self.id_value()?),
                Field::Tid => event.tid = Some(self.id_value()?),
                Field::Ts => event.ts = Some(self.raw_number()?),
                Field::Dur => event.dur = Some(self.raw_number()?),
                Field::Args => event.args = Some(self.args(layout)?),
                Field::Other => self.skip_value(1)?,
            }
        }
        Some(event)
    }

    /// Reads up to the value of an object's member at position `member`
    /// (after its `{`, or after the previous member's value): the member's
    /// key, or `None` where the object ends instead (its `}` consumed). The
    /// separator is a remembered one where it can be, and is remembered
    /// otherwise.
    fn member<K: Copy + Default>(
        &mut self,
        guesses: &mut Guesses<K>,
        member: usize,
        of: fn(&[u8]) -> K,
    ) -> Option<Option<K>> {
        let rest = self.bytes.get(self.at..).unwrap_or_default();
        if let Some((key, length)) = guesses.find(member, rest) {
            self.at += length;
            return Some(Some(key));
        }
        let start = self.at;
        let mut token = self.next_token()?;
        if token == b'}' {
            return Some(None);
        }
        if member > 0 {
            (token == b',').then_some(())?;
            token = self.next_token()?;
        }
        (token == b'"').then_some(())?;
        let key = of(self.key()?);
        self.expect(b':')?;
        // The space after the colon belongs to the separator too.
        if let Some(skip) = self.bytes.get(self.at..)
            && let Some(spaces) = skip.iter().position(|&byte| !is_blank(byte))
        {
            self.at += spaces;
        }
        guesses.remember(member, &self.bytes[start..self.at], key);
        Some(Some(key))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails by panicking")]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::json_stream::{Parsed, parse_one};

    /// Everything an event reading keeps, comparable.
    fn shown(event: &RawEvent<'_>) -> String {
        let text = |text: &Option<Text<'_>>| text.as_ref().map(|text| text.as_str().to_owned());
        let id = |id: &Option<Id<'_>>| match id {
            Some(Id::Number(number)) => format!("n{number}"),
            Some(Id::Text(text)) => format!("t{}", text.as_str()),
            None => "-".to_owned(),
        };
        let args = event.args.map(|args| (args.device, args.stream, args.correlation, args.graph_id));
        format!(
            "{:?} {:?} {:?} {} {} {:?} {:?} {:?}",
            text(&event.ph),
            text(&event.cat),
            text(&event.name),
            id(&event.pid),
            id(&event.tid),
            event.ts,
            event.dur,
            args
        )
    }

    const KEYS: &[&str] =
        &["ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id", "bp", "p\\u0068", "n\u{e9}", "s"];

    const VALUES: &[&str] = &[
        "\"X\"",
        "\"f\"",
        "\"kernel\"",
        "\"cpu_op\"",
        "\"cuda_runtime\"",
        "\"a\\\"b\"",
        "\"\\u00e9t\\u00e9\"",
        "\"n\u{e9}e\"",
        "\"x\\qy\"",
        "\"\\ud800\"",
        "\"tab\there\"",
        "\"ProfilerStep#3\"",
        "0",
        "7",
        "-1",
        "-0",
        "01",
        "1.",
        "1.5",
        "-2.25e3",
        "1e",
        "1E+2",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999",
        "1669783687464181",
        "4458676983543.183",
        "12345678.5",
        "123456789e-3",
        "null",
        "true",
        "false",
        "tru",
        "nul",
        "[]",
        "[1, 2,]",
        "[1, [2, {\"a\": [true]}]]",
        "{}",
        "{\"a\": 1,}",
        "{\"a\" 1}",
        "[1 2]",
        "{\"device\": 3, \"stream\": 7, \"correlation\": 12}",
        "{\"device\": 1, \"device\": 2}",
        "{\"stream\": -3, \"correlation\": \"12\", \"graph id\": null}",
        "{\"correlation\": 1.5}",
        "{\"External id\": 3073, \"Ev Idx\": 0, \"Input Dims\": [[1, 2], []]}",
        "{\"graph id\": 4, \"stream\": -0}",
        "{\"device\": 18446744073709551616}",
        "{\"d\\u0065vice\": 1}",
        "{\"device\": -9223372036854775809}",
        "{\"device\": [1]}",
        "{\"device\": {\"x\": 1}}",
    ];

    const SPACES: &[&str] = &["", " ", "\n    ", "\t", "\r\n"];

    fn event_text() -> impl Strategy<Value = String> {
        let member = (0..KEYS.len(), 0..VALUES.len(), 0..SPACES.len(), 0..SPACES.len());
        (proptest::collection::vec(member, 0..10), 0..SPACES.len()).prop_map(|(members, end)| {
            let body: Vec<String> = members
                .iter()
                .map(|&(key, value, before, after)| {
                    format!(
                        "{}\"{}\"{}:{}{}",
                        SPACES[before], KEYS[key], SPACES[after], SPACES[before], VALUES[value]
                    )
                })
                .collect();
            format!("{{{}{}}}", body.join(","), SPACES[end])
        })
    }

    /// The fast path's reading of `text`, or `None` where it leaves it.
    fn fast(text: &[u8]) -> Option<(String, usize)> {
        fast_after(text, &mut Layout::default())
    }

    /// The fast path's reading of `text` after other events (their
    /// separators remembered in `layout`).
    fn fast_after(text: &[u8], layout: &mut Layout) -> Option<(String, usize)> {
        scan_event(text, layout).map(|(event, used)| (shown(&event), used))
    }

    /// serde's reading, or `None` for a mismatch or an error.
    fn serde(text: &[u8]) -> Option<(String, usize)> {
        match parse_one::<RawEvent<'_>>(text) {
            Ok(Parsed::Value(event, used)) => Some((shown(&event), used)),
            _ => None,
        }
    }

    #[test]
    fn common_events_take_the_fast_path() {
        let text = br#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": "s", "ts": 1.5, "dur": 2, "args": {"device": 1, "stream": 7, "correlation": 9, "graph id": null, "grid": [1, 2]}}, "#;
        let (event, used) = fast(text).unwrap();
        assert_eq!(Some((event, used)), serde(text));
        assert_eq!(used, text.len() - 2);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// Whatever the fast path reads, serde reads the same; cut anywhere,
        /// an event is left to serde.
        #[test]
        fn agrees_with_serde(text in event_text(), trailing in 0..3usize, cut in 0usize..400) {
            let whole = format!("{text}{}", [", {", "]", " "][trailing]);
            if let Some(reading) = fast(whole.as_bytes()) {
                prop_assert_eq!(Some(reading), serde(whole.as_bytes()), "{}", whole);
            }
            let cut = cut.min(text.len().saturating_sub(1));
            prop_assert_eq!(fast(&text.as_bytes()[..cut]), None);
        }

        /// Events read one after another, each with the separators of the
        /// ones before it remembered, read as serde reads each alone; an
        /// event cut anywhere is still left to serde.
        #[test]
        fn remembered_separators_agree_with_serde(
            texts in proptest::collection::vec(event_text(), 1..12),
            repeats in proptest::collection::vec(0..12usize, 0..24),
            cut in 0usize..400,
        ) {
            let mut layout = Layout::default();
            // Shapes come back, as they do in traces: the texts, then some
            // of them again.
            let order = (0..texts.len()).chain(repeats.iter().map(|&repeat| repeat % texts.len()));
            for index in order {
                let whole = format!("{}, {{", texts[index]);
                let reading = fast_after(whole.as_bytes(), &mut layout);
                if reading.is_some() {
                    prop_assert_eq!(reading, serde(whole.as_bytes()), "{}", whole);
                }
                let text = texts[index].as_bytes();
                prop_assert_eq!(fast_after(&text[..cut.min(text.len().saturating_sub(1))], &mut layout), None);
            }
        }
    }
}
