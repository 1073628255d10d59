//! The live engine: the scenario as actix actors on loopback, moving real bytes.
//!
//! ```text
//!   ManagerActor (core::Manager, wall clock × time_scale)
//!      │ Pin / Fetch / Submit / Release          ▲ SiteEvent
//!      ▼                                         │
//!   SiteActor × N ── pool: TempDir + core::storage::Pool, CPU slots, FIFO queue
//!      │ reqwest GET (destination pulls)         
//!      ▼
//!   gridftp endpoint × N (actix-web on 127.0.0.1:0, governor-shaped egress)
//! ```
//!
//! [`run`] sets everything up (pools, origin files, servers), runs the workflow
//! to the end, checks every site's files from disk, and tears down.

pub mod farm;
internal!(
    audit, gridftp, manager, messages, names, prepare, remote, shaping, site, store, timer,
    transfer,
);

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;

use crate::config::{Emulation, Scenario};
use crate::core::observer::BoxedObserver;
use crate::core::result::{LiveTotals, RunResult};
use crate::core::{Event, SiteId, Workflow};
use crate::metrics::Metrics;
use crate::policy;
use messages::{SiteEvent, SiteFault, SiteReport};
use remote::SiteAddr;
use remote::proxy::{Detach, Go, Remote, RemoteSite};

/// What every site actor shares, read-only.
pub struct Shared {
    /// The workflow.
    pub workflow: Arc<Workflow>,
    /// Pool name of every file, by file id.
    pub encoded: Vec<String>,
    /// Per file, the file whose name its bytes derive from: a twin's
    /// output holds the first twin's bytes (seed 003 §5.3); empty when no
    /// job has a twin.
    pub content: Vec<crate::core::FileId>,
    /// Site names, by site id.
    pub site_names: Vec<String>,
    /// Base URL of every site's gridftp endpoint, by site id.
    pub urls: Vec<String>,
    /// Every site's endpoint faults (down while the site is crashed), by
    /// site id.
    pub endpoints: Vec<Arc<gridftp::Faults>>,
    /// Emulation factors.
    pub emulation: Emulation,
    /// The run seed (file contents derive from it).
    pub seed: u64,
    /// The HTTP client of all transfers.
    pub client: reqwest::Client,
    /// Metrics of the run.
    pub metrics: Arc<Metrics>,
    /// DAGMan PRE/POST scripts to run, by job id (a `.dag` with
    /// `scripts = "run"`).
    pub scripts: Vec<Option<crate::workflow::formats::dagman::NodeScripts>>,
    /// The network's limits this process carries out.
    pub shapers: Arc<shaping::GridShapers>,
}

impl Shared {
    /// The name `file`'s bytes derive from (see [`Shared::content`]).
    pub fn content_name(&self, file: crate::core::FileId) -> &str {
        let f = self.content.get(file).copied().unwrap_or(file);
        &self.workflow.files[f].name
    }
}

/// Options of a live run.
#[derive(Default)]
pub struct LiveOptions {
    /// Serve `/metrics` here while running.
    pub metrics_addr: Option<SocketAddr>,
    /// Keep `/metrics` up this long after the run.
    pub linger: Duration,
    /// Progress display.
    pub progress: BoxedObserver,
    /// Run id label for metrics.
    pub run_id: String,
    /// Where the sites' pool directories go; `None` picks one (see
    /// [`pool_root`]).
    pub pool_root: Option<PathBuf>,
    /// Control database to write as the run goes.
    pub db: Option<crate::db::ControlDb>,
    /// Leave the sites' pool directories on disk after the run (their paths
    /// go into the control database, for `gridbed audit`).
    pub keep_pools: bool,
    /// A stop asked by SIGINT or SIGTERM ([`crate::interrupt`], once
    /// watched) removes the DAG as `condor_rm` of DAGMan does (its jobs
    /// removed, FINAL run, the run's end reported). `gridbed run` sets it.
    pub remove_on_interrupt: bool,
}

/// A finished live run: the engine-neutral [`RunResult`] (reached through
/// `Deref`; its [`LiveTotals`] filled in), plus what only a live run has.
pub struct LiveRun {
    /// The run's result, as every engine reports it.
    pub result: RunResult,
    /// Every site's end-of-run report (its files re-read from disk).
    pub sites: Vec<SiteReport>,
    /// The final `/metrics` text of the run.
    pub metrics: String,
    /// The DAG as the run left it, when it read sub-DAGs as it went.
    pub grown: Option<crate::config::GrownDag>,
}

