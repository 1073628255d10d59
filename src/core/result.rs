//! What a run of a grid scenario ends with, whichever engine ran it. The
//! report builds its record from a [`RunResult`] alone, so a simulated and a
//! live run are read by one code path and compared like with like; what
//! only a live run has (real bytes, setup time, the end-of-run check of
//! every pool) rides along as [`LiveTotals`].

use std::time::Duration;

use super::Time;
use super::manager::{Manager, StateCounts};
use super::records::Records;
use super::rls::Rls;
use super::timeline::Timeline;

/// A finished run. See the module docs.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Which engine ran it: `sim` or `live`.
    pub engine: &'static str,
    /// The DAG it ran: the scenario's workflow, with the nodes of the
    /// sub-DAGs it read as it went ([`RunDag::flattened`]).
    ///
    /// [`RunDag::flattened`]: super::RunDag::flattened
    pub workflow: std::sync::Arc<super::Workflow>,
    /// Control records from the core.
    pub records: Records,
    /// Final job counts.
    pub counts: StateCounts,
    /// Per job: it ended (in this run, or before it: DAGMan DONE, resumed).
    pub done: Vec<bool>,
    /// Whether every job ended successfully (a DAG with a FINAL node: whether
    /// FINAL did).
    pub succeeded: bool,
    /// The DAG's exit status as DAGMan reports it: 0 when it succeeded, an
    /// `ABORT-DAG-ON`'s return value (2 after the user removed it), else 1.
    pub dag_exit: i32,
    /// What stopped the DAG, if anything did (`ABORT-DAG-ON`, the user).
    pub dag_stop: Option<super::DagAbort>,
    /// Each failed run of a sub-DAG, in order (for its rescue DAG).
    pub subdag_runs_failed: Vec<super::SubDagRun>,
    /// Each run of a sub-DAG's DAGMan, in the order they started.
    pub subdag_spans: Vec<super::SubDagSpan>,
    /// The save points written as their nodes started, in order.
    pub save_points: Vec<super::SavePoint>,
    /// Nominal makespan (last job end).
    pub makespan: Time,
    /// Final RLS: holders of every file.
    pub rls: Rls,
    /// Per site: files evicted.
    pub evictions: Vec<u64>,
    /// Per site: nominal bytes held at the end.
    pub used: Vec<u64>,
    /// Per site: most nominal bytes held at any time.
    pub peak_used: Vec<u64>,
    /// Transfers that completed (verified, for a live run).
    pub transfers: u64,
    /// Wall time of the run (a live run's setup excluded).
    pub wall: Duration,
    /// The control database failed (the run went on without it).
    pub db_error: Option<String>,
    /// Per-site queue, running jobs and storage over time.
    pub timeline: Timeline,
    /// What only a live run measures.
    pub live: Option<LiveTotals>,
}

/// What only a live run measures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveTotals {
    /// Wall time of the setup (pools, origin files, servers).
    pub setup: Duration,
    /// Real bytes pulled into all sites.
    pub real_bytes: u64,
    /// Files that failed the end-of-run check of their bytes (always 0 when
    /// nothing is lost).
    pub corrupt_at_end: usize,
}

impl RunResult {
    /// The manager's share of the result, once the engine is done with it;
    /// the engine fills in the per-site columns and its own totals.
    pub fn from_manager(
        engine: &'static str,
        manager: Manager,
        wall: Duration,
        timeline: Timeline,
    ) -> RunResult {
        let counts = manager.counts();
        let done = (0..manager.run_dag().job_count())
            .map(|j| manager.job_state(j) == super::manager::JobState::Done)
            .collect();
        let succeeded = manager.succeeded();
        let dag_stop = manager.dag_abort();
        let dag_exit = manager.dag_exit();
        let makespan = manager.records().makespan();
        let subdag_runs_failed = manager.subdag_runs_failed().to_vec();
        let subdag_spans = manager.subdag_spans().to_vec();
        let save_points = manager.save_points().to_vec();
        let workflow = manager.run_dag().flattened();
        let (records, rls) = manager.into_records_and_rls();
        RunResult {
            workflow,
            engine,
            counts,
            done,
            succeeded,
            dag_exit,
            dag_stop,
            subdag_runs_failed,
            subdag_spans,
            save_points,
            makespan,
            rls,
            evictions: Vec::new(),
            used: Vec::new(),
            peak_used: Vec::new(),
            transfers: 0,
            wall,
            db_error: None,
            timeline,
            live: None,
            records,
        }
    }
}
