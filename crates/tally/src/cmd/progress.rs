//! Progress on stderr for long reads: only when stderr is a terminal and the
//! input is large, so pipes, logs and tests see nothing.

use std::fs::File;
use std::io::{IsTerminal, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use indicatif::{ProgressBar, ProgressStyle};

/// Inputs smaller than this finish before a bar would be worth drawing.
const LARGE: u64 = 64 << 20;

/// A reader that counts the bytes read through it.
pub struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.count.fetch_add(read as u64, Ordering::Relaxed);
        Ok(read)
    }
}

/// A progress bar over the raw bytes of one input file.
pub struct Progress {
    bar: Option<ProgressBar>,
    count: Arc<AtomicU64>,
}

impl Progress {
    /// A bar for `path` when stderr is a terminal and the file is large;
    /// otherwise a silent one.
    pub fn for_file(path: &Path, file: &File) -> Self {
        Self::for_size(path, file.metadata().map(|metadata| metadata.len()).unwrap_or(0))
    }

    /// A bar for an input opened elsewhere: `path`'s size when it is a
    /// regular file (a pipe has none, and gets no bar).
    pub fn for_path(path: &Path) -> Self {
        let size = std::fs::metadata(path)
            .ok()
            .filter(std::fs::Metadata::is_file)
            .map_or(0, |metadata| metadata.len());
        Self::for_size(path, size)
    }

    fn for_size(path: &Path, size: u64) -> Self {
        let bar = (std::io::stderr().is_terminal() && size >= LARGE).then(|| {
            let bar = ProgressBar::new(size);
            if let Ok(style) =
                ProgressStyle::with_template("{msg} {bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
            {
                bar.set_style(style);
            }
            bar.set_message(path.display().to_string());
            bar
        });
        Self { bar, count: Arc::new(AtomicU64::new(0)) }
    }

    /// A silent one (standard input: size unknown).
    pub fn silent() -> Self {
        Self { bar: None, count: Arc::new(AtomicU64::new(0)) }
    }

    /// Wraps the reader whose bytes the bar follows.
    pub fn wrap<R: Read>(&self, inner: R) -> Counting<R> {
        Counting { inner, count: Arc::clone(&self.count) }
    }

    /// Redraws at the bytes read so far.
    pub fn tick(&self) {
        if let Some(bar) = &self.bar {
            bar.set_position(self.count.load(Ordering::Relaxed));
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
