//! The run as each DAGMan of it saw it, which every file it writes is
//! written from: its DAGMans (`Instance`, each run of one a `DagRun`), the
//! DAG's nodes by name, the HTCondor ids a schedd would have given its
//! submissions, and each node's events in DAGMan's order.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::super::{DagmanInfo, DotFile, NodeInfo};
use crate::core::Workflow;
use crate::core::records::{Attempt, Outcome};
use crate::core::result::RunResult;
use crate::core::{JobFailure, JobId, ScriptKind};

/// The HTCondor release whose DAGMan files gridbed writes as (the version
/// of its metrics file, and of HTCondor's tests it is checked against).
pub(super) const HTCONDOR_VERSION: &str = "25.14.0";

/// DAGMan's node states (`Node::status_t`), numbered as its status file
/// numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    NotReady = 0,
    Ready = 1,
    Done = 5,
    Error = 6,
    Futile = 7,
}

impl State {
    pub(super) fn name(self) -> &'static str {
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
pub(super) fn end_states(run: &RunResult, dag: &Dag) -> Vec<State> {
    let halted = run.dag_stop.is_some_and(|a| a.halted_at.is_some());
    (run.records.jobs.iter().zip(&run.done).enumerate())
        .map(|(j, (r, &done))| {
            if done {
                State::Done
            } else if r.failure.is_some() || halted && r.ready.is_some() && dag.has_pre(j) {
                // A halt left a node that was ready with a PRE script in
                // PRERUN, its script deferred: DAGMan's status file counts
                // it failed ("Was STATUS_PRERUN"), its macros do not.
                State::Error
            } else if r.blocked_by.is_some() {
                State::Futile
            } else {
                State::NotReady
            }
        })
        .collect()
}

/// Whether `j` is done by `t`: DONE in its DAG (or rescue), or its job
/// ended well by then (before it, with `before`).
pub(super) fn done_by(cx: &Ctx, j: JobId, t: f64, before: bool) -> bool {
    let name = cx.dag.workflow.jobs[j].name.as_str();
    let ended_well = |a: &Attempt| {
        a.outcome == Outcome::Ended && a.ended.is_some_and(|e| if before { e < t } else { e <= t })
    };
    cx.dag.node_info.get(name).is_some_and(|n| n.done)
        || cx.run.records.jobs[j].attempts.iter().any(ended_well)
}

/// Seconds since the Unix epoch of the run's time `t`.
pub(super) fn seconds(epoch: SystemTime, t: f64) -> u64 {
    unix_time(epoch, t) as u64
}

/// Seconds (with their fraction) since the Unix epoch of the run's time `t`.
pub(super) fn unix_time(epoch: SystemTime, t: f64) -> f64 {
    let base = epoch
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    base + t.max(0.0)
}

/// `secs` as C's `ctime` writes it (without its newline), in UTC:
/// `Sat Nov 28 17:44:36 2026`.
pub(super) fn ctime(secs: u64) -> String {
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

pub(super) use crate::core::clusters::Submission;

/// The HTCondor cluster number of each submission ([`crate::core::clusters`]).
pub(super) fn clusters(run: &RunResult) -> HashMap<Submission, u64> {
    let dagmans: Vec<f64> = run.subdag_spans.iter().map(|s| s.started).collect();
    crate::core::clusters::numbers(&run.records, &dagmans)
}

/// The value of `key` in a submit description, read as DAGMan's
/// `MultiLogFiles::loadValueFromSubFile` reads it: logical lines (a
/// trailing `\` continues one), `key = value` with `key` matched whatever
/// its case, the last one winning; a value with a macro (`$`) is none.
pub(super) fn submit_value(text: &str, key: &str) -> Option<String> {
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
pub(super) fn unquoted(v: &str) -> &str {
    let v = v.strip_prefix('"').unwrap_or(v);
    v.strip_suffix('"').unwrap_or(v)
}

/// A node's jobstate-log job tag (DAGMan's `Node::GetJobstateJobTag`): the
/// attribute its submit file's `+job_tag_name` names (`+pegasus_site` by
/// default), without quotes; `-` when the file sets none or cannot be read
/// (an inline description has no file).
pub(super) fn job_tag(dag_dir: &Path, node: &NodeInfo) -> String {
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
pub(super) struct Instance<'a> {
    /// Its `.dag`'s folder.
    pub(super) dir: PathBuf,
    /// Its `.dag`'s file name.
    pub(super) file: String,
    /// What its nodes' names start with in the run's DAG (`S+` for
    /// sub-DAG `S`; nothing for the top DAG).
    pub(super) prefix: String,
    /// Its `JOBSTATE_LOG`.
    pub(super) jobstate_log: Option<&'a str>,
    /// Its `NODE_STATUS_FILE`.
    pub(super) node_status_file: Option<&'a str>,
    /// Its `DOT`.
    pub(super) dot: Option<&'a DotFile>,
    /// Its own nodes in the DAG's order, SERVICE nodes included: not
    /// those of its sub-DAGs, nor the no-ops of their PRE scripts.
    pub(super) nodes: Vec<JobId>,
    /// Its DAGMan's runs, in order (the top DAG's: one).
    pub(super) runs: Vec<DagRun>,
    /// The sub-DAG it is (none: the top DAG).
    pub(super) subdag: Option<usize>,
}

/// One run of a DAGMan, from its start to its exit.
pub(super) struct DagRun {
    pub(super) start: f64,
    pub(super) end: f64,
    pub(super) exit: i32,
    /// Its DAGMan job's HTCondor id.
    pub(super) id: String,
    /// The DAG's state at its end, and DAGMan's note on it.
    pub(super) status: (State, &'static str),
    /// DAGMan's `DagStatus` at its end (`$DAG_STATUS`'s values: 0 well, 1
    /// error, 2 a node failed, 3 aborted, 4 removed, 5 a cycle).
    pub(super) dag_status: u8,
    /// The rescue DAG it started from (0: none).
    pub(super) rescue: u32,
    /// The cluster of the DAGMan that submitted it (none for the top
    /// DAG's).
    pub(super) parent: String,
}

/// The DAG a run's DAGMans run, as their files name it.
pub(super) struct Dag<'a> {
    /// The top `.dag`.
    pub(super) path: &'a Path,
    pub(super) workflow: &'a Workflow,
    pub(super) info: &'a DagmanInfo,
    /// The top DAG's folder, where DAGMan runs.
    pub(super) top_dir: &'a Path,
    pub(super) node_info: HashMap<&'a str, &'a NodeInfo>,
    pub(super) index: HashMap<&'a str, JobId>,
    /// The sub-DAG of each `SUBDAG EXTERNAL` node.
    pub(super) subdag_of: HashMap<JobId, usize>,
}

impl<'a> Dag<'a> {
    pub(super) fn new(path: &'a Path, info: &'a DagmanInfo, workflow: &'a Workflow) -> Self {
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
    pub(super) fn own_of(&self, scope: Option<&[String]>) -> Vec<JobId> {
        // Each sub-DAG's files ask for its own nodes: only its members are
        // looked at, so that a run of many sub-DAGs stays linear.
        let within: Option<std::collections::HashSet<&str>> =
            scope.map(|s| s.iter().map(String::as_str).collect());
        let inner: std::collections::HashSet<&str> = (self.info.subdags.iter())
            .filter(|d| within.as_ref().is_none_or(|s| s.contains(d.node.as_str())))
            .flat_map(|d| d.members.iter().chain(std::iter::once(&d.entry)))
            .map(String::as_str)
            .collect();
        let wf = self.workflow;
        let mut own: Vec<JobId> = match scope {
            None => (0..wf.jobs.len()).collect(),
            Some(s) => {
                let mut ids: Vec<JobId> = (s.iter())
                    .filter_map(|n| self.index.get(n.as_str()).copied())
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                ids
            }
        };
        own.retain(|&j| !inner.contains(wf.jobs[j].name.as_str()));
        own
    }

    /// The top DAG's DAGMan, its runs `runs`.
    pub(super) fn top(&self, runs: Vec<DagRun>) -> Instance<'a> {
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
            subdag: None,
        }
    }

    /// `job`'s name in its DAGMan.
    pub(super) fn local<'b>(&'b self, inst: &Instance, job: JobId) -> &'b str {
        let name = self.workflow.jobs[job].name.as_str();
        name.strip_prefix(inst.prefix.as_str()).unwrap_or(name)
    }

