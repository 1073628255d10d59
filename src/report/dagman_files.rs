//! The files DAGMan writes about a run, written from gridbed's control
//! records when the `.dag` asks for them (HTCondor manual, "DAGMan
//! Information Files"), line for line as DAGMan writes them (its
//! `Dag::DumpNodeStatus`, `Dag::DumpDotFile` and `JobstateLog`), so that
//! tools made for DAGMan and Pegasus (pegasus-monitord, pegasus-status,
//! Graphviz) and HTCondor's own test checks read an emulated run:
//!
//! * `JOBSTATE_LOG file`: one line per node event, `timestamp node event
//!   condor-id job-tag - sequence`, with DAGMan's event names (PRE and POST
//!   script start and result, `SUBMIT`, `EXECUTE`, `JOB_TERMINATED`,
//!   `JOB_SUCCESS`/`JOB_FAILURE` with the program's exit, `JOB_ABORTED`).
//!   The job tag is the node's submit file's `+pegasus_site` (or the
//!   attribute its `+job_tag_name` names), `-` when it sets none, as DAGMan
//!   reads it; the condor id a cluster number per submission, in the order
//!   of submission; the sequence number DAGMan's counter of node attempts.
//!   The `DAGMAN_STARTED` and `DAGMAN_FINISHED` lines frame it. It has the
//!   events of the sub-DAGs' nodes too (DAGMan's sub-DAG would write its
//!   own, if its file asked).
//! * `NODE_STATUS_FILE file`: the New-ClassAd status file as DAGMan writes
//!   it at the DAG's end: `DagStatus` with its counts in DAGMan's order and
//!   comments, one `NodeStatus` per node of the DAG's own (a sub-DAG being
//!   one) with DAGMan's `StatusDetails` wording, and `StatusEnd`.
//! * `DOT file [UPDATE] [DONT-OVERWRITE] [INCLUDE header]`: the DAG's own
//!   nodes and edges for Graphviz, drawn as the run starts, and with
//!   `UPDATE` drawn again with the states at its end (DAGMan redraws it on
//!   each change of its counts; the last drawing is the end's).
//!
//! * The rescue DAGs (`rescue001`, …; each failed sub-DAG run's too) and
//!   the save files of `SAVE_POINT_FILE` nodes, in DAGMan's rescue format
//!   (`workflow::formats::dagman::rescue`).
//!
//! [`write_at_start`] and [`write_at_end`] write them all: a library caller
//! that runs a `.dag` gets what `gridbed run` writes.
//!
//! Timestamps are whole seconds of the run's nominal time after `epoch`;
//! the human-readable ones (DAGMan's `ctime`) are in UTC.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::config::Scenario;
use crate::core::records::{Attempt, Outcome};
use crate::core::result::RunResult;
use crate::core::{JobId, JobFailure, ScriptKind};
use crate::workflow::formats::dagman::{DagmanInfo, DotFile, NodeInfo, rescue};

/// DAGMan's node states (`Node::status_t`), numbered as its status file
/// numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    NotReady = 0,
    Ready = 1,
    Done = 5,
    Error = 6,
    Futile = 7,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            State::NotReady => "STATUS_NOT_READY",
            State::Ready => "STATUS_READY",
            State::Done => "STATUS_DONE",
            State::Error => "STATUS_ERROR",
            State::Futile => "STATUS_FUTILE",
        }
    }
}

/// Each node's state at the end of the run.
fn end_states(run: &RunResult) -> Vec<State> {
    (run.records.jobs.iter().zip(&run.done))
        .map(|(r, &done)| {
            if done {
                State::Done
            } else if r.failure.is_some() {
                State::Error
            } else if r.blocked_by.is_some() {
                State::Futile
            } else {
                State::NotReady
            }
        })
        .collect()
}

/// Seconds since the Unix epoch of the run's time `t`.
fn seconds(epoch: SystemTime, t: f64) -> u64 {
    let base = epoch
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    (base + t.max(0.0)) as u64
}

