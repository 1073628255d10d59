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
//! * **faults**: the live dispatch of jobs that each pull one input, with 5%
//!   of the responses reset halfway, as a ratio to the same run without; and
//!   `testbeds/chaos.toml` live with its faults against the same testbed
//!   without them.
//! * **network**: the max-min flow model alone, 10,000 flows over 100 sites
//!   and 10 shared links, 2,000 ends each followed by a start, flows
//!   re-rated per second (`network.rs`).
//! * **calibrate**: `gridbed calibrate` over 20 traces with four rates and
//!   the data configuration, and whether it finds the rate the traces were
//!   made with (`calibrate.rs`).
//! * **planner**: seed 003's AssignDAGs + Parallelize on 5,000 DAGs and 100
//!   machines, its re-planning after a machine loss, and its share of a sim
//!   run (`planner.rs`).

mod calibrate;
mod external;
mod netbed;
mod network;
mod planner;
mod remote;
mod scale;

pub(crate) use scale::{MeasureArgs, measure_command};

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::config::{Emulation, Scenario, SiteConfig};
use crate::core::file_server::{FileServer, ResponseFaults};
use crate::core::manager::scripted::ScriptedWorld;
use crate::core::{File, JobSpec, ManagerSettings, ReplicaPolicy, SiteInfo, Workflow};
use crate::live::{self, gridftp, store};
use crate::policy::{self, eviction::Lru};
use crate::workflow::generators::Spatial;

/// Options of `gridbed bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Which benchmarks: sim, calibrate, network, diffusion, farm, db, wfformat, manager, decisions, dispatch, metrics, transfer, faults, planner, record, parse, dslab, million (default: all).
    #[arg(value_delimiter = ',')]
    which: Vec<String>,
    /// The same, as an option.
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
    /// The goal, as text; none for a figure that only explains another.
    pub goal: Option<String>,
    /// Whether the goal was met (true when there is none).
    pub met: bool,
}

/// The benchmarks, by the names `gridbed bench` takes.
const BENCHMARKS: [&str; 21] = [
    "sim",
    "policy",
    "calibrate",
    "network",
    "diffusion",
    "farm",
    "db",
    "wfformat",
    "manager",
    "decisions",
    "dispatch",
    "remote",
    "netbed",
    "metrics",
    "transfer",
    "faults",
    "planner",
    "record",
    "parse",
    "dslab",
    "million",
];

/// Why a benchmark failed inside: any error of the rooms it drives, or
/// what it found wrong with a run.
type Failure = Box<dyn std::error::Error + Send + Sync>;

/// Why `gridbed bench` failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A benchmark name that does not exist (bad input).
    #[error("unknown benchmark `{name}`; expected {valid}")]
    Unknown {
        /// The name given.
        name: String,
        /// The benchmarks there are.
        valid: String,
    },
    /// A benchmark could not run, or its run did not do what it measures.
    #[error("benchmark `{bench}`: {source}")]
    Failed {
        /// Which benchmark.
        bench: &'static str,
        /// Why.
        source: Failure,
    },
    /// The markdown table could not be written.
    #[error("writing {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Names a benchmark's failure.
fn failed(bench: &'static str) -> impl FnOnce(Failure) -> BenchError {
    move |source| BenchError::Failed { bench, source }
}