    /// Whether `job` is a FINAL node.
    pub(super) fn is_final(&self, job: JobId) -> bool {
        let name = self.workflow.jobs[job].name.as_str();
        self.node_info.get(name).is_some_and(|n| n.is_final)
    }

    /// Whether `job` is a SERVICE node (which DAGMan keeps apart).
    pub(super) fn is_service(&self, job: JobId) -> bool {
        let name = self.workflow.jobs[job].name.as_str();
        self.node_info.get(name).is_some_and(|n| n.is_service)
    }

    /// DAGMan's `DagStatus` after the stop `a`, which its
    /// `main_shutdown_rescue` forces: 4 for a removal; for an
    /// `ABORT-DAG-ON`, 3, or 0 when its `RETURN` is 0, unless DAGMan read
    /// a node's failure after (`failed_after`: a FINAL node's, or the
    /// removals' once a FINAL node runs), which makes it 2.
    pub(super) fn stop_status(&self, a: crate::core::DagAbort, failed_after: bool) -> u8 {
        let (Some(node), None) = (a.node, a.halted_at) else {
            return a.dag_status();
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

    /// Whether `job` has a PRE script.
    pub(super) fn has_pre(&self, job: JobId) -> bool {
        let name = self.workflow.jobs[job].name.as_str();
        (self.node_info.get(name)).is_some_and(|n| n.pre.is_some())
    }

    /// `inst`'s own nodes but its SERVICE nodes.
    pub(super) fn drawn(&self, inst: &Instance) -> Vec<JobId> {
        (inst.nodes.iter().copied())
            .filter(|&j| !self.is_service(j))
            .collect()
    }

    /// `job`'s parents in its DAG: a sub-DAG node's are its entry's.
    pub(super) fn parents(&self, job: JobId) -> &'a [JobId] {
        let wf = self.workflow;
        let from = (self.subdag_of.get(&job))
            .and_then(|&k| self.index.get(self.info.subdags[k].entry.as_str()))
            .map_or(job, |&e| e);
        &wf.jobs[from].parents
    }
}

/// A run's DAG and what its DAGMans' files are written from.
pub(super) struct Ctx<'a> {
    pub(super) dag: Dag<'a>,
    pub(super) run: &'a RunResult,
    /// Each node's state at the run's end.
    pub(super) ends: Vec<State>,
    /// The HTCondor ids, once a file names one.
    pub(super) cluster: std::cell::OnceCell<HashMap<Submission, u64>>,
}

