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
//! Outputs are registered where their job wrote them and stay there: they
//! are the origin copy of derived data, which DESIGN.md says is never evicted.
//!
//! Failures are never dropped: a failed transfer is retried from the same source
//! up to `transfer_retries` times after `transfer_backoff`, then from another
//! replica; a prescript that cannot stage (no replica left, no room) sends the
//! job back to be planned again; a job that fails at its site is re-planned up to
//! `max_retries` times, after which it fails and its descendants cannot run
//! (DAGMan's rescue semantics).

use super::events::EventQueue;
use super::nodes::{NodeSettings, ReadyQueue, Throttle};
use crate::core::ScriptKind;
use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use super::records::{Attempt, EvictionRecord, JobRecord, Outcome, Records, TransferRecord};
use super::seams::{GridView, SiteSelector};
use super::window::IdWindow;
use super::{
    Command, Event, FileId, JobFailure, JobId, SiteId, SiteInfo, Time, TransferFailure, TransferId,
    Workflow, rls::Rls,
};

/// What the postscript does with staged inputs (seed 000 §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplicaPolicy {
    /// Staged copies are private to their job and deleted after it (Random).
    Delete,
    /// Staged copies stay and are registered for other jobs (RandomCaching).
    Caching,
}

/// The manager's tunables, in nominal seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagerSettings {
    /// Most prescripts running at once; 0 means no limit.
    pub maxpre: usize,
    /// Least time between two prescript starts.
    pub prescript_interval: f64,
    /// Transfers one prescript runs at once.
    pub prescript_streams: usize,
    /// Times a job that failed at its site is planned again.
    pub max_retries: u32,
    /// Times a failed transfer is retried from the same source.
    pub transfer_retries: u32,
    /// Wait before a transfer retry.
    pub transfer_backoff: f64,
    /// Wait before planning again a job whose site had no room.
    pub replan_backoff: f64,
    /// Times a job may be planned again for want of room or a vanished input
    /// (not its own fault) before it fails.
    pub max_replans: u32,
    /// What happens to staged inputs after the job.
    pub replica_policy: ReplicaPolicy,
    /// MonitQueue: how often queues are checked (0: MonitQueue off).
    pub monit_interval: f64,
    /// MonitQueue: longest a job may wait in a site queue before it is killed
    /// there and planned again elsewhere.
    pub max_idle: f64,
    /// Per-job overheads of a real WMS (nominal s): from its last parent's
    /// end to its release as ready (DAGMan's release latency)…
    pub release_overhead: f64,
    /// …from its staged inputs to its arrival in the site queue (submission
    /// through the batch system)…
    pub submit_overhead: f64,
    /// …and from its end at the site to its outputs registered and its
    /// children released (the postscript).
    pub postscript_overhead: f64,
}

impl Default for ManagerSettings {
    fn default() -> Self {
        ManagerSettings {
            maxpre: 20,
            prescript_interval: 1.0,
            prescript_streams: 1,
            max_retries: 3,
            transfer_retries: 3,
            transfer_backoff: 2.0,
            replan_backoff: 10.0,
            max_replans: 100,
            replica_policy: ReplicaPolicy::Caching,
            monit_interval: 0.0,
            max_idle: f64::INFINITY,
            release_overhead: 0.0,
            submit_overhead: 0.0,
            postscript_overhead: 0.0,
        }
    }
}

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Some parent has not ended.
    Waiting,
    /// Waiting for a prescript slot (or a back-off).
    Ready,
    /// Its prescript is staging inputs.
    Staging,
    /// In a site's FIFO queue.
    Queued,
    /// Running on a site.
    Running,
    /// Ended and post-processed.
    Done,
    /// Failed for good.
    Failed,
    /// An ancestor failed for good; it will never run.
    Blocked,
}

/// Counts of jobs per state, for progress and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct StateCounts {
    /// Parents pending.
    pub waiting: usize,
    /// Ready, not yet in a prescript.
    pub ready: usize,
    /// In a prescript.
    pub staging: usize,
    /// Queued at a site.
    pub queued: usize,
    /// Running.
    pub running: usize,
    /// Done.
    pub done: usize,
    /// Failed for good.
    pub failed: usize,
    /// Never to run.
    pub blocked: usize,
}

#[derive(Debug)]
struct StageTry {
    file: FileId,
    tries: u32,
    source: Option<SiteId>,
    excluded: Vec<SiteId>,
}

#[derive(Debug)]
struct Staging {
    site: SiteId,
    pending: VecDeque<FileId>,
    in_flight: usize,
    /// Inputs it waits for that another prescript is bringing to the site.
    waiting: usize,
    staged: Vec<FileId>,
    tries: Vec<StageTry>,
    /// The node's PRE script is running: nothing is staged until it ends.
    pre_running: bool,
}

/// A transfer in flight; its id is also its index in the transfer records.
#[derive(Debug)]
struct Flight {
    job: JobId,
    attempt: usize,
    file: FileId,
    from: SiteId,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timer {
    RetryTransfer {
        job: JobId,
        attempt: usize,
        file: FileId,
    },
    Replan {
        job: JobId,
    },
    Monit,
    /// `release_overhead` elapsed: the job is ready.
    Release {
        job: JobId,
    },
    /// `submit_overhead` elapsed: the job enters its site's queue.
    Submit {
        job: JobId,
        attempt: usize,
    },
    /// `postscript_overhead` elapsed: the job's node is over.
    Postscript {
        job: JobId,
        site: SiteId,
    },
    /// `SCRIPT DEFER` elapsed: run the script again.
    Script {
        job: JobId,
        kind: ScriptKind,
    },
}

/// What changed in the control records since the last look.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Changes {
    /// Jobs whose state (and so attempt record) changed.
    pub jobs: Vec<JobId>,
    /// Transfers started or ended (an id may appear twice).
    pub transfers: Vec<TransferId>,
}

