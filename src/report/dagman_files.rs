//! The files DAGMan writes about a run, written from gridbed's control
//! records when the `.dag` asks for them (HTCondor manual, "DAGMan
//! Information Files"), so that tools made for DAGMan and Pegasus
//! (pegasus-monitord, pegasus-status, Graphviz) read an emulated run:
//!
//! * `JOBSTATE_LOG file`: one line per node event, `timestamp node event
//!   condor-id job-tag - sequence`, with DAGMan's event names (PRE and POST
//!   script start and result, `SUBMIT`, `EXECUTE`, `JOB_TERMINATED`,
//!   `JOB_SUCCESS`/`JOB_FAILURE` with the program's exit, `JOB_ABORTED`);
//!   the job tag is the site (Pegasus's `pegasus_site`), the condor id a
//!   cluster number per submission, the sequence number DAGMan's counter
//!   of node attempts; the `DAGMAN_STARTED` and `DAGMAN_FINISHED` lines
//!   frame it. It has the events of the sub-DAGs' nodes too (DAGMan's
//!   sub-DAG would write its own, if its file asked).
//! * `NODE_STATUS_FILE file`: the New-ClassAd status file as DAGMan writes
//!   it at the DAG's end (`DagStatus`, one `NodeStatus` per node of the
//!   DAG's own, a sub-DAG being one, the `StatusEnd`).
//! * `DOT file [INCLUDE header]`: the DAG's own nodes and edges for
//!   Graphviz, each node labelled with its state.
//!
//! Timestamps are whole seconds of the run's nominal time after `epoch`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::config::Scenario;
use crate::core::{JobId, ScriptKind};
use crate::core::records::Outcome;
use crate::core::result::RunResult;

/// DAGMan's node status values (`NodeStatus`).
const STATUS_NOT_READY: u8 = 0;
const STATUS_DONE: u8 = 5;
const STATUS_ERROR: u8 = 6;
const STATUS_FUTILE: u8 = 7;

fn status_name(s: u8) -> &'static str {
    match s {
        STATUS_DONE => "STATUS_DONE",
        STATUS_ERROR => "STATUS_ERROR",
        STATUS_FUTILE => "STATUS_FUTILE",
        _ => "STATUS_NOT_READY",
    }
}

/// Each node's status at the end of the run.
fn node_status(run: &RunResult) -> Vec<u8> {
    (0..run.records.jobs.len())
        .map(|j| {
            let r = &run.records.jobs[j];
            if run.done[j] {
                STATUS_DONE
            } else if r.failure.is_some() {
                STATUS_ERROR
            } else if r.blocked_by.is_some() {
                STATUS_FUTILE
            } else {
                STATUS_NOT_READY
            }
        })
        .collect()
}

fn seconds(epoch: SystemTime, t: f64) -> u64 {
    let base = epoch
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    (base + t.max(0.0)) as u64
}

