//! First in, first out (seed 001 §3.1): the file cached longest ago goes
//! first, however often it was read since.

use crate::policy::{Candidate, EvictionPolicy};

/// Evicts the file written earliest.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fifo;

impl EvictionPolicy for Fifo {
    fn key(&mut self, candidate: &Candidate) -> u64 {
        candidate.inserted
    }
}
