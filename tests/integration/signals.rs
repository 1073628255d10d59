//! SIGINT and SIGTERM sent to a real `gridbed` process (issue 61): the run
//! stops, its scripts end, its temporary pools go, its record and database
//! are written, and it exits 128 + the signal; a second SIGINT ends it at
//! once. `audit` finds the pools a killed run kept.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{catalog, executable, gridbed};
use crate::dagman::dag_testbed_on;

/// Four nodes whose PRE scripts note their node under `pids/<pid>` and
/// sleep a minute, and, with `fin`, a FINAL node whose PRE script does too.
fn sleeping_dag(dir: &Path, fin: bool) -> PathBuf {
    let mut dag = String::new();
    for i in 1..5 {
        dag.push_str(&format!("JOB p{i} n.sub\nSCRIPT PRE p{i} pre.sh $JOB\n"));
    }
    if fin {
        dag.push_str("FINAL fin n.sub\nSCRIPT PRE fin pre.sh $JOB\n");
    }
    let tb = dag_testbed_on(dir, &dag, "", "scripts = \"run\"", 4);
    std::fs::write(dir.join("w.toml"), "").unwrap();
    let pids = dir.join("pids");
    std::fs::create_dir_all(&pids).unwrap();
    let pre = format!(
        "#!/bin/sh\necho $1 > '{}'/$$\nexec sleep 60\n",
        pids.display()
    );
    executable(&dir.join("pre.sh"), &pre);
    tb
}

fn start(dir: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Starts `gridbed run` of [`sleeping_dag`] (with `fin`) in `dir`, with
/// `extra` options, and waits until its four PRE scripts run.
fn run_until_scripts(dir: &Path, fin: bool, extra: &[&str]) -> Child {
    let tb = sleeping_dag(dir, fin);
    let sites = catalog();
    let mut args = vec![
        "run",
        tb.to_str().unwrap(),
        "--sites",
        sites.to_str().unwrap(),
    ];
    args.extend(extra);
    let child = start(dir, &args);
    wait_for("four PRE scripts", || script_pids(dir).len() == 4);
    child
}

/// Waits (at most a minute) until `ready` holds.
fn wait_for(what: &str, ready: impl Fn() -> bool) {
    let t = Instant::now();
    while !ready() {
        assert!(t.elapsed() < Duration::from_secs(60), "never {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `child` to exit (killing it after a minute: a stop that never
/// came), and returns its status and stderr.
fn exit_of(mut child: Child) -> (Option<i32>, String) {
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("still running a minute after the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: a signal to the child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// The PRE scripts that started: node, pid.
fn script_pids(dir: &Path) -> Vec<(String, i32)> {
    let mut pids: Vec<(String, i32)> = std::fs::read_dir(dir.join("pids"))
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let pid = e.file_name().to_string_lossy().parse().ok()?;
            let node = std::fs::read_to_string(e.path()).ok()?.trim().to_string();
            Some((node, pid))
        })
        .collect();
    pids.sort();
    pids
}

/// Whether process `pid` is gone (or a zombie no one has reaped yet).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Every `run` value of `db` whose key starts with `prefix` (none while
/// the database's writer has not made its tables yet).
fn run_values(db: &Path, prefix: &str) -> Vec<String> {
    let values = || -> rusqlite::Result<Vec<String>> {
        let conn = rusqlite::Connection::open(db)?;
        let mut st = conn.prepare("SELECT value FROM run WHERE key LIKE ?1 || '%'")?;
        st.query_map([prefix], |r| r.get(0))?.collect()
    };
    values().unwrap_or_default()
}

/// The temporary pools the run writing `db` noted, once it has.
fn noted_pools(db: &Path) -> Vec<String> {
    wait_for("the pools noted", || {
        !run_values(db, "pool_dir.").is_empty()
    });
    run_values(db, "pool_dir.")
}

/// SIGTERM while four PRE scripts run: each script ends, the run's record
/// and database are written with what ran, its temporary pools are gone,
/// and it exits 143 (128 + SIGTERM).
#[test]
fn sigterm_ends_a_live_runs_scripts_writes_its_record_and_removes_its_pools() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let child = run_until_scripts(d, false, &["--json", "r.json", "--db", "r.db"]);
    let pools = noted_pools(&d.join("r.db"));
    assert!(!pools.is_empty() && pools.iter().all(|p| Path::new(p).is_dir()));
    signal(&child, libc::SIGTERM);
    let (code, err) = exit_of(child);
    assert_eq!(code, Some(143), "{err}");
    assert!(
        err.contains("SIGTERM: stopping") && err.contains("stopped by SIGTERM"),
        "{err}"
    );
    for (node, pid) in script_pids(d) {
        wait_for(&format!("{node}'s script ({pid}) ended"), || gone(pid));
    }
    for p in &pools {
        assert!(!Path::new(p).exists(), "{p} is left");
    }
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("r.json")).unwrap()).unwrap();
    assert_eq!(record["summary"]["jobs"], 4, "{record}");
    assert_eq!(record["summary"]["jobs_done"], 0, "{record}");
    let conn = rusqlite::Connection::open(d.join("r.db")).unwrap();
    let jobs: i64 = conn
        .query_row("SELECT count(*) FROM jobs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(jobs, 4);
}

/// The first SIGINT removes the DAG and starts its FINAL node, whose PRE
/// script sleeps; a second SIGINT ends the process at once (130), killing
/// that script and removing the temporary pools.
#[test]
fn a_second_sigint_ends_the_process_at_once_with_its_children_and_pools() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let child = run_until_scripts(d, true, &["--db", "r.db"]);
    let pools = noted_pools(&d.join("r.db"));
    signal(&child, libc::SIGINT);
    wait_for("FINAL's PRE script", || {
        script_pids(d).iter().any(|(n, _)| n == "fin")
    });
    signal(&child, libc::SIGINT);
    let (code, err) = exit_of(child);
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("SIGINT: stopped at once"), "{err}");
    for (node, pid) in script_pids(d) {
        wait_for(&format!("{node}'s script ({pid}) ended"), || gone(pid));
    }
    for p in &pools {
        assert!(!Path::new(p).exists(), "{p} is left");
    }
}