/// The workflow manager state machine. See the module docs.
pub struct Manager {
    wf: Arc<Workflow>,
    sites: Vec<SiteInfo>,
    settings: ManagerSettings,
    selector: Box<dyn SiteSelector>,
    rls: Rls,
    now: Time,
    state: Vec<JobState>,
    missing_parents: Vec<usize>,
    site_of: Vec<SiteId>,
    failures: Vec<u32>,
    replans: Vec<u32>,
    room_waits: Vec<u32>,
    avoid: HashMap<JobId, Vec<SiteId>>,
    /// Caching: the transfer bringing a file to a site, while it is in flight.
    inbound: HashMap<(FileId, SiteId), TransferId>,
    /// Caching: prescripts (job, attempt) waiting for an inbound transfer.
    waiters: HashMap<(FileId, SiteId), Vec<(JobId, usize)>>,
    /// Per job: ordering children from the selector (not workflow edges).
    ordering: Vec<Vec<JobId>>,
    /// Per job: its prescript's staging state while it stages.
    staging: Vec<Option<Staging>>,
    /// Per job: inputs its last prescript transferred, for the postscript.
    staged: Vec<Vec<FileId>>,
    ready: ReadyQueue,
    /// DAGMan's node settings (RETRY, PRIORITY, CATEGORY, NOOP, DONE).
    nodes: NodeSettings,
    /// MAXJOBS per category.
    throttle: Throttle,
    /// Per job: counted in flight by the throttle.
    throttled: Vec<bool>,
    /// POST scripts running, and the jobs whose POST waits for a slot.
    posts_running: usize,
    posts_waiting: VecDeque<JobId>,
    /// `DAGMAN_MAX_JOBS_IDLE`: staged jobs waiting for their submission.
    idle_waiting: VecDeque<JobId>,
    next_prescript: Time,
    prescripts_running: usize,
    /// Transfers in flight, by id.
    flights: IdWindow<Flight>,
    next_transfer: TransferId,
    serving: Vec<usize>,
    active: Vec<usize>,
    timers: EventQueue<Timer>,
    counts: StateCounts,
    records: Records,
    last_ended: Option<SiteId>,
    /// MonitQueue: queued jobs (submitted, job, attempt) in submission order.
    idle: VecDeque<(Time, JobId, usize)>,
    /// Per job: a Kill is out and unanswered.
    killing: Vec<bool>,
    /// Per job: the site its next attempt must avoid (where it was killed).
    avoid_once: Vec<Option<SiteId>>,
    /// Per job: nominal bytes of its inputs.
    input_bytes: Vec<u64>,
    /// Change tracking for a control database, when on.
    changes: Option<Changes>,
    job_dirty: Vec<bool>,
    /// Reused buffer of eligible sites.
    eligible: Vec<SiteId>,
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
        let mut rls = Rls::new(workflow.files.len());
        for &(f, s) in placement {
            rls.register(f, s);
        }
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
        let mut state = vec![JobState::Waiting; n];
        let mut records = Records {
            jobs: vec![JobRecord::default(); n],
            transfers: Vec::new(),
            sites: vec![Default::default(); sites.len()],
            evictions: Vec::new(),
        };
        let mut ready = ReadyQueue::fifo();
        for j in 0..n {
            if missing_parents[j] == 0 {
                state[j] = JobState::Ready;
                records.jobs[j].ready = Some(0.0);
                ready.push(j);
            }
        }
        let counts = StateCounts {
            waiting: n - ready.len(),
            ready: ready.len(),
            ..Default::default()
        };
        let m = sites.len();
        let input_bytes = (0..n).map(|j| workflow.input_bytes(j)).collect();
        let mut manager = Manager {
            wf: workflow,
            sites,
            settings,
            selector,
            rls,
            now: 0.0,
            state,
            missing_parents,
            site_of: vec![0; n],
            failures: vec![0; n],
            replans: vec![0; n],
            room_waits: vec![0; n],
            avoid: HashMap::default(),
            ordering,
            inbound: HashMap::default(),
            waiters: HashMap::default(),
            staging: (0..n).map(|_| None).collect(),
            staged: vec![Vec::new(); n],
            ready,
            nodes: NodeSettings::none(n),
            throttle: Throttle::default(),
            throttled: vec![false; n],
            posts_running: 0,
            posts_waiting: VecDeque::new(),
            idle_waiting: VecDeque::new(),
            next_prescript: 0.0,
            prescripts_running: 0,
            flights: IdWindow::default(),
            next_transfer: 0,
            serving: vec![0; m],
            active: vec![0; m],
            timers: EventQueue::new(),
            counts,
            records,
            last_ended: None,
            idle: VecDeque::new(),
            killing: vec![false; n],
            avoid_once: vec![None; n],
            input_bytes,
            changes: None,
            job_dirty: vec![false; n],
            eligible: Vec::new(),
        };
        manager.start_monit();
        manager
    }

    /// Applies DAGMan's node settings; call before the first event. `DONE`
    /// nodes are complete at once (their children released), priorities order
    /// the ready jobs, categories get their `MAXJOBS`.
    pub fn set_nodes(&mut self, nodes: NodeSettings) {
        self.ready.set_priorities(nodes.priority.clone());
        self.throttle = Throttle::new(nodes.category_limits.clone());
        let done: Vec<JobId> = (0..nodes.done.len()).filter(|&j| nodes.done[j]).collect();
        self.nodes = nodes;
        // Jobs are in topological order: a DONE node's DONE parents come first.
        for j in done {
            if matches!(self.state[j], JobState::Ready | JobState::Waiting) {
                self.complete_without_running(j);
            }
        }
    }

    /// Ends a node that runs no job (`NOOP`) or already ran (`DONE`).
    fn complete_without_running(&mut self, job: JobId) {
        self.set_state(job, JobState::Done);
        self.records.jobs[job].ready.get_or_insert(self.now);
        self.release_children(job);
    }

    /// `job` is over: its workflow and ordering children lose a parent.
    fn release_children(&mut self, job: JobId) {
        let wf = self.wf.clone();
        for &c in &wf.children[job] {
            self.release_child(c);
        }
        for i in 0..self.ordering[job].len() {
            let c = self.ordering[job][i];
            self.release_child(c);
        }
    }

    /// Most jobs of each category that were ever in flight at once.
    pub fn category_peaks(&self) -> &[usize] {
        &self.throttle.peak
    }

    /// Starts MonitQueue's periodic check if it is on.
    fn start_monit(&mut self) {
        if self.settings.monit_interval > 0.0 && self.settings.max_idle.is_finite() {
            let at = self.settings.monit_interval;
            self.schedule(at, Timer::Monit);
        }
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
            Event::JobKilled { job, site, killed } => self.on_job_killed(job, site, killed, out),
            Event::ScriptDone { job, kind, status } => self.on_script_done(job, kind, status, out),
            Event::FileEvicted { site, file } => {
                self.rls.unregister(file, site);
                self.records.evictions.push(EvictionRecord {
                    time: self.now,
                    site,
                    file,
                });
            }
        }
        self.pump(out);
    }

    /// When the manager next needs a [`Event::Tick`], if ever (nothing else
    /// pending). Engines sleep until then or until another event comes.
    pub fn next_wakeup(&self) -> Option<Time> {
        let timer = self.timers.peek_time();
        let prescript = (!self.ready.is_empty() && self.prescript_slot_free())
            .then_some(self.next_prescript.max(self.now));
        match (timer, prescript) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether no job can make progress any more (all done, failed or blocked).
    pub fn is_finished(&self) -> bool {
        let c = &self.counts;
        c.done + c.failed + c.blocked == self.state.len()
    }

    /// Whether every job ended successfully.
    pub fn succeeded(&self) -> bool {
        self.counts.done == self.state.len()
    }

    /// Jobs per state.
    pub fn counts(&self) -> StateCounts {
        self.counts
    }
    /// A job's state.
    pub fn job_state(&self, job: JobId) -> JobState {
        self.state[job]
    }
    /// Prescripts running now.
    pub fn prescripts_running(&self) -> usize {
        self.prescripts_running
    }
    /// Transfers in flight now.
    pub fn transfers_in_flight(&self) -> usize {
        self.flights.len()
    }
    /// The replica catalogue.
    pub fn rls(&self) -> &Rls {
        &self.rls
    }
    /// The sites.
    pub fn sites(&self) -> &[SiteInfo] {
        &self.sites
    }
    /// The workflow.
    pub fn workflow(&self) -> &Arc<Workflow> {
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
    /// Takes the control records out at the end of a run.
    pub fn into_records(self) -> Records {
        self.records
    }
    /// Latest time seen.
    pub fn now(&self) -> Time {
        self.now
    }

    fn prescript_slot_free(&self) -> bool {
        self.settings.maxpre == 0 || self.prescripts_running < self.settings.maxpre
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

    fn set_state(&mut self, job: JobId, to: JobState) {
        if let Some(c) = self.changes.as_mut()
            && !self.job_dirty[job]
        {
            self.job_dirty[job] = true;
            c.jobs.push(job);
        }
        let from = std::mem::replace(&mut self.state[job], to);
        *self.count_mut(from) -= 1;
        *self.count_mut(to) += 1;
        let flying = matches!(to, JobState::Staging | JobState::Queued | JobState::Running);
        if self.throttled[job] && !flying {
            self.throttled[job] = false;
            if let Some(held) = self.throttle.leave(self.nodes.category[job]) {
                self.ready.push(held);
            }
        }
    }

    fn count_mut(&mut self, s: JobState) -> &mut usize {
        let c = &mut self.counts;
        match s {
            JobState::Waiting => &mut c.waiting,
            JobState::Ready => &mut c.ready,
            JobState::Staging => &mut c.staging,
            JobState::Queued => &mut c.queued,
            JobState::Running => &mut c.running,
            JobState::Done => &mut c.done,
            JobState::Failed => &mut c.failed,
            JobState::Blocked => &mut c.blocked,
        }
    }

    fn schedule(&mut self, at: Time, timer: Timer) {
        self.timers.push(at, timer);
    }

    /// Fires due timers, then starts the prescripts that MAXPRE and the interval
    /// allow.
    fn pump(&mut self, out: &mut Vec<Command>) {
        while let Some(timer) = self.timers.pop_due(self.now) {
            match timer {
                Timer::RetryTransfer { job, attempt, file } => {
                    if self.is_current(job, attempt)
                        && let Some(st) = self.staging[job].as_mut()
                    {
                        st.pending.push_front(file);
                        self.launch(job, out);
                    }
                }
                Timer::Replan { job } => {
                    if self.state[job] == JobState::Ready {
                        self.ready.push(job);
                    }
                }
                Timer::Monit => self.monit_queue(out),
                Timer::Release { job } => self.make_ready(job),
                Timer::Submit { job, attempt } => {
                    if self.state[job] == JobState::Staging
                        && self.records.jobs[job].attempts.len() == attempt + 1
                    {
                        self.enter_queue(job, out);
                    }
                }
                Timer::Postscript { job, site } => self.node_done(job, site),
                Timer::Script { job, kind } => {
                    let live = match kind {
                        ScriptKind::Pre => {
                            self.staging[job].as_ref().is_some_and(|s| s.pre_running)
                        }
                        ScriptKind::Post => self.state[job] == JobState::Running,
                    };
                    if live {
                        self.run_script(job, kind, out);
                    }
                }
            }
        }
        // DAGMAN_MAX_JOBS_IDLE: submissions held while too many wait.
        while self.nodes.max_jobs_idle > 0 && self.counts.queued < self.nodes.max_jobs_idle {
            let Some(job) = self.idle_waiting.pop_front() else {
                break;
            };
            if self.state[job] == JobState::Staging {
                self.enter_queue(job, out);
            }
        }
        while !self.ready.is_empty()
            && self.prescript_slot_free()
            && self.now >= self.next_prescript
        {
            let Some(job) = self.ready.pop() else {
                break;
            };
            if self.state[job] != JobState::Ready {
                continue; // completed while queued (a DONE node)
            }
            if !self.throttle.admit(self.nodes.category[job], job) {
                continue; // held until a job of its category leaves
            }
            self.throttled[job] = self.nodes.category[job].is_some();
            self.next_prescript = self.now + self.settings.prescript_interval;
            self.start_prescript(job, out);
        }
    }

    fn is_current(&self, job: JobId, attempt: usize) -> bool {
        self.state[job] == JobState::Staging && self.records.jobs[job].attempts.len() == attempt + 1
    }

    fn start_prescript(&mut self, job: JobId, out: &mut Vec<Command>) {
        let avoid = self.avoid.get(&job);
        let need = self.input_bytes[job];
        let mut eligible = std::mem::take(&mut self.eligible);
        eligible.clear();
        eligible.extend((0..self.sites.len()).filter(|&s| {
            let site = &self.sites[s];
            site.cpus > 0 && site.disk >= need && !avoid.is_some_and(|a| a.contains(&s))
        }));
        if eligible.is_empty() {
            self.eligible = eligible;
            self.fail_for_good(job);
            return;
        }
        // Re-planned by MonitQueue: anywhere but the site that killed it, if
        // there is anywhere else.
        if let Some(killer) = self.avoid_once[job].take()
            && eligible.len() > 1
        {
            eligible.retain(|&s| s != killer);
        }
        let view = GridView {
            workflow: &self.wf,
            sites: &self.sites,
            rls: &self.rls,
            active: &self.active,
            counters: &self.records.sites,
            last_ended: self.last_ended,
        };
        let site = self.selector.select(job, &view, &eligible);
        debug_assert!(
            eligible.contains(&site),
            "selector chose an ineligible site"
        );
        self.site_of[job] = site;
        self.set_state(job, JobState::Staging);
        self.prescripts_running += 1;
        self.records.jobs[job].attempts.push(Attempt {
            site,
            prescript: self.now,
            submitted: None,
            started: None,
            ended: None,
            outcome: Outcome::Pending,
            transfers: 0,
        });
        out.push(Command::Pin { job, site });
        let mut pending = VecDeque::new();
        self.records.sites[site].inputs_planned += self.wf.jobs[job].inputs.len() as u64;
        for &f in &self.wf.jobs[job].inputs {
            if self.rls.has(f, site) {
                self.records.sites[site].cache_hits += 1;
            } else if !pending.contains(&f) {
                pending.push_back(f);
            }
        }
        self.staging[job] = Some(Staging {
            site,
            pending,
            in_flight: 0,
            waiting: 0,
            staged: Vec::new(),
            tries: Vec::new(),
            pre_running: self.nodes.pre[job],
        });
        if self.nodes.pre[job] {
            self.run_script(job, ScriptKind::Pre, out);
            return;
        }
        self.launch(job, out);
    }

    /// Orders the node's script at its site; POST scripts beyond
    /// `DAGMAN_MAX_POST_SCRIPTS` wait for one to end.
    fn run_script(&mut self, job: JobId, kind: ScriptKind, out: &mut Vec<Command>) {
        if kind == ScriptKind::Post {
            if self.nodes.max_post > 0 && self.posts_running >= self.nodes.max_post {
                self.posts_waiting.push_back(job);
                return;
            }
            self.posts_running += 1;
        }
        out.push(Command::RunScript {
            job,
            site: self.site_of[job],
            kind,
            retry: self.failures[job],
            status: 0,
        });
    }

    /// Starts as many of the job's pending transfers as its prescript may run;
    /// submits the job when nothing is left to stage.
    fn launch(&mut self, job: JobId, out: &mut Vec<Command>) {
        let streams = self.settings.prescript_streams.max(1);
        loop {
            let Some(st) = self.staging[job].as_mut() else {
                return;
            };
            if st.pre_running {
                return;
            }
            if st.pending.is_empty() && st.in_flight == 0 && st.waiting == 0 {
                self.submit(job, out);
                return;
            }
            if st.in_flight >= streams {
                return;
            }
            let Some(file) = st.pending.pop_front() else {
                return;
            };
            let to = st.site;
            if self.settings.replica_policy == ReplicaPolicy::Caching {
                // With caching a copy at the site serves every job: use one
                // that arrived meanwhile, or wait for one on its way.
                if self.rls.has(file, to) {
                    continue;
                }
                if self.inbound.contains_key(&(file, to)) {
                    let attempt = self.records.jobs[job].attempts.len() - 1;
                    self.waiters
                        .entry((file, to))
                        .or_default()
                        .push((job, attempt));
                    st.waiting += 1;
                    continue;
                }
            }
            let earlier = st.tries.iter().find(|t| t.file == file);
            let retry = earlier.is_some();
            let (preferred, excluded): (Option<SiteId>, &[SiteId]) = match earlier {
                Some(t) => (t.source, &t.excluded),
                None => (None, &[]),
            };
            let holders = self.rls.holders(file);
            let source = preferred.filter(|s| holders.contains(s)).or_else(|| {
                holders
                    .iter()
                    .copied()
                    .filter(|&s| s != to && !excluded.contains(&s))
                    .min_by_key(|&s| (self.serving[s], s))
            });
            let Some(from) = source else {
                let name = &self.wf.files[file].name;
                let reason = format!("no usable replica of `{name}`");
                self.abort_staging(job, reason, Retry::Counted, out);
                return;
            };
            st.in_flight += 1;
            let id = self.next_transfer;
            self.next_transfer += 1;
            if self.settings.replica_policy == ReplicaPolicy::Caching {
                self.inbound.insert((file, to), id);
            }
            self.serving[from] += 1;
            let attempt = self.records.jobs[job].attempts.len() - 1;
            self.records.jobs[job].attempts[attempt].transfers += 1;
            self.flights.insert(
                id,
                Flight {
                    job,
                    attempt,
                    file,
                    from,
                },
            );
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
                from,
                to,
            });
        }
    }

    /// The prescript is over: the job goes to its site's queue, after the
    /// submit overhead if there is one.
    fn submit(&mut self, job: JobId, out: &mut Vec<Command>) {
        let Some(st) = self.staging[job].take() else {
            return;
        };
        self.site_of[job] = st.site;
        self.staged[job] = st.staged;
        self.prescripts_running -= 1;
        if self.nodes.noop[job] {
            // DAGMan's NOOP: no job reaches the site; the POST script (if
            // any) still runs.
            self.set_state(job, JobState::Running);
            self.job_succeeded(job, st.site, out);
            return;
        }
        if self.settings.submit_overhead > 0.0 {
            let attempt = self.records.jobs[job].attempts.len() - 1;
            let at = self.now + self.settings.submit_overhead;
            self.schedule(at, Timer::Submit { job, attempt });
        } else {
            self.enter_queue(job, out);
        }
    }

    fn enter_queue(&mut self, job: JobId, out: &mut Vec<Command>) {
        if self.nodes.max_jobs_idle > 0 && self.counts.queued >= self.nodes.max_jobs_idle {
            self.idle_waiting.push_back(job);
            return;
        }
        let site = self.site_of[job];
        self.set_state(job, JobState::Queued);
        self.active[site] += 1;
        self.records.sites[site].submitted += 1;
        if self.settings.monit_interval > 0.0 {
            let attempt = self.records.jobs[job].attempts.len() - 1;
            self.idle.push_back((self.now, job, attempt));
        }
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.submitted = Some(self.now);
        }
        out.push(Command::Submit { job, site });
    }

    fn on_transfer_done(
        &mut self,
        id: TransferId,
        result: Result<u64, TransferFailure>,
        out: &mut Vec<Command>,
    ) {
        let Some(fl) = self.flights.take(id) else {
            return;
        };
        self.serving[fl.from] -= 1;
        let key = (fl.file, self.records.transfers[id as usize].to);
        if self.inbound.get(&key) == Some(&id) {
            self.inbound.remove(&key);
        }
        if result.is_ok() && self.settings.replica_policy == ReplicaPolicy::Caching {
            // A verified copy at the site: every later prescript may use it.
            self.rls.register(key.0, key.1);
        }
        if let Some(c) = self.changes.as_mut() {
            c.transfers.push(id);
        }
        let rec = &mut self.records.transfers[id as usize];
        rec.end = Some(self.now);
        match &result {
            Ok(bytes) => {
                rec.bytes = *bytes;
                let to = rec.to;
                self.records.sites[to].transfers_in += 1;
                self.records.sites[to].bytes_in += bytes;
                self.records.sites[fl.from].transfers_out += 1;
            }
            Err(e) => rec.failure = Some(e.clone()),
        }
        self.wake_waiters(key, result.is_ok(), out);
        if !self.is_current(fl.job, fl.attempt) {
            return; // the attempt was aborted; its stragglers only count
        }
        let job = fl.job;
        let Some(st) = self.staging[job].as_mut() else {
            return;
        };
        st.in_flight -= 1;
        match result {
            Ok(_) => {
                st.staged.push(fl.file);
                self.launch(job, out);
            }
            Err(TransferFailure::NoSpace { never }) => {
                let site = st.site;
                if never {
                    self.avoid.entry(job).or_default().push(site);
                    let reason = format!("`{}` can never fit", self.wf.files[fl.file].name);
                    self.abort_staging(job, reason, Retry::Now, out);
                } else {
                    let reason = "no room at the site now".to_string();
                    self.abort_staging(job, reason, Retry::Later, out);
                }
            }
            Err(_) => {
                let i = match st.tries.iter().position(|t| t.file == fl.file) {
                    Some(i) => i,
                    None => {
                        st.tries.push(StageTry {
                            file: fl.file,
                            tries: 0,
                            source: None,
                            excluded: Vec::new(),
                        });
                        st.tries.len() - 1
                    }
                };
                let t = &mut st.tries[i];
                t.tries += 1;
                if t.tries > self.settings.transfer_retries {
                    t.excluded.push(fl.from);
                    t.tries = 0;
                    t.source = None;
                } else {
                    t.source = Some(fl.from);
                }
                let at = self.now + self.settings.transfer_backoff;
                let timer = Timer::RetryTransfer {
                    job,
                    attempt: fl.attempt,
                    file: fl.file,
                };
                self.schedule(at, timer);
            }
        }
    }

    /// A transfer of `key.0` to `key.1` ended: the prescripts waiting for it
    /// go on (after a failure, each stages the file itself).
    fn wake_waiters(&mut self, key: (FileId, SiteId), ok: bool, out: &mut Vec<Command>) {
        let Some(waiters) = self.waiters.remove(&key) else {
            return;
        };
        for (job, attempt) in waiters {
            if !self.is_current(job, attempt) {
                continue;
            }
            if let Some(st) = self.staging[job].as_mut() {
                st.waiting -= 1;
                if !ok {
                    st.pending.push_front(key.0);
                }
            }
            self.launch(job, out);
        }
    }

    /// Ends a prescript that cannot finish; the job goes back to be planned.
    fn abort_staging(&mut self, job: JobId, reason: String, retry: Retry, out: &mut Vec<Command>) {
        let Some(st) = self.staging[job].take() else {
            return;
        };
        self.prescripts_running -= 1;
        let delete = self.postscript_replicas(st.site, &st.staged);
        out.push(Command::Release {
            job,
            site: st.site,
            delete,
        });
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.ended = Some(self.now);
            a.outcome = Outcome::StagingFailed(reason);
        }
        self.set_state(job, JobState::Ready);
        self.retry(job, retry);
    }

    /// Applies the replica policy to the copies a job staged at `site`: caching
    /// registers them, delete returns them for removal (never a registered one).
    fn postscript_replicas(&mut self, site: SiteId, staged: &[FileId]) -> Vec<FileId> {
        match self.settings.replica_policy {
            // Registered when they arrived (see `on_transfer_done`).
            ReplicaPolicy::Caching => Vec::new(),
            ReplicaPolicy::Delete => staged
                .iter()
                .copied()
                .filter(|&f| !self.rls.has(f, site))
                .collect(),
        }
    }

    fn retry(&mut self, job: JobId, retry: Retry) {
        let backoff = self.settings.replan_backoff;
        let (over, at) = match retry {
            Retry::Counted => {
                self.failures[job] += 1;
                let allowed = self.nodes.retry[job].unwrap_or(self.settings.max_retries);
                (self.failures[job] > allowed, self.now + backoff)
            }
            Retry::Now => {
                self.replans[job] += 1;
                (self.replans[job] > self.settings.max_replans, self.now)
            }
            Retry::Never => (true, self.now),
            Retry::Later => {
                // No room now is nobody's fault and passes as jobs end and
                // release their pins: wait longer each time, never give up
                // (a site where the inputs can never fit says `never`).
                self.room_waits[job] += 1;
                let doubling = self.room_waits[job].min(7) - 1;
                (false, self.now + backoff * f64::from(1u32 << doubling))
            }
        };
        if over || matches!(retry, Retry::Never) {
            self.fail_for_good(job);
        } else if at <= self.now {
            self.ready.push(job);
        } else {
            self.schedule(at, Timer::Replan { job });
        }
    }

    /// The job will never run: its descendants are blocked (DAGMan), while the
    /// jobs that were only ordered after it are released.
    fn fail_for_good(&mut self, job: JobId) {
        self.set_state(job, JobState::Failed);
        let wf = self.wf.clone();
        let mut stack = vec![job];
        while let Some(j) = stack.pop() {
            for i in 0..self.ordering[j].len() {
                let c = self.ordering[j][i];
                self.release_child(c);
            }
            for &c in &wf.children[j] {
                if self.state[c] == JobState::Waiting {
                    self.set_state(c, JobState::Blocked);
                    stack.push(c);
                }
            }
        }
    }

    /// One parent of `c` is over; `c` is ready when none is left.
    fn release_child(&mut self, c: JobId) {
        self.missing_parents[c] -= 1;
        if self.missing_parents[c] == 0 && self.state[c] == JobState::Waiting {
            if self.settings.release_overhead > 0.0 {
                let at = self.now + self.settings.release_overhead;
                self.schedule(at, Timer::Release { job: c });
            } else {
                self.make_ready(c);
            }
        }
    }

    fn make_ready(&mut self, job: JobId) {
        if self.state[job] == JobState::Waiting {
            self.set_state(job, JobState::Ready);
            self.records.jobs[job].ready = Some(self.now);
            self.ready.push(job);
        }
    }

    /// MonitQueue (seed 002 §4): kills the jobs idle in a site queue longer
    /// than `max_idle`. Queued jobs are kept in submission order, so the scan
    /// stops at the first one not yet overdue.
    fn monit_queue(&mut self, out: &mut Vec<Command>) {
        while let Some(&(submitted, job, attempt)) = self.idle.front() {
            let waiting = self.state[job] == JobState::Queued
                && self.records.jobs[job].attempts.len() == attempt + 1
                && !self.killing[job];
            if waiting && self.now - submitted <= self.settings.max_idle {
                break;
            }
            self.idle.pop_front();
            if waiting {
                self.killing[job] = true;
                out.push(Command::Kill {
                    job,
                    site: self.site_of[job],
                });
            }
        }
        let at = self.now + self.settings.monit_interval;
        self.schedule(at, Timer::Monit);
    }

    fn on_job_killed(&mut self, job: JobId, site: SiteId, killed: bool, out: &mut Vec<Command>) {
        if !self.killing[job] || self.site_of[job] != site {
            return;
        }
        self.killing[job] = false;
        if !killed || self.state[job] != JobState::Queued {
            // It started first: it runs, the kill is void.
            self.records.sites[site].kills_void += 1;
            return;
        }
        self.active[site] -= 1;
        self.records.sites[site].killed += 1;
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.ended = Some(self.now);
            a.outcome = Outcome::Killed;
        }
        let staged = self.staged_of(job);
        let delete = self.postscript_replicas(site, &staged);
        out.push(Command::Release { job, site, delete });
        self.set_state(job, JobState::Ready);
        self.avoid_once[job] = Some(site);
        self.retry(job, Retry::Now);
    }

    fn on_job_started(&mut self, job: JobId, site: SiteId) {
        if self.state[job] != JobState::Queued || self.site_of[job] != site {
            return;
        }
        self.set_state(job, JobState::Running);
        self.records.sites[site].started += 1;
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.started = Some(self.now);
        }
    }

    fn on_job_ended(
        &mut self,
        job: JobId,
        site: SiteId,
        result: Result<(), JobFailure>,
        out: &mut Vec<Command>,
    ) {
        let st = self.state[job];
        if !matches!(st, JobState::Queued | JobState::Running) || self.site_of[job] != site {
            return;
        }
        self.active[site] -= 1;
        let staged = self.staged_of(job);
        let delete = self.postscript_replicas(site, &staged);
        let attempt = self.records.jobs[job].attempts.last_mut();
        match result {
            Ok(()) => {
                out.push(Command::Release { job, site, delete });
                self.job_succeeded(job, site, out);
            }
            Err(failure) => {
                if let Some(a) = attempt {
                    a.ended = Some(self.now);
                    a.outcome = Outcome::Failed(failure.clone());
                }
                self.records.sites[site].failed += 1;
                out.push(Command::Release { job, site, delete });
                self.set_state(job, JobState::Ready);
                let retry = match failure {
                    JobFailure::MissingInput(_) => Retry::Now,
                    JobFailure::NoSpace { never: true } => {
                        self.avoid.entry(job).or_default().push(site);
                        Retry::Now
                    }
                    JobFailure::NoSpace { never: false } => Retry::Later,
                    JobFailure::Failed(_) => Retry::Counted,
                };
                self.retry(job, retry);
            }
        }
    }

    /// The job ended well at `site`: its POST script runs if it has one, then
    /// the postscript.
    fn job_succeeded(&mut self, job: JobId, site: SiteId, out: &mut Vec<Command>) {
        if self.nodes.post[job] {
            self.run_script(job, ScriptKind::Post, out);
        } else {
            self.postscript(job, site);
        }
    }

    /// The postscript, after its overhead if there is one.
    fn postscript(&mut self, job: JobId, site: SiteId) {
        if self.settings.postscript_overhead > 0.0 {
            let at = self.now + self.settings.postscript_overhead;
            self.schedule(at, Timer::Postscript { job, site });
        } else {
            self.node_done(job, site);
        }
    }

    /// A node's script ended. A failed PRE script fails the attempt before
    /// anything is staged; a failed POST script fails the node (its outputs,
    /// already written, stay registered where they are); both count against
    /// the node's RETRY, as in DAGMan.
    fn on_script_done(
        &mut self,
        job: JobId,
        kind: ScriptKind,
        status: i32,
        out: &mut Vec<Command>,
    ) {
        let defer = match kind {
            ScriptKind::Pre => self.nodes.pre_defer[job],
            ScriptKind::Post => self.nodes.post_defer[job],
        };
        // RETRY … UNLESS-EXIT: that exit is final.
        let retry = if self.nodes.retry_unless_exit[job] == Some(status) {
            Retry::Never
        } else {
            Retry::Counted
        };
        match kind {
            ScriptKind::Pre => {
                let Some(st) = self.staging[job].as_mut().filter(|s| s.pre_running) else {
                    return;
                };
                if let Some((deferred, time)) = defer
                    && deferred == status
                {
                    self.schedule(self.now + time, Timer::Script { job, kind });
                    return;
                }
                st.pre_running = false;
                if status == 0 {
                    self.launch(job, out);
                } else {
                    let reason = format!("PRE script exited {status}");
                    self.abort_staging(job, reason, retry, out);
                }
            }
            ScriptKind::Post => {
                if self.state[job] != JobState::Running {
                    return;
                }
                self.posts_running = self.posts_running.saturating_sub(1);
                if let Some(next) = self.posts_waiting.pop_front() {
                    self.run_script(next, ScriptKind::Post, out);
                }
                if let Some((deferred, time)) = defer
                    && deferred == status
                {
                    self.schedule(self.now + time, Timer::Script { job, kind });
                    return;
                }
                let site = self.site_of[job];
                if status == 0 {
                    self.postscript(job, site);
                    return;
                }
                for &o in &self.wf.jobs[job].outputs {
                    self.rls.register(o, site);
                }
                if let Some(a) = self.records.jobs[job].attempts.last_mut() {
                    a.ended = Some(self.now);
                    a.outcome =
                        Outcome::Failed(JobFailure::Failed(format!("POST script exited {status}")));
                }
                self.records.sites[site].failed += 1;
                self.set_state(job, JobState::Ready);
                self.retry(job, retry);
            }
        }
    }

    /// The job ended well and its postscript is over: outputs registered,
    /// children released. `ended` is this instant (the node's end).
    fn node_done(&mut self, job: JobId, site: SiteId) {
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.ended = Some(self.now);
            a.outcome = Outcome::Ended;
        }
        for &o in &self.wf.jobs[job].outputs {
            self.rls.register(o, site);
        }
        self.records.sites[site].ended += 1;
        self.last_ended = Some(site);
        self.set_state(job, JobState::Done);
        self.release_children(job);
    }

    /// Inputs that the job's last prescript transferred (not those it found).
    fn staged_of(&mut self, job: JobId) -> Vec<FileId> {
        std::mem::take(&mut self.staged[job])
    }
}

