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

/// Attempts of a read from the store before it counts as failed (its task
/// goes back to the wait queue).
const STORE_ATTEMPTS: u32 = 5;
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

/// What an executor tells the dispatcher.
#[derive(Debug)]
enum Report {
    /// A read arrived, verified, in the part file of `transfer`.
    Fetched {
        exec: ExecId,
        read: Read,
        served: Source,
        transfer: u64,
        meta: FileMeta,
    },
    /// Task `task`'s reads and compute ended.
    Done { exec: ExecId, task: usize },
    /// A read failed past its retries.
    Failed { read: Read, why: String },
    /// Task `task` could not read its files: back to the wait queue.
    Requeue { exec: ExecId, task: usize },
}

/// What every executor shares.
struct Shared {
    client: reqwest::Client,
    store_url: String,
    /// Pool name of every file.
    names: Vec<String>,
    /// Real seconds of a task's dispatch and compute.
    compute: Duration,
    reports: mpsc::UnboundedSender<Report>,
    /// The store's aggregate bandwidth, and each executor's link out and
    /// in: the simulator's resources, passed by the reading executor (the
    /// endpoints send unshaped).
    store_out: Option<Arc<shaping::Shaper>>,
    link_out: Vec<Option<Arc<shaping::Shaper>>>,
    link_in: Vec<Option<Arc<shaping::Shaper>>>,
}

/// An executor: CPU slots are the dispatcher's business; the actor owns
/// the pool and runs what it is given.
struct Executor {
    id: ExecId,
    store: Store,
    /// Deleted on [`Stop`] (release).
    dir: Option<tempfile::TempDir>,
    shared: Arc<Shared>,
    next_transfer: u64,
    /// The local disk its cached files are read through (None: free).
    disk: Option<Arc<shaping::Shaper>>,
}

impl Actor for Executor {
    type Context = Context<Self>;
}

/// Run `task`, reading `reads` (each with its source's URL, none if local).
#[derive(Message)]
#[rtype(result = "()")]
struct Run {
    task: usize,
    reads: Vec<(Read, Option<String>)>,
}

/// The dispatcher's decision on a fetched file: list it or drop it, and
/// delete what was evicted for it.
#[derive(Message)]
#[rtype(result = "()")]
struct Commit {
    file: usize,
    transfer: u64,
    meta: FileMeta,
    keep: bool,
    evict: Vec<usize>,
}

/// Released: delete the pool and stop. Answers once the pool is gone.
#[derive(Message)]
#[rtype(result = "()")]
struct Stop;

/// The pool names listed now, once every earlier message was handled.
#[derive(Message)]
#[rtype(result = "Vec<String>")]
struct Inventory;

impl Handler<Run> for Executor {
    type Result = ();
    fn handle(&mut self, m: Run, ctx: &mut Context<Self>) {
        let shared = self.shared.clone();
        let store = self.store.clone();
        let exec = self.id;
        let mut pulls = Vec::new();
        let mut locals = Vec::new();
        for (read, url) in m.reads {
            let Some(url) = url else {
                if let Some(disk) = &self.disk {
                    // Opened now, in mailbox order: an eviction committed
                    // after this task's placement cannot take it away.
                    let path = self.store.path(&shared.names[read.file]);
                    locals.push((read, std::fs::File::open(path), disk.clone()));
                }
                continue;
            };
            self.next_transfer += 1;
            let transfer = self.next_transfer;
            let (shared, store) = (shared.clone(), store.clone());
            pulls.push(
                async move {
                    let r = read_file(&shared, &store, (exec, read), &url, transfer).await;
                    let report = match r {
                        Ok((served, meta)) => Report::Fetched {
                            exec,
                            read,
                            served,
                            transfer,
                            meta,
                        },
                        Err(e) => Report::Failed {
                            read,
                            why: format!("file {}: {e:?}", shared.names[read.file]),
                        },
                    };
                    let failed = matches!(report, Report::Failed { .. });
                    let _ = shared.reports.send(report);
                    failed
                }
                .boxed_local(),
            );
        }
        for (read, file, disk) in locals {
            let shared = shared.clone();
            pulls.push(
                async move {
                    let r = match file {
                        Ok(file) => read_local(file, &disk).await,
                        Err(e) => Err(e),
                    };
                    match r {
                        Ok(()) => false,
                        Err(e) => {
                            let why = format!("cached file {}: {e}", shared.names[read.file]);
                            let _ = shared.reports.send(Report::Failed { read, why });
                            true
                        }
                    }
                }
                .boxed_local(),
            );
        }
        let task = m.task;
        ctx.spawn(
            async move {
                let results = futures_util::future::join_all(pulls).await;
                if results.iter().any(|&failed| failed) {
                    let _ = shared.reports.send(Report::Requeue { exec, task });
                    return;
                }
                if !shared.compute.is_zero() {
                    tokio::time::sleep(shared.compute).await;
                }
                let _ = shared.reports.send(Report::Done { exec, task });
            }
            .into_actor(self),
        );
    }
}