/// Runs the selected benchmarks and prints their figures.
pub fn run(args: BenchArgs) -> Result<(), BenchError> {
    let chosen: Vec<&String> = args.which.iter().chain(&args.only).collect();
    if let Some(bad) = chosen.iter().find(|c| !BENCHMARKS.contains(&c.as_str())) {
        return Err(BenchError::Unknown {
            name: bad.to_string(),
            valid: BENCHMARKS.join(", "),
        });
    }
    let want = |n: &str| chosen.is_empty() || chosen.iter().any(|o| *o == n);
    let shrink = args.shrink.max(1) as usize;
    let mut figures = Vec::new();
    // First, so that the peak RSS it reports is its own.
    if want("sim") {
        figures.extend(sim_full_coadd().map_err(failed("sim"))?);
    }
    if want("db") {
        let rounds = if shrink > 1 { 2 } else { 20 };
        figures
            .push(db_cost_command("testbeds/osg-12-pipeline.toml", rounds).map_err(failed("db"))?);
        figures.push(db_cost("testbeds/osg-12-pipeline.toml", rounds).map_err(failed("db"))?);
        figures.push(db_cost("testbeds/spcl-live-10.toml", rounds / 10 + 1).map_err(failed("db"))?);
    }
    if want("manager") {
        figures.extend(manager_decisions(10_000 / shrink).map_err(failed("manager"))?);
    }
    if want("dispatch") {
        figures.push(live_dispatch(10_000 / shrink).map_err(failed("dispatch"))?);
    }
    if want("remote") {
        figures.extend(remote::remote_dispatch(10_000 / shrink).map_err(failed("remote"))?);
    }
    if want("netbed") {
        // Namespaces need root: asked for by name, the bench says so; in a
        // run of them all, it is left out.
        if chosen.is_empty() && unsafe { libc::geteuid() } != 0 {
            eprintln!("note: the netbed benchmark needs root; left out");
        } else {
            figures.extend(netbed::link_classes().map_err(failed("netbed"))?);
        }
    }
    if want("record") {
        figures.extend(scale::whole_coadd().map_err(failed("record"))?);
    }
    if want("parse") {
        figures.push(scale::parse_rate().map_err(failed("parse"))?);
    }
    if want("dslab") {
        figures.extend(scale::side_by_side().map_err(failed("dslab"))?);
    }
    if want("million") {
        let sizes: &[usize] = if shrink > 1 {
            &[10_000, 100_000]
        } else {
            &[10_000, 100_000, 1_000_000]
        };
        figures.extend(scale::million(sizes).map_err(failed("million"))?);
    }
    if want("wfformat") {
        figures.extend(
            wfformat_parse_sim(std::path::Path::new("target/wfcommons"))
                .map_err(failed("wfformat"))?,
        );
    }
    if want("diffusion") {
        figures.extend(diffusion_250k().map_err(failed("diffusion"))?);
    }
    if want("farm") {
        figures.push(farm_live_dispatch(100_000 / shrink).map_err(failed("farm"))?);
    }
    if want("decisions") {
        figures.extend(dispatch_decisions(200_000 / shrink).map_err(failed("decisions"))?);
    }
    if want("metrics") {
        figures.push(
            metrics_overhead(200_000 / shrink, if shrink > 1 { 1 } else { 3 })
                .map_err(failed("metrics"))?,
        );
    }
    if want("transfer") {
        figures.extend(
            transfer_throughput(16, (64 << 20) / shrink as u64).map_err(failed("transfer"))?,
        );
    }
    if want("faults") {
        figures.push(dispatch_under_resets(2_000 / shrink).map_err(failed("faults"))?);
        figures.push(chaos_vs_clean().map_err(failed("faults"))?);
    }
    if want("network") {
        let (flows, ends) = (10_000 / shrink, 2_000 / shrink as u64);
        figures.push(
            network::network(flows.max(10), 100, 10, ends.max(10)).map_err(failed("network"))?,
        );
    }
    if want("calibrate") {
        figures.extend(calibrate::calibrate((20 / shrink).max(2)).map_err(failed("calibrate"))?);
    }
    if want("policy") {
        figures.extend(external::decisions(20_000 / shrink).map_err(failed("policy"))?);
    }
    if want("planner") {
        figures.extend(planner::planner(5_000 / shrink, 100).map_err(failed("planner"))?);
    }
    let mut md = String::from("| benchmark | value | goal | met |\n|---|---:|---|---|\n");
    for f in &figures {
        println!(
            "{:<58} {:>14.2} {:<10} goal {:<14} {}",
            f.name,
            f.value,
            f.unit,
            f.goal.as_deref().unwrap_or("—"),
            match (&f.goal, f.met) {
                (None, _) => "",
                (_, true) => "met",
                _ => "NOT met",
            }
        );
        let _ = writeln!(
            md,
            "| {} | {:.2} {} | {} | {} |",
            f.name,
            f.value,
            f.unit,
            f.goal.as_deref().unwrap_or("—"),
            match (&f.goal, f.met) {
                (None, _) => "—",
                (_, true) => "yes",
                _ => "no",
            }
        );
    }
    if let Some(path) = args.markdown {
        std::fs::write(&path, md).map_err(|source| BenchError::Write { path, source })?;
    }
    Ok(())
}

/// Seed 000's Table 1, simulated columns: (CPUs, disk GB), as in `sites.toml`.
const GRID3: [(usize, u64); 25] = [
    (72, 95),
    (51, 86),
    (40, 20),
    (35, 217),
    (31, 162),
    (29, 113),
    (27, 65),
    (16, 139),
    (13, 59),
    (10, 97),
    (8, 171),
    (8, 217),
    (8, 88),
    (8, 119),
    (7, 172),
    (6, 57),
    (6, 119),
    (4, 24),
    (4, 172),
    (4, 11),
    (4, 6),
    (3, 98),
    (2, 131),
    (2, 5),
    (2, 130),
];

