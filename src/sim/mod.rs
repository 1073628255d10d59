//! The sim engine: the same scenario on a virtual clock, driving the same
//! [`Manager`] and policies as the live engine (seed 000 §4's discrete-event
//! simulator, with the live engine's models).
//!
//! Events are ordered by (time, sequence), those made for the current
//! instant running right after the one that made them; nothing here draws random numbers of
//! its own (the selectors and eviction policies are seeded from the scenario),
//! so a seed gives a byte-identical run record. The models mirror the live
//! engine's, in nominal units:
//!
//! * **Transfers**: a transfer takes one of the source's `max_connections`
//!   (refused at once as busy when all are held, as a live endpoint answers
//!   503), holds it for the source's `latency` and its route's links'
//!   latencies, then flows on the core's [`GridNetwork`]: its rate is the
//!   max-min fair share over the source's out, every shared link it crosses
//!   and the receiver's in, and at most the source's `stream_cap`. The
//!   source's fault schedules, drawn once as a response starts to stream,
//!   may corrupt it (it ends as a corrupt transfer), reset it (it fails when
//!   half its bytes have flowed) or stall it (its bytes start later).
//! * **Timed faults** (`[[fault]]`): at its nominal time each goes to its
//!   `core::site::Site`; a crash also ends every transfer into or out of the site.
//! * **Sites**: each is a `core::site::Site` — the same FIFO queue, slots, background
//!   load, input checks and pool (with the scenario's eviction policy) as the
//!   live site actor drives; runs end after their nominal time, and bytes are
//!   only counted.
//!
//! The data-diffusion farm has its own, smaller simulator in [`farm`],
//! driving the core's farm dispatcher on the same event queue and links.

pub mod farm;
internal!(flows, flow_shapes);

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::{Scenario, SetupError};
use crate::core::events::EventQueue;
use crate::core::faults::Fault;
use crate::core::file_server::{FileServer, Response, ResponseFaults};
use crate::core::network::{RouteId, ShareId};
use crate::core::observer::{BoxedObserver, Unobserved};
use crate::core::result::RunResult;
use crate::core::run_dag::RunDag;
use crate::core::site::{Site, SiteAction};
use crate::core::timeline::{Sample, Timeline};
use crate::core::topology::{GridNetwork, Interface};
use crate::core::window::IdWindow;
use crate::core::{
    Command, Event, FileId, JobId, Manager, SiteId, Time, TransferFailure, TransferId,
};
use crate::db::ControlDb;
use crate::policy::{PolicyError, RunPolicies};

/// A finished simulated run: the engine-neutral [`RunResult`] (reached
/// through `Deref`), plus what only the simulator counts.
pub struct SimRun {
    /// The run's result, as every engine reports it.
    pub result: RunResult,
    /// Events processed.
    pub events: u64,
    /// The DAG as the run left it, when it read sub-DAGs as it went.
    pub grown: Option<crate::config::GrownDag>,
}

impl std::ops::Deref for SimRun {
    type Target = RunResult;
    fn deref(&self) -> &RunResult {
        &self.result
    }
}

/// Every site's network interface and file server, as the transfer model
/// sees them.
fn interfaces(scenario: &Scenario) -> Vec<Interface> {
    scenario
        .sites
        .iter()
        .map(|s| Interface {
            out: s.bandwidth_out,
            inbound: s.bandwidth_in,
            stream_cap: s.stream_cap,
        })
        .collect()
}

/// Why a simulated run could not be made or carried out.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A site could not be made.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// A policy's name, or an external policy program that failed.
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

impl From<crate::policy::UnknownPolicy> for SimError {
    fn from(e: crate::policy::UnknownPolicy) -> Self {
        SimError::Policy(e.into())
    }
}

/// Runs `scenario` on the virtual clock.
pub fn run(scenario: &Scenario) -> Result<SimRun, SimError> {
    run_recorded(scenario, None)
}

