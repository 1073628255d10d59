//! `gridbed bench`: the figures of `docs/benchmarks.md`, measured in one run so
//! that ratios compare like with like on a shared, noisy machine.
//!
//! * **manager**: jobs planned per second by the sans-IO core alone (a world
//!   that completes every command at once), 10,000 jobs on the 25 Grid3 sites.
//! * **dispatch**: 10,000 zero-runtime, zero-input jobs through the whole live
//!   engine on 5 sites (prescript interval 0, MAXPRE unbounded), jobs ended per
//!   wall second.
//! * **transfer**: 1 GiB in 64 MB files pulled over loopback with sha256
//!   verification, as a ratio to `std::fs::copy` + sha256 of the same bytes.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::config::{Emulation, Scenario, SiteConfig};
use crate::core::{
    Command, Event, File, JobSpec, Manager, ManagerSettings, ReplicaPolicy, SiteInfo, Workflow,
};
use crate::live::{self, gridftp, store};
use crate::policy;
use crate::workflow::generators::Spatial;

/// Options of `gridbed bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Which benchmarks: manager, dispatch, transfer (default: all).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Scale every size down by this factor (for a quick check of the code path).
    #[arg(long, default_value_t = 1)]
    shrink: u32,
    /// Also write the results as a Markdown table to this file.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
}

/// One measured figure.
#[derive(Debug, Clone)]
pub struct Figure {
    /// What was measured.
    pub name: String,
    /// The value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// The goal, as text.
    pub goal: String,
    /// Whether the goal was met.
    pub met: bool,
}

