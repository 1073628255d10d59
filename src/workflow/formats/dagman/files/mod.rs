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

mod dagman_out;
mod dot;
mod jobstate;
mod metrics;
mod progress;
mod status;
mod view;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{DagmanInfo, rescue};
use crate::core::Workflow;
use crate::core::result::RunResult;
pub use dagman_out::write_refused;
use view::{Ctx, Dag, seconds};

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
    let states = dot::states_at(&dag, None, &top, 0.0);
    let path = dot::draw(&dag, &top, d, &states, seconds(epoch, 0.0))?;
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
    /// `<dag>.dagman.out`, the log every DAGMan writes (appends to).
    DagmanOut,
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
            put(
                f,
                jobstate::jobstate_log(&cx, inst, epoch),
                DagFile::JobstateLog,
            )?;
        }
        if let Some(f) = inst.node_status_file {
            put(
                f,
                status::node_status_file(&cx, inst, epoch),
                DagFile::NodeStatus,
            )?;
        }
        let metrics = format!("{}.metrics", inst.file);
        put(
            &metrics,
            metrics::metrics_file(&cx, inst, epoch),
            DagFile::Metrics,
        )?;
        let text = dagman_out::dagman_out(&cx, inst, epoch);
        let log = dagman_out::append(&inst.dir.join(&inst.file), &text)?;
        written.push((log, DagFile::DagmanOut));
        let Some(d) = inst.dot else {
            continue;
        };
        for (r, dag_run) in inst.runs.iter().enumerate() {
            // The top DAG's start was drawn as it started.
            if n > 0 {
                let states = dot::states_at(&cx.dag, Some(run), inst, dag_run.start);
                let at = seconds(epoch, dag_run.start);
                written.push((dot::draw(&cx.dag, inst, d, &states, at)?, DagFile::Dot));
            }
            if d.update {
                // Its last drawing is its end's; a run before the last ended
                // with the states its nodes had then.
                let states = match r + 1 == inst.runs.len() {
                    true => cx.ends.clone(),
                    false => dot::states_at(&cx.dag, Some(run), inst, dag_run.end),
                };
                let at = seconds(epoch, dag_run.end);
                written.push((dot::draw(&cx.dag, inst, d, &states, at)?, DagFile::Dot));
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