/// How a job goes back to the prescript.
#[derive(Debug, Clone, Copy)]
enum Retry {
    /// At once, not its fault (an input vanished, a site that can never fit).
    Now,
    /// After a growing back-off, not its fault (no room now); never gives up.
    Later,
    /// After `replan_backoff`, counted against `max_retries`.
    Counted,
    /// Never: the node fails for good (DAGMan's `RETRY … UNLESS-EXIT`).
    Never,
}

#[cfg(test)]
mod tests {
    //! A scripted fake world (no actix, no clock): transfers take `transfer`
    //! seconds, jobs their runtime, sites have FIFO queues and LRU pools.
    use super::*;
    use crate::core::storage::Pool;
    use crate::core::{File, JobSpec};
    use crate::policy::{eviction::Lru, site_selector};
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    struct World {
        m: Manager,
        pools: Vec<Pool>,
        queues: Vec<VecDeque<JobId>>,
        running: Vec<usize>,
        events: BinaryHeap<Reverse<(u64, u64, usize)>>,
        payloads: Vec<Option<Event>>,
        now: Time,
        transfer: f64,
        corrupt_first: usize,
        fail_from: Option<SiteId>,
        /// Sites whose slots are all taken by other users: nothing starts there.
        blocked: Vec<bool>,
        /// On a Kill, start the job first if it is next in line (the race).
        start_before_kill: bool,
        /// Scripts that fail (exit 1) the next time they run.
        failing_scripts: Vec<(JobId, ScriptKind)>,
        ended_ok: Vec<u32>,
        pin_times: Vec<Time>,
        max_prescripts: usize,
        transfers: usize,
    }

