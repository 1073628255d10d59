//! The workflow manager: DAGMan semantics with the prescript/postscript staging
//! of seed 000 section 4, as a sans-IO state machine.
//!
//! A job is *ready* when its parents ended. Prescripts start at most one per
//! `prescript_interval` and at most `maxpre` at once (DAGMan's MAXPRE). A
//! prescript asks the [`SiteSelector`] for a site, pins the job's inputs there and
//! stages every input the RLS does not list at that site, pulling each from the
//! least busy holder (fewest transfers it is serving now; ties to the lower site
//! id, so runs are reproducible). When every input is staged the job is
//! submitted to the site's FIFO queue and the prescript ends. When the job ends,
//! the postscript applies the replica policy — `caching` registers the staged
//! copies in the RLS, `delete` removes them — and registers the outputs.
//!
//! Outputs are registered where their job wrote them and kept there, the
//! origin copy of derived data, as long as a job may still read them. When
//! every job reading an output has ended (done, failed or blocked), the
//! manager orders its in-place cleanup, as Pegasus's planner adds cleanup jobs:
//! the copy is no longer kept and may be evicted when room is needed
//! (`cleanup`, on by default). Final outputs, read by no job, stay.
//!
//! Failures are never dropped: a failed transfer is retried from the same source
//! up to `transfer_retries` times after `transfer_backoff`, then from another
//! replica; a prescript that cannot stage (no replica left, no room) sends the
//! job back to be planned again; a job that fails at its site is re-planned up to
//! `max_retries` times, after which it fails and its descendants cannot run
//! (DAGMan's rescue semantics).
//!
//! The machine is one [`Manager`] whose state is in two rooms, each a
//! folder with its own state, rules and unit tests: the DAGMan node life
//! cycle (`life`, state [`node_life::NodeLife`]) and the grid's data
//! placement (`grid`, state [`placement::Placement`]). Neither sees the
//! manager or reaches into the other: each room's `mod.rs` lists what it
//! reads from outside (the placement reads a node's [`JobState`], and
//! both name the manager's timers and a job's [`retry::Retry`], each a
//! module of its own). The manager holds the clock, the timers and the
//! records, and carries out what the rooms decide: the node life cycle
//! tells it of each move through a [`node_life::LifePort`] and asks the
//! little it needs (a release's delay, whether a job waits for a twin);
//! the placement says what it needs done as [`placement::GridStep`]s,
//! which the manager routes (`Manager::route`), or answers one step at a
//! time (what a prescript stages next). The manager's own methods are
//! kept by phase: this file holds the event entry point, the timers and
//! the graft of a sub-DAG read as the run goes; `staging` the prescript
//! and submission; `completion` the job's end and the postscript;
//! `recovery` retries, re-planning and MonitQueue; `abort` the DAG's stop.
//! Its tunables are `settings`.

mod abort;
mod completion;
mod grid;
mod life;
mod recovery;
pub mod scripted;
mod staging;
mod timer;
mod retry;
mod settings;
pub use settings::{MAX_RETRIES, ManagerSettings};
use grid::{maintenance, placement, replicas, room, schedd, site_choice, stage_in, stage_out, transfers};
use life::{dagman_limits, dagmans, ends, failure, node_life, release, stop, subdag};
use failure::SubmitFailure;
use room::RoomCheck;
use stage_in::{StageEnd, StageNext};
use node_life::{LifePort, NodeLife};
pub use node_life::{JobState, StateCounts};
pub use stop::DagAbort;
pub use replicas::{Registration, ReplicaPolicy};
use timer::Timer;
use placement::{GridStep, Placement};
use transfers::{Flight, FlightKind};
pub use release::SavePoint;
pub use subdag::{SubDagRun, SubDagSpan};
#[cfg(test)]
mod tests;

use recovery::Retry;
use staging::Prescript;

use super::events::EventQueue;
use super::nodes::{Graft, NodeSettings, SUBMIT_FAILED};
use crate::core::{ScriptKind, ScriptMacros};
use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use super::faults::Fault;
use super::records::{
    Attempt, EvictionRecord, FaultRecord, JobRecord, MemberRun, Outcome, Records, ScriptRun,
    TransferRecord,
};
use super::seams::SiteSelector;
use super::submissions::Submissions;
use super::wms::Wms;
use super::{
    Command, Event, FileId, JobFailure, JobId, SiteId, SiteInfo, Time, TransferFailure, TransferId,
    RunDag, Workflow, rls::Rls,
};

/// What changed in the control records since the last look.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Changes {
    /// Jobs whose state (and so attempt record) changed.
    pub jobs: Vec<JobId>,
    /// Transfers started or ended (an id may appear twice).
    pub transfers: Vec<TransferId>,
}

/// The workflow manager state machine. See the module docs.
///
/// Its state is kept in two rooms: `dag`, the DAGMan node life cycle
/// (states, parents, retries, throttles, aborts, sub-DAGs), and `grid`, the
/// grid's data placement (site choice, staging, the RLS, disk room, the
/// pool's queues, stage-out, cache maintenance); the manager carries the
/// clock, the timers and the records both write.
pub struct Manager {
    wf: Arc<RunDag>,
    sites: Vec<SiteInfo>,
    settings: ManagerSettings,
    now: Time,
    timers: EventQueue<Timer>,
    records: Records,
    /// Change tracking for a control database, when on.
    changes: Option<Changes>,
    job_dirty: Vec<bool>,
    /// The DAGMan node life cycle.
    dag: node_life::NodeLife,
    /// The grid's data placement.
    grid: Placement,
}

