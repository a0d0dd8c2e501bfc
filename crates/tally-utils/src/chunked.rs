//! Chunked storage: the vector that grows by whole chunks and never moves
//! what it holds, for the rows that grow with the input.

use std::ops::{Index, IndexMut};

/// The default chunk, in elements: 512 KiB or more for any row type. With
/// chunks of 64 KiB (4096 keys) the allocator placed them in pages it
/// shares with the readers' transient buffers of that size, and the freed
/// buffers could not be returned between live chunks: 21 MB more peak RSS
/// for `tally breakdown` of the 501 MB trace (149 -> 170 MB when the
/// streaming resolver's labels shrank to 16 bytes, 145 MB with these
/// chunks).
pub const DEFAULT_CHUNK: usize = 1 << 15;

/// A vector that grows by whole chunks of `CHUNK` elements and never moves
/// what it holds: a growing `Vec` copies its rows and holds its old and new
/// buffers at once (twice the rows at the peak, and some allocators keep
/// the old one resident a while); this one's peak is the rows and one
/// chunk.
///
/// ```
/// use tally_utils::chunked::Chunked;
/// let mut rows: Chunked<u64, 4> = Chunked::default();
/// for row in 0..10 {
///     rows.push(row);
/// }
/// rows[9] += 1;
/// assert_eq!((rows.len(), rows[3], rows[9]), (10, 3, 10));
/// assert_eq!(rows.iter().sum::<u64>(), 46);
/// ```
#[derive(Debug)]
pub struct Chunked<T, const CHUNK: usize = DEFAULT_CHUNK> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T, const CHUNK: usize> Default for Chunked<T, CHUNK> {
    fn default() -> Self {
        Self { chunks: Vec::new(), len: 0 }
    }
}

impl<T, const CHUNK: usize> Chunked<T, CHUNK> {
    /// Appends `value`, starting a chunk when the last one is full.
    #[inline]
    pub fn push(&mut self, value: T) {
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < CHUNK => chunk.push(value),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(value);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    /// How many elements there are.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.chunks.iter().flatten()
    }
}

impl<T, const CHUNK: usize> Index<usize> for Chunked<T, CHUNK> {
    type Output = T;

    #[inline]
    fn index(&self, index: usize) -> &T {
        &self.chunks[index / CHUNK][index % CHUNK]
    }
}

impl<T, const CHUNK: usize> IndexMut<usize> for Chunked<T, CHUNK> {
    #[inline]
    fn index_mut(&mut self, index: usize) -> &mut T {
        &mut self.chunks[index / CHUNK][index % CHUNK]
    }
}

/// The elements by value, each chunk freed as soon as it has been read.
impl<T, const CHUNK: usize> IntoIterator for Chunked<T, CHUNK> {
    type Item = T;
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Vec<T>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.chunks.into_iter().flatten()
    }
}
