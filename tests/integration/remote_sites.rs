//! Sites run by `gridbed site` daemons (separate processes on loopback),
//! driven by the manager over HTTP beside in-process sites.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use gridbed::live::{self, LiveOptions, LiveRun};

use crate::common;

/// A `gridbed site` process, killed when dropped.
struct Daemon {
    child: Child,
    url: String,
}

impl Daemon {
    /// Starts a daemon on a free loopback port with `args`, and reads the
    /// URL it prints.
    fn start(args: &[&str]) -> Daemon {
        let mut child = Command::new(env!("CARGO_BIN_EXE_gridbed"))
            .args(["site", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("gridbed site");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .to_string();
        Daemon { child, url }
    }
}

impl Drop for Daemon {
    /// SIGTERM, as a user stops a daemon, so that it removes the pools of
    /// its sessions; SIGKILL only if it has not ended within 10 s.
    fn drop(&mut self) {
        // SAFETY: a signal to the daemon this test started, not yet reaped.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        for _ in 0..500 {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Five sites: the submit host and grid3-01/03 in-process, grid3-02/04 as
/// `DAEMON2`/`DAEMON4` (empty: in-process too), round robin, staged copies
/// deleted. Eight jobs `a` read their own input from the submit host; eight
/// `b`, each after its `a`, too; `merge` reads every `b`'s output. Round
/// robin gives each site two `a`s and two `b`s whatever order they become
/// ready in, so the transfers are 8 + 8 + 6 in any live run: a count to
/// compare exactly, with transfers both ways between daemons and in-process
/// sites.
fn testbed(daemon2: &str, daemon4: &str) -> String {
    let mut t = String::from(
        r#"
strategy = "round-robin"
replica_policy = "delete"
origin = "submit-host"
seed = 42
[emulation]
time_scale = 1000
byte_scale = 100
[manager]
maxpre = 20
max_retries = 3
transfer_retries = 3
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 2
[[site]]
name = "grid3-02"
cpus = 2
DAEMON2
[[site]]
name = "grid3-03"
cpus = 2
[[site]]
name = "grid3-04"
cpus = 2
DAEMON4
[workflow]
generator = "inline"
"#,
    )
    .replace("DAEMON2", daemon2)
    .replace("DAEMON4", daemon4);
    for i in 0..8 {
        for f in [
            format!("in-a{i}"),
            format!("in-b{i}"),
            format!("mid{i}"),
            format!("out{i}"),
        ] {
            t += &format!("[[workflow.file]]\nname = \"{f}\"\nsize = \"1 MB\"\n");
        }
        t += &format!(
            "[[workflow.job]]\nname = \"a{i}\"\nruntime = 200\ninputs = [\"in-a{i}\"]\noutputs = [\"mid{i}\"]\n"
        );
        t += &format!(
            "[[workflow.job]]\nname = \"b{i}\"\nruntime = 100\ninputs = [\"in-b{i}\"]\noutputs = [\"out{i}\"]\nparents = [\"a{i}\"]\n"
        );
    }
    let outs: Vec<String> = (0..8).map(|i| format!("\"out{i}\"")).collect();
    let bs: Vec<String> = (0..8).map(|i| format!("\"b{i}\"")).collect();
    t += &format!(
        "[[workflow.job]]\nname = \"merge\"\nruntime = 50\ninputs = [{}]\nparents = [{}]\n",
        outs.join(", "),
        bs.join(", ")
    );
    t
}

/// The status code and body of `GET base+path` (HTTP/1.1 on a plain
/// socket), with `token` as the bearer token.
fn http_get(base: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let host = base.trim_start_matches("http://");
    let mut conn = std::net::TcpStream::connect(host).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    conn.read_to_string(&mut reply).unwrap();
    let code = reply
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {reply:?}"));
    let body = reply.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (code, body.to_string())
}

/// The daemon's session as `/v1/status` reports it (null: none).
fn session(base: &str) -> serde_json::Value {
    let (_, status) = http_get(base, "/v1/status", None);
    serde_json::from_str::<serde_json::Value>(&status).unwrap_or_default()["session"].clone()
}

/// Whether `cond` holds within 30 s, asked every 50 ms.
fn within_30s(mut cond: impl FnMut() -> bool) -> bool {
    (0..600).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        cond()
    })
}

fn run(s: &gridbed::config::Scenario) -> LiveRun {
    live::run(s, LiveOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn ok_transfers(r: &LiveRun) -> usize {
    r.records
        .transfers
        .iter()
        .filter(|t| t.failure.is_none())
        .count()
}

#[test]
fn two_daemon_sites_beside_three_in_process_give_the_all_in_process_outcomes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), "s3cret-token\n").unwrap();
    let token_file = dir.path().join("token");
    let d2 = Daemon::start(&["--token-file", token_file.to_str().unwrap()]);
    // The endpoint's host as the daemon advertises it (as in a container).
    let d4 = Daemon::start(&["--advertise", "127.0.0.1"]);

    let (_a, local) = common::scenario(&testbed("", ""));
    let (_b, remote) = common::scenario(&testbed(
        &format!(
            "url = \"{}\"\ntoken_file = \"{}\"",
            d2.url,
            token_file.display()
        ),
        &format!("url = \"{}\"", d4.url),
    ));
    assert!(remote.sites[2].daemon.is_some() && remote.sites[4].daemon.is_some());
    let (l, r) = (run(&local), run(&remote));
    for (name, run) in [("in-process", &l), ("with daemons", &r)] {
        assert!(run.succeeded, "{name}: {:?}", run.counts);
        common::assert_each_job_ended_once(&run.records, name);
        assert_eq!(run.live.as_ref().unwrap().corrupt_at_end, 0, "{name}");
    }
    assert_eq!(l.done, r.done, "the same jobs done");
    assert_eq!(ok_transfers(&l), 22, "in-process transfers");
    assert_eq!(ok_transfers(&r), 22, "transfers with daemons");
    assert_eq!(l.counts.done, r.counts.done);
    // The daemons ran jobs and pulled their inputs from the in-process
    // submit host; what they hold on disk is what the RLS lists there.
    let at = |run: &LiveRun, site: usize| {
        run.records
            .jobs
            .iter()
            .filter(|j| j.attempts.last().map(|a| a.site) == Some(site))
            .count()
    };
    for site in [2, 4] {
        assert!(at(&r, site) > 0, "site {site} ran no job");
        assert_eq!(at(&l, site), at(&r, site), "jobs at site {site}");
        let held: std::collections::BTreeSet<usize> =
            r.sites[site].files.iter().map(|c| c.file).collect();
        let listed: std::collections::BTreeSet<usize> = (0..remote.workflow.files.len())
            .filter(|&f| r.rls.has(f, site))
            .collect();
        assert!(!held.is_empty(), "site {site} holds nothing");
        assert_eq!(held, listed, "site {site}: disk vs RLS");
        assert!(r.sites[site].files.iter().all(|c| c.intact));
        assert!(r.sites[site].real_bytes_in > 0);
    }
    // Both daemons were detached: a second run attaches again.
    let again = run(&remote);
    assert!(again.succeeded);
}

#[test]
fn a_daemon_refuses_requests_without_its_token_and_a_run_without_it_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "right-token\n").unwrap();
    let d = Daemon::start(&["--token-file", token_file.to_str().unwrap()]);
    let status = |token: Option<&str>| http_get(&d.url, "/v1/status", token).0;
    assert_eq!(status(None), 401);
    assert_eq!(status(Some("wrong-token")), 401);
    assert_eq!(status(Some("right-tokeN")), 401);
    assert_eq!(status(Some("right-token")), 200);

    // A testbed that names the daemon but not its token: the run stops
    // before any clock starts, naming the site and the refusal.
    let (_t, s) = common::scenario(&testbed(&format!("url = \"{}\"", d.url), ""));
    let err = live::run(&s, LiveOptions::default())
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("grid3-02") && err.contains("401"), "{err}");

    // Beyond loopback a daemon needs a token: refused before it binds.
    let (code, _, stderr) = common::gridbed(&["site", "--listen", "0.0.0.0:0"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("token"), "{stderr}");
}