fn grid3_sites() -> Vec<SiteInfo> {
    let mut sites: Vec<SiteInfo> = GRID3
        .iter()
        .enumerate()
        .map(|(i, &(cpus, gb))| SiteInfo {
            name: format!("grid3-{:02}", i + 1),
            cpus,
            disk: gb * 1_000_000_000,
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

/// The manager's decision rate: the coadd on the 25 Grid3 sites in the
/// core's scripted world (FIFO queues, slots, pools; transfers of 5 s, jobs
/// their runtime), jobs over the time spent in `Manager::handle` alone, so
/// that the world's own bookkeeping does not count.
fn manager_decisions(jobs: usize) -> Result<Vec<Figure>, Failure> {
    let ra = (jobs / 50).max(1);
    let wf = Spatial {
        ra,
        dec: 10,
        filters: 5,
        ..Default::default()
    }
    .generate(1)?;
    // Grid3's CPUs with disks that never fill: the decisions of planning
    // and releasing, not of re-planning after a full disk.
    let mut sites = grid3_sites();
    for s in &mut sites {
        s.disk = 1 << 50;
    }
    let origin = sites.len() - 1;
    let mut figures = Vec::new();
    for strategy in ["random", "round-robin", "data-present"] {
        let settings = ManagerSettings {
            maxpre: 0,
            prescript_interval: 0.0,
            prescript_streams: usize::MAX,
            replica_policy: ReplicaPolicy::Caching,
            ..Default::default()
        };
        let selector = policy::site_selector(strategy, 1)?;
        let mut world = ScriptedWorld::new(
            wf.clone(),
            sites.clone(),
            settings,
            selector,
            |_| Box::new(Lru),
            &[origin],
        );
        let mut in_manager = Duration::ZERO;
        world.run_with(|m, now, event, out| {
            let start = Instant::now();
            m.handle(now, event, out);
            in_manager += start.elapsed();
        });
        if !world.m.succeeded() {
            return Err(format!("manager bench ({strategy}) did not finish").into());
        }
        let rate = wf.jobs.len() as f64 / in_manager.as_secs_f64();
        figures.push(Figure {
            name: format!(
                "manager: jobs planned/s, {} jobs × {} refs, 25 sites, {strategy} (time in Manager::handle, scripted world, {} transfers)",
                wf.jobs.len(),
                wf.references(),
                world.transfers
            ),
            value: rate,
            unit: "jobs/s".into(),
            goal: Some("≥ 100,000/s".into()),
            met: rate >= 100_000.0,
        });
    }
    Ok(figures)
}

/// Peak resident set of this process so far (Linux), in bytes.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The full SDSS coadd (44,400 jobs, 5.4 M references) on the 25 Grid3 sites,
/// simulated with SPCL and with Random (the most transfers: every reference).
fn sim_full_coadd() -> Result<Vec<Figure>, Failure> {
    let mut figures = Vec::new();
    for strategy in ["clustered", "random"] {
        let started = Instant::now();
        let wf = crate::workflow::generators::Coadd::default().generate(1)?;
        let mut sites: Vec<SiteConfig> = grid3_sites()
            .into_iter()
            .map(|info| SiteConfig {
                storage: info.cpus == 0,
                info,
                bandwidth_out: 100e6,
                bandwidth_in: 100e6,
                stream_cap: 1e6,
                max_connections: 40,
                latency: 0.0,
                faults: Default::default(),
                background: None,
                daemon: None,
            })
            .collect();
        let origin = sites.len() - 1;
        sites[origin].info.disk = 100_000_000_000_000;
        let policy = if strategy == "random" {
            ReplicaPolicy::Delete
        } else {
            ReplicaPolicy::Caching
        };
        let manager = ManagerSettings {
            replica_policy: policy,
            ..Default::default()
        };
        let scenario = bench_scenario("bench-coadd", sites, origin, wf, strategy, manager);
        let run = crate::sim::run(&scenario)?;
        let wall = started.elapsed().as_secs_f64();
        if !run.succeeded {
            return Err(format!("sim bench ({strategy}) did not finish").into());
        }
        let rss = peak_rss().unwrap_or(0) as f64 / 1e9;
        figures.push(Figure {
            name: format!(
                "sim: full coadd, 25 sites, {strategy}: {} transfers, {:.2} M events/s, peak RSS {rss:.2} GB",
                run.transfers,
                run.events as f64 / run.wall.as_secs_f64() / 1e6
            ),
            value: wall,
            unit: "s wall".into(),
            goal: Some("≤ 10 s, ≤ 2 GB".into()),
            met: wall <= 10.0 && rss <= 2.0,
        });
    }
    Ok(figures)
}

/// The control database's cost inside the engine alone: `testbed` in sim with
/// and without a database, alternated `rounds` times, as a ratio of total wall
/// times. It explains the command figure: SQLite's fixed cost of creating,
/// switching to WAL and closing a file (about 1 ms here) is larger than a small
/// simulation, so this has no goal of its own.
fn db_cost(testbed: &str, rounds: usize) -> Result<Figure, Failure> {
    let path = std::path::Path::new(testbed);
    let scenario = crate::config::load(path, &Default::default())
        .map_err(|e| format!("{e} (run `gridbed bench db` from the repository root)"))?;
    let dir = tempfile::tempdir()?;
    let (mut with, mut without) = (Duration::ZERO, Duration::ZERO);
    for i in 0..rounds {
        let t = Instant::now();
        crate::sim::run(&scenario)?;
        without += t.elapsed();
        let t = Instant::now();
        let db_path = dir.path().join(format!("run{i}.db"));
        let db = crate::db::ControlDb::create(
            &db_path,
            true,
            &[],
            &scenario.site_infos(),
            &scenario.workflow,
        )?;
        let run = crate::sim::run_recorded(&scenario, Some(db))?;
        with += t.elapsed();
        if let Some(e) = &run.db_error {
            return Err(e.clone().into());
        }
    }
    let ratio = with.as_secs_f64() / without.as_secs_f64();
    Ok(Figure {
        name: format!(
            "db: {} sim engine alone, with / without database ({rounds} runs each, {:.1} vs {:.1} ms a run)",
            scenario.name,
            with.as_secs_f64() * 1e3 / rounds as f64,
            without.as_secs_f64() * 1e3 / rounds as f64
        ),
        value: ratio,
        unit: "× wall".into(),
        goal: None,
        met: true,
    })
}

/// The control database's cost as a user meets it: the whole `gridbed run
/// --engine sim` command on `testbed`, with and without `--db`, alternated
/// `rounds` times, as a ratio of total wall times.
fn db_cost_command(testbed: &str, rounds: usize) -> Result<Figure, Failure> {
    let exe = std::env::current_exe()?;
    let dir = tempfile::tempdir()?;
    let db_path = dir.path().join("run.db");
    let run = |with_db: bool| -> Result<Duration, Failure> {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["run", "--engine", "sim", "-q", testbed])
            .stdout(std::process::Stdio::null());
        if with_db {
            cmd.arg("--db").arg(&db_path);
        }
        let t = Instant::now();
        let status = cmd.status()?;
        if !status.success() {
            return Err(format!("`gridbed run {testbed}` failed: {status}").into());
        }
        Ok(t.elapsed())
    };
    let (mut with, mut without) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..rounds {
        without += run(false)?;
        with += run(true)?;
    }
    let ratio = with.as_secs_f64() / without.as_secs_f64();
    Ok(Figure {
        name: format!(
            "db: `gridbed run --engine sim {testbed}` with / without --db ({rounds} each, {:.1} vs {:.1} ms)",
            with.as_secs_f64() * 1e3 / rounds as f64,
            without.as_secs_f64() * 1e3 / rounds as f64
        ),
        value: ratio,
        unit: "× wall".into(),
        goal: Some("≤ 1.2".into()),
        met: ratio <= 1.2,
    })
}

/// Data-aware scheduling decisions per second (seed 001 §5.1's micro-
/// benchmark, Falkon: 1,322–1,666/s): 64 executors caching 10,000 files
/// between them, a wait queue of 250,000 tasks of one uniformly drawn file,
/// W = 3,200; a decision is a notification plus a pick-up of one more task.
fn dispatch_decisions(decisions: usize) -> Result<Vec<Figure>, Failure> {
    use crate::core::cache_index::CacheIndex;
    use crate::policy::dispatch::FarmView;
    use rand::{Rng, SeedableRng};
    let (executors, files) = (64, 10_000);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let mut index = CacheIndex::new(files, executors);
    for f in 0..files {
        index.insert(f, f % executors);
    }
    let queue: Vec<Vec<crate::core::FileId>> = (0..250_000)
        .map(|_| vec![rng.random_range(0..files)])
        .collect();
    let mut figures = Vec::new();
    for name in ["max-cache-hit", "max-compute-util", "good-cache-compute"] {
        let mut policy = crate::policy::dispatch_policy(name, 1)?;
        let mut free = vec![true; executors];
        let started = Instant::now();
        let mut dispatched = 0usize;
        for d in 0..decisions {
            // The queue's head moves on; executors take turns being busy.
            let head = d % (queue.len() - 3200);
            free[d % executors] = !free[d % executors];
            let view = FarmView {
                free: &free,
                utilization: 0.5 + (d % 2) as f64 * 0.4,
                index: &index,
            };
            if let Some(e) = policy.notify(&queue[head], &view) {
                let rest = crate::policy::dispatch::Tasks(&queue[head + 1..]);
                dispatched += 1 + policy.pick_up(e, &rest, 1, &view).len();
            }
        }
        let rate = decisions as f64 / started.elapsed().as_secs_f64();
        figures.push(Figure {
            name: format!(
                "decisions: {name}, W 3200, 64 executors, 10000 cached files ({dispatched} tasks placed)"
            ),
            value: rate,
            unit: "decisions/s".into(),
            goal: Some("≥ 100,000/s".into()),
            met: rate >= 100_000.0,
        });
    }
    Ok(figures)
}

/// Seed 001's 250,000-task experiment in the simulator, 64 executors of 2
/// CPUs present from the start (the dynamic provisioner is not built yet):
/// the ramp, 10,000 files of 10 MB read uniformly, 10 ms of compute, GPFS at
/// 4 Gb/s, 1 Gb/s links, 4 GB caches; wall time and makespan per policy.
fn diffusion_250k() -> Result<Vec<Figure>, Failure> {
    use crate::core::farm::{Allocation, Drp, FarmSpec};
    use crate::diffusion::stream::{Arrivals, Popularity, generate};
    use crate::sim::farm::run;
    let tasks = generate(
        250_000,
        10_000,
        1,
        &Arrivals::paper_ramp(),
        &Popularity::Uniform,
        1,
    );
    let mut figures = Vec::new();
    // The paper gives no provisioner settings: these are ours.
    let drp = Drp {
        min: 1,
        queue_threshold: 50,
        allocation: Allocation::Additive(2),
        latency: 30.0,
        idle: 60.0,
        interval: 1.0,
    };
    for (policy, caching, drp) in [
        ("first-available", false, None),
        ("max-cache-hit", true, None),
        ("max-compute-util", true, None),
        ("good-cache-compute", true, None),
        ("good-cache-compute", true, Some(drp)),
    ] {
        let spec = FarmSpec {
            executors: 64,
            drp,
            cpus: 2,
            cache: 4_000_000_000,
            eviction: "lru".into(),
            policy: policy.into(),
            files: 10_000,
            file_size: 10_000_000,
            compute: 0.01,
            dispatch: 0.0,
            store_bandwidth: 500e6,
            peer_bandwidth: 125e6,
            disk_bandwidth: f64::INFINITY,
            peer_latency: 0.0,
            caching,
            seed: 1,
            interval: 60.0,
        };
        let started = Instant::now();
        let r = run(&spec, &tasks)?;
        let wall = started.elapsed().as_secs_f64();
        let reads = (r.local_hits + r.global_hits + r.misses).max(1) as f64;
        figures.push(Figure {
            name: format!(
                "diffusion: 250K tasks, {}, {policy}{}: makespan {:.0} s (ideal 1415), hits local {:.0}% global {:.0}% miss {:.0}%, {:.1} CPU h",
                if drp.is_some() { "DRP up to 64 executors (additive 2, queue > 50, 30 s latency, 60 s idle)" } else { "64 executors" },
                if caching { ", 4 GB caches" } else { ", store only" },
                r.makespan,
                100.0 * r.local_hits as f64 / reads,
                100.0 * r.global_hits as f64 / reads,
                100.0 * r.misses as f64 / reads,
                r.cpu_hours
            ),
            value: wall,
            unit: "s wall".into(),
            goal: Some("≤ 10 s".into()),
            met: wall <= 10.0,
        });
        figures.push(Figure {
            name: format!(
                "diffusion: events simulated per wall second, {policy}{} (shared link model)",
                if drp.is_some() { " with DRP" } else { "" }
            ),
            value: r.events as f64 / wall.max(1e-9),
            unit: "events/s".into(),
            goal: None,
            met: true,
        });
    }
    Ok(figures)
}

/// Live farm dispatch, Falkon's throughput test: `n` tasks with no files
/// and no compute, all waiting at the start, through the live dispatcher
/// loop to 64 executor actors of 2 CPUs with first-available; tasks ended
/// per wall second, setup (the executors' pools and endpoints) excluded.
fn farm_live_dispatch(n: usize) -> Result<Figure, Failure> {
    use crate::core::farm::{FarmSpec, Task};
    let tasks: Vec<Task> = (0..n)
        .map(|_| Task {
            arrival: 0.0,
            files: Vec::new(),
        })
        .collect();
    let spec = FarmSpec {
        executors: 64,
        drp: None,
        cpus: 2,
        cache: 0,
        eviction: "lru".into(),
        policy: "first-available".into(),
        files: 1,
        file_size: 0,
        compute: 0.0,
        dispatch: 0.0,
        store_bandwidth: f64::INFINITY,
        peer_bandwidth: f64::INFINITY,
        disk_bandwidth: f64::INFINITY,
        peer_latency: 0.0,
        caching: false,
        seed: 1,
        interval: 60.0,
    };
    let em = Emulation {
        time_scale: 1.0,
        byte_scale: 1.0,
    };
    let r = live::farm::run(&spec, &tasks, em, Default::default())?;
    if r.run.tasks != n {
        return Err(format!("farm dispatch: {} of {n} tasks ended", r.run.tasks).into());
    }
    let rate = n as f64 / r.wall.as_secs_f64();
    Ok(Figure {
        name: format!(
            "farm: live dispatch, first-available, no I/O, {n} tasks on 64×2 executors (Falkon 487–3,750/s)"
        ),
        value: rate,
        unit: "tasks/s".into(),
        goal: Some("≥ 5,000/s".into()),
        met: rate >= 5000.0,
    })
}

/// Resets the process's peak resident set (Linux ≥ 4.0), so that the next
/// [`peak_rss`] is the peak of what runs after.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// WfCommons epigenomics instances of 10,000 and 100,000 tasks (written by
/// `benches/wfcommons_gen.py` into `dir`) parsed and simulated on 4 sites of
/// 10, 10, 4 and 4 CPUs: wall time and peak RSS of each.
fn wfformat_parse_sim(dir: &std::path::Path) -> Result<Vec<Figure>, Failure> {
    let mut figures = Vec::new();
    let mut per_task = Vec::new();
    for n in [10_000, 100_000] {
        let path = dir.join(format!("epigenomics-{n}.json"));
        if !path.is_file() {
            return Err(format!(
                "{} is missing: generate it with `python3 benches/wfcommons_gen.py {}` (needs `pip install wfcommons`)",
                path.display(),
                dir.display()
            ).into());
        }
        reset_peak_rss();
        let started = Instant::now();
        let loaded = crate::workflow::formats::load(&path, &Default::default())?;
        let parsed = started.elapsed().as_secs_f64();
        let tasks = loaded.workflow.jobs.len();
        let mut sites = vec![bench_site("store", 0)];
        for (i, cpus) in [10, 10, 4, 4].into_iter().enumerate() {
            sites.push(bench_site(&format!("site{i}"), cpus));
        }
        let scenario = bench_scenario(
            &format!("epigenomics-{n}"),
            sites,
            0,
            loaded.workflow,
            "round-robin",
            unthrottled(),
        );
        let run = crate::sim::run(&scenario)?;
        let wall = started.elapsed().as_secs_f64();
        if !run.succeeded {
            return Err(format!("epigenomics-{n}: the simulation did not finish").into());
        }
        let rss = peak_rss().unwrap_or(0) as f64 / 1e9;
        per_task.push(wall / tasks as f64);
        figures.push(Figure {
            name: format!(
                "wfformat: epigenomics {tasks} tasks parsed ({parsed:.2} s) and simulated on 10+10+4+4 CPUs, {} transfers, peak RSS {rss:.2} GB",
                run.transfers
            ),
            value: wall,
            unit: "s wall".into(),
            goal: (n == 100_000).then(|| "≤ 5 s, ≤ 1 GB".to_string()),
            met: n != 100_000 || (wall <= 5.0 && rss <= 1.0),
        });
    }
    figures.push(Figure {
        name: "wfformat: wall time per task, 100,000-task / 10,000-task instance".into(),
        value: per_task[1] / per_task[0],
        unit: "×".into(),
        goal: None,
        met: true,
    });
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
        bandwidth_out: f64::INFINITY,
        bandwidth_in: f64::INFINITY,
        stream_cap: f64::INFINITY,
        max_connections: 1024,
        latency: 0.0,
        faults: Default::default(),
        background: None,
        daemon: None,
    }
}

/// Zero-work jobs through the whole live engine.
/// `jobs` zero-runtime, input-less jobs round robin on 5 sites of 16 slots,
/// MAXPRE unbounded, time_scale 1: the live engine's dispatch path alone.
fn dispatch_scenario(jobs: usize) -> Result<Scenario, Failure> {
    dispatch_scenario_on(jobs, 5)
}

/// [`dispatch_scenario`] on `sites` execution sites.
fn dispatch_scenario_on(jobs: usize, n_sites: usize) -> Result<Scenario, Failure> {
    let specs = (0..jobs)
        .map(|i| JobSpec {
            name: format!("j{i}"),
            runtime: 0.0,
            ..Default::default()
        })
        .collect();
    let wf = Workflow::build(Vec::<File>::new(), specs)?;
    let mut sites = vec![bench_site("store", 0)];
    sites.extend((0..n_sites).map(|i| bench_site(&format!("site{i}"), 16)));
    Ok(bench_scenario(
        "bench-dispatch",
        sites,
        0,
        wf,
        "round-robin",
        unthrottled(),
    ))
}

/// A benchmark's scenario: seed 1, LRU, no emulation scaling.
fn bench_scenario(
    name: &str,
    sites: Vec<SiteConfig>,
    origin: usize,
    workflow: Workflow,
    strategy: &str,
    manager: ManagerSettings,
) -> Scenario {
    Scenario {
        name: name.into(),
        path: PathBuf::from("(bench)"),
        seed: 1,
        topology: crate::core::topology::Topology::flat(sites.len()),
        sites,
        origin,
        submissions: crate::core::submissions::Submissions::single(workflow.jobs.len(), origin),
        workflow: Arc::new(workflow),
        source: None,
        clustering: None,
        strategy: strategy.into(),
        eviction: "lru".into(),
        registry: crate::policy::Registry::shared_builtin(),
        manager,
        faults: Default::default(),
        resume: None,
        emulation: Emulation {
            time_scale: 1.0,
            byte_scale: 1.0,
        },
        memoize: false,
        no_memoize: Vec::new(),
    }
}

/// Manager settings with MAXPRE and the prescript interval off.
fn unthrottled() -> ManagerSettings {
    ManagerSettings {
        maxpre: 0,
        prescript_interval: 0.0,
        ..Default::default()
    }
}

fn live_dispatch(jobs: usize) -> Result<Figure, Failure> {
    let scenario = dispatch_scenario(jobs)?;
    let run = live::run(&scenario, live::LiveOptions::default())?;
    if !run.succeeded {
        return Err("dispatch bench: not every job ended".into());
    }
    let rate = jobs as f64 / run.wall.as_secs_f64();
    Ok(Figure {
        name: format!("live dispatch: {jobs} zero jobs on 5 sites, jobs ended/s"),
        value: rate,
        unit: "jobs/s".into(),
        goal: Some("≥ 5,000/s".into()),
        met: rate >= 5_000.0,
    })
}

/// The metrics' cost: the live dispatch benchmark with `--metrics-addr` served
/// and scraped every second (as Prometheus would) against the same run
/// without, alternated `rounds` times, as a ratio of total wall times.
fn metrics_overhead(jobs: usize, rounds: usize) -> Result<Figure, Failure> {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    let scenario = dispatch_scenario(jobs)?;
    let (mut with, mut without) = (Duration::ZERO, Duration::ZERO);
    let mut scrapes = 0;
    for _ in 0..rounds {
        let run = live::run(&scenario, live::LiveOptions::default())?;
        without += run.wall;
        let addr = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr())?;
        let stop = Arc::new(AtomicBool::new(false));
        let scraper = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut ok = 0;
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(mut s) = std::net::TcpStream::connect(addr) {
                        let mut body = Vec::new();
                        if write!(s, "GET /metrics HTTP/1.0\r\n\r\n").is_ok()
                            && s.read_to_end(&mut body).is_ok()
                            && body.starts_with(b"HTTP/1.")
                            && body.get(9..12) == Some(b"200".as_slice())
                        {
                            ok += 1;
                        }
                    }
                    // Sleep a second in small steps, so that the run's end
                    // is not waited on.
                    for _ in 0..20 {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
                ok
            })
        };
        let opts = live::LiveOptions {
            metrics_addr: Some(addr),
            ..Default::default()
        };
        let run = live::run(&scenario, opts);
        stop.store(true, Ordering::Relaxed);
        scrapes += scraper.join().unwrap_or(0);
        with += run?.wall;
    }
    let ratio = with.as_secs_f64() / without.as_secs_f64();
    Ok(Figure {
        name: format!(
            "metrics: live dispatch of {jobs} jobs with / without /metrics scraped each second ({rounds} runs each, {:.2} vs {:.2} s, {scrapes} scrapes)",
            with.as_secs_f64() / rounds as f64,
            without.as_secs_f64() / rounds as f64
        ),
        value: ratio,
        unit: "× wall".into(),
        goal: Some("≤ 1.05".into()),
        met: ratio <= 1.05,
    })
}

