//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};

use gridbed::config::{self, Overrides, Scenario};

/// A workflow's edges as (parent, child) names.
pub fn edges(wf: &gridbed::core::Workflow) -> std::collections::BTreeSet<(String, String)> {
    wf.jobs
        .iter()
        .flat_map(|j| {
            j.parents
                .iter()
                .map(|&p| (wf.jobs[p].name.clone(), j.name.clone()))
        })
        .collect()
}

/// The repository's site catalogue.
pub fn catalog() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sites.toml")
}

/// Writes `body` as a testbed in `dir` and returns its path.
pub fn write_testbed(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write testbed");
    path
}

/// Loads a testbed against the repository's catalogue.
pub fn load(path: &Path) -> Scenario {
    let overrides = Overrides {
        sites_file: Some(catalog()),
        ..Default::default()
    };
    config::load(path, &overrides).unwrap_or_else(|e| panic!("{e}"))
}

/// Writes and loads a testbed.
pub fn scenario(body: &str) -> (tempfile::TempDir, Scenario) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_testbed(dir.path(), "t.toml", body);
    let s = load(&path);
    (dir, s)
}

/// The kill/start race: three input-less jobs on two one-slot sites, round
/// robin. `a` (runtime `a_runtime`) and `c` go to grid3-01, `c` queued behind
/// `a` from t = 1 until `a` ends; `b` and `c` run 10 s. MonitQueue ticks every
/// second; with `a_runtime` = 10, `max_idle` places the kill of `c` one tick
/// before `a` ends (7.5) or exactly at that instant (8.5).
pub fn race_scenario(
    max_idle: f64,
    a_runtime: f64,
    time_scale: f64,
) -> (tempfile::TempDir, gridbed::config::Scenario) {
    let body = format!(
        r#"
strategy = "round-robin"
origin = "submit-host"
[emulation]
time_scale = {time_scale}
byte_scale = 1000
[manager]
maxpre = 10
prescript_interval = 0.5
monit_interval = 1
max_idle = {max_idle}
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
[[workflow.job]]
name = "a"
runtime = {a_runtime}
[[workflow.job]]
name = "b"
runtime = 10
[[workflow.job]]
name = "c"
runtime = 10
"#
    );
    scenario(&body)
}

/// The dashboard of `grafana/dashboards/gridbed.json`, parsed.
pub fn dashboard() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("grafana/dashboards/gridbed.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Every (panel title, PromQL expression) of the dashboard.
pub fn dashboard_exprs() -> Vec<(String, String)> {
    let d = dashboard();
    let mut out = Vec::new();
    for p in d["panels"].as_array().unwrap() {
        // Rows group panels and query nothing.
        let Some(targets) = p["targets"].as_array() else {
            continue;
        };
        for t in targets {
            out.push((
                p["title"].as_str().unwrap().to_string(),
                t["expr"].as_str().unwrap().to_string(),
            ));
        }
    }
    out
}

/// The metric names the dashboard's expressions use (histogram series
/// `_bucket`, `_sum`, `_count` mapped to the histogram's name).
pub fn dashboard_metrics() -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for (_, expr) in dashboard_exprs() {
        let mut rest = expr.as_str();
        while let Some(i) = rest.find("gridbed_") {
            let tail = &rest[i..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(tail.len());
            let name = &tail[..end];
            let name = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .unwrap_or(name);
            names.insert(name.to_string());
            rest = &tail[end..];
        }
    }
    names
}

/// `gridbed run TESTBED --sites <the repository's catalogue> -q ARGS…`:
/// (exit code, stdout, stderr).
pub fn run_testbed(testbed: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let (tb, sites) = (testbed.to_str().unwrap(), catalog());
    let mut all = vec!["run", tb, "--sites", sites.to_str().unwrap(), "-q"];
    all.extend_from_slice(args);
    gridbed(&all)
}

/// Runs the `gridbed` binary with `args`: (exit code, stdout, stderr).
pub fn gridbed<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the `gridbed` binary with `args`, which must succeed; its stdout.
pub fn gridbed_ok<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> String {
    let (code, stdout, stderr) = gridbed(args);
    assert_eq!(code, Some(0), "gridbed failed: {stderr}");
    stdout
}

/// An edit of a file's text for fuzzing: cut at, delete 16 characters at,
/// insert at, swap at.
pub type Edit = (usize, proptest::sample::Index, String);

/// `text` with `edits` applied in order.
pub fn edit(text: &str, edits: Vec<Edit>) -> String {
    let mut t: Vec<char> = text.chars().collect();
    for (op, at, text) in edits {
        let i = if t.is_empty() { 0 } else { at.index(t.len()) };
        match op {
            0 => t.truncate(i),
            1 => {
                let j = (i + 16).min(t.len());
                t.drain(i..j);
            }
            2 => {
                for (k, c) in text.chars().enumerate() {
                    t.insert(i + k, c);
                }
            }
            _ => {
                if !t.is_empty() {
                    let j = (i * 7 + 3) % t.len();
                    t.swap(i, j);
                }
            }
        }
    }
    t.into_iter().collect()
}

/// A run record written with `--json`, as JSON, with the detail its control
/// database holds put back in as `jobs` and `transfers` (the shape records
/// had when they carried it).
pub fn record_with_detail(json: &Path) -> serde_json::Value {
    let rec = gridbed::report::run_report::read_run(json, None).unwrap();
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert!(
        value.get("jobs").is_none() && value.get("transfers").is_none(),
        "the record file holds no detail"
    );
    value["jobs"] = serde_json::to_value(&rec.jobs).unwrap();
    value["transfers"] = serde_json::to_value(&rec.transfers).unwrap();
    value
}

/// Every job of a run ended exactly once (one `Ended` attempt); `what`
/// names the run in the message.
pub fn assert_each_job_ended_once(records: &gridbed::core::records::Records, what: &str) {
    for (j, rec) in records.jobs.iter().enumerate() {
        let ended = rec
            .attempts
            .iter()
            .filter(|a| a.outcome == gridbed::core::records::Outcome::Ended)
            .count();
        assert_eq!(ended, 1, "{what}: job {j} ended {ended} times");
    }
}

/// Writes `text` at `path` as an executable file (a script).
pub fn executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The `EXECUTE` events of several DAGMans' jobstate logs in `dir`, each
/// `(file, prefix)` naming its nodes `prefix` then their names (`S+` for
/// sub-DAG `S`'s log), in the order of their HTCondor ids: one schedd
/// numbers every DAGMan's jobs in the order they were submitted. A
/// SUBDAG node's own line (its DAGMan's job) is there too. Also the logs'
/// text, for messages.
pub fn executions(dir: &Path, logs: &[(&str, &str)]) -> (Vec<String>, String) {
    let mut ran: Vec<(u64, String)> = Vec::new();
    let mut text = String::new();
    for (file, prefix) in logs {
        let log = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
        for f in log.lines().map(|l| l.split(' ').collect::<Vec<_>>()) {
            if f.get(2) == Some(&"EXECUTE") {
                let cluster = f[3].trim_end_matches(".0").parse().unwrap();
                ran.push((cluster, format!("{prefix}{}", f[1])));
            }
        }
        text += &format!("{file}:\n{log}");
    }
    ran.sort();
    (ran.into_iter().map(|(_, n)| n).collect(), text)
}

/// A `SCRIPT DEBUG` file's script output: its text without DAGMan's
/// banner lines (`*** Node=… Type=… ExitCode=…`), one before each
/// script's output.
pub fn script_output(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("*** Node="))
        .map(|l| format!("{l}\n"))
        .collect()
}