impl std::ops::Deref for LiveRun {
    type Target = RunResult;
    fn deref(&self) -> &RunResult {
        &self.result
    }
}

/// Why a live run could not run.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Binding, temp dirs, file writes.
    #[error("live engine I/O: {0}")]
    Io(#[from] std::io::Error),
    /// A policy name that slipped through validation, or an external
    /// policy program that failed.
    #[error(transparent)]
    Policy(#[from] policy::PolicyError),
    /// A site could not be made.
    #[error(transparent)]
    Setup(#[from] crate::config::SetupError),
    /// The inputs' real bytes do not fit where the pools go.
    #[error(
        "the workflow's inputs are {need} real bytes (nominal sizes over byte_scale), more than the {free} bytes free under {}",
        root.display()
    )]
    NoRoom {
        /// Real bytes of the inputs.
        need: u64,
        /// Bytes free there.
        free: u64,
        /// Where the pools go.
        root: PathBuf,
    },
    /// An actor went away mid-run.
    #[error("the live engine lost an actor: {0}")]
    Mailbox(String),
    /// The HTTP client could not be built.
    #[error("HTTP client: {0}")]
    Client(String),
    /// A site daemon refused or could not be reached.
    #[error("site daemon: {0}")]
    Remote(String),
    /// A farm read failed past its retries, or the farm stalled.
    #[error("live farm: {0}")]
    Farm(String),
}

/// Runs `scenario` live and returns when no job can make progress.
pub fn run(scenario: &Scenario, opts: LiveOptions) -> Result<LiveRun, EngineError> {
    actix_rt::System::new().block_on(run_async(scenario, opts))
}