/// Runs `scenario`, writing the control records to `db` as it goes (in
/// batches of [`DB_BATCH`] events). A database error does not stop the run; it
/// is returned in [`RunResult::db_error`]. An external policy program that
/// fails ends the run with its failure, the database holding what ran.
pub fn run_recorded(scenario: &Scenario, db: Option<ControlDb>) -> Result<SimRun, SimError> {
    run_observed(scenario, db, Box::new(Unobserved))
}

/// [`run_recorded`], its progress shown to `progress` as it goes.
pub fn run_observed(
    scenario: &Scenario,
    db: Option<ControlDb>,
    progress: BoxedObserver,
) -> Result<SimRun, SimError> {
    let started = Instant::now();
    let mut sim = Sim::new(scenario)?;
    sim.progress = progress;
    if db.is_some() {
        sim.manager.track_changes(true);
    }
    sim.db = db;
    sim.run();
    sim.flush_db();
    if let Some(failure) = sim.policies.failure() {
        if let Some(db) = sim.db.take() {
            let _ = db.finish();
        }
        return Err(PolicyError::from(failure).into());
    }
    if let Some(mut db) = sim.db.take() {
        let rows = scenario
            .emulation
            .replica_rows(sim.wf.started(), sim.manager.replicas());
        db.write_final(&rows, sim.wf.started(), &[]);
        sim.db_error = db.finish().err().map(|e| e.to_string());
    }
    Ok(sim.finish(started.elapsed()))
}

/// What a corrupted response's check reports (the live client's words).
const CORRUPT: &str = "sha256 mismatch";

/// What a reset connection reports (the live client's words).
pub const RESET: &str = "connection reset by the source";

/// Events between two database batches.
pub const DB_BATCH: u64 = 1_000;

/// What happens at an instant.
#[derive(Debug)]
enum Ev {
    /// Hand an event to the manager.
    Deliver(Event),
    /// The manager asked to be woken.
    Wake,
    /// A transfer's latency is over: its bytes start to flow.
    Stream(TransferId),
    /// The earliest flow of a share may have finished (stale if `generation`
    /// moved on).
    ShareNext { share: ShareId, generation: u64 },
    /// A job's runtime is over.
    JobDone { site: SiteId, job: JobId },
    /// A site's background load changes.
    Load { site: SiteId },
    /// A node's script is over (its `script_time`): its process is waited
    /// for and its exit handed to the manager.
    ScriptEnd {
        job: JobId,
        kind: crate::core::ScriptKind,
    },
    /// The scenario's timed fault of this index happens.
    Fault(usize),
}

/// Queues `ev` at `at`, or for this instant's turn if `at` is not later
/// than `now`.
fn schedule(queue: &mut EventQueue<Ev>, immediate: &mut VecDeque<Ev>, now: Time, at: Time, ev: Ev) {
    if at <= now {
        immediate.push_back(ev);
    } else {
        queue.push(at, ev);
    }
}

/// A site's file server as the transfer model sees it.
struct Source {
    latency: f64,
    server: FileServer,
}

struct Flow {
    file: FileId,
    /// The file read at the source (see [`Command::StartTransfer`]).
    source: FileId,
    from: SiteId,
    to: SiteId,
    size: u64,
    /// Its route over the network.
    route: RouteId,
    /// What the source's fault schedules said of its response, once its
    /// latency is over.
    response: Option<Response>,
}

