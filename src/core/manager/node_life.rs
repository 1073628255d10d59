//! The DAGMan node life cycle's state (HTCondor's `Dag`, seed 000 §4): each
//! node's state and the parents it waits for, its retries and exit, the
//! ready queue in DAGMan's order with its throttles (MAXJOBS per category,
//! `DAGMAN_MAX_JOBS_*`), the abort, the sub-DAGs and the service nodes, and
//! the workflows submitted. The grid's data placement is the other room
//! (`placement`); the manager drives both.

use super::dagman_limits::DagmanLimits;
use super::release::SavePoint;
use super::service::Services;
use super::subdag::SubDags;
use super::{DagAbort, JobState, StateCounts};
use crate::core::JobId;
use crate::core::nodes::{NodeSettings, Throttle};
use crate::core::ready_queue::ReadyQueue;
use crate::core::submissions::{Submissions, Workload};
use crate::core::Time;

/// Where every node of the run stands in DAGMan's life cycle.
pub(super) struct NodeLife {
    /// Per job: where it is in its life.
    pub(super) state: Vec<JobState>,
    /// Per job: parents (and selector orderings) not yet over.
    pub(super) missing_parents: Vec<usize>,
    /// Jobs per state.
    pub(super) counts: StateCounts,
    /// Per job: ordering children from the selector (not workflow edges).
    pub(super) ordering: Vec<Vec<JobId>>,
    /// Per job: attempts that failed at a site (DAGMan's `RETRY`).
    pub(super) failures: Vec<u32>,
    /// Per job: the non-zero status its program exited with on this attempt
    /// (it wrote no outputs; its POST script decides the node).
    pub(super) exited: Vec<Option<i32>>,
    /// Per job: running again to make a lost output anew (its children
    /// were released the first time).
    pub(super) rerun: Vec<bool>,
    /// Ready jobs in DAGMan's order (per DAGMan, by priority).
    pub(super) ready: ReadyQueue,
    /// DAGMan's node settings (RETRY, PRIORITY, CATEGORY, NOOP, DONE).
    pub(super) nodes: NodeSettings,
    /// MAXJOBS per category.
    pub(super) throttle: Throttle,
    /// Per job: counted in flight by the throttle.
    pub(super) throttled: Vec<bool>,
    /// Ready jobs the selector holds until the grid changes.
    pub(super) held: Vec<JobId>,
    /// Earliest time the next prescript may start.
    pub(super) next_prescript: Time,
    /// Prescripts running now (MAXPRE).
    pub(super) prescripts_running: usize,
    /// The DAG stopped (`ABORT-DAG-ON`, or the user removed it).
    pub(super) abort: Option<DagAbort>,
    /// `SUBDAG EXTERNAL` nodes, each run as its own DAGMan.
    pub(super) subdags: SubDags,
    /// `SERVICE` and `PROVISIONER` nodes.
    pub(super) services: Services,
    /// Each DAGMan's `DAGMAN_MAX_JOBS_SUBMITTED`, `_JOBS_IDLE` and
    /// `_POST_SCRIPTS`.
    pub(super) limits: DagmanLimits,
    /// The save points written, in order.
    pub(super) save_points: Vec<SavePoint>,
    /// The workflows submitted and each job's.
    pub(super) submissions: Submissions,
    /// How each workflow stands.
    pub(super) workload: Vec<Workload>,
    /// The roots each late workflow holds back until it arrives.
    pub(super) gated: Vec<Vec<JobId>>,
}
