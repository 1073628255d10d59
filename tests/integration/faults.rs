//! Faults on purpose (`[[fault]]`): a crash re-plans its site's jobs and a
//! lost pool's files are made again; transfer resets, stalls and corruption
//! are retried; every fault is in the record and the database; and the
//! chaos run (2,000 jobs, a crash and recovery, 5% resets, 1% corruption)
//! completes live with nothing lost, as in the simulator.

use gridbed::core::records::Outcome;
use gridbed::live::{self, LiveOptions};
use gridbed::report::{Detail, RunRecord};
use gridbed::sim;

use crate::common;

/// Three-level pipelines of 10 MB files on three sites; `faults` appended.
fn testbed(width: usize, time_scale: u32, extra: &str) -> String {
    format!(
        r#"
strategy = "data-present"
replica_policy = "caching"
origin = "submit-host"
seed = 7
[emulation]
time_scale = {time_scale}
byte_scale = 1000
[manager]
prescript_interval = 0.2
max_retries = 5
maxpre = 40
[workflow]
generator = "pipeline"
levels = 3
width = {width}
runtime = [60, 30, 20]
file_size = "10 MB"
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 6
[[site]]
name = "grid3-02"
cpus = 6
[[site]]
name = "grid3-03"
cpus = 4
{extra}
"#
    )
}

const CRASH_LOST: &str = r#"
[[fault]]
kind = "crash"
site = "grid3-02"
at = 120
recover = 400
pool = "lost"
"#;

fn record(body: &str) -> RunRecord {
    let (_d, s) = common::scenario(body);
    let run = sim::run(&s).unwrap();
    RunRecord::from_run(&s, &run, "t", Detail::Full)
}

#[test]
fn a_crash_re_plans_its_jobs_and_the_files_its_pool_lost_are_made_again() {
    let rec = record(&testbed(40, 200, CRASH_LOST));
    assert!(rec.summary.succeeded, "{:?}", rec.summary);
    let kinds: Vec<(f64, &str, &str)> = rec
        .faults
        .iter()
        .map(|f| (f.t, f.site.as_str(), f.fault.kind()))
        .collect();
    assert_eq!(
        kinds,
        [(120.0, "grid3-02", "crash"), (400.0, "grid3-02", "recover")]
    );
    let attempts = || rec.jobs.iter().flat_map(|j| &j.attempts);
    // Queued and running jobs there failed with the crash, and nothing
    // was placed there while it was down.
    let crashed = attempts()
        .filter(|a| matches!(&a.outcome, Outcome::Failed(f) if format!("{f:?}").contains("site crashed")))
        .count();
    assert!(crashed > 0);
    for a in attempts().filter(|a| a.site == "grid3-02") {
        assert!(!(a.prescript > 120.0 && a.prescript < 400.0), "{a:?}");
    }
    // First-level outputs that only grid3-02 held were made again: their
    // producers ended twice, and their readers waited for them.
    let twice: Vec<&str> = rec
        .jobs
        .iter()
        .filter(|j| {
            j.attempts
                .iter()
                .filter(|a| a.outcome == Outcome::Ended)
                .count()
                == 2
        })
        .map(|j| j.name.as_str())
        .collect();
    assert!(
        !twice.is_empty() && twice.iter().all(|n| n.starts_with("P1")),
        "{twice:?}"
    );
    // Each reader found the loss once and planned again only when the
    // file was back (issue 39: not a try every back-off while it is made).
    let mut readers = 0;
    for j in &rec.jobs {
        let lost = j.attempts.iter().filter(|a| {
            matches!(&a.outcome, Outcome::StagingFailed(r) if r.contains("was lost; it is made again"))
        });
        match lost.count() {
            0 => {}
            1 => readers += 1,
            n => panic!(
                "{} found its input lost {n} times: {:?}",
                j.name, j.attempts
            ),
        }
    }
    assert!(readers > 0);
    // A job's children were released once: each ended exactly once.
    for j in rec.jobs.iter().filter(|j| !j.name.starts_with("P1")) {
        let ended = j
            .attempts
            .iter()
            .filter(|a| a.outcome == Outcome::Ended)
            .count();
        assert_eq!(ended, 1, "{}", j.name);
    }
}

#[test]
fn without_reproduction_the_readers_of_a_lost_file_fail_and_say_why() {
    let body = testbed(40, 200, CRASH_LOST)
        .replace("max_retries = 5", "max_retries = 5\nreproduce_lost = false");
    let rec = record(&body);
    assert!(!rec.summary.succeeded);
    assert!(rec.summary.jobs_failed > 0);
    for f in &rec.summary.failures {
        assert!(f.reason.contains("every replica of `P1/"), "{}", f.reason);
        assert!(f.reason.contains("was lost"), "{}", f.reason);
    }
}

#[test]
fn when_every_site_that_can_run_a_job_is_down_it_waits_for_a_recovery() {
    let crash_all = |recover: bool| {
        let mut extra = String::new();
        for s in ["grid3-01", "grid3-02", "grid3-03"] {
            extra += &format!("[[fault]]\nkind = \"crash\"\nsite = \"{s}\"\nat = 10\n");
            if recover {
                extra += "recover = 2000\n";
            }
        }
        record(&testbed(4, 200, &extra))
    };
    let rec = crash_all(true);
    assert!(rec.summary.succeeded, "{:?}", rec.summary);
    assert!(rec.summary.makespan_s > 2000.0);
    // Never back: the jobs fail for good, with why, and the run ends.
    let rec = crash_all(false);
    assert!(!rec.summary.succeeded);
    assert!(!rec.summary.failures.is_empty());
    for f in &rec.summary.failures {
        assert!(
            f.reason.contains("every site that can run it was down"),
            "{}",
            f.reason
        );
    }
}

