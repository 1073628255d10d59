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
