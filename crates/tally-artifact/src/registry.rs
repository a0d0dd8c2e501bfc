//! Shared contexts: interning identical contexts into one `Arc`, and the v4
//! registry of `context_id` definitions.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use tally_core::CorrelationContext;
use tally_utils::fast_hash::FastHashMap;

/// How many recently used contexts a decoder compares before hashing.
const RECENT: usize = 8;

/// Contexts seen so far, one `Arc` per distinct value. Cheap to clone: clones
/// share the pool, each keeps its own short list of recent contexts (so
/// parallel decoders rarely touch the lock).
#[derive(Debug, Default)]
pub(crate) struct Interner {
    recent: Vec<Arc<CorrelationContext>>,
    pool: Arc<Mutex<HashSet<Arc<CorrelationContext>>>>,
    /// The JSON text of the last few embedded contexts the fast path
    /// decoded, most recent first, with their values: a line carrying the
    /// same bytes needs no second parse.
    pub(crate) raw_contexts: Vec<(Vec<u8>, Arc<CorrelationContext>)>,
    /// Room for a line with that context cut out.
    pub(crate) scratch: Vec<u8>,
}

impl Clone for Interner {
    fn clone(&self) -> Self {
        Self {
            recent: Vec::new(),
            pool: Arc::clone(&self.pool),
            raw_contexts: Vec::new(),
            scratch: Vec::new(),
        }
    }
}

impl Interner {
    /// The recent context for which `matches` holds, moved to the front.
    #[inline]
    pub(crate) fn find_recent(
        &mut self,
        mut matches: impl FnMut(&CorrelationContext) -> bool,
    ) -> Option<Arc<CorrelationContext>> {
        let index = self.recent.iter().position(|context| matches(context))?;
        if index > 0 {
            let context = self.recent.remove(index);
            self.recent.insert(0, context);
        }
        self.recent.first().cloned()
    }

    /// The shared `Arc` for `context`.
    pub(crate) fn intern(&mut self, context: CorrelationContext) -> Arc<CorrelationContext> {
        if let Some(found) = self.find_recent(|known| *known == context) {
            return found;
        }
        let shared = {
            // A poisoned lock only means another decoder panicked; the set
            // itself is always consistent.
            let mut pool = self.pool.lock().unwrap_or_else(|poison| poison.into_inner());
            match pool.get(&context) {
                Some(found) => Arc::clone(found),
                None => {
                    let fresh = Arc::new(context);
                    pool.insert(Arc::clone(&fresh));
                    fresh
                }
            }
        };
        self.remember(Arc::clone(&shared));
        shared
    }

    fn remember(&mut self, context: Arc<CorrelationContext>) {
        if self.recent.len() == RECENT {
            self.recent.pop();
        }
        self.recent.insert(0, context);
    }
}

#[derive(Debug, Clone)]
struct Definition {
    line: u64,
    context: Arc<CorrelationContext>,
}

/// v4 definitions by `context_id`, with the line that first defined each, so
/// a parallel decoder that already knows later definitions still refuses a
/// reference that comes before its definition.
///
/// Every v4 row looks its `context_id` up here, so the table hashes with
/// [`FastHashMap`]'s hasher (SipHash was half a percent of a decoding
/// thread's time), and a definition has a number ([`Registry::find`]) that
/// a reader can remember: rows of one context come in runs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Registry {
    numbers: FastHashMap<String, usize>,
    definitions: Vec<Definition>,
}

impl Registry {
    /// Records a definition at `line`: whether the ID is new (a repeat of
    /// the same context changes nothing); an ID already defined with
    /// another context is stormlog's "conflicting context definition".
    pub(crate) fn define(
        &mut self,
        id: &str,
        context: &Arc<CorrelationContext>,
        line: u64,
    ) -> Result<bool, String> {
        match self.numbers.get(id) {
            Some(&number) if *self.definitions[number].context != **context => {
                Err(format!("conflicting context definition: {}", tally_core::shown(id)))
            }
            Some(_) => Ok(false),
            None => {
                self.numbers.insert(id.to_owned(), self.definitions.len());
                self.definitions.push(Definition { line, context: Arc::clone(context) });
                Ok(true)
            }
        }
    }

    /// The number of `id`'s definition, whatever its line.
    #[inline]
    pub(crate) fn find(&self, id: &str) -> Option<usize> {
        self.numbers.get(id).copied()
    }

    /// The context of definition `number` for a row at `line`: `None` when
    /// the row comes before the definition.
    #[inline]
    pub(crate) fn get(&self, number: usize, line: u64) -> Option<&Arc<CorrelationContext>> {
        self.definitions
            .get(number)
            .filter(|definition| definition.line < line)
            .map(|definition| &definition.context)
    }

    /// The context `id` names for a row at `line`.
    #[inline]
    pub(crate) fn lookup(&self, id: &str, line: u64) -> Option<&Arc<CorrelationContext>> {
        self.get(self.find(id)?, line)
    }
}