/// Jobs that each pull one 10 kB input from the store, live, round robin on
/// 5 sites (as the dispatch benchmark, with a transfer per job), with the
/// store resetting 5% of its responses halfway against the same run
/// without, alternated three times: the ratio of jobs ended per wall second.
fn dispatch_under_resets(jobs: usize) -> Result<Figure, Failure> {
    let files = (0..jobs)
        .map(|i| File {
            name: format!("in{i}"),
            size: 10_000,
        })
        .collect();
    let specs = (0..jobs)
        .map(|i| JobSpec {
            name: format!("j{i}"),
            inputs: vec![format!("in{i}")],
            ..Default::default()
        })
        .collect();
    let wf = Workflow::build(files, specs)?;
    let mut sites = vec![bench_site("store", 0)];
    sites.extend((0..5).map(|i| bench_site(&format!("site{i}"), 16)));
    let settings = ManagerSettings {
        transfer_backoff: 0.0,
        ..unthrottled()
    };
    let clean = bench_scenario("bench-resets", sites, 0, wf, "round-robin", settings);
    let mut faulty = clean.clone();
    faulty.sites[0].faults.resets = crate::core::faults::FaultSpec {
        first: 0,
        probability: 0.05,
    };
    let (mut t_clean, mut t_faulty, mut resets) = (Duration::ZERO, Duration::ZERO, 0);
    for _ in 0..3 {
        for (s, total) in [(&clean, &mut t_clean), (&faulty, &mut t_faulty)] {
            let run = live::run(s, live::LiveOptions::default())?;
            if !run.succeeded {
                return Err("resets bench: not every job ended".into());
            }
            *total += run.wall;
            resets += run.records.faults.len();
        }
    }
    let ratio = t_clean.as_secs_f64() / t_faulty.as_secs_f64();
    Ok(Figure {
        name: format!(
            "faults: live dispatch of {jobs} jobs pulling one 10 kB input each, 5% of responses \
             reset vs none (3 runs each, {:.2} vs {:.2} s, {resets} resets in all)",
            t_faulty.as_secs_f64() / 3.0,
            t_clean.as_secs_f64() / 3.0
        ),
        value: ratio,
        unit: "× jobs/s".into(),
        goal: Some("≥ 0.8".into()),
        met: ratio >= 0.8,
    })
}

