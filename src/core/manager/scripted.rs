//! A scripted world for the manager: the smallest engine that carries out
//! its commands, with no actors, no clock and no bytes. Transfers take
//! [`transfer`](ScriptedWorld::transfer) seconds, jobs their runtime; sites
//! have FIFO queues, CPU slots and pools; knobs script what the manager must
//! survive (corrupt transfers, a source that refuses, sites whose slots
//! are taken, a kill racing a start, failing DAGMan scripts). The
//! manager's unit tests and `gridbed bench manager` both drive it, and a
//! new site selector can be tried in it without an engine.

use std::collections::VecDeque;
use std::sync::Arc;

use super::{Command, Event, JobFailure, Manager, ManagerSettings, ScriptKind, TransferFailure};
use crate::core::events::EventQueue;
use crate::core::seams::{EvictionPolicy, SiteSelector};
use crate::core::storage::Pool;
use crate::core::{FileId, JobId, SiteId, SiteInfo, Time, Workflow};

/// The world, its manager and what it counted.
pub struct ScriptedWorld {
    /// The manager it drives.
    pub m: Manager,
    /// Each site's pool (origins hold the workflow's inputs at the start).
    pub pools: Vec<Pool>,
    queues: Vec<VecDeque<JobId>>,
    running: Vec<usize>,
    events: EventQueue<Event>,
    now: Time,
    /// Seconds a transfer takes (5 unless set).
    pub transfer: f64,
    /// Transfers that arrive corrupt before the rest arrive intact.
    pub corrupt_first: usize,
    /// A source whose every transfer is refused.
    pub fail_from: Option<SiteId>,
    /// Transfers every source serves at once; more are refused as busy
    /// (none by default).
    pub max_connections: Option<usize>,
    /// Transfers each source is serving, and the source of each transfer
    /// in flight.
    serving: Vec<usize>,
    sources: std::collections::HashMap<super::TransferId, SiteId>,
    /// Sites whose slots are all taken by other users: nothing starts there.
    pub blocked: Vec<bool>,
    /// On a Kill, start the job first if it is next in line (the race).
    pub start_before_kill: bool,
    /// Scripts that fail (exit 1) the next time they run.
    pub failing_scripts: Vec<(JobId, ScriptKind)>,
    /// The exit status of each queued job's program (as the manager's
    /// [`Command::Submit`] said; absent: 0).
    exits: std::collections::HashMap<JobId, i32>,
    /// Each DAGMan script run: (job, kind, `$RETURN` passed), in order.
    pub scripts_run: Vec<(JobId, ScriptKind, i32)>,
    /// Per job: runs that ended successfully (exactly 1 at the end of a
    /// run where nothing is lost or run twice).
    pub ended_ok: Vec<u32>,
    /// When each [`Command::Pin`] (a prescript's start) came.
    pub pin_times: Vec<Time>,
    /// Most prescripts running at once.
    pub max_prescripts: usize,
    /// Transfers started.
    pub transfers: usize,
    /// Each [`Command::Cleanup`] (site, file), in order.
    pub cleaned: Vec<(SiteId, FileId)>,
}

impl ScriptedWorld {
    /// A world for `workflow` on `sites`, its inputs on every site of
    /// `origins`, planned by `selector`; site `s`'s pool evicts with
    /// `eviction(s)`.
    pub fn new(
        workflow: Workflow,
        sites: Vec<SiteInfo>,
        settings: ManagerSettings,
        selector: Box<dyn SiteSelector>,
        mut eviction: impl FnMut(SiteId) -> Box<dyn EvictionPolicy>,
        origins: &[SiteId],
    ) -> Self {
        let wf = Arc::new(workflow);
        let mut pools: Vec<Pool> = sites
            .iter()
            .enumerate()
            .map(|(i, s)| Pool::new(s.disk, eviction(i)))
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
        ScriptedWorld {
            m: Manager::new(wf, sites, &placement, settings, selector),
            pools,
            queues: vec![VecDeque::new(); m],
            running: vec![0; m],
            events: EventQueue::new(),
            now: 0.0,
            transfer: 5.0,
            corrupt_first: 0,
            fail_from: None,
            max_connections: None,
            serving: vec![0; m],
            sources: Default::default(),
            blocked: vec![false; m],
            start_before_kill: false,
            failing_scripts: Vec::new(),
            exits: Default::default(),
            scripts_run: Vec::new(),
            ended_ok: vec![0; n],
            pin_times: Vec::new(),
            max_prescripts: 0,
            transfers: 0,
            cleaned: Vec::new(),
        }
    }

    fn at(&mut self, when: Time, e: Event) {
        self.events.push(when, e);
    }

