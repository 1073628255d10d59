//! Last-Recent-Used (seed 002 §5): "the execution site corresponds to the site
//! where the last job ended". Until a job has ended (or when that site is not
//! eligible for this job) it falls back to round robin, as the paper notes it
//! behaves like Round-Robin at the start.

use super::RoundRobin;
use crate::core::{JobId, SiteId};
use crate::policy::{GridView, SiteSelector};

/// The site of the most recent job end; round robin before there is one.
#[derive(Debug, Default)]
pub struct LastRecentUsed {
    fallback: RoundRobin,
}

impl SiteSelector for LastRecentUsed {
    fn select(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
        match view.last_ended {
            Some(s) if eligible.contains(&s) => s,
            _ => self.fallback.select(job, view, eligible),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{RunDag, rls::Rls};

    #[test]
    fn round_robin_until_a_job_ends_then_the_last_site() {
        let (wf, rls) = (RunDag::default(), Rls::new(0));
        let mut view = GridView::new(&wf, &[], &rls);
        let mut s = LastRecentUsed::default();
        assert_eq!(s.select(0, &view, &[1, 2, 3]), 1);
        assert_eq!(s.select(0, &view, &[1, 2, 3]), 2);
        view.last_ended = Some(3);
        assert_eq!(s.select(0, &view, &[1, 2, 3]), 3);
        assert_eq!(s.select(0, &view, &[1, 2, 3]), 3);
        assert_eq!(
            s.select(0, &view, &[1, 2]),
            1,
            "site 3 not eligible: round robin goes on"
        );
    }
}
