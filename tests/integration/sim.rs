//! The sim engine: determinism, an analytic makespan, conservation, and
//! agreement with the live engine.

use std::path::Path;

use gridbed::core::ReplicaPolicy;
use gridbed::core::records::Outcome;
use gridbed::live::{self, LiveOptions};
use gridbed::report::validate::Comparison;
use gridbed::report::{Detail, RunRecord};
use gridbed::sim;

use crate::common;

fn quickstart() -> gridbed::config::Scenario {
    common::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/quickstart.toml"))
}

fn sim_record(s: &gridbed::config::Scenario) -> String {
    let run = sim::run(s).unwrap();
    serde_json::to_string(&RunRecord::from_run(s, &run, "t", Detail::Full)).unwrap()
}

#[test]
fn same_seed_gives_a_byte_identical_record_and_another_seed_differs() {
    let body = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/quickstart.toml"),
    )
    .unwrap()
    .replace("strategy = \"data-present\"", "strategy = \"random\"");
    let (_d1, a) = common::scenario(&body);
    let (_d2, b) = common::scenario(&body.replace("seed = 42", "seed = 43"));
    let first = sim_record(&a);
    assert_eq!(first, sim_record(&a));
    assert_ne!(first, sim_record(&b));
}

const ONE_FILE_ONE_JOB: &str = r#"
strategy = "random"
origin = "store"
[emulation]
time_scale = 10
byte_scale = 1000
[[site]]
name = "store"
new = true
storage = true
cpus = 0
disk = "1 GB"
bandwidth = "1 MB/s"
stream_cap = "1 MB/s"
latency = 0.5
[[site]]
name = "worker"
new = true
cpus = 1
disk = "1 GB"
[workflow]
generator = "inline"
[[workflow.file]]
name = "input"
size = "5 MB"
[[workflow.job]]
name = "job"
runtime = 10
inputs = ["input"]
"#;

#[test]
fn one_5_mb_file_at_1_mb_per_s_then_a_10_s_job_gives_the_analytic_makespan() {
    let (_dir, s) = common::scenario(ONE_FILE_ONE_JOB);
    // 0.5 s latency + 5 MB / 1 MB/s + 10 s of running.
    let expected = 0.5 + 5.0 + 10.0;
    let sim = sim::run(&s).unwrap();
    assert!(sim.succeeded);
    assert!(
        (sim.makespan - expected).abs() < 1e-9,
        "sim {}",
        sim.makespan
    );
    let live = live::run(&s, LiveOptions::default()).unwrap();
    assert!(live.succeeded);
    // Live pays real overheads (HTTP, actor messages, timers) on top: allow 3%.
    let dev = (live.makespan - expected) / expected;
    assert!(
        (-0.01..0.03).contains(&dev),
        "live {} vs {expected}",
        live.makespan
    );
}

#[test]
fn conservation_at_scale() {
    // Small disks (6 to 24 GB) under 1,800 jobs of random placement. Placed
    // regardless of room now, prescripts find disks full of the inputs of
    // queued jobs: staging fails, jobs are planned again and pools evict.
    // Placed only where their files fit (storage-aware release), no job is
    // planned again.
    for storage_aware in [true, false] {
        conserved_on_small_disks(storage_aware);
    }
}

fn conserved_on_small_disks(storage_aware: bool) {
    let (_dir, s) = common::scenario(&format!(
        r#"
strategy = "random"
replica_policy = "caching"
origin = "submit-host"
[emulation]
time_scale = 1
byte_scale = 1
[manager]
maxpre = 40
storage_aware = {storage_aware}
[workflow]
generator = "spatial"
ra = 60
dec = 6
filters = 5
file_size = "5 MB"
output_size = "1 MB"
[[site]]
name = "submit-host"
[[site]]
name = "grid3-18"
[[site]]
name = "grid3-20"
[[site]]
name = "grid3-21"
[[site]]
name = "grid3-24"
"#
    ));
    let run = sim::run(&s).unwrap();
    assert!(run.succeeded, "{:?}", run.counts);
    for (j, rec) in run.records.jobs.iter().enumerate() {
        let ended = rec
            .attempts
            .iter()
            .filter(|a| a.outcome == Outcome::Ended)
            .count();
        assert_eq!(ended, 1, "job {j}");
    }
    let recorded = run
        .records
        .transfers
        .iter()
        .filter(|t| t.failure.is_none() && t.end.is_some())
        .count();
    assert_eq!(run.transfers as usize, recorded);
    let replans: u32 = run
        .records
        .jobs
        .iter()
        .map(|j| j.attempts.len() as u32 - 1)
        .sum();
    if storage_aware {
        assert_eq!(replans, 0, "no job placed where its files did not fit");
    } else {
        assert!(replans > 0 && run.evictions.iter().sum::<u64>() > 0);
    }
    for (i, site) in s.sites.iter().enumerate() {
        assert!(
            run.peak_used[i] <= site.info.disk,
            "{} over capacity",
            site.info.name
        );
    }
}

