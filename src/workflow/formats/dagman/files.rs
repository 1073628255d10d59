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
//!   The `DAGMAN_STARTED` and `DAGMAN_FINISHED` lines frame each run of
//!   its DAGMan. A `SUBDAG EXTERNAL` node is one job there (its DAGMan's);
//!   its nodes are in its own DAGMan's log.
//! * `NODE_STATUS_FILE file`: the New-ClassAd status file as DAGMan writes
//!   it at the DAG's end: `DagStatus` with its counts in DAGMan's order and
//!   comments, one `NodeStatus` per node of the DAG's own (a sub-DAG being
//!   one) with DAGMan's `StatusDetails` wording, and `StatusEnd`.
//! * `DOT file [UPDATE] [DONT-OVERWRITE] [INCLUDE header]`: the DAG's own
//!   nodes and edges for Graphviz, drawn as the run starts, and with
//!   `UPDATE` drawn again with the states at its end (DAGMan redraws it on
//!   each change of its counts; the last drawing is the end's).
//!
//! * `<dag>.metrics`, which every DAGMan writes as it exits, asked or not:
//!   its exit, `DagStatus`, rescue number and counts of nodes and jobs, as
//!   JSON (`DagmanMetricsV2::Report`).
//! * The rescue DAGs (`rescue001`, …; each failed sub-DAG run's too) and
//!   the save files of `SAVE_POINT_FILE` nodes, in DAGMan's rescue format
//!   (`workflow::formats::dagman::rescue`).
//!
//! Each DAGMan of the run writes its own, as its `.dag` asks: the top
//! DAG's and each sub-DAG's (`Instance`), about its own nodes.
//! [`write_at_start`] and [`write_at_end`] write them all: a library caller
//! that runs a `.dag` gets what `gridbed run` writes.
//!
//! Timestamps are whole seconds (the metrics file's, milliseconds) of the
//! run's nominal time after `epoch`;
//! the human-readable ones (DAGMan's `ctime`) are in UTC.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{DagmanInfo, DotFile, NodeInfo, rescue};
use crate::core::Workflow;
use crate::core::records::{Attempt, Outcome};
use crate::core::result::RunResult;
use crate::core::{JobFailure, JobId, ScriptKind};

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
    unix_time(epoch, t) as u64
}

/// Seconds (with their fraction) since the Unix epoch of the run's time `t`.
fn unix_time(epoch: SystemTime, t: f64) -> f64 {
    let base = epoch
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    base + t.max(0.0)
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
    let month = num(5..7)
        .and_then(|m| MONTHS.get(m.wrapping_sub(1)))
        .unwrap_or(&"Jan");
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

/// Something a schedd gave a cluster: a node's job attempt `(job,
/// attempt)`, or a sub-DAG's DAGMan job (the index of its run in
/// [`RunResult::subdag_spans`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Submission {
    /// A sub-DAG's DAGMan, submitted as its node's PRE script ended.
    Dagman(usize),
    /// A node's job.
    Job(JobId, usize),
}

/// The HTCondor cluster number of each submission: 1, 2, … in the order
/// they were submitted, as a schedd numbers its clusters (one schedd for
/// every DAGMan of the run). Submissions of one instant of the emulated
/// clock go in the order they started (a site's queue takes its jobs first
/// come, first served; a sub-DAG's DAGMan starts as it is submitted,
/// before the jobs it submits).
fn clusters(run: &RunResult) -> HashMap<Submission, u64> {
    let mut submitted: Vec<(f64, f64, Submission)> = Vec::new();
    for (j, r) in run.records.jobs.iter().enumerate() {
        for (k, a) in r.attempts.iter().enumerate() {
            if let Some(t) = a.submitted {
                let started = a.started.unwrap_or(f64::INFINITY);
                submitted.push((t, started, Submission::Job(j, k)));
            }
        }
    }
    for (i, s) in run.subdag_spans.iter().enumerate() {
        submitted.push((s.started, s.started, Submission::Dagman(i)));
    }
    submitted.sort_by(|a, b| {
        (a.0.total_cmp(&b.0))
            .then(a.1.total_cmp(&b.1))
            .then(a.2.cmp(&b.2))
    });
    (submitted.into_iter().enumerate())
        .map(|(n, (_, _, s))| (s, n as u64 + 1))
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

/// One DAGMan of the run, the top DAG's or a sub-DAG's: each writes its
/// own files about its own nodes, as each DAGMan process (HTCondor's `Dag`
/// object) does; a sub-DAG is one node of the DAGMan above it.
struct Instance<'a> {
    /// Its `.dag`'s folder.
    dir: PathBuf,
    /// Its `.dag`'s file name.
    file: String,
    /// What its nodes' names start with in the run's DAG (`S+` for
    /// sub-DAG `S`; nothing for the top DAG).
    prefix: String,
    /// Its `JOBSTATE_LOG`.
    jobstate_log: Option<&'a str>,
    /// Its `NODE_STATUS_FILE`.
    node_status_file: Option<&'a str>,
    /// Its `DOT`.
    dot: Option<&'a DotFile>,
    /// Its own nodes in the DAG's order, SERVICE nodes included: not
    /// those of its sub-DAGs, nor the no-ops of their PRE scripts.
    nodes: Vec<JobId>,
    /// Its DAGMan's runs, in order (the top DAG's: one).
    runs: Vec<DagRun>,
}

