//! The data-diffusion farm live (seed 001 §3 on real bytes): the same
//! sans-IO dispatcher as the simulated farm, on the wall clock, with every
//! executor a site actor that has a cache pool (its own temp dir) and a
//! gridftp endpoint, and the shared store a storage site whose endpoint is
//! shaped to its aggregate bandwidth (GPFS's 4 Gb/s in the paper).
//!
//! ```text
//!   dispatcher loop (core::farm::Dispatcher, wall clock × time_scale)
//!      │ Run / Commit / Stop                    ▲ Fetched / Done
//!      ▼                                        │
//!   Executor × (static, or as the provisioner allocates)
//!      │ pool: TempDir + Store, gridftp endpoint (peer bandwidth)
//!      │ reqwest GET: a peer's endpoint (global hit) or the store's (miss)
//!      ▼
//!   store endpoint (aggregate bandwidth), every file of the dataset
//! ```
//!
//! A read pulls the file into a hidden part file; the dispatcher, told it
//! arrived, decides whether it is cached and what is evicted for it, and
//! the executor applies that in the dispatcher's order (list the part file,
//! delete the evicted ones), so each pool holds exactly what the location
//! index says. A peer that evicted a file between dispatch and pull answers
//! 404 and the read goes to the store (counted as a miss); a read the store
//! fails too puts its task back in the wait queue. Allocation starts
//! an executor's pool, endpoint and actor; release stops them and deletes
//! the pool.
//!
//! This file is the engine (the dispatcher's loop, the store, allocation);
//! the executors' actor and its messages are in `executor.rs`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use futures_util::FutureExt as _;
use tokio::sync::mpsc;

use super::shaping::{self, PathShaping};
use super::store::{self, FileMeta, Store};
use super::{EngineError, gridftp, names, transfer};
use crate::config::Emulation;
use crate::core::TransferFailure;
use crate::core::cache_index::ExecId;
use crate::core::farm::{
    Counts, Dispatcher, FarmCommand, FarmEvent, FarmRun, FarmSpec, Fetched, Read, Source, Task,
};
use crate::core::faults::{FaultSchedule, FaultSpec};
use crate::core::file_server::{FileServer, ResponseFaults};
use crate::metrics::Metrics;

mod executor;
use executor::{Commit, Inventory, Report, Run, Shared, Started, Starter, Stop};

/// Failed reads (each puts its task back in the wait queue) before the
/// run gives up: the store is down, not unlucky.
const MAX_FAILED_READS: u64 = 100;
/// Longest the dispatcher waits for any executor to report while tasks run.
const STALL: Duration = Duration::from_secs(300);

/// Options of a live farm run.
#[derive(Default)]
pub struct FarmOptions {
    /// Run id label of the metrics.
    pub run_id: String,
    /// The testbed's name (the `testbed` label of `gridbed_run_info`).
    pub testbed: String,
    /// Serve `/metrics` here while running.
    pub metrics_addr: Option<SocketAddr>,
    /// Keep `/metrics` up this long after the run.
    pub linger: Duration,
    /// Where the pools go; `None` picks one (see [`super::pool_root_for`]).
    pub pool_root: Option<PathBuf>,
    /// Progress display.
    pub progress: crate::core::observer::BoxedObserver,
    /// Test hook: the store corrupts this many responses (one byte flipped),
    /// so reads fail their sha256 check and are retried or their tasks
    /// placed again.
    pub corrupt_store_responses: u32,
    /// Where the farm's `policy` and `eviction` are looked up (`None`: the
    /// built-ins).
    pub registry: Option<Arc<crate::policy::Registry>>,
}

