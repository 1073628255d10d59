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