/// Twice the longest a job of `longest` nominal seconds can take from
/// submission to its node's end at any of `sites`: no job ending for
/// longer means none is about to.
fn stall_horizon(settings: &ManagerSettings, sites: &[SiteInfo], longest: f64) -> Time {
    let slowest = sites
        .iter()
        .filter(|s| s.cpus > 0)
        .map(|s| longest / s.speed + s.overhead)
        .fold(0.0, f64::max);
    2.0 * (slowest
        + settings.submit_overhead.mean()
        + settings.postscript_overhead.mean()
        + settings.release_overhead.mean()
        + settings.wms.negotiator_interval
        + settings.wms.user_log_scan_interval)
}

/// Notes that `job`'s control record changed, when changes are tracked.
fn mark_changed(changes: &mut Option<Changes>, job_dirty: &mut [bool], job: JobId) {
    if let Some(c) = changes.as_mut()
        && !job_dirty[job]
    {
        job_dirty[job] = true;
        c.jobs.push(job);
    }
}

/// The manager's side of the node life cycle's [`LifePort`]: its
/// records, timers and change tracking, and the grid's placement.
struct Port<'a> {
    now: Time,
    wf: &'a RunDag,
    settings: &'a ManagerSettings,
    records: &'a mut Records,
    timers: &'a mut EventQueue<Timer>,
    grid: &'a mut Placement,
    changes: &'a mut Option<Changes>,
    job_dirty: &'a mut Vec<bool>,
}

impl LifePort for Port<'_> {
    fn now(&self) -> Time {
        self.now
    }

    fn workflow(&self) -> &RunDag {
        self.wf
    }

    fn moved(&mut self, job: JobId, from: JobState, to: JobState) {
        mark_changed(self.changes, self.job_dirty, job);
        (self.grid).node_moved(job, from, to, self.wf, self.settings.cleanup);
    }

    fn ready_now(&mut self, job: JobId, first: bool) {
        let ready = &mut self.records.jobs[job].ready;
        match first {
            true => *ready.get_or_insert(self.now),
            false => *ready.insert(self.now),
        };
    }

    fn memoizing(&self, job: JobId) -> bool {
        self.grid.memoizing(job)
    }

    fn release_delay(&mut self) -> Time {
        self.grid.pool.wms.draw(&self.settings.release_overhead)
    }

    fn release_at(&mut self, job: JobId, at: Time) {
        self.timers.push(at, Timer::Release { job });
    }

    fn failed(&mut self, job: JobId, why: String) -> Vec<JobId> {
        self.records.jobs[job].failure = Some(why);
        let outputs = &self.wf.job(job).outputs;
        (outputs.iter())
            .filter_map(|&f| self.grid.replicas.take_waiting(f))
            .flatten()
            .collect()
    }

    fn blocked_by(&self, job: JobId) -> Option<JobId> {
        self.records.jobs[job].blocked_by
    }

    fn set_blocked_by(&mut self, job: JobId, by: JobId) {
        self.records.jobs[job].blocked_by = Some(by);
    }

    fn runs_again(&mut self, job: JobId) {
        let record = &mut self.records.jobs[job];
        (record.failure, record.blocked_by) = (None, None);
        self.grid.replans[job] = 0;
        for &f in &self.wf.job(job).inputs {
            self.grid.readers_left[f] += 1;
        }
    }
}

impl Manager {
    /// A manager for `workflow` on `sites`, with the initial replicas in
    /// `placement` (file, site). Jobs without parents are ready at time 0; call
    /// [`handle`](Self::handle) with [`Event::Tick`] to start.
    pub fn new(
        workflow: Arc<Workflow>,
        sites: Vec<SiteInfo>,
        placement: &[(FileId, SiteId)],
        settings: ManagerSettings,
        mut selector: Box<dyn SiteSelector>,
    ) -> Self {
        let n = workflow.jobs.len();
        let mut settings = settings;
        if let Some(policy) = selector.replica_policy() {
            settings.replica_policy = policy;
        }
        let mut missing_parents: Vec<usize> =
            workflow.jobs.iter().map(|j| j.parents.len()).collect();
        let mut ordering = vec![Vec::new(); n];
        for (parent, child) in selector.prepare(&workflow, &sites) {
            ordering[parent].push(child);
            missing_parents[child] += 1;
        }
        let mut records = Records {
            jobs: vec![JobRecord::default(); n],
            transfers: Vec::new(),
            sites: vec![Default::default(); sites.len()],
            ..Default::default()
        };
        let fallback_origin = placement.first().map_or(0, |&(_, s)| s);
        let dag = NodeLife::new(
            missing_parents,
            ordering,
            settings.submit_depth_first,
            fallback_origin,
        );
        for (j, rec) in records.jobs.iter_mut().enumerate() {
            if dag.state[j] == JobState::Ready {
                rec.ready = Some(0.0);
            }
        }
        let m = sites.len();
        let footprint = (0..n).map(|j| workflow.footprint(j)).collect();
        let longest = workflow.jobs.iter().map(|j| j.runtime).fold(0.0, f64::max);
        let stall_horizon = stall_horizon(&settings, &sites, longest);
        let mut readers_left = vec![0u32; workflow.files.len()];
        for j in &workflow.jobs {
            for &f in &j.inputs {
                readers_left[f] += 1;
            }
        }
        let wms = Wms::new(
            settings.wms.clone(),
            sites.iter().map(|s| s.cpus).collect(),
            n,
        );
        let replicas = replicas::Replicas::new(
            workflow.files.len(),
            placement,
            settings.registration,
            settings.replica_policy,
        );
        let run = Arc::new(RunDag::from(workflow.clone()));
        let home = submit_machines(&workflow, placement);
        let unread = readers_left.iter().map(|&r| r == 0).collect();
        let files = workflow.files.len();
        let room = room::Room::new(
            settings.storage_aware,
            &run,
            &sites,
            placement,
        );
        let mut origin_copies = placement.to_vec();
        origin_copies.sort_unstable();
        let grid = Placement {
            selector,
            selector_name: String::new(),
            policy: settings.replica_policy,
            replicas,
            transfers: transfers::Transfers::new(m),
            pool: placement::Pool {
                wms,
                at_site: vec![false; n],
                idle: VecDeque::new(),
                killing: vec![false; n],
                claimed: vec![0; m],
                active: vec![0; m],
                down: vec![false; m],
            },
            cache: maintenance::Cache {
                worth: None,
                uses: vec![Vec::new(); files],
                made_at: vec![None; files],
                unread,
                origin_copies,
                replicating: Vec::new(),
                maintenance_due: Vec::new(),
            },
            finals: stage_out::Finals::default(),
            stall: room::RoomStall {
                waits: vec![0; n],
                since: vec![0.0; n],
                progress_seen: vec![0; n],
                horizon: stall_horizon,
            },
            site_of: vec![0; n],
            replans: vec![0; n],
            room_waits: vec![0; n],
            avoid: HashMap::default(),
            avoid_once: vec![None; n],
            room,
            staging: (0..n).map(|_| None).collect(),
            staged: vec![Vec::new(); n],
            home,
            stage_outs: (0..n).map(|_| None).collect(),
            memo: None,
            footprint,
            readers_left,
            cleanup_due: Vec::new(),
            woken: Vec::new(),
            eligible: Vec::new(),
            last_ended: None,
            grid_changed: false,
            progress: 0,
        };
        let mut manager = Manager {
            wf: run,
            sites,
            settings,
            now: 0.0,
            timers: EventQueue::new(),
            records,
            changes: None,
            job_dirty: vec![false; n],
            dag,
            grid,
        };
        manager.start_monit();
        manager
    }

