//! Control records: what happened to every job attempt and every transfer.
//!
//! Seed 002 keeps a control database that the postscript updates (submitted and
//! ended per site) and that the Opportunistic selector reads; here the manager
//! keeps the same records in memory, and the run record (`--json`) is built
//! from them, in nominal seconds, identically for both engines.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{JobFailure, JobId, ScriptKind, SiteId, Time, TransferFailure, TransferId};

/// How one attempt of a job ended.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum Outcome {
    /// Still going.
    Pending,
    /// Ran and its postscript registered the outputs.
    Ended,
    /// Staging failed (no replica, no room): the job went back to the prescript.
    StagingFailed(String),
    /// The site reported a failure.
    Failed(JobFailure),
    /// MonitQueue killed it in the site's queue after `max_idle`; re-planned.
    Killed,
    /// Removed when the DAG stopped (`ABORT-DAG-ON`, or the user removed
    /// the DAG), for the reason given; never retried.
    Removed(String),
}

impl Outcome {
    /// How the attempt ended, in words.
    pub fn describe(&self) -> String {
        match self {
            Outcome::Pending => "still going".into(),
            Outcome::Ended => "ended".into(),
            Outcome::StagingFailed(r) => format!("staging failed: {r}"),
            Outcome::Failed(JobFailure::MissingInput(f)) => format!("input `{f}` missing"),
            Outcome::Failed(JobFailure::NoSpace { never: false }) => {
                "no room for its outputs".into()
            }
            Outcome::Failed(JobFailure::NoSpace { never: true }) => {
                "its outputs can never fit".into()
            }
            Outcome::Failed(JobFailure::Failed(r)) => format!("failed: {r}"),
            Outcome::Failed(JobFailure::Exit(status)) => format!("exited {status}"),
            Outcome::Failed(JobFailure::SubmitFailed(r)) => format!("job submit failed: {r}"),
            Outcome::Killed => "killed by MonitQueue".into(),
            Outcome::Removed(r) => format!("removed: {r}"),
        }
    }
}

/// One pass of a job through prescript, queue and run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attempt {
    /// Execution site chosen by the prescript.
    pub site: SiteId,
    /// Prescript start.
    pub prescript: Time,
    /// Entered the site's FIFO queue (prescript end).
    pub submitted: Option<Time>,
    /// Took a CPU slot.
    pub started: Option<Time>,
    /// The site reported the run's end (the program's end, as Pegasus's
    /// kickstart records it; before DAGMan noticed it and the postscript).
    pub finished: Option<Time>,
    /// The node ended: after the postscript, or the failure.
    pub ended: Option<Time>,
    /// How it ended.
    pub outcome: Outcome,
    /// Transfers that staged its inputs.
    pub transfers: u32,
    /// The status its program exited with, when it ran to its end.
    pub exit: Option<i32>,
    /// Its DAGMan PRE and POST script runs, in order.
    pub scripts: Vec<ScriptRun>,
    /// A clustered job's members as seqexec ran them, in order.
    pub members: Vec<MemberRun>,
}

impl Attempt {
    /// An attempt whose prescript starts at `prescript` for `site`: nothing
    /// else has happened to it yet.
    pub fn begun(site: SiteId, prescript: Time) -> Self {
        Attempt {
            site,
            prescript,
            submitted: None,
            started: None,
            finished: None,
            ended: None,
            outcome: Outcome::Pending,
            transfers: 0,
            exit: None,
            scripts: Vec::new(),
            members: Vec::new(),
        }
    }
}

/// One member of a clustered job, as it ran in its cluster's slot.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct MemberRun {
    /// The member's (original job's) name.
    pub name: String,
    /// Started (its predecessor's end, or the cluster's start).
    pub start: Time,
    /// Ended.
    pub end: Time,
    /// Its exit status (not 0: the cluster stopped there).
    pub status: i32,
}

/// One run of a node's PRE or POST script.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ScriptRun {
    /// PRE or POST.
    pub kind: ScriptKind,
    /// Started.
    pub start: Time,
    /// Ended, with this exit status.
    pub end: Option<Time>,
    /// Its exit status.
    pub status: Option<i32>,
}

/// Per-job control record.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct JobRecord {
    /// Became ready (all parents ended).
    pub ready: Option<Time>,
    /// Every attempt, in order.
    pub attempts: Vec<Attempt>,
    /// Why it failed for good.
    pub failure: Option<String>,
    /// The failed ancestor that keeps it from running.
    pub blocked_by: Option<JobId>,
    /// When it ended without running, memoized within the run (seed 003
    /// §5.3): its outputs were at its submit machine.
    pub memoized: Option<Time>,
}

