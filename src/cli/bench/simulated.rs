//! The simulator's benchmarks: the manager's decisions, the full coadd,
//! the control database's cost and WfCommons instances parsed and run.

use super::*;

/// Seed 000's Table 1, simulated columns: (CPUs, disk GB), as in `sites.toml`.
pub(super) const GRID3: [(usize, u64); 25] = [
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

pub(super) fn grid3_sites() -> Vec<SiteInfo> {
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
pub(super) fn manager_decisions(jobs: usize) -> Result<Vec<Figure>, Failure> {
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

/// The full SDSS coadd (44,400 jobs, 5.4 M references) on the 25 Grid3 sites,
/// simulated with SPCL and with Random (the most transfers: every reference).
pub(super) fn sim_full_coadd() -> Result<Vec<Figure>, Failure> {
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
pub(super) fn db_cost(testbed: &str, rounds: usize) -> Result<Figure, Failure> {
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
pub(super) fn db_cost_command(testbed: &str, rounds: usize) -> Result<Figure, Failure> {
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

/// WfCommons epigenomics instances of 10,000 and 100,000 tasks (written by
/// `benches/wfcommons_gen.py` into `dir`) parsed and simulated on 4 sites of
/// 10, 10, 4 and 4 CPUs: wall time and peak RSS of each.
pub(super) fn wfformat_parse_sim(dir: &std::path::Path) -> Result<Vec<Figure>, Failure> {
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