impl<'a> Ctx<'a> {
    pub(super) fn new(path: &'a Path, info: &'a DagmanInfo, run: &'a RunResult) -> Self {
        let dag = Dag::new(path, info, &run.workflow);
        Ctx {
            ends: end_states(run, &dag),
            dag,
            run,
            cluster: std::cell::OnceCell::new(),
        }
    }

    /// The run's DAGMans: the top DAG's, then each sub-DAG's that ran.
    pub(super) fn instances(&self) -> Vec<Instance<'a>> {
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
                subdag: Some(k),
            });
        }
        all
    }

    /// The HTCondor id of submission `s` (`-` when it has none).
    pub(super) fn id(&self, s: Submission) -> String {
        self.cluster_of(s).map_or("-".into(), |c| format!("{c}.0"))
    }

    /// The HTCondor cluster of submission `s`, if it has one.
    pub(super) fn cluster_of(&self, s: Submission) -> Option<u64> {
        self.cluster
            .get_or_init(|| clusters(self.run))
            .get(&s)
            .copied()
    }
}

/// Something that happened to a node, as its DAGMan sees it: each file
/// that logs node events writes these in its own words.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum NodeEvent {
    /// Its PRE script started.
    PreStarted,
    /// Its PRE script exited with this status.
    PreEnded(i32),
    /// Its job (of this HTCondor id) was submitted.
    Submitted(String),
    /// Another proc of its job's cluster (of this HTCondor id) was
    /// submitted with the first.
    ProcSubmitted(String),
    /// Its job could not be submitted: the node's submissions so far
    /// (this one included), and its attempt's failed ones in a row.
    SubmitFailed {
        /// The node's submissions so far, this one included.
        tries: usize,
        /// Its attempt's failed submissions so far, this one included.
        in_row: usize,
        /// Why, on the try after which DAGMan gave up.
        why: Option<String>,
    },
    /// Its job started running.
    Executing(String),
    /// Its job ended with this exit.
    Terminated(String, i32),
    /// Its job was removed from the queue.
    Aborted(String),
    /// A proc (of this HTCondor id) of its job's cluster of several
    /// ended with this exit, or (none) was removed when another failed.
    ProcEnded(String, Option<i32>),
    /// Its job's cluster of several has no proc left: its exit, the
    /// first failing proc's or 0.
    ClusterEnded(i32),
    /// Its POST script started (the job's id).
    PostStarted(String),
    /// Its POST script exited with this status.
    PostEnded(String, i32),
}

