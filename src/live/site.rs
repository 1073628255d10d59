//! The site actor: one grid site of seed 000's model, made real.
//!
//! It owns a `tempfile::TempDir` as its storage pool (byte accounting and
//! eviction by [`crate::core::storage::Pool`], the bytes in a [`Store`]), its
//! CPU slots and its FIFO queue. It pulls the files the manager stages to it
//! from other sites' gridftp endpoints, and runs "mock jobs" as in the papers'
//! live runs: check that every input is present and intact (size and sha256),
//! sleep `(runtime / speed + overhead) / time_scale`, write the outputs (bytes
//! derived from name and seed, scaled size).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use tempfile::TempDir;

use super::messages::{
    Fetch, FileCheck, Kill, Pin, Release, RunScript, SiteEvent, SiteReport, Submit, TakeInventory,
};
use super::store::{self, Store};
use super::{Shared, transfer};
use crate::config::SiteConfig;
use crate::core::background::Load;
use crate::core::storage::Pool;
use crate::core::{Event, FileId, JobFailure, JobId, SiteId, TransferFailure};

/// Real seconds as a duration; absurd values (a runtime of 1e300 s) saturate
/// instead of panicking.
pub fn real_duration(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs.max(0.0)).unwrap_or(Duration::from_secs(u32::MAX as u64))
}

/// One site. See the module docs.
pub struct SiteActor {
    id: SiteId,
    cfg: SiteConfig,
    shared: Arc<Shared>,
    pool: Pool,
    store: Store,
    _dir: Arc<TempDir>,
    queue: VecDeque<JobId>,
    running: usize,
    manager: Recipient<SiteEvent>,
    jobs_run: u64,
    busy_waits: u64,
    real_bytes_in: u64,
    /// Other users' load, and the slots it really holds now.
    load: Option<Load>,
    busy: usize,
}

impl Actor for SiteActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Many queued messages per job at high dispatch rates.
        ctx.set_mailbox_capacity(usize::MAX);
        // Per-site counters exist from the start (at 0), so that a rate or a
        // dashboard panel has a series before the first event.
        let m = &self.shared.metrics;
        for counter in [
            &m.evictions,
            &m.jobs_killed,
            &m.kills_void,
            &m.transfer_busy_waits,
        ] {
            counter.with_label_values(&[self.name()]);
        }
        if let Some(model) = self
            .cfg
            .background
            .clone()
            .filter(|_| self.cfg.info.cpus > 0)
        {
            let seed = SiteConfig::load_seed(self.shared.seed, self.id);
            let load = Load::new(model, self.cfg.info.cpus, seed);
            self.busy = load.busy();
            self.load = Some(load);
            self.schedule_load_change(Instant::now(), ctx);
        }
        self.publish();
    }
}

impl SiteActor {
    /// Arms the timer of the next background-load change, at its nominal
    /// instant after `origin` (absolute, so that changes do not drift).
    fn schedule_load_change(&mut self, origin: Instant, ctx: &mut Context<Self>) {
        let Some(at) = self.load.as_ref().and_then(Load::next_change) else {
            return;
        };
        let due = origin + real_duration(self.shared.emulation.real_secs(at));
        ctx.run_later(
            due.saturating_duration_since(Instant::now()),
            move |act, ctx| {
                if let Some(load) = act.load.as_mut() {
                    act.busy = load.step();
                }
                act.try_start(ctx);
                act.publish();
                act.schedule_load_change(origin, ctx);
            },
        );
    }

    /// A site over an already filled pool.
    pub fn new(
        id: SiteId,
        cfg: SiteConfig,
        shared: Arc<Shared>,
        pool: Pool,
        store: Store,
        dir: Arc<TempDir>,
        manager: Recipient<SiteEvent>,
    ) -> Self {
        SiteActor {
            id,
            cfg,
            shared,
            pool,
            store,
            _dir: dir,
            queue: VecDeque::new(),
            running: 0,
            manager,
            jobs_run: 0,
            busy_waits: 0,
            real_bytes_in: 0,
            busy: 0,
            load: None,
        }
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
            .set(self.queue.len() as i64);
        m.site_jobs
            .with_label_values(&[n, "running"])
            .set(self.running as i64);
        m.slots_busy
            .with_label_values(&[n])
            .set(self.running as i64);
        m.slots_total
            .with_label_values(&[n])
            .set(self.cfg.info.cpus as i64);
        m.slots_background
            .with_label_values(&[n])
            .set(self.busy as i64);
        m.storage_used
            .with_label_values(&[n])
            .set(self.pool.used() as i64);
        m.storage_capacity
            .with_label_values(&[n])
            .set(self.pool.capacity() as i64);
    }

