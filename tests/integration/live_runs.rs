//! Whole live runs: sites as actors on loopback, real transfers, real files.

use std::collections::HashSet;
use std::path::Path;

use gridbed::config::Scenario;
use gridbed::core::TransferFailure;
use gridbed::core::records::Outcome;
use gridbed::live::{self, LiveOptions, LiveRun, store};

use crate::common;

fn run(s: &Scenario) -> LiveRun {
    live::run(s, LiveOptions::default()).expect("live run")
}

/// Every job ended exactly once (one `Ended` attempt, and it is the last).
fn assert_each_job_ended_once(s: &Scenario, r: &LiveRun) {
    assert!(r.succeeded, "{:?}", r.counts);
    for (j, rec) in r.records.jobs.iter().enumerate() {
        let ended = rec
            .attempts
            .iter()
            .filter(|a| a.outcome == Outcome::Ended)
            .count();
        assert_eq!(
            ended, 1,
            "job {} ended {ended} times",
            s.workflow.jobs[j].name
        );
        assert_eq!(
            rec.attempts.last().map(|a| &a.outcome),
            Some(&Outcome::Ended)
        );
    }
}

/// The RLS is the truth: a site holds a file on disk iff the RLS lists it
/// there, and every file on disk has the bytes the run seed defines.
fn assert_rls_matches_disk(s: &Scenario, r: &LiveRun) {
    for (site, report) in r.sites.iter().enumerate() {
        assert!(
            report.strays.is_empty(),
            "site {site} has strays {:?}",
            report.strays
        );
        let held: HashSet<usize> = report.files.iter().map(|c| c.file).collect();
        for f in 0..s.workflow.files.len() {
            let listed = r.rls.has(f, site);
            assert_eq!(
                held.contains(&f),
                listed,
                "site {} file {}: on disk {}, in RLS {listed}",
                s.sites[site].info.name,
                s.workflow.files[f].name,
                held.contains(&f)
            );
        }
        for c in &report.files {
            let file = &s.workflow.files[c.file];
            let len = s.emulation.real_bytes(file.size);
            assert!(c.intact, "{} not intact", file.name);
            assert_eq!(c.size, len, "{} has the wrong size", file.name);
            let expected = store::sha256_hex(&store::content(s.seed, &file.name, len));
            assert_eq!(c.sha256, expected, "{} has the wrong bytes", file.name);
        }
    }
}

#[test]
fn a_quickstart_sized_run_completes_with_every_output_where_the_rls_says() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/quickstart.toml");
    let mut s = common::load(&path);
    s.emulation.time_scale = 1000.0; // same scenario, ten times faster than the README's
    let r = run(&s);
    assert_each_job_ended_once(&s, &r);
    assert_rls_matches_disk(&s, &r);
    // Every output is registered somewhere (and so, by the check above, on disk).
    for (f, file) in s.workflow.files.iter().enumerate() {
        if s.workflow.producer[f].is_some() {
            assert!(
                !r.rls.holders(f).is_empty(),
                "output {} is nowhere",
                file.name
            );
        }
    }
    assert!(r.records.transfers.iter().all(|t| t.failure.is_none()));
}

const TWO_READERS: &str = r#"
strategy = "round-robin"
replica_policy = "POLICY"
origin = "submit-host"
seed = 3
[emulation]
time_scale = 1000
byte_scale = 1000
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 1
[workflow]
generator = "inline"
[[workflow.file]]
name = "shared input"
size = "5 MB"
[[workflow.file]]
name = "private/input"
size = "5 MB"
[[workflow.job]]
name = "first"
runtime = 30
inputs = ["shared input"]
[[workflow.job]]
name = "second"
runtime = 30
inputs = ["shared input", "private/input"]
parents = ["first"]
"#;

#[test]
fn transfers_equal_missing_inputs_with_delete_and_caching_reuses() {
    for (policy, expected) in [("delete", 3), ("caching", 2)] {
        let (_dir, s) = common::scenario(&TWO_READERS.replace("POLICY", policy));
        let r = run(&s);
        assert_each_job_ended_once(&s, &r);
        let ok: Vec<_> = r
            .records
            .transfers
            .iter()
            .filter(|t| t.failure.is_none())
            .collect();
        assert_eq!(ok.len(), expected, "{policy}");
        // Transfers are exactly the inputs that were not on site when planned.
        let planned_missing: u32 = r
            .records
            .jobs
            .iter()
            .flat_map(|j| &j.attempts)
            .map(|a| a.transfers)
            .sum();
        assert_eq!(planned_missing as usize, expected, "{policy}");
        let second = &r.records.jobs[1].attempts[0];
        match policy {
            "caching" => assert_eq!(second.transfers, 1, "the shared input was reused"),
            _ => assert_eq!(
                second.transfers, 2,
                "delete: the staged copy went with the first job"
            ),
        }
        assert_rls_matches_disk(&s, &r);
    }
}