async fn run_async(scenario: &Scenario, mut opts: LiveOptions) -> Result<LiveRun, EngineError> {
    let setup_start = Instant::now();
    let wf = scenario.workflow.clone();
    let em = scenario.emulation;
    let root = match &opts.pool_root {
        Some(r) => r.clone(),
        None => pool_root(scenario),
    };
    // `--keep-pools DIR` may name a folder still to make.
    std::fs::create_dir_all(&root)?;
    let need = real_bytes(&wf, em, wf.inputs());
    if let Some(free) = free_bytes(&root)
        && need > free
    {
        return Err(EngineError::NoRoom { need, free, root });
    }
    let metrics = Arc::new(Metrics::new(&opts.run_id));
    metrics
        .run_info
        .with_label_values(&[
            &scenario.name,
            &scenario.strategy,
            "live",
            &scenario.seed.to_string(),
        ])
        .set(1.0);
    metrics.jobs_total.set(wf.jobs.len() as i64);
    metrics.maxpre.set(scenario.manager.maxpre as i64);
    let metrics_server = serve_metrics(opts.metrics_addr, &metrics)?;

    // What can fail is done before any daemon is attached.
    let client = http_client()?;
    let policies = scenario.policies();
    let core = scenario
        .new_manager(&policies)
        .map_err(policy::PolicyError::from)?;
    // Every program the run's policies name is started (and its handshake
    // checked) before any site is made: the sites' evictions name theirs
    // here first.
    policies
        .eviction(&scenario.eviction, 0)
        .map_err(policy::PolicyError::from)?;
    policies.start()?;
    // Every site made before any clock starts: the in-process ones here,
    // the others by their daemons. The faults an in-process endpoint
    // injects reach the manager once it has started.
    let encoded: Vec<String> = wf.files.iter().map(|f| names::encode(&f.name)).collect();
    let content = scenario.twins().map(|t| t.content).unwrap_or_default();
    let reporter: Arc<std::sync::OnceLock<Recipient<SiteEvent>>> = Arc::default();
    let here: Vec<_> = scenario
        .sites
        .iter()
        .enumerate()
        .filter(|(_, s)| s.daemon.is_none())
        .collect();
    let shapers = Arc::new(shaping::GridShapers::new(&here, &scenario.topology, em));
    let sites = Sites {
        encoded: &encoded,
        content: &content,
        root: &root,
        shapers: &shapers,
        policies: &policies,
    };
    let made = match make_sites(scenario, &sites, &opts, &reporter).await {
        Ok(m) => m,
        Err((e, attached)) => {
            detach_all(attached).await;
            return Err(e);
        }
    };
    let (urls, endpoints): (Vec<String>, Vec<Arc<gridftp::Faults>>) = made
        .iter()
        .map(|m| match m {
            Made::Local(p) => (p.url.clone(), p.faults.clone()),
            Made::Remote { gridftp, .. } => (gridftp.clone(), Arc::default()),
        })
        .unzip();
    let pool_dirs: Vec<(SiteId, PathBuf)> = (made.iter().enumerate())
        .filter_map(|(i, m)| match m {
            Made::Local(p) => Some((i, p.dir.path().to_path_buf())),
            Made::Remote { .. } => None,
        })
        .collect();
    let pool_dirs: Vec<(SiteId, &std::path::Path)> =
        pool_dirs.iter().map(|(i, d)| (*i, d.as_path())).collect();
    // Temporary pools go with an immediate exit on a second signal too.
    let _pools: Vec<crate::interrupt::Pool> = (pool_dirs.iter())
        .filter(|_| !opts.keep_pools)
        .map(|(_, d)| crate::interrupt::remove_at_exit(d.to_path_buf()))
        .collect();
    // Where the pools are, so that `gridbed resume` can remove the temporary
    // pools of a run killed before it could (its temp dirs outlive a `kill
    // -9`), and `gridbed audit` finds the kept ones of a killed run.
    if let Some(db) = opts.db.as_mut() {
        match opts.keep_pools {
            true => db.note_kept_pools(&pool_dirs),
            false => db.note_pool_dirs(&pool_dirs),
        }
    }
    if let Some(db) = opts.db.as_mut() {
        let differ = content.iter().enumerate().filter(|&(f, &c)| f != c);
        let names: Vec<(String, String)> = differ
            .map(|(f, &c)| (wf.files[f].name.clone(), wf.files[c].name.clone()))
            .collect();
        db.note_contents(&names);
    }
    let shared = Arc::new(Shared {
        workflow: wf.clone(),
        encoded,
        content,
        site_names: scenario.sites.iter().map(|s| s.info.name.clone()).collect(),
        urls: urls.clone(),
        endpoints,
        emulation: em,
        seed: scenario.seed,
        client,
        metrics: metrics.clone(),
        scripts: scenario.node_scripts(),
        shapers,
    });

    let setup = setup_start.elapsed();
    let clock = manager::LiveClock {
        start: Instant::now(),
        time_scale: em.time_scale,
    };
    let manager_addr = manager::ManagerActor::new(
        core,
        clock,
        metrics.clone(),
        opts.progress,
        opts.db,
        policies.clone(),
        scenario.subdag_reader(),
    )
    .watching(scenario.halt_files())
    .start();
    let mut sites = Vec::new();
    let mut servers = Vec::new();
    let mut remotes = Vec::new();
    for (i, m) in made.into_iter().enumerate() {
        let cfg = &scenario.sites[i];
        match m {
            Made::Local(p) => {
                servers.push(p.server);
                let actor = site::SiteActor::new(
                    cfg.clone(),
                    shared.clone(),
                    p.site,
                    p.store,
                    p.dir,
                    manager_addr.clone().recipient(),
                );
                sites.push(SiteAddr::Local(actor.start()));
            }
            Made::Remote { remote, .. } => {
                let proxy = RemoteSite::new(
                    i,
                    cfg.info.name.clone(),
                    remote,
                    manager_addr.clone().recipient(),
                    metrics.clone(),
                )
                .start();
                remotes.push(proxy.clone());
                sites.push(SiteAddr::Remote(proxy));
            }
        }
    }
    for r in &remotes {
        let started = r
            .send(Go { urls: urls.clone() })
            .await
            .map_err(|e| EngineError::Mailbox(e.to_string()))
            .and_then(|res| res.map_err(EngineError::Remote));
        if let Err(e) = started {
            for r in &remotes {
                let _ = r.send(Detach).await;
            }
            return Err(e);
        }
    }
    let _ = reporter.set(manager_addr.clone().recipient());
    // The timed faults, each at its nominal time on the run's clock.
    let timed: Vec<_> = scenario
        .faults
        .timed
        .iter()
        .map(|(t, site, fault)| {
            let (addr, fault) = (sites[*site].clone(), fault.clone());
            let at = clock.at(*t);
            actix_rt::spawn(async move {
                timer::sleep_until(at.into()).await;
                addr.do_send(SiteFault(fault));
            })
        })
        .collect();
    let (tx, rx) = tokio::sync::oneshot::channel();
    manager_addr.do_send(manager::Start {
        sites: sites.clone(),
        done: tx,
        quiet_after: scenario
            .faults
            .timed
            .iter()
            .map(|(t, _, _)| *t)
            .fold(0.0, f64::max),
    });
    // A stop asked by a signal removes the DAG (DAGMan's
    // `main_shutdown_remove`), see [`crate::interrupt`].
    let interrupt = opts.remove_on_interrupt.then(|| {
        let manager = manager_addr.clone();
        crate::interrupt::on_stop(move || manager.do_send(SiteEvent(Event::DagRemoved)))
    });
    rx.await.map_err(|e| EngineError::Mailbox(e.to_string()))?;
    drop(interrupt);
    let wall = clock.start.elapsed();
    for t in &timed {
        t.abort();
    }
    let manager::Taken {
        core,
        db,
        timeline,
        grown,
    } = manager_addr
        .send(manager::TakeManager)
        .await
        .map_err(|e| EngineError::Mailbox(e.to_string()))?
        .ok_or_else(|| EngineError::Mailbox("manager state taken twice".into()))?;
    let db = db.map(|mut db| {
        let kept: &[(SiteId, &std::path::Path)] = match opts.keep_pools {
            true => &pool_dirs,
            false => &[],
        };
        db.write_final(&em.replica_rows(&wf, core.replicas()), &wf, kept);
        db
    });
    // Joining the writer blocks until its queue is written: off the runtime.
    let db_error = match db {
        Some(db) => tokio::task::spawn_blocking(move || db.finish())
            .await
            .map_err(|e| EngineError::Mailbox(e.to_string()))?
            .err()
            .map(|e| e.to_string()),
        None => None,
    };

    let mut reports = Vec::new();
    for s in &sites {
        reports.push(
            s.inventory()
                .await
                .map_err(|e| EngineError::Mailbox(e.to_string()))?,
        );
    }
    for s in servers {
        s.stop(false).await;
    }
    for r in &remotes {
        let _ = r.send(Detach).await;
    }
    stop_metrics(metrics_server, opts.linger).await;
    if let Some(failure) = policies.failure() {
        return Err(policy::PolicyError::from(failure).into());
    }
    let mut result = RunResult::from_manager("live", core, wall, timeline);
    result.evictions = reports.iter().map(|r| r.evictions).collect();
    result.used = reports.iter().map(|r| r.used).collect();
    result.peak_used = reports.iter().map(|r| r.peak_used).collect();
    result.transfers = result
        .records
        .transfers
        .iter()
        .filter(|t| t.failure.is_none())
        .count() as u64;
    result.db_error = db_error;
    result.live = Some(LiveTotals {
        setup,
        real_bytes: reports.iter().map(|r| r.real_bytes_in).sum(),
        corrupt_at_end: reports
            .iter()
            .flat_map(|r| r.files.iter())
            .filter(|c| !c.intact)
            .count(),
    });
    Ok(LiveRun {
        result,
        sites: reports,
        metrics: metrics.render(),
        grown,
    })
}

