//! `JOBSTATE_LOG`: one line per node event, as DAGMan's `JobstateLog`
//! writes it.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::SystemTime;

use super::view::*;
use crate::core::JobId;

/// `inst`'s jobstate log: for each run of its DAGMan, `DAGMAN_STARTED`,
/// its own nodes' events of that run in time order, `DAGMAN_FINISHED`
/// (DAGMan appends each run's to the file).
pub(super) fn jobstate_log(cx: &Ctx, inst: &Instance, epoch: SystemTime) -> String {
    // (run, time, order, job, attempt, text)
    let mut events: Vec<(usize, f64, usize, JobId, usize, String)> = Vec::new();
    for &j in &inst.nodes {
        for (t, k, start, event) in node_events(cx, j) {
            // The run of the attempt: the last one started by its start.
            let r = (inst.runs.iter())
                .rposition(|r| r.start <= start)
                .unwrap_or(0);
            for text in words(&event) {
                events.push((r, t, events.len(), j, k, text));
            }
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
    let mut last = 0;
    for (r, run) in inst.runs.iter().enumerate() {
        let _ = writeln!(
            out,
            "{} INTERNAL *** DAGMAN_STARTED {} ***",
            seconds(epoch, run.start),
            run.id
        );
        // Each DAGMan numbers its node attempts as they first appear; one
        // run from a rescue DAG goes on from the file's last number
        // (`JobstateLog::InitializeRescue`).
        let mut seq = HashMap::new();
        let base = if run.rescue > 0 { last } else { 0 };
        while let Some((_, t, _, j, k, text)) = events.next_if(|e| e.0 == r) {
            let next = base + seq.len() + 1;
            let n = *seq.entry((j, k)).or_insert(next);
            last = last.max(n);
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

/// `event` in the jobstate log's words: one line or two.
fn words(event: &NodeEvent) -> Vec<String> {
    let outcome = |ok: bool| if ok { "SUCCESS" } else { "FAILURE" };
    match event {
        NodeEvent::PreStarted => vec!["PRE_SCRIPT_STARTED -".into()],
        NodeEvent::PreEnded(st) => vec![format!("PRE_SCRIPT_{} -", outcome(*st == 0))],
        NodeEvent::Submitted(id) | NodeEvent::ProcSubmitted(id) => vec![format!("SUBMIT {id}")],
        NodeEvent::SubmitFailed { .. } => vec!["SUBMIT_FAILURE -".into()],
        NodeEvent::Executing(id) => vec![format!("EXECUTE {id}")],
        NodeEvent::Terminated(id, exit) => vec![
            format!("JOB_TERMINATED {id}"),
            format!("JOB_{} {exit}", outcome(*exit == 0)),
        ],
        NodeEvent::Aborted(id) => vec![format!("JOB_ABORTED {id}"), "JOB_FAILURE -1002".into()],
        // A cluster's result is written once, when its last proc is done
        // (`Dag::ProcessJobProcEnd`).
        NodeEvent::ProcEnded(id, Some(_)) => vec![format!("JOB_TERMINATED {id}")],
        NodeEvent::ProcEnded(id, None) => vec![format!("JOB_ABORTED {id}")],
        NodeEvent::ClusterEnded(exit) => vec![format!("JOB_{} {exit}", outcome(*exit == 0))],
        NodeEvent::PostStarted(id) => vec![format!("POST_SCRIPT_STARTED {id}")],
        NodeEvent::PostEnded(id, st) => vec![
            format!("POST_SCRIPT_TERMINATED {id}"),
            format!("POST_SCRIPT_{} {id}", outcome(*st == 0)),
        ],
    }
}
