//! The manager's tunables ([`ManagerSettings`]), as a testbed's `[manager]`
//! table sets them (`config/manager.rs`), and the bound on retries.

use super::replicas::{Registration, ReplicaPolicy};
use crate::core::wms::{Latency, WmsSettings};

/// The most retries a run may allow, of a job (DAGMan's `RETRY`,
/// `max_retries`), a transfer or a plan: a node that failed 100,000 times
/// has failed for good, and a larger count only makes a run that cannot
/// end look busy.
pub const MAX_RETRIES: u32 = 100_000;

/// The manager's tunables, in nominal seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagerSettings {
    /// Most prescripts running at once; 0 means no limit.
    pub maxpre: usize,
    /// Least time between two prescript starts.
    pub prescript_interval: f64,
    /// Transfers one prescript runs at once.
    pub prescript_streams: usize,
    /// Times a job that failed at its site is planned again.
    pub max_retries: u32,
    /// Times a failed transfer is retried from the same source.
    pub transfer_retries: u32,
    /// Wait before a transfer retry.
    pub transfer_backoff: f64,
    /// Wait before planning again a job whose site had no room.
    pub replan_backoff: f64,
    /// Times a job may be planned again for want of room or a vanished input
    /// (not its own fault) before it fails.
    pub max_replans: u32,
    /// What happens to staged inputs after the job.
    pub replica_policy: ReplicaPolicy,
    /// When a kept staged copy is registered for the selectors.
    pub registration: Registration,
    /// MonitQueue: how often queues are checked (0: MonitQueue off).
    pub monit_interval: f64,
    /// MonitQueue: longest a job may wait in a site queue before it is killed
    /// there and planned again elsewhere.
    pub max_idle: f64,
    /// Per-job latencies of a real WMS (nominal s): from its last parent's
    /// end to its release as ready (DAGMan's release latency)…
    pub release_overhead: Latency,
    /// …from its submission to its arrival in the schedd (`condor_submit`,
    /// in parallel with others)…
    pub submit_overhead: Latency,
    /// …and from its end noticed to its outputs registered and its children
    /// released (the postscript, e.g. `pegasus-exitcode`).
    pub postscript_overhead: Latency,
    /// How long a DAG node's PRE or POST script takes in the simulator
    /// (nominal s; the live engine runs the real script in real time).
    pub script_time: Latency,
    /// The serial stages of the pool (DAGMan's event loop, the negotiator,
    /// the schedd); off by default.
    pub wms: WmsSettings,
    /// In-place cleanup: an intermediate output is no longer kept once every
    /// job reading it has ended.
    pub cleanup: bool,
    /// A file whose every replica was lost (a site crashed with its pool) is
    /// made again by running its producer again; otherwise the jobs that
    /// need it fail.
    pub reproduce_lost: bool,
    /// Seed 003 §6: the most bytes an execute site's cache may hold after a
    /// job; above it, files are deleted in increasing worth (none: no
    /// maintenance, pools evict only to make room).
    pub cache_bound: Option<u64>,
    /// Seed 003 §6.2's k: a file about to lose one of its last k copies is
    /// moved to the site with most free room first (0: off).
    pub replicas: usize,
    /// Storage-aware release: a job is placed only where its files fit
    /// beside what the manager has committed there, and otherwise waits
    /// for room (see `room`); off, a job is placed wherever it could ever
    /// fit and its staging fails when the site has no room now.
    pub storage_aware: bool,
    /// `DAGMAN_SUBMIT_DEPTH_FIRST`: newly ready jobs go to the head of the
    /// ready queue, not its tail.
    pub submit_depth_first: bool,
    /// Pegasus's stage-out: a final output (read by no job) is copied to
    /// its job's submit machine and cleaned up where it was made.
    pub stage_out: bool,
}

impl Default for ManagerSettings {
    fn default() -> Self {
        ManagerSettings {
            maxpre: 20,
            prescript_interval: 1.0,
            prescript_streams: 1,
            max_retries: 3,
            transfer_retries: 3,
            transfer_backoff: 2.0,
            replan_backoff: 10.0,
            max_replans: 100,
            replica_policy: ReplicaPolicy::Caching,
            registration: Registration::Arrival,
            monit_interval: 0.0,
            max_idle: f64::INFINITY,
            release_overhead: Latency::default(),
            submit_overhead: Latency::default(),
            postscript_overhead: Latency::default(),
            script_time: Latency::default(),
            wms: WmsSettings::default(),
            cleanup: true,
            reproduce_lost: true,
            cache_bound: None,
            replicas: 0,
            storage_aware: true,
            submit_depth_first: false,
            stage_out: false,
        }
    }
}