/// One transfer attempt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TransferRecord {
    /// Its id.
    pub id: TransferId,
    /// The job it staged.
    pub job: JobId,
    /// The file.
    pub file: usize,
    /// Source site.
    pub from: SiteId,
    /// Destination site.
    pub to: SiteId,
    /// Start time.
    pub start: Time,
    /// End time.
    pub end: Option<Time>,
    /// Nominal bytes moved.
    pub bytes: u64,
    /// Failure, if it failed (boxed: rare, and a run holds millions of
    /// these records).
    pub failure: Option<Box<TransferFailure>>,
    /// Whether it retries an earlier failed transfer of the same input for the
    /// same prescript (same source, or another replica).
    pub retry: bool,
}

/// Per-site counters (seed 002's control database columns).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SiteCounters {
    /// Jobs submitted to the site's queue.
    pub submitted: u64,
    /// Jobs that started running there.
    pub started: u64,
    /// Jobs that ended successfully there.
    pub ended: u64,
    /// Jobs that failed there.
    pub failed: u64,
    /// Jobs MonitQueue killed in its queue.
    pub killed: u64,
    /// Kills that lost the race with a start: the job had already taken a
    /// slot, so it ran there and the kill was void.
    pub kills_void: u64,
    /// Transfers into the site that succeeded.
    pub transfers_in: u64,
    /// Nominal bytes transferred into the site.
    pub bytes_in: u64,
    /// Transfers out of the site that succeeded.
    pub transfers_out: u64,
    /// Inputs found already on site at planning time (cache hits).
    pub cache_hits: u64,
    /// Inputs of the jobs planned at the site (cache hits and misses).
    pub inputs_planned: u64,
}

/// A replica a site evicted to make room.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvictionRecord {
    /// When the manager learnt of it.
    pub time: Time,
    /// The site.
    pub site: SiteId,
    /// The file.
    pub file: usize,
}

/// Each proc's exit of a cluster, in proc order (none: removed when
/// another failed).
pub type ProcExits = Vec<Option<i32>>;

/// All control records of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Records {
    /// Indexed by job id.
    pub jobs: Vec<JobRecord>,
    /// In start order.
    pub transfers: Vec<TransferRecord>,
    /// Indexed by site id.
    pub sites: Vec<SiteCounters>,
    /// Evictions, in the order the manager learnt of them.
    pub evictions: Vec<EvictionRecord>,
    /// Faults, in the order the manager learnt of them.
    pub faults: Vec<FaultRecord>,
    /// When DAGMan tried to submit a job and failed
    /// (`DAGMAN_MAX_SUBMIT_ATTEMPTS`), by job: the attempt and the time of
    /// each failed try, in order. Apart from [`Attempt`] because they are
    /// rare and a run holds an attempt of every job.
    pub submit_failures: BTreeMap<JobId, Vec<(usize, Time)>>,
    /// The procs of the jobs that were clusters of several (`queue N`),
    /// by job: the attempt, and each proc's exit in proc order, none for
    /// one removed when another failed ([`super::Event::ProcsEnded`]).
    /// Apart from [`Attempt`], as rare as [`Records::submit_failures`].
    pub procs: BTreeMap<JobId, Vec<(usize, ProcExits)>>,
}

impl Records {
    /// When DAGMan tried to submit `job`'s `attempt` and failed, in order
    /// (each try but a last that went through).
    pub fn submit_failures(&self, job: JobId, attempt: usize) -> impl Iterator<Item = Time> + '_ {
        (self.submit_failures.get(&job).into_iter().flatten())
            .filter(move |&&(a, _)| a == attempt)
            .map(|&(_, t)| t)
    }

    /// Each proc's exit of `job`'s `attempt`, when its job was a cluster
    /// of several.
    pub fn procs(&self, job: JobId, attempt: usize) -> Option<&[Option<i32>]> {
        let runs = self.procs.get(&job)?;
        (runs.iter())
            .find(|(a, _)| *a == attempt)
            .map(|(_, exits)| &exits[..])
    }
}

/// A fault that happened at a site (see [`super::faults`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultRecord {
    /// When the manager learnt of it.
    pub time: Time,
    /// The site.
    pub site: SiteId,
    /// What happened.
    pub fault: super::faults::Fault,
}

impl Records {
    /// Makespan: the last time any job attempt ended (0 before any did).
    pub fn makespan(&self) -> Time {
        self.jobs
            .iter()
            .flat_map(|j| j.attempts.iter().filter_map(|a| a.ended).chain(j.memoized))
            .fold(0.0, f64::max)
    }
}