    fn t(x: Time) -> u64 {
        (x * 1000.0).round() as u64
    }

    impl World {
        fn new(
            wf: Workflow,
            sites: Vec<SiteInfo>,
            settings: ManagerSettings,
            strategy: &str,
        ) -> Self {
            Self::with_origins(wf, sites, settings, strategy, &[0])
        }

        /// A world whose inputs start on every site of `origins`.
        fn with_origins(
            wf: Workflow,
            sites: Vec<SiteInfo>,
            settings: ManagerSettings,
            strategy: &str,
            origins: &[SiteId],
        ) -> Self {
            let wf = Arc::new(wf);
            let mut pools: Vec<Pool> = sites
                .iter()
                .map(|s| Pool::new(s.disk, Box::new(Lru)))
                .collect();
            let placement: Vec<(FileId, SiteId)> = wf
                .inputs()
                .flat_map(|f| origins.iter().map(move |&s| (f, s)))
                .collect();
            for &(f, s) in &placement {
                pools[s].place_origin(f, wf.files[f].size).unwrap();
            }
            let n = wf.jobs.len();
            let m = sites.len();
            let sel = site_selector(strategy, 7).unwrap();
            World {
                m: Manager::new(wf, sites, &placement, settings, sel),
                pools,
                queues: vec![VecDeque::new(); m],
                running: vec![0; m],
                events: BinaryHeap::new(),
                payloads: Vec::new(),
                now: 0.0,
                transfer: 5.0,
                corrupt_first: 0,
                fail_from: None,
                blocked: vec![false; m],
                start_before_kill: false,
                failing_scripts: Vec::new(),
                ended_ok: vec![0; n],
                pin_times: Vec::new(),
                max_prescripts: 0,
                transfers: 0,
            }
        }