/// A site made for a run: in this process, or by a daemon.
enum Made {
    /// Pool, files and endpoint here.
    Local(Box<prepare::SiteParts>),
    /// A daemon attached to the run.
    Remote {
        /// Its control API.
        remote: Remote,
        /// Its gridftp endpoint.
        gridftp: String,
    },
}

/// What every site of a run is made with.
struct Sites<'a> {
    /// Pool name of every file.
    encoded: &'a [String],
    /// Per file, the file its bytes derive from.
    content: &'a [crate::core::FileId],
    /// Where in-process pools go.
    root: &'a std::path::Path,
    /// The network's limits this process carries out.
    shapers: &'a shaping::GridShapers,
    /// The run's policies.
    policies: &'a policy::RunPolicies,
}

/// Makes every site of `scenario` (see [`prepare`]), attaching the daemons
/// of the sites that have one. On failure, the error and the daemons
/// attached so far (to detach).
async fn make_sites(
    scenario: &Scenario,
    made_with: &Sites<'_>,
    opts: &LiveOptions,
    reporter: &Arc<std::sync::OnceLock<Recipient<SiteEvent>>>,
) -> Result<Vec<Made>, (EngineError, Vec<Remote>)> {
    let wf = &scenario.workflow;
    let Sites {
        encoded,
        content,
        root,
        shapers,
        policies,
    } = *made_with;
    let inputs = scenario.inputs_by_site();
    let site_names: Vec<String> = scenario.sites.iter().map(|s| s.info.name.clone()).collect();
    let scripts = scenario.node_scripts();
    let mut made = Vec::new();
    let attached = |made: &Vec<Made>| -> Vec<Remote> {
        made.iter()
            .filter_map(|m| match m {
                Made::Remote { remote, .. } => Some(remote.clone()),
                Made::Local(_) => None,
            })
            .collect()
    };
    for (i, s) in scenario.sites.iter().enumerate() {
        let resumed: Vec<_> = scenario.resumed_outputs(i).collect();
        let m = match &s.daemon {
            None => {
                let spec = prepare::SiteSpec {
                    start: scenario.site_start(i, policies, &inputs[i], &resumed),
                    encoded,
                    emulation: scenario.emulation,
                    shapers,
                };
                let report = reporter.clone();
                prepare::prepare(&spec, root, opts.keep_pools, LOOPBACK, move |fault| {
                    if let Some(m) = report.get() {
                        m.do_send(SiteEvent(Event::Fault { site: i, fault }));
                    }
                })
                .await
                .map(|p| Made::Local(Box::new(p)))
            }
            Some(d) => {
                // What the kernel shapes, the site's endpoint does not.
                let mut config = s.clone();
                if d.kernel.rate {
                    config.bandwidth_out = f64::INFINITY;
                    config.bandwidth_in = f64::INFINITY;
                }
                if d.kernel.delay {
                    config.latency = 0.0;
                }
                // Nor the shared links the kernel shapes.
                let mut topology = scenario.topology.clone();
                for l in &mut topology.links {
                    if d.kernel.rate {
                        l.bandwidth = f64::INFINITY;
                    }
                    if d.kernel.delay {
                        l.latency = 0.0;
                    }
                }
                let attach = remote::protocol::Attach {
                    run_id: opts.run_id.clone(),
                    site: i,
                    config,
                    site_names: site_names.clone(),
                    files: wf.files.clone(),
                    jobs: wf.jobs.clone(),
                    content: content.to_vec(),
                    seed: scenario.seed,
                    emulation: scenario.emulation,
                    eviction: scenario.eviction.clone(),
                    scripts: scripts.clone(),
                    inputs: inputs[i].clone(),
                    resumed,
                    topology,
                };
                match Remote::new(d) {
                    Ok(remote) => remote
                        .attach(&attach)
                        .await
                        .map(|a| Made::Remote {
                            remote,
                            gridftp: a.gridftp,
                        })
                        .map_err(|e| EngineError::Remote(format!("site `{}`: {e}", s.info.name))),
                    Err(e) => Err(e),
                }
            }
        };
        match m {
            Ok(m) => made.push(m),
            Err(e) => return Err((e, attached(&made))),
        }
    }
    Ok(made)
}

