//! RandomCaching: "the execution site is selected randomly; input files are
//! replicated at the execution site and become available for other jobs"
//! (seed 000 §5.1). The site choice is [`Random`]'s; the strategy implies the
//! `caching` replica policy whatever the testbed says.

use rand_chacha::ChaCha8Rng;

use super::Random;
use crate::core::{JobId, ReplicaPolicy, SiteId};
use crate::policy::{GridView, SiteSelector};

/// Random site choice with caching replicas.
pub struct RandomCaching(Random);

impl RandomCaching {
    /// A selector drawing from `rng`.
    pub fn new(rng: ChaCha8Rng) -> Self {
        RandomCaching(Random::new(rng))
    }
}

impl SiteSelector for RandomCaching {
    fn select(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
        self.0.select(job, view, eligible)
    }

    fn replica_policy(&self) -> Option<ReplicaPolicy> {
        Some(ReplicaPolicy::Caching)
    }
}
