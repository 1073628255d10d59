//! Random eviction (seed 001 §3.1): any unpinned file may go, drawn from the
//! policy's seeded generator, so a run is still reproducible.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::policy::{Candidate, EvictionPolicy};

/// Evicts a file drawn at random.
#[derive(Debug, Clone)]
pub struct Random {
    rng: ChaCha8Rng,
}

impl Random {
    /// A policy drawing from `rng`.
    pub fn new(rng: ChaCha8Rng) -> Self {
        Random { rng }
    }
}

impl EvictionPolicy for Random {
    fn key(&mut self, _: &Candidate) -> u64 {
        // A fresh draw each time the pool re-ranks the file.
        self.rng.random()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn c(file: usize, inserted: u64, last: u64, accesses: u64) -> Candidate {
        Candidate {
            file,
            size: 1,
            inserted,
            last_access: last,
            accesses,
        }
    }

    #[test]
    fn each_policy_ranks_as_its_name_says() {
        use crate::policy::eviction::{Fifo, Lfu, Lru};
        // a: written first, read often, not lately; b: written later, read once, lately.
        let (a, b) = (c(0, 1, 5, 9), c(1, 2, 8, 1));
        assert!(Fifo.key(&a) < Fifo.key(&b), "FIFO: oldest write first");
        assert!(Lru.key(&a) < Lru.key(&b), "LRU: oldest use first");
        assert!(Lfu.key(&b) < Lfu.key(&a), "LFU: fewest uses first");
        assert!(
            Lfu.key(&c(2, 0, 3, 1)) < Lfu.key(&b),
            "LFU ties: least recent first"
        );
        let draws = |seed| {
            let mut r = Random::new(ChaCha8Rng::seed_from_u64(seed));
            (0..5).map(|i| r.key(&c(i, 0, 0, 0))).collect::<Vec<_>>()
        };
        assert_eq!(draws(3), draws(3));
        assert_ne!(draws(3), draws(4));
    }
}
