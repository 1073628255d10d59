//! The data-diffusion farm live (seed 001): executors as real site actors
//! with cache pools and gridftp endpoints, the store as a shaped endpoint,
//! real bytes on loopback, checked against the simulated farm.

use std::path::Path;

use gridbed::config::Emulation;
use gridbed::config::farm as testbed;
use gridbed::core::farm::{Allocation, Drp, FarmSpec, Task};
use gridbed::diffusion::stream::{Arrivals, Popularity, generate};
use gridbed::live::farm::{FarmOptions, LiveFarmRun};
use gridbed::report::validate;
use gridbed::sim::farm;

use crate::common;

fn small() -> testbed::FarmTestbed {
    testbed::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/falkon-diffusion-small.toml"),
    )
    .unwrap()
}

fn live(spec: &FarmSpec, tasks: &[Task], em: Emulation) -> LiveFarmRun {
    gridbed::live::farm::run(
        spec,
        tasks,
        em,
        FarmOptions {
            run_id: "farm-test".into(),
            ..Default::default()
        },
    )
    .unwrap()
}

/// Every read is accounted once and moved bytes are what the counts say,
/// nominal and real; every cached file verified against the index.
fn check_accounting(r: &LiveFarmRun, spec: &FarmSpec, tasks: &[Task], em: Emulation) {
    let reads: u64 = tasks.iter().map(|t| t.files.len() as u64).sum();
    let run = &r.run;
    assert_eq!(run.tasks, tasks.len(), "every task ran");
    assert_eq!(r.failed_reads, 0);
    assert_eq!(
        run.local_hits + run.global_hits + run.misses,
        reads,
        "local + global + miss = file accesses"
    );
    let moved = run.global_hits + run.misses;
    assert_eq!(run.bytes_moved, moved * spec.file_size, "nominal bytes");
    assert_eq!(
        r.transfers, moved,
        "one real transfer per global hit or miss"
    );
    assert_eq!(
        r.real_bytes,
        moved * em.real_bytes(spec.file_size),
        "real bytes received = (global + miss) × real file size"
    );
    assert!(r.files_verified > 0, "{r:?}");
}

