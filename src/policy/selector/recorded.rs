//! As recorded: each job goes to the machine a real run's trace says it ran
//! on (WfFormat's `execution.tasks[].machines`, read into the job's
//! `site`). A replay that keeps the run's placement charges each machine
//! what it really received: HTCondor's matchmaking fills one machine's
//! slots before the next, so a run's jobs and bytes are far from spread
//! evenly over its machines (`gridbed calibrate`, seed 003 §3's matchmaker).

use crate::core::{JobId, SiteId};
use crate::policy::{GridView, SiteSelector};

use super::RoundRobin;

/// The eligible site named as the job's recorded machine; a job without
/// one, or whose machine cannot take it, goes round-robin.
#[derive(Debug, Default)]
pub struct Recorded {
    otherwise: RoundRobin,
}

impl SiteSelector for Recorded {
    fn select(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
        let named = view.workflow.job(job).site.as_deref();
        named
            .and_then(|m| eligible.iter().copied().find(|&s| view.sites[s].name == m))
            .unwrap_or_else(|| self.otherwise.select(job, view, eligible))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{Job, RunDag, SiteInfo, Workflow, rls::Rls};

    #[test]
    fn a_job_goes_where_it_ran_else_round_robin() {
        let job = |name: &str, site: Option<&str>| Job {
            name: name.into(),
            runtime: 1.0,
            inputs: vec![],
            outputs: vec![],
            parents: vec![],
            position: None,
            transformation: None,
            arguments: None,
            label: None,
            members: vec![],
            site: site.map(str::to_string),
        };
        let wf = RunDag::from(Workflow {
            jobs: vec![job("a", Some("m2")), job("b", None), job("c", Some("gone"))],
            ..Default::default()
        });
        let site = |name: &str| SiteInfo {
            name: name.into(),
            cpus: 1,
            disk: 1,
            speed: 1.0,
            overhead: 0.0,
        };
        let sites = [site("submit"), site("m1"), site("m2")];
        let rls = Rls::new(0);
        let view = GridView::new(&wf, &sites, &rls);
        let mut r = Recorded::default();
        assert_eq!(r.select(0, &view, &[1, 2]), 2);
        assert_eq!(r.select(1, &view, &[1, 2]), 1);
        assert_eq!(r.select(2, &view, &[1, 2]), 2);
        // Its machine cannot take it: elsewhere.
        assert_eq!(r.select(0, &view, &[1]), 1);
    }
}
