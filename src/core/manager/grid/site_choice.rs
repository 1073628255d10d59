//! The prescript's first half (seed 000 §4): which sites a ready job may
//! use now, the site selector's choice among them, and the placement that
//! choice makes: the job's disk room, its inputs pinned there and the list
//! of those still to stage. These are the data placement's rules; the
//! DAGMan side shows the selector only what it reads of the node life
//! cycle ([`DagSide`]), and the manager starts the PRE script or the
//! staging afterwards.

use super::placement::Placement;
use super::stage_in::Staging;
use crate::core::ready_queue::ReadyQueue;
use crate::core::records::SiteCounters;
use crate::core::seams::{GridView, Offer};
use crate::core::submissions::{Submissions, Workload};
use crate::core::{Command, JobId, JobState, SiteId, SiteInfo, Time, RunDag};
use std::collections::VecDeque;

/// Why a job has no site to offer the selector.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NoSite {
    /// Every site that could run it is down.
    AllDown,
    /// No site can run it.
    None,
    /// No site that could run it has room for it now (storage-aware
    /// release): these could.
    NoRoom(Vec<SiteId>),
}

/// What the site selector reads of the DAGMan side: every node's state,
/// the submissions and their workload, and the ready queue (for the jobs
/// a look-ahead selector would be offered next).
pub(crate) struct DagSide<'a> {
    /// Every job's state now.
    pub(crate) states: &'a [JobState],
    /// The workflows submitted.
    pub(crate) submissions: &'a Submissions,
    /// Per submission: arrived, slots held, jobs ready and open.
    pub(crate) workload: &'a [Workload],
    /// The ready queue, in the order jobs are offered.
    pub(crate) ready: &'a ReadyQueue,
}

impl Placement {
    /// The selector's site for ready `job`, or `Ok(None)` when it holds the
    /// job; the reason when no site may take it now. A chosen site is not
    /// yet the job's: [`Placement::place_at`] makes it so.
    pub(crate) fn choose_site(
        &mut self,
        job: JobId,
        wf: &RunDag,
        sites: &[SiteInfo],
        counters: &[SiteCounters],
        dag: DagSide<'_>,
        now: Time,
    ) -> Result<Option<SiteId>, NoSite> {
        let mut eligible = std::mem::take(&mut self.eligible);
        let found = self.eligible_sites(job, sites, wf, &mut eligible);
        if let Err(why) = found {
            self.eligible = eligible;
            return Err(why);
        }
        self.avoid_once[job] = None;
        let view = GridView {
            workflow: wf,
            sites,
            rls: self.replicas.for_selectors(),
            active: &self.pool.active,
            counters,
            last_ended: self.last_ended,
            claimed: &self.pool.claimed,
            states: dag.states,
            submissions: dag.submissions,
            workload: dag.workload,
            now,
            plans_inputs: self.replicas.plans(),
        };
        let ahead = match self.selector.look_ahead(job, &view, &eligible) {
            0 => Vec::new(),
            n => self.upcoming(n, wf, sites, &dag),
        };
        let site = if ahead.is_empty() {
            self.selector.place(job, &view, &eligible)
        } else {
            self.selector.place_ahead(job, &view, &eligible, &ahead)
        };
        debug_assert!(
            site.is_none_or(|s| eligible.contains(&s)),
            "selector chose an ineligible site"
        );
        self.eligible = eligible;
        Ok(site)
    }

    /// Up to `n` ready jobs the round would offer the selector next if
    /// nothing changed (those without an eligible site never reach it).
    fn upcoming(&self, n: usize, wf: &RunDag, sites: &[SiteInfo], dag: &DagSide<'_>) -> Vec<Offer> {
        let mut ahead = Vec::with_capacity(n.min(dag.ready.len()));
        for job in dag.ready.peek(dag.ready.len().min(2 * n)) {
            if ahead.len() == n {
                break;
            }
            let mut eligible = Vec::new();
            if dag.states[job] == JobState::Ready && self.eligible_sites(job, sites, wf, &mut eligible).is_ok() {
                ahead.push(Offer { job, eligible });
            }
        }
        ahead
    }