/// One run of a DAGMan, from its start to its exit.
struct DagRun {
    start: f64,
    end: f64,
    exit: i32,
    /// Its DAGMan job's HTCondor id.
    id: String,
    /// The DAG's state at its end, and DAGMan's note on it.
    status: (State, &'static str),
    /// DAGMan's `DagStatus` at its end (`$DAG_STATUS`'s values: 0 well, 1
    /// error, 2 a node failed, 3 aborted, 4 removed, 5 a cycle).
    dag_status: u8,
    /// The rescue DAG it started from (0: none).
    rescue: u32,
    /// The cluster of the DAGMan that submitted it (none for the top
    /// DAG's).
    parent: String,
}

/// The DAG a run's DAGMans run, as their files name it.
struct Dag<'a> {
    /// The top `.dag`.
    path: &'a Path,
    workflow: &'a Workflow,
    info: &'a DagmanInfo,
    /// The top DAG's folder, where DAGMan runs.
    top_dir: &'a Path,
    node_info: HashMap<&'a str, &'a NodeInfo>,
    index: HashMap<&'a str, JobId>,
    /// The sub-DAG of each `SUBDAG EXTERNAL` node.
    subdag_of: HashMap<JobId, usize>,
}

impl<'a> Dag<'a> {
    fn new(path: &'a Path, info: &'a DagmanInfo, workflow: &'a Workflow) -> Self {
        let index: HashMap<&str, JobId> = (workflow.jobs.iter().enumerate())
            .map(|(j, job)| (job.name.as_str(), j))
            .collect();
        let subdag_of = (info.subdags.iter().enumerate())
            .filter_map(|(k, d)| Some((*index.get(d.node.as_str())?, k)))
            .collect();
        Dag {
            path,
            workflow,
            info,
            top_dir: path.parent().unwrap_or(Path::new(".")),
            node_info: info.nodes.iter().map(|n| (n.name.as_str(), n)).collect(),
            index,
            subdag_of,
        }
    }

    /// The nodes of `scope` (every job, or a sub-DAG's members) that are
    /// its DAGMan's own: of no sub-DAG nested in it, and no PRE script's
    /// no-op of one.
    fn own_of(&self, scope: Option<&[String]>) -> Vec<JobId> {
        let inner: std::collections::HashSet<&str> = (self.info.subdags.iter())
            .filter(|d| scope.is_none_or(|s| s.contains(&d.node)))
            .flat_map(|d| d.members.iter().chain(std::iter::once(&d.entry)))
            .map(String::as_str)
            .collect();
        let wf = self.workflow;
        let scope: Option<std::collections::HashSet<&str>> =
            scope.map(|s| s.iter().map(String::as_str).collect());
        let within = |name: &str| scope.as_ref().is_none_or(|s| s.contains(name));
        (0..wf.jobs.len())
            .filter(|&j| {
                let name = wf.jobs[j].name.as_str();
                within(name) && !inner.contains(name)
            })
            .collect()
    }

    /// The top DAG's DAGMan, its runs `runs`.
    fn top(&self, runs: Vec<DagRun>) -> Instance<'a> {
        let info = self.info;
        Instance {
            dir: self.top_dir.to_path_buf(),
            file: (self.path.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            prefix: String::new(),
            jobstate_log: info.jobstate_log.as_deref(),
            node_status_file: info.node_status_file.as_deref(),
            dot: info.dot.as_ref(),
            nodes: self.own_of(None),
            runs,
        }
    }

    /// `job`'s name in its DAGMan.
    fn local<'b>(&'b self, inst: &Instance, job: JobId) -> &'b str {
        let name = self.workflow.jobs[job].name.as_str();
        name.strip_prefix(inst.prefix.as_str()).unwrap_or(name)
    }

    /// Whether `job` is a FINAL node.
    fn is_final(&self, job: JobId) -> bool {
        let name = self.workflow.jobs[job].name.as_str();
        self.node_info.get(name).is_some_and(|n| n.is_final)
    }

    /// Whether `job` is a SERVICE node (which DAGMan keeps apart).
    fn is_service(&self, job: JobId) -> bool {
        let name = self.workflow.jobs[job].name.as_str();
        self.node_info.get(name).is_some_and(|n| n.is_service)
    }

    /// DAGMan's `DagStatus` after the stop `a`, which its
    /// `main_shutdown_rescue` forces: 4 for a removal; for an
    /// `ABORT-DAG-ON`, 3, or 0 when its `RETURN` is 0, unless DAGMan read
    /// a node's failure after (`failed_after`: a FINAL node's, or the
    /// removals' once a FINAL node runs), which makes it 2.
    fn stop_status(&self, a: crate::core::DagAbort, failed_after: bool) -> u8 {
        let Some(node) = a.node else {
            return 4;
        };
        let name = self.workflow.jobs[node].name.as_str();
        let returns_zero =
            (self.node_info.get(name)).is_some_and(|n| n.abort_on.contains(&(a.status, Some(0))));
        match (returns_zero, failed_after) {
            (false, _) => 3,
            (true, false) => 0,
            (true, true) => 2,
        }
    }

    /// `inst`'s own nodes but its SERVICE nodes.
    fn drawn(&self, inst: &Instance) -> Vec<JobId> {
        (inst.nodes.iter().copied())
            .filter(|&j| !self.is_service(j))
            .collect()
    }

    /// `job`'s parents in its DAG: a sub-DAG node's are its entry's.
    fn parents(&self, job: JobId) -> &'a [JobId] {
        let wf = self.workflow;
        let from = (self.subdag_of.get(&job))
            .and_then(|&k| self.index.get(self.info.subdags[k].entry.as_str()))
            .map_or(job, |&e| e);
        &wf.jobs[from].parents
    }
}