const CHAOS: &str = r#"
[[fault]]
kind = "crash"
site = "grid3-02"
at = 300
recover = 900
[[fault]]
kind = "reset"
probability = 0.05
[[fault]]
kind = "corrupt"
probability = 0.01
"#;

/// Whether two attempts of one job ever ran at once.
fn overlapping(rec: &RunRecord) -> Vec<String> {
    let mut bad = Vec::new();
    for j in &rec.jobs {
        let runs: Vec<(f64, f64)> = j
            .attempts
            .iter()
            .filter_map(|a| Some((a.started?, a.ended?)))
            .collect();
        for (i, a) in runs.iter().enumerate() {
            for b in &runs[i + 1..] {
                if a.0 < b.1 && b.0 < a.1 {
                    bad.push(j.name.clone());
                }
            }
        }
    }
    bad
}

/// A live run of `s` that writes its control database (with the seed the
/// audit regenerates the files' bytes from) and keeps its pools: the run,
/// the database, and the folders that hold both.
fn live_keeping_pools(
    s: &gridbed::config::Scenario,
) -> (live::LiveRun, std::path::PathBuf, [tempfile::TempDir; 2]) {
    let db_dir = tempfile::tempdir().unwrap();
    let db_path = db_dir.path().join("run.db");
    let seed = [("seed", s.seed.to_string())];
    let db = gridbed::db::ControlDb::create(&db_path, false, &seed, &s.site_infos(), &s.workflow)
        .unwrap();
    let pools = tempfile::tempdir().unwrap();
    let run = live::run(
        s,
        LiveOptions {
            db: Some(db),
            pool_root: Some(pools.path().to_path_buf()),
            keep_pools: true,
            ..Default::default()
        },
    )
    .unwrap();
    (run, db_path, [db_dir, pools])
}

#[test]
fn the_chaos_run_completes_live_with_nothing_lost_and_as_in_the_simulator() {
    // 667 pipelines × 3 levels: 2,001 jobs.
    let body = testbed(667, 500, CHAOS);
    let (_d, s) = common::scenario(&body);
    let sim_run = sim::run(&s).unwrap();
    let sim_rec = RunRecord::from_run(&s, &sim_run, "t", Detail::Full);
    let (live_run, db_path, _kept) = live_keeping_pools(&s);
    let live_rec = RunRecord::from_run(&s, &live_run, "t", Detail::Full);
    for (engine, rec) in [("sim", &sim_rec), ("live", &live_rec)] {
        assert_eq!(rec.summary.jobs, 2001);
        assert!(rec.summary.succeeded, "{engine}: {:?}", rec.summary);
        assert_eq!(rec.summary.jobs_done, 2001, "{engine}: no job lost");
        assert!(
            overlapping(rec).is_empty(),
            "{engine}: ran twice at once: {:?}",
            overlapping(rec)
        );
        let kinds = |k: &str| rec.faults.iter().filter(|f| f.fault.kind() == k).count();
        assert_eq!((kinds("crash"), kinds("recover")), (1, 1), "{engine}");
        assert!(kinds("reset") > 0 && kinds("corrupt") > 0, "{engine}");
        assert!(rec.summary.transfer_failures > 0, "{engine}");
    }
    // The same job outcomes: every job ended, in both.
    let outcomes = |r: &RunRecord| -> Vec<(String, bool)> {
        r.jobs
            .iter()
            .map(|j| {
                (
                    j.name.clone(),
                    j.attempts
                        .last()
                        .is_some_and(|a| a.outcome == Outcome::Ended),
                )
            })
            .collect()
    };
    assert_eq!(outcomes(&sim_rec), outcomes(&live_rec));
    // No corrupt copy was ever registered: every file on disk verifies.
    assert_eq!(live_rec.summary.corrupt_at_end, 0);
    // The faults are in the control database and the metrics.
    let conn = rusqlite::Connection::open(&db_path).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM faults", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n as usize, live_rec.faults.len());
    assert!(
        live_run.metrics.contains("gridbed_faults_total{"),
        "faults metric"
    );
    // The catalogue the database ends with is what the kept pools hold.
    let differences = gridbed::live::audit::audit(&db_path).unwrap();
    assert!(differences.is_empty(), "audit: {differences:?}");
}

/// Issue 39: a live in-process site crash that loses its pool, its files
/// made again as in the simulator, and the audit of what the pools kept.
#[test]
fn a_live_crash_that_loses_its_pool_makes_its_files_again_and_audits_clean() {
    let (_d, s) = common::scenario(&testbed(40, 200, CRASH_LOST));
    let (run, db_path, _kept) = live_keeping_pools(&s);
    let rec = RunRecord::from_run(&s, &run, "t", Detail::Full);
    assert!(rec.summary.succeeded, "{:?}", rec.summary);
    assert_eq!(rec.summary.jobs_done, 120);
    let made_again = rec.jobs.iter().any(|j| {
        j.attempts
            .iter()
            .filter(|a| a.outcome == Outcome::Ended)
            .count()
            == 2
    });
    let lost = rec.jobs.iter().flat_map(|j| &j.attempts).any(|a| {
        matches!(&a.outcome, Outcome::StagingFailed(r) if r.contains("was lost; it is made again"))
    });
    assert!(
        made_again && lost,
        "no file of the lost pool was made again"
    );
    let differences = gridbed::live::audit::audit(&db_path).unwrap();
    assert!(differences.is_empty(), "audit: {differences:?}");
}
