//! Manager crash and resume: `kill -9` of a live `gridbed run` while jobs
//! stage, wait in queues or run their postscripts, then `gridbed resume` on
//! its control database finishes the run. Nothing that ended runs again,
//! every job ends exactly once, and the attempts the kill cut are marked.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{catalog, gridbed, run_testbed, write_testbed};

/// Two levels of 12 pipelines on two 2-slot sites: staging waits out a
/// 20 s latency, queues form, a job runs 1 s and its postscript 100 s.
const TESTBED: &str = r#"
strategy = "round-robin"
replica_policy = "caching"
origin = "submit-host"
[emulation]
time_scale = 100
byte_scale = 1000
[manager]
maxpre = 6
prescript_interval = 1
postscript_overhead = 100
[workflow]
generator = "pipeline"
levels = 2
width = 12
runtime = [1, 1]
file_size = "1 MB"
[[site]]
name = "submit-host"
latency = 20
[[site]]
name = "grid3-01"
cpus = 2
[[site]]
name = "grid3-02"
cpus = 2
"#;

fn count(db: &Path, sql: &str) -> i64 {
    rusqlite::Connection::open(db)
        .and_then(|c| c.query_row(sql, [], |r| r.get(0)))
        .unwrap_or(0)
}

/// Starts a live run of `testbed` writing `db`, kills it (SIGKILL) once
/// `when` counts at least one attempt, and returns the jobs that had ended
/// by then.
fn kill_when(dir: &Path, testbed: &str, db: &Path, when: &str) -> Vec<i64> {
    let tb = write_testbed(dir, "t.toml", testbed);
    let mut child = Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .args([
            "run",
            tb.to_str().unwrap(),
            "--sites",
            catalog().to_str().unwrap(),
            "-q",
            "--db",
        ])
        .arg(db)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while count(db, &format!("SELECT count(*) FROM attempts WHERE {when}")) == 0 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before `{when}`"
        );
        assert!(t.elapsed() < Duration::from_secs(60), "never `{when}`");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut st = conn
        .prepare("SELECT DISTINCT job FROM attempts WHERE outcome = 'ended' ORDER BY job")
        .unwrap();
    st.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The pool directories a run noted in its control database.
fn pool_dirs(db: &Path) -> Vec<std::path::PathBuf> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut st = conn
        .prepare("SELECT value FROM run WHERE key LIKE 'pool_dir.%'")
        .unwrap();
    st.query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|p| std::path::PathBuf::from(p.unwrap()))
        .collect()
}

fn attempts_of(db: &Path, job: i64) -> i64 {
    count(
        db,
        &format!("SELECT count(*) FROM attempts WHERE job = {job}"),
    )
}

#[test]
fn a_run_killed_while_staging_queueing_or_in_postscripts_resumes_to_its_end() {
    // Jobs of 100 s on one slot a site: the others queue.
    let queueing = TESTBED
        .replace("runtime = [1, 1]", "runtime = [100, 100]")
        .replace("cpus = 2", "cpus = 1");
    let staging = "submitted IS NULL AND outcome = 'pending' AND transfers > 0";
    let queued = "submitted IS NOT NULL AND started IS NULL AND outcome = 'pending'";
    // A job runs 1 s and its postscript 100 s: a job that started and has
    // not ended is in its postscript.
    let postscript = "started IS NOT NULL AND outcome = 'pending'";
    for (point, testbed, when) in [
        ("staging", TESTBED, staging),
        ("queued", queueing.as_str(), queued),
        ("postscript", TESTBED, postscript),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("run.db");
        let ended = kill_when(dir.path(), testbed, &db, when);
        let before: Vec<i64> = ended.iter().map(|&j| attempts_of(&db, j)).collect();
        let cut = count(
            &db,
            "SELECT count(*) FROM attempts WHERE outcome = 'pending'",
        );
        assert!(cut > 0, "{point}: the kill cut nothing");
        // The killed run's pools outlived it; resume removes them.
        let left_behind = pool_dirs(&db);
        assert_eq!(left_behind.len(), 3, "{point}: {left_behind:?}");
        assert!(left_behind.iter().all(|d| d.is_dir()), "{point}");
        let (code, stdout, stderr) = gridbed(&["resume", db.to_str().unwrap(), "-q"]);
        assert_eq!(code, Some(0), "{point}: {stdout}{stderr}");
        assert!(left_behind.iter().all(|d| !d.exists()), "{point}: {stdout}");
        assert!(
            stdout.contains("removed the 3 pool directories"),
            "{point}: {stdout}"
        );
        assert!(
            stdout.contains(&format!("{} of 24 jobs ended before", ended.len())),
            "{point}: {stdout}"
        );
        assert!(stdout.contains("24 ended of 24"), "{point}: {stdout}");
        // Every job ended exactly once, over both runs.
        assert_eq!(
            count(&db, "SELECT count(*) FROM attempts WHERE outcome = 'ended'"),
            24,
            "{point}"
        );
        assert_eq!(
            count(
                &db,
                "SELECT count(DISTINCT job) FROM attempts WHERE outcome = 'ended'"
            ),
            24,
            "{point}"
        );
        // What had ended did not run again.
        for (j, n) in ended.iter().zip(&before) {
            assert_eq!(attempts_of(&db, *j), *n, "{point}: job {j} ran again");
        }
        // The attempts the kill cut are marked, none left pending.
        assert_eq!(
            count(
                &db,
                "SELECT count(*) FROM attempts WHERE outcome = 'pending'"
            ),
            0
        );
        assert_eq!(
            count(
                &db,
                "SELECT count(*) FROM attempts WHERE outcome = 'interrupted'"
            ),
            cut,
            "{point}"
        );
        assert_eq!(
            count(
                &db,
                "SELECT CAST(value AS INTEGER) FROM run WHERE key = 'resumed'"
            ),
            1
        );
    }
}