#[test]
fn validate_on_the_quickstart_is_within_its_tolerance() {
    let mut s = quickstart();
    s.emulation.time_scale = 100.0;
    let sim = sim::run(&s).unwrap();
    let compare = || {
        let live = live::run(&s, LiveOptions::default()).unwrap();
        Comparison::new(
            &RunRecord::from_run(&s, &sim, "v", Detail::Full),
            &RunRecord::from_run(&s, &live, "v", Detail::Full),
            0.10,
        )
    };
    // At 100 nominal seconds a real second (500, then 250, were seen to fail
    // twice in a row while the 100,000-task pressure test shared the 2
    // cores), a prescript and the registration of a replica 10 ms apart can
    // swap on a loaded machine (CI runs the live tests side by side on 2
    // cores), and data-present's tie-break then takes another schedule
    // (issue 39): one second live run is allowed, as the farm's live test
    // allows.
    let first = compare();
    if !first.within_tolerance {
        let second = compare();
        assert!(
            second.within_tolerance,
            "{}\n(first run)\n{}",
            second.table(),
            first.table()
        );
    }
}

#[test]
fn on_a_small_coadd_clustered_transfers_fewer_files_than_random_and_random_caching() {
    let body = |strategy: &str| {
        format!(
            r#"
strategy = "{strategy}"
replica_policy = "delete"
origin = "submit-host"
[emulation]
time_scale = 1000
byte_scale = 1000
[workflow]
generator = "coadd"
ra = 24
dec = 6
filters = 2
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
[[site]]
name = "grid3-02"
[[site]]
name = "grid3-03"
[[site]]
name = "grid3-04"
"#
        )
    };
    let transfers = |strategy: &str| {
        let (_dir, s) = common::scenario(&body(strategy));
        let run = sim::run(&s).unwrap();
        assert!(run.succeeded, "{strategy}");
        run.transfers
    };
    let (random, caching, clustered) = (
        transfers("random"),
        transfers("random-caching"),
        transfers("clustered"),
    );
    assert!(
        clustered < caching && caching < random,
        "{clustered} {caching} {random}"
    );
    // SPCL moves each file about once; Random moves every reference.
    let (_d, s) = common::scenario(&body("random"));
    assert_eq!(random as usize, s.workflow.references());
    assert!((clustered as usize) < 2 * s.workflow.inputs().count());
}

/// Seed 000's result on the full coadd in the paper's configuration
/// (postscript registration, MAXPRE 20, the first 5-25 Grid3 sites):
/// Clustered moves the fewest files at every site count, about each file
/// once up to 20 sites and at least 30% fewer than DataPresent at 25; it is
/// fastest up to 15 sites. Beyond, the paper's equal share of clusters per
/// site leaves a 4- or 2-CPU site the slowest (grid3-24: 1,800 jobs of 15
/// minutes on 2 CPUs, 225 h), and DataPresent, which is not bound to it,
/// is faster: pinned, as docs/reproduction/spcl.md explains.
#[test]
fn on_the_grid3_testbed_clustered_moves_the_fewest_files_and_is_fastest_up_to_15_sites() {
    let out = tempfile::tempdir().unwrap();
    let args = gridbed::cli::sweep::SweepArgs {
        testbed: Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/spcl-grid3.toml"),
        strategies: vec!["clustered".into(), "data-present".into()],
        sites: vec![5, 10, 15, 20, 25],
        maxpre: vec![20],
        seeds: vec![1],
        repeat: None,
        engine: "sim".into(),
        out: out.path().to_path_buf(),
        force: false,
        parallel: Some(2),
        sites_file: Some(common::catalog()),
        monitqueue_for: None,
        quiet: true,
        backend: gridbed::cli::sweep::Backend::Local,
        partition: None,
    };
    let rows = gridbed::cli::sweep::run(&args).unwrap();
    let cell = |strategy: &str, sites: usize| {
        rows.iter()
            .find(|r| r.strategy == strategy && r.sites == sites)
            .unwrap()
    };
    for n in [5, 10, 15, 20, 25] {
        let (c, d) = (cell("clustered", n), cell("data-present", n));
        assert!(c.succeeded && d.succeeded, "{n} sites");
        assert!(
            (c.transfers as f64) < 0.7 * d.transfers as f64,
            "{n} sites: Clustered {} vs DataPresent {} transfers",
            c.transfers,
            d.transfers
        );
        if n <= 20 {
            assert_eq!(c.transfers, 544_500, "{n} sites: each file once");
        }
        let faster = c.makespan_s < d.makespan_s;
        assert_eq!(
            faster,
            n <= 15,
            "{n} sites: Clustered {} s vs DataPresent {} s",
            c.makespan_s,
            d.makespan_s
        );
    }
}

