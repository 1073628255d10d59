//! Seed 003's three systems: ORIG and Job-C hold ready jobs until a machine
//! is free, ORIG sends every output back to the submit machine, DAG-C runs
//! every job where its plan put it, and with a scheduling horizon a lost
//! machine's DAGs are planned again. In the simulator, and scaled live.

use gridbed::core::records::Outcome;
use gridbed::report::{Detail, RunRecord};
use gridbed::sim;

use crate::common;

/// 30 three-job chains on three one-CPU machines; `extra` appended.
fn testbed(strategy: &str, extra: &str) -> String {
    sized_testbed(strategy, 30, extra)
}

/// `width` three-job chains on three one-CPU machines.
fn sized_testbed(strategy: &str, width: usize, extra: &str) -> String {
    format!(
        r#"
strategy = "{strategy}"
origin = "submit-host"
seed = 3
[emulation]
time_scale = 100
byte_scale = 1000
[manager]
prescript_interval = 0
maxpre = 40
max_retries = 5
[workflow]
generator = "pipeline"
levels = 3
width = {width}
runtime = [600, 600, 600]
file_size = "100 MB"
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 1
[[site]]
name = "grid3-02"
cpus = 1
[[site]]
name = "grid3-03"
cpus = 1
{extra}
"#
    )
}

fn record(body: &str) -> RunRecord {
    let (_d, s) = common::scenario(body);
    let run = sim::run(&s).unwrap();
    RunRecord::from_run(&s, &run, "t", Detail::Full)
}

fn ended_once(rec: &RunRecord) {
    assert!(rec.summary.succeeded, "{:?}", rec.summary);
    for j in &rec.jobs {
        let ended = j
            .attempts
            .iter()
            .filter(|a| a.outcome == Outcome::Ended)
            .count();
        assert_eq!(ended, 1, "{}", j.name);
    }
}

#[test]
fn each_system_runs_every_job_once_and_dag_c_keeps_a_chain_on_one_machine() {
    for strategy in ["orig", "job-c", "dag-c", "dag-c[horizon=3600]"] {
        let rec = record(&testbed(strategy, ""));
        ended_once(&rec);
        if strategy.starts_with("dag-c") {
            // A chain is one DAG of single-parent jobs: planned whole on one
            // machine, so its pipeline files never cross the network.
            for chain in 0..30 {
                let sites: std::collections::BTreeSet<&str> = rec
                    .jobs
                    .iter()
                    .filter(|j| j.name.ends_with(&format!("-{chain:04}")))
                    .map(|j| j.attempts[0].site.as_str())
                    .collect();
                assert_eq!(sites.len(), 1, "{strategy}: chain {chain} on {sites:?}");
            }
        }
    }
}

#[test]
fn a_lost_machines_dags_are_planned_again_and_every_job_ends_once() {
    // Down from 1,000 s to 9,000 s, its pool kept: the outputs only it
    // holds wait for it, everything else is planned again elsewhere.
    let crash = "[[fault]]\nkind = \"crash\"\nsite = \"grid3-02\"\nat = 1000\nrecover = 9000\n";
    for strategy in ["dag-c", "dag-c[horizon=3600]"] {
        let rec = record(&testbed(strategy, crash));
        ended_once(&rec);
        let attempts = || rec.jobs.iter().flat_map(|j| &j.attempts);
        let down = |a: &&gridbed::report::record::AttemptEntry| {
            a.prescript > 1000.0 && a.prescript < 9000.0
        };
        assert!(attempts().all(|a| a.site != "grid3-02" || !down(&a)));
        // Its planned DAGs ran on the other two while it was down.
        assert!(attempts().filter(down).count() > 10, "{strategy}");
        assert!(
            attempts().filter(|a| a.site == "grid3-02").count() > 0,
            "grid3-02 ran jobs before"
        );
    }
}