#[test]
fn a_scaled_live_run_of_the_diffusion_testbed_agrees_with_sim_within_validate_tolerance() {
    let tb = small();
    let sim = farm::run(&tb.spec, &tb.tasks).unwrap();
    // The working set (100 files) does not fit the caches (8 × 15 files):
    // a backlog builds and drains, so the makespan is not just the ideal.
    let ideal = tb.tasks.last().unwrap().arrival + tb.spec.compute;
    assert!(sim.makespan > 1.2 * ideal, "{} vs {ideal}", sim.makespan);
    // A second live run only if the first one, on this shared machine, was
    // off: validate's question is whether the engines agree, not whether a
    // noisy neighbour slowed one run.
    let mut tries = Vec::new();
    let r = loop {
        let r = live(&tb.spec, &tb.tasks, tb.emulation);
        check_accounting(&r, &tb.spec, &tb.tasks, tb.emulation);
        let dev = validate::deviation(sim.makespan, r.run.makespan).unwrap();
        tries.push(format!(
            "live {:.1} s vs sim {:.1} s: {:+.1}%\n{}",
            r.run.makespan,
            sim.makespan,
            100.0 * dev,
            validate::rows_table(&validate::farm_rows(&sim, &r.run))
        ));
        if dev.abs() <= 0.10 {
            break r;
        }
        assert!(
            tries.len() < 2,
            "outside validate's 10%:\n{}",
            tries.join("\n")
        );
    };
    // The caches did the work in both: most reads local, few from the store.
    for run in [&sim, &r.run] {
        assert!(run.local_hits > 2 * run.misses, "{run:?}");
    }
    // The Prometheus series say what the run record says.
    let m = &r.metrics;
    let series = |name: &str, label: &str| -> f64 {
        m.lines()
            .find(|l| l.starts_with(name) && l.contains(label))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    assert_eq!(
        series("gridbed_farm_tasks_done_total", "run_id=\"farm-test\"") as usize,
        tb.tasks.len()
    );
    assert_eq!(
        series("gridbed_farm_reads_total", "source=\"miss\"") as u64,
        r.run.misses
    );
    assert_eq!(
        series("gridbed_farm_bytes_moved_total", "run_id=\"farm-test\"") as u64,
        r.run.bytes_moved
    );
}

/// Two executors of one CPU: task A (t = 0) misses file 0 on executor 0;
/// at t = 1, B reads it there off the 10 MB/s local disk (1 s) while C,
/// with the holder busy, goes to executor 1 under max-compute-util and
/// reads it from executor 0 after the 2 s peer set-up (then 0.2 s at
/// 50 MB/s): C ends at 1 + 2 + 0.2 + 0.1 = 3.3 s. Without the two costs
/// the run would end at 1.3 s.
fn costs_spec() -> (FarmSpec, Vec<Task>) {
    let spec = FarmSpec {
        executors: 2,
        drp: None,
        cpus: 1,
        cache: 100_000_000,
        eviction: "lru".into(),
        policy: "max-compute-util".into(),
        files: 4,
        file_size: 10_000_000,
        compute: 0.1,
        dispatch: 0.0,
        store_bandwidth: 100e6,
        peer_bandwidth: 50e6,
        disk_bandwidth: 10e6,
        peer_latency: 2.0,
        caching: true,
        seed: 1,
        interval: 1.0,
    };
    let task = |arrival: f64| Task {
        arrival,
        files: vec![0],
    };
    (spec, vec![task(0.0), task(1.0), task(1.0)])
}

#[test]
fn local_disk_reads_and_peer_set_up_take_their_nominal_time_in_both_engines() {
    let (spec, tasks) = costs_spec();
    let sim = farm::run(&spec, &tasks).unwrap();
    assert!((sim.makespan - 3.3).abs() < 1e-9, "{sim:?}");
    assert_eq!((sim.local_hits, sim.global_hits, sim.misses), (1, 1, 1));
    let free = farm::run(
        &FarmSpec {
            disk_bandwidth: f64::INFINITY,
            peer_latency: 0.0,
            ..spec.clone()
        },
        &tasks,
    )
    .unwrap();
    assert!((free.makespan - 1.3).abs() < 1e-9, "{free:?}");
    let em = Emulation {
        time_scale: 2.0,
        byte_scale: 1000.0,
    };
    let r = live(&spec, &tasks, em);
    check_accounting(&r, &spec, &tasks, em);
    assert_eq!((r.run.local_hits, r.run.global_hits), (1, 1), "{r:?}");
    // Live adds the manager's lag and loopback time, never takes any away.
    assert!(
        r.run.makespan > 3.1 && r.run.makespan < 4.5,
        "live {} vs sim 3.3",
        r.run.makespan
    );
}

#[test]
fn the_live_provisioner_starts_executors_under_load_and_stops_them_deleting_their_pools() {
    // A burst of 60 tasks/s for 10 s, a lull, one last task at 60 s.
    let mut tasks = generate(
        600,
        40,
        1,
        &Arrivals::Constant(60.0),
        &Popularity::Uniform,
        4,
    );
    tasks.push(Task {
        arrival: 60.0,
        files: vec![0],
    });
    let spec = FarmSpec {
        executors: 6,
        drp: Some(Drp {
            min: 1,
            queue_threshold: 5,
            allocation: Allocation::Additive(2),
            latency: 1.0,
            idle: 8.0,
            interval: 1.0,
        }),
        cpus: 2,
        cache: 100_000_000,
        eviction: "lru".into(),
        policy: "good-cache-compute".into(),
        files: 40,
        file_size: 10_000_000,
        compute: 0.1,
        dispatch: 0.0,
        store_bandwidth: 100e6,
        peer_bandwidth: 50e6,
        disk_bandwidth: f64::INFINITY,
        peer_latency: 0.0,
        caching: true,
        seed: 3,
        interval: 5.0,
    };
    let em = Emulation {
        time_scale: 5.0,
        byte_scale: 1000.0,
    };
    let r = live(&spec, &tasks, em);
    check_accounting(&r, &spec, &tasks, em);
    assert!(r.run.peak_executors >= 4, "grew under the burst: {r:?}");
    assert!(
        r.started >= r.run.peak_executors,
        "each registered executor was started"
    );
    assert!(r.released >= 3, "released in the lull: {r:?}");
    assert_eq!(r.pools_left, 0, "a released executor's pool is deleted");
    assert!(r.run.final_executors <= 2, "{r:?}");
}

#[test]
fn gridbed_farm_experiments_writes_the_papers_table_and_figures() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/falkon-diffusion-small.toml"),
    )
    .unwrap()
    .replace("tasks = 3000", "tasks = 600");
    let tb = dir.path().join("farm.toml");
    std::fs::write(&tb, text).unwrap();
    let out_dir = dir.path().join("set");
    let (code, out, err) = common::gridbed(&[
        "farm".as_ref(),
        tb.as_os_str(),
        "--experiments".as_ref(),
        out_dir.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let csv = std::fs::read_to_string(out_dir.join("summary.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 1 + 8, "{csv}");
    assert!(rows[1].starts_with("first-available,") && rows[1].contains(",5011,"));
    for name in [
        "first-available",
        "gcc-1.5GB",
        "max-cache-hit-4GB",
        "throughput",
        "speedup-pi",
        "slowdown",
        "response",
    ] {
        let svg = std::fs::read_to_string(out_dir.join(format!("{name}.svg"))).unwrap();
        assert!(svg.starts_with("<svg"), "{name}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs[0]["speedup"], 1.0);
    let best = runs
        .iter()
        .map(|r| r["performance_index"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert_eq!(best, 1.0);
    // One slowdown point per ramp step (5 s) with arrivals.
    assert!(
        json["slowdown_by_step"]["gcc-4GB"]
            .as_array()
            .unwrap()
            .len()
            >= 5
    );
    let (code, _, err) = common::gridbed(&[
        "farm".as_ref(),
        tb.as_os_str(),
        "--experiments".as_ref(),
        out_dir.as_os_str(),
        "--validate".as_ref(),
    ]);
    assert_eq!(code, Some(2), "{err}");
}

#[test]
fn gridbed_farm_validate_runs_both_engines_and_reports_the_deviation() {
    let dir = tempfile::tempdir().unwrap();
    // The small testbed with fewer tasks, so the CLI test stays short.
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/falkon-diffusion-small.toml"),
    )
    .unwrap()
    .replace("tasks = 3000", "tasks = 300");
    let tb = dir.path().join("farm.toml");
    std::fs::write(&tb, text).unwrap();
    let csv = dir.path().join("intervals.csv");
    let json = dir.path().join("farm.json");
    let svg = dir.path().join("view.svg");
    let (code, out, err) = common::gridbed(&[
        "farm".as_ref(),
        tb.as_os_str(),
        "--validate".as_ref(),
        "--tolerance".as_ref(),
        "1.0".as_ref(),
        "--intervals".as_ref(),
        csv.as_os_str(),
        "--svg".as_ref(),
        svg.as_os_str(),
        "--json".as_ref(),
        json.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    for want in [
        "simulated",
        "live (time scale 4",
        "cache hit local (%)",
        "within the tolerance",
    ] {
        assert!(out.contains(want), "{want}: {out}");
    }
    let rows: Vec<String> = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert!(rows[0].starts_with("t_s,arrived,done"));
    assert!(
        rows[0].ends_with(
            "throughput_gbps,ideal_gbps,local_pct,global_pct,miss_pct,cached_files,cached_copies"
        ),
        "{}",
        rows[0]
    );
    let arrived: u64 = rows[1..]
        .iter()
        .map(|l| l.split(',').nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(arrived, 300);
    assert!(
        std::fs::read_to_string(&svg)
            .unwrap()
            .contains("Wait queue")
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(record["sim"]["tasks"], 300);
    assert_eq!(record["live"]["tasks"], 300);
    assert!(record["live_run"]["files_verified"].as_u64().unwrap() > 0);
    assert_eq!(record["comparison"][0]["name"], "makespan (s)");
    let arrived: u64 = record["live"]["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["arrived"].as_u64().unwrap())
        .sum();
    assert_eq!(arrived, 300);
}

#[test]
fn corrupt_reads_are_retried_and_a_task_whose_read_keeps_failing_is_placed_again() {
    // One executor, one slot, one file: the store corrupts its first 12
    // responses, so the first read fails 5 attempts (its task goes back to
    // the wait queue), the second placement fails 5 more, the third gets
    // through on its third attempt.
    let tasks: Vec<Task> = (0..5)
        .map(|i| Task {
            arrival: i as f64,
            files: vec![0],
        })
        .collect();
    let spec = FarmSpec {
        executors: 1,
        drp: None,
        cpus: 1,
        cache: 10_000_000,
        eviction: "lru".into(),
        policy: "good-cache-compute".into(),
        files: 1,
        file_size: 10_000_000,
        compute: 0.1,
        dispatch: 0.0,
        store_bandwidth: 100e6,
        peer_bandwidth: 100e6,
        disk_bandwidth: f64::INFINITY,
        peer_latency: 0.0,
        caching: true,
        seed: 5,
        interval: 5.0,
    };
    let em = Emulation {
        time_scale: 10.0,
        byte_scale: 1000.0,
    };
    let r = gridbed::live::farm::run(
        &spec,
        &tasks,
        em,
        FarmOptions {
            corrupt_store_responses: 12,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(r.run.tasks, 5, "no task lost");
    assert_eq!((r.failed_reads, r.run.requeued), (2, 2), "{r:?}");
    // The failed reads count nowhere; the one that got through is the miss,
    // the other four tasks hit the cache.
    assert_eq!((r.run.misses, r.run.local_hits), (1, 4));
    assert_eq!(r.real_bytes, em.real_bytes(spec.file_size));
}

/// Seed 001 §5.2 at 4 GB: good-cache-compute (1,427 s) ≤ max-compute-util
/// (2,037 s) ≤ max-cache-hit (2,888 s) < first-available on the store
/// (5,011 s); max-cache-hit has the best local hit rate and
/// max-compute-util the most remote hits. The ordering rests on the
/// executors' costs (local disk, peer set-up): without them all three
/// data-aware policies reach the ideal (docs/reproduction/diffusion.md).
#[test]
fn the_papers_ordering_of_dispatch_policies_holds_at_4_gb() {
    use gridbed::diffusion::experiments::paper_set;
    let tb = testbed::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/falkon-diffusion.toml"),
    )
    .unwrap();
    let set = paper_set();
    let run = |name: &str| {
        let e = set.iter().find(|e| e.name == name).unwrap();
        farm::run(&e.spec(&tb.spec), &tb.tasks).unwrap()
    };
    let fa = run("first-available");
    let gcc = run("gcc-4GB");
    let mcu = run("max-compute-util-4GB");
    let mch = run("max-cache-hit-4GB");
    let m = |r: &gridbed::core::farm::FarmRun| r.makespan;
    assert!(
        m(&gcc) <= m(&mcu) && m(&mcu) <= m(&mch) && m(&mch) < m(&fa),
        "gcc {} mcu {} mch {} fa {}",
        m(&gcc),
        m(&mcu),
        m(&mch),
        m(&fa)
    );
    let local = |r: &gridbed::core::farm::FarmRun| r.local_hits;
    assert!(local(&mch) > local(&gcc) && local(&gcc) > local(&mcu));
    assert!(mcu.global_hits > gcc.global_hits && gcc.global_hits > mch.global_hits);
    // Without the executors' costs every data-aware policy keeps up.
    let free = |name: &str| {
        let e = set.iter().find(|e| e.name == name).unwrap();
        let mut spec = e.spec(&tb.spec);
        spec.disk_bandwidth = f64::INFINITY;
        spec.peer_latency = 0.0;
        farm::run(&spec, &tb.tasks).unwrap().makespan
    };
    let ideal = tb.tasks.last().unwrap().arrival + tb.spec.compute;
    assert!(free("max-cache-hit-4GB") < ideal + 1.0);
}