/// The run's jobstate.log.
pub fn jobstate_log(scenario: &Scenario, run: &RunResult, epoch: SystemTime) -> String {
    let wf = &scenario.workflow;
    // (time, order of the event within its attempt, job, attempt, text).
    let mut events: Vec<(f64, usize, usize, usize, String)> = Vec::new();
    let mut cluster = 0u64;
    for (j, r) in run.records.jobs.iter().enumerate() {
        for (k, a) in r.attempts.iter().enumerate() {
            let mut ev = |t: f64, text: String| {
                let order = events.len();
                events.push((t, order, j, k, text));
            };
            let id = match a.submitted {
                Some(_) => {
                    cluster += 1;
                    format!("{cluster}.0")
                }
                None => "-".to_string(),
            };
            for s in a.scripts.iter().filter(|s| s.kind == ScriptKind::Pre) {
                ev(s.start, "PRE_SCRIPT_STARTED -".into());
                if let (Some(end), Some(st)) = (s.end, s.status) {
                    let what = if st == 0 { "SUCCESS" } else { "FAILURE" };
                    ev(end, format!("PRE_SCRIPT_{what} -"));
                }
            }
            if let Some(t) = a.submitted {
                ev(t, format!("SUBMIT {id}"));
            } else if matches!(a.outcome, Outcome::StagingFailed(_))
                && let Some(t) = a.ended
            {
                ev(t, "SUBMIT_FAILURE -".into());
            }
            if let Some(t) = a.started {
                ev(t, format!("EXECUTE {id}"));
            }
            if let Some(t) = a.finished {
                match a.exit {
                    Some(status) => {
                        ev(t, format!("JOB_TERMINATED {id}"));
                        let what = if status == 0 { "SUCCESS" } else { "FAILURE" };
                        ev(t, format!("JOB_{what} {status}"));
                    }
                    None => {
                        ev(t, format!("JOB_ABORTED {id}"));
                        ev(t, "JOB_FAILURE -1002".into());
                    }
                }
            } else if (a.outcome == Outcome::Killed
                || matches!(a.outcome, Outcome::Removed(_)) && a.submitted.is_some())
                && let Some(t) = a.ended
            {
                ev(t, format!("JOB_ABORTED {id}"));
                ev(t, "JOB_FAILURE -1002".into());
            }
            for s in a.scripts.iter().filter(|s| s.kind == ScriptKind::Post) {
                ev(s.start, format!("POST_SCRIPT_STARTED {id}"));
                if let (Some(end), Some(st)) = (s.end, s.status) {
                    ev(end, format!("POST_SCRIPT_TERMINATED {id}"));
                    let what = if st == 0 { "SUCCESS" } else { "FAILURE" };
                    ev(end, format!("POST_SCRIPT_{what} {id}"));
                }
            }
        }
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} INTERNAL *** DAGMAN_STARTED 0.0 ***",
        seconds(epoch, 0.0)
    );
    // DAGMan numbers node attempts as they first appear in the log.
    let mut seq = std::collections::HashMap::new();
    for (t, _, j, k, text) in &events {
        let next = seq.len() + 1;
        let n = *seq.entry((*j, *k)).or_insert(next);
        let site = &scenario.sites[run.records.jobs[*j].attempts[*k].site]
            .info
            .name;
        let _ = writeln!(
            out,
            "{} {} {text} {site} - {n}",
            seconds(epoch, *t),
            wf.jobs[*j].name
        );
    }
    let _ = writeln!(
        out,
        "{} INTERNAL *** DAGMAN_FINISHED {} ***",
        seconds(epoch, run.makespan),
        run.dag_exit
    );
    out
}

/// The DAG's own nodes, as DAGMan keeps them in its `_nodes`: not those
/// of its sub-DAGs (nor their entries), which are their own DAGMans', nor
/// its SERVICE nodes, which it keeps apart.
fn own_nodes(scenario: &Scenario) -> Vec<JobId> {
    let wf = &scenario.workflow;
    match scenario.source.as_ref().and_then(|s| s.dagman.as_ref()) {
        Some(info) => {
            let top: std::collections::HashSet<&str> =
                info.top_level().map(|n| n.name.as_str()).collect();
            (0..wf.jobs.len())
                .filter(|&j| top.contains(wf.jobs[j].name.as_str()))
                .collect()
        }
        None => (0..wf.jobs.len()).collect(),
    }
}

/// The node status file at the end of the run: the DAG's own nodes, as
/// DAGMan's `Dag::DumpNodeStatus` lists its `_nodes` (a sub-DAG is one
/// node, its DAG's nodes are its own DAGMan's; SERVICE nodes are kept
/// apart).
pub fn node_status_file(
    scenario: &Scenario,
    run: &RunResult,
    dag_file: &str,
    epoch: SystemTime,
) -> String {
    let all = node_status(run);
    let wf = &scenario.workflow;
    let own = own_nodes(scenario);
    let status: Vec<u8> = own.iter().map(|&j| all[j]).collect();
    let count = |s: u8| status.iter().filter(|&&x| x == s).count();
    let end = seconds(epoch, run.makespan);
    // DAGMan's note on the DAG's status (`Dag::DumpNodeStatus`).
    let (dag_status, note) = match (run.succeeded, run.dag_stop) {
        (true, _) => (STATUS_DONE, "success"),
        (false, Some(s)) if s.node.is_some() => (STATUS_ERROR, "aborted"),
        (false, _) => (STATUS_ERROR, "failed"),
    };
    let mut out = String::new();
    let _ = writeln!(out, "[\n  Type = \"DagStatus\";");
    let _ = writeln!(out, "  DagFiles = {{\n    \"{dag_file}\"\n  }};");
    let _ = writeln!(out, "  Timestamp = {end};");
    let _ = writeln!(
        out,
        "  DagStatus = {dag_status}; /* \"{} ({note})\" */",
        status_name(dag_status)
    );
    let _ = writeln!(out, "  NodesTotal = {};", status.len());
    for (name, s) in [
        ("NodesDone", STATUS_DONE),
        ("NodesFailed", STATUS_ERROR),
        ("NodesFutile", STATUS_FUTILE),
        ("NodesUnready", STATUS_NOT_READY),
    ] {
        let _ = writeln!(out, "  {name} = {};", count(s));
    }
    for name in ["NodesPre", "NodesQueued", "NodesPost", "NodesReady"] {
        let _ = writeln!(out, "  {name} = 0;");
    }
    let _ = writeln!(out, "  JobProcsHeld = 0;\n  JobProcsIdle = 0;\n]");
    for (&j, &s) in own.iter().zip(&status) {
        let (job, r) = (&wf.jobs[j], &run.records.jobs[j]);
        let details = r
            .failure
            .clone()
            .or_else(|| {
                r.blocked_by
                    .map(|b| format!("{} failed", scenario.workflow.jobs[b].name))
            })
            .unwrap_or_default()
            .replace('"', "'");
        let _ = writeln!(
            out,
            "[\n  Type = \"NodeStatus\";\n  Node = \"{}\";\n  NodeStatus = {}; /* \"{}\" */\n  StatusDetails = \"{details}\";\n  RetryCount = {};\n  JobProcsQueued = 0;\n  JobProcsHeld = 0;\n]",
            job.name,
            s,
            status_name(s),
            r.attempts.len().saturating_sub(1)
        );
    }
    let _ = writeln!(
        out,
        "[\n  Type = \"StatusEnd\";\n  EndTime = {end};\n  NextUpdate = 0;\n]"
    );
    out
}