/// A finished live farm run.
#[derive(Debug)]
pub struct LiveFarmRun {
    /// What the dispatcher measured (nominal times).
    pub run: FarmRun,
    /// Wall time from the first arrival to the last task's end.
    pub wall: Duration,
    /// Wall time of the setup (the store's files, the first executors).
    pub setup: Duration,
    /// Real bytes the executors received.
    pub real_bytes: u64,
    /// Transfers completed.
    pub transfers: u64,
    /// Peer reads that found the file evicted and went to the store.
    pub rerouted: u64,
    /// Reads that failed past their retries (their tasks were placed again).
    pub failed_reads: u64,
    /// Executors started (actor, endpoint and pool).
    pub started: usize,
    /// Executors released (actor and endpoint stopped, pool deleted).
    pub released: usize,
    /// Pools of released executors still on disk at the end (must be 0).
    pub pools_left: usize,
    /// Files checked at the end: every executor's pool listed exactly
    /// what the index says it caches, and every listed file verified.
    pub files_verified: usize,
    /// The final `/metrics` text.
    pub metrics: String,
}

/// Runs `tasks` through the farm `spec` live, scaled by `em`, to the end.
pub fn run(
    spec: &FarmSpec,
    tasks: &[Task],
    em: Emulation,
    opts: FarmOptions,
) -> Result<LiveFarmRun, EngineError> {
    actix_rt::System::new().block_on(run_async(spec, tasks, em, opts))
}

async fn run_async(
    spec: &FarmSpec,
    tasks: &[Task],
    em: Emulation,
    opts: FarmOptions,
) -> Result<LiveFarmRun, EngineError> {
    let setup_start = Instant::now();
    let metrics = Arc::new(Metrics::new(&opts.run_id));
    metrics
        .run_info
        .with_label_values(&[&opts.testbed, &spec.policy, "live", &spec.seed.to_string()])
        .set(1.0);
    let metrics_server = super::serve_metrics(opts.metrics_addr, &metrics)?;
    let real_size = em.real_bytes(spec.file_size);
    let root = match &opts.pool_root {
        Some(r) => r.clone(),
        None => {
            let per_exec = if spec.caching {
                em.real_bytes(spec.cache)
            } else {
                real_size.saturating_mul(spec.cpus as u64)
            };
            let worst = real_size
                .saturating_mul(spec.files as u64)
                .saturating_add(per_exec.saturating_mul(spec.executors as u64));
            super::pool_root_for(worst)
        }
    };

    // The store: every file of the dataset, before the clock starts.
    let names: Vec<String> = (0..spec.files)
        .map(|f| names::encode(&format!("data-{f:05}")))
        .collect();
    let store_dir = tempfile::Builder::new()
        .prefix("gridbed-store-")
        .tempdir_in(&root)?;
    let data = Store::new(store_dir.path());
    let dataset = names
        .iter()
        .map(|enc| (enc.clone(), enc.clone(), real_size))
        .collect();
    super::write_generated_files(&data, dataset, spec.seed).await?;
    let corrupt = FaultSchedule::new(
        FaultSpec {
            first: opts.corrupt_store_responses,
            probability: 0.0,
        },
        0,
    );
    let (store_url, store_handle) = super::serve_gridftp(
        super::LOOPBACK,
        gridftp::Gridftp::new(
            data.clone(),
            endpoint(),
            FileServer::new(ENDPOINT_CONNECTIONS, ResponseFaults::corrupting(corrupt)),
            Arc::default(),
        ),
    )?;

    let (tx, mut rx) = mpsc::unbounded_channel();
    let peer = em.real_rate(spec.peer_bandwidth);
    let links = || {
        (0..spec.executors)
            .map(|_| shaping::Shaper::of(peer))
            .collect()
    };
    let starter = Starter {
        root,
        limits: gridftp::Limits {
            latency: super::site::real_duration(em.real_secs(spec.peer_latency)),
            ..endpoint()
        },
        disk: em.real_rate(spec.disk_bandwidth),
        shared: Arc::new(Shared {
            client: super::http_client()?,
            store_url,
            names: names.clone(),
            compute: super::site::real_duration(em.real_secs(spec.compute + spec.dispatch)),
            reports: tx,
            store_out: shaping::Shaper::of(em.real_rate(spec.store_bandwidth)),
            link_out: links(),
            link_in: links(),
        }),
    };
    let registry = opts
        .registry
        .clone()
        .unwrap_or_else(crate::policy::Registry::shared_builtin);
    let policies = Arc::new(crate::policy::RunPolicies::new(
        registry,
        spec.seed,
        Vec::new(),
    ));
    let mut d = crate::policy::farm_dispatcher(spec, tasks, &policies)?;
    let mut engine = Engine {
        spec,
        policies: policies.clone(),
        em,
        starter,
        execs: (0..spec.executors).map(|_| None).collect(),
        parts: HashMap::new(),
        metrics: &metrics,
        tally: Tally::default(),
    };
    for e in 0..spec.executors {
        if d.is_registered(e) {
            engine.start(e)?;
        }
    }
    let setup = setup_start.elapsed();

    let mut progress = opts.progress;
    let result = engine.drive(&mut d, &mut rx, &mut progress).await;
    progress.finish();
    let Engine {
        mut execs,
        tally: out,
        ..
    } = engine;
    let wall = out.wall;

    // Check every pool against the index, then tear down.
    let mut files_verified = 0;
    let mut mismatch = None;
    if result.is_ok() {
        for (e, started) in execs.iter().enumerate() {
            let Some(s) = started else { continue };
            // After the commits still in its mailbox.
            let inventory: std::collections::HashSet<String> = s
                .addr
                .send(Inventory)
                .await
                .map_err(|e| EngineError::Mailbox(e.to_string()))?
                .into_iter()
                .collect();
            for (f, enc) in names.iter().enumerate() {
                let listed = inventory.contains(enc);
                if listed != d.cached(f, e) {
                    mismatch.get_or_insert_with(|| {
                        format!(
                            "executor {e}: file {enc} {} but the index says {}",
                            if listed { "listed" } else { "missing" },
                            if listed { "evicted" } else { "cached" }
                        )
                    });
                }
            }
            let store = s.store.clone();
            let checked = tokio::task::spawn_blocking(move || {
                let names = store.names();
                for enc in &names {
                    store::verify(&store, enc).map_err(|why| format!("{enc}: {why}"))?;
                }
                Ok::<usize, String>(names.len())
            })
            .await
            .map_err(|e| EngineError::Farm(e.to_string()))?;
            match checked {
                Ok(n) => files_verified += n,
                Err(why) => {
                    mismatch.get_or_insert(format!("executor {e}: {why}"));
                }
            }
        }
    }
    for s in execs.iter_mut().filter_map(Option::take) {
        s.server.stop(false).await;
        let _ = s.addr.send(Stop).await;
    }
    store_handle.stop(false).await;
    let pools_left = out.released_dirs.iter().filter(|p| p.exists()).count();
    super::stop_metrics(metrics_server, opts.linger).await;
    result?;
    if let Some(m) = mismatch {
        return Err(EngineError::Farm(format!("end-of-run check: {m}")));
    }
    Ok(LiveFarmRun {
        run: d.finish(),
        wall,
        setup,
        real_bytes: out.real_bytes,
        transfers: out.transfers,
        rerouted: out.rerouted,
        failed_reads: out.failed_reads,
        started: out.started,
        released: out.released,
        pools_left,
        files_verified,
        metrics: metrics.render(),
    })
}

