//! `<dag>.metrics`, which every DAGMan writes as it exits
//! (`DagmanMetricsV2::Report`).

use std::fmt::Write as _;
use std::time::SystemTime;

use super::view::*;
use crate::core::ScriptKind;
use crate::core::records::{Attempt, Outcome};

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
pub(super) fn metrics_file(cx: &Ctx, inst: &Instance, epoch: SystemTime) -> String {
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