/// `testbeds/chaos.toml` live with its faults, against the same testbed with
/// none: the ratio of wall times.
fn chaos_vs_clean() -> Result<Figure, Failure> {
    let path = std::path::Path::new("testbeds/chaos.toml");
    let chaos = crate::config::load(path, &Default::default())
        .map_err(|e| format!("{e} (run `gridbed bench faults` from the repository root)"))?;
    let mut clean = chaos.clone();
    clean.faults = Default::default();
    for s in &mut clean.sites {
        s.faults = Default::default();
    }
    let mut walls = Vec::new();
    for s in [&chaos, &clean] {
        let run = live::run(s, live::LiveOptions::default())?;
        if !run.succeeded {
            return Err("chaos bench: not every job ended".into());
        }
        walls.push((run.wall.as_secs_f64(), run.makespan));
    }
    let ratio = walls[0].0 / walls[1].0;
    Ok(Figure {
        name: format!(
            "faults: testbeds/chaos.toml live (2,001 jobs, a crash, 5% resets, 1% corruption) vs \
             without its faults: {:.1} vs {:.1} s wall, makespan {:.0} vs {:.0} s",
            walls[0].0, walls[1].0, walls[0].1, walls[1].1
        ),
        value: ratio,
        unit: "× wall".into(),
        goal: None,
        met: true,
    })
}

