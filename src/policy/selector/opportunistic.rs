//! Opportunistic (seed 002 §4, its figure 4): the site with the highest ratio
//! of ended to scheduled jobs; while no eligible site has ended a job, the
//! least-scheduled site, which spreads jobs round robin.
//!
//! Exactly the paper's algorithm: for every eligible site, `f1` = jobs
//! scheduled to it and `f2` = jobs ended at it; if some `f2 > 0`, the site of
//! the largest `f2 / f1` wins, else the site of the smallest `f1`. As in step 4
//! ("update siteid for job T"), a job planned again is counted at its new site
//! only, so `f1` counts the jobs *currently* assigned to a site. `f2` comes
//! from the control records the postscript keeps.
//!
//! Tie-breaks (the paper leaves them open): equal ratios go to the site with
//! fewer jobs scheduled, then to the earlier site in catalogue order; equal
//! smallest `f1` go to the first such site after the previous choice, cyclically
//! (round robin).

use crate::core::{JobId, SiteId};
use crate::policy::{GridView, SiteSelector};

/// Opportunistic site selection. See the module docs.
#[derive(Debug, Default)]
pub struct Opportunistic {
    /// The site each job is assigned to (the control database's siteid).
    assigned: Vec<Option<SiteId>>,
    /// Jobs currently assigned to each site (`f1`).
    scheduled: Vec<u64>,
    last: Option<SiteId>,
}

impl Opportunistic {
    /// Jobs currently assigned to `site`.
    pub fn scheduled(&self, site: SiteId) -> u64 {
        self.scheduled.get(site).copied().unwrap_or(0)
    }

    fn choose(&self, view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
        let f1 = |s: SiteId| self.scheduled(s);
        let f2 = |s: SiteId| view.counters.get(s).map_or(0, |c| c.ended);
        let best = eligible
            .iter()
            .copied()
            .filter(|&s| f2(s) > 0)
            .max_by(|&a, &b| {
                let (ra, rb) = (
                    f2(a) as f64 / f1(a).max(1) as f64,
                    f2(b) as f64 / f1(b).max(1) as f64,
                );
                ra.total_cmp(&rb).then(f1(b).cmp(&f1(a))).then(b.cmp(&a))
            });
        if let Some(s) = best {
            return s;
        }
        let min = eligible.iter().map(|&s| f1(s)).min().unwrap_or(0);
        let least = || eligible.iter().copied().filter(move |&s| f1(s) == min);
        self.last
            .and_then(|last| least().find(|&s| s > last))
            .or_else(|| least().next())
            .unwrap_or(eligible[0])
    }
}

impl SiteSelector for Opportunistic {
    fn select(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
        let site = self.choose(view, eligible);
        if self.scheduled.len() < view.sites.len().max(site + 1) {
            self.scheduled.resize(view.sites.len().max(site + 1), 0);
        }
        if self.assigned.len() <= job {
            self.assigned.resize(job + 1, None);
        }
        if let Some(old) = self.assigned[job].replace(site) {
            self.scheduled[old] -= 1;
        }
        self.scheduled[site] += 1;
        self.last = Some(site);
        site
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::records::SiteCounters;
    use crate::core::{RunDag, rls::Rls};

    fn ended(n: &[u64]) -> Vec<SiteCounters> {
        n.iter()
            .map(|&e| SiteCounters {
                ended: e,
                ..Default::default()
            })
            .collect()
    }

    #[test]
    fn follows_the_papers_algorithm_on_a_scripted_history() {
        let (wf, rls) = (RunDag::default(), Rls::new(0));
        let sites: Vec<crate::core::SiteInfo> = Vec::new();
        let mut counters = ended(&[0, 0, 0, 0]);
        let mut o = Opportunistic::default();
        let mut pick = |job, counters: &[SiteCounters], eligible: &[SiteId]| {
            let view = GridView {
                counters,
                ..GridView::new(&wf, &sites, &rls)
            };
            o.select(job, &view, eligible)
        };
        // No job ended: the least-scheduled site, round robin.
        let start: Vec<SiteId> = (0..6).map(|j| pick(j, &counters, &[1, 2, 3])).collect();
        assert_eq!(start, vec![1, 2, 3, 1, 2, 3]);
        // Site 2 ended 1 of its 2, site 3 ended 2 of 2: ratio 1 wins.
        counters = ended(&[0, 0, 1, 2]);
        assert_eq!(pick(6, &counters, &[1, 2, 3]), 3);
        // Now site 3 has 3 scheduled, 2 ended (0.67); site 2 ends both (1.0).
        counters = ended(&[0, 0, 2, 2]);
        assert_eq!(pick(7, &counters, &[1, 2, 3]), 2);
        // Only sites with a job ended compete; an ineligible best is skipped.
        assert_eq!(pick(8, &counters, &[1, 3]), 3);
        // Re-planning job 0 (was at 1) moves it: site 1 drops to 1 scheduled.
        counters = ended(&[0, 1, 0, 0]);
        assert_eq!(pick(0, &counters, &[1, 2, 3]), 1);
    }

    #[test]
    fn equal_ratios_prefer_the_less_loaded_site() {
        let (wf, rls) = (RunDag::default(), Rls::new(0));
        let counters = ended(&[0, 1, 1]);
        let view = GridView {
            counters: &counters,
            ..GridView::new(&wf, &[], &rls)
        };
        let mut o = Opportunistic {
            scheduled: vec![0, 1, 1],
            ..Default::default()
        };
        // Both 1/1: fewer scheduled first, then catalogue order.
        assert_eq!(o.choose(&view, &[1, 2]), 1);
        o.scheduled = vec![0, 2, 1];
        // 1/2 vs 1/1: site 2.
        assert_eq!(o.choose(&view, &[1, 2]), 2);
    }
}