    /// Applies DAGMan's node settings; call before the first event. `DONE`
    /// nodes are complete at once (their children released), priorities order
    /// the ready jobs, categories get their `MAXJOBS`.
    pub fn set_nodes(&mut self, nodes: NodeSettings) {
        // Every DONE node is done before any node starts, as in DAGMan: the
        // save points of the nodes ready now are written after them.
        let (done, save_points) = self.dag.set_nodes(nodes, self.settings.submit_depth_first);
        // The FINAL nodes wait for every other one of their DAG (their
        // ready-queue entries are skipped as stale).
        let finals = self.dag.nodes.subdags.iter().filter_map(|d| d.final_node);
        for f in finals.chain(self.dag.nodes.final_node).collect::<Vec<_>>() {
            if self.dag.state[f] == JobState::Ready {
                self.set_state(f, JobState::Waiting);
                self.records.jobs[f].ready = None;
            }
        }
        // Nodes on or below a cycle never become ready under DAGMan: they
        // are over from the start, never run and not futile (NOT_READY).
        for j in self.dag.nodes.in_cycle.clone() {
            if matches!(self.dag.state[j], JobState::Ready | JobState::Waiting) {
                self.set_state(j, JobState::Blocked);
                self.records.jobs[j].ready = None;
            }
        }
        self.life(|dag, port| dag.release_final(port));
        // Jobs are in topological order: a DONE node's DONE parents come first.
        for j in done {
            if matches!(self.dag.state[j], JobState::Ready | JobState::Waiting) {
                self.complete_without_running(j);
            }
        }
        // A sub-DAG's nodes whose parents were DONE in its rescue DAG still
        // wait for its run to start, as its roots do.
        for j in self.dag.hold_for_entries() {
            self.set_state(j, JobState::Waiting);
            self.records.jobs[j].ready = None;
        }
        for j in self.dag.set_services() {
            // Its ready-queue entry is skipped as stale.
            self.set_state(j, JobState::Waiting);
            self.records.jobs[j].ready = None;
        }
        self.dag.keep_save_points(save_points);
    }

    /// Splits the jobs into workflows submitted from their own submit
    /// machines at their own times (seed 003 §9); call before the first
    /// event. Each job's outputs go home to its workflow's submit machine
    /// under the `return` policy; the roots of a workflow submitted after
    /// time 0 wait for it.
    pub fn set_submissions(&mut self, submissions: Submissions) {
        assert_eq!(submissions.of_job.len(), self.wf.job_count());
        self.grid.set_homes(&submissions);
        let arrivals: Vec<(usize, Time)> = (submissions.list.iter().enumerate())
            .filter(|(_, s)| s.arrival > 0.0)
            .map(|(i, s)| (i, s.arrival))
            .collect();
        for r in self.dag.set_submissions(submissions, self.wf.started()) {
            self.records.jobs[r].ready = None;
        }
        for (submission, at) in arrivals {
            self.schedule(at, Timer::Arrival { submission });
        }
    }

    /// Ranks caches for maintenance with `worth` (after each job, when a
    /// bound is set).
    pub fn set_cache_worth(&mut self, worth: Box<dyn crate::core::seams::CacheWorth>) {
        self.grid.set_cache_worth(worth);
    }

    /// Memoizes within the run the jobs `twins` groups; call before the
    /// first event.
    pub fn set_twins(&mut self, twins: &crate::core::versions::Twins) {
        assert_eq!(twins.group.len(), self.wf.job_count());
        self.grid.set_twins(twins);
    }

    /// Workflow `submission` arrives (§8.4's planning cycle): its jobs whose
    /// twin ended earlier are memoized (`memo.rs`): their outputs are
    /// copied to their submit machine instead of run.
    fn memoize_arrival(&mut self, submission: usize, out: &mut Vec<Command>) {
        if self.grid.memo.is_none() {
            return;
        }
        let arrived = (0..self.wf.job_count())
            .filter(|&j| self.dag.submissions.of_job[j] == submission)
            .filter(|&j| matches!(self.dag.state[j], JobState::Waiting | JobState::Ready));
        let found = self.grid.twins_ended(arrived);
        let mut memoized = vec![false; self.wf.job_count()];
        for &(j, _) in &found {
            memoized[j] = true;
        }
        let reproduce_lost = self.settings.reproduce_lost;
        for (job, twin) in found {
            let copies = self.grid.memo_copies(&self.wf, (job, twin), &memoized, reproduce_lost);
            let Some(copies) = copies else {
                continue;
            };
            if self.dag.state[job] == JobState::Ready {
                // Its ready-queue entry is skipped as stale.
                self.set_state(job, JobState::Waiting);
                self.records.jobs[job].ready = None;
            }
            if copies.is_empty() {
                self.memo_done(job);
                continue;
            }
            self.grid.memo_waits(job, copies.len());
            let to = self.grid.home[job];
            for c in copies {
                let kind = FlightKind::Memo { source: c.source };
                self.start_flight((job, usize::MAX), c.file, c.from, to, kind, false, out);
            }
        }
    }

