//! ORIG: plain Condor as seed 003 §3 and §9 describe it. DAGMan submits a
//! job once its parents ended; the matchmaker places it on an unclaimed
//! machine, with no notion of where its data is: "for each job, the list of
//! available machines is scanned, and the machine with the highest rank
//! that satisfies the job's requirements is chosen" (no rank here, so the
//! first). With no machine free, the job waits in the schedd. Nothing is
//! cached on execute machines: the `return` replica policy deletes staged
//! inputs after the job and sends its outputs back to the submit machine
//! (the claim held meanwhile), so every input comes from there. With
//! several workflows, a job waits while its workflow holds its fair share
//! of the machines and another workflow waits below its own.

use crate::core::{JobId, ReplicaPolicy, SiteId};
use crate::policy::{GridView, SiteSelector};

/// Places a ready job on the first free eligible site, or holds it.
#[derive(Debug, Default)]
pub struct Orig;

impl SiteSelector for Orig {
    fn select(&mut self, _job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
        eligible
            .iter()
            .copied()
            .find(|&s| view.is_free(s))
            .unwrap_or(eligible[0])
    }

    fn place(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> Option<SiteId> {
        view.matchable(job, eligible)
            .then(|| self.select(job, view, eligible))
    }

    fn replica_policy(&self) -> Option<ReplicaPolicy> {
        Some(ReplicaPolicy::Return)
    }
}