#[test]
fn a_daemon_lost_mid_run_is_a_crashed_site_and_every_job_still_ends() {
    // Its pool in a folder of the test's: the kill -9 leaves it behind.
    let pools = tempfile::tempdir().unwrap();
    let mut d2 = Daemon::start(&["--pool-dir", pools.path().to_str().unwrap()]);
    let mut body = testbed(&format!("url = \"{}\"", d2.url), "");
    // `a` jobs of 6 s wall: the kill lands while they run there.
    body = body
        .replace("time_scale = 1000", "time_scale = 100")
        .replace("runtime = 200", "runtime = 600");
    let (_t, s) = common::scenario(&body);
    let runner = std::thread::spawn(move || run(&s));
    assert!(
        within_30s(|| session(&d2.url)["status"]["running"].as_u64().unwrap_or(0) > 0),
        "no job started at the daemon's site"
    );
    d2.child.kill().unwrap();
    d2.child.wait().unwrap();
    let r = runner.join().unwrap();
    assert!(r.succeeded, "{:?}", r.counts);
    assert_eq!(r.counts.done, 17);
    let crashed = r
        .records
        .faults
        .iter()
        .any(|f| f.site == 2 && matches!(f.fault, gridbed::core::faults::Fault::Crash { .. }));
    assert!(crashed, "the lost daemon is recorded as a crash");
    // Jobs that were there are planned again elsewhere, none is lost.
    let replanned = r
        .records
        .jobs
        .iter()
        .filter(|j| j.attempts.iter().any(|a| a.site == 2))
        .filter(|j| j.attempts.last().map(|a| a.site) != Some(2))
        .count();
    let seen: Vec<_> = r
        .records
        .jobs
        .iter()
        .map(|j| {
            j.attempts
                .iter()
                .map(|a| (a.site, a.outcome.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        replanned > 0,
        "no job of the lost site ran elsewhere: {seen:?} {:?}",
        r.records.faults
    );
}

#[test]
fn a_manager_killed_mid_run_frees_its_daemons_for_the_next_run() {
    let d = Daemon::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let body = testbed(&format!("url = \"{}\"", d.url), "")
        .replace("time_scale = 1000", "time_scale = 100")
        .replace("runtime = 200", "runtime = 600");
    let tb = common::write_testbed(dir.path(), "t.toml", &body);
    let mut manager = Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .args(["run", tb.to_str().unwrap(), "--sites"])
        .arg(common::catalog())
        .arg("-q")
        // Its pools in the test's folder: a kill -9 leaves them behind.
        .arg("--pool-dir")
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        within_30s(|| session(&d.url)["status"]["running"].as_u64().unwrap_or(0) > 0),
        "no job started at the daemon's site"
    );
    manager.kill().unwrap();
    manager.wait().unwrap();
    assert!(
        within_30s(|| session(&d.url).is_null()),
        "the daemon still holds the killed run: {}",
        session(&d.url)
    );
    let (_t, s) = common::scenario(&testbed(&format!("url = \"{}\"", d.url), ""));
    assert!(run(&s).succeeded);
}

/// A sub-DAG whose `.dag` its node's PRE script writes, on a daemon site:
/// the PRE script runs there, and the sub-DAG's nodes, read after it, are
/// sent over the wire (`AddJobs`) with their scripts and run there too.
#[test]
fn a_subdag_read_as_the_run_goes_runs_its_nodes_and_scripts_on_a_daemon_site() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(&["--allow-scripts"]);
    std::fs::write(
        dir.path().join("w.dag"),
        "JOB A n.sub\nSUBDAG EXTERNAL C lower.dag\nSCRIPT PRE C pre.sh\nJOB D n.sub\n\
         PARENT A CHILD C\nPARENT C CHILD D\n",
    )
    .unwrap();
    common::executable(
        &dir.path().join("pre.sh"),
        "#!/bin/sh\ncd \"$(dirname \"$0\")\"\n\
         printf 'JOB LA n.sub\\nJOB LB n.sub\\nPARENT LA CHILD LB\\nSCRIPT POST LB post.sh\\n' > lower.dag\n",
    );
    common::executable(
        &dir.path().join("post.sh"),
        "#!/bin/sh\ntouch \"$(dirname \"$0\")/post-ran\"\n",
    );
    let (_t, s) = common::scenario(&format!(
        r#"
strategy = "round-robin"
origin = "submit-host"
[emulation]
time_scale = 50
byte_scale = 1
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 2
url = "{}"
[workflow]
file = "{}"
default_runtime = 10
scripts = "run"
"#,
        d.url,
        dir.path().join("w.dag").display()
    ));
    let r = run(&s);
    assert!(r.succeeded, "{:?}", r.counts);
    let names: Vec<&str> = r.workflow.jobs.iter().map(|j| j.name.as_str()).collect();
    for n in ["C+LA", "C+LB"] {
        let j = names
            .iter()
            .position(|&x| x == n)
            .unwrap_or_else(|| panic!("{names:?}"));
        let a = r.records.jobs[j].attempts.last().unwrap();
        assert_eq!((a.site, a.exit), (1, Some(0)), "{n}: {a:?}");
    }
    assert!(
        dir.path().join("post-ran").exists(),
        "LB's POST script ran on the daemon"
    );
}
