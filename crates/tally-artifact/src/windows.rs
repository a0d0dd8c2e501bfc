//! Whole-line windows of a decompressed stream, the unit the parallel
//! reader ([`crate::read_mapped`]) deals out to its decoding threads, with
//! the record limit enforced on a line that does not fit.

use std::fmt;
use std::io::{self, Read};

use crate::lines::complete_prefix;

/// A line past the record limit, found by the reading thread (which knows
/// no line numbers); the decoding side names the line.
#[derive(Debug)]
pub(crate) struct LineTooLong;

impl fmt::Display for LineTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("line past the record limit")
    }
}

impl std::error::Error for LineTooLong {}

/// A buffer of whole lines. `buffer` stays initialized at its full length,
/// so a reused window is never zeroed again; `filled` bytes are text.
#[derive(Default)]
pub(crate) struct Window {
    pub(crate) buffer: Vec<u8>,
    pub(crate) filled: usize,
}

impl Window {
    pub(crate) fn text(&self) -> &[u8] {
        &self.buffer[..self.filled]
    }
}

/// How much of an input the calling thread reads before it decides how to
/// read the rest: an input that ends within these bytes (and within its
/// first window) is small, and decoded there; a larger one is read on by
/// the pipeline's reader thread, which grows this first buffer to a whole
/// window, so that a small input never has one zeroed. One chunk of the
/// ingest reader's windows: a small input gains nothing from the decoding
/// threads either.
const START_BYTES: usize = 64 << 10;

/// The producer: whole-line windows of a decompressed stream, the last
/// flagged. A line that does not fit grows the window geometrically (so one
/// huge line costs linear time, not one copy per window), up to the record
/// limit, past which it is an error: memory stays within about twice the
/// limit.
pub(crate) struct WindowSource<S> {
    stream: S,
    window_bytes: usize,
    max_record: usize,
    /// How many bytes the window being read is to hold.
    wanted: usize,
    /// The unfinished line after the last window's cut.
    carry: Vec<u8>,
    /// The first window, read in part by [`WindowSource::start`].
    started: Option<Window>,
    /// A read error met after whole lines, which went out first.
    failed: Option<io::Error>,
}

impl<S: Read> WindowSource<S> {
    pub(crate) fn new(stream: S, window_bytes: usize, max_record: usize) -> Self {
        Self { stream, window_bytes, max_record, wanted: 0, carry: Vec::new(), started: None, failed: None }
    }

    /// Reads the first [`START_BYTES`] of the input: the first window when
    /// the input ends (or fails) within them, `None` when there is more,
    /// which [`WindowSource::next_window`] goes on with.
    pub(crate) fn start(&mut self) -> Option<io::Result<(Window, bool)>> {
        let mut window = self.begin(Window::default(), START_BYTES);
        let room = window.buffer.len().min(self.wanted);
        match self.fill(&mut window, room) {
            Err(error) => Some(self.failure(window, error)),
            Ok(true) => Some(Ok((window, true))),
            Ok(false) => {
                self.started = Some(window);
                None
            }
        }
    }

    /// The next window, in `spare`'s buffer when there is one. Not to be
    /// called again after the last window or an error.
    pub(crate) fn next_window(&mut self, spare: Option<Window>) -> io::Result<(Window, bool)> {
        if let Some(error) = self.failed.take() {
            return Err(error);
        }
        let mut window = match self.started.take() {
            Some(mut window) => {
                self.reserve(&mut window, usize::MAX);
                window
            }
            None => self.begin(spare.unwrap_or_default(), usize::MAX),
        };
        loop {
            match self.fill(&mut window, self.wanted) {
                Err(error) => return self.failure(window, error),
                Ok(true) => return Ok((window, true)),
                Ok(false) => {}
            }
            match complete_prefix(window.text()) {
                Some(cut) => {
                    self.carry.extend_from_slice(&window.buffer[cut..window.filled]);
                    window.filled = cut;
                    return Ok((window, false));
                }
                // Not one complete line yet: read on into the same window,
                // grown in place, unless it is already past the limit. (A
                // copy through `carry` held the line twice: about twice
                // the limit for input with no line end, /dev/zero or a
                // gzip bomb.)
                None if window.filled > self.max_record => return Err(io::Error::other(LineTooLong)),
                None => {
                    self.wanted = self.wanted_after(window.filled);
                    self.grow(&mut window);
                }
            }
        }
    }

    /// Starts a window in `window`'s buffer, of at most `room` bytes for
    /// now: the carried text in front, and as much again to read.
    fn begin(&mut self, mut window: Window, room: usize) -> Window {
        let carried = self.carry.len();
        self.wanted = self.wanted_after(carried);
        self.reserve(&mut window, room.max(carried + 1));
        window.buffer[..carried].copy_from_slice(&self.carry);
        window.filled = carried;
        self.carry.clear();
        window
    }

    /// How many bytes a window with `carried` bytes of an unfinished line
    /// in front is to hold: as much again (at least a window) to read, and
    /// no more than the limit and a window.
    fn wanted_after(&self, carried: usize) -> usize {
        let growth = self.window_bytes.max(carried);
        (carried + growth).min(self.max_record.saturating_add(self.window_bytes)).max(carried + 1)
    }

    /// Grows a window that holds no line end yet to [`WindowSource::wanted`]
    /// bytes, its text kept. Once the line is a few windows long, the
    /// buffer is given room for the longest line the limit lets through at
    /// once: its pages are touched only as they are read into, and no
    /// later growth copies the line into a buffer twice its size (holding
    /// both for the copy), so a line cut at the limit takes about the
    /// limit, not one and a half times it.
    fn grow(&self, window: &mut Window) {
        if window.buffer.len() >= self.wanted {
            return;
        }
        let size = self.wanted + self.window_bytes / 4;
        let longest = self.max_record.saturating_add(self.window_bytes).saturating_add(self.window_bytes / 4);
        let capacity = if window.filled >= 4 * self.window_bytes { longest.max(size) } else { size };
        if window.buffer.capacity() < capacity {
            window.buffer.reserve_exact(capacity - window.buffer.len());
        }
        window.buffer.resize(size, 0);
    }

    /// Makes at least `room` bytes of the window usable, at most the
    /// window's size; a whole window gets headroom for the partial line
    /// carried in front next time, so a reused window is not grown (and its
    /// pages touched anew) again.
    fn reserve(&self, window: &mut Window, room: usize) {
        let size = if room >= self.wanted { self.wanted + self.window_bytes / 4 } else { room };
        if window.buffer.len() < room.min(self.wanted) {
            window.buffer.resize(size, 0);
        }
    }

    /// Reads until the window holds `upto` bytes: whether the stream ended.
    fn fill(&mut self, window: &mut Window, upto: usize) -> io::Result<bool> {
        while window.filled < upto {
            match self.stream.read(&mut window.buffer[window.filled..upto]) {
                Ok(0) => return Ok(true),
                Ok(count) => window.filled += count,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        Ok(false)
    }

    /// A failed read: the whole lines read before it come first, and the
    /// error after them. A bad line among them is then the first error in
    /// file order, as a sequential reader finds it (found by the
    /// artifact_whole fuzz target on a corrupt gzip).
    fn failure(&mut self, mut window: Window, error: io::Error) -> io::Result<(Window, bool)> {
        match complete_prefix(window.text()) {
            Some(cut) => {
                window.filled = cut;
                self.failed = Some(error);
                Ok((window, false))
            }
            None => Err(error),
        }
    }
}