/// A run's DAG and what its DAGMans' files are written from.
struct Ctx<'a> {
    dag: Dag<'a>,
    run: &'a RunResult,
    /// Each node's state at the run's end.
    ends: Vec<State>,
    /// The HTCondor ids, once a file names one.
    cluster: std::cell::OnceCell<HashMap<Submission, u64>>,
}

impl<'a> Ctx<'a> {
    fn new(path: &'a Path, info: &'a DagmanInfo, run: &'a RunResult) -> Self {
        Ctx {
            dag: Dag::new(path, info, &run.workflow),
            run,
            ends: end_states(run),
            cluster: std::cell::OnceCell::new(),
        }
    }

    /// The run's DAGMans: the top DAG's, then each sub-DAG's that ran.
    fn instances(&self) -> Vec<Instance<'a>> {
        let (run, dag, ends) = (self.run, &self.dag, &self.ends);
        let own = dag.own_of(None);
        // A node's failure (a SERVICE node's too) makes it 2, even when a
        // FINAL node then ends well; a stop forces its own. Nothing failed,
        // yet not all ran: a cycle (`Dag::DoneCycle`).
        let failed = |nodes: &[JobId]| nodes.iter().any(|&j| ends[j] == State::Error);
        let dag_status = match run.dag_stop {
            Some(a) => {
                let removed = |&j: &JobId| {
                    (run.records.jobs[j].attempts.last())
                        .is_some_and(|a| matches!(a.outcome, Outcome::Removed(_)))
                };
                let has_final = own.iter().any(|&j| dag.is_final(j));
                let failed_after = run.dag_exit != 0 || has_final && own.iter().any(removed);
                dag.stop_status(a, failed_after)
            }
            None if failed(&own) => 2,
            None if run.succeeded => 0,
            None => 5,
        };
        // The status file's note: DAGMan's `_dagStatus` as the DAG ended.
        let status = match (run.succeeded, dag_status) {
            (true, _) => (State::Done, "success"),
            (false, 3) => (State::Error, "aborted"),
            (false, 4) => (State::Error, "removed"),
            (false, 5) => (State::Error, "cycle"),
            (false, _) => (State::Error, "failed"),
        };
        let mut all = vec![dag.top(vec![DagRun {
            start: 0.0,
            end: run.makespan,
            exit: run.dag_exit,
            // gridbed's own run of the top DAG has no schedd id.
            id: "0.0".into(),
            status,
            dag_status,
            rescue: dag.info.rescue_number,
            parent: String::new(),
        }])];
        let last_aborted = |k: usize| {
            (run.subdag_spans.iter().rev())
                .find(|s| s.subdag == k)
                .is_some_and(|s| s.aborted)
        };
        for (k, d) in dag.info.subdags.iter().enumerate() {
            // Each run that failed left a rescue DAG the next starts from.
            let mut rescue = d.rescue_number;
            let outer = (dag.info.subdags.iter()).position(|o| o.members.contains(&d.node));
            // The run of the DAGMan above that submitted it.
            let parent = |start: f64| match outer {
                None => "0".to_string(),
                Some(o) => (run.subdag_spans.iter().enumerate())
                    .rfind(|(_, s)| s.subdag == o && s.started <= start)
                    .and_then(|(i, _)| self.cluster_of(Submission::Dagman(i)))
                    .map_or(String::new(), |c| c.to_string()),
            };
            let mut runs: Vec<DagRun> = (run.subdag_spans.iter().enumerate())
                .filter(|(_, s)| s.subdag == k)
                .map(|(i, s)| {
                    let exit = s.exit.unwrap_or(2);
                    let (status, dag_status) = match s.ended {
                        _ if exit == 0 => ((State::Done, "success"), 0),
                        _ if s.aborted => ((State::Error, "aborted"), 3),
                        None => ((State::Error, "removed"), 4),
                        Some(_) => ((State::Error, "failed"), 2),
                    };
                    let run = DagRun {
                        start: s.started,
                        end: s.ended.unwrap_or(run.makespan),
                        exit,
                        id: self.id(Submission::Dagman(i)),
                        status,
                        dag_status,
                        rescue,
                        parent: parent(s.started),
                    };
                    rescue += u32::from(exit != 0 && s.ended.is_some());
                    run
                })
                .collect();
            let nodes = dag.own_of(Some(&d.members));
            match runs.last_mut() {
                None => continue,
                Some(last) if last.dag_status == 0 && failed(&nodes) && !last_aborted(k) => {
                    last.dag_status = 2
                }
                Some(_) => {}
            }
            all.push(Instance {
                dir: (d.file.parent()).unwrap_or(Path::new(".")).to_path_buf(),
                file: (d.file.file_name())
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                prefix: format!("{}+", d.node),
                jobstate_log: d.jobstate_log.as_deref(),
                node_status_file: d.node_status_file.as_deref(),
                dot: d.dot.as_ref(),
                nodes,
                runs,
            });
        }
        all
    }

    /// The HTCondor id of submission `s` (`-` when it has none).
    fn id(&self, s: Submission) -> String {
        self.cluster_of(s).map_or("-".into(), |c| format!("{c}.0"))
    }

    /// The HTCondor cluster of submission `s`, if it has one.
    fn cluster_of(&self, s: Submission) -> Option<u64> {
        self.cluster
            .get_or_init(|| clusters(self.run))
            .get(&s)
            .copied()
    }
}