/// SIGTERM of a simulated run busy with retries of a failing PRE script:
/// the DAG is removed, the record written, exit 143.
#[test]
fn sigterm_stops_a_simulated_run_and_writes_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dag = "JOB a n.sub\nSCRIPT PRE a fail.sh\nRETRY a 100000\n";
    let tb = dag_testbed_on(d, dag, "", "scripts = \"run\"", 1);
    std::fs::write(d.join("w.toml"), "").unwrap();
    executable(&d.join("fail.sh"), "#!/bin/sh\nexit 1\n");
    let tb = tb.to_str().unwrap().to_string();
    let sites = catalog();
    let args = [
        "run",
        &tb,
        "--sites",
        sites.to_str().unwrap(),
        "--engine",
        "sim",
        "--json",
        "r.json",
        "--db",
        "r.db",
    ];
    let child = start(d, &args);
    let db = d.join("r.db");
    wait_for("a thousand retries", || {
        rusqlite::Connection::open(&db)
            .and_then(|c| c.query_row("SELECT count(*) FROM attempts", [], |r| r.get(0)))
            .is_ok_and(|n: i64| n > 1_000)
    });
    signal(&child, libc::SIGTERM);
    let (code, err) = exit_of(child);
    assert_eq!(code, Some(143), "{err}");
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("r.json")).unwrap()).unwrap();
    assert_eq!(record["summary"]["jobs_done"], 0, "{record}");
    let attempts: i64 = rusqlite::Connection::open(&db)
        .and_then(|c| c.query_row("SELECT count(*) FROM attempts", [], |r| r.get(0)))
        .unwrap();
    assert!(attempts < 100_001, "every retry ran: {attempts}");
}