/// One execution site whose disk holds two of the three 1 MB inputs; a chain of
/// jobs makes the eviction order deterministic:
/// a | b | c (evicts a) | a+b (b is pinned: evicts c, not the older b) | c (evicts a).
const EVICTION: &str = r#"
strategy = "random"
replica_policy = "caching"
origin = "submit-host"
[emulation]
time_scale = 1000
byte_scale = 1000
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 1
disk = "2 MB"
[workflow]
generator = "inline"
[[workflow.file]]
name = "a"
size = "1 MB"
[[workflow.file]]
name = "b"
size = "1 MB"
[[workflow.file]]
name = "c"
size = "1 MB"
[[workflow.job]]
name = "j1"
runtime = 10
inputs = ["a"]
[[workflow.job]]
name = "j2"
runtime = 10
inputs = ["b"]
parents = ["j1"]
[[workflow.job]]
name = "j3"
runtime = 10
inputs = ["c"]
parents = ["j2"]
[[workflow.job]]
name = "j4"
runtime = 10
inputs = ["a", "b"]
parents = ["j3"]
[[workflow.job]]
name = "j5"
runtime = 10
inputs = ["c"]
parents = ["j4"]
"#;

#[test]
fn a_small_disk_evicts_in_lru_order_never_a_pinned_file_and_the_run_completes() {
    let (_dir, s) = common::scenario(EVICTION);
    let input_bytes: u64 = s.workflow.inputs().map(|f| s.workflow.files[f].size).sum();
    assert!(s.sites[1].info.disk < input_bytes);
    let r = run(&s);
    assert_each_job_ended_once(&s, &r);
    let evicted: Vec<&str> = r
        .records
        .evictions
        .iter()
        .map(|e| s.workflow.files[e.file].name.as_str())
        .collect();
    assert_eq!(evicted, ["a", "c", "a"]);
    assert_eq!(r.sites[1].evictions, 3);
    assert_rls_matches_disk(&s, &r);
}

#[test]
fn a_corrupted_response_is_detected_retried_and_never_registered() {
    let body = TWO_READERS.replace("POLICY", "caching").replace(
        "name = \"submit-host\"\n",
        "name = \"submit-host\"\ncorrupt_responses = 1\n",
    );
    let (_dir, s) = common::scenario(&body);
    assert_eq!(s.sites[0].faults.corrupt_responses.first, 1);
    let r = run(&s);
    assert_each_job_ended_once(&s, &r);
    let corrupt: Vec<_> = r
        .records
        .transfers
        .iter()
        .filter(|t| matches!(t.failure.as_deref(), Some(TransferFailure::Corrupt(_))))
        .collect();
    assert_eq!(corrupt.len(), 1, "exactly the flipped response failed");
    let retried = r.records.transfers.iter().any(|t| {
        t.failure.is_none() && t.retry && t.file == corrupt[0].file && t.to == corrupt[0].to
    });
    assert!(retried, "the corrupt transfer was retried");
    assert_rls_matches_disk(&s, &r);
}

#[test]
fn exported_metrics_equal_the_documented_ones_and_the_dashboard_uses_only_those() {
    let body = TWO_READERS.replace("POLICY", "caching").replace(
        "name = \"submit-host\"\n",
        "name = \"submit-host\"\ncorrupt_responses = 1\n",
    );
    let (_dir, s) = common::scenario(&body);
    let r = run(&s);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/metrics.md")).unwrap();
    let source = std::fs::read_to_string(root.join("src/metrics.rs")).unwrap();
    let documented: HashSet<String> = docs
        .lines()
        .filter_map(|l| l.strip_prefix("| `gridbed_"))
        .filter_map(|l| l.split('`').next())
        .map(|n| format!("gridbed_{n}"))
        .collect();
    assert!(documented.len() >= 20, "{documented:?}");
    let exported: HashSet<String> = r
        .metrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    assert_eq!(
        exported, documented,
        "the metrics of a live run and docs/metrics.md differ"
    );
    for name in common::dashboard_metrics() {
        assert!(
            exported.contains(&name),
            "the dashboard uses {name}, which a live run does not export"
        );
    }
    for name in &documented {
        assert!(
            source.contains(&format!("\"{name}\"")),
            "{name} is documented but not defined"
        );
    }
}

