//! The site actor: one grid site of seed 000's model, made real.
//!
//! The site's rules — FIFO queue, CPU slots less background load, input
//! checks, pool accounting and eviction — are [`crate::core::site::Site`],
//! the same state machine the simulator drives; this actor carries out its
//! decisions with real bytes (a `tempfile::TempDir` as the pool, the bytes in
//! a [`Store`]) and the wall clock. It pulls the files the manager stages to it
//! from other sites' gridftp endpoints, and runs "mock jobs" as in the papers'
//! live runs: check that every input is present and intact (size and sha256),
//! sleep `(runtime / speed + overhead) / time_scale`, write the outputs (bytes
//! derived from name and seed, scaled size).

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use tempfile::TempDir;

use super::messages::{
    AddJobs, Cleanup, Delete, Fetch, FileCheck, Kill, Pin, Release, Remove, RunScript, SiteEvent, SiteFault,
    SiteReport, Submit, TakeInventory,
};
use super::store::{self, Store};
use super::{Shared, transfer};
use crate::config::SiteConfig;
use crate::core::faults::Fault;
use crate::core::site::{Site, SiteAction};
use crate::core::{Event, JobFailure, JobId, TransferFailure};
use crate::workflow::formats::dagman::{Invocation, program};

/// Real seconds as a duration; absurd values (a runtime of 1e300 s) saturate
/// instead of panicking.
pub fn real_duration(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs.max(0.0)).unwrap_or(Duration::from_secs(u32::MAX as u64))
}

/// One site. See the module docs.
pub struct SiteActor {
    cfg: SiteConfig,
    shared: Arc<Shared>,
    /// The site's rules and accounting, shared with the simulator.
    site: Site,
    /// Scratch for the site's actions.
    actions: Vec<SiteAction>,
    store: Store,
    _dir: Arc<TempDir>,
    manager: Recipient<SiteEvent>,
    real_bytes_in: u64,
    /// Transfers into the site in flight (a crash ends them at once).
    fetching: rustc_hash::FxHashMap<crate::core::TransferId, crate::core::FileId>,
    /// PRE and POST scripts running here, by node (a removal kills them).
    scripts: rustc_hash::FxHashMap<JobId, SpawnHandle>,
    /// The scripts of jobs a sub-DAG read as the run goes added.
    added_scripts: rustc_hash::FxHashMap<JobId, crate::workflow::formats::dagman::NodeScripts>,
}

impl Actor for SiteActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Many queued messages per job at high dispatch rates.
        ctx.set_mailbox_capacity(super::MAILBOX);
        // Per-site counters exist from the start (at 0), so that a rate or a
        // dashboard panel has a series before the first event.
        let m = &self.shared.metrics;
        for counter in [&m.evictions, &m.jobs_killed, &m.kills_void] {
            counter.with_label_values(&[self.name()]);
        }
        self.schedule_load_change(Instant::now(), ctx);
        self.publish();
    }
}

impl SiteActor {
    /// Arms the timer of the next background-load change, at its nominal
    /// instant after `origin` (absolute, so that changes do not drift).
    fn schedule_load_change(&mut self, origin: Instant, ctx: &mut Context<Self>) {
        let Some(at) = self.site.next_load_change() else {
            return;
        };
        let due = origin + real_duration(self.shared.emulation.real_secs(at));
        ctx.run_later(
            due.saturating_duration_since(Instant::now()),
            move |act, ctx| {
                act.site.step_load(&mut act.actions);
                act.carry_out(ctx);
                act.schedule_load_change(origin, ctx);
            },
        );
    }

    /// The actor carrying out `site` (made by [`crate::config::SiteStart`],
    /// its files in `store`).
    pub fn new(
        cfg: SiteConfig,
        shared: Arc<Shared>,
        site: Site,
        store: Store,
        dir: Arc<TempDir>,
        manager: Recipient<SiteEvent>,
    ) -> Self {
        SiteActor {
            cfg,
            shared,
            site,
            actions: Vec::new(),
            store,
            _dir: dir,
            manager,
            real_bytes_in: 0,
            fetching: Default::default(),
            scripts: Default::default(),
            added_scripts: Default::default(),
        }
    }