#[test]
fn resume_refuses_what_it_cannot_resume() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, "not a database").unwrap();
    let (code, _, stderr) = gridbed(&["resume", junk.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("not a gridbed control database"),
        "{stderr}"
    );
    // A database of another workflow than the testbed's now: its digests
    // differ; with --force the jobs are matched by name, and only the new
    // pipeline runs.
    let db = dir.path().join("run.db");
    let tb = write_testbed(dir.path(), "t.toml", TESTBED);
    let (code, _, stderr) = run_testbed(&tb, &["--engine", "sim", "--db", db.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    let before = std::fs::read(&db).unwrap();
    write_testbed(
        dir.path(),
        "t.toml",
        &TESTBED.replace("width = 12", "width = 13"),
    );
    let (code, _, stderr) = gridbed(&["resume", db.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("the testbed, workflow changed since the run was recorded"),
        "{stderr}"
    );
    assert!(
        std::fs::read(&db).unwrap() == before,
        "a refused resume wrote"
    );
    let (code, stdout, stderr) = gridbed(&["resume", db.to_str().unwrap(), "--force"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("24 of 26 jobs ended before"), "{stdout}");
    assert_eq!(count(&db, "SELECT count(*) FROM jobs"), 26);
    assert_eq!(
        count(
            &db,
            "SELECT count(DISTINCT job) FROM attempts WHERE outcome = 'ended'"
        ),
        26
    );
    assert_eq!(count(&db, "SELECT max(attempt) FROM attempts"), 0);
}

/// Issue 61: sites and jobs are matched by name. A site added ahead of the
/// others (which shifts every later site's position) resumes with `--force`
/// and each attempt keeps its site; a site where jobs ended cannot be
/// removed, even with `--force`, and the refusal leaves the database's
/// bytes as they were.
#[test]
fn resume_matches_sites_by_name_and_refuses_to_drop_one_that_ran_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db");
    let ended = kill_when(dir.path(), TESTBED, &db, "outcome = 'ended'");
    assert!(!ended.is_empty());
    let by_site = |db: &Path| -> Vec<(String, i64)> {
        let conn = rusqlite::Connection::open(db).unwrap();
        let mut st = conn
            .prepare(
                "SELECT s.name, a.job FROM attempts a JOIN sites s ON s.id = a.site \
                 WHERE a.outcome = 'ended' ORDER BY a.job",
            )
            .unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let was = by_site(&db);
    let ran_at: std::collections::BTreeSet<&str> = was.iter().map(|(s, _)| s.as_str()).collect();
    let before = std::fs::read(&db).unwrap();

    // Every site that ran something, removed in turn.
    for site in &ran_at {
        let block = format!("[[site]]\nname = \"{site}\"\ncpus = 2\n");
        assert!(TESTBED.contains(&block));
        write_testbed(dir.path(), "t.toml", &TESTBED.replace(&block, ""));
        let (code, _, stderr) = gridbed(&["resume", db.to_str().unwrap(), "-q", "--force"]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("site {site}, where"))
                && stderr.contains("is not among the sites now"),
            "{stderr}"
        );
        assert!(
            std::fs::read(&db).unwrap() == before,
            "a refused resume wrote"
        );
    }

    // A site ahead of the others, and one that ran jobs given more slots.
    let edited = TESTBED
        .replace(
            "[[site]]\nname = \"grid3-01\"",
            "[[site]]\nname = \"grid3-03\"\ncpus = 2\n[[site]]\nname = \"grid3-01\"",
        )
        .replace(
            "name = \"grid3-02\"\ncpus = 2",
            "name = \"grid3-02\"\ncpus = 3",
        );
    write_testbed(dir.path(), "t.toml", &edited);
    let (code, _, stderr) = gridbed(&[
        "resume",
        db.to_str().unwrap(),
        "-q",
        "--force",
        "--engine",
        "sim",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    if ran_at.contains("grid3-02") {
        assert!(stderr.contains("site grid3-02, where") && stderr.contains("changed (cpus)"));
    }
    let now = by_site(&db);
    for (site, job) in &was {
        assert!(
            now.contains(&(site.clone(), *job)),
            "job {job} ended at {site} before the resume: {now:?}"
        );
    }
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM sites WHERE name = 'grid3-03' AND id = 3"
        ),
        1
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(DISTINCT job) FROM attempts WHERE outcome = 'ended'"
        ),
        24
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM (SELECT job FROM attempts WHERE outcome = 'ended' \
             GROUP BY job HAVING count(*) > 1)"
        ),
        0
    );
}

/// Issue 39: an edited testbed (here a site's slots) resumes only with
/// `--force`, which says so; a run whose process still runs is not resumed
/// (nor are its pools removed).
#[test]
fn resume_refuses_a_changed_testbed_without_force_and_a_run_still_going() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db");
    let tb = write_testbed(dir.path(), "t.toml", TESTBED);
    let (code, _, stderr) = run_testbed(&tb, &["--engine", "sim", "--db", db.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    let changed = TESTBED.replacen("cpus = 2", "cpus = 3", 1);
    write_testbed(dir.path(), "t.toml", &changed);
    let (code, _, stderr) = gridbed(&["resume", db.to_str().unwrap(), "-q"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("the testbed, sites changed"), "{stderr}");
    let (code, _, stderr) = gridbed(&["resume", db.to_str().unwrap(), "-q", "--force"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("resuming with --force though the testbed, sites changed"));

    // A gridbed process that is still going: a site daemon, noted as the
    // database's writer.
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .args(["site", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "INSERT OR REPLACE INTO run (key, value) VALUES ('pid', ?1)",
        [daemon.id().to_string()],
    )
    .unwrap();
    drop(conn);
    let (code, _, stderr) = gridbed(&["resume", db.to_str().unwrap(), "-q", "--force"]);
    daemon.kill().unwrap();
    daemon.wait().unwrap();
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("its run is still going"), "{stderr}");
}

#[test]
fn a_run_that_fails_writes_a_rescue_file_that_finishes_the_rest() {
    // Three-level pipelines whose outputs are all kept (no cleanup) on a
    // 25 MB disk: a deadlock on disk space fails some jobs and blocks the
    // rest; on a larger disk, the rescue file runs to its end.
    let testbed = |disk: &str| {
        format!(
            r#"
strategy = "data-present"
origin = "submit-host"
[emulation]
time_scale = 100
byte_scale = 1000
[manager]
prescript_interval = 0
cleanup = false
[workflow]
generator = "pipeline"
levels = 3
width = 4
runtime = [10, 10, 10]
file_size = "5 MB"
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 2
disk = "{disk}"
"#
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let failing = write_testbed(dir.path(), "failing.toml", &testbed("25 MB"));
    let rescue = dir.path().join("rescue.json");
    let (code, stdout, _) = run_testbed(
        &failing,
        &["--engine", "sim", "--rescue", rescue.to_str().unwrap()],
    );
    assert_eq!(code, Some(1), "{stdout}");
    let left: usize = stdout
        .split("rescue file with the ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(left > 0 && left < 12, "{stdout}");
    let rest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&rescue).unwrap()).unwrap();
    assert_eq!(rest["schemaVersion"], "1.5");
    let fixed = write_testbed(dir.path(), "fixed.toml", &testbed("200 MB"));
    let (code, stdout, stderr) = run_testbed(
        &fixed,
        &["--engine", "sim", "--workflow", rescue.to_str().unwrap()],
    );
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!("{left} ended of {left}")),
        "{stdout}"
    );
}

/// Issue 61: two runs on one control database. The second (and a resume)
/// is refused while the first runs, naming its pid, and writes nothing;
/// the first keeps every record.
#[test]
fn a_second_writer_of_a_control_database_is_refused_while_the_first_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db");
    let tb = write_testbed(dir.path(), "t.toml", TESTBED);
    let mut first = Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .args([
            "run",
            tb.to_str().unwrap(),
            "--sites",
            catalog().to_str().unwrap(),
            "-q",
            "--db",
        ])
        .arg(&db)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while count(&db, "SELECT count(*) FROM attempts") == 0 {
        assert!(first.try_wait().unwrap().is_none(), "the first run ended");
        assert!(t.elapsed() < Duration::from_secs(60), "no attempt written");
        std::thread::sleep(Duration::from_millis(20));
    }
    let holder = format!("gridbed (pid {})", first.id());
    let (code, _, stderr) = run_testbed(&tb, &["--engine", "sim", "--db", db.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains(&holder), "{stderr}");
    let (code, _, stderr) = gridbed(&["resume", db.to_str().unwrap(), "-q", "--force"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains(&holder), "{stderr}");
    assert!(first.wait().unwrap().success());
    assert_eq!(
        count(
            &db,
            "SELECT count(DISTINCT job) FROM attempts WHERE outcome = 'ended'"
        ),
        24,
        "the first run's records"
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM run WHERE key = 'resumed'"),
        0
    );
}

/// A run whose sub-DAG S is read as its node is submitted (`scripts =
/// "run"`), killed once S's first node ended: S had not ended, so resume
/// reads it again and runs its nodes, and the DAG ends with B; nothing is
/// dropped for want of the nodes the killed run had read.
#[test]
fn a_run_killed_inside_a_subdag_read_as_the_run_goes_resumes_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("w.dag"),
        "JOB A n.sub\nSUBDAG EXTERNAL S inner.dag\nJOB B n.sub\nPARENT A CHILD S\nPARENT S CHILD B\n",
    )
    .unwrap();
    std::fs::write(
        d.join("inner.dag"),
        "JOB x n.sub\nJOB y n.sub\nPARENT x CHILD y\n",
    )
    .unwrap();
    std::fs::write(d.join("n.sub"), "executable = /bin/true\nqueue\n").unwrap();
    let testbed = "strategy = \"round-robin\"\norigin = \"submit-host\"\n\
                   [emulation]\ntime_scale = 50\nbyte_scale = 1\n\
                   [manager]\nmaxpre = 0\nprescript_interval = 0\n\
                   [workflow]\nfile = \"w.dag\"\ndefault_runtime = 100\nscripts = \"run\"\n\
                   [[site]]\nname = \"submit-host\"\n[[site]]\nname = \"grid3-01\"\ncpus = 2\n";
    let db = d.join("r.db");
    let x_ended = "outcome = 'ended' AND job IN (SELECT id FROM jobs WHERE name = 'S+x')";
    kill_when(d, testbed, &db, x_ended);
    let ended = |name: &str| {
        count(
            &db,
            &format!(
                "SELECT count(*) FROM attempts WHERE outcome = 'ended' AND job IN (SELECT id FROM jobs WHERE name = '{name}')"
            ),
        )
    };
    assert_eq!((ended("S+y"), ended("B")), (0, 0), "killed before");
    let (code, _, stderr) = gridbed(&["resume", db.to_str().unwrap(), "-q"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("1 sub-DAGs read as the run went had not ended"),
        "{stderr}"
    );
    assert_eq!((ended("S+y"), ended("B")), (1, 1), "{stderr}");
    // The nodes read again keep their rows: one per name, each attempt
    // numbered once.
    for name in ["S+x", "S+y"] {
        let rows = format!("SELECT count(*) FROM jobs WHERE name = '{name}'");
        assert_eq!(count(&db, &rows), 1, "{name}");
    }
    let attempts = "FROM attempts WHERE job IN (SELECT id FROM jobs WHERE name = 'S+x')";
    let all = count(&db, &format!("SELECT count(*) {attempts}"));
    let numbers = count(&db, &format!("SELECT count(DISTINCT attempt) {attempts}"));
    assert_eq!(
        (all, numbers),
        (2, 2),
        "the killed run's attempt and the resumed run's"
    );
}