/// `secs` as C's `ctime` writes it (without its newline), in UTC:
/// `Sat Nov 28 17:44:36 2026`.
fn ctime(secs: u64) -> String {
    let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    let iso = humantime::format_rfc3339_seconds(t).to_string();
    let num = |r: std::ops::Range<usize>| iso.get(r).and_then(|s| s.parse::<usize>().ok());
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let day = DAYS[(secs / 86_400 % 7) as usize];
    let month = num(5..7).and_then(|m| MONTHS.get(m.wrapping_sub(1))).unwrap_or(&"Jan");
    format!(
        "{day} {month} {:>2} {} {}",
        num(8..10).unwrap_or(1),
        iso.get(11..19).unwrap_or("00:00:00"),
        iso.get(0..4).unwrap_or("1970")
    )
}

/// `s` as a ClassAd string literal, quoted and escaped as the ClassAd
/// unparser writes it (DAGMan's `EscapeClassadString`).
fn classad_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The HTCondor cluster number of each submitted attempt `(job, attempt)`:
/// 1, 2, … in the order the attempts were submitted, as a schedd numbers
/// its clusters.
fn clusters(run: &RunResult) -> HashMap<(JobId, usize), u64> {
    let mut submitted: Vec<(f64, JobId, usize)> = Vec::new();
    for (j, r) in run.records.jobs.iter().enumerate() {
        for (k, a) in r.attempts.iter().enumerate() {
            if let Some(t) = a.submitted {
                submitted.push((t, j, k));
            }
        }
    }
    submitted.sort_by(|a, b| a.0.total_cmp(&b.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    (submitted.into_iter().enumerate())
        .map(|(n, (_, j, k))| ((j, k), n as u64 + 1))
        .collect()
}

/// The value of `key` in a submit description, read as DAGMan's
/// `MultiLogFiles::loadValueFromSubFile` reads it: logical lines (a
/// trailing `\` continues one), `key = value` with `key` matched whatever
/// its case, the last one winning; a value with a macro (`$`) is none.
fn submit_value(text: &str, key: &str) -> Option<String> {
    let mut value = None;
    let mut line = String::new();
    for physical in text.lines() {
        line.push_str(physical);
        if line.ends_with('\\') {
            line.pop();
            continue;
        }
        let mut words = line.split('=').map(str::trim).filter(|w| !w.is_empty());
        if words.next().is_some_and(|k| k.eq_ignore_ascii_case(key))
            && let Some(v) = words.next()
        {
            value = Some(v.to_string());
        }
        line.clear();
    }
    value.filter(|v| !v.contains('$'))
}

/// `v` without the double quotes around it, as DAGMan strips them.
fn unquoted(v: &str) -> &str {
    let v = v.strip_prefix('"').unwrap_or(v);
    v.strip_suffix('"').unwrap_or(v)
}

/// A node's jobstate-log job tag (DAGMan's `Node::GetJobstateJobTag`): the
/// attribute its submit file's `+job_tag_name` names (`+pegasus_site` by
/// default), without quotes; `-` when the file sets none or cannot be read
/// (an inline description has no file).
fn job_tag(dag_dir: &Path, node: &NodeInfo) -> String {
    let dir = dag_dir.join(node.dir.as_deref().unwrap_or(""));
    let Ok(text) = std::fs::read_to_string(dir.join(&node.submit)) else {
        return "-".into();
    };
    let name = submit_value(&text, "+job_tag_name");
    let name = name.as_deref().map_or("+pegasus_site", unquoted);
    submit_value(&text, name).map_or("-".into(), |v| unquoted(&v).to_string())
}

/// The run's jobstate.log.
pub fn jobstate_log(scenario: &Scenario, run: &RunResult, epoch: SystemTime) -> String {
    let wf = &scenario.workflow;
    let dag_dir = (scenario.source.as_ref())
        .and_then(|s| s.path.parent())
        .unwrap_or(Path::new("."));
    let info = scenario.source.as_ref().and_then(|s| s.dagman.as_ref());
    let tags: HashMap<&str, String> = (info.map(|i| i.nodes.as_slice()).unwrap_or_default())
        .iter()
        .map(|n| (n.name.as_str(), job_tag(dag_dir, n)))
        .collect();
    let cluster = clusters(run);
    // (time, order of the event within its attempt, job, attempt, text).
    let mut events: Vec<(f64, usize, usize, usize, String)> = Vec::new();
    for (j, r) in run.records.jobs.iter().enumerate() {
        for (k, a) in r.attempts.iter().enumerate() {
            let mut ev = |t: f64, text: String| {
                let order = events.len();
                events.push((t, order, j, k, text));
            };
            let id = cluster
                .get(&(j, k))
                .map_or("-".to_string(), |c| format!("{c}.0"));
            let mut pre_failed = false;
            for s in a.scripts.iter().filter(|s| s.kind == ScriptKind::Pre) {
                ev(s.start, "PRE_SCRIPT_STARTED -".into());
                if let (Some(end), Some(st)) = (s.end, s.status) {
                    pre_failed |= st != 0;
                    let what = if st == 0 { "SUCCESS" } else { "FAILURE" };
                    ev(end, format!("PRE_SCRIPT_{what} -"));
                }
            }
            if let Some(t) = a.submitted {
                ev(t, format!("SUBMIT {id}"));
            } else if matches!(a.outcome, Outcome::StagingFailed(_))
                && !pre_failed
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
    let mut seq = HashMap::new();
    for (t, _, j, k, text) in &events {
        let next = seq.len() + 1;
        let n = *seq.entry((*j, *k)).or_insert(next);
        let name = wf.jobs[*j].name.as_str();
        let tag = tags.get(name).map_or("-", String::as_str);
        let _ = writeln!(out, "{} {name} {text} {tag} - {n}", seconds(epoch, *t));
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
    match dagman(scenario) {
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

fn dagman(scenario: &Scenario) -> Option<&DagmanInfo> {
    scenario.source.as_ref().and_then(|s| s.dagman.as_ref())
}

/// Why a node failed, in DAGMan's words (its `Node::error_text`, set in
/// `Dag::ProcessTerminatedEvent`, `ProcessPostTermEvent`, `PreScriptReaper`
/// and `SubmitNodeJob`), from its last attempt: `cluster` is that
/// attempt's HTCondor id, `retry_max` the node's `RETRY` count and
/// `retries` the retries it had, `has_final`
/// whether the DAG waited for a FINAL node after an abort (and so saw the
/// removed jobs' abort events).
fn error_text(
    a: &Attempt,
    cluster: Option<u64>,
    (retry_max, retries): (u32, usize),
    has_final: bool,
) -> String {
    let proc = |c: Option<u64>| format!("{}.0.0", c.map_or(-1, |c| c as i64));
    let failed_script = |kind| {
        (a.scripts.iter())
            .filter(|s| s.kind == kind)
            .find_map(|s| s.status.filter(|&st| st != 0))
    };
    let mut text = if let Some(st) = failed_script(ScriptKind::Pre) {
        format!("PRE Script failed with status {st}")
    } else if let Some(st) = failed_script(ScriptKind::Post) {
        let job = match a.exit {
            Some(e) if e > 0 => format!("Job exited with status {e} and "),
            Some(e) if (-64..0).contains(&e) => format!("Job died on signal {} and ", -e),
            Some(e) => format!("Job failed due to DAGMAN error {e} and "),
            None => "Job failed due to DAGMAN error -1002 and ".into(),
        };
        if retries < retry_max as usize {
            // Failed before the retry the abort cut short: DAGMan had
            // set only this much.
            format!("POST script failed with status {st}")
        } else {
            format!("{job}POST Script failed with status {st}")
        }
    } else {
        match &a.outcome {
            Outcome::Removed(_) if has_final && a.submitted.is_some() => format!(
                "HTCondor reported ULOG_JOB_ABORTED event for job proc ({})",
                proc(cluster)
            ),
            Outcome::Removed(_) if a.finished.is_some() => "Was STATUS_POSTRUN".into(),
            Outcome::Removed(_) if a.submitted.is_some() => "Was STATUS_SUBMITTED".into(),
            Outcome::Removed(_) => "Was STATUS_PRERUN".into(),
            Outcome::StagingFailed(_) => "Job submit failed".into(),
            Outcome::Killed => format!(
                "HTCondor reported ULOG_JOB_ABORTED event for job proc ({})",
                proc(cluster)
            ),
            Outcome::Failed(JobFailure::Exit(st)) => {
                format!("Job proc ({}) failed with status {st}", proc(cluster))
            }
            // A failure of the emulated grid's data, which no HTCondor job
            // reports: its own words.
            other => format!("Job proc ({}) {}", proc(cluster), other.describe()),
        }
    };
    // Said once no retry is left (a node whose retry an abort cut short
    // never got there).
    if retry_max > 0 && retries >= retry_max as usize {
        let _ = write!(text, " (after {retries} node retries)");
    }
    text
}

/// The node status file at the end of the run, as DAGMan's
/// `Dag::DumpNodeStatus` writes it: the DAG's own nodes (a sub-DAG is one
/// node, its DAG's nodes are its own DAGMan's; SERVICE nodes are kept
/// apart), written at `now`.
pub fn node_status_file(
    scenario: &Scenario,
    run: &RunResult,
    dag_file: &str,
    now: u64,
) -> String {
    let all = end_states(run);
    let wf = &scenario.workflow;
    let own = own_nodes(scenario);
    let info = dagman(scenario);
    let node_info: HashMap<&str, &NodeInfo> = (info.map(|i| i.nodes.as_slice()))
        .unwrap_or_default()
        .iter()
        .map(|n| (n.name.as_str(), n))
        .collect();
    let has_final = info.is_some_and(|i| i.top_level().any(|n| n.is_final));
    let cluster = clusters(run);
    let states: Vec<State> = own.iter().map(|&j| all[j]).collect();
    let count = |s: State| states.iter().filter(|&&x| x == s).count();
    // DAGMan's note on the DAG's status.
    let (dag_status, note) = match (run.succeeded, run.dag_stop) {
        (true, _) => (State::Done, "success"),
        (false, Some(s)) if s.node.is_some() => (State::Error, "aborted"),
        (false, Some(_)) => (State::Error, "removed"),
        // Nothing failed, yet not all ran: a cycle (`Dag::DoneCycle`).
        (false, None) if count(State::Error) == 0 => (State::Error, "cycle"),
        (false, None) => (State::Error, "failed"),
    };
    let mut out = String::new();
    let _ = writeln!(out, "[\n  Type = \"DagStatus\";");
    let _ = writeln!(out, "  DagFiles = {{\n    {}\n  }};", classad_string(dag_file));
    let stamp = classad_string(&ctime(now));
    let _ = writeln!(out, "  Timestamp = {now}; /* {stamp} */");
    let note = classad_string(&format!("{} ({note})", dag_status.name()));
    let _ = writeln!(out, "  DagStatus = {}; /* {note} */", dag_status as u8);
    let _ = writeln!(out, "  NodesTotal = {};", states.len());
    let _ = writeln!(out, "  NodesDone = {};", count(State::Done));
    // The run is over: nothing in a PRE script, queued, in a POST script
    // or ready.
    for name in ["NodesPre", "NodesQueued", "NodesPost", "NodesReady"] {
        let _ = writeln!(out, "  {name} = 0;");
    }
    let _ = writeln!(out, "  NodesUnready = {};", count(State::NotReady));
    let _ = writeln!(out, "  NodesFutile = {};", count(State::Futile));
    let _ = writeln!(out, "  NodesFailed = {};", count(State::Error));
    let _ = writeln!(out, "  JobProcsHeld = 0;");
    let _ = writeln!(out, "  JobProcsIdle = 0; /* includes held */\n]");
    for (&j, &s) in own.iter().zip(&states) {
        let (job, r) = (&wf.jobs[j], &run.records.jobs[j]);
        let node = node_info.get(job.name.as_str());
        let retry_max = node.map_or(0, |n| n.retry);
        let last = r.attempts.len().checked_sub(1);
        let details = match s {
            State::Error => last.map_or_else(String::new, |k| {
                error_text(
                    &r.attempts[k],
                    cluster.get(&(j, k)).copied(),
                    (retry_max, k),
                    has_final,
                )
            }),
            State::Futile => "Had an ancestor node fail".into(),
            State::Done if node.is_some_and(|n| n.done) => "User defined as DONE".into(),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "[\n  Type = \"NodeStatus\";\n  Node = {};\n  NodeStatus = {}; /* {} */\n  \
             StatusDetails = {};\n  RetryCount = {};\n  JobProcsQueued = 0;\n  \
             JobProcsHeld = 0;\n]",
            classad_string(&job.name),
            s as u8,
            classad_string(s.name()),
            classad_string(&details),
            r.attempts.len().saturating_sub(1)
        );
    }
    let _ = writeln!(
        out,
        "[\n  Type = \"StatusEnd\";\n  EndTime = {now}; /* {stamp} */\n  \
         NextUpdate = 0; /* \"none\" */\n]"
    );
    out
}

/// The DAG for Graphviz as DAGMan's `Dag::DumpDotFile` draws it at `now`,
/// each node in `states` (by job), shaped and labelled by its state;
/// `header` (DOT's `INCLUDE`, read from `include`) goes first.
fn dot(
    scenario: &Scenario,
    states: &[State],
    include: Option<(&str, &str)>,
    now: u64,
) -> String {
    let wf = &scenario.workflow;
    let mut out = String::from("digraph DAG {\n");
    let _ = writeln!(out, "    label=\"DAGMan Job status at {}\";\n", ctime(now));
    if let Some((file, header)) = include {
        let _ = writeln!(out, "// Beginning of commands included from {file}.");
        out.push_str(header);
        if !header.is_empty() && !header.ends_with('\n') {
            out.push('\n');
        }
        let _ = writeln!(out, "// End of commands included from {file}.\n");
    }
    let own = own_nodes(scenario);
    for &j in &own {
        let name = wf.jobs[j].name.as_str();
        let look = match states[j] {
            State::Done => "shape=ellipse label=\"{} (Done)\" style=bold",
            State::Error => "shape=box label=\"{} (E)\"",
            _ => "shape=ellipse label=\"{} (I)\"",
        };
        let _ = writeln!(out, "    \"{name}\" [{}];", look.replace("{}", name));
    }
    out.push('\n');
    // A sub-DAG node's parents in its DAG are its entry's.
    let entry_of: HashMap<&str, &str> = (dagman(scenario))
        .map(|info| {
            (info.subdags.iter())
                .map(|d| (d.node.as_str(), d.entry.as_str()))
                .collect()
        })
        .unwrap_or_default();
    let index: HashMap<&str, JobId> = (wf.jobs.iter().enumerate())
        .map(|(j, job)| (job.name.as_str(), j))
        .collect();
    // Each parent's children, in the order of the nodes.
    let mut children: HashMap<JobId, Vec<JobId>> = HashMap::new();
    for &j in &own {
        let name = wf.jobs[j].name.as_str();
        let from = (entry_of.get(name).and_then(|e| index.get(e))).map_or(j, |&e| e);
        for &p in &wf.jobs[from].parents {
            children.entry(p).or_default().push(j);
        }
    }
    for &p in &own {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or_default() {
            let _ = writeln!(
                out,
                "    \"{}\" -> \"{}\";",
                wf.jobs[p].name, wf.jobs[c].name
            );
        }
    }
    out.push_str("}\n");
    out
}

/// Each node's state as the run starts: those the DAG marks `DONE` (or its
/// rescue does) are done, the others not yet run.
fn start_states(scenario: &Scenario) -> Vec<State> {
    let done: std::collections::HashSet<&str> = (dagman(scenario))
        .map(|i| i.nodes.iter().filter(|n| n.done).map(|n| n.name.as_str()).collect())
        .unwrap_or_default();
    (scenario.workflow.jobs.iter())
        .map(|j| {
            if done.contains(j.name.as_str()) {
                State::Done
            } else if j.parents.is_empty() {
                State::Ready
            } else {
                State::NotReady
            }
        })
        .collect()
}

/// The `.dag`'s folder, its file name and its DAGMan settings.
fn dag_of(scenario: &Scenario) -> Option<(&Path, String, &DagmanInfo)> {
    let src = scenario.source.as_ref()?;
    let info = src.dagman.as_ref()?;
    let dir = src.path.parent().unwrap_or(Path::new("."));
    let file = (src.path.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Some((dir, file, info))
}

/// Draws the DAG into its DOT file (or, with `DONT-OVERWRITE`, the next
/// `file.N`, as DAGMan's `Dag::ChooseDotFileName` numbers them).
fn draw(
    scenario: &Scenario,
    dir: &Path,
    d: &DotFile,
    states: &[State],
    now: u64,
) -> std::io::Result<PathBuf> {
    let header = match &d.include {
        Some(h) => Some((h.as_str(), std::fs::read_to_string(dir.join(h))?)),
        None => None,
    };
    let text = dot(
        scenario,
        states,
        header.as_ref().map(|(f, t)| (*f, t.as_str())),
        now,
    );
    let path = if d.overwrite {
        dir.join(&d.file)
    } else {
        (0..)
            .map(|n| dir.join(format!("{}.{n}", d.file)))
            .find(|p| !p.exists())
            .unwrap_or_else(|| dir.join(&d.file))
    };
    std::fs::write(&path, text)?;
    Ok(path)
}

/// Writes what DAGMan writes as it starts, before any node runs: the DOT
/// file its `.dag` asks for. Returns the paths written.
pub fn write_at_start(scenario: &Scenario, epoch: SystemTime) -> std::io::Result<Vec<PathBuf>> {
    let Some((dir, _, info)) = dag_of(scenario) else {
        return Ok(Vec::new());
    };
    let Some(d) = &info.dot else {
        return Ok(Vec::new());
    };
    let path = draw(scenario, dir, d, &start_states(scenario), seconds(epoch, 0.0))?;
    Ok(vec![path])
}

/// One of the files a `.dag` run writes beside its DAG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DagFile {
    /// `JOBSTATE_LOG`.
    JobstateLog,
    /// `NODE_STATUS_FILE`.
    NodeStatus,
    /// `DOT` (at the end with `UPDATE`).
    Dot,
    /// A `SAVE_POINT_FILE` node's save file.
    Save,
    /// A rescue DAG: the DAG's own, or a failed sub-DAG run's.
    Rescue,
}

/// Writes every file a `.dag` run writes as it ends, as DAGMan does:
/// the files its `.dag` asks for (`JOBSTATE_LOG`, `NODE_STATUS_FILE`, and
/// `DOT` when it says `UPDATE`), the save files of its `SAVE_POINT_FILE`
/// nodes that started, and its rescue DAGs when they are due; relative to
/// its folder. Returns each path with what it is. A run of no `.dag`
/// writes nothing.
pub fn write_at_end(
    scenario: &Scenario,
    run: &RunResult,
    epoch: SystemTime,
) -> std::io::Result<Vec<(PathBuf, DagFile)>> {
    let Some((dir, dag_file, info)) = dag_of(scenario) else {
        return Ok(Vec::new());
    };
    let end = seconds(epoch, run.makespan);
    let mut written = Vec::new();
    let mut put = |file: &str, text: String, kind: DagFile| -> std::io::Result<()> {
        let path = dir.join(file);
        std::fs::write(&path, text)?;
        written.push((path, kind));
        Ok(())
    };
    if let Some(f) = &info.jobstate_log {
        put(f, jobstate_log(scenario, run, epoch), DagFile::JobstateLog)?;
    }
    if let Some(f) = &info.node_status_file {
        put(f, node_status_file(scenario, run, &dag_file, end), DagFile::NodeStatus)?;
    }
    if let Some(d) = info.dot.as_ref().filter(|d| d.update) {
        written.push((draw(scenario, dir, d, &end_states(run), end)?, DagFile::Dot));
    }
    written.extend(rescue_and_save_files(scenario, run, info)?);
    Ok(written)
}

/// The save files of the run's save points, and its rescue DAGs: each
/// failed sub-DAG run's, and the DAG's own when it is due. DAGMan writes
/// its rescue (`main_shutdown_rescue`, before FINAL runs) whenever the DAG
/// is to exit non-zero at that point: a node failed or never ran (a
/// cycle), or an ABORT-DAG-ON stopped it with a non-zero value; so even
/// when FINAL then succeeds. `RETURN 0` writes none.
fn rescue_and_save_files(
    scenario: &Scenario,
    run: &RunResult,
    info: &DagmanInfo,
) -> std::io::Result<Vec<(PathBuf, DagFile)>> {
    let Some(src) = scenario.source.as_ref() else {
        return Ok(Vec::new());
    };
    let wf = &scenario.workflow;
    let job_of: HashMap<&str, usize> = (wf.jobs.iter().enumerate())
        .map(|(j, job)| (job.name.as_str(), j))
        .collect();
    let failed: Vec<bool> = (run.records.jobs.iter())
        .map(|j| j.failure.is_some())
        .collect();
    let end = rescue::RunEnd {
        job_of: &job_of,
        done: &run.done,
        failed: &failed,
        subdag_runs: &run.subdag_runs_failed,
        children: &wf.children,
    };
    let mut written = Vec::new();
    if !run.save_points.is_empty() {
        let saved = rescue::write_save_points(&src.path, info, &end, &run.save_points)?;
        written.extend(saved.into_iter().map(|p| (p, DagFile::Save)));
    }
    let corrupt = run.live.as_ref().map_or(0, |l| l.corrupt_at_end);
    let complete = run.succeeded && corrupt == 0;
    let rescue_due = match run.dag_stop {
        Some(a) => !complete || a.dag_return != 0,
        None => !complete || run.done.iter().any(|&d| !d),
    };
    if rescue_due || !run.subdag_runs_failed.is_empty() {
        let rescues = rescue::write_for_run(&src.path, info, &end, rescue_due)?;
        written.extend(rescues.into_iter().map(|p| (p, DagFile::Rescue)));
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_writes_as_c_does() {
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
        // 2026-11-28T17:44:36Z
        assert_eq!(ctime(1_795_887_876), "Sat Nov 28 17:44:36 2026");
    }

    #[test]
    fn submit_values_are_read_as_dagman_reads_them() {
        let sub = "executable = x\n+pegasus_site = \"local\"\nqueue\n";
        assert_eq!(submit_value(sub, "+PEGASUS_SITE").as_deref(), Some("\"local\""));
        // The last one wins; a continued line is one line; a macro is none.
        let sub = "+pegasus_site = a\n+pegasus_site \\\n = b\n";
        assert_eq!(submit_value(sub, "+pegasus_site").as_deref(), Some("b"));
        assert_eq!(submit_value("+pegasus_site = $(s)\n", "+pegasus_site"), None);
        assert_eq!(submit_value("pegasus_site = a\n", "+pegasus_site"), None);
        assert_eq!(unquoted("\"local\""), "local");
    }

    #[test]
    fn classad_strings_are_escaped() {
        assert_eq!(classad_string("a \"b\" \\ c"), "\"a \\\"b\\\" \\\\ c\"");
    }
}