struct Sim {
    /// The run's DAG, as the sites hold it.
    wf: Arc<RunDag>,
    manager: Manager,
    /// Where an external policy program's failure shows.
    policies: Arc<RunPolicies>,
    now: Time,
    queue: EventQueue<Ev>,
    immediate: VecDeque<Ev>,
    wake_at: Option<Time>,
    sites: Vec<Site>,
    /// Scratch for the sites' actions.
    actions: Vec<SiteAction>,
    sources: Vec<Source>,
    /// Every site's interface and the shared links, and the flows on them.
    network: GridNetwork<TransferId>,
    flows: IdWindow<Flow>,
    out: Vec<Command>,
    transfers: u64,
    events: u64,
    db: Option<ControlDb>,
    db_error: Option<String>,
    timeline: Timeline,
    /// The scenario's timed faults.
    faults: Vec<(Time, SiteId, Fault)>,
    /// The DAG's PRE/POST scripts, when the testbed runs them (each in its
    /// node's folder).
    scripts: Vec<Option<crate::workflow::formats::dagman::NodeScripts>>,
    /// The sub-DAGs read as the run goes, if it has any.
    subdags: Option<crate::config::SubDagReader>,
    /// Who watches the run, and when it was last told.
    progress: BoxedObserver,
    shown: Instant,
    /// The DAG was removed on a signal ([`crate::interrupt`]).
    interrupted: bool,
    /// The DAG's halt files (its own and its running sub-DAGs'), looked
    /// for as the run starts and after each script or job program ran
    /// (nothing else of a simulated run may write them).
    halt: Option<crate::workflow::formats::dagman::halt::HaltFiles>,
    /// The scripts started and not yet over, each waited for at its end
    /// in simulated time: those whose runs overlap there run at once, as
    /// DAGMan runs them.
    running: HashMap<(JobId, crate::core::ScriptKind), crate::workflow::formats::dagman::Running>,
}

impl Sim {
    /// Starts a node's script as a process (in its node's folder), to be
    /// waited for at its end, `duration` from now ([`Ev::ScriptEnd`]); a
    /// node without one ends it then with 0.
    fn start_script(
        &mut self,
        job: JobId,
        kind: crate::core::ScriptKind,
        macros: &crate::core::ScriptMacros,
        duration: f64,
    ) {
        let call = (self.scripts.get(job).and_then(Option::as_ref))
            .and_then(|n| n.invocation(kind, macros));
        let Some(call) = call else {
            let done = Event::ScriptDone {
                job,
                kind,
                status: 0,
            };
            return self.at(self.now + duration, Ev::Deliver(done));
        };
        self.running.insert((job, kind), call.start());
        self.at(self.now + duration, Ev::ScriptEnd { job, kind });
    }

    /// A script's time is over: its exit (127 when it could not start)
    /// reaches the manager once its process ended.
    fn script_end(&mut self, job: JobId, kind: crate::core::ScriptKind) {
        let status = self.running.remove(&(job, kind)).map_or(0, |r| r.finish());
        // A halt file it wrote halts the DAG before its end frees the
        // nodes below it.
        for halt in self.halts_appeared() {
            self.deliver(halt);
        }
        self.deliver(Event::ScriptDone { job, kind, status });
    }

    /// Runs `job`'s programs, when the DAG's jobs run: each proc's exit
    /// (the cluster's is the job's; it takes the job's modelled runtime,
    /// not its real time), or why it could not be submitted.
    fn run_job_program(
        &self,
        job: crate::core::JobId,
        macros: &crate::core::ScriptMacros,
    ) -> Option<Result<Vec<Option<i32>>, String>> {
        self.scripts.get(job)?.as_ref()?.run_job_blocking(macros)
    }

    /// Writes the control records changed since the last batch.
    fn flush_db(&mut self) {
        let Some(db) = self.db.as_mut() else {
            return;
        };
        let Some(changes) = self.manager.take_changes() else {
            return;
        };
        db.write(&changes, self.manager.records(), &self.wf);
    }

