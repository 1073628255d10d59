//! Round-Robin: "jobs are sent to sites in a round-robin way" (seed 002 §5).

use crate::core::{JobId, SiteId};
use crate::policy::{GridView, SiteSelector};

/// Cycles over the sites in catalogue order; a site not eligible for this job is
/// skipped without losing its turn for the next one.
#[derive(Debug, Default)]
pub struct RoundRobin {
    last: Option<SiteId>,
}

impl SiteSelector for RoundRobin {
    fn select(&mut self, _job: JobId, _view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
        let pick = match self.last {
            Some(last) => eligible
                .iter()
                .copied()
                .find(|&s| s > last)
                .unwrap_or(eligible[0]),
            None => eligible[0],
        };
        self.last = Some(pick);
        pick
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{RunDag, rls::Rls};

    #[test]
    fn cycles_and_wraps() {
        let wf = RunDag::default();
        let rls = Rls::new(0);
        let view = GridView::new(&wf, &[], &rls);
        let mut rr = RoundRobin::default();
        let picks: Vec<_> = (0..5).map(|j| rr.select(j, &view, &[1, 2, 4])).collect();
        assert_eq!(picks, vec![1, 2, 4, 1, 2]);
        assert_eq!(rr.select(0, &view, &[1, 4]), 4);
    }
}
