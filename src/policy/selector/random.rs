//! Random: "the execution site is selected randomly" (seed 000 §5.1, strategies
//! Random and RandomCaching, which differ only in the replica policy).

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::core::{JobId, SiteId};
use crate::policy::{GridView, SiteSelector};

/// Uniform choice among the eligible sites, from a seeded generator.
pub struct Random {
    rng: ChaCha8Rng,
}

impl Random {
    /// A selector drawing from `rng`.
    pub fn new(rng: ChaCha8Rng) -> Self {
        Random { rng }
    }
}

impl SiteSelector for Random {
    fn select(&mut self, _job: JobId, _view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
        eligible[self.rng.random_range(0..eligible.len())]
    }
}