    /// Carries out what the site decided, in order: events to the manager,
    /// jobs run for real (inputs verified, the scaled runtime slept), bytes
    /// removed from the pool.
    fn carry_out(&mut self, ctx: &mut Context<Self>) {
        let mut actions = std::mem::take(&mut self.actions);
        for a in actions.drain(..) {
            match a {
                SiteAction::Emit(e) => self.emit(e),
                SiteAction::Run { job, nominal } => self.run_job(job, nominal, ctx),
                SiteAction::Remove { file, evicted } => {
                    self.store.remove(&self.shared.encoded[file]);
                    if evicted {
                        self.shared
                            .metrics
                            .evictions
                            .with_label_values(&[self.name()])
                            .inc();
                    }
                }
            }
        }
        self.actions = actions;
        self.publish();
    }

    fn emit(&self, e: Event) {
        self.manager.do_send(SiteEvent(e));
    }

    fn name(&self) -> &str {
        &self.cfg.info.name
    }

    /// Pushes this site's gauges.
    fn publish(&self) {
        let m = &self.shared.metrics;
        let n = self.name();
        m.site_jobs
            .with_label_values(&[n, "queued"])
            .set(self.site.queued() as i64);
        m.site_jobs
            .with_label_values(&[n, "running"])
            .set(self.site.running() as i64);
        m.slots_busy
            .with_label_values(&[n])
            .set(self.site.running() as i64);
        m.slots_total
            .with_label_values(&[n])
            .set(self.cfg.info.cpus as i64);
        m.slots_background
            .with_label_values(&[n])
            .set(self.site.background_busy() as i64);
        m.storage_used
            .with_label_values(&[n])
            .set(self.site.pool().used() as i64);
        m.storage_capacity
            .with_label_values(&[n])
            .set(self.site.pool().capacity() as i64);
    }

