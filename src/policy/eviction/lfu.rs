//! Least frequently used (seed 001 §3.1): the file read fewest times goes
//! first; among equals, the least recently used.

use crate::policy::{Candidate, EvictionPolicy};

/// Evicts the file with the fewest accesses (then the oldest last access).
#[derive(Debug, Clone, Copy, Default)]
pub struct Lfu;

impl EvictionPolicy for Lfu {
    fn key(&mut self, candidate: &Candidate) -> u64 {
        // Accesses in the high bits, recency in the low ones: a pool's clock
        // stays far below 2^40 in any run.
        (candidate.accesses.min((1 << 24) - 1) << 40) | (candidate.last_access & ((1 << 40) - 1))
    }
}

impl crate::policy::CacheWorth for Lfu {
    /// The number of uses; among equals, the least recently used first.
    fn worth(&mut self, f: &crate::policy::CachedFile<'_>) -> f64 {
        let last = f.uses.last().copied().unwrap_or(0.0).max(0.0);
        f.uses.len() as f64 + 0.5 * last / (f.now.max(last) + 1.0)
    }
}