    fn new(scenario: &Scenario) -> Result<Sim, SimError> {
        let policies = scenario.policies();
        let mut sites = Vec::new();
        let mut sources = Vec::new();
        let inputs = scenario.inputs_by_site();
        for (i, s) in scenario.sites.iter().enumerate() {
            let resumed: Vec<FileId> = scenario.resumed_outputs(i).collect();
            let start = scenario.site_start(i, &policies, &inputs[i], &resumed);
            sites.push(start.site()?);
            sources.push(Source {
                latency: s.latency,
                server: FileServer::new(
                    s.max_connections,
                    ResponseFaults::of(&s.faults, scenario.seed, i),
                ),
            });
        }
        let interfaces = interfaces(scenario);
        let manager = scenario.new_manager(&policies)?;
        policies.start()?;
        let mut sim = Sim {
            wf: manager.run_dag().clone(),
            manager,
            policies,
            now: 0.0,
            queue: EventQueue::new(),
            immediate: VecDeque::new(),
            wake_at: None,
            sites,
            actions: Vec::new(),
            sources,
            network: GridNetwork::new(&scenario.topology, &interfaces),
            flows: IdWindow::default(),
            out: Vec::new(),
            transfers: 0,
            events: 0,
            db: None,
            db_error: None,
            timeline: Timeline::default(),
            faults: scenario.faults.timed.clone(),
            scripts: scenario.node_scripts(),
            subdags: scenario.subdag_reader(),
            progress: Box::new(Unobserved),
            shown: Instant::now(),
            interrupted: false,
            halt: scenario.halt_files(),
            running: HashMap::new(),
        };
        for i in 0..sim.faults.len() {
            let at = sim.faults[i].0;
            sim.at(at, Ev::Fault(i));
        }
        for site in 0..sim.sites.len() {
            if let Some(at) = sim.sites[site].next_load_change() {
                sim.at(at, Ev::Load { site });
            }
        }
        Ok(sim)
    }

    /// Schedules `ev`. Events for the current instant skip the heap: they run
    /// after the event being processed, in the order they were made.
    fn at(&mut self, at: Time, ev: Ev) {
        schedule(&mut self.queue, &mut self.immediate, self.now, at, ev);
    }

    fn next_event(&mut self) -> Option<Ev> {
        if let Some(ev) = self.immediate.pop_front() {
            return Some(ev);
        }
        let (at, ev) = self.queue.pop()?;
        self.now = at;
        Some(ev)
    }

    /// Halts the DAG now if its halt file appeared (DAGMan looks at each
    /// turn of its event loop; the simulator as soon as it may have).
    fn watch_halt(&mut self) {
        for halt in self.halts_appeared() {
            self.at(self.now, Ev::Deliver(halt));
        }
    }

    /// The halts whose files appeared (the top DAG's, and those of the
    /// sub-DAGs running: see [`HaltFiles::appeared`]).
    ///
    /// [`HaltFiles::appeared`]: crate::workflow::formats::dagman::halt::HaltFiles::appeared
    fn halts_appeared(&mut self) -> Vec<Event> {
        let Some(h) = self.halt.as_mut() else {
            return Vec::new();
        };
        h.appeared(self.manager.subdag_spans())
    }

    fn run(&mut self) {
        self.watch_halt();
        self.deliver(Event::Tick);
        // Each pass gives up on what a stall leaves (some job fails), so
        // the passes end.
        while self.run_until_quiet() {}
    }

    /// Runs until no event is left (or the run ended); true when a stall
    /// was then given up on and the run may go on (a FINAL node).
    fn run_until_quiet(&mut self) -> bool {
        while let Some(ev) = self.next_event() {
            if self.manager.is_finished() || self.policies.failure().is_some() {
                break;
            }
            self.events += 1;
            if self.events.is_multiple_of(DB_BATCH) {
                self.flush_db();
                self.show_progress();
                // A signal asks for a stop ([`crate::interrupt`]): the DAG
                // is removed, as a live run's is.
                if !self.interrupted && crate::interrupt::requested().is_some() {
                    self.interrupted = true;
                    self.deliver(Event::DagRemoved);
                }
            }
            if self.timeline.due(self.now) {
                let s = self.sample();
                self.timeline.push(s);
            }
            match ev {
                Ev::Deliver(e) => self.deliver(e),
                Ev::Wake => {
                    if self.wake_at.is_some_and(|w| w <= self.now) {
                        self.wake_at = None;
                    }
                    self.deliver(Event::Tick);
                }
                Ev::Stream(id) => self.stream(id),
                Ev::ShareNext { share, generation } => self.share_next(share, generation),
                Ev::JobDone { site, job } => self.job_done(site, job),
                Ev::ScriptEnd { job, kind } => self.script_end(job, kind),
                Ev::Load { site } => self.load_changes(site),
                Ev::Fault(i) => self.fault(i),
            }
        }
        if self.manager.is_finished() || self.policies.failure().is_some() {
            return false;
        }
        let mut out = std::mem::take(&mut self.out);
        let gave_up = self.manager.give_up_if_stalled(&mut out);
        for c in out.drain(..) {
            self.apply(c);
        }
        self.out = out;
        if let Some(w) = self.manager.next_wakeup() {
            self.wake_at = Some(w);
            self.at(w.max(self.now), Ev::Wake);
        }
        gave_up
    }