/// Reads a cached file off the executor's local disk, its bytes through the
/// disk's shaper.
async fn read_local(file: std::fs::File, disk: &shaping::Shaper) -> std::io::Result<()> {
    use tokio::io::AsyncReadExt;
    let mut file = tokio::fs::File::from_std(file);
    let mut buf = vec![0u8; disk.chunk()];
    loop {
        let n = file.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        disk.pass(n).await;
    }
}

/// Pulls `read` for `exec` from `url` (a peer or the store); a peer that no
/// longer has it sends the read to the store; the store is retried on
/// connection failures. Where it was served from, and what arrived.
async fn read_file(
    shared: &Shared,
    store: &Store,
    (exec, read): (ExecId, Read),
    url: &str,
    transfer: u64,
) -> Result<(Source, FileMeta), TransferFailure> {
    let enc = &shared.names[read.file];
    let through = |from: &Option<Arc<shaping::Shaper>>| {
        let shapers = [from, &shared.link_in[exec]];
        PathShaping::through(shapers.into_iter().flatten().cloned(), f64::INFINITY)
    };
    if let Source::Peer(peer) = read.source {
        let path = through(&shared.link_out[peer]);
        // A failed pull leaves no part file behind.
        if let Ok(p) =
            transfer::pull_unlisted(&shared.client, url, store, enc, transfer, &path).await
        {
            return Ok((read.source, p.meta));
        }
    }
    let path = through(&shared.store_out);
    let mut attempt = 0;
    loop {
        attempt += 1;
        match transfer::pull_unlisted(
            &shared.client,
            &shared.store_url,
            store,
            enc,
            transfer,
            &path,
        )
        .await
        {
            Ok(p) => return Ok((Source::Store, p.meta)),
            Err(e) if attempt >= STORE_ATTEMPTS => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_millis(10 << attempt)).await,
        }
    }
}

impl Handler<Commit> for Executor {
    type Result = ();
    fn handle(&mut self, m: Commit, _: &mut Context<Self>) {
        let names = &self.shared.names;
        for f in m.evict {
            self.store.remove(&names[f]);
        }
        let enc = &names[m.file];
        if m.keep {
            if let Err(e) = self.store.commit_part(enc, m.transfer, m.meta) {
                // The index now says this executor caches the file; the
                // end-of-run check reports the difference.
                tracing::warn!("executor {}: listing {enc}: {e}", self.id);
            }
        } else {
            self.store.drop_part(enc, m.transfer);
        }
    }
}

impl Handler<Stop> for Executor {
    type Result = ();
    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        if let Some(dir) = self.dir.take()
            && let Err(e) = dir.close()
        {
            tracing::warn!("executor {}: deleting its pool: {e}", self.id);
        }
        ctx.stop();
    }
}

impl Handler<Inventory> for Executor {
    type Result = Vec<String>;
    fn handle(&mut self, _: Inventory, _: &mut Context<Self>) -> Vec<String> {
        self.store.names()
    }
}

/// The dispatcher's handle on a started executor.
struct Started {
    addr: Addr<Executor>,
    url: String,
    server: actix_web::dev::ServerHandle,
    store: Store,
}

/// What it takes to start an executor.
struct Starter {
    root: PathBuf,
    limits: gridftp::Limits,
    /// Real bytes/s of each executor's local disk.
    disk: f64,
    shared: Arc<Shared>,
}

impl Starter {
    /// An executor's endpoint over `store`.
    fn endpoint(&self, store: &Store) -> gridftp::Gridftp {
        gridftp::Gridftp::new(
            store.clone(),
            self.limits.clone(),
            FileServer::new(ENDPOINT_CONNECTIONS, ResponseFaults::none()),
            Arc::default(),
        )
    }

    fn start(&self, id: ExecId) -> std::io::Result<Started> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("gridbed-executor-{id}-"))
            .tempdir_in(&self.root)?;
        let store = Store::new(dir.path());
        let (url, handle) = super::serve_gridftp(super::LOOPBACK, self.endpoint(&store))?;
        let addr = Executor {
            id,
            store: store.clone(),
            dir: Some(dir),
            shared: self.shared.clone(),
            next_transfer: 0,
            disk: shaping::Shaper::of(self.disk),
        }
        .start();
        Ok(Started {
            addr,
            url,
            server: handle,
            store,
        })
    }
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
        loop {
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