#[test]
fn monitqueue_kills_idle_jobs_and_every_job_still_ends_once_live_and_in_sim() {
    let body = r#"
strategy = "round-robin"
origin = "submit-host"
[emulation]
time_scale = 100
byte_scale = 1000
[manager]
maxpre = 10
prescript_interval = 0.5
monit_interval = 1
max_idle = 5
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 1
[[site]]
name = "grid3-02"
cpus = 2
[workflow]
generator = "pipeline"
levels = 1
width = 8
runtime = 20
file_size = "1 MB"
"#;
    let (_dir, s) = common::scenario(body);
    let live = run(&s);
    assert_each_job_ended_once(&s, &live);
    assert_rls_matches_disk(&s, &live);
    let sim = gridbed::sim::run(&s).unwrap();
    assert!(sim.succeeded);
    for (engine, records) in [("live", &live.records), ("sim", &sim.records)] {
        let kills: u64 = records.sites.iter().map(|c| c.killed).sum();
        assert!(kills > 0, "{engine}: MonitQueue killed nothing");
        for rec in &records.jobs {
            let ended = rec
                .attempts
                .iter()
                .filter(|a| a.outcome == Outcome::Ended)
                .count();
            assert_eq!(ended, 1, "{engine}");
            for a in rec.attempts.iter().filter(|a| a.outcome == Outcome::Killed) {
                assert!(
                    a.started.is_none(),
                    "{engine}: a killed attempt had started"
                );
            }
        }
    }
    assert!(live.metrics.contains("gridbed_jobs_killed_total"));
}

#[test]
fn a_site_held_by_background_load_has_its_jobs_killed_and_run_elsewhere() {
    let body = r#"
strategy = "round-robin"
origin = "submit-host"
[emulation]
time_scale = 200
byte_scale = 1000
[manager]
maxpre = 10
prescript_interval = 0.5
monit_interval = 2
max_idle = 20
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 4
background = { model = "markov", mean_busy = 1.0, period = 60 }
[[site]]
name = "grid3-02"
cpus = 4
[workflow]
generator = "pipeline"
levels = 2
width = 6
runtime = [30, 20]
file_size = "1 MB"
"#;
    let (_dir, s) = common::scenario(body);
    let live = run(&s);
    assert_each_job_ended_once(&s, &live);
    assert_rls_matches_disk(&s, &live);
    let sim = gridbed::sim::run(&s).unwrap();
    assert!(sim.succeeded);
    for (engine, records) in [("live", &live.records), ("sim", &sim.records)] {
        assert_eq!(
            records.sites[1].started, 0,
            "{engine}: a job ran on the busy site"
        );
        assert!(
            records.sites[1].killed > 0,
            "{engine}: nothing was killed there"
        );
        for rec in &records.jobs {
            let ran = rec.attempts.iter().filter(|a| a.started.is_some()).count();
            assert_eq!(ran, 1, "{engine}: a job ran twice or never");
        }
    }
}

/// How a live run of the race scenario resolved for `c`, after checking that
/// it resolved to exactly one outcome.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Race {
    /// `c` started before the tick: the manager knew, no kill was sent.
    StartedFirst,
    /// The kill found `c` started: void, `c` ran where it was.
    KillVoid,
    /// The kill found `c` queued: killed, re-planned, ran on grid3-02.
    KilledFirst,
}

fn race_live(a_runtime: f64) -> Race {
    let (_d, s) = common::race_scenario(8.5, a_runtime, 20.0);
    let r = run(&s);
    assert_each_job_ended_once(&s, &r);
    let c = &r.records.jobs[2].attempts;
    let ran = c.iter().filter(|a| a.started.is_some()).count();
    assert_eq!(ran, 1, "a = {a_runtime}: c ran {ran} times: {c:?}");
    let site = &r.records.sites[1];
    match c[0].outcome {
        Outcome::Killed => {
            assert!(
                c[0].started.is_none(),
                "a = {a_runtime}: a killed attempt ran"
            );
            assert_eq!((c.len(), c[1].site), (2, 2), "a = {a_runtime}");
            assert_eq!((site.killed, site.kills_void), (1, 0), "a = {a_runtime}");
            Race::KilledFirst
        }
        Outcome::Ended => {
            assert_eq!(
                (c.len(), c[0].site, site.killed),
                (1, 1, 0),
                "a = {a_runtime}"
            );
            match site.kills_void {
                0 => Race::StartedFirst,
                1 => Race::KillVoid,
                n => panic!("a = {a_runtime}: {n} void kills of one job"),
            }
        }
        ref o => panic!("a = {a_runtime}: c {o:?}"),
    }
}