/// Runs the selected benchmarks and prints their figures.
pub fn run(args: BenchArgs) -> Result<(), String> {
    let want = |n: &str| args.only.is_empty() || args.only.iter().any(|o| o == n);
    let shrink = args.shrink.max(1) as usize;
    let mut figures = Vec::new();
    if want("manager") {
        figures.extend(manager_decisions(10_000 / shrink)?);
    }
    if want("dispatch") {
        figures.push(live_dispatch(10_000 / shrink)?);
    }
    if want("transfer") {
        figures.push(transfer_throughput(16, (64 << 20) / shrink as u64)?);
    }
    let mut md = String::from("| benchmark | value | goal | met |\n|---|---:|---|---|\n");
    for f in &figures {
        println!(
            "{:<58} {:>14.2} {:<10} goal {:<14} {}",
            f.name,
            f.value,
            f.unit,
            f.goal,
            if f.met { "met" } else { "NOT met" }
        );
        let _ = writeln!(
            md,
            "| {} | {:.2} {} | {} | {} |",
            f.name,
            f.value,
            f.unit,
            f.goal,
            if f.met { "yes" } else { "no" }
        );
    }
    if let Some(path) = args.markdown {
        std::fs::write(&path, md).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(())
}

fn grid3_sites() -> Vec<SiteInfo> {
    let cpus = [
        72, 51, 40, 35, 31, 29, 27, 16, 13, 10, 8, 8, 8, 8, 7, 6, 6, 4, 4, 4, 4, 3, 2, 2, 2,
    ];
    let mut sites: Vec<SiteInfo> = cpus
        .iter()
        .enumerate()
        .map(|(i, &c)| SiteInfo {
            name: format!("grid3-{:02}", i + 1),
            cpus: c,
            disk: 1 << 50,
            speed: 1.0,
            overhead: 0.0,
        })
        .collect();
    sites.push(SiteInfo {
        name: "submit-host".into(),
        cpus: 0,
        disk: 1 << 50,
        speed: 1.0,
        overhead: 0.0,
    });
    sites
}

/// Drives the core alone: every transfer and job completes at once.
fn manager_decisions(jobs: usize) -> Result<Vec<Figure>, String> {
    let ra = (jobs / 50).max(1);
    let wf = Spatial {
        ra,
        dec: 10,
        filters: 5,
        ..Default::default()
    }
    .generate(1)
    .map_err(|e| e.to_string())?;
    let wf = Arc::new(wf);
    let sites = grid3_sites();
    let origin = sites.len() - 1;
    let placement: Vec<(usize, usize)> = wf.inputs().map(|f| (f, origin)).collect();
    let mut figures = Vec::new();
    for strategy in ["random", "round-robin", "data-present"] {
        let settings = ManagerSettings {
            maxpre: 0,
            prescript_interval: 0.0,
            prescript_streams: usize::MAX,
            replica_policy: ReplicaPolicy::Caching,
            ..Default::default()
        };
        let selector = policy::site_selector(strategy, 1).map_err(|e| e.to_string())?;
        let mut m = Manager::new(wf.clone(), sites.clone(), &placement, settings, selector);
        let start = Instant::now();
        let mut queue = vec![Event::Tick];
        let mut out = Vec::new();
        let mut now = 0.0;
        while let Some(ev) = queue.pop() {
            now += 1.0;
            m.handle(now, ev, &mut out);
            for c in out.drain(..) {
                match c {
                    Command::StartTransfer { id, file, .. } => queue.push(Event::TransferDone {
                        id,
                        result: Ok(wf.files[file].size),
                    }),
                    Command::Submit { job, site } => {
                        queue.push(Event::JobEnded {
                            job,
                            site,
                            result: Ok(()),
                        });
                        queue.push(Event::JobStarted { job, site });
                    }
                    Command::Pin { .. } | Command::Release { .. } => {}
                }
            }
            if queue.is_empty() && !m.is_finished() {
                queue.push(Event::Tick);
            }
        }
        let secs = start.elapsed().as_secs_f64();
        if !m.succeeded() {
            return Err(format!("manager bench ({strategy}) did not finish"));
        }
        let rate = wf.jobs.len() as f64 / secs;
        figures.push(Figure {
            name: format!(
                "manager: jobs planned/s, {} jobs × {} refs, 25 sites, {strategy}",
                wf.jobs.len(),
                wf.references()
            ),
            value: rate,
            unit: "jobs/s".into(),
            goal: "≥ 100,000/s".into(),
            met: rate >= 100_000.0,
        });
    }
    Ok(figures)
}

fn bench_site(name: &str, cpus: usize) -> SiteConfig {
    SiteConfig {
        info: SiteInfo {
            name: name.into(),
            cpus,
            disk: 1 << 50,
            speed: 1.0,
            overhead: 0.0,
        },
        storage: cpus == 0,
        bandwidth: f64::INFINITY,
        stream_cap: f64::INFINITY,
        max_connections: 1024,
        latency: 0.0,
        corrupt_responses: 0,
    }
}

/// Zero-work jobs through the whole live engine.
fn live_dispatch(jobs: usize) -> Result<Figure, String> {
    let specs = (0..jobs)
        .map(|i| JobSpec {
            name: format!("j{i}"),
            runtime: 0.0,
            ..Default::default()
        })
        .collect();
    let wf = Workflow::build(Vec::<File>::new(), specs).map_err(|e| e.to_string())?;
    let mut sites = vec![bench_site("store", 0)];
    sites.extend((0..5).map(|i| bench_site(&format!("site{i}"), 16)));
    let scenario = Scenario {
        name: "bench-dispatch".into(),
        path: PathBuf::from("(bench)"),
        seed: 1,
        sites,
        origin: 0,
        workflow: Arc::new(wf),
        strategy: "round-robin".into(),
        eviction: "lru".into(),
        manager: ManagerSettings {
            maxpre: 0,
            prescript_interval: 0.0,
            ..Default::default()
        },
        emulation: Emulation {
            time_scale: 1.0,
            byte_scale: 1.0,
        },
    };
    let run = live::run(&scenario, live::LiveOptions::default()).map_err(|e| e.to_string())?;
    if !run.succeeded {
        return Err("dispatch bench: not every job ended".into());
    }
    let rate = jobs as f64 / run.wall.as_secs_f64();
    Ok(Figure {
        name: format!("live dispatch: {jobs} zero jobs on 5 sites, jobs ended/s"),
        value: rate,
        unit: "jobs/s".into(),
        goal: "≥ 5,000/s".into(),
        met: rate >= 5_000.0,
    })
}

/// Pulls `files` files of `size` bytes from one gridftp endpoint to another
/// pool, then copies the same files with `std::fs::copy` + sha256.
fn transfer_throughput(files: usize, size: u64) -> Result<Figure, String> {
    // On a RAM file system where there is one, so that both sides measure the
    // software path (HTTP, hashing, copying) rather than the disk's writeback.
    let base = ["/dev/shm"]
        .iter()
        .map(std::path::Path::new)
        .find(|p| p.is_dir())
        .map_or_else(std::env::temp_dir, |p| p.to_path_buf());
    let dir = || tempfile::tempdir_in(&base).map_err(|e| e.to_string());
    let (src_dir, dst_dir, copy_dir) = (dir()?, dir()?, dir()?);
    let src = store::Store::new(src_dir.path());
    let dst = store::Store::new(dst_dir.path());
    let names: Vec<String> = (0..files).map(|i| format!("f{i:02}")).collect();
    for n in &names {
        store::write_generated(&src, n, 1, n, size).map_err(|e| e.to_string())?;
    }
    let total = (files as u64 * size) as f64;
    let pulled: Result<Duration, String> = actix_rt::System::new().block_on(async {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let url = format!(
            "http://{}",
            listener.local_addr().map_err(|e| e.to_string())?
        );
        let limits = gridftp::Limits {
            bandwidth: f64::INFINITY,
            stream_cap: f64::INFINITY,
            max_connections: 64,
            latency: Duration::ZERO,
        };
        let state = Arc::new(gridftp::Gridftp::new(src.clone(), limits, Arc::default()));
        let server = gridftp::serve(listener, state).map_err(|e| e.to_string())?;
        let handle = server.handle();
        actix_rt::spawn(server);
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(|e| e.to_string())?;
        let start = Instant::now();
        for (i, n) in names.iter().enumerate() {
            live::transfer::pull(&client, &url, &dst, n, i as u64)
                .await
                .map_err(|e| format!("{e:?}"))?;
        }
        let took = start.elapsed();
        handle.stop(false).await;
        Ok(took)
    });
    let pulled = pulled?;
    let start = Instant::now();
    for n in &names {
        let to = copy_dir.path().join(n);
        std::fs::copy(src.path(n), &to).map_err(|e| e.to_string())?;
        let bytes = std::fs::read(&to).map_err(|e| e.to_string())?;
        std::hint::black_box(Sha256::digest(&bytes));
    }
    let copied = start.elapsed();
    let ratio = copied.as_secs_f64() / pulled.as_secs_f64();
    Ok(Figure {
        name: format!(
            "transfer: {} in {} files on {}, pull+verify vs copy+sha256 ({:.0} vs {:.0} MB/s)",
            crate::config::units::human_bytes(total),
            files,
            base.display(),
            total / pulled.as_secs_f64() / 1e6,
            total / copied.as_secs_f64() / 1e6
        ),
        value: ratio,
        unit: "× copy".into(),
        goal: "≥ 0.7".into(),
        met: ratio >= 0.7,
    })
}