/// Ends the sessions of daemons attached to a run that could not start.
async fn detach_all(remotes: Vec<Remote>) {
    for r in remotes {
        if let Err(e) = r.detach().await {
            tracing::warn!("a site daemon was not detached: {e}");
        }
    }
}

/// Serves `/metrics` of `metrics` on `addr`, if given, while the run goes.
fn serve_metrics(
    addr: Option<SocketAddr>,
    metrics: &Arc<Metrics>,
) -> std::io::Result<Option<actix_web::dev::ServerHandle>> {
    let Some(addr) = addr else { return Ok(None) };
    let server = crate::metrics::serve(TcpListener::bind(addr)?, metrics.clone())?;
    let handle = server.handle();
    actix_rt::spawn(server);
    Ok(Some(handle))
}

/// Stops the `/metrics` server after keeping it up `linger` longer, so a
/// scraper gets the final values.
async fn stop_metrics(server: Option<actix_web::dev::ServerHandle>, linger: Duration) {
    if let Some(h) = server {
        if !linger.is_zero() {
            tokio::time::sleep(linger).await;
        }
        h.stop(false).await;
    }
}

/// Starts a gridftp endpoint on `bind`, port chosen by the system (the
/// farm's and in-process sites' on loopback), serving as `state` says: its
/// base URL and handle.
fn serve_gridftp(
    bind: std::net::IpAddr,
    state: gridftp::Gridftp,
) -> std::io::Result<(String, actix_web::dev::ServerHandle)> {
    let listener = TcpListener::bind((bind, 0))?;
    let url = format!("http://{}", listener.local_addr()?);
    let server = gridftp::serve(listener, Arc::new(state))?;
    let handle = server.handle();
    actix_rt::spawn(server);
    Ok((url, handle))
}