#[test]
fn on_the_table_3_testbed_dag_c_is_fastest_then_job_c_then_orig_at_every_file_size() {
    // The testbed beside its own catalogue, as make.sh runs it.
    let testbeds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds");
    let body = std::fs::read_to_string(testbeds.join("dag-condor-table3.toml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let catalogue = "dag-condor-sites.toml";
    std::fs::copy(testbeds.join(catalogue), dir.path().join(catalogue)).unwrap();
    for size in ["100 MB", "1 GB", "1.5 GB", "2 GB"] {
        let body = body.replace("pipeline = \"1 GB\"", &format!("pipeline = \"{size}\""));
        let makespan = |strategy: &str| {
            let path = common::write_testbed(dir.path(), "t.toml", &body);
            let overrides = gridbed::config::Overrides {
                strategy: Some(strategy.into()),
                ..Default::default()
            };
            let s = gridbed::config::load(&path, &overrides).unwrap();
            sim::run(&s).unwrap().makespan
        };
        let (orig, job_c, dag_c) = (makespan("orig"), makespan("job-c"), makespan("dag-c"));
        assert!(
            dag_c <= job_c && job_c <= orig,
            "{size}: DAG-C {dag_c}, Job-C {job_c}, ORIG {orig}"
        );
        // DAG-C moves no pipeline file: its makespan does not grow with them.
        assert!(dag_c < 5100.0, "{size}: {dag_c}");
    }
}

#[test]
fn orig_reads_every_input_from_the_submit_machine_and_dag_c_moves_no_pipeline_file() {
    let (_d, s) = common::scenario(&testbed("orig", ""));
    let wf = &s.workflow;
    let inputs: usize = wf.jobs.iter().map(|j| j.inputs.len()).sum();
    let outputs: usize = wf.jobs.iter().map(|j| j.outputs.len()).sum();
    let run = sim::run(&s).unwrap().result;
    let t = &run.records.transfers;
    // Every input of every job came from the submit machine (site 0), and
    // every output went back there.
    assert_eq!(t.iter().filter(|t| t.from == 0).count(), inputs);
    assert_eq!(t.iter().filter(|t| t.to == 0).count(), outputs);
    assert_eq!(t.len(), inputs + outputs);
    // DAG-C keeps each chain on one machine: no job's output moves.
    let (_d, s) = common::scenario(&testbed("dag-c", ""));
    let run = sim::run(&s).unwrap().result;
    let derived: std::collections::HashSet<usize> = wf
        .jobs
        .iter()
        .flat_map(|j| j.outputs.iter().copied())
        .collect();
    let t = &run.records.transfers;
    assert!(!t.is_empty() && t.iter().all(|t| !derived.contains(&t.file)));
}

#[test]
fn a_scaled_live_run_of_each_system_agrees_with_the_simulator() {
    // The three live runs at once: each waits out its emulated time on a
    // clock of its own (about 20 s of wall time), using little CPU.
    std::thread::scope(|scope| {
        for strategy in ["orig", "job-c", "dag-c"] {
            scope.spawn(move || {
                // 6 chains of three 600-s jobs on 3 machines, 200× faster
                // than nominal.
                let body =
                    sized_testbed(strategy, 6, "").replace("time_scale = 100", "time_scale = 200");
                let (_d, s) = common::scenario(&body);
                let sim = sim::run(&s).unwrap().result;
                live_agrees(strategy, &s, &sim);
            });
        }
    });
}

/// A live run of `s` succeeds with the simulator's transfer count and a
/// makespan within 10% of `sim`'s (a second run only if the first was off:
/// this machine is shared).
fn live_agrees(
    strategy: &str,
    s: &gridbed::config::Scenario,
    sim: &gridbed::core::result::RunResult,
) {
    use gridbed::report::validate;
    let mut tries = Vec::new();
    loop {
        let live = gridbed::live::run(s, Default::default()).unwrap().result;
        assert!(live.succeeded, "{strategy}");
        assert_eq!(
            live.records.transfers.len(),
            sim.records.transfers.len(),
            "{strategy}: the same transfers"
        );
        let dev = validate::deviation(sim.makespan, live.makespan).unwrap();
        tries.push(format!(
            "{strategy}: live {:.0} s vs sim {:.0} s ({:+.1}%)",
            live.makespan,
            sim.makespan,
            100.0 * dev
        ));
        if dev.abs() <= 0.10 {
            return;
        }
        assert!(tries.len() < 2, "{}", tries.join("\n"));
    }
}

/// Two users: `u1`'s 3 chains from `submit-host` at 0, `u2`'s 3 from a
/// second submit machine at 900 s.
fn two_users(strategy: &str) -> String {
    sized_testbed(
        strategy,
        6,
        r#"
[[site]]
name = "submit-2"
new = true
storage = true
cpus = 0
disk = "1 TB"
bandwidth = "12.5 MB/s"

[[submission]]
name = "u1"
dags = 3

[[submission]]
name = "u2"
origin = "submit-2"
arrival = 900
"#,
    )
    .replace("time_scale = 100", "time_scale = 200")
}

#[test]
fn two_users_on_two_submit_machines_each_get_their_response_time_in_both_engines() {
    // The strategies at once, as in the test above.
    std::thread::scope(|scope| {
        for strategy in ["orig", "job-c", "dag-c"] {
            scope.spawn(move || two_users_in_both_engines(strategy));
        }
    });
}

fn two_users_in_both_engines(strategy: &str) {
    let body = two_users(strategy);
    let (_d, s) = common::scenario(&body);
    let sim = sim::run(&s).unwrap();
    let rec = RunRecord::from_run(&s, &sim, "t", Detail::Full);
    ended_once(&rec);
    let [u1, u2] = &rec.workflows[..] else {
        panic!("{:?}", rec.workflows)
    };
    assert_eq!(
        (u1.name.as_str(), u1.origin.as_str()),
        ("u1", "submit-host")
    );
    assert_eq!((u2.name.as_str(), u2.origin.as_str()), ("u2", "submit-2"));
    assert_eq!((u1.jobs, u2.jobs, u2.arrival_s), (9, 9, 900.0));
    // Nothing of u2 was ready before it arrived.
    let of_u2 = |name: &str| {
        ["-0003", "-0004", "-0005"]
            .iter()
            .any(|w| name.ends_with(w))
    };
    for j in rec.jobs.iter().filter(|j| of_u2(&j.name)) {
        assert!(
            j.ready.unwrap() >= 900.0,
            "{strategy}: {} ready at {:?}",
            j.name,
            j.ready
        );
    }
    assert!(u2.end_s > 900.0 && u2.response_s == u2.end_s - 900.0);
    // Each user's batch inputs come from its own submit machine.
    let from_second = rec
        .transfers
        .iter()
        .filter(|t| t.from == "submit-2")
        .count();
    assert!(
        from_second > 0,
        "{strategy}: u2 read from its submit machine"
    );
    // The live run, 200× faster, agrees with the simulator.
    live_agrees(strategy, &s, &sim.result);
}

/// x reads `a` and writes m, y reads m; z reads `c`. `a_size` is a's size.
fn memo_testbed(a_size: &str, extra: &str) -> String {
    format!(
        r#"
name = "memo"
strategy = "job-c"
origin = "submit-host"
{extra}
[emulation]
time_scale = 100
byte_scale = 1000
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 1
[[site]]
name = "grid3-02"
cpus = 1
[workflow]
generator = "inline"
[[workflow.file]]
name = "a"
size = "{a_size}"
[[workflow.file]]
name = "c"
size = "1 MB"
[[workflow.file]]
name = "m"
size = "1 MB"
[[workflow.file]]
name = "out-y"
size = "1 MB"
[[workflow.file]]
name = "out-z"
size = "1 MB"
[[workflow.job]]
name = "x"
runtime = 60
inputs = ["a"]
outputs = ["m"]
[[workflow.job]]
name = "y"
runtime = 60
inputs = ["m"]
outputs = ["out-y"]
parents = ["x"]
[[workflow.job]]
name = "z"
runtime = 60
inputs = ["c"]
outputs = ["out-z"]
"#
    )
}

/// Runs the testbed in the simulator with `--memo`; the names of the jobs
/// that ran (had an attempt), sorted.
fn run_memo(dir: &std::path::Path, body: &str, memo: &std::path::Path) -> Vec<String> {
    let path = common::write_testbed(dir, "memo.toml", body);
    let json = dir.join("run.json");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .args(["run", "--engine", "sim", "-q", "--sites"])
        .arg(common::catalog())
        .arg(&path)
        .arg("--memo")
        .arg(memo)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let rec = gridbed::report::run_report::read_run(&json, None).unwrap();
    assert!(rec.summary.succeeded, "every job ended, run or memoized");
    let mut ran: Vec<String> = rec
        .jobs
        .iter()
        .filter(|j| !j.attempts.is_empty())
        .map(|j| j.name.clone())
        .collect();
    ran.sort();
    ran
}

#[test]
fn memoization_reruns_exactly_the_jobs_downstream_of_a_changed_input() {
    let dir = tempfile::tempdir().unwrap();
    let memo = dir.path().join("dag-condor.db");
    let all = ["x", "y", "z"];
    assert_eq!(run_memo(dir.path(), &memo_testbed("10 MB", ""), &memo), all);
    // The same submission again: nothing runs; the outputs are where the
    // first run cached them.
    assert!(run_memo(dir.path(), &memo_testbed("10 MB", ""), &memo).is_empty());
    // `a` changed: x reads it and y reads what x writes.
    assert_eq!(
        run_memo(dir.path(), &memo_testbed("11 MB", ""), &memo),
        ["x", "y"]
    );
    // Both versions of `a` ran now: either is memoized.
    assert!(run_memo(dir.path(), &memo_testbed("10 MB", ""), &memo).is_empty());
    // A job opted out always runs, and only it.
    let opt_out = memo_testbed("10 MB", "no_memoize = [\"z\"]");
    assert_eq!(run_memo(dir.path(), &opt_out, &memo), ["z"]);
    // Table 1's history holds the five submissions.
    let conn = rusqlite::Connection::open(&memo).unwrap();
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(
        count("SELECT COUNT(*) FROM workflow_status WHERE workflowname = 'memo'"),
        5
    );
    assert_eq!(count("SELECT COUNT(*) FROM job_list"), 15);
    assert_eq!(
        count("SELECT COUNT(DISTINCT version) FROM program_version WHERE executablename = 'x'"),
        2
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM file_version WHERE filename = 'a'"),
        2
    );
}

/// Two users of the fan DAGs: `u1` submits DAGs 0 and 1 at 0, `u2` from
/// `submit-2` at `arrival` DAGs 2 and 3, which repeat them (`distinct = 2`).
fn repeated(strategy: &str, arrival: u32, extra: &str) -> String {
    format!(
        r#"
strategy = "{strategy}"
origin = "submit-host"
seed = 5
{extra}
[emulation]
time_scale = 400
byte_scale = 1000
[manager]
prescript_interval = 0
[workflow]
generator = "dags"
shape = "fan"
dags = 4
distinct = 2
branching = 2
runtime = 600
pipeline = "100 MB"
batch = "100 MB"
[[site]]
name = "submit-host"
[[site]]
name = "submit-2"
new = true
storage = true
cpus = 0
disk = "1 TB"
bandwidth = "12.5 MB/s"
[[site]]
name = "grid3-01"
cpus = 1
[[site]]
name = "grid3-02"
cpus = 1
[[site]]
name = "grid3-03"
cpus = 1
[[submission]]
name = "u1"
dags = 2
[[submission]]
name = "u2"
origin = "submit-2"
arrival = {arrival}
"#
    )
}

/// The names of the jobs of `rec` that ran (had an attempt), sorted.
fn ran(rec: &RunRecord) -> Vec<&str> {
    let mut ran: Vec<&str> = rec
        .jobs
        .iter()
        .filter(|j| !j.attempts.is_empty())
        .map(|j| j.name.as_str())
        .collect();
    ran.sort();
    ran
}

const U1: [&str; 8] = [
    "A-0000", "A-0001", "B1-0000", "B1-0001", "B2-0000", "B2-0001", "C-0000", "C-0001",
];

#[test]
fn a_workflow_repeating_one_that_ended_in_the_run_is_memoized_and_its_outputs_go_to_its_user() {
    for strategy in ["orig", "job-c", "dag-c"] {
        let body = repeated(strategy, 8000, "memoize = true");
        let (_d, s) = common::scenario(&body);
        let run = sim::run(&s).unwrap();
        let rec = RunRecord::from_run(&s, &run, "t", Detail::Full);
        assert!(rec.summary.succeeded, "{strategy}");
        // u1 ran everything once; u2 ran nothing.
        assert_eq!(ran(&rec), U1, "{strategy}");
        ended_once(&RunRecord {
            jobs: rec
                .jobs
                .iter()
                .filter(|j| U1.contains(&j.name.as_str()))
                .cloned()
                .collect(),
            ..rec.clone()
        });
        // u2's products were copied to its submit machine, and only they:
        // its pipeline files only its own memoized jobs read.
        let wf = &s.workflow;
        let to_u2: Vec<&str> = rec
            .transfers
            .iter()
            .filter(|t| t.to == "submit-2")
            .map(|t| t.file.as_str())
            .collect();
        assert_eq!(to_u2.len(), 2, "{strategy}: {to_u2:?}");
        let submit2 = s
            .sites
            .iter()
            .position(|x| x.info.name == "submit-2")
            .unwrap();
        for name in ["out/0002", "out/0003"] {
            assert!(to_u2.contains(&name), "{strategy}: {to_u2:?}");
            let f = wf.files.iter().position(|f| f.name == name).unwrap();
            assert!(run.result.rls.has(f, submit2), "{strategy}: {name}");
        }
        // The response is the copies' time, after u2's arrival.
        let u2 = &rec.workflows[1];
        assert!(
            u2.end_s > 8000.0 && u2.response_s < 600.0,
            "{strategy}: {u2:?}"
        );
        assert_eq!(rec.summary.makespan_s, u2.end_s, "{strategy}");
    }
}

#[test]
fn memoization_within_a_run_needs_the_twin_ended_and_spares_opted_out_jobs() {
    let sim_ran = |body: &str| {
        let rec = record(body);
        assert!(rec.summary.succeeded);
        ran(&rec).iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    // Off unless asked for.
    assert_eq!(sim_ran(&repeated("job-c", 8000, "")).len(), 16);
    // u2 submitted with u1: no twin has ended, every job runs.
    assert_eq!(sim_ran(&repeated("job-c", 0, "memoize = true")).len(), 16);
    // C opted out: u2's C jobs run, reading B's outputs, which are copied
    // to u2's submit machine for them.
    let body = repeated("dag-c", 8000, "memoize = true\nno_memoize = [\"C\"]");
    let rec = record(&body);
    assert!(rec.summary.succeeded);
    let mut want: Vec<&str> = U1.to_vec();
    want.extend(["C-0002", "C-0003"]);
    want.sort();
    assert_eq!(ran(&rec), want);
    let copied: Vec<&str> = rec
        .transfers
        .iter()
        .filter(|t| t.to == "submit-2")
        .map(|t| t.file.as_str())
        .collect();
    for g in ["G1/0002", "G2/0002", "G1/0003", "G2/0003"] {
        assert!(copied.contains(&g), "{copied:?}");
    }
}

#[test]
fn a_live_run_memoizes_like_the_simulator_and_its_copies_pass_the_audit() {
    let dir = tempfile::tempdir().unwrap();
    let body = repeated("dag-c", 8000, "memoize = true");
    let path = common::write_testbed(dir.path(), "memo.toml", &body);
    let (db, pools, json) = (
        dir.path().join("run.db"),
        dir.path().join("pools"),
        dir.path().join("run.json"),
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .args(["run", "--engine", "live", "-q", "--sites"])
        .arg(common::catalog())
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .arg("--keep-pools")
        .arg(&pools)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec = gridbed::report::run_report::read_run(&json, None).unwrap();
    assert_eq!(ran(&rec), U1);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .arg("audit")
        .arg(&db)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("0 differences"), "{stdout}");
}