/// Seed 002's result with its pairing: Opportunistic with MonitQueue has the
/// best mean makespan over 10 seeds against the other four selectors
/// without it, and, with VDS's replica deletion, every run succeeds.
#[test]
fn with_the_papers_pairing_opportunistic_has_the_best_mean_makespan_on_the_osg_testbed() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/osg-12-pipeline.toml");
    let mean = |strategy: &str| {
        let total: f64 = (1..=10)
            .map(|seed| {
                let overrides = gridbed::config::Overrides {
                    strategy: Some(strategy.into()),
                    seed: Some(seed),
                    sites_file: Some(common::catalog()),
                    ..Default::default()
                };
                let mut s = gridbed::config::load(&path, &overrides).unwrap();
                assert_eq!(s.manager.replica_policy, ReplicaPolicy::Delete);
                if strategy != "opportunistic" {
                    s.manager.monit_interval = 0.0;
                }
                let run = sim::run(&s).unwrap();
                assert!(run.succeeded, "{strategy} seed {seed}");
                run.makespan
            })
            .sum();
        total / 10.0
    };
    let opportunistic = mean("opportunistic");
    for other in [
        "weighted-linear-random",
        "round-robin",
        "last-recent-used",
        "data-present[caching=false]",
    ] {
        let m = mean(other);
        assert!(
            opportunistic < m,
            "opportunistic {opportunistic} vs {other} {m}"
        );
    }
}

#[test]
fn a_kill_racing_a_start_is_forced_both_ways_in_the_sim_and_leaves_one_outcome() {
    // Kill at t = 9 (idle 8 > 7.5): `c` is still queued, so it is killed and
    // runs on grid3-02 after `b`.
    let (_d, s) = common::race_scenario(7.5, 10.0, 100.0);
    let run = sim::run(&s).unwrap();
    assert!(run.succeeded);
    let c = &run.records.jobs[2].attempts;
    assert_eq!(c.len(), 2, "{c:?}");
    assert_eq!((c[0].outcome.clone(), c[0].site), (Outcome::Killed, 1));
    assert_eq!(c[0].ended, Some(9.0));
    assert!(c[0].started.is_none());
    assert_eq!((c[1].outcome.clone(), c[1].site), (Outcome::Ended, 2));
    assert_eq!(run.records.sites[1].kills_void, 0);

    // Kill at t = 10 (idle 9 > 8.5): `a` ends at t = 10 and its slot goes to
    // `c` in the same instant, before the MonitQueue tick of t = 10 is seen;
    // the kill finds `c` started and is void: `c` runs once, where it was.
    let (_d, s) = common::race_scenario(8.5, 10.0, 100.0);
    let run = sim::run(&s).unwrap();
    assert!(run.succeeded);
    let c = &run.records.jobs[2].attempts;
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!((c[0].outcome.clone(), c[0].site), (Outcome::Ended, 1));
    assert_eq!(c[0].started, Some(10.0));
    assert_eq!(run.records.sites[1].kills_void, 1);
    assert_eq!(run.records.sites[1].killed, 0);
}