/// A farm endpoint's limits: none on its bytes (the reading executor passes
/// them through the store's or the peer's shaper and its own link's), no
/// latency (the caller sets the peer reads' set-up time).
fn endpoint() -> gridftp::Limits {
    gridftp::Limits {
        bandwidth: f64::INFINITY,
        stream_cap: f64::INFINITY,
        latency: Duration::ZERO,
    }
}

/// A farm endpoint's connections: no limit that matters.
const ENDPOINT_CONNECTIONS: usize = 100_000;

/// What the loop counts beside the dispatcher.
#[derive(Default)]
struct Tally {
    real_bytes: u64,
    transfers: u64,
    rerouted: u64,
    started: usize,
    released: usize,
    released_dirs: Vec<PathBuf>,
    failed_reads: u64,
    wall: Duration,
    last: Counts,
}

/// The live farm's engine: it tells the dispatcher what the executors
/// report and carries out its commands with real executors and bytes.
struct Engine<'a> {
    spec: &'a FarmSpec,
    /// Where an external policy program's failure shows.
    policies: Arc<crate::policy::RunPolicies>,
    em: Emulation,
    starter: Starter,
    execs: Vec<Option<Started>>,
    /// What arrived in part files, until the dispatcher's commit: by
    /// (executor, transfer).
    parts: HashMap<(ExecId, u64), FileMeta>,
    metrics: &'a Metrics,
    tally: Tally,
}