/// A node's jobstate-log events: `(time, attempt, attempt's start, text)`,
/// in the order DAGMan sees them within each attempt.
type NodeEvents = Vec<(f64, usize, f64, String)>;

/// The jobstate-log events of a node that runs a job.
fn job_events(cx: &Ctx, j: JobId) -> NodeEvents {
    let mut events = NodeEvents::new();
    for (k, a) in cx.run.records.jobs[j].attempts.iter().enumerate() {
        let mut ev = |t: f64, text: String| events.push((t, k, a.prescript, text));
        let id = cx.id(Submission::Job(j, k));
        let pre_failed = pre_events(a, &mut ev);
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
        post_events(a, &id, &mut ev);
    }
    events
}

/// An attempt's PRE script events; returns whether it failed.
fn pre_events(a: &Attempt, ev: &mut impl FnMut(f64, String)) -> bool {
    let mut failed = false;
    for s in a.scripts.iter().filter(|s| s.kind == ScriptKind::Pre) {
        ev(s.start, "PRE_SCRIPT_STARTED -".into());
        if let (Some(end), Some(st)) = (s.end, s.status) {
            failed |= st != 0;
            let what = if st == 0 { "SUCCESS" } else { "FAILURE" };
            ev(end, format!("PRE_SCRIPT_{what} -"));
        }
    }
    failed
}

/// An attempt's POST script events, its job's HTCondor id `id`.
fn post_events(a: &Attempt, id: &str, ev: &mut impl FnMut(f64, String)) {
    for s in a.scripts.iter().filter(|s| s.kind == ScriptKind::Post) {
        ev(s.start, format!("POST_SCRIPT_STARTED {id}"));
        if let (Some(end), Some(st)) = (s.end, s.status) {
            ev(end, format!("POST_SCRIPT_TERMINATED {id}"));
            let what = if st == 0 { "SUCCESS" } else { "FAILURE" };
            ev(end, format!("POST_SCRIPT_{what} {id}"));
        }
    }
}

/// The jobstate-log events of the `SUBDAG EXTERNAL` node `node` (of
/// sub-DAG `k`) as the DAGMan above writes them: one job, its sub-DAG's
/// DAGMan, submitted and executing as its PRE script ends, terminated
/// with its DAGMan's exit. Each attempt's PRE script is its entry no-op's
/// attempt's; each attempt whose PRE script went well runs the sub-DAG
/// once; each run that ended is one attempt of the node's own no-op, with
/// its POST script.
fn subdag_node_events(cx: &Ctx, node: JobId, k: usize) -> NodeEvents {
    let dag = &cx.dag;
    let Some(&entry) = dag.index.get(dag.info.subdags[k].entry.as_str()) else {
        return NodeEvents::new();
    };
    let jobs = &cx.run.records.jobs;
    let mut spans = (cx.run.subdag_spans.iter().enumerate()).filter(|(_, s)| s.subdag == k);
    let mut ended = jobs[node].attempts.iter();
    let mut events = NodeEvents::new();
    for (n, a) in jobs[entry].attempts.iter().enumerate() {
        let mut ev = |t: f64, text: String| events.push((t, n, a.prescript, text));
        pre_events(a, &mut ev);
        if a.outcome != Outcome::Ended {
            continue;
        }
        let Some((i, s)) = spans.next() else {
            continue; // PRE_SKIP: no run
        };
        let id = cx.id(Submission::Dagman(i));
        ev(s.started, format!("SUBMIT {id}"));
        ev(s.started, format!("EXECUTE {id}"));
        match (s.ended, s.exit) {
            (Some(t), Some(exit)) => {
                ev(t, format!("JOB_TERMINATED {id}"));
                let what = if exit == 0 { "SUCCESS" } else { "FAILURE" };
                ev(t, format!("JOB_{what} {exit}"));
                if let Some(own) = ended.next() {
                    post_events(own, &id, &mut ev);
                }
            }
            // Removed with the DAG above.
            _ => {
                ev(cx.run.makespan, format!("JOB_ABORTED {id}"));
                ev(cx.run.makespan, "JOB_FAILURE -1002".into());
            }
        }
    }
    events
}