    /// Why no site can ever take `job` ([`NoSite::None`]), as its failure
    /// says.
    pub(crate) fn why_no_site(&self, job: JobId) -> String {
        format!(
            "no site with CPUs can hold its inputs and outputs ({} bytes){}",
            self.footprint[job],
            if self.avoid.contains_key(&job) {
                " apart from those where its outputs never fit"
            } else {
                ""
            }
        )
    }

    /// `job`'s attempt `attempt` goes to `site`: its disk room is
    /// committed there, its inputs are pinned (`out`), each input the site
    /// lacks is listed to stage (and planned in the RLS when the replica
    /// policy plans), and its staging begins, its PRE script running if
    /// `pre`. `counters` count the site's planned inputs and cache hits.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn place_at(
        &mut self,
        wf: &RunDag,
        job: JobId,
        site: SiteId,
        attempt: usize,
        pre: bool,
        counters: &mut SiteCounters,
        out: &mut Vec<Command>,
    ) {
        self.site_of[job] = site;
        self.room.place(wf, job, site);
        out.push(Command::Pin { job, site });
        let inputs = &wf.job(job).inputs;
        let mut pending = VecDeque::with_capacity(inputs.len());
        counters.inputs_planned += inputs.len() as u64;
        // An input named twice is staged once. A long list is checked
        // against a set: scanning it for each input was nearly 1% of the
        // instructions of `gridbed bench sim` (some jobs read hundreds of
        // files).
        let long = inputs.len() > 16;
        let mut listed = rustc_hash::FxHashSet::default();
        for &f in inputs {
            if self.replicas.has(f, site) {
                counters.cache_hits += 1;
                continue;
            }
            let first = if long {
                listed.insert(f)
            } else {
                !pending.contains(&f)
            };
            if first {
                pending.push_back(f);
            }
        }
        let planned = self.replicas.plan(pending.iter().copied(), site);
        self.staging[job] = Some(Staging {
            attempt,
            site,
            pending,
            in_flight: 0,
            waiting: 0,
            staged: Vec::new(),
            tries: Vec::new(),
            pre_running: pre,
            planned,
        });
    }

    /// The execution sites `job` may use now, into `out`: those with CPUs
    /// and room for its inputs and outputs, that it does not avoid, that
    /// are up; not the one that re-planned it last, if there is another.
    pub(crate) fn eligible_sites(
        &self,
        job: JobId,
        sites: &[SiteInfo],
        wf: &RunDag,
        out: &mut Vec<SiteId>,
    ) -> Result<(), NoSite> {
        let avoid = self.avoid.get(&job);
        let need = self.footprint[job];
        out.clear();
        out.extend((0..sites.len()).filter(|&s| {
            let site = &sites[s];
            site.cpus > 0 && site.disk >= need && !avoid.is_some_and(|a| a.contains(&s))
        }));
        if !out.is_empty() && out.iter().all(|&s| self.pool.down[s]) {
            return Err(NoSite::AllDown);
        }
        out.retain(|&s| !self.pool.down[s]);
        if out.is_empty() {
            return Err(NoSite::None);
        }
        // Re-planned by MonitQueue or after a stalled wait for room: anywhere
        // but that site, if there is anywhere else.
        if let Some(killer) = self.avoid_once[job]
            && out.len() > 1
        {
            out.retain(|&s| s != killer);
        }
        // Those with room now, in their order (the others only if none).
        let mut fit = 0;
        for i in 0..out.len() {
            if self.room.fits(wf, job, out[i]) {
                out.swap(fit, i);
                fit += 1;
            }
        }
        if fit == 0 {
            return Err(NoSite::NoRoom(std::mem::take(out)));
        }
        out.truncate(fit);
        Ok(())
    }
}