        fn at(&mut self, when: Time, e: Event) {
            self.payloads.push(Some(e));
            let seq = self.payloads.len() as u64 - 1;
            self.events.push(Reverse((t(when), seq, seq as usize)));
        }

        fn apply(&mut self, cmds: Vec<Command>) {
            for c in cmds {
                match c {
                    Command::Kill { job, site } => {
                        if self.start_before_kill && self.queues[site].front() == Some(&job) {
                            // The slot freed just before the kill arrived.
                            self.blocked[site] = false;
                            self.start_jobs(site);
                            self.blocked[site] = true;
                        }
                        let q = &mut self.queues[site];
                        let killed = match q.iter().position(|&j| j == job) {
                            Some(i) => q.remove(i).is_some(),
                            None => false,
                        };
                        self.at(self.now, Event::JobKilled { job, site, killed });
                    }
                    Command::Pin { job, site } => {
                        self.pin_times.push(self.now);
                        let inputs = self.m.workflow().jobs[job].inputs.clone();
                        self.pools[site].pin_job(job, &inputs);
                    }
                    Command::StartTransfer { id, from, .. } if self.fail_from == Some(from) => {
                        let result = Err(TransferFailure::Connection("refused".into()));
                        self.at(self.now + 1.0, Event::TransferDone { id, result });
                    }
                    Command::StartTransfer {
                        id, file, to, job, ..
                    } => {
                        self.transfers += 1;
                        let size = self.m.workflow().files[file].size;
                        match self.pools[to].begin_write(file, size) {
                            Ok(r) => {
                                for f in r.evicted {
                                    self.at(self.now, Event::FileEvicted { site: to, file: f });
                                }
                                let ok = self.corrupt_first == 0;
                                let result = if ok {
                                    self.pools[to].commit_write(file);
                                    Ok(size)
                                } else {
                                    self.corrupt_first -= 1;
                                    self.pools[to].abort_write(file);
                                    Err(TransferFailure::Corrupt("flipped".into()))
                                };
                                self.at(
                                    self.now + self.transfer,
                                    Event::TransferDone { id, result },
                                );
                            }
                            Err(e) => {
                                let wf = self.m.workflow().clone();
                                let inputs =
                                    wf.jobs[job].inputs.iter().map(|&f| (f, wf.files[f].size));
                                let never = e.never || !self.pools[to].could_ever_hold(inputs);
                                let result = Err(TransferFailure::NoSpace { never });
                                self.at(self.now, Event::TransferDone { id, result });
                            }
                        }
                    }
                    Command::Submit { job, site } => {
                        self.queues[site].push_back(job);
                        self.start_jobs(site);
                    }
                    Command::Release { job, site, delete } => {
                        self.pools[site].release_job(job, &delete);
                    }
                    Command::RunScript { job, kind, .. } => {
                        let status = i32::from(self.failing_scripts.contains(&(job, kind)));
                        self.failing_scripts.retain(|&(j, k)| (j, k) != (job, kind));
                        self.at(self.now, Event::ScriptDone { job, kind, status });
                    }
                }
            }
        }