    /// Tells the observer how the run stands, at most five times a wall
    /// second (a long run shows it goes on, as a live one does).
    fn show_progress(&mut self) {
        if self.shown.elapsed() >= Duration::from_millis(200) {
            self.shown = Instant::now();
            let counts = self.manager.counts();
            self.progress
                .manager_state(counts, self.flows.len(), self.now);
        }
    }

    fn finish(mut self, wall: Duration) -> SimRun {
        self.progress.finish();
        let last = self.sample();
        self.timeline.finish(last);
        let grown = self.subdags.take().map(|r| r.finish(&self.manager));
        let mut result = RunResult::from_manager("sim", self.manager, wall, self.timeline);
        result.evictions = self.sites.iter().map(|s| s.pool().evictions()).collect();
        result.used = self.sites.iter().map(|s| s.pool().used()).collect();
        result.peak_used = self.sites.iter().map(Site::peak_used).collect();
        result.transfers = self.transfers;
        result.db_error = self.db_error;
        SimRun {
            result,
            events: self.events,
            grown,
        }
    }

    /// Every site's queue, running jobs and storage now.
    fn sample(&self) -> Sample {
        Sample {
            t: self.now,
            queued: self.sites.iter().map(|s| s.queued() as u32).collect(),
            running: self.sites.iter().map(|s| s.running() as u32).collect(),
            used: self.sites.iter().map(|s| s.pool().used()).collect(),
        }
    }

    /// Hands `e` to the manager now and carries out what it orders.
    fn deliver(&mut self, e: Event) {
        self.manager.handle(self.now, e, &mut self.out);
        if let Some(h) = self.halt.as_mut() {
            // A sub-DAG's DAGMan submitted now: its halt file watched.
            crate::config::SubDagReader::follow_halts(h, &self.manager, self.subdags.as_ref());
        }
        let mut out = std::mem::take(&mut self.out);
        for c in out.drain(..) {
            self.apply(c);
        }
        self.out = out;
        if let Some(w) = self.manager.next_wakeup()
            && self.wake_at.is_none_or(|s| w < s || s < self.now)
        {
            self.wake_at = Some(w);
            self.at(w.max(self.now), Ev::Wake);
        }
    }

    fn apply(&mut self, c: Command) {
        match c {
            Command::Pin { job, site } => self.sites[site].pin(job),
            Command::StartTransfer {
                id,
                job,
                file,
                source,
                from,
                to,
            } => self.start_transfer(id, job, (file, source), from, to),
            Command::Submit {
                job,
                site,
                exit,
                macros,
            } => {
                let ran = self.run_job_program(job, &macros);
                // Only a program that ran may have written a halt file
                // (every running sub-DAG's is looked for).
                if ran.is_some() {
                    self.watch_halt();
                }
                let actions = &mut self.actions;
                match ran {
                    Some(Ok(exits)) => self.sites[site].submit_procs(job, exits, actions),
                    Some(Err(why)) => self.sites[site].submit(job, Err(why), actions),
                    None => self.sites[site].submit(job, Ok(exit), actions),
                }
                self.carry_out(site);
            }
            Command::Release { job, site, delete } => {
                self.sites[site].release(job, &delete, &mut self.actions);
                self.carry_out(site);
            }
            // The script runs for its exit status; it takes the testbed's
            // `script_time`, not its real time.
            Command::RunScript {
                job,
                kind,
                macros,
                duration,
                ..
            } => self.start_script(job, kind, &macros, duration),
            Command::Kill { job, site } => {
                self.sites[site].kill(job, &mut self.actions);
                self.carry_out(site);
            }
            Command::Remove { job, site } => {
                self.sites[site].remove(job, &mut self.actions);
                self.carry_out(site);
            }
            Command::ReadSubDag { subdag, .. } => self.read_subdag(subdag),
            Command::Cleanup { site, file } => self.sites[site].cleanup(file),
            Command::Delete { site, file } => {
                self.sites[site].delete(file, &mut self.actions);
                self.carry_out(site);
            }
        }
    }