    fn on_fetch(&mut self, m: Fetch, ctx: &mut Context<Self>) {
        let accepted = self
            .site
            .begin_fetch(m.id, m.job, m.file, &mut self.actions);
        self.carry_out(ctx);
        if !accepted {
            return;
        }
        self.fetching.insert(m.id, m.file);
        let size = self.shared.workflow.files[m.file].size;
        let shared = self.shared.clone();
        let store = self.store.clone();
        let url = m.url.clone().unwrap_or_else(|| shared.urls[m.from].clone());
        let (source, file, id) = (m.source, m.file, m.id);
        let path = shared.shapers.path(m.from, self.site.id());
        let started = Instant::now();
        let fut = async move {
            let (remote, enc) = (&shared.encoded[source], &shared.encoded[file]);
            transfer::pull_as(&shared.client, &url, remote, &store, enc, id, &path).await
        };
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
            act.on_pulled(m, size, started.elapsed(), res, ctx);
        }));
    }

    fn on_pulled(
        &mut self,
        m: Fetch,
        size: u64,
        took: Duration,
        res: Result<transfer::Pulled, TransferFailure>,
        ctx: &mut Context<Self>,
    ) {
        if self.fetching.remove(&m.id).is_none() {
            // Ended by a crash of this site: what arrived meanwhile goes.
            if res.is_ok() && !self.site.pool().has(m.file) {
                self.store.remove(&self.shared.encoded[m.file]);
            }
            return;
        }
        let metrics = &self.shared.metrics;
        let from = self.shared.site_names[m.from].as_str();
        let labels = [from, self.cfg.info.name.as_str()];
        let result = match res {
            Ok(p) => {
                self.real_bytes_in += p.meta.size;
                metrics.transfers.with_label_values(&labels).inc();
                metrics
                    .transfer_bytes
                    .with_label_values(&labels)
                    .inc_by(size);
                metrics
                    .transfer_real_bytes
                    .with_label_values(&labels)
                    .inc_by(p.meta.size);
                metrics
                    .transfer_duration
                    .with_label_values(&labels)
                    .observe(took.as_secs_f64());
                Ok(size)
            }
            Err(e) => {
                let reason = match &e {
                    TransferFailure::Corrupt(_) => "corrupt",
                    TransferFailure::Connection(_) => "connection",
                    TransferFailure::SourceMissing => "source_missing",
                    TransferFailure::Busy => "busy",
                    TransferFailure::NoSpace { .. } => "no_space",
                };
                metrics
                    .transfer_failures
                    .with_label_values(&[from, labels[1], reason])
                    .inc();
                tracing::debug!(site = %self.name(), file = %self.shared.encoded[m.file], ?e, "transfer failed");
                Err(e)
            }
        };
        self.site.end_fetch(m.id, m.file, result, &mut self.actions);
        self.carry_out(ctx);
    }

    /// Runs `job` for real: verifies its inputs (size and sha256) while it
    /// sleeps its scaled runtime, then [`Self::on_ran`].
    fn run_job(&mut self, job: JobId, nominal: f64, ctx: &mut Context<Self>) {
        let until = Instant::now() + real_duration(self.shared.emulation.real_secs(nominal));
        let encs: Vec<String> = self.site.workflow().job(job)
            .inputs
            .iter()
            .map(|&f| self.shared.encoded[f].clone())
            .collect();
        let store = self.store.clone();
        let fut = async move {
            // Checked while the job "runs": the sleep ends at the same
            // instant whether or not verification took a while.
            let checked = if encs.is_empty() {
                Ok(())
            } else {
                tokio::task::spawn_blocking(move || {
                    encs.iter()
                        .try_for_each(|e| store::verify(&store, e).map_err(|m| format!("{e}: {m}")))
                })
                .await
                .unwrap_or_else(|e| Err(e.to_string()))
            };
            super::timer::sleep_until(until.into()).await;
            checked
        };
        ctx.spawn(
            fut.into_actor(self)
                .map(move |res, act, ctx| act.on_ran(job, res, ctx)),
        );
    }

    fn on_ran(&mut self, job: JobId, checked: Result<(), String>, ctx: &mut Context<Self>) {
        if let Err(msg) = checked {
            self.site
                .fail_run(job, JobFailure::MissingInput(msg), &mut self.actions);
            self.carry_out(ctx);
            return;
        }
        let reserved = self.site.end_run(job, &mut self.actions);
        self.carry_out(ctx);
        let Some(reserved) = reserved else { return };
        if reserved.is_empty() {
            self.site.outputs_written(job, Ok(()), &mut self.actions);
            self.carry_out(ctx);
            return;
        }
        let shared = self.shared.clone();
        let store = self.store.clone();
        let fut = async move {
            tokio::task::spawn_blocking(move || {
                for &o in &reserved {
                    let file = &shared.workflow.files[o];
                    let len = shared.emulation.real_bytes(file.size);
                    store::write_generated(
                        &store,
                        &shared.encoded[o],
                        shared.seed,
                        shared.content_name(o),
                        len,
                    )
                    .map_err(|e| format!("writing {}: {e}", file.name))?;
                }
                Ok::<_, String>(())
            })
            .await
            .unwrap_or_else(|e| Err(e.to_string()))
        };
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
            if !act.site.is_ending(job) {
                // The site crashed while they were written: they go.
                for &o in &act.site.workflow().job(job).outputs {
                    if !act.site.pool().has(o) {
                        act.store.remove(&act.shared.encoded[o]);
                    }
                }
                return;
            }
            act.site.outputs_written(job, res, &mut act.actions);
            act.carry_out(ctx);
        }));
    }

    /// MonitQueue's kill, counted as done or void.
    fn on_kill(&mut self, job: JobId, ctx: &mut Context<Self>) {
        let counter = if self.site.kill(job, &mut self.actions) {
            &self.shared.metrics.jobs_killed
        } else {
            &self.shared.metrics.kills_void
        };
        counter.with_label_values(&[self.name()]).inc();
        self.carry_out(ctx);
    }

    fn inventory(&self) -> SiteReport {
        let mut files: Vec<FileCheck> = self
            .site
            .pool()
            .files()
            .map(|file| {
                let enc = &self.shared.encoded[file];
                let found = store::hash_file(&self.store.path(enc)).unwrap_or(store::FileMeta {
                    size: 0,
                    sha256: String::new(),
                });
                let intact = self.store.meta(enc).as_ref() == Some(&found);
                FileCheck {
                    file,
                    size: found.size,
                    sha256: found.sha256,
                    intact,
                }
            })
            .collect();
        files.sort_by_key(|c| c.file);
        let strays = std::fs::read_dir(self.store.dir())
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| self.store.meta(n).is_none())
                    .collect()
            })
            .unwrap_or_default();
        SiteReport {
            files,
            strays,
            evictions: self.site.pool().evictions(),
            used: self.site.pool().used(),
            peak_used: self.site.peak_used(),
            capacity: self.site.pool().capacity(),
            jobs_run: self.site.jobs_run(),
            real_bytes_in: self.real_bytes_in,
        }
    }
}

