//! Least recently used first: the deletion policy of seed 000 §5.1.

use crate::policy::{Candidate, EvictionPolicy};

/// Evicts the file whose last use is oldest.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lru;

impl EvictionPolicy for Lru {
    fn key(&mut self, candidate: &Candidate) -> u64 {
        // The pool clock ticks on every access, so keys are unique.
        candidate.last_access
    }
}

impl crate::policy::CacheWorth for Lru {
    /// The time of the last use: the least recently used file goes first.
    fn worth(&mut self, f: &crate::policy::CachedFile<'_>) -> f64 {
        f.uses.last().copied().unwrap_or(f64::NEG_INFINITY)
    }
}
