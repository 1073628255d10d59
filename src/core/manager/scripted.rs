//! A scripted world for the manager: the smallest engine that carries out
//! its commands, with no actors, no clock and no bytes. Its sites are the
//! engines' own [`Site`] (FIFO queue, CPU slots, pool, the moment outputs
//! are reserved) and its sources the engines' own [`FileServer`]; transfers
//! take [`transfer`](ScriptedWorld::transfer) seconds and jobs their
//! runtime. Knobs script what the manager must survive (corrupt transfers, a
//! source that refuses, servers at their connections, sites whose slots are
//! taken, a kill racing a start, failing DAGMan scripts). The manager's unit
//! tests and `gridbed bench manager` both drive it, and a new site selector
//! can be tried in it without an engine.

use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use super::{Command, Event, Manager, ManagerSettings, ScriptKind, TransferFailure, TransferId};
use crate::core::background::{Background, Load};
use crate::core::events::EventQueue;
use crate::core::file_server::{FileServer, ResponseFaults};
use crate::core::seams::{EvictionPolicy, SiteSelector};
use crate::core::site::{Site, SiteAction};
use crate::core::storage::Pool;
use crate::core::nodes::Graft;
use crate::core::{FileId, JobId, SiteId, SiteInfo, Time, Workflow};

/// What happens next in the world.
enum Happening {
    /// The manager hears of this.
    Tell(Event),
    /// A job's program ends on a site.
    RunEnds { site: SiteId, job: JobId },
    /// A transfer's bytes have all arrived (or it failed); `server` is the
    /// source whose connection it held.
    FetchEnds {
        id: TransferId,
        file: FileId,
        server: Option<SiteId>,
        to: SiteId,
        result: Result<u64, TransferFailure>,
    },
}