    /// Memoized `job`'s node ends.
    pub(super) fn memo_done(&mut self, job: JobId) {
        self.records.jobs[job].memoized = Some(self.now);
        self.complete_without_running(job);
        self.grid.memo_ended(job);
    }

    /// Workflow `submission` arrives: its roots are ready, and the
    /// selector sees a changed grid (a planner re-plans, seed 003 §5.2 iv).
    fn arrive(&mut self, submission: usize, out: &mut Vec<Command>) {
        self.memoize_arrival(submission, out);
        self.life(|dag, port| dag.arrive(submission, port));
        self.grid.grid_changed = true;
    }

    /// The workflows and each job's.
    pub fn submissions(&self) -> &Submissions {
        &self.dag.submissions
    }

    /// Most jobs of each category that were ever in flight at once.
    pub fn category_peaks(&self) -> &[usize] {
        &self.dag.throttle.peak
    }

    /// Feeds one event at nominal time `now` and appends the resulting commands
    /// to `out`. Time never goes backwards: an earlier `now` counts as the last.
    pub fn handle(&mut self, now: Time, event: Event, out: &mut Vec<Command>) {
        if now > self.now {
            self.now = now;
        }
        match event {
            Event::Tick => {}
            Event::TransferDone { id, result } => self.on_transfer_done(id, result, out),
            Event::JobStarted { job, site } => self.on_job_started(job, site),
            Event::JobEnded { job, site, result } => self.on_job_ended(job, site, result, out),
            Event::MemberEnded {
                job,
                site,
                member,
                status,
            } => self.on_member_ended(job, site, member, status),
            Event::ProcsEnded { job, site, exits } => self.on_procs_ended(job, site, exits),
            Event::JobKilled { job, site, killed } => self.on_job_killed(job, site, killed, out),
            Event::ScriptDone { job, kind, status } => self.on_script_done(job, kind, status, out),
            Event::FileEvicted { site, file } => self.forget_copy(file, site),
            Event::DagRemoved => self.remove_dag(out),
            Event::Halted => self.halt(0),
            Event::SubDagHalted { subdag } => self.halt(subdag + 1),
            Event::Fault { site, fault } => {
                self.grid.grid_changed = true;
                self.on_fault(site, fault, out);
            }
        }
        self.pump(out);
    }