/// SIGINT of a live sweep: no run starts after it, the runs cut short are
/// no samples, the outputs hold the runs that ended, exit 130.
#[test]
fn sigint_stops_a_live_sweep_with_the_runs_that_ended() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tb = sleeping_dag(d, false);
    let sites = catalog();
    let args = [
        "sweep",
        tb.to_str().unwrap(),
        "--sites-file",
        sites.to_str().unwrap(),
        "--strategies",
        "round-robin",
        "--sites",
        "1",
        "--maxpre",
        "20",
        "--engine",
        "live",
        "--seeds",
        "1,2,3,4,5,6,7,8",
        "--parallel",
        "2",
        "--out",
        "out",
        "--quiet",
    ];
    let child = start(d, &args);
    wait_for("the PRE scripts of two runs", || script_pids(d).len() == 8);
    signal(&child, libc::SIGINT);
    let (code, err) = exit_of(child);
    assert_eq!(code, Some(130), "{err}");
    assert!(
        err.contains("the sweep was stopped: 0 of 8 runs had ended"),
        "{err}"
    );
    assert!(!err.contains("error"), "{err}");
    let csv = std::fs::read_to_string(d.join("out/sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1, "the header alone: {csv}");
    for (node, pid) in script_pids(d) {
        wait_for(&format!("{node}'s script ({pid}) ended"), || gone(pid));
    }
}

/// A live run killed (SIGKILL) with `--keep-pools`: `audit` names its
/// pools and says the run never wrote its replica catalogue.
#[test]
fn audit_finds_the_kept_pools_of_a_killed_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let kept = d.join("kept");
    let keep = ["--keep-pools", kept.to_str().unwrap(), "--db", "r.db"];
    let mut child = run_until_scripts(d, false, &keep);
    let kept_rows = || {
        rusqlite::Connection::open(d.join("r.db"))
            .and_then(|c| c.query_row("SELECT count(*) FROM pools", [], |r| r.get(0)))
            .unwrap_or(0i64)
    };
    wait_for("the kept pools noted", || kept_rows() > 0);
    child.kill().unwrap();
    child.wait().unwrap();
    let (code, _, err) = gridbed(&["audit", d.join("r.db").to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("ended before writing its replica catalogue") && err.contains("kept"),
        "{err}"
    );
}

/// SIGTERM of `gridbed resume` going on with a killed run: it stops as a
/// run does (143), having noted in the database that it resumed it.
#[test]
fn sigterm_stops_a_resumed_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut first = run_until_scripts(d, false, &["--db", "r.db"]);
    // Killed once its database is written (the scripts may start first).
    noted_pools(&d.join("r.db"));
    first.kill().unwrap();
    first.wait().unwrap();
    // Its scripts outlive a kill -9; they are not this test's subject.
    for (_, pid) in script_pids(d) {
        // SAFETY: a signal to a script the killed run started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let child = start(d, &["resume", "r.db"]);
    wait_for("the resumed run's PRE scripts", || {
        script_pids(d).len() == 8
    });
    signal(&child, libc::SIGTERM);
    let (code, err) = exit_of(child);
    assert_eq!(code, Some(143), "{err}");
    assert!(err.contains("stopped by SIGTERM"), "{err}");
    assert_eq!(run_values(&d.join("r.db"), "resumed"), ["1"]);
}

/// SIGINT of a live farm: its dispatcher stops with the tasks done by
/// then, and the command exits 130.
#[test]
fn sigint_stops_a_live_farm() {
    let dir = tempfile::tempdir().unwrap();
    let farm = Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/falkon-diffusion-small.toml");
    let args = ["farm", farm.to_str().unwrap(), "--engine", "live"];
    let child = start(dir.path(), &args);
    std::thread::sleep(Duration::from_secs(3));
    signal(&child, libc::SIGINT);
    let (code, err) = exit_of(child);
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("stopped by SIGINT"), "{err}");
}