        fn start_jobs(&mut self, site: SiteId) {
            while !self.blocked[site] && self.running[site] < self.m.sites()[site].cpus {
                let Some(job) = self.queues[site].pop_front() else {
                    return;
                };
                let wf = self.m.workflow().clone();
                let missing = wf.jobs[job]
                    .inputs
                    .iter()
                    .find(|&&f| !self.pools[site].has(f));
                if let Some(&f) = missing {
                    let failure = JobFailure::MissingInput(wf.files[f].name.clone());
                    self.at(
                        self.now,
                        Event::JobEnded {
                            job,
                            site,
                            result: Err(failure),
                        },
                    );
                    continue;
                }
                for &f in &wf.jobs[job].inputs {
                    self.pools[site].touch(f);
                }
                self.running[site] += 1;
                self.at(self.now, Event::JobStarted { job, site });
                for &o in &wf.jobs[job].outputs {
                    let r = self.pools[site].begin_write(o, wf.files[o].size).unwrap();
                    for file in r.evicted {
                        self.at(self.now, Event::FileEvicted { site, file });
                    }
                    self.pools[site].commit_write(o);
                    self.pools[site].keep(o);
                }
                self.ended_ok[job] += 1;
                // The end event frees the slot; the world starts the next job then.
                let end = self.now + wf.jobs[job].runtime;
                self.at(
                    end,
                    Event::JobEnded {
                        job,
                        site,
                        result: Ok(()),
                    },
                );
            }
        }
    }

    impl World {
        /// Runs to the end; a slot frees when its job's end event is delivered.
        fn run_with_slots(&mut self) {
            let mut out = Vec::new();
            self.m.handle(0.0, Event::Tick, &mut out);
            self.apply(out);
            for _ in 0..1_000_000 {
                let next_event = self
                    .events
                    .peek()
                    .map(|Reverse((w, _, _))| *w as f64 / 1000.0);
                let wake = self.m.next_wakeup();
                let (when, ev) = match (next_event, wake) {
                    (Some(e), Some(w)) if w < e => (w, Event::Tick),
                    (Some(_), _) => {
                        let Reverse((w, _, i)) = self.events.pop().unwrap();
                        (w as f64 / 1000.0, self.payloads[i].take().unwrap())
                    }
                    (None, Some(w)) => (w, Event::Tick),
                    (None, None) => break,
                };
                self.now = when;
                let freed = match &ev {
                    Event::JobEnded {
                        site,
                        result: Ok(()),
                        ..
                    } => Some(*site),
                    _ => None,
                };
                let mut out = Vec::new();
                self.m.handle(when, ev, &mut out);
                self.max_prescripts = self.max_prescripts.max(self.m.prescripts_running());
                self.apply(out);
                if let Some(site) = freed {
                    self.running[site] -= 1;
                    self.start_jobs(site);
                }
            }
        }
    }

    fn pipeline(width: usize, files_per_job: usize) -> Workflow {
        let mut files = Vec::new();
        let mut jobs = Vec::new();
        for i in 0..width {
            let mut inputs = Vec::new();
            for k in 0..files_per_job {
                let name = format!("in-{}-{k}", i % 7);
                if !files.iter().any(|f: &File| f.name == name) {
                    files.push(File {
                        name: name.clone(),
                        size: 100,
                    });
                }
                inputs.push(name);
            }
            files.push(File {
                name: format!("mid-{i}"),
                size: 5,
            });
            files.push(File {
                name: format!("out-{i}"),
                size: 5,
            });
            jobs.push(JobSpec {
                name: format!("a{i}"),
                runtime: 60.0,
                inputs,
                outputs: vec![format!("mid-{i}")],
                parents: vec![],
                ..Default::default()
            });
            jobs.push(JobSpec {
                name: format!("b{i}"),
                runtime: 30.0,
                inputs: vec![format!("mid-{i}")],
                outputs: vec![format!("out-{i}")],
                parents: vec![format!("a{i}")],
                ..Default::default()
            });
        }
        Workflow::build(files, jobs).unwrap()
    }

    fn sites(n: usize, cpus: usize, disk: u64) -> Vec<SiteInfo> {
        let mut v = vec![SiteInfo {
            name: "storage".into(),
            cpus: 0,
            disk: 1 << 40,
            speed: 1.0,
            overhead: 0.0,
        }];
        for i in 0..n {
            v.push(SiteInfo {
                name: format!("s{i}"),
                cpus,
                disk,
                speed: 1.0,
                overhead: 0.0,
            });
        }
        v
    }

    #[test]
    fn maxpre_and_interval_hold_and_every_job_ends_once() {
        for strategy in ["random", "round-robin", "data-present"] {
            let settings = ManagerSettings {
                maxpre: 4,
                prescript_interval: 1.0,
                ..Default::default()
            };
            let mut w = World::new(pipeline(30, 3), sites(3, 2, 10_000), settings, strategy);
            w.run_with_slots();
            assert!(
                w.m.is_finished() && w.m.succeeded(),
                "{strategy}: {:?}",
                w.m.counts()
            );
            assert!(w.max_prescripts <= 4, "{strategy}: MAXPRE exceeded");
            assert!(w.max_prescripts == 4, "{strategy}: MAXPRE never reached");
            for pair in w.pin_times.windows(2) {
                assert!(
                    pair[1] - pair[0] >= 1.0 - 1e-9,
                    "{strategy}: interval broken"
                );
            }
            assert!(
                w.ended_ok.iter().all(|&n| n == 1),
                "{strategy}: a job ran twice or never"
            );
        }
    }