/// `inst`'s jobstate log: for each run of its DAGMan, `DAGMAN_STARTED`,
/// its own nodes' events of that run in time order, `DAGMAN_FINISHED`
/// (DAGMan appends each run's to the file).
fn jobstate_log(cx: &Ctx, inst: &Instance, epoch: SystemTime) -> String {
    // (run, time, order, job, attempt, text)
    let mut events: Vec<(usize, f64, usize, JobId, usize, String)> = Vec::new();
    for &j in &inst.nodes {
        let evs = match cx.dag.subdag_of.get(&j) {
            Some(&k) => subdag_node_events(cx, j, k),
            None => job_events(cx, j),
        };
        for (t, k, start, text) in evs {
            // The run of the attempt: the last one started by its start.
            let r = (inst.runs.iter())
                .rposition(|r| r.start <= start)
                .unwrap_or(0);
            events.push((r, t, events.len(), j, k, text));
        }
    }
    events.sort_by(|a, b| {
        (a.0.cmp(&b.0))
            .then(a.1.total_cmp(&b.1))
            .then(a.2.cmp(&b.2))
    });
    let tag_of: HashMap<JobId, String> = (inst.nodes.iter())
        .map(|&j| {
            let name = cx.dag.workflow.jobs[j].name.as_str();
            let tag = cx
                .dag
                .node_info
                .get(name)
                .map_or("-".into(), |n| job_tag(cx.dag.top_dir, n));
            (j, tag)
        })
        .collect();
    let mut out = String::new();
    let mut events = events.into_iter().peekable();
    for (r, run) in inst.runs.iter().enumerate() {
        let _ = writeln!(
            out,
            "{} INTERNAL *** DAGMAN_STARTED {} ***",
            seconds(epoch, run.start),
            run.id
        );
        // Each DAGMan numbers its node attempts as they first appear.
        let mut seq = HashMap::new();
        while let Some((_, t, _, j, k, text)) = events.next_if(|e| e.0 == r) {
            let next = seq.len() + 1;
            let n = *seq.entry((j, k)).or_insert(next);
            let tag = tag_of.get(&j).map_or("-", String::as_str);
            let name = cx.dag.local(inst, j);
            let _ = writeln!(out, "{} {name} {text} {tag} - {n}", seconds(epoch, t));
        }
        let _ = writeln!(
            out,
            "{} INTERNAL *** DAGMAN_FINISHED {} ***",
            seconds(epoch, run.end),
            run.exit
        );
    }
    out
}

