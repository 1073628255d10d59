//! Data-Present: "jobs are sent to a site with the most files that they need; if
//! more than one site qualifies then a random one is chosen" (seed 000 §5.1,
//! seed 002 §5). "Most files" is weighed in bytes, so one large input counts for
//! more than several small ones; with equal sizes it is the file count.
//! "The DataPresent strategy also caches data" (seed 000 §5.2): it implies the
//! `caching` replica policy, without which no staged copy would ever be present.
//! Seed 002 ran it under VDS's planner, which erases staged inputs after each
//! job: `data-present[caching=false]` leaves the replica policy to the
//! testbed, and only job outputs are then "present".

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::core::{JobId, ReplicaPolicy, SiteId};
use crate::policy::{GridView, SiteSelector};

/// Picks the eligible site holding the most needed input bytes; ties random.
pub struct DataPresent {
    rng: ChaCha8Rng,
    caching: bool,
    bytes: Vec<u64>,
    tied: Vec<SiteId>,
}

impl DataPresent {
    /// A selector breaking ties with `rng`.
    pub fn new(rng: ChaCha8Rng) -> Self {
        DataPresent {
            rng,
            caching: true,
            bytes: Vec::new(),
            tied: Vec::new(),
        }
    }
}

impl DataPresent {
    /// Whether it implies the caching replica policy (seed 000's) or
    /// leaves the policy to the testbed (seed 002's, under VDS).
    pub fn caching(mut self, caching: bool) -> Self {
        self.caching = caching;
        self
    }
}

impl SiteSelector for DataPresent {
    fn select(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
        self.bytes.clear();
        self.bytes.resize(view.sites.len(), 0);
        for &f in &view.workflow.job(job).inputs {
            for &s in view.rls.holders(f) {
                self.bytes[s] += view.workflow.files()[f].size;
            }
        }
        let best = eligible.iter().map(|&s| self.bytes[s]).max().unwrap_or(0);
        self.tied.clear();
        let bytes = &self.bytes;
        self.tied
            .extend(eligible.iter().copied().filter(|&s| bytes[s] == best));
        self.tied[self.rng.random_range(0..self.tied.len())]
    }

    fn replica_policy(&self) -> Option<ReplicaPolicy> {
        self.caching.then_some(ReplicaPolicy::Caching)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{File, JobSpec, RunDag, SiteInfo, Workflow, rls::Rls};
    use rand::SeedableRng;

    #[test]
    fn it_implies_caching_unless_told_to_leave_the_replica_policy_to_the_testbed() {
        let p = |spec: &str| {
            crate::policy::site_selector(spec, 1)
                .unwrap()
                .replica_policy()
        };
        assert_eq!(p("data-present"), Some(ReplicaPolicy::Caching));
        assert_eq!(p("data-present[caching=false]"), None);
        assert!(crate::policy::site_selector("data-present[cache=no]", 1).is_err());
    }

    #[test]
    fn prefers_the_site_with_most_input_bytes_and_breaks_ties_randomly() {
        let files = ["a", "b", "c"]
            .iter()
            .map(|n| File {
                name: n.to_string(),
                size: 10,
            })
            .collect();
        let job = JobSpec {
            name: "j".into(),
            runtime: 1.0,
            inputs: vec!["a".into(), "b".into(), "c".into()],
            ..Default::default()
        };
        let wf = RunDag::from(Workflow::build(files, vec![job]).unwrap());
        let site = |n: &str| SiteInfo {
            name: n.into(),
            cpus: 1,
            disk: 100,
            speed: 1.0,
            overhead: 0.0,
        };
        let sites = vec![site("s0"), site("s1"), site("s2")];
        let mut rls = Rls::new(3);
        rls.register(0, 1);
        rls.register(1, 1);
        rls.register(2, 2);
        let active = vec![0; 3];
        let view = GridView {
            active: &active,
            ..GridView::new(&wf, &sites, &rls)
        };
        let mut dp = DataPresent::new(ChaCha8Rng::seed_from_u64(3));
        assert_eq!(dp.select(0, &view, &[0, 1, 2]), 1);
        assert_eq!(dp.select(0, &view, &[0, 2]), 2);
        let picks: std::collections::HashSet<_> =
            (0..50).map(|_| dp.select(0, &view, &[0])).collect();
        assert_eq!(picks.len(), 1);
        let empty = Rls::new(3);
        let view = GridView {
            rls: &empty,
            ..view
        };
        let picks: std::collections::HashSet<_> =
            (0..50).map(|_| dp.select(0, &view, &[0, 1, 2])).collect();
        assert_eq!(picks.len(), 3, "ties are broken at random");
    }
}
