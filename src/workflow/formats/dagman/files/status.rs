//! `NODE_STATUS_FILE`: the New-ClassAd status file as DAGMan's
//! `Dag::DumpNodeStatus` writes it.

use std::fmt::Write as _;
use std::time::SystemTime;

use super::view::*;
use crate::core::records::{Attempt, Outcome};
use crate::core::{JobFailure, ScriptKind};

/// `inst`'s node status file at the end of its last run, as DAGMan's
/// `Dag::DumpNodeStatus` writes it: its own nodes (a sub-DAG is one node;
/// SERVICE nodes are kept apart).
pub(super) fn node_status_file(cx: &Ctx, inst: &Instance, epoch: SystemTime) -> String {
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
            State::Error => match last {
                Some(k) => {
                    let cluster = cx.cluster_of(Submission::Job(j, k));
                    error_text(&r.attempts[k], cluster, (retry_max, k), has_final)
                }
                // Its PRE script deferred by a halt (see `end_states`).
                None if cx.run.dag_stop.is_some_and(|a| a.halted_at.is_some()) => {
                    "Was STATUS_PRERUN".into()
                }
                None => String::new(),
            },
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
            Outcome::StagingFailed(_) | Outcome::Failed(JobFailure::SubmitFailed(_)) => {
                "Job submit failed".into()
            }
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
    fn classad_strings_are_escaped() {
        assert_eq!(classad_string("a \"b\" \\ c"), "\"a \\\"b\\\" \\\\ c\"");
    }
}