#[test]
fn a_kill_racing_a_start_provoked_repeatedly_live_leaves_exactly_one_outcome() {
    // `a`'s end moves around the MonitQueue tick that kills `c` (t = 10):
    // 0.6 s before it `c` has long started, 0.6 s after it is still queued.
    // Bisection homes in on the instant where the kill meets the start on its
    // way (to 1/2^8 of the span, 0.2 ms of wall time at time_scale 20), then
    // eight more runs straddle it. Every run must resolve to one outcome.
    let (mut lo, mut hi) = (9.4, 10.6);
    let mut seen = vec![race_live(lo), race_live(hi)];
    for _ in 0..8 {
        let mid = (lo + hi) / 2.0;
        let r = race_live(mid);
        seen.push(r);
        if r == Race::KilledFirst {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    for k in 0..8 {
        seen.push(race_live(lo + (hi - lo) * k as f64 / 7.0));
    }
    let count = |r: Race| seen.iter().filter(|&&x| x == r).count();
    eprintln!(
        "race over {} runs: started first {}, kill void {}, killed first {}",
        seen.len(),
        count(Race::StartedFirst),
        count(Race::KillVoid),
        count(Race::KilledFirst)
    );
    assert!(
        count(Race::KilledFirst) > 0 && count(Race::StartedFirst) + count(Race::KillVoid) > 0,
        "the runs did not straddle the race: {seen:?}"
    );
}

#[test]
fn a_background_trace_holds_its_slots_in_both_engines() {
    let dir = tempfile::tempdir().unwrap();
    // All four slots taken by other users until t = 30, then one until 60.
    std::fs::write(dir.path().join("busy.csv"), "time,busy\n0,4\n30,1\n60,0\n").unwrap();
    // At 20 nominal seconds a real one, a slip of the live run's timers
    // on a loaded machine (40 ms seen with a CI run beside it) stays
    // within the 5% the makespans may differ by; at 100 it did not.
    let body = r#"
strategy = "round-robin"
origin = "submit-host"
[emulation]
time_scale = 20
byte_scale = 1000
[manager]
maxpre = 10
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 4
background = { model = "trace", file = "busy.csv" }
[[site]]
name = "grid3-02"
cpus = 4
[workflow]
generator = "pipeline"
levels = 1
width = 8
runtime = 20
file_size = "1 MB"
"#;
    let path = common::write_testbed(dir.path(), "t.toml", body);
    let s = common::load(&path);
    let live = run(&s);
    assert_each_job_ended_once(&s, &live);
    let sim = gridbed::sim::run(&s).unwrap();
    assert!(sim.succeeded);
    for (engine, records) in [("live", &live.records), ("sim", &sim.records)] {
        let mut starts: Vec<f64> = records
            .jobs
            .iter()
            .flat_map(|j| &j.attempts)
            .filter(|a| a.site == 1)
            .filter_map(|a| a.started)
            .collect();
        starts.sort_by(f64::total_cmp);
        assert_eq!(starts.len(), 4, "{engine}: {starts:?}");
        // Three slots free at 30; the fourth job waits for one of them (t = 50).
        assert!(
            starts[0] >= 29.9 && starts[2] < 40.0,
            "{engine}: {starts:?}"
        );
        assert!(
            starts[3] >= 49.9 && starts[3] < 59.0,
            "{engine}: {starts:?}"
        );
    }
    let (l, s) = (live.records.makespan(), sim.records.makespan());
    assert!((l - s).abs() / s < 0.05, "live {l} vs sim {s}");
}

/// Twenty jobs on one execute site, each reading its own input from the
/// origin, whose file server corrupts `FAULTS` of its responses.
fn faulty_origin(faults: &str) -> String {
    let mut body = String::from(
        r#"
strategy = "round-robin"
replica_policy = "delete"
origin = "submit-host"
seed = 11
[emulation]
time_scale = 1000
byte_scale = 1000
[[site]]
name = "submit-host"
FAULTS
[[site]]
name = "grid3-01"
cpus = 2
[workflow]
generator = "inline"
"#,
    )
    .replace("FAULTS", faults);
    for i in 0..20 {
        body.push_str(&format!(
            "[[workflow.file]]\nname = \"in-{i}\"\nsize = \"1 MB\"\n\
             [[workflow.job]]\nname = \"j{i}\"\nruntime = 10\ninputs = [\"in-{i}\"]\n"
        ));
    }
    body
}

fn corrupt_transfers(records: &gridbed::core::records::Records) -> usize {
    records
        .transfers
        .iter()
        .filter(|t| matches!(t.failure.as_deref(), Some(TransferFailure::Corrupt(_))))
        .count()
}

#[test]
fn a_fault_schedule_corrupts_the_same_responses_in_both_engines() {
    let (_dir, s) = common::scenario(&faulty_origin(
        "corrupt_responses = 2\ncorrupt_probability = 0.2",
    ));
    let sim = gridbed::sim::run(&s).unwrap();
    assert!(sim.succeeded, "{:?}", sim.counts);
    let corrupt = corrupt_transfers(&sim.records);
    // The two first responses, and some of the later ones at 20%.
    assert!(corrupt > 2, "{corrupt}");
    assert_eq!(sim.transfers, 20, "every input arrived intact once");
    // Live: the same seeded schedule stepped per served response; every
    // transfer comes from the origin, so the same responses fail.
    let live = run(&s);
    assert_each_job_ended_once(&s, &live);
    assert_eq!(corrupt_transfers(&live.records), corrupt);
    assert_rls_matches_disk(&s, &live);
    // Without faults, none.
    let (_dir, clean) = common::scenario(&faulty_origin(""));
    assert_eq!(
        corrupt_transfers(&gridbed::sim::run(&clean).unwrap().records),
        0
    );
}

#[test]
fn a_source_at_max_connections_refuses_and_every_job_still_ends_in_both_engines() {
    // Twenty prescripts start together and stage from an origin serving
    // one transfer at a time (1 MB at 100 kB/s: 10 s, 10 ms real, each).
    let (_dir, s) = common::scenario(&faulty_origin(
        "max_connections = 1\nstream_cap = \"100 kB/s\"\n\
         [manager]\nprescript_interval = 0\nmaxpre = 20",
    ));
    let busy = |records: &gridbed::core::records::Records| {
        records
            .transfers
            .iter()
            .filter(|t| t.failure.as_deref() == Some(&TransferFailure::Busy))
            .count()
    };
    let sim = gridbed::sim::run(&s).unwrap();
    assert!(sim.succeeded, "{:?}", sim.counts);
    assert!(busy(&sim.records) > 0, "the simulator refuses too");
    assert_eq!(sim.transfers, 20, "every input arrived once");
    let live = run(&s);
    assert_each_job_ended_once(&s, &live);
    assert!(busy(&live.records) > 0, "the endpoint answered 503");
    assert_eq!(live.transfers, 20);
    assert_rls_matches_disk(&s, &live);
}

#[test]
fn both_engines_write_the_same_trace_events_of_a_deterministic_run() {
    use gridbed::report::validate::Comparison;
    use gridbed::report::{Detail, RunRecord};
    // One execution site and one source: both engines take the same path,
    // corrupt responses and retries included.
    let (_dir, s) = common::scenario(&faulty_origin("corrupt_responses = 3"));
    let sim = gridbed::sim::run(&s).unwrap();
    let live = run(&s);
    let (st, lt) = (sim.records.trace(), live.records.trace());
    let cmp = Comparison::new(
        &RunRecord::from_run(&s, &sim, "t", Detail::Full),
        &RunRecord::from_run(&s, &live, "t", Detail::Full),
        0.5,
    )
    .with_traces(&st, &lt);
    let kinds: Vec<&str> = cmp.events.iter().map(|r| r.name.as_str()).collect();
    for kind in ["ready", "prescript", "started", "ended", "transfer_ended"] {
        assert!(
            kinds.contains(&format!("events: {kind}").as_str()),
            "{kinds:?}"
        );
    }
    for row in &cmp.events {
        assert_eq!(row.sim, row.live, "{}\n{}", row.name, cmp.table());
    }
    // 20 inputs arrive once each, after the 3 corrupted responses.
    let transfers = cmp
        .events
        .iter()
        .find(|r| r.name == "events: transfer_started");
    assert_eq!(transfers.map(|r| r.sim), Some(23.0));
    assert!(cmp.table().contains("events: transfer_ended"));
}