#[test]
fn per_job_overheads_add_up_along_the_critical_path_in_both_engines() {
    let body = r#"
strategy = "round-robin"
origin = "submit-host"
[emulation]
time_scale = 50
byte_scale = 1000
[manager]
prescript_interval = 0
release_overhead = 2
submit_overhead = 3
postscript_overhead = 4
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
[workflow]
generator = "inline"
[[workflow.job]]
name = "a"
runtime = 10
[[workflow.job]]
name = "b"
runtime = 10
parents = ["a"]
[[workflow.job]]
name = "c"
runtime = 10
parents = ["b"]
"#;
    let (_d, s) = common::scenario(body);
    // Each job: submit 3 + run 10 + postscript 4; two releases of 2.
    let want = 3.0 * (3.0 + 10.0 + 4.0) + 2.0 * 2.0;
    let sim = sim::run(&s).unwrap();
    assert!(sim.succeeded);
    assert!((sim.makespan - want).abs() < 1e-9, "sim {}", sim.makespan);
    let b = &sim.records.jobs[1];
    assert_eq!(b.ready, Some(19.0), "a ends at 17, b released 2 s later");
    assert_eq!(b.attempts[0].submitted, Some(22.0));
    let live = live::run(&s, LiveOptions::default()).unwrap();
    assert!(live.succeeded);
    assert!(
        (live.makespan - want).abs() / want < 0.05,
        "live {} vs {want}",
        live.makespan
    );
}

/// The shipped testbeds' simulated figures, pinned: a change to the shared
/// world model (sites, links, event order) that moves them must be
/// explained in docs/ (as the shared link model's is in
/// docs/reproduction/diffusion.md).
#[test]
fn the_testbeds_simulate_to_their_pinned_figures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (testbed, makespan, transfers) in [
        ("quickstart", 2732.7, 69),
        ("spcl-live-10", 5548.0, 106_400),
        ("osg-12-pipeline", 1261.5, 468),
        ("tight-disk", 740.0, 122),
    ] {
        let s = common::load(&root.join(format!("testbeds/{testbed}.toml")));
        let r = sim::run(&s).unwrap();
        assert!(r.succeeded, "{testbed}");
        assert!(
            (r.makespan - makespan).abs() < 0.05,
            "{testbed}: makespan {} s, documented {makespan} s",
            r.makespan
        );
        assert_eq!(r.transfers, transfers, "{testbed}: transfers");
    }
    let tb =
        gridbed::config::farm::load(&root.join("testbeds/falkon-diffusion-small.toml")).unwrap();
    let r = gridbed::sim::farm::run(&tb.spec, &tb.tasks).unwrap();
    assert!((r.makespan - 127.5).abs() < 0.05, "farm: {}", r.makespan);
    assert_eq!((r.local_hits, r.global_hits, r.misses), (2074, 365, 561));
}

/// What the simulator told its observer.
#[derive(Default)]
struct Told {
    shown: Vec<(usize, String)>,
    finished: usize,
}

struct Recorder(std::sync::Arc<std::sync::Mutex<Told>>);

impl gridbed::core::observer::Observer for Recorder {
    fn show(&mut self, ended: usize, msg: &str) {
        self.0.lock().unwrap().shown.push((ended, msg.to_string()));
    }
    fn finish(&mut self) {
        self.0.lock().unwrap().finished += 1;
    }
}

/// Issue 61: a long simulated run shows its progress as a live one does
/// (at most five times a wall second), and says when it is over.
#[test]
fn a_simulated_run_shows_its_progress_while_it_goes() {
    let s =
        common::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/dslab-platform.toml"));
    let told = std::sync::Arc::new(std::sync::Mutex::new(Told::default()));
    let run = sim::run_observed(&s, None, Box::new(Recorder(told.clone()))).unwrap();
    let told = told.lock().unwrap();
    assert_eq!(told.finished, 1);
    let wall = run.wall.as_secs_f64();
    // One report per 200 ms at most, and one at least per 200 ms and the
    // 1,000 events after it (some 15 ms here in a debug build).
    assert!(
        told.shown.len() as f64 <= wall / 0.2 + 1.0,
        "{} in {wall} s",
        told.shown.len()
    );
    assert!(
        told.shown.len() as f64 >= wall / 0.3 - 1.0,
        "{} in {wall} s",
        told.shown.len()
    );
    let jobs = s.workflow.jobs.len();
    assert!(
        told.shown.windows(2).all(|w| w[0].0 <= w[1].0),
        "ended only grows"
    );
    for (ended, msg) in &told.shown {
        assert!(
            *ended <= jobs && msg.contains("running") && msg.contains("nominal"),
            "{msg}"
        );
    }
}