    /// Deletes evicted files and tells the manager, so the RLS stays true.
    fn evicted(&mut self, files: Vec<FileId>) {
        if files.is_empty() {
            return;
        }
        self.shared
            .metrics
            .evictions
            .with_label_values(&[self.name()])
            .inc_by(files.len() as u64);
        for f in files {
            self.store.remove(&self.shared.encoded[f]);
            self.emit(Event::FileEvicted {
                site: self.id,
                file: f,
            });
        }
    }

    fn job_inputs(&self, job: JobId) -> impl Iterator<Item = (FileId, u64)> + '_ {
        let wf = &self.shared.workflow;
        wf.jobs[job].inputs.iter().map(|&f| (f, wf.files[f].size))
    }

    fn on_fetch(&mut self, m: Fetch, ctx: &mut Context<Self>) {
        let size = self.shared.workflow.files[m.file].size;
        match self.pool.begin_write(m.file, size) {
            Err(e) => {
                let never = e.never || !self.pool.could_ever_hold(self.job_inputs(m.job));
                let result = Err(TransferFailure::NoSpace { never });
                self.emit(Event::TransferDone { id: m.id, result });
            }
            Ok(r) => {
                self.evicted(r.evicted);
                let shared = self.shared.clone();
                let store = self.store.clone();
                let from = m.from;
                let started = Instant::now();
                let fut = async move {
                    let enc = &shared.encoded[m.file];
                    transfer::pull(&shared.client, &shared.urls[from], &store, enc, m.id).await
                };
                ctx.spawn(fut.into_actor(self).map(move |res, act, _| {
                    act.on_pulled(m, size, started.elapsed(), res);
                }));
            }
        }
        self.publish();
    }

    fn on_pulled(
        &mut self,
        m: Fetch,
        size: u64,
        took: Duration,
        res: Result<transfer::Pulled, TransferFailure>,
    ) {
        let metrics = &self.shared.metrics;
        let from = self.shared.site_names[m.from].as_str();
        let labels = [from, self.cfg.info.name.as_str()];
        let result = match res {
            Ok(p) => {
                self.pool.commit_write(m.file);
                self.busy_waits += p.busy_waits as u64;
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
                if p.busy_waits > 0 {
                    metrics
                        .transfer_busy_waits
                        .with_label_values(&[from])
                        .inc_by(p.busy_waits as u64);
                }
                Ok(size)
            }
            Err(e) => {
                self.pool.abort_write(m.file);
                let reason = match &e {
                    TransferFailure::Corrupt(_) => "corrupt",
                    TransferFailure::Connection(_) => "connection",
                    TransferFailure::SourceMissing => "source_missing",
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
        self.emit(Event::TransferDone { id: m.id, result });
        self.publish();
    }

    /// Starts queued jobs while slots are free (FIFO).
    fn try_start(&mut self, ctx: &mut Context<Self>) {
        while self.running < self.cfg.info.cpus.saturating_sub(self.busy) {
            let Some(job) = self.queue.pop_front() else {
                break;
            };
            let wf = self.shared.workflow.clone();
            let spec = &wf.jobs[job];
            if let Some(&f) = spec.inputs.iter().find(|&&f| !self.pool.has(f)) {
                let failure = JobFailure::MissingInput(wf.files[f].name.clone());
                self.emit(Event::JobEnded {
                    job,
                    site: self.id,
                    result: Err(failure),
                });
                continue;
            }
            for &f in &spec.inputs {
                self.pool.touch(f);
            }
            self.running += 1;
            self.jobs_run += 1;
            self.emit(Event::JobStarted { job, site: self.id });
            let info = &self.cfg.info;
            let nominal = spec.runtime / info.speed + info.overhead;
            let until =
                Instant::now() + Duration::from_secs_f64(self.shared.emulation.real_secs(nominal));
            let encs: Vec<String> = spec
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
                        encs.iter().try_for_each(|e| {
                            store::verify(&store, e).map_err(|m| format!("{e}: {m}"))
                        })
                    })
                    .await
                    .unwrap_or_else(|e| Err(e.to_string()))
                };
                tokio::time::sleep_until(until.into()).await;
                checked
            };
            ctx.spawn(
                fut.into_actor(self)
                    .map(move |res, act, ctx| act.on_ran(job, res, ctx)),
            );
        }
        self.publish();
    }

    fn on_ran(&mut self, job: JobId, checked: Result<(), String>, ctx: &mut Context<Self>) {
        if let Err(msg) = checked {
            self.finish(job, Err(JobFailure::MissingInput(msg)), ctx);
            return;
        }
        let wf = self.shared.workflow.clone();
        let outputs = &wf.jobs[job].outputs;
        if outputs.is_empty() {
            self.finish(job, Ok(()), ctx);
            return;
        }
        let mut reserved = Vec::new();
        for &o in outputs {
            match self.pool.begin_write(o, wf.files[o].size) {
                Ok(r) => {
                    self.evicted(r.evicted);
                    reserved.push(o);
                }
                Err(e) => {
                    for &r in &reserved {
                        self.pool.abort_write(r);
                    }
                    self.finish(job, Err(JobFailure::NoSpace { never: e.never }), ctx);
                    return;
                }
            }
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
                        &file.name,
                        len,
                    )
                    .map_err(|e| format!("writing {}: {e}", file.name))?;
                }
                Ok::<_, String>(reserved)
            })
            .await
            .unwrap_or_else(|e| Err(e.to_string()))
        };
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| match res {
            Ok(written) => {
                for o in written {
                    act.pool.commit_write(o);
                    act.pool.keep(o);
                }
                act.finish(job, Ok(()), ctx);
            }
            Err(msg) => {
                for &o in &act.shared.workflow.jobs[job].outputs {
                    act.pool.abort_write(o);
                }
                act.finish(job, Err(JobFailure::Failed(msg)), ctx);
            }
        }));
    }

    fn finish(&mut self, job: JobId, result: Result<(), JobFailure>, ctx: &mut Context<Self>) {
        self.running -= 1;
        self.emit(Event::JobEnded {
            job,
            site: self.id,
            result,
        });
        self.try_start(ctx);
    }

    /// Removes a job still waiting in the queue. A job that already took a
    /// slot is not touched: it runs to its end and the kill is void.
    fn on_kill(&mut self, job: JobId) {
        let killed = match self.queue.iter().position(|&j| j == job) {
            Some(i) => {
                self.queue.remove(i);
                self.shared
                    .metrics
                    .jobs_killed
                    .with_label_values(&[self.name()])
                    .inc();
                true
            }
            None => {
                self.shared
                    .metrics
                    .kills_void
                    .with_label_values(&[self.name()])
                    .inc();
                false
            }
        };
        self.emit(Event::JobKilled {
            job,
            site: self.id,
            killed,
        });
        self.publish();
    }

    fn inventory(&self) -> SiteReport {
        let mut files: Vec<FileCheck> = self
            .pool
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
            evictions: self.pool.evictions(),
            used: self.pool.used(),
            capacity: self.pool.capacity(),
            jobs_run: self.jobs_run,
            busy_waits: self.busy_waits,
            real_bytes_in: self.real_bytes_in,
        }
    }
}