impl Handler<Pin> for SiteActor {
    type Result = ();
    fn handle(&mut self, m: Pin, _: &mut Context<Self>) {
        self.site.pin(m.job);
    }
}

impl Handler<Fetch> for SiteActor {
    type Result = ();
    fn handle(&mut self, m: Fetch, ctx: &mut Context<Self>) {
        self.on_fetch(m, ctx);
    }
}

impl Handler<Submit> for SiteActor {
    type Result = ();
    /// The job enters this site's queue; when the DAG's jobs run, its
    /// program runs first (on this host, as the scripts do) and its exit
    /// is the job's, or its submission fails when it has none to run.
    fn handle(&mut self, m: Submit, ctx: &mut Context<Self>) {
        let node = (self.shared.scripts.get(m.job).and_then(Option::as_ref))
            .or_else(|| self.added_scripts.get(&m.job));
        let exit = match node.and_then(|n| Some((n.job_invocation(&m.macros)?, &n.node))) {
            None => Ok(m.exit),
            Some((Ok(call), _)) => return self.run_program(m.job, call, ctx),
            Some((Err(why), node)) => Err(program::unsubmittable(node, &why)),
        };
        self.site.submit(m.job, exit, &mut self.actions);
        self.carry_out(ctx);
    }
}

impl SiteActor {
    /// Runs `job`'s programs `calls`, one a proc of its cluster, at once,
    /// until one fails, whereupon the others are killed (DAGMan removes a
    /// cluster's other procs when one fails); the job then enters the
    /// queue to exit as the cluster did ([`Site::submit_procs`]). Tracked
    /// as a script is: a removal meanwhile kills them, and the job never
    /// enters the queue.
    fn run_program(&mut self, job: JobId, calls: Vec<Invocation>, ctx: &mut Context<Self>) {
        let fut = async move {
            let mut exits = vec![None; calls.len()];
            let mut procs = tokio::task::JoinSet::new();
            for (i, call) in calls.into_iter().enumerate() {
                procs.spawn(async move { (i, run_process(&call).await) });
            }
            while let Some(ended) = procs.join_next().await {
                // A proc's task that panicked (not its program's exit):
                // the cluster fails as a program that could not start.
                let Ok((i, exit)) = ended else {
                    return (exits, false);
                };
                exits[i] = Some(exit);
                if exit != 0 {
                    // Dropping the set kills the procs still running.
                    break;
                }
            }
            (exits, true)
        };
        let handle = ctx.spawn(fut.into_actor(self).map(move |(exits, ran), act, ctx| {
            act.scripts.remove(&job);
            match ran {
                true => act.site.submit_procs(job, exits, &mut act.actions),
                false => act.site.submit(job, Ok(127), &mut act.actions),
            }
            act.carry_out(ctx);
        }));
        self.scripts.insert(job, handle);
    }
}