/// The mailbox of the manager and site actors: room for every message of a
/// large run (`usize::MAX` would overflow actix's count of senders once an
/// address is cloned after the actor started).
const MAILBOX: usize = u32::MAX as usize;

/// Loopback, where everything this process serves listens by default.
const LOOPBACK: std::net::IpAddr = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

/// The HTTP client of every transfer: no proxy (loopback only), a bounded
/// connect wait, kept-alive connections. Reads are bounded by the pull
/// itself ([`shaping::READ_STALL`]), which tells waiting on the source from
/// pacing its own bytes.
pub fn http_client() -> Result<reqwest::Client, EngineError> {
    reqwest::Client::builder()
        .no_proxy()
        .connect_timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(64)
        .build()
        .map_err(|e| EngineError::Client(e.to_string()))
}

/// Where pools go by default: a RAM file system (`/dev/shm`) when the run's
/// real bytes fit comfortably in it, else the system temp dir. Thousands of
/// small files created and deleted per second make a disk file system's
/// inode allocator the emulator's bottleneck (measured on ext4: most of the
/// live engine's time), which would show up as overhead the simulator lacks.
pub fn pool_root(scenario: &Scenario) -> PathBuf {
    let wf = &scenario.workflow;
    let em = scenario.emulation;
    let real = real_bytes(wf, em, 0..wf.files.len());
    // Every file could be copied to every site at worst.
    pool_root_for(real.saturating_mul(scenario.sites.len() as u64))
}

/// Real bytes of `files`, saturating (an absurd `byte_scale` gives
/// `u64::MAX`, which no file system has free, rather than an overflow).
fn real_bytes(
    wf: &Workflow,
    em: Emulation,
    files: impl Iterator<Item = crate::core::FileId>,
) -> u64 {
    files.fold(0u64, |sum, f| {
        sum.saturating_add(em.real_bytes(wf.files[f].size))
    })
}

/// Where pools holding at most `worst` real bytes go (see [`pool_root`]).
pub fn pool_root_for(worst: u64) -> PathBuf {
    let shm = std::path::Path::new("/dev/shm");
    match free_bytes(shm) {
        Some(free) if shm.is_dir() && worst <= free / 4 => shm.to_path_buf(),
        _ => std::env::temp_dir(),
    }
}

/// Bytes free for an unprivileged writer on the file system of `path`.
fn free_bytes(path: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `st` a writable statvfs.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    (rc == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

/// Writes the generated bytes of `files` into `store`.
async fn write_files(
    store: &store::Store,
    wf: &Arc<Workflow>,
    encoded: &[String],
    em: Emulation,
    seed: u64,
    files: Vec<crate::core::FileId>,
) -> std::io::Result<()> {
    let files = files
        .into_iter()
        .map(|f| {
            let file = &wf.files[f];
            (
                encoded[f].clone(),
                file.name.clone(),
                em.real_bytes(file.size),
            )
        })
        .collect();
    write_generated_files(store, files, seed).await
}

/// Writes generated files — (pool name, name, real bytes) — into `store`
/// and lists them, in parallel batches off the async thread.
async fn write_generated_files(
    store: &store::Store,
    files: Vec<(String, String, u64)>,
    seed: u64,
) -> std::io::Result<()> {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let chunk = files.len().div_ceil(workers).max(1);
    let mut jobs = Vec::new();
    for part in files.chunks(chunk) {
        let (part, store) = (part.to_vec(), store.clone());
        jobs.push(tokio::task::spawn_blocking(move || {
            for (enc, name, len) in &part {
                store::write_generated(&store, enc, seed, name, *len)?;
            }
            Ok::<_, std::io::Error>(())
        }));
    }
    for j in jobs {
        j.await.map_err(std::io::Error::other)??;
    }
    Ok(())
}