/// Pulls `files` files of `size` bytes from one gridftp endpoint to another
/// pool, then copies the same files with `std::fs::copy` + sha256.
fn transfer_throughput(files: usize, size: u64) -> Result<Vec<Figure>, Failure> {
    // On a RAM file system where there is one, so that both sides measure the
    // software path (HTTP, hashing, copying) rather than the disk's writeback.
    let base = ["/dev/shm"]
        .iter()
        .map(std::path::Path::new)
        .find(|p| p.is_dir())
        .map_or_else(std::env::temp_dir, |p| p.to_path_buf());
    let dir = || tempfile::tempdir_in(&base);
    let (src_dir, dst_dir, copy_dir) = (dir()?, dir()?, dir()?);
    let src = store::Store::new(src_dir.path());
    let dst = store::Store::new(dst_dir.path());
    let names: Vec<String> = (0..files).map(|i| format!("f{i:02}")).collect();
    for n in &names {
        store::write_generated(&src, n, 1, n, size)?;
    }
    let total = (files as u64 * size) as f64;
    // The same pulls again through both ends' limits, as a live run passes
    // them (the source's out and the receiver's in in the process's max-min
    // model, the source's server sending unshaped to the process's key), at
    // 10 GB/s each: more than loopback carries, so they only cost their
    // bookkeeping.
    let (mut source, mut receiver) = (bench_site("source", 0), bench_site("receiver", 1));
    source.bandwidth_out = 10e9;
    receiver.bandwidth_in = 10e9;
    let em = Emulation {
        time_scale: 1.0,
        byte_scale: 1.0,
    };
    let shapers = Arc::new(live::shaping::GridShapers::new(
        &[(0, &source), (1, &receiver)],
        &crate::core::topology::Topology::flat(2),
        em,
    ));
    let pulls: Result<(Duration, Duration), Failure> = actix_rt::System::new().block_on(async {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}", listener.local_addr()?);
        let limits = gridftp::Limits {
            bandwidth: f64::INFINITY,
            stream_cap: f64::INFINITY,
            latency: Duration::ZERO,
        };
        let answers = FileServer::new(64, ResponseFaults::none());
        let state = gridftp::Gridftp::new(src.clone(), limits, answers, Arc::default())
            .sharing(shapers.egress(0), shapers.key());
        let server = gridftp::serve(listener, Arc::new(state))?;
        let handle = server.handle();
        actix_rt::spawn(server);
        let client = reqwest::Client::builder().no_proxy().build()?;
        let start = Instant::now();
        for (i, n) in names.iter().enumerate() {
            live::transfer::pull(&client, &url, &dst, n, i as u64)
                .await
                .map_err(|e| format!("{e:?}"))?;
        }
        let plain = start.elapsed();
        for n in &names {
            std::fs::remove_file(dst.path(n))?;
        }
        let start = Instant::now();
        for (i, n) in names.iter().enumerate() {
            let path = shapers.path(0, 1);
            live::transfer::pull_as(&client, &url, n, &dst, n, i as u64, &path)
                .await
                .map_err(|e| format!("{e:?}"))?;
        }
        let shaped = start.elapsed();
        handle.stop(false).await;
        Ok((plain, shaped))
    });
    let (pulled, shaped) = pulls?;
    // The best a local copy-and-hash does: one reused buffer, the hash
    // streaming over it, the copy written as it goes.
    let mut buf = vec![0u8; 1 << 20];
    let start = Instant::now();
    for n in &names {
        use std::io::{Read, Write};
        let mut from = std::fs::File::open(src.path(n))?;
        let mut to = std::fs::File::create(copy_dir.path().join(n))?;
        let mut hasher = Sha256::new();
        loop {
            let k = from.read(&mut buf)?;
            if k == 0 {
                break;
            }
            hasher.update(&buf[..k]);
            to.write_all(&buf[..k])?;
        }
        std::hint::black_box(hasher.finalize());
    }
    let copied = start.elapsed();
    // sha256 alone over a warm buffer: the ceiling of any verified copy.
    let warm = vec![7u8; 64 << 20];
    let start = Instant::now();
    std::hint::black_box(Sha256::digest(&warm));
    let hashed = warm.len() as f64 / start.elapsed().as_secs_f64();
    let rate = |d: Duration| total / d.as_secs_f64() / 1e6;
    let place = format!(
        "{} in {files} files on {}",
        crate::units::human_bytes(total),
        base.display()
    );
    let ratio = copied.as_secs_f64() / pulled.as_secs_f64();
    Ok(vec![
        Figure {
            name: format!(
                "transfer: verified pull, one stream on loopback ({place}; sha256 alone {:.0} MB/s)",
                hashed / 1e6
            ),
            value: rate(pulled),
            unit: "MB/s".into(),
            goal: Some("≥ 1,000 MB/s".into()),
            met: rate(pulled) >= 1000.0,
        },
        Figure {
            name: "transfer: the same verified pulls through both ends' limits (source out \
                   and receiver in at 10 GB/s in the process's max-min model)"
                .into(),
            value: rate(shaped),
            unit: "MB/s".into(),
            goal: Some("≥ 1,000 MB/s".into()),
            met: rate(shaped) >= 1000.0,
        },
        Figure {
            name: format!(
                "transfer: pull+verify vs the best local copy+sha256 (reused buffer, streaming hash; {:.0} vs {:.0} MB/s)",
                rate(pulled),
                rate(copied)
            ),
            value: ratio,
            unit: "× copy".into(),
            goal: Some("≥ 0.7".into()),
            met: ratio >= 0.7,
        },
    ])
}