/// Runs `call` to its end, killed if its future is dropped (a removal),
/// and returns DAGMan's reading of its exit (127 when it cannot start).
async fn run_process(call: &Invocation) -> i32 {
    let output = match call.command() {
        Ok(c) => match tokio::process::Command::from(c).kill_on_drop(true).spawn() {
            Ok(child) => {
                // Ended by a signal's stop too ([`crate::interrupt`]).
                let _child = child.id().map(crate::interrupt::Child::work);
                child.wait_with_output().await
            }
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    };
    call.ended(output)
}

impl Handler<Kill> for SiteActor {
    type Result = ();
    fn handle(&mut self, m: Kill, ctx: &mut Context<Self>) {
        self.on_kill(m.job, ctx);
    }
}

impl Handler<Remove> for SiteActor {
    type Result = ();
    fn handle(&mut self, m: Remove, ctx: &mut Context<Self>) {
        if let Some(script) = self.scripts.remove(&m.job) {
            ctx.cancel_future(script);
        }
        self.site.remove(m.job, &mut self.actions);
        self.carry_out(ctx);
    }
}

impl Handler<Release> for SiteActor {
    type Result = ();
    fn handle(&mut self, m: Release, ctx: &mut Context<Self>) {
        self.site.release(m.job, &m.delete, &mut self.actions);
        self.carry_out(ctx);
    }
}

impl Handler<Delete> for SiteActor {
    type Result = ();
    fn handle(&mut self, m: Delete, ctx: &mut Context<Self>) {
        self.site.delete(m.file, &mut self.actions);
        self.carry_out(ctx);
    }
}

impl Handler<SiteFault> for SiteActor {
    type Result = ();
    /// A timed fault: the site state machine carries it out; a crash also
    /// takes the endpoint down and ends every transfer into the site.
    fn handle(&mut self, m: SiteFault, ctx: &mut Context<Self>) {
        let id = self.site.id();
        self.site.fault(&m.0, &mut self.actions);
        match m.0 {
            Fault::Crash { .. } => {
                self.shared.endpoints[id].set_down(true);
                for (t, file) in self.fetching.drain() {
                    let cut = Err(TransferFailure::Connection("site crashed".into()));
                    self.site.end_fetch(t, file, cut, &mut self.actions);
                }
            }
            Fault::Recover => self.shared.endpoints[id].set_down(false),
            _ => {}
        }
        self.carry_out(ctx);
    }
}

impl Handler<Cleanup> for SiteActor {
    type Result = ();
    fn handle(&mut self, m: Cleanup, _: &mut Context<Self>) {
        self.site.cleanup(m.file);
    }
}

impl Handler<TakeInventory> for SiteActor {
    type Result = MessageResult<TakeInventory>;
    fn handle(&mut self, _: TakeInventory, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.inventory())
    }
}

impl Handler<AddJobs> for SiteActor {
    type Result = ();
    fn handle(&mut self, m: AddJobs, _: &mut Context<Self>) {
        self.site.add_jobs(m.first, &m.jobs);
        let added = (m.first..).zip(m.scripts);
        self.added_scripts
            .extend(added.filter_map(|(j, s)| Some((j, s?))));
    }
}

impl Handler<RunScript> for SiteActor {
    type Result = ();
    /// Runs a DAGMan PRE/POST script as a process in this site's pool (its
    /// working directory), macros substituted; answers with its exit status
    /// (127 when it cannot be started, 128 + signal when killed by one).
    fn handle(&mut self, m: RunScript, ctx: &mut Context<Self>) {
        let script = (self.shared.scripts.get(m.job).and_then(Option::as_ref))
            .or_else(|| self.added_scripts.get(&m.job))
            .and_then(|n| n.invocation(m.kind, &m.macros));
        let (job, kind) = (m.job, m.kind);
        let Some(call) = script else {
            self.emit(Event::ScriptDone {
                job,
                kind,
                status: 0,
            });
            return;
        };
        // A removed node's script is killed with its future.
        let fut = async move { run_process(&call).await };
        let handle = ctx.spawn(fut.into_actor(self).map(move |status, act, _| {
            act.scripts.remove(&job);
            act.emit(Event::ScriptDone { job, kind, status });
        }));
        self.scripts.insert(job, handle);
    }
}