    #[test]
    fn delete_policy_transfers_every_missing_input_and_caching_reuses() {
        let run = |policy| {
            // One slot and prescripts further apart than a job runs: each job is
            // planned after the previous postscript, as a second job would be.
            let settings = ManagerSettings {
                replica_policy: policy,
                prescript_interval: 100.0,
                ..Default::default()
            };
            let mut w = World::new(pipeline(14, 2), sites(1, 1, 10_000), settings, "random");
            w.run_with_slots();
            assert!(w.m.succeeded());
            w.transfers
        };
        // 14 first-level jobs read 2 inputs each; the second level finds its input.
        assert_eq!(run(ReplicaPolicy::Delete), 28);
        // Only 7 distinct names × 2 files exist: caching moves each once.
        assert_eq!(run(ReplicaPolicy::Caching), 14);
    }

    #[test]
    fn failed_transfers_are_retried_and_nothing_is_lost() {
        let settings = ManagerSettings::default();
        let mut w = World::new(pipeline(5, 1), sites(2, 1, 10_000), settings, "round-robin");
        w.corrupt_first = 5;
        w.run_with_slots();
        assert!(w.m.succeeded());
        let failed =
            w.m.records()
                .transfers
                .iter()
                .filter(|r| r.failure.is_some())
                .count();
        assert_eq!(failed, 5);
    }

    #[test]
    fn a_source_that_keeps_failing_is_replaced_by_another_replica() {
        let mut s = sites(1, 1, 10_000);
        let mut mirror = s[0].clone();
        mirror.name = "mirror".into();
        s.push(mirror);
        let settings = ManagerSettings::default();
        let mut w = World::with_origins(pipeline(3, 1), s, settings, "random", &[0, 2]);
        w.fail_from = Some(0); // the least busy holder (ties go to the lower id)
        w.run_with_slots();
        assert!(w.m.succeeded());
        let t = &w.m.records().transfers;
        let failed: Vec<_> = t.iter().filter(|r| r.failure.is_some()).collect();
        assert!(failed.iter().all(|r| r.from == 0));
        assert!(
            t.iter()
                .filter(|r| r.failure.is_none())
                .all(|r| r.from == 2),
            "{t:?}"
        );
        // Each of the 3 distinct inputs: 1 try + transfer_retries on source 0.
        assert_eq!(failed.len(), 3 * 4);
    }

    fn monitqueue() -> ManagerSettings {
        ManagerSettings {
            monit_interval: 10.0,
            max_idle: 50.0,
            ..Default::default()
        }
    }

    #[test]
    fn monitqueue_kills_jobs_idle_at_a_busy_site_and_they_end_elsewhere() {
        let mut w = World::new(
            pipeline(6, 1),
            sites(2, 2, 10_000),
            monitqueue(),
            "round-robin",
        );
        w.blocked[1] = true; // s0: every slot taken by other users
        w.run_with_slots();
        assert!(w.m.succeeded(), "{:?}", w.m.counts());
        assert!(
            w.ended_ok.iter().all(|&n| n == 1),
            "a job ran twice or never"
        );
        let r = w.m.records();
        assert!(r.sites[1].killed > 0 && r.sites[1].ended == 0);
        for (j, rec) in r.jobs.iter().enumerate() {
            for pair in rec.attempts.windows(2) {
                if pair[0].outcome == Outcome::Killed {
                    assert_ne!(
                        pair[1].site, pair[0].site,
                        "job {j} went back to its killer"
                    );
                    assert!(pair[0].ended.unwrap() - pair[0].submitted.unwrap() > 50.0);
                }
            }
        }
    }

    #[test]
    fn a_kill_racing_a_start_leaves_exactly_one_outcome() {
        let mut w = World::new(
            pipeline(6, 1),
            sites(2, 2, 10_000),
            monitqueue(),
            "round-robin",
        );
        w.blocked[1] = true;
        w.start_before_kill = true;
        w.run_with_slots();
        assert!(w.m.succeeded());
        assert!(
            w.ended_ok.iter().all(|&n| n == 1),
            "a job ran twice or never"
        );
        let r = w.m.records();
        // The first job in each queue started as its kill arrived: it ran there.
        assert!(r.sites[1].ended > 0, "the start won some races");
        for rec in &r.jobs {
            let ended = rec
                .attempts
                .iter()
                .filter(|a| a.outcome == Outcome::Ended)
                .count();
            assert_eq!(ended, 1);
        }
    }

    #[test]
    fn a_full_disk_evicts_and_the_run_still_completes() {
        // Each execution site holds only 3 of the 7 distinct inputs at once.
        let settings = ManagerSettings {
            replica_policy: ReplicaPolicy::Caching,
            ..Default::default()
        };
        let mut w = World::new(pipeline(20, 1), sites(2, 1, 450), settings, "random");
        w.run_with_slots();
        assert!(w.m.succeeded(), "{:?}", w.m.counts());
        let evictions: u64 = w.pools.iter().map(Pool::evictions).sum();
        assert!(evictions > 0);
        for (s, pool) in w.pools.iter().enumerate() {
            for f in 0..w.m.workflow().files.len() {
                if w.m.rls().has(f, s) {
                    assert!(pool.has(f), "RLS lists a file site {s} no longer holds");
                }
            }
        }
    }

    #[test]
    fn inputs_that_never_fit_avoid_the_site() {
        let mut s = sites(2, 1, 10_000);
        s[1].disk = 250; // two 100-byte inputs never fit beside the 100-byte origin
        let mut w = World::new(pipeline(4, 2), s, ManagerSettings::default(), "round-robin");
        w.pools[1].place_origin(99, 100).unwrap();
        w.run_with_slots();
        assert!(w.m.succeeded());
        for j in (0..8).filter(|j| w.m.workflow().jobs[*j].name.starts_with('a')) {
            let last = w.m.records().jobs[j].attempts.last().unwrap();
            assert_eq!(last.site, 2, "job {j} ended on the site it cannot fit");
        }
    }

    #[test]
    fn a_job_failing_everywhere_fails_for_good_and_blocks_its_children() {
        let wf = pipeline(1, 1);
        let mut w = World::new(
            wf,
            sites(1, 1, 10_000),
            ManagerSettings::default(),
            "random",
        );
        let mut out = Vec::new();
        w.m.handle(0.0, Event::Tick, &mut out);
        let mut now = 0.0;
        for _ in 0..100 {
            for c in std::mem::take(&mut out) {
                match c {
                    Command::StartTransfer { id, .. } => w.m.handle(
                        now,
                        Event::TransferDone {
                            id,
                            result: Ok(100),
                        },
                        &mut out,
                    ),
                    Command::Submit { job, site } => w.m.handle(
                        now,
                        Event::JobEnded {
                            job,
                            site,
                            result: Err(JobFailure::Failed("exit 1".into())),
                        },
                        &mut out,
                    ),
                    _ => {}
                }
            }
            now += 100.0;
            w.m.handle(now, Event::Tick, &mut out);
        }
        assert!(w.m.is_finished() && !w.m.succeeded());
        assert_eq!(w.m.job_state(0), JobState::Failed);
        assert_eq!(w.m.job_state(1), JobState::Blocked);
        assert_eq!(
            w.m.records().jobs[0].attempts.len(),
            4,
            "1 try + max_retries 3"
        );
    }

    /// Independent input-less jobs `0..n` (job `i` named `j{i}`), their
    /// DAGMan settings, one site of `cpus` slots: runs to the end, each job
    /// taking 10 s, `fails(job, attempt)` deciding failures. Returns the
    /// manager and the jobs in submission order.
    fn run_nodes(
        n: usize,
        parents: &[(usize, usize)],
        nodes: NodeSettings,
        cpus: usize,
        fails: impl Fn(JobId, usize) -> bool,
    ) -> (Manager, Vec<JobId>) {
        let specs = (0..n)
            .map(|i| JobSpec {
                name: format!("j{i}"),
                runtime: 10.0,
                parents: parents
                    .iter()
                    .filter(|&&(_, c)| c == i)
                    .map(|&(p, _)| format!("j{p}"))
                    .collect(),
                ..Default::default()
            })
            .collect();
        let wf = Arc::new(Workflow::build(Vec::new(), specs).unwrap());
        let settings = ManagerSettings {
            maxpre: 1,
            prescript_interval: 0.0,
            replan_backoff: 0.0,
            ..Default::default()
        };
        let selector = crate::policy::site_selector("round-robin", 1).unwrap();
        let mut m = Manager::new(wf, sites(1, cpus, 1000), &[], settings, selector);
        m.set_nodes(nodes);
        let mut out = Vec::new();
        let mut order = Vec::new();
        let mut running: Vec<(Time, JobId, SiteId)> = Vec::new();
        let mut now = 0.0;
        m.handle(now, Event::Tick, &mut out);
        for _ in 0..10_000 {
            for c in std::mem::take(&mut out) {
                if let Command::Submit { job, site } = c {
                    order.push(job);
                    m.handle(now, Event::JobStarted { job, site }, &mut Vec::new());
                    running.push((now + 10.0, job, site));
                }
            }
            if m.is_finished() {
                break;
            }
            running.sort_by(|a, b| b.0.total_cmp(&a.0));
            match running.pop() {
                Some((at, job, site)) => {
                    now = at;
                    let attempt = m.records().jobs[job].attempts.len() - 1;
                    let result = if fails(job, attempt) {
                        Err(JobFailure::Failed("exit 1".into()))
                    } else {
                        Ok(())
                    };
                    m.handle(now, Event::JobEnded { job, site, result }, &mut out);
                }
                None => {
                    now += 1.0;
                    m.handle(now, Event::Tick, &mut out);
                }
            }
        }
        (m, order)
    }