/// A node's events: `(time, attempt, attempt's start, event)`, in the
/// order DAGMan sees them within each attempt.
pub(super) type NodeEvents = Vec<(f64, usize, f64, NodeEvent)>;

/// A node's events, whether it runs a job or a sub-DAG.
pub(super) fn node_events(cx: &Ctx, j: JobId) -> NodeEvents {
    match cx.dag.subdag_of.get(&j) {
        Some(&k) => subdag_node_events(cx, j, k),
        None => job_events(cx, j),
    }
}

/// The events of a node that runs a job: a cluster of several procs
/// ([`crate::core::records::Records::procs`]) has each proc's.
fn job_events(cx: &Ctx, j: JobId) -> NodeEvents {
    let mut events = NodeEvents::new();
    let mut tries = 0;
    for (k, a) in cx.run.records.jobs[j].attempts.iter().enumerate() {
        let mut ev = |t: f64, e: NodeEvent| events.push((t, k, a.prescript, e));
        let id = cx.id(Submission::Job(j, k));
        let cluster = cx.cluster_of(Submission::Job(j, k));
        let proc = |p: usize| cluster.map_or("-".into(), |c| format!("{c}.{p}"));
        let procs = cx.run.records.procs(j, k);
        let pre_failed = pre_events(a, &mut ev);
        let why = match &a.outcome {
            Outcome::Failed(JobFailure::SubmitFailed(why)) => Some(why),
            _ => None,
        };
        let failures: Vec<f64> = cx.run.records.submit_failures(j, k).collect();
        for (i, &t) in failures.iter().enumerate() {
            tries += 1;
            let last = i + 1 == failures.len();
            let why = why.filter(|_| last).cloned();
            ev(
                t,
                NodeEvent::SubmitFailed {
                    tries,
                    in_row: i + 1,
                    why,
                },
            );
        }
        tries += usize::from(a.submitted.is_some());
        if let Some(t) = a.submitted {
            ev(t, NodeEvent::Submitted(id.clone()));
            for p in 1..procs.map_or(1, <[_]>::len) {
                ev(t, NodeEvent::ProcSubmitted(proc(p)));
            }
        } else if matches!(a.outcome, Outcome::StagingFailed(_))
            && !pre_failed
            && let Some(t) = a.ended
        {
            let why = None;
            ev(
                t,
                NodeEvent::SubmitFailed {
                    tries: 0,
                    in_row: 0,
                    why,
                },
            );
        }
        // A proc removed when another failed had not run, as the
        // simulator runs them in turn.
        if let Some(t) = a.started {
            match procs {
                Some(exits) => (exits.iter().enumerate())
                    .filter(|(_, e)| e.is_some())
                    .for_each(|(p, _)| ev(t, NodeEvent::Executing(proc(p)))),
                None => ev(t, NodeEvent::Executing(id.clone())),
            }
        }
        if let Some(t) = a.finished {
            match (a.exit, procs) {
                (Some(status), Some(exits)) => {
                    for (p, &exit) in exits.iter().enumerate() {
                        ev(t, NodeEvent::ProcEnded(proc(p), exit));
                    }
                    ev(t, NodeEvent::ClusterEnded(status));
                }
                (Some(status), None) => ev(t, NodeEvent::Terminated(id.clone(), status)),
                (None, _) => ev(t, NodeEvent::Aborted(id.clone())),
            }
        } else if (a.outcome == Outcome::Killed
            || matches!(a.outcome, Outcome::Removed(_)) && a.submitted.is_some())
            && let Some(t) = a.ended
        {
            ev(t, NodeEvent::Aborted(id.clone()));
        }
        post_events(a, &id, &mut ev);
    }
    events
}