    /// When the manager next needs a [`Event::Tick`], if ever (nothing else
    /// pending). Engines sleep until then or until another event comes.
    pub fn next_wakeup(&self) -> Option<Time> {
        let timer = self.timers.peek_time();
        let prescript = (self.dag.ready.any_open() && self.prescript_slot_free())
            .then_some(self.dag.next_prescript.max(self.now));
        match (timer, prescript) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Names the site selector in what a stall says (`--strategy`'s name).
    pub fn set_selector_name(&mut self, name: &str) {
        self.grid.selector_name = name.to_string();
    }

    /// Why the run can make no more progress, when it cannot (`stall`);
    /// `None` while it can.
    pub fn stalled(&self) -> Option<String> {
        let moving = self.dag.in_flight() || self.transfers_in_flight() > 0;
        if self.is_finished() || self.next_wakeup().is_some() || moving {
            return None;
        }
        let up = self.grid.any_execution_site_up(&self.sites);
        Some(self.dag.stall_words(up, || self.grid.selector_words()))
    }

    /// Ends what a stall leaves: each node stuck ([`NodeLife::stuck`])
    /// fails for good, saying why, and its descendants are blocked; a
    /// FINAL node may then run. False when the run is not stalled.
    pub fn give_up_if_stalled(&mut self, out: &mut Vec<Command>) -> bool {
        let Some(why) = self.stalled() else {
            return false;
        };
        let why = format!("the run could make no more progress: {why}");
        for job in self.dag.stuck() {
            if matches!(self.dag.state[job], JobState::Ready | JobState::Waiting) {
                self.fail_for_good(job, why.clone());
            }
        }
        self.pump(out);
        true
    }

    /// Whether no job can make progress any more (all done, failed or blocked).
    pub fn is_finished(&self) -> bool {
        let c = &self.dag.counts;
        c.done + c.failed + c.blocked == self.dag.state.len() && self.grid.finals.out == 0
    }

    /// Whether the DAG succeeded: every job ended well (of a sub-DAG, its
    /// node stands for its nodes: a POST script may rescue it; a SERVICE
    /// node's outcome is not the DAG's); with a
    /// `FINAL` node, the FINAL node did (DAGMan); after an `ABORT-DAG-ON`
    /// without one, whether the DAG's return value is 0. (`RETURN 0` makes
    /// DAGMan's status OK, which `Dag::DoneSuccess` takes as a success,
    /// but a FINAL node failing after it makes the status NODE_FAILED
    /// again: FINAL decides.)
    pub fn succeeded(&self) -> bool {
        match (self.dag.nodes.final_node, self.dag.dagmans.top().aborted) {
            (Some(f), _) => self.dag.state[f] == JobState::Done,
            (None, Some(a)) => a.dag_return == 0,
            (None, None) if self.dag.counts.done == self.dag.state.len() => true,
            (None, None) => self.dag.dagmans.top_level_done(&self.dag.state, &self.dag.nodes.service),
        }
    }

    /// DAGMan's exit value: 0 when the DAG succeeded; after an
    /// `ABORT-DAG-ON`, its `RETURN` (or the node's value), unless a FINAL
    /// node ran after it and failed, which makes it 1 (`EXIT_ERROR`), as
    /// it does for any other failure; a removal's `EXIT_ABORT`.
    pub fn dag_exit(&self) -> i32 {
        match (self.succeeded(), self.dag.dagmans.top().aborted) {
            (true, _) => 0,
            (false, Some(a)) if a.node.is_none() || self.dag.nodes.final_node.is_none() => a.dag_return,
            (false, _) => 1,
        }
    }

    /// Each failed run of a sub-DAG, in order, for its rescue DAG.
    pub fn subdag_runs_failed(&self) -> &[SubDagRun] {
        &self.dag.dagmans.runs_failed
    }

    /// Each run of a sub-DAG's DAGMan, in the order they started.
    pub fn subdag_spans(&self) -> &[SubDagSpan] {
        &self.dag.dagmans.spans
    }

    /// The `SUBDAG EXTERNAL` node of sub-DAG `k`.
    pub fn subdag_node(&self, k: usize) -> Option<JobId> {
        self.dag.nodes.subdags.get(k).map(|d| d.node)
    }

    /// The save points the run's nodes wrote as they started, in order.
    pub fn save_points(&self) -> &[SavePoint] {
        &self.dag.save_points
    }

    /// The `ABORT-DAG-ON` that stopped the DAG, if one did.
    pub fn dag_abort(&self) -> Option<DagAbort> {
        self.dag.dagmans.top().aborted
    }

    /// Jobs per state.
    pub fn counts(&self) -> StateCounts {
        self.dag.counts
    }

    /// A job's state.
    pub fn job_state(&self, job: JobId) -> JobState {
        self.dag.state[job]
    }

    /// Prescripts running now.
    pub fn prescripts_running(&self) -> usize {
        self.dag.prescripts_running
    }

    /// Transfers in flight now.
    pub fn transfers_in_flight(&self) -> usize {
        self.grid.transfers.in_flight()
    }

    /// A replica now at `site`, registered for everyone (an output, or a
    /// staged copy in its job's postscript).
    pub(super) fn register(&mut self, file: FileId, site: SiteId) {
        if let Some(jobs) = self.grid.replicas.register(file, site) {
            self.dag.requeue_ready(jobs);
        }
    }

    /// The replica catalogue.
    pub fn rls(&self) -> &Rls {
        self.grid.replicas.rls()
    }

    /// Every registered replica (file, site), by file.
    pub fn replicas(&self) -> Vec<(FileId, SiteId)> {
        (0..self.wf.files().len())
            .flat_map(|f| self.grid.replicas.holders(f).iter().map(move |&s| (f, s)))
            .collect()
    }

    /// The sites.
    pub fn sites(&self) -> &[SiteInfo] {
        &self.sites
    }

    /// The workflow the run started with: it never changes (see
    /// [`Manager::run_dag`]).
    pub fn workflow(&self) -> &Arc<Workflow> {
        self.wf.started()
    }

    /// The run's DAG: the workflow it started with and the sub-DAGs read
    /// as it went.
    pub fn run_dag(&self) -> &Arc<RunDag> {
        &self.wf
    }

    /// The settings.
    pub fn settings(&self) -> &ManagerSettings {
        &self.settings
    }

    /// The control records so far.
    pub fn records(&self) -> &Records {
        &self.records
    }

    /// The run's records and the replica catalogue, once the run is over
    /// (moved out, not copied).
    pub fn into_records_and_rls(self) -> (Records, Rls) {
        (self.records, self.grid.replicas.into_rls())
    }

    /// Latest time seen.
    pub fn now(&self) -> Time {
        self.now
    }

    fn prescript_slot_free(&self) -> bool {
        self.settings.maxpre == 0 || self.dag.prescripts_running < self.settings.maxpre
    }

    /// Turns on change tracking for [`take_changes`](Self::take_changes) (a
    /// control database writing records as they change).
    pub fn track_changes(&mut self, on: bool) {
        self.changes = on.then(Changes::default);
    }

    /// Jobs whose records changed and transfers started or ended since the
    /// last call (each listed once), if tracking is on.
    pub fn take_changes(&mut self) -> Option<Changes> {
        let c = self.changes.as_mut()?;
        for &j in &c.jobs {
            self.job_dirty[j] = false;
        }
        Some(std::mem::take(c))
    }

    /// `job`'s record changed, for the control database.
    fn mark_changed(&mut self, job: JobId) {
        mark_changed(&mut self.changes, &mut self.job_dirty, job);
    }

    /// Runs `rule` of the node life cycle against what it talks to
    /// ([`LifePort`]): the manager's other fields, borrowed beside it.
    fn life<R>(&mut self, rule: impl FnOnce(&mut NodeLife, &mut Port<'_>) -> R) -> R {
        let mut port = Port {
            now: self.now,
            wf: &self.wf,
            settings: &self.settings,
            records: &mut self.records,
            timers: &mut self.timers,
            grid: &mut self.grid,
            changes: &mut self.changes,
            job_dirty: &mut self.job_dirty,
        };
        rule(&mut self.dag, &mut port)
    }

    /// `job` moves to state `to` ([`NodeLife::set_state`]).
    fn set_state(&mut self, job: JobId, to: JobState) {
        self.life(|dag, port| dag.set_state(job, to, port));
    }

    /// `job`, its parents over, is ready ([`NodeLife::make_ready`]).
    fn make_ready(&mut self, job: JobId) {
        self.life(|dag, port| dag.make_ready(job, port));
    }

    /// Ends a node that runs no job or already ran
    /// ([`NodeLife::complete_without_running`]).
    fn complete_without_running(&mut self, job: JobId) {
        self.life(|dag, port| dag.complete_without_running(job, port));
    }

    fn schedule(&mut self, at: Time, timer: Timer) {
        self.timers.push(at, timer);
    }

    /// Once every other node of a DAGMan is over, the SERVICE nodes still
    /// going are removed and end done (`service.rs`; a sub-DAG's also wait
    /// for its FINAL node, `subdag.rs`).
    fn remove_services(&mut self, out: &mut Vec<Command>) {
        for j in self.dag.services_to_remove(self.grid.finals.out) {
            self.remove_service(j, "the DAG ended", out);
        }
        if self.dag.dagmans.list.iter().all(|d| d.services.is_empty()) {
            return;
        }
        for k in 0..self.dag.nodes.subdags.len() {
            for j in self.dag.subdag_services_due(k) {
                self.remove_service(j, "its sub-DAG ended", out);
            }
        }
    }

    /// SERVICE node `job` is removed as `why` says, and ends done.
    fn remove_service(&mut self, job: JobId, why: &str, out: &mut Vec<Command>) {
        self.withdraw(job, out);
        let why = format!("{why} (a SERVICE node is removed at its end)");
        self.record_removal(job, &why);
        self.set_state(job, JobState::Done);
    }

    /// Fires due timers, then starts the prescripts that MAXPRE and the interval
    /// allow.
    fn pump(&mut self, out: &mut Vec<Command>) {
        let mut due = std::mem::take(&mut self.grid.cleanup_due);
        for &file in &due {
            for &site in self.grid.replicas.holders(file) {
                self.grid.room.unkeep(&self.wf, file, site);
                out.push(Command::Cleanup { site, file });
            }
        }
        due.clear();
        self.grid.cleanup_due = due; // keeps its capacity
        let mut steps = Vec::new();
        for (job, site) in std::mem::take(&mut self.grid.finals.due) {
            self.grid.stage_out_finals(&self.wf, job, site, &mut steps);
            self.route(&mut steps, out);
        }
        let due = std::mem::take(&mut self.grid.cache.maintenance_due);
        if let Some(bound) = self.settings.cache_bound {
            for due in due {
                let view = maintenance::CacheView {
                    wf: &self.wf,
                    sites: &self.sites,
                    state: &self.dag.state,
                    now: self.now,
                    k: self.settings.replicas,
                };
                self.grid.maintain_cache(&view, due, bound, &mut steps);
                self.route(&mut steps, out);
            }
        }
        self.remove_services(out);
        while let Some(timer) = self.timers.pop_due(self.now) {
            match timer {
                Timer::RetryTransfer { job, attempt, file } => {
                    if self.grid.stage_again(job, attempt, file) {
                        self.launch(job, out);
                    }
                }
                Timer::Replan { job } => {
                    self.grid.room.stop_waiting(job);
                    if self.dag.state[job] == JobState::Ready {
                        self.dag.ready.push(job);
                    }
                }
                Timer::RetryStageOut { job, attempt, file } => {
                    self.grid.retry_stage_out(job, attempt, file, &mut steps);
                    self.route(&mut steps, out);
                }
                Timer::Monit => self.monit_queue(out),
                Timer::RoomCheck => {
                    let (wf, state) = (&self.wf, &self.dag.state);
                    match self.grid.check_room(wf, &self.sites, state, self.now) {
                        RoomCheck::Nothing => {}
                        RoomCheck::Again(at) => self.schedule(at, Timer::RoomCheck),
                        RoomCheck::Verdict(verdict) => {
                            for (job, why) in verdict {
                                match why {
                                    Some(why) => self.fail_for_good(job, why),
                                    None => self.dag.ready.push(job),
                                }
                            }
                        }
                    }
                }
                Timer::RetryFinal { job, file, from } => {
                    self.grid.retry_final(job, file, from, &mut steps);
                    self.route(&mut steps, out);
                }
                Timer::Arrival { submission } => self.arrive(submission, out),
                Timer::Release { job } => self.make_ready(job),
                Timer::Submit { job, attempt } => {
                    if self.dag.state[job] == JobState::Staging
                        && self.records.jobs[job].attempts.len() == attempt + 1
                    {
                        self.enter_queue(job, out);
                    }
                }
                Timer::Postscript { job, site } => self.node_done(job, site),
                Timer::Noticed { job, site } => {
                    if self.dag.state[job] == JobState::Running && self.grid.site_of[job] == site {
                        self.job_ended(job, site, None, out);
                    }
                }
                Timer::DagmanTick => self.dagman_tick(out),
                Timer::Negotiate => self.negotiate(out),
                Timer::Start { job, attempt } => {
                    if self.is_idle(job, attempt) {
                        self.send_to_site(job, out);
                    }
                }
                Timer::Script { job, kind } => {
                    let live = match kind {
                        ScriptKind::Pre => {
                            self.grid.staging[job].as_ref().is_some_and(|s| s.pre_running)
                        }
                        ScriptKind::Post => self.dag.state[job] == JobState::Running,
                    };
                    if live {
                        let status = self.dag.exited[job].unwrap_or(0);
                        self.run_script(job, kind, status, out);
                    }
                }
            }
        }
        self.submit_held(out);
        // With several workflows a placement moves the fair share: the held
        // jobs are offered again in the same round, so a slot one workflow
        // left to another is not left idle when the other had no more to
        // place. Each round places a job, so this ends.
        if std::mem::take(&mut self.grid.grid_changed) {
            for job in self.dag.held.drain(..) {
                self.dag.ready.push(job);
            }
        }
        self.offer_ready(out);
        while self.dag.submissions.list.len() > 1
            && !self.dag.held.is_empty()
            && std::mem::take(&mut self.grid.grid_changed)
        {
            for job in self.dag.held.drain(..) {
                self.dag.ready.push(job);
            }
            self.offer_ready(out);
        }
        // A halted DAGMan stops once drained: its FINAL node may then
        // start.
        // (One below another stops first: the one above is asked again.)
        while !self.dag.dagmans.halting.is_empty() {
            let drained = self.dag.drained_halts();
            if drained.is_empty() {
                break;
            }
            for &d in &drained {
                let halt = DagAbort::halt(self.now);
                match d {
                    0 => self.stop(halt, None, out),
                    _ => {
                        self.abort_subdag(d - 1, halt, out);
                        // Its lane, closed while it was halted, may give
                        // its FINAL.
                        self.dag.ready.reopen(d);
                    }
                }
            }
            self.offer_ready(out);
        }
    }

    /// Starts the prescripts of ready jobs that MAXPRE, the prescript
    /// interval and category throttles allow; the selector may hold a job.
    fn offer_ready(&mut self, out: &mut Vec<Command>) {
        let mut woken = std::mem::take(&mut self.grid.woken);
        self.grid.room.wake(&mut woken);
        for &job in &woken {
            if self.dag.state[job] == JobState::Ready {
                self.dag.ready.push(job);
            }
        }
        woken.clear();
        self.grid.woken = woken;
        while self.dag.ready.any_open()
            && self.prescript_slot_free()
            && self.now >= self.dag.next_prescript
        {
            let Some(job) = self.dag.pop_ready() else {
                break;
            };
            if self.dag.state[job] != JobState::Ready {
                continue; // completed while queued (a DONE node)
            }
            if self.dag.prescript_held(job) {
                continue; // held until a prescript of its sub-DAG ends
            }
            if !self.dag.throttle.admit(self.dag.nodes.category[job], job) {
                continue; // held until a job of its category leaves
            }
            self.dag.throttled[job] = self.dag.nodes.category[job].is_some();
            match self.start_prescript(job, out) {
                Prescript::Started => {
                    self.dag.next_prescript = self.now + self.settings.prescript_interval;
                }
                Prescript::Held => {
                    // Held by the selector: it waits without a prescript.
                    if self.dag.throttled[job] {
                        self.dag.unthrottle(job);
                    }
                    self.dag.held.push(job);
                }
                Prescript::WaitsForRoom => {
                    if self.dag.throttled[job] {
                        self.dag.unthrottle(job);
                    }
                }
            }
        }
    }

    /// Carries out, in order, what the placement asked (and empties
    /// `steps`): the rooms talk through these.
    fn route(&mut self, steps: &mut Vec<GridStep>, out: &mut Vec<Command>) {
        for step in steps.drain(..) {
            match step {
                GridStep::Send { job, attempt, file, from, to, kind, retry } => {
                    let current = || self.records.jobs[job].attempts.len().saturating_sub(1);
                    let attempt = attempt.unwrap_or_else(current);
                    self.start_flight((job, attempt), file, from, to, kind, retry, out);
                }
                GridStep::AfterBackoff(timer) => {
                    let at = self.now + self.settings.transfer_backoff;
                    self.schedule(at, timer);
                }
                GridStep::Requeue(jobs) => self.dag.requeue_ready(jobs),
                GridStep::Delete { file, site } => {
                    self.forget_copy(file, site);
                    out.push(Command::Delete { site, file });
                }
                GridStep::Home { job, site, delete } => self.ended_well(job, site, delete, out),
                GridStep::Lost { job, site, delete, reason } => {
                    let failure = JobFailure::Failed(reason);
                    self.failed_at_site(job, site, delete, failure, out);
                    self.retry(job, Retry::Counted);
                }
                GridStep::Unmemoized(job) => {
                    if self.dag.missing_parents[job] == 0 {
                        self.make_ready(job);
                    }
                }
                GridStep::Memoized(job) => self.memo_done(job),
            }
        }
    }

    /// Orders the transfer of `file` from `from` to `to` for `job`'s
    /// `attempt` and records it; returns its id.
    #[allow(clippy::too_many_arguments)]
    fn start_flight(
        &mut self,
        (job, attempt): (JobId, usize),
        file: FileId,
        from: SiteId,
        to: SiteId,
        kind: FlightKind,
        retry: bool,
        out: &mut Vec<Command>,
    ) -> TransferId {
        // A k-replication move is the cache's, not the attempt's.
        if kind != FlightKind::Replica
            && let Some(a) = self.records.jobs[job].attempts.get_mut(attempt)
        {
            a.transfers += 1;
        }
        let source = match kind {
            FlightKind::Memo { source } => source,
            _ => file,
        };
        // With caching, later prescripts wait for a staged copy on its way.
        let inbound =
            kind == FlightKind::Stage && self.grid.policy == ReplicaPolicy::Caching;
        let flight = Flight {
            job,
            attempt,
            file,
            from,
            to,
            kind,
        };
        let id = self.grid.transfers.start(flight, inbound);
        if let Some(c) = self.changes.as_mut() {
            c.transfers.push(id);
        }
        self.records.transfers.push(TransferRecord {
            id,
            job,
            file,
            from,
            to,
            start: self.now,
            end: None,
            bytes: 0,
            failure: None,
            retry,
        });
        out.push(Command::StartTransfer {
            id,
            job,
            file,
            source,
            from,
            to,
        });
        id
    }

    /// The copy of `file` at `site` is gone (evicted, deleted): forgotten
    /// and recorded.
    pub(super) fn forget_copy(&mut self, file: FileId, site: SiteId) {
        self.grid.replicas.forget(file, site);
        self.records.evictions.push(EvictionRecord {
            time: self.now,
            site,
            file,
        });
    }

    fn is_current(&self, job: JobId, attempt: usize) -> bool {
        self.dag.state[job] == JobState::Staging && self.records.jobs[job].attempts.len() == attempt + 1
    }
}

/// Each job's submit machine (see `Manager::home`): jobs come parents first.
fn submit_machines(wf: &Workflow, placement: &[(FileId, SiteId)]) -> Vec<SiteId> {
    let mut placed = vec![None; wf.files.len()];
    for &(f, s) in placement.iter().rev() {
        placed[f] = Some(s);
    }
    let fallback = placement.first().map_or(0, |&(_, s)| s);
    let mut home: Vec<SiteId> = Vec::with_capacity(wf.jobs.len());
    for j in &wf.jobs {
        let h = j
            .inputs
            .iter()
            .find_map(|&f| placed[f])
            .or_else(|| j.parents.first().map(|&p| home[p]))
            .unwrap_or(fallback);
        home.push(h);
    }
    home
}

// A sub-DAG whose `.dag` its node's PRE script writes (HTCondor's test
// `job_dagman_pre_subdag`): DAGMan reads a sub-DAG's file only when it
// submits the node's job, after the PRE script has run. A deferred
// sub-DAG ([`SubDag::deferred`]) has no nodes until then. Once its entry's
// PRE script has run, the manager asks the engine to read the file
// ([`Command::ReadSubDag`]), and [`Manager::graft`] adds its nodes to the
// run's DAG ([`RunDag`], the workflow the run started with unchanged) as
// jobs after the DAG's: its roots wait for the entry, its node for its
// leaves, and it runs as any sub-DAG does (`subdag.rs`). A file that
// cannot be read is a sub-DAG whose DAGMan exits 1 at once, as
// `condor_dagman` does: the node's POST script sees `$RETURN` 1, and its
// `RETRY` runs the PRE script again and reads the file again.
impl Manager {
    /// The no-op `job` ended its PRE script: if it is the entry of a
    /// deferred sub-DAG, its DAG is read now and the entry waits for
    /// [`Manager::graft`]. Returns whether it was.
    pub(super) fn read_deferred(&mut self, job: JobId, out: &mut Vec<Command>) -> bool {
        let Some(node) = self.dag.node_of_entry(job) else {
            return false;
        };
        let Some(k) = self.dag.dagmans.of_node(node) else {
            return false;
        };
        if !self.dag.nodes.subdags[k].deferred {
            return false;
        }
        out.push(Command::ReadSubDag { subdag: k, node });
        true
    }

    /// The engine's answer to [`Command::ReadSubDag`] for sub-DAG `subdag`
    /// at nominal time `now`: its DAG, or why it could not be read (the
    /// sub-DAG then exits 1 without running). The sub-DAG's entry then ends
    /// and its DAG starts. Returns why its nodes were not added, if they
    /// were not (also when the read is stale: the DAG stopped meanwhile).
    pub fn graft(
        &mut self,
        now: Time,
        subdag: usize,
        graft: Result<Graft, String>,
        out: &mut Vec<Command>,
    ) -> Result<(), String> {
        if now > self.now {
            self.now = now;
        }
        let k = subdag;
        let entry = (self.dag.nodes.subdags.get(k))
            .filter(|d| d.deferred)
            .and_then(|d| d.entry)
            .ok_or_else(|| format!("sub-DAG #{k} is not one read as the run goes"))?;
        if self.dag.state[entry] != JobState::Running {
            return Err("the DAG stopped before its sub-DAG was read".into());
        }
        let read = graft.and_then(|g| self.add_graft(k, g));
        if read.is_err() {
            // Its DAGMan exits 1 before running a node.
            self.dag.dagmans.unreadable(k);
        }
        let site = self.grid.site_of[entry];
        self.job_ended(entry, site, None, out);
        self.pump(out);
        read
    }

    /// Adds `g`'s nodes to the run as sub-DAG `k`'s.
    fn add_graft(&mut self, k: usize, mut g: Graft) -> Result<(), String> {
        if self.grid.memo.is_some() {
            return Err("a sub-DAG read as the run goes cannot be memoized".into());
        }
        let d = &self.dag.nodes.subdags[k];
        let (node, entry) = (d.node, d.entry.ok_or("a deferred sub-DAG has an entry")?);
        self.dag.graft_fits(&g)?;
        let (roots, leaves) = g.ends();
        let m = g.jobs.len();
        let longest = g.jobs.iter().map(|j| j.runtime).fold(0.0, f64::max);
        // The run's DAG grows in place where the engine holds no other copy.
        let wf = Arc::make_mut(&mut self.wf);
        let new = wf.graft(std::mem::take(&mut g.jobs)).map_err(|e| e.to_string())?;
        let n = new.start;
        for &r in &roots {
            wf.add_edge(entry, n + r);
        }
        for &l in &leaves {
            wf.add_edge(n + l, node);
        }
        self.grow(m, node);
        let horizon = stall_horizon(&self.settings, &self.sites, longest);
        self.grid.stall.horizon = self.grid.stall.horizon.max(horizon);
        let top_depth_first = self.settings.submit_depth_first;
        (self.dag).graft(k, &g, new.clone(), leaves.len(), &self.wf, top_depth_first);
        // DONE nodes (of the sub-DAG's rescue) are done at once, parents
        // first.
        for j in new {
            if self.dag.nodes.done[j] && self.dag.state[j] == JobState::Waiting {
                self.complete_without_running(j);
            }
        }
        Ok(())
    }

    /// Every per-job record grows by `m` waiting jobs, of `node`'s
    /// submission and submit machine: each room's, then the records.
    fn grow(&mut self, m: usize, node: JobId) {
        let n = self.dag.state.len() + m;
        self.dag.grow(n, node);
        self.grid.grow(n, node);
        self.records.jobs.resize(n, JobRecord::default());
        let first = self.job_dirty.len();
        self.job_dirty.resize(n, false);
        if self.changes.is_some() {
            for j in first..n {
                self.mark_changed(j);
            }
        }
    }
}
