//! Chunked storage: the vector that grows by whole chunks and never moves
//! what it holds, for the rows that grow with the input.

/// A vector that grows by whole chunks and never moves what it holds: a
/// growing `Vec` holds its old and new buffers at once, and some allocators
/// keep the old one resident a while, so the rows that grow with the input
/// are kept here.
#[derive(Debug)]
pub(super) struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

/// Elements per chunk: 512 KiB or more for any row type. With chunks of
/// 64 KiB (4096 keys) the allocator placed them in pages it shares with the
/// readers' transient buffers of that size, and the freed buffers could not
/// be returned between live chunks: 21 MB more peak RSS for `tally
/// breakdown` of the 501 MB trace (149 -> 170 MB when the labels shrank to
/// 16 bytes, 145 MB with these chunks).
const CHUNK: usize = 1 << 15;

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Self { chunks: Vec::new(), len: 0 }
    }
}

impl<T> Chunked<T> {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn push(&mut self, value: T) {
        if self.len.is_multiple_of(CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        // A chunk was pushed just above when the last one was full.
        if let Some(chunk) = self.chunks.last_mut() {
            chunk.push(value);
        }
        self.len += 1;
    }

    pub(super) fn get(&self, index: usize) -> &T {
        &self.chunks[index / CHUNK][index % CHUNK]
    }

    pub(super) fn get_mut(&mut self, index: usize) -> &mut T {
        &mut self.chunks[index / CHUNK][index % CHUNK]
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.chunks.iter().flatten()
    }
}
