//! Least recently used first: the deletion policy of seed 000 §5.1.

use crate::policy::{Candidate, EvictionPolicy};

/// Evicts the file whose last use is oldest.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lru;

impl EvictionPolicy for Lru {
    fn order(&mut self, candidates: &mut Vec<Candidate>) {
        // The pool clock is unique per access, so the order is total.
        candidates.sort_unstable_by_key(|c| c.last_access);
    }
}