/// The DAG for Graphviz, each node labelled with its end state; `header`
/// (DOT's INCLUDE) goes inside the graph first.
pub fn dot(scenario: &Scenario, run: &RunResult, header: &str) -> String {
    let status = node_status(run);
    let wf = &scenario.workflow;
    let mut out = String::from("digraph DAG {\n");
    out.push_str(header);
    if !header.is_empty() && !header.ends_with('\n') {
        out.push('\n');
    }
    let own = own_nodes(scenario);
    // A sub-DAG node's parents in its DAG are its entry's.
    let entry_of: std::collections::HashMap<&str, &str> = (scenario.source.as_ref())
        .and_then(|s| s.dagman.as_ref())
        .map(|info| {
            (info.subdags.iter())
                .map(|d| (d.node.as_str(), d.entry.as_str()))
                .collect()
        })
        .unwrap_or_default();
    let index: std::collections::HashMap<&str, JobId> = (wf.jobs.iter().enumerate())
        .map(|(j, job)| (job.name.as_str(), j))
        .collect();
    for &j in &own {
        let job = &wf.jobs[j];
        let state = match status[j] {
            STATUS_DONE => "Done",
            STATUS_ERROR => "Failed",
            STATUS_FUTILE => "Futile",
            _ => "Not ready",
        };
        let _ = writeln!(
            out,
            "    \"{0}\" [shape=ellipse label=\"{0} ({state})\"]",
            job.name
        );
    }
    for &j in &own {
        let name = wf.jobs[j].name.as_str();
        let from = (entry_of.get(name).and_then(|e| index.get(e))).map_or(j, |&e| e);
        for &p in &wf.jobs[from].parents {
            let _ = writeln!(out, "    \"{}\" -> \"{name}\"", wf.jobs[p].name);
        }
    }
    out.push_str("}\n");
    out
}

/// Writes the files the run's `.dag` asks for (`JOBSTATE_LOG`,
/// `NODE_STATUS_FILE`, `DOT`), relative to its folder; returns their paths.
pub fn write(
    scenario: &Scenario,
    run: &RunResult,
    epoch: SystemTime,
) -> std::io::Result<Vec<PathBuf>> {
    let Some(src) = &scenario.source else {
        return Ok(Vec::new());
    };
    let Some(info) = &src.dagman else {
        return Ok(Vec::new());
    };
    let dir = src.path.parent().unwrap_or(Path::new("."));
    let dag_file = src
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut written = Vec::new();
    let mut put = |file: &str, text: String| -> std::io::Result<()> {
        let path = dir.join(file);
        std::fs::write(&path, text)?;
        written.push(path);
        Ok(())
    };
    if let Some(f) = &info.jobstate_log {
        put(f, jobstate_log(scenario, run, epoch))?;
    }
    if let Some(f) = &info.node_status_file {
        put(f, node_status_file(scenario, run, &dag_file, epoch))?;
    }
    if let Some((f, include)) = &info.dot {
        let header = match include {
            Some(h) => std::fs::read_to_string(dir.join(h))?,
            None => String::new(),
        };
        put(f, dot(scenario, run, &header))?;
    }
    Ok(written)
}
