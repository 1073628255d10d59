//! Job-C: seed 003 §9's Condor with caches on the execute machines but no
//! DAG-oriented planning. "Like ORIG, a job is considered for scheduling
//! only when all its parent jobs have completed. However, each job is
//! matched to the machine available at the time that stores the largest
//! volume of relevant input and executable data in bytes." Executables are
//! input files of the job (§5.1), so both count. A job waits in the schedd
//! while no machine is free; what a job staged stays cached (and
//! registered) for later jobs. Workflows share the machines as in ORIG.

use crate::core::{JobId, ReplicaPolicy, SiteId};
use crate::policy::{GridView, SiteSelector};

/// Places a ready job on the free eligible site caching the most bytes of
/// its inputs (the first such in site order), or holds it.
#[derive(Debug, Default)]
pub struct JobC {
    bytes: Vec<u64>,
}

impl SiteSelector for JobC {
    fn select(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
        self.bytes.clear();
        self.bytes.resize(view.sites.len(), 0);
        let inputs = &view.workflow.job(job).inputs;
        for (i, &f) in inputs.iter().enumerate() {
            if inputs[..i].contains(&f) {
                continue;
            }
            for &s in view.rls.holders(f) {
                self.bytes[s] += view.workflow.files()[f].size;
            }
        }
        let free: Vec<SiteId> = eligible
            .iter()
            .copied()
            .filter(|&s| view.is_free(s))
            .collect();
        let among = if free.is_empty() { eligible } else { &free };
        // The first of the largest: `max_by_key` keeps the last, so reverse.
        among
            .iter()
            .rev()
            .copied()
            .max_by_key(|&s| self.bytes[s])
            .unwrap_or(eligible[0])
    }

    fn place(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> Option<SiteId> {
        view.matchable(job, eligible)
            .then(|| self.select(job, view, eligible))
    }

    fn replica_policy(&self) -> Option<ReplicaPolicy> {
        Some(ReplicaPolicy::Caching)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{File, JobSpec, JobState, RunDag, SiteInfo, Workflow, rls::Rls};

    fn site(cpus: usize) -> SiteInfo {
        SiteInfo {
            name: "s".into(),
            cpus,
            disk: 1 << 40,
            speed: 1.0,
            overhead: 0.0,
        }
    }

    #[test]
    fn a_job_goes_to_the_free_site_caching_most_of_its_bytes_or_waits() {
        let files = vec![
            File {
                name: "exe".into(),
                size: 10,
            },
            File {
                name: "db".into(),
                size: 100,
            },
        ];
        let job = JobSpec {
            name: "blastall".into(),
            runtime: 1.0,
            inputs: vec!["exe".into(), "db".into()],
            ..Default::default()
        };
        let wf = RunDag::from(Workflow::build(files, vec![job]).unwrap());
        let sites = vec![site(1), site(1), site(1)];
        let mut rls = Rls::new(3);
        rls.register(0, 0); // the executable at site 0
        rls.register(1, 1); // the database at site 1
        rls.register(0, 2);
        rls.register(1, 2); // both at site 2
        let states = [JobState::Ready];
        let mut claimed = vec![0, 0, 0];
        let view = |claimed: &[usize]| {
            let v = GridView {
                claimed,
                states: &states,
                ..GridView::new(&wf, &sites, &rls)
            };
            JobC::default().place(0, &v, &[0, 1, 2])
        };
        assert_eq!(view(&claimed), Some(2), "110 bytes beat 100 and 10");
        claimed[2] = 1;
        assert_eq!(view(&claimed), Some(1), "the best free one");
        claimed = vec![1, 1, 1];
        assert_eq!(view(&claimed), None, "no machine free: it waits");
    }
}