    fn apply(&mut self, cmds: &mut Vec<Command>) {
        for c in cmds.drain(..) {
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
                Command::StartTransfer { id, from, .. }
                    if self
                        .max_connections
                        .is_some_and(|m| self.serving[from] >= m) =>
                {
                    let result = Err(TransferFailure::Busy);
                    self.at(self.now, Event::TransferDone { id, result });
                }
                Command::StartTransfer {
                    id,
                    file,
                    from,
                    to,
                    job,
                    ..
                } => {
                    self.transfers += 1;
                    self.serving[from] += 1;
                    self.sources.insert(id, from);
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
                            self.at(self.now + self.transfer, Event::TransferDone { id, result });
                        }
                        Err(e) => {
                            let wf = self.m.workflow().clone();
                            let never = e.never || !self.could_ever_run(&wf, job, to);
                            let result = Err(TransferFailure::NoSpace { never });
                            self.at(self.now, Event::TransferDone { id, result });
                        }
                    }
                }
                Command::Submit { job, site, exit } => {
                    self.exits.insert(job, exit);
                    self.queues[site].push_back(job);
                    self.start_jobs(site);
                }
                Command::Release { job, site, delete } => {
                    self.pools[site].release_job(job, &delete);
                }
                Command::Cleanup { site, file } => {
                    self.cleaned.push((site, file));
                    self.pools[site].unkeep(file);
                }
                Command::Delete { site, file } => {
                    self.pools[site].evict(file);
                }
                Command::RunScript {
                    job, kind, status, ..
                } => {
                    self.scripts_run.push((job, kind, status));
                    let status = i32::from(self.failing_scripts.contains(&(job, kind)));
                    self.failing_scripts.retain(|&(j, k)| (j, k) != (job, kind));
                    self.at(self.now, Event::ScriptDone { job, kind, status });
                }
            }
        }
    }

    /// Whether `job`'s inputs and outputs could ever be at `site` at once
    /// (the site state machine's rule).
    fn could_ever_run(&self, wf: &Workflow, job: JobId, site: SiteId) -> bool {
        let files = wf.jobs[job].inputs.iter().chain(&wf.jobs[job].outputs);
        self.pools[site].could_ever_hold(files.map(|&f| (f, wf.files[f].size)))
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
            // Outputs are reserved as the job starts and listed when all
            // fit; otherwise none is, and the job ends without them.
            let mut result = match self.exits.remove(&job).unwrap_or(0) {
                0 => Ok(()),
                status => Err(JobFailure::Exit(status)),
            };
            let mut reserved = Vec::new();
            for &o in wf.jobs[job].outputs.iter().filter(|_| result.is_ok()) {
                match self.pools[site].begin_write(o, wf.files[o].size) {
                    Ok(r) => {
                        for file in r.evicted {
                            self.at(self.now, Event::FileEvicted { site, file });
                        }
                        reserved.push(o);
                    }
                    Err(e) => {
                        let never = e.never || !self.could_ever_run(&wf, job, site);
                        result = Err(JobFailure::NoSpace { never });
                        break;
                    }
                }
            }
            for o in reserved {
                if result.is_ok() {
                    self.pools[site].commit_write(o);
                    self.pools[site].keep(o);
                } else {
                    self.pools[site].abort_write(o);
                }
            }
            if result.is_ok() {
                self.ended_ok[job] += 1;
            }
            // The end event frees the slot; the world starts the next job then.
            let end = self.now + wf.jobs[job].runtime;
            self.at(end, Event::JobEnded { job, site, result });
        }
    }
}

impl ScriptedWorld {
    /// Runs to the end (or to a bound of steps far beyond what the
    /// workflow needs, so that a manager that never finishes fails its
    /// test instead of hanging it).
    #[cfg(test)]
    pub fn run(&mut self) {
        self.run_with(|m, now, event, out| m.handle(now, event, out));
    }

    /// [`run`](Self::run), with each event handed to the manager through
    /// `handle` (a benchmark times the manager's share of the run there).
    pub fn run_with(
        &mut self,
        mut handle: impl FnMut(&mut Manager, Time, Event, &mut Vec<Command>),
    ) {
        let wf = self.m.workflow().clone();
        let bound = 64 * (wf.jobs.len() + wf.references()) + 100_000;
        let mut out = Vec::new();
        handle(&mut self.m, 0.0, Event::Tick, &mut out);
        self.apply(&mut out);
        for _ in 0..bound {
            let next_event = self.events.peek_time();
            let wake = self.m.next_wakeup();
            let (when, ev) = match (next_event, wake) {
                (Some(e), Some(w)) if w < e => (w, Event::Tick),
                (Some(_), _) => self.events.pop().expect("an event is due"),
                (None, Some(w)) => (w, Event::Tick),
                (None, None) => break,
            };
            self.now = when;
            // A job that started frees its slot as it ends (one whose input
            // was missing never took one).
            let freed = match &ev {
                Event::JobEnded { site, result, .. }
                    if !matches!(result, Err(JobFailure::MissingInput(_))) =>
                {
                    Some(*site)
                }
                _ => None,
            };
            if let Event::TransferDone { id, .. } = &ev
                && let Some(from) = self.sources.remove(id)
            {
                self.serving[from] -= 1;
            }
            handle(&mut self.m, when, ev, &mut out);
            self.max_prescripts = self.max_prescripts.max(self.m.prescripts_running());
            self.apply(&mut out);
            if let Some(site) = freed {
                self.running[site] -= 1;
                self.start_jobs(site);
            }
        }
    }
}