/// An attempt's PRE script events; returns whether it failed.
fn pre_events(a: &Attempt, ev: &mut impl FnMut(f64, NodeEvent)) -> bool {
    let mut failed = false;
    for s in a.scripts.iter().filter(|s| s.kind == ScriptKind::Pre) {
        ev(s.start, NodeEvent::PreStarted);
        if let (Some(end), Some(st)) = (s.end, s.status) {
            failed |= st != 0;
            ev(end, NodeEvent::PreEnded(st));
        }
    }
    failed
}

/// An attempt's POST script events, its job's HTCondor id `id`.
fn post_events(a: &Attempt, id: &str, ev: &mut impl FnMut(f64, NodeEvent)) {
    for s in a.scripts.iter().filter(|s| s.kind == ScriptKind::Post) {
        ev(s.start, NodeEvent::PostStarted(id.to_string()));
        if let (Some(end), Some(st)) = (s.end, s.status) {
            ev(end, NodeEvent::PostEnded(id.to_string(), st));
        }
    }
}

/// The events of the `SUBDAG EXTERNAL` node `node` (of sub-DAG `k`) as
/// the DAGMan above sees them: one job, its sub-DAG's DAGMan, submitted
/// and executing as its PRE script ends, terminated with its DAGMan's
/// exit. Each attempt's PRE script is its entry no-op's attempt's; each
/// attempt whose PRE script went well runs the sub-DAG once; each run
/// that ended is one attempt of the node's own no-op, with its POST
/// script.
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
        let mut ev = |t: f64, e: NodeEvent| events.push((t, n, a.prescript, e));
        pre_events(a, &mut ev);
        if a.outcome != Outcome::Ended {
            continue;
        }
        let Some((i, s)) = spans.next() else {
            continue; // PRE_SKIP: no run
        };
        let id = cx.id(Submission::Dagman(i));
        ev(s.started, NodeEvent::Submitted(id.clone()));
        ev(s.started, NodeEvent::Executing(id.clone()));
        match (s.ended, s.exit) {
            (Some(t), Some(exit)) => {
                ev(t, NodeEvent::Terminated(id.clone(), exit));
                if let Some(own) = ended.next() {
                    post_events(own, &id, &mut ev);
                }
            }
            // Removed with the DAG above.
            _ => ev(cx.run.makespan, NodeEvent::Aborted(id)),
        }
    }
    events
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
}