/// `inst`'s node status file at the end of its last run, as DAGMan's
/// `Dag::DumpNodeStatus` writes it: its own nodes (a sub-DAG is one node;
/// SERVICE nodes are kept apart).
fn node_status_file(cx: &Ctx, inst: &Instance, epoch: SystemTime) -> String {
    let (wf, run, all) = (&cx.dag.workflow, cx.run, &cx.ends);
    let own = cx.dag.drawn(inst);
    let has_final = own.iter().any(|&j| cx.dag.is_final(j));
    let last = inst.runs.last().expect("a DAGMan that ran");
    let now = seconds(epoch, last.end);
    let states: Vec<State> = own.iter().map(|&j| all[j]).collect();
    let count = |s: State| states.iter().filter(|&&x| x == s).count();
    let (dag_status, note) = last.status;
    let mut out = String::new();
    let _ = writeln!(out, "[\n  Type = \"DagStatus\";");
    let _ = writeln!(
        out,
        "  DagFiles = {{\n    {}\n  }};",
        classad_string(&inst.file)
    );
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
        let node = cx.dag.node_info.get(job.name.as_str());
        let retry_max = node.map_or(0, |n| n.retry);
        let last = r.attempts.len().checked_sub(1);
        let details = match s {
            State::Error => last.map_or_else(String::new, |k| {
                let cluster = cx.cluster_of(Submission::Job(j, k));
                error_text(&r.attempts[k], cluster, (retry_max, k), has_final)
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
            classad_string(cx.dag.local(inst, j)),
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

/// `inst`'s metrics file at the end of its last run, as DAGMan writes it
/// as it exits (`DagmanMetricsV2::Report`, its default
/// `DAGMAN_METRICS_FILE_VERSION` 2), JSON:
///
/// * its nodes by kind (a SUBDAG node is a `dag_node`, SERVICE nodes
///   apart): how many, how many failed and succeeded for good, as DAGMan
///   counts them with `NodeFinished`: a node DONE from the start counts
///   as succeeded; a node whose job a stop removed counts as failed only
///   when a FINAL node ran (DAGMan exits at once otherwise, before it
///   reads the removals); a SERVICE node removed at the end counts as
///   succeeded when the DAG did; a futile or unready node counts in none;
/// * the node jobs it submitted, and of those how many left the queue
///   (ended or removed; a NOOP node's job counts, as DAGMan submits it);
/// * its exit value and `DagStatus`, the rescue DAG it ran from, its id
///   and its parent DAGMan's (gridbed's top DAG has cluster 0), its start
///   and end in seconds since the Unix epoch.
fn metrics_file(cx: &Ctx, inst: &Instance, epoch: SystemTime) -> String {
    let (dag, run) = (&cx.dag, cx.run);
    let last = inst.runs.last().expect("a DAGMan that ran");
    let has_final = inst.nodes.iter().any(|&j| dag.is_final(j));
    let ran_from = |a: &Attempt| a.prescript >= last.start;
    // [normal, sub-DAG, SERVICE] × [total, failed, succeeded].
    let mut nodes = [[0usize; 3]; 3];
    let (mut submitted, mut left) = (0, 0);
    let mut provisioners = 0;
    for &j in &inst.nodes {
        let info = dag.node_info.get(dag.workflow.jobs[j].name.as_str());
        provisioners += usize::from(info.is_some_and(|n| n.is_provisioner));
        let attempts = &run.records.jobs[j].attempts;
        let removed = (attempts.last()).is_some_and(|a| matches!(a.outcome, Outcome::Removed(_)));
        let kind = match (dag.is_service(j), dag.subdag_of.get(&j)) {
            (true, _) => 2,
            (false, Some(_)) => 1,
            (false, None) => 0,
        };
        nodes[kind][0] += 1;
        match cx.ends[j] {
            State::Done => nodes[kind][2] += 1,
            State::Error if kind == 2 && removed => nodes[kind][2] += usize::from(last.exit == 0),
            State::Error if !removed || has_final => nodes[kind][1] += 1,
            _ => {}
        }
        if let Some(&k) = dag.subdag_of.get(&j) {
            let runs =
                (run.subdag_spans.iter()).filter(|s| s.subdag == k && s.started >= last.start);
            for s in runs {
                submitted += 1;
                left += usize::from(s.ended.is_some());
            }
            continue;
        }
        let noop = info.is_some_and(|n| n.noop);
        for a in attempts.iter().filter(|a| ran_from(a)) {
            let pre_failed = (a.scripts.iter())
                .any(|s| s.kind == ScriptKind::Pre && s.status.is_some_and(|st| st != 0));
            if noop {
                let ran =
                    !pre_failed && !matches!(a.outcome, Outcome::Pending | Outcome::Removed(_));
                submitted += usize::from(ran);
                left += usize::from(ran);
                continue;
            }
            submitted += usize::from(a.submitted.is_some());
            let out = match a.outcome {
                Outcome::Killed => true,
                Outcome::Removed(_) => a.submitted.is_some() && has_final,
                _ => false,
            };
            left += usize::from(a.finished.is_some() || out && a.ended.is_some());
        }
    }
    let (start, end) = (unix_time(epoch, last.start), unix_time(epoch, last.end));
    let dagman_id = last.id.split('.').next().unwrap_or("-1");
    let [normal, subdag, service] = nodes;
    let mut out = String::new();
    let mut field = |name: &str, value: String| {
        let _ = writeln!(out, "    \"{name}\":{value},");
    };
    field("client", "\"condor_dagman\"".into());
    field("version", format!("\"{HTCONDOR_VERSION}\""));
    field("type", "\"metrics\"".into());
    field("metrics_version", "2".into());
    field("start_time", format!("{start:.3}"));
    field("end_time", format!("{end:.3}"));
    field("duration", format!("{:.3}", end - start));
    field("exitcode", last.exit.to_string());
    field("dagman_id", format!("\"{dagman_id}\""));
    field("parent_dagman_id", format!("\"{}\"", last.parent));
    field("rescue_dag_number", last.rescue.to_string());
    field("has_final_node", has_final.to_string());
    for (prefix, [total, failed, succeeded]) in [("", normal), ("dag_", subdag)] {
        field(&format!("{prefix}nodes"), total.to_string());
        field(&format!("{prefix}nodes_failed"), failed.to_string());
        field(&format!("{prefix}nodes_succeeded"), succeeded.to_string());
    }
    field("provisioner_nodes", provisioners.min(1).to_string());
    field("service_nodes", service[0].to_string());
    field("service_nodes_failed", service[1].to_string());
    field("service_nodes_succeeded", service[2].to_string());
    let sum = |i: usize| normal[i] + subdag[i] + service[i];
    field("total_nodes", sum(0).to_string());
    field("total_nodes_run", (sum(1) + sum(2)).to_string());
    field("jobs_submitted", submitted.to_string());
    field("jobs_succeeded", left.to_string());
    field("jobs_failed", (submitted - left).to_string());
    format!("{{\n{out}    \"DagStatus\":{}\n}}\n", last.dag_status)
}

/// The HTCondor release whose DAGMan files gridbed writes as (the version
/// of its metrics file, and of HTCondor's tests it is checked against).
const HTCONDOR_VERSION: &str = "25.14.0";

/// `inst`'s DAG for Graphviz as DAGMan's `Dag::DumpDotFile` draws it at
/// `now`, each node in `states` (by job), shaped and labelled by its
/// state; `header` (DOT's `INCLUDE`, read from `include`) goes first.
fn dot(
    dag: &Dag,
    inst: &Instance,
    states: &[State],
    include: Option<(&str, &str)>,
    now: u64,
) -> String {
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
    let own = dag.drawn(inst);
    for &j in &own {
        let name = dag.local(inst, j);
        let look = match states[j] {
            State::Done => "shape=ellipse label=\"{} (Done)\" style=bold",
            State::Error => "shape=box label=\"{} (E)\"",
            _ => "shape=ellipse label=\"{} (I)\"",
        };
        let _ = writeln!(out, "    \"{name}\" [{}];", look.replace("{}", name));
    }
    out.push('\n');
    // Each parent's children, in the order of the nodes.
    let mut children: HashMap<JobId, Vec<JobId>> = HashMap::new();
    for &j in &own {
        for &p in dag.parents(j) {
            children.entry(p).or_default().push(j);
        }
    }
    for &p in &own {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or_default() {
            let (p, c) = (dag.local(inst, p), dag.local(inst, c));
            let _ = writeln!(out, "    \"{p}\" -> \"{c}\";");
        }
    }
    out.push_str("}\n");
    out
}

/// Each own node of `inst`'s state at `t`, as its DAGMan starts a run
/// then: those the DAG marks `DONE` (or its rescue does) or that ended
/// well by then (in `run`, once there is one) are done; those whose
/// parents in it are all done are ready; the others not yet.
fn states_at(dag: &Dag, run: Option<&RunResult>, inst: &Instance, t: f64) -> Vec<State> {
    let wf = dag.workflow;
    let done = |j: JobId| {
        let name = wf.jobs[j].name.as_str();
        let ended_well =
            |a: &Attempt| a.outcome == Outcome::Ended && a.ended.is_some_and(|e| e <= t);
        dag.node_info.get(name).is_some_and(|n| n.done)
            || run.is_some_and(|r| r.records.jobs[j].attempts.iter().any(ended_well))
    };
    let own: std::collections::HashSet<JobId> = inst.nodes.iter().copied().collect();
    let mut states = vec![State::NotReady; wf.jobs.len()];
    for &j in &inst.nodes {
        states[j] = if done(j) {
            State::Done
        } else if dag.parents(j).iter().all(|&p| !own.contains(&p) || done(p)) {
            State::Ready
        } else {
            State::NotReady
        };
    }
    states
}

/// Draws `inst`'s DAG into its DOT file `d` (or, with `DONT-OVERWRITE`,
/// the next `file.N`, as DAGMan's `Dag::ChooseDotFileName` numbers them).
fn draw(
    dag: &Dag,
    inst: &Instance,
    d: &DotFile,
    states: &[State],
    now: u64,
) -> std::io::Result<PathBuf> {
    let dir = &inst.dir;
    let header = match &d.include {
        Some(h) => Some((h.as_str(), std::fs::read_to_string(dir.join(h))?)),
        None => None,
    };
    let include = header.as_ref().map(|(f, t)| (*f, t.as_str()));
    let text = dot(dag, inst, states, include, now);
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
/// file the top `.dag` at `path`, with settings `info`, asks for, drawing
/// `workflow`, the DAG made of it. Returns the paths written.
pub fn write_at_start(
    path: &Path,
    info: &DagmanInfo,
    workflow: &Workflow,
    epoch: SystemTime,
) -> std::io::Result<Vec<PathBuf>> {
    let dag = Dag::new(path, info, workflow);
    let top = dag.top(Vec::new());
    let Some(d) = top.dot else {
        return Ok(Vec::new());
    };
    let states = states_at(&dag, None, &top, 0.0);
    let path = draw(&dag, &top, d, &states, seconds(epoch, 0.0))?;
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
    /// `<dag>.metrics`, which every DAGMan writes as it exits.
    Metrics,
}

/// Writes every file a `.dag` run writes as it ends, as its DAGMans do:
/// the files each DAGMan's `.dag` asks for (`JOBSTATE_LOG`,
/// `NODE_STATUS_FILE`, `DOT`: a sub-DAG's drawn as each of its runs
/// starts, every DAG's again at its end when it says `UPDATE`), each
/// DAGMan's `<dag>.metrics`, the save
/// files of its `SAVE_POINT_FILE` nodes that started, and its rescue DAGs
/// when they are due; each relative to its `.dag`'s folder. `run` ran the
/// `.dag` at `path`, whose settings as the run left them (its sub-DAGs read
/// as it went included) are `info`. Returns each path with what it is.
pub fn write_at_end(
    path: &Path,
    info: &DagmanInfo,
    run: &RunResult,
    epoch: SystemTime,
) -> std::io::Result<Vec<(PathBuf, DagFile)>> {
    let cx = Ctx::new(path, info, run);
    let mut written = Vec::new();
    for (n, inst) in cx.instances().iter().enumerate() {
        let mut put = |file: &str, text: String, kind: DagFile| -> std::io::Result<()> {
            let path = inst.dir.join(file);
            std::fs::write(&path, text)?;
            written.push((path, kind));
            Ok(())
        };
        if let Some(f) = inst.jobstate_log {
            put(f, jobstate_log(&cx, inst, epoch), DagFile::JobstateLog)?;
        }
        if let Some(f) = inst.node_status_file {
            put(f, node_status_file(&cx, inst, epoch), DagFile::NodeStatus)?;
        }
        let metrics = format!("{}.metrics", inst.file);
        put(&metrics, metrics_file(&cx, inst, epoch), DagFile::Metrics)?;
        let Some(d) = inst.dot else {
            continue;
        };
        for (r, dag_run) in inst.runs.iter().enumerate() {
            // The top DAG's start was drawn as it started.
            if n > 0 {
                let states = states_at(&cx.dag, Some(run), inst, dag_run.start);
                let at = seconds(epoch, dag_run.start);
                written.push((draw(&cx.dag, inst, d, &states, at)?, DagFile::Dot));
            }
            if d.update {
                // Its last drawing is its end's; a run before the last ended
                // with the states its nodes had then.
                let states = match r + 1 == inst.runs.len() {
                    true => cx.ends.clone(),
                    false => states_at(&cx.dag, Some(run), inst, dag_run.end),
                };
                let at = seconds(epoch, dag_run.end);
                written.push((draw(&cx.dag, inst, d, &states, at)?, DagFile::Dot));
            }
        }
    }
    written.extend(rescue_and_save_files(&cx)?);
    Ok(written)
}

/// The save files of the run's save points, and its rescue DAGs: each
/// failed sub-DAG run's, and the DAG's own when it is due. DAGMan writes
/// its rescue (`main_shutdown_rescue`, before FINAL runs) whenever the DAG
/// is to exit non-zero at that point: one of its nodes failed or never ran
/// (a cycle), or an ABORT-DAG-ON stopped it with a non-zero value; so even
/// when FINAL then succeeds. `RETURN 0` writes none.
fn rescue_and_save_files(cx: &Ctx) -> std::io::Result<Vec<(PathBuf, DagFile)>> {
    let (wf, run, info) = (&cx.dag.workflow, cx.run, cx.dag.info);
    let failed: Vec<bool> = (run.records.jobs.iter())
        .map(|j| j.failure.is_some())
        .collect();
    let end = rescue::RunEnd {
        job_of: &cx.dag.index,
        done: &run.done,
        failed: &failed,
        subdag_runs: &run.subdag_runs_failed,
        children: &wf.children,
    };
    let mut written = Vec::new();
    if !run.save_points.is_empty() {
        let saved = rescue::write_save_points(cx.dag.path, info, &end, &run.save_points)?;
        written.extend(saved.into_iter().map(|p| (p, DagFile::Save)));
    }
    let corrupt = run.live.as_ref().map_or(0, |l| l.corrupt_at_end);
    let complete = run.succeeded && corrupt == 0;
    // The top DAG's own nodes: its sub-DAGs' are their DAGMans' business.
    let all_done = || {
        cx.dag
            .own_of(None)
            .iter()
            .all(|&j| run.done[j] || cx.dag.is_service(j))
    };
    let rescue_due = match run.dag_stop {
        Some(a) => !complete || a.dag_return != 0,
        None => !complete || !all_done(),
    };
    if rescue_due || !run.subdag_runs_failed.is_empty() {
        let rescues = rescue::write_for_run(cx.dag.path, info, &end, rescue_due)?;
        written.extend(rescues.into_iter().map(|p| (p, DagFile::Rescue)));
    }
    Ok(written)
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
        assert_eq!(
            submit_value(sub, "+PEGASUS_SITE").as_deref(),
            Some("\"local\"")
        );
        // The last one wins; a continued line is one line; a macro is none.
        let sub = "+pegasus_site = a\n+pegasus_site \\\n = b\n";
        assert_eq!(submit_value(sub, "+pegasus_site").as_deref(), Some("b"));
        assert_eq!(
            submit_value("+pegasus_site = $(s)\n", "+pegasus_site"),
            None
        );
        assert_eq!(submit_value("pegasus_site = a\n", "+pegasus_site"), None);
        assert_eq!(unquoted("\"local\""), "local");
    }

    #[test]
    fn classad_strings_are_escaped() {
        assert_eq!(classad_string("a \"b\" \\ c"), "\"a \\\"b\\\" \\\\ c\"");
    }
}
