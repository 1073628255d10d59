//! Scheduling policies, one file each behind a trait, picked by name.
//!
//! A policy gets a read-only view and returns a choice; it never does I/O and
//! never sees an engine, so the sim and live engines run the same code (the
//! dslab `Scheduler` habit, without handing over the engine's context).
//! Adding a policy is one new file plus one line in [`SELECTORS`] or
//! [`EVICTIONS`].

pub mod eviction;
pub mod selector;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::core::{FileId, JobId, ReplicaPolicy, SiteId, SiteInfo, Workflow, rls::Rls};

/// What a site selector may look at when a prescript plans a job.
pub struct GridView<'a> {
    /// The workflow.
    pub workflow: &'a Workflow,
    /// Every site of the scenario, indexed by [`SiteId`].
    pub sites: &'a [SiteInfo],
    /// Registered replicas.
    pub rls: &'a Rls,
    /// Jobs submitted to each site and not yet ended (queued or running).
    pub active: &'a [usize],
}

/// Chooses the execution site for a job (the prescript's first task, seed 000 §4).
pub trait SiteSelector: Send {
    /// `eligible` is never empty: execution sites the job may use for this
    /// attempt, in site order. Returns one of them.
    fn select(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> SiteId;

    /// Called once before the run: extra (parent, child) ordering edges the
    /// manager must honour on top of the workflow's (SPCL sequences the
    /// clusters that share a site this way). A job failing for good releases
    /// its ordering children rather than blocking them.
    fn prepare(&mut self, _workflow: &Workflow, _sites: &[SiteInfo]) -> Vec<(JobId, JobId)> {
        Vec::new()
    }

    /// The replica policy this strategy implies, if any (RandomCaching is
    /// Random with caching); `None` leaves it to the testbed.
    fn replica_policy(&self) -> Option<ReplicaPolicy> {
        None
    }
}

/// A file that may be evicted, with what an eviction policy may weigh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// The file.
    pub file: FileId,
    /// Its size.
    pub size: u64,
    /// Pool clock when it was written.
    pub inserted: u64,
    /// Pool clock of its last use.
    pub last_access: u64,
    /// Number of uses.
    pub accesses: u64,
}

/// Ranks unpinned files for eviction: the smallest key goes first. A pool asks
/// again whenever a file's state changes (written, read), so the key may use
/// recency, age, frequency or a draw from the policy's generator; ties go to
/// the lower file id.
pub trait EvictionPolicy: Send {
    /// The eviction key of `candidate` as it is now.
    fn key(&mut self, candidate: &Candidate) -> u64;
}

/// A named constructor of a policy of kind `T`, fed a seeded generator.
type Ctor<T> = fn(ChaCha8Rng) -> Box<T>;
type SelectorCtor = Ctor<dyn SiteSelector>;
type EvictionCtor = Ctor<dyn EvictionPolicy>;

/// Site selectors by name.
pub const SELECTORS: &[(&str, SelectorCtor)] = &[
    ("random", |rng| Box::new(selector::Random::new(rng))),
    ("round-robin", |_| Box::new(selector::RoundRobin::default())),
    ("data-present", |rng| {
        Box::new(selector::DataPresent::new(rng))
    }),
    ("random-caching", |rng| {
        Box::new(selector::RandomCaching::new(rng))
    }),
    ("clustered", |_| Box::new(selector::Clustered::default())),
];

/// Eviction policies by name.
pub const EVICTIONS: &[(&str, EvictionCtor)] = &[("lru", |_| Box::new(eviction::Lru))];

/// An unknown policy name, with the valid ones.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("unknown {kind} `{name}`; expected one of: {valid}")]
pub struct UnknownPolicy {
    /// "strategy" or "eviction".
    pub kind: &'static str,
    /// What was asked for.
    pub name: String,
    /// Comma-separated valid names.
    pub valid: String,
}

fn resolve<T: ?Sized>(
    kind: &'static str,
    table: &[(&str, Ctor<T>)],
    name: &str,
    seed: u64,
) -> Result<Box<T>, UnknownPolicy> {
    table
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, ctor)| ctor(ChaCha8Rng::seed_from_u64(seed)))
        .ok_or_else(|| UnknownPolicy {
            kind,
            name: name.to_string(),
            valid: table.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
        })
}

/// Builds the site selector called `name`, seeded with `seed`.
pub fn site_selector(name: &str, seed: u64) -> Result<Box<dyn SiteSelector>, UnknownPolicy> {
    resolve("strategy", SELECTORS, name, seed)
}

/// Builds the eviction policy called `name`, seeded with `seed`.
pub fn eviction_policy(name: &str, seed: u64) -> Result<Box<dyn EvictionPolicy>, UnknownPolicy> {
    resolve("eviction", EVICTIONS, name, seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolver_lists_valid_names() {
        assert!(site_selector("round-robin", 1).is_ok());
        let err = site_selector("fastest", 1).err().unwrap();
        assert!(
            err.to_string()
                .contains("random, round-robin, data-present, random-caching, clustered")
        );
        assert!(eviction_policy("lru", 0).is_ok());
    }
}