/// The world, its manager and what it counted.
pub struct ScriptedWorld {
    /// The manager it drives.
    pub m: Manager,
    /// Each site's pool until the run starts (origins hold the workflow's
    /// inputs; [`place_origin`](Self::place_origin) adds more), then each
    /// site.
    pools: Vec<Pool>,
    sites: Vec<Site>,
    servers: Vec<FileServer>,
    events: EventQueue<Happening>,
    now: Time,
    /// Seconds a transfer takes (5 unless set).
    pub transfer: f64,
    /// Transfers that arrive corrupt before the rest arrive intact.
    pub corrupt_first: usize,
    /// A source whose every transfer is refused.
    pub fail_from: Option<SiteId>,
    /// Responses every source serves at once; more are refused as busy
    /// (no limit by default).
    pub max_connections: Option<usize>,
    /// Sites whose slots are all taken by other users: nothing starts there.
    pub blocked: Vec<bool>,
    /// On a Kill, start the job first if it is next in line (the race).
    pub start_before_kill: bool,
    /// Scripts that fail (exit 1) the next time they run.
    pub failing_scripts: Vec<(JobId, ScriptKind)>,
    /// Each DAGMan script run: (job, kind, `$RETURN` passed), in order.
    pub scripts_run: Vec<(JobId, ScriptKind, i32)>,
    /// The `$DAG_STATUS` each of `scripts_run` was given.
    pub scripts_dag_status: Vec<i32>,
    /// Per job: runs that ended successfully (exactly 1 at the end of a
    /// run where nothing is lost or run twice).
    pub ended_ok: Vec<u32>,
    /// When each [`Command::Pin`] (a prescript's start) came.
    pub pin_times: Vec<Time>,
    /// Most prescripts running at once.
    pub max_prescripts: usize,
    /// Transfers a source accepted.
    pub transfers: usize,
    /// Each [`Command::Cleanup`] (site, file), in order.
    pub cleaned: Vec<(SiteId, FileId)>,
    /// What reading each deferred sub-DAG gives, in turn (none left: the
    /// file cannot be read).
    pub grafts: HashMap<usize, VecDeque<Result<Graft, String>>>,
    /// Jobs whose every submission fails (no program to run).
    pub unsubmittable: Vec<JobId>,
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
            sites: Vec::new(),
            servers: Vec::new(),
            events: EventQueue::new(),
            now: 0.0,
            transfer: 5.0,
            corrupt_first: 0,
            fail_from: None,
            max_connections: None,
            blocked: vec![false; m],
            start_before_kill: false,
            failing_scripts: Vec::new(),
            scripts_run: Vec::new(),
            scripts_dag_status: Vec::new(),
            ended_ok: vec![0; n],
            pin_times: Vec::new(),
            max_prescripts: 0,
            transfers: 0,
            cleaned: Vec::new(),
            grafts: HashMap::default(),
            unsubmittable: Vec::new(),
        }
    }

    /// Before the run: a file the manager does not know of takes `size`
    /// bytes of `site`'s disk for good. (The manager's unit tests' knob.)
    #[cfg(test)]
    pub fn place_origin(
        &mut self,
        site: SiteId,
        file: FileId,
        size: u64,
    ) -> Result<(), crate::core::storage::NoSpace> {
        self.pools[site].place_origin(file, size)
    }

    /// Site `site`'s pool (as it is now). (The manager's unit tests' knob.)
    #[cfg(test)]
    pub fn pool(&self, site: SiteId) -> &Pool {
        match self.sites.get(site) {
            Some(s) => s.pool(),
            None => &self.pools[site],
        }
    }

    /// Jobs holding a slot at `site` now. (The manager's unit tests' knob.)
    #[cfg(test)]
    pub fn running(&self, site: SiteId) -> usize {
        self.sites.get(site).map_or(0, Site::running)
    }

    /// `event` reaches the manager at `at` (a user's interrupt, say).
    /// (The manager's unit tests' knob.)
    #[cfg(test)]
    pub fn tell_at(&mut self, at: Time, event: Event) {
        self.events.push(at, Happening::Tell(event));
    }

    /// The run starts: each site over its pool (a blocked one with every
    /// slot held by other users), each source's file server.
    fn open(&mut self) {
        let wf = self.m.workflow().clone();
        let infos = self.m.sites().to_vec();
        for (i, pool) in std::mem::take(&mut self.pools).into_iter().enumerate() {
            let info = infos[i].clone();
            let load = self.blocked[i].then(|| full(info.cpus));
            self.sites.push(Site::new(i, info, wf.clone(), pool, load));
            let connections = self.max_connections.unwrap_or(usize::MAX);
            self.servers
                .push(FileServer::new(connections, ResponseFaults::none()));
        }
    }

    /// Carries out what `site` asked for, in order.
    fn carry_out(&mut self, site: SiteId, actions: Vec<SiteAction>) {
        for a in actions {
            match a {
                SiteAction::Emit(e) => {
                    if let Event::JobEnded {
                        job, result: Ok(()), ..
                    } = &e
                    {
                        self.ended_ok[*job] += 1;
                    }
                    self.events.push(self.now, Happening::Tell(e));
                }
                SiteAction::Run { job, nominal } => {
                    self.events
                        .push(self.now + nominal, Happening::RunEnds { site, job });
                }
                // No bytes to remove.
                SiteAction::Remove { .. } => {}
            }
        }
    }

    fn apply(&mut self, cmds: &mut Vec<Command>) {
        for c in cmds.drain(..) {
            let mut out = Vec::new();
            let site = match c {
                Command::Kill { job, site } => {
                    if self.start_before_kill && self.sites[site].next_queued() == Some(job) {
                        // The slot freed just before the kill arrived.
                        self.sites[site].set_load(None, &mut out);
                        let cpus = self.m.sites()[site].cpus;
                        self.sites[site].set_load(Some(full(cpus)), &mut out);
                    }
                    self.sites[site].kill(job, &mut out);
                    site
                }
                Command::Remove { job, site } => {
                    self.sites[site].remove(job, &mut out);
                    site
                }
                Command::Pin { job, site } => {
                    self.pin_times.push(self.now);
                    self.sites[site].pin(job);
                    site
                }
                Command::StartTransfer {
                    id,
                    job,
                    file,
                    source,
                    from,
                    to,
                } => {
                    self.start_transfer(id, job, (file, source), from, to);
                    continue;
                }
                Command::Submit {
                    job, site, exit, ..
                } => {
                    let exit = match self.unsubmittable.contains(&job) {
                        true => Err("its executable does not exist".to_string()),
                        false => Ok(exit),
                    };
                    self.sites[site].submit(job, exit, &mut out);
                    site
                }
                Command::Release { job, site, delete } => {
                    self.sites[site].release(job, &delete, &mut out);
                    site
                }
                Command::Cleanup { site, file } => {
                    self.cleaned.push((site, file));
                    self.sites[site].cleanup(file);
                    site
                }
                Command::Delete { site, file } => {
                    self.sites[site].delete(file, &mut out);
                    site
                }
                Command::RunScript {
                    job,
                    kind,
                    macros,
                    duration,
                    ..
                } => {
                    self.scripts_run.push((job, kind, macros.status));
                    self.scripts_dag_status.push(macros.dag_status);
                    let status = i32::from(self.failing_scripts.contains(&(job, kind)));
                    self.failing_scripts.retain(|&(j, k)| (j, k) != (job, kind));
                    let done = Event::ScriptDone { job, kind, status };
                    self.events.push(self.now + duration, Happening::Tell(done));
                    continue;
                }
                Command::ReadSubDag { subdag, .. } => {
                    let graft = (self.grafts.get_mut(&subdag))
                        .and_then(VecDeque::pop_front)
                        .unwrap_or_else(|| Err("no such file".into()));
                    let mut more = Vec::new();
                    let _ = self.m.graft(self.now, subdag, graft, &mut more);
                    let wf = self.m.run_dag().clone();
                    for site in &mut self.sites {
                        site.graft(wf.clone());
                    }
                    self.ended_ok.resize(wf.job_count(), 0);
                    self.apply(&mut more);
                    continue;
                }
            };
            self.carry_out(site, out);
        }
    }

    /// As the engines do: the destination reserves room, then the source's
    /// server answers; the bytes arrive [`transfer`](Self::transfer)
    /// seconds later.
    fn start_transfer(
        &mut self,
        id: TransferId,
        job: JobId,
        (file, source): (FileId, FileId),
        from: SiteId,
        to: SiteId,
    ) {
        let mut out = Vec::new();
        let accepted = self.sites[to].begin_fetch(id, job, file, &mut out);
        self.carry_out(to, out);
        if !accepted {
            return;
        }
        let ends = |server, result| Happening::FetchEnds {
            id,
            file,
            server,
            to,
            result,
        };
        if self.fail_from == Some(from) {
            let refused = Err(TransferFailure::Connection("refused".into()));
            self.events.push(self.now + 1.0, ends(None, refused));
            return;
        }
        let (up, holds) = (self.sites[from].is_up(), self.sites[from].serves(source));
        let size = self.m.workflow().files[file].size;
        let server = &mut self.servers[from];
        let answer = server.request(up, holds).and_then(|()| {
            server.respond(up, holds, size).inspect_err(|_| server.close())
        });
        if let Err(refusal) = answer {
            let mut out = Vec::new();
            self.sites[to].end_fetch(id, file, Err(refusal.failure()), &mut out);
            return self.carry_out(to, out);
        }
        self.transfers += 1;
        let result = if self.corrupt_first > 0 {
            self.corrupt_first -= 1;
            Err(TransferFailure::Corrupt("flipped".into()))
        } else {
            Ok(size)
        };
        self.events
            .push(self.now + self.transfer, ends(Some(from), result));
    }

    /// Carries out what happens now in the world; an event for the manager
    /// is handed back.
    fn happen(&mut self, h: Happening) -> Option<Event> {
        let mut actions = Vec::new();
        match h {
            Happening::Tell(e) => return Some(e),
            Happening::RunEnds { site, job } => {
                let s = &mut self.sites[site];
                if s.end_run(job, &mut actions).is_some() {
                    s.outputs_written(job, Ok(()), &mut actions);
                }
                self.carry_out(site, actions);
            }
            Happening::FetchEnds {
                id,
                file,
                server,
                to,
                result,
            } => {
                if let Some(from) = server {
                    self.servers[from].close();
                }
                self.sites[to].end_fetch(id, file, result, &mut actions);
                self.carry_out(to, actions);
            }
        }
        None
    }
}

/// Other users' load holding every one of `cpus` slots for good.
fn full(cpus: usize) -> Load {
    Load::new(Background::Trace(vec![(0.0, cpus)]), cpus, 0)
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
        self.open();
        let wf = self.m.workflow().clone();
        let bound = 64 * (wf.jobs.len() + wf.references()) + 100_000;
        let mut out = Vec::new();
        handle(&mut self.m, 0.0, Event::Tick, &mut out);
        self.apply(&mut out);
        for _ in 0..bound {
            let next_event = self.events.peek_time();
            let wake = self.m.next_wakeup();
            let (when, h) = match (next_event, wake) {
                (Some(e), Some(w)) if w < e => (w, Happening::Tell(Event::Tick)),
                (Some(_), _) => self.events.pop().expect("an event is due"),
                (None, Some(w)) => (w, Happening::Tell(Event::Tick)),
                (None, None) => break,
            };
            self.now = when;
            if let Some(ev) = self.happen(h) {
                handle(&mut self.m, when, ev, &mut out);
                self.max_prescripts = self.max_prescripts.max(self.m.prescripts_running());
                self.apply(&mut out);
            }
        }
    }
}