    #[test]
    fn dagman_priorities_order_the_release_of_ready_nodes() {
        let mut nodes = NodeSettings::none(5);
        nodes.priority = vec![0, 3, -2, 3, 9];
        let (m, order) = run_nodes(5, &[], nodes, 1, |_, _| false);
        assert!(m.succeeded());
        assert_eq!(order, [4, 1, 3, 0, 2]);
    }

    #[test]
    fn dagman_maxjobs_bounds_a_category_in_flight() {
        let mut nodes = NodeSettings::none(6);
        nodes.category = vec![Some(0), Some(0), Some(0), Some(0), None, None];
        nodes.category_limits = vec![2];
        let (m, order) = run_nodes(6, &[], nodes, 8, |_, _| false);
        assert!(m.succeeded());
        assert_eq!(order.len(), 6);
        assert_eq!(m.category_peaks(), [2], "MAXJOBS 2 held");
        // With 8 slots and no limit all six would run at once; the category's
        // last two wait for the first two.
        let started = |j: usize| m.records().jobs[j].attempts[0].started.unwrap();
        let mut cat: Vec<f64> = (0..4).map(started).collect();
        cat.sort_by(f64::total_cmp);
        assert!(cat[2] >= cat[0] + 10.0, "{cat:?}");
    }

    #[test]
    fn dagman_retry_bounds_the_attempts_of_one_node() {
        let mut nodes = NodeSettings::none(3);
        nodes.retry = vec![Some(1), Some(4), None];
        // Job 0 always fails; job 1 fails three times then succeeds; job 2
        // (the manager's max_retries, 3) fails twice.
        let (m, _) = run_nodes(3, &[], nodes, 1, |j, a| match j {
            0 => true,
            1 => a < 3,
            _ => a < 2,
        });
        let attempts = |j: usize| m.records().jobs[j].attempts.len();
        assert_eq!(m.job_state(0), JobState::Failed);
        assert_eq!(attempts(0), 2, "RETRY 1: two attempts, then failed");
        assert_eq!((m.job_state(1), attempts(1)), (JobState::Done, 4));
        assert_eq!((m.job_state(2), attempts(2)), (JobState::Done, 3));
    }

    #[test]
    fn dagman_noop_and_done_nodes_run_no_job() {
        let mut nodes = NodeSettings::none(4);
        nodes.noop[1] = true;
        nodes.done[0] = true;
        // 0 → 1 → 2, 3 alone.
        let (m, order) = run_nodes(4, &[(0, 1), (1, 2)], nodes, 1, |_, _| false);
        assert!(m.succeeded());
        // 0 is DONE at the start (releasing 1), 1 ends when its prescript
        // does (releasing 2): only 3 and 2 ever reach a site, in queue order.
        assert_eq!(order, [3, 2]);
        assert!(
            m.records().jobs[0].attempts.is_empty(),
            "DONE: nothing runs"
        );
        // NOOP: its prescript (and scripts) run, no job reaches the queue.
        let noop = &m.records().jobs[1].attempts;
        assert_eq!(noop.len(), 1);
        assert!(noop[0].submitted.is_none() && noop[0].outcome == Outcome::Ended);
    }

    #[test]
    fn dagman_scripts_a_failed_pre_or_post_fails_the_attempt_and_retry_runs_it_again() {
        let mut w = World::new(
            pipeline(2, 1),
            sites(1, 2, 10_000),
            ManagerSettings::default(),
            "round-robin",
        );
        let n = w.m.workflow().jobs.len();
        let mut nodes = NodeSettings::none(n);
        nodes.pre = vec![true; n];
        nodes.post = vec![true; n];
        nodes.retry = vec![Some(1); n];
        w.m.set_nodes(nodes);
        w.failing_scripts = vec![(0, ScriptKind::Pre), (1, ScriptKind::Post)];
        w.run_with_slots();
        assert!(w.m.succeeded(), "{:?}", w.m.counts());
        let a = &w.m.records().jobs[0].attempts;
        assert_eq!(a.len(), 2);
        assert_eq!(
            a[0].outcome,
            Outcome::StagingFailed("PRE script exited 1".into())
        );
        assert!(
            a[0].submitted.is_none(),
            "a failed PRE script stops the attempt before the queue"
        );
        let b = &w.m.records().jobs[1].attempts;
        assert_eq!(b.len(), 2);
        assert!(
            matches!(&b[0].outcome, Outcome::Failed(JobFailure::Failed(m)) if m == "POST script exited 1")
        );
        assert_eq!(b[1].outcome, Outcome::Ended);
    }

    fn scripted_world() -> World {
        World::new(
            pipeline(3, 1),
            sites(1, 3, 10_000),
            ManagerSettings::default(),
            "round-robin",
        )
    }

    #[test]
    fn dagman_retry_unless_exit_makes_that_exit_final() {
        let mut w = scripted_world();
        let n = w.m.workflow().jobs.len();
        let mut nodes = NodeSettings::none(n);
        nodes.pre = vec![true; n];
        nodes.retry = vec![Some(3); n];
        nodes.retry_unless_exit = vec![Some(1); n];
        w.m.set_nodes(nodes);
        w.failing_scripts = vec![(0, ScriptKind::Pre)];
        w.run_with_slots();
        assert_eq!(w.m.job_state(0), JobState::Failed);
        assert_eq!(w.m.records().jobs[0].attempts.len(), 1, "RETRY 3 not used");
        let job = |name: &str| {
            w.m.workflow()
                .jobs
                .iter()
                .position(|j| j.name == name)
                .unwrap()
        };
        assert_eq!(w.m.job_state(job("b0")), JobState::Blocked);
        assert_eq!(w.m.job_state(job("a1")), JobState::Done);
    }

    #[test]
    fn dagman_defer_runs_the_script_again_later_without_a_failure() {
        let mut w = scripted_world();
        let n = w.m.workflow().jobs.len();
        let mut nodes = NodeSettings::none(n);
        nodes.pre = vec![true; n];
        nodes.retry = vec![Some(0); n];
        nodes.pre_defer = vec![Some((1, 30.0)); n];
        w.m.set_nodes(nodes);
        w.failing_scripts = vec![(0, ScriptKind::Pre)];
        w.run_with_slots();
        assert!(w.m.succeeded());
        let a = &w.m.records().jobs[0].attempts;
        assert_eq!(a.len(), 1, "a deferral is not a failure");
        assert!(a[0].submitted.unwrap() >= a[0].prescript + 30.0, "{a:?}");
    }

    #[test]
    fn dagman_max_jobs_idle_bounds_jobs_submitted_and_not_started() {
        // Six jobs, one slot: without a limit five would wait in the queue.
        let mut w = World::new(
            pipeline(6, 1),
            sites(1, 1, 10_000),
            ManagerSettings {
                maxpre: 0,
                prescript_interval: 0.0,
                ..Default::default()
            },
            "round-robin",
        );
        let n = w.m.workflow().jobs.len();
        let mut nodes = NodeSettings::none(n);
        nodes.max_jobs_idle = 2;
        w.m.set_nodes(nodes);
        w.run_with_slots();
        assert!(w.m.succeeded());
        let spans: Vec<(Time, Time)> =
            w.m.records()
                .jobs
                .iter()
                .flat_map(|j| &j.attempts)
                .filter_map(|a| Some((a.submitted?, a.started?)))
                .collect();
        let peak = spans
            .iter()
            .map(|&(t, _)| spans.iter().filter(|&&(s, e)| s <= t && t < e).count())
            .max()
            .unwrap();
        assert_eq!(peak, 2, "{spans:?}");
    }
}