    /// DAGMan submits a deferred sub-DAG: its file is read now, and its
    /// nodes join the run.
    fn read_subdag(&mut self, subdag: usize) {
        // The sites and the simulator let go of the workflow while the
        // manager grows it: held by it alone, it grows in place, where a
        // copy of the whole workflow per sub-DAG read would make a run of
        // many sub-DAGs quadratic.
        let before = self.wf.job_count();
        self.hold(Arc::default());
        let mut out = Vec::new();
        let reader = self.subdags.as_mut();
        let scripts = crate::config::SubDagReader::answer(
            reader,
            &mut self.manager,
            self.now,
            subdag,
            &mut out,
        );
        let wf = self.manager.run_dag().clone();
        if wf.job_count() > before && !self.scripts.is_empty() {
            self.scripts.resize(before, None);
            self.scripts.extend(scripts);
        }
        self.hold(wf);
        for c in out {
            self.apply(c);
        }
    }

    /// The simulator and every site now hold `wf`.
    fn hold(&mut self, wf: Arc<RunDag>) {
        for site in &mut self.sites {
            site.graft(wf.clone());
        }
        self.wf = wf;
    }

    /// Carries out what `site` decided: events reach the manager right after
    /// the current one, in order; runs end after their nominal time; removed
    /// bytes are only counted, so there is nothing to delete.
    fn carry_out(&mut self, site: SiteId) {
        let mut actions = std::mem::take(&mut self.actions);
        for a in actions.drain(..) {
            match a {
                SiteAction::Emit(e) => self.at(self.now, Ev::Deliver(e)),
                SiteAction::Run { job, nominal } => {
                    self.at(self.now + nominal, Ev::JobDone { site, job })
                }
                SiteAction::Remove { .. } => {}
            }
        }
        self.actions = actions;
    }

    fn start_transfer(
        &mut self,
        id: TransferId,
        job: JobId,
        (file, source): (FileId, FileId),
        from: SiteId,
        to: SiteId,
    ) {
        let accepted = self.sites[to].begin_fetch(id, job, file, &mut self.actions);
        self.carry_out(to);
        if !accepted {
            return;
        }
        let (up, holds) = (self.sites[from].is_up(), self.sites[from].serves(source));
        if let Err(refusal) = self.sources[from].server.request(up, holds) {
            self.sites[to].end_fetch(id, file, Err(refusal.failure()), &mut self.actions);
            self.carry_out(to);
            return;
        }
        let (route, link_latency) = self.network.route(from, to);
        self.flows.insert(
            id,
            Flow {
                file,
                source,
                from,
                to,
                size: self.wf.files()[file].size,
                route,
                response: None,
            },
        );
        let at = self.now + self.sources[from].latency + link_latency;
        self.at(at, Ev::Stream(id));
    }