impl Handler<Pin> for SiteActor {
    type Result = ();
    fn handle(&mut self, m: Pin, _: &mut Context<Self>) {
        let inputs = self.shared.workflow.jobs[m.job].inputs.clone();
        self.pool.pin_job(m.job, &inputs);
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
    fn handle(&mut self, m: Submit, ctx: &mut Context<Self>) {
        self.queue.push_back(m.job);
        self.try_start(ctx);
    }
}

impl Handler<Kill> for SiteActor {
    type Result = ();
    fn handle(&mut self, m: Kill, _: &mut Context<Self>) {
        self.on_kill(m.job);
    }
}

impl Handler<Release> for SiteActor {
    type Result = ();
    fn handle(&mut self, m: Release, _: &mut Context<Self>) {
        for f in self.pool.release_job(m.job, &m.delete) {
            self.store.remove(&self.shared.encoded[f]);
        }
        self.publish();
    }
}

impl Handler<TakeInventory> for SiteActor {
    type Result = MessageResult<TakeInventory>;
    fn handle(&mut self, _: TakeInventory, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.inventory())
    }
}

impl Handler<RunScript> for SiteActor {
    type Result = ();
    /// Runs a DAGMan PRE/POST script as a process in this site's pool (its
    /// working directory), macros substituted; answers with its exit status
    /// (127 when it cannot be started, 128 + signal when killed by one).
    fn handle(&mut self, m: RunScript, ctx: &mut Context<Self>) {
        let script = self
            .shared
            .scripts
            .get(m.job)
            .and_then(Option::as_ref)
            .and_then(|n| {
                let s = match m.kind {
                    crate::core::ScriptKind::Pre => n.pre.as_ref(),
                    crate::core::ScriptKind::Post => n.post.as_ref(),
                }?;
                Some((s.0.clone(), n.args(&s.1, m.retry, m.status)))
            });
        let (job, kind) = (m.job, m.kind);
        let Some((exe, args)) = script else {
            self.emit(Event::ScriptDone {
                job,
                kind,
                status: 0,
            });
            return;
        };
        let dir = self.store.dir().to_path_buf();
        let fut = async move {
            match tokio::process::Command::new(&exe)
                .args(&args)
                .current_dir(&dir)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .await
            {
                Ok(st) => {
                    use std::os::unix::process::ExitStatusExt;
                    st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0))
                }
                Err(e) => {
                    tracing::warn!("script {}: {e}", exe.display());
                    127
                }
            }
        };
        ctx.spawn(fut.into_actor(self).map(move |status, act, _| {
            act.emit(Event::ScriptDone { job, kind, status });
        }));
    }
}