impl Engine<'_> {
    /// The dispatcher loop: executors' reports as they come and the
    /// dispatcher's wake-ups on the wall clock, its commands carried out
    /// after each.
    async fn drive(
        &mut self,
        d: &mut Dispatcher<'_>,
        rx: &mut mpsc::UnboundedReceiver<Report>,
        progress: &mut crate::core::observer::BoxedObserver,
    ) -> Result<(), EngineError> {
        let start = Instant::now();
        let em = self.em;
        let nominal = |at: Instant| at.duration_since(start).as_secs_f64() * em.time_scale;
        let real_at = |t: f64| start + super::site::real_duration(em.real_secs(t));
        let mut reports: Vec<Report> = Vec::new();
        let mut commands = Vec::new();
        let mut last_report = Instant::now();
        // A signal's stop ([`crate::interrupt`]) ends the farm's run with
        // the tasks done by then.
        let stop = Arc::new(tokio::sync::Notify::new());
        let _stop = crate::interrupt::on_stop({
            let stop = stop.clone();
            move || stop.notify_one()
        });
        loop {
            if crate::interrupt::requested().is_some() {
                self.tally.wall = start.elapsed();
                return Ok(());
            }
            let now = nominal(Instant::now());
            let mut events = Vec::with_capacity(reports.len() + 1);
            for r in reports.drain(..) {
                events.push(self.event(r)?);
            }
            events.push(FarmEvent::Tick);
            d.handle_all(now, events, &mut commands);
            if let Some(failure) = self.policies.failure() {
                return Err(crate::policy::PolicyError::from(failure).into());
            }
            self.carry_out(&mut commands).await?;
            sync_metrics(d, self.spec, self.metrics, &mut self.tally.last);
            progress.show(
                d.done_tasks(),
                &format!(
                    "{} waiting, {}/{} executors busy, t = {now:.0} s nominal",
                    d.waiting(),
                    d.busy_executors(),
                    d.executors()
                ),
            );
            if d.finished() {
                self.tally.wall = start.elapsed();
                return Ok(());
            }
            let wake = d.next_wakeup();
            let sleep = match wake {
                Some(t) => tokio::time::sleep_until(real_at(t).into()),
                None => tokio::time::sleep(STALL),
            };
            tokio::select! {
                () = stop.notified() => {}
                r = rx.recv() => {
                    let Some(r) = r else {
                        return Err(EngineError::Farm("every executor went away".into()));
                    };
                    reports.push(r);
                    while let Ok(r) = rx.try_recv() {
                        reports.push(r);
                    }
                    last_report = Instant::now();
                }
                () = sleep => {
                    let stalled = wake.is_none() || last_report.elapsed() >= STALL;
                    if stalled && (d.waiting() > 0 || d.busy_executors() > 0) {
                        return Err(EngineError::Farm(format!(
                            "stalled: no executor reported for {} s with {} tasks waiting and {} executors busy",
                            STALL.as_secs(), d.waiting(), d.busy_executors()
                        )));
                    }
                }
            }
        }
    }

    /// What an executor reported, as the dispatcher's event; counts the
    /// bytes, transfers and failures.
    fn event(&mut self, r: Report) -> Result<FarmEvent, EngineError> {
        Ok(match r {
            Report::Fetched {
                exec,
                read,
                served,
                transfer,
                meta,
            } => {
                self.tally.real_bytes += meta.size;
                self.tally.transfers += 1;
                if served != read.source {
                    self.tally.rerouted += 1;
                }
                self.parts.insert((exec, transfer), meta);
                FarmEvent::Fetched(Fetched {
                    exec,
                    read,
                    served,
                    part: transfer,
                })
            }
            Report::Done { exec, task } => FarmEvent::Done { exec, task },
            Report::Failed { read, why } => {
                tracing::warn!("farm read failed: {why}");
                self.tally.failed_reads += 1;
                if self.tally.failed_reads > MAX_FAILED_READS {
                    return Err(EngineError::Farm(format!(
                        "more than {MAX_FAILED_READS} reads failed; the last: {why}"
                    )));
                }
                FarmEvent::ReadFailed(read)
            }
            Report::Requeue { exec, task } => FarmEvent::Requeue { exec, task },
        })
    }

    /// Starts executor `e`: its pool, endpoint and actor.
    fn start(&mut self, e: ExecId) -> Result<(), EngineError> {
        self.execs[e] = Some(self.starter.start(e)?);
        self.tally.started += 1;
        Ok(())
    }

    /// Carries out the dispatcher's commands, in order.
    async fn carry_out(&mut self, commands: &mut Vec<FarmCommand>) -> Result<(), EngineError> {
        for c in commands.drain(..) {
            match c {
                FarmCommand::Start(ids) => {
                    for e in ids {
                        self.start(e)?;
                    }
                }
                FarmCommand::Release(e) => {
                    let Some(s) = self.execs[e].take() else {
                        continue;
                    };
                    self.tally.released_dirs.push(s.store.dir().to_path_buf());
                    self.tally.released += 1;
                    let server = s.server;
                    actix_rt::spawn(async move { server.stop(false).await });
                    // Waits for the pool's deletion (the executor's mailbox
                    // holds nothing but its last commits).
                    s.addr
                        .send(Stop)
                        .await
                        .map_err(|e| EngineError::Mailbox(e.to_string()))?;
                }
                FarmCommand::Commit {
                    exec,
                    file,
                    part,
                    keep,
                    evicted,
                } => {
                    let meta = self.parts.remove(&(exec, part)).ok_or_else(|| {
                        EngineError::Farm(format!(
                            "executor {exec}: a commit of transfer {part}, which did not arrive"
                        ))
                    })?;
                    if let Some(s) = &self.execs[exec] {
                        s.addr.do_send(Commit {
                            file,
                            transfer: part,
                            meta,
                            keep,
                            evict: evicted,
                        });
                    }
                }
                FarmCommand::Run(p) => {
                    let Some(s) = &self.execs[p.exec] else {
                        return Err(EngineError::Farm(format!(
                            "task {} placed on executor {}, which is not running",
                            p.task, p.exec
                        )));
                    };
                    let mut reads = Vec::with_capacity(p.reads.len());
                    for r in p.reads {
                        let url = match r.source {
                            Source::Local => None,
                            Source::Store => Some(self.starter.shared.store_url.clone()),
                            // The index only names registered executors, and a
                            // serving executor is never released.
                            Source::Peer(q) => match &self.execs[q] {
                                Some(peer) => Some(peer.url.clone()),
                                None => {
                                    return Err(EngineError::Farm(format!(
                                        "executor {q} serves a read but is not running"
                                    )));
                                }
                            },
                        };
                        reads.push((r, url));
                    }
                    s.addr.do_send(Run {
                        task: p.task,
                        reads,
                    });
                }
            }
        }
        Ok(())
    }
}

/// Brings the farm's Prometheus series up to the dispatcher's totals.
fn sync_metrics(d: &Dispatcher<'_>, spec: &FarmSpec, m: &Metrics, last: &mut Counts) {
    let c = d.counts();
    let f = &m.farm;
    f.arrived.inc_by(c.arrived - last.arrived);
    f.done.inc_by(c.done - last.done);
    f.bytes_ideal
        .inc_by((c.arrived_reads - last.arrived_reads) * spec.file_size);
    f.bytes_read
        .inc_by((c.done_reads - last.done_reads) * spec.file_size);
    f.bytes_moved
        .inc_by((c.global + c.miss - last.global - last.miss) * spec.file_size);
    for (source, now, before) in [
        ("local", c.local, last.local),
        ("global", c.global, last.global),
        ("miss", c.miss, last.miss),
    ] {
        f.reads.with_label_values(&[source]).inc_by(now - before);
    }
    f.wait_queue.set(d.waiting() as i64);
    f.executors.set(d.executors() as i64);
    f.executors_busy.set(d.busy_executors() as i64);
    *last = c;
}