    /// Latency over (or a stall): the source's file server answers by
    /// [`FileServer::respond`] (a stalled response comes back here when the
    /// stall is over) and the bytes flow, only those before the reset when
    /// the connection is to be reset.
    fn stream(&mut self, id: TransferId) {
        let Some(flow) = self.flows.get(id) else {
            return;
        };
        let (from, source, size, route) = (flow.from, flow.source, flow.size, flow.route);
        let response = match flow.response {
            Some(r) => r,
            None => {
                let (up, holds) = (self.sites[from].is_up(), self.sites[from].serves(source));
                let r = match self.sources[from].server.respond(up, holds, size) {
                    Ok(r) => r,
                    Err(refusal) => return self.end_transfer(id, Err(refusal.failure())),
                };
                self.flows.get_mut(id).expect("looked up above").response = Some(r);
                if r.corrupt {
                    self.fault_at(from, Fault::Corrupt { transfer: id });
                }
                if let Some(seconds) = r.stall {
                    self.fault_at(
                        from,
                        Fault::Stall {
                            transfer: id,
                            seconds,
                        },
                    );
                    self.at(self.now + seconds, Ev::Stream(id));
                    return;
                }
                r
            }
        };
        let bytes = response.reset_after.unwrap_or(size) as f64;
        self.network.net.start(self.now, route, id, bytes);
        self.reschedule();
    }

    /// Tells the manager of a fault of `site`'s file server.
    fn fault_at(&mut self, site: SiteId, fault: Fault) {
        self.at(self.now, Ev::Deliver(Event::Fault { site, fault }));
    }

    /// The scenario's timed fault `i` happens: its site carries it out, and a
    /// crash ends every transfer into or out of the site.
    fn fault(&mut self, i: usize) {
        let (_, site, fault) = self.faults[i].clone();
        self.sites[site].fault(&fault, &mut self.actions);
        self.carry_out(site);
        if !matches!(fault, Fault::Crash { .. }) {
            return;
        }
        let cut: Vec<(TransferId, RouteId)> = self
            .flows
            .iter()
            .filter(|(_, f)| f.from == site || f.to == site)
            .map(|(id, f)| (id, f.route))
            .collect();
        for (id, route) in cut {
            self.network.net.remove(self.now, route, id);
            self.end_transfer(id, Err(TransferFailure::Connection("site crashed".into())));
        }
        self.reschedule();
    }

    /// Schedules the next flow end of every share the network re-rated, at
    /// its new rate.
    fn reschedule(&mut self) {
        let (now, queue, immediate) = (self.now, &mut self.queue, &mut self.immediate);
        self.network
            .net
            .schedule_changed(now, |at, share, generation| {
                schedule(
                    queue,
                    immediate,
                    now,
                    at,
                    Ev::ShareNext { share, generation },
                )
            });
    }

    fn share_next(&mut self, share: ShareId, generation: u64) {
        let Some(done) = self.network.net.take_ended(self.now, share, generation) else {
            return;
        };
        for id in done {
            let result = match self.flows.get(id) {
                Some(f) => match f.response.unwrap_or_default() {
                    r if r.reset_after.is_some() => {
                        self.fault_at(f.from, Fault::Reset { transfer: id });
                        Err(TransferFailure::Connection(RESET.into()))
                    }
                    r if r.corrupt => Err(TransferFailure::Corrupt(CORRUPT.into())),
                    _ => Ok(f.size),
                },
                None => Ok(0),
            };
            self.end_transfer(id, result);
        }
        self.reschedule();
    }

    /// A transfer is over: free its connection and tell the manager.
    fn end_transfer(&mut self, id: TransferId, result: Result<u64, TransferFailure>) {
        let Some(flow) = self.flows.take(id) else {
            return;
        };
        if result.is_ok() {
            self.transfers += 1;
        }
        self.sites[flow.to].end_fetch(id, flow.file, result, &mut self.actions);
        self.sources[flow.from].server.close();
        self.carry_out(flow.to);
    }

    fn load_changes(&mut self, site: SiteId) {
        self.sites[site].step_load(&mut self.actions);
        if let Some(next) = self.sites[site].next_load_change() {
            self.at(next, Ev::Load { site });
        }
        self.carry_out(site);
    }

    fn job_done(&mut self, site: SiteId, job: JobId) {
        // Outputs are only counted here: written as soon as reserved.
        if self.sites[site].end_run(job, &mut self.actions).is_some() {
            self.sites[site].outputs_written(job, Ok(()), &mut self.actions);
        }
        self.carry_out(site);
    }
}
