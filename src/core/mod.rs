//! The sans-IO core: everything that decides, nothing that waits.
//!
//! The workflow manager of seed 000 section 4 (submit host, prescript, postscript,
//! RLS, MAXPRE) is a deterministic state machine, [`Manager`]. An engine feeds it
//! [`Event`]s stamped with the nominal time `now` and carries out the [`Command`]s it
//! returns. The sim engine does so on a virtual clock, the live engine with actix
//! actors and real HTTP transfers; both share this code, which is what makes a
//! comparison of the two meaningful.
//!
//! ```text
//!   engine ──Event(now)──► Manager ──Command──► engine
//!                            │ ▲
//!                 SiteSelector │ read-only GridView (sites, RLS, load)
//! ```
//!
//! The rest of the emulated world's rules are here too, so that both engines
//! drive them rather than rewrite them: a site's queue, slots and pool
//! (`site::Site` over `storage::Pool`), its file server's answers
//! (`file_server`), faults injected on purpose
//! ([`faults`]), the one event queue of the simulators (`events`), the
//! farm's cache location index ([`cache_index`]), and the traits that
//! policies implement ([`seams`]). This room imports no other.

pub mod cache_index;
pub mod clusters;
pub mod dag;
pub mod farm;
pub mod faults;
pub mod network;
pub mod observer;
pub mod records;
pub mod result;
pub mod rls;
pub mod run_dag;
pub mod seams;
pub mod submissions;
pub mod topology;
pub mod trace;
pub mod wms;
internal!(
    background,
    events,
    file_server,
    manager,
    nodes,
    ready_queue,
    site,
    storage,
    timeline,
    versions,
    window
);

pub use dag::{DagError, File, FileId, Job, JobId, JobSpec, Workflow};
pub use manager::{
    DagAbort, JobState, Manager, ManagerSettings, Registration, ReplicaPolicy, SavePoint,
    SubDagRun, SubDagSpan,
};
pub use rls::Rls;
pub use run_dag::RunDag;

/// Index of a site in the scenario's site list.
pub type SiteId = usize;
/// Identifier of one transfer attempt, unique within a run.
pub type TransferId = u64;
/// Nominal time in seconds since the run started.
pub type Time = f64;

/// What the core knows of a site: its static description.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SiteInfo {
    /// Unique site name.
    pub name: String,
    /// CPU slots; 0 means a pure storage site that runs no jobs.
    pub cpus: usize,
    /// Disk capacity in nominal bytes.
    pub disk: u64,
    /// CPU speed factor: a job runs `runtime / speed`.
    pub speed: f64,
    /// Grid submission overhead added to every job run here (nominal s).
    pub overhead: f64,
}

/// Why a transfer failed; the manager decides what to do next from this.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum TransferFailure {
    /// The bytes or their length did not match the source's sha256 / size.
    Corrupt(String),
    /// The connection failed, timed out or the source refused.
    Connection(String),
    /// The source no longer holds the file.
    SourceMissing,
    /// The source was serving its `max_connections` transfers and refused
    /// this one (HTTP 503): a failed try of that source, after which the
    /// next try may go to another replica.
    Busy,
    /// The destination cannot make room now; `never` when it never could.
    NoSpace {
        /// True when the file does not fit even in an empty pool.
        never: bool,
    },
}

/// Why a job attempt failed at its site.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum JobFailure {
    /// An input was absent or did not verify when the job started.
    MissingInput(String),
    /// Outputs do not fit; `never` when they never could.
    NoSpace {
        /// True when the outputs can never fit on this site.
        never: bool,
    },
    /// The job itself failed (a real command's non-zero exit, an I/O error).
    Failed(String),
    /// The job's program ran to its end and exited with this non-zero
    /// status (DAGMan's `$RETURN`): its outputs are not kept, and its POST
    /// script, if it has one, decides the node.
    Exit(i32),
    /// The job could not be submitted (DAGMan's submission failed: its
    /// submit description unreadable, its executable missing): it never
    /// entered the site's queue.
    SubmitFailed(String),
}

/// Which of a DAGMan node's scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScriptKind {
    /// `SCRIPT PRE`: runs before the job; a non-zero exit fails the attempt.
    Pre,
    /// `SCRIPT POST`: runs after the job; its exit decides the node.
    Post,
}

/// `$PRE_SCRIPT_RETURN` when no PRE script ran (DAGMan's `_retValScript`).
fn no_pre_script() -> i32 {
    -1
}

/// What DAGMan substitutes for its macros in a PRE or POST script's
/// arguments (HTCondor's `Script::BackgroundRun`), as the DAG stands when
/// the script starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ScriptMacros {
    /// `$RETRY`: attempts of this node before this one.
    pub retry: u32,
    /// `$RETURN` (POST scripts): the job's exit status.
    pub status: i32,
    /// `$PRE_SCRIPT_RETURN` (POST scripts): what the node's PRE script
    /// exited with, -1 when none ran.
    #[serde(default = "no_pre_script")]
    pub pre_status: i32,
    /// `$DAG_STATUS`: DAGMan's status of the DAG (0 well, 2 a node
    /// failed, 3 aborted, 4 removed by the user, 5 a cycle left nodes
    /// unrun).
    pub dag_status: i32,
    /// `$FAILED_COUNT`: nodes failed.
    pub failed: usize,
    /// `$FUTILE_COUNT`: nodes that will never run, a parent having failed.
    pub futile: usize,
    /// `$DONE_COUNT`: nodes done.
    pub done: usize,
    /// `$QUEUED_COUNT`: nodes whose job is submitted.
    pub queued: usize,
    /// `$NODE_COUNT`: nodes of the DAG.
    pub nodes: usize,
    /// `$JOBID` (POST scripts naming it): the HTCondor cluster of the
    /// node's job ([`clusters`]); 0 when it has none.
    #[serde(default)]
    pub job_id: u64,
}

/// An input to the manager. Every event comes with the nominal time `now`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Event {
    /// Time has passed; start what is due (prescripts, back-offs).
    Tick,
    /// A transfer ended; `Ok` carries the nominal bytes moved.
    TransferDone {
        /// The transfer's id from [`Command::StartTransfer`].
        id: TransferId,
        /// Bytes moved, or why it failed.
        result: Result<u64, TransferFailure>,
    },
    /// A job left its site's FIFO queue and took a CPU slot.
    JobStarted {
        /// The job.
        job: JobId,
        /// Where it runs.
        site: SiteId,
    },
    /// A job finished running (its outputs are written when `Ok`).
    JobEnded {
        /// The job.
        job: JobId,
        /// Where it ran.
        site: SiteId,
        /// Success, or why not.
        result: Result<(), JobFailure>,
    },
    /// The procs of a job that is a cluster of several (DAGMan's node
    /// job queueing `N` procs) ended: each one's exit, in proc order, none
    /// for a proc removed when another failed. Comes before the job's
    /// [`Event::JobEnded`]; it is recorded, and decides nothing (the
    /// job's exit is the cluster's).
    ProcsEnded {
        /// The job.
        job: JobId,
        /// Where it was submitted.
        site: SiteId,
        /// Each proc's exit.
        exits: Vec<Option<i32>>,
    },
    /// A member of a clustered job ended (seqexec): 0 when it ran well
    /// and its outputs are written, else its exit status (the cluster
    /// then ends, failed, with no later member run).
    MemberEnded {
        /// The clustered job.
        job: JobId,
        /// Where it runs.
        site: SiteId,
        /// The member's index in [`Job::members`](crate::core::Job).
        member: usize,
        /// Its exit status.
        status: i32,
    },
    /// A site answered a [`Command::Kill`]: `killed` when the job was still in
    /// its queue and is gone from it, false when it had already started (it
    /// then runs to its end as usual). Exactly one of the two happens.
    JobKilled {
        /// The job.
        job: JobId,
        /// The site.
        site: SiteId,
        /// Whether it was removed from the queue.
        killed: bool,
    },
    /// A [`Command::RunScript`] ended with this exit status.
    ScriptDone {
        /// The job.
        job: JobId,
        /// Which script.
        kind: ScriptKind,
        /// Exit status (0: success).
        status: i32,
    },
    /// A site evicted a file to make room; the RLS must forget that replica.
    FileEvicted {
        /// The site.
        site: SiteId,
        /// The file.
        file: FileId,
    },
    /// A fault happened at `site` (see [`faults`]): recorded, and a crash
    /// or a recovery changes where jobs may go and which replicas exist.
    Fault {
        /// The site.
        site: SiteId,
        /// What happened.
        fault: faults::Fault,
    },
    /// The user removed the DAG (Ctrl-C of a run, DAGMan's `condor_rm` of
    /// its own job): every node job is removed, the `FINAL` node runs, and
    /// the DAG exits as DAGMan's `main_shutdown_remove` does.
    DagRemoved,
    /// The DAG's halt file (`<dag>.halt`) appeared: the top DAG starts no
    /// node job and no PRE script any more, lets what is in flight end and
    /// its POST scripts run, then stops (a rescue DAG, its FINAL node run
    /// with `$DAG_STATUS` 6, `DAG_STATUS_HALTED`), as DAGMan's
    /// `condor_event_timer` does. A halt is not undone (removing the file
    /// does nothing, as in HTCondor).
    Halted,
    /// Sub-DAG `subdag`'s own halt file (`<its dag>.halt`) appeared while
    /// its DAGMan ran: that DAGMan halts as [`Event::Halted`] halts the
    /// top DAG, and once drained exits 1 (its FINAL node run with
    /// `$DAG_STATUS` 6); its node in the DAG above then fails, or runs
    /// again under its `RETRY`, a new DAGMan not halted.
    SubDagHalted {
        /// The sub-DAG, its index in [`NodeSettings::subdags`].
        subdag: usize,
    },
}

/// An order from the manager to the engine.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// A prescript chose `site` for `job`: pin the job's inputs present there and
    /// pin the ones that arrive for it, so staging cannot evict its own files.
    Pin {
        /// The job.
        job: JobId,
        /// The chosen site.
        site: SiteId,
    },
    /// Third-party transfer: `to` pulls `file` from `from`.
    StartTransfer {
        /// Unique id, echoed in [`Event::TransferDone`].
        id: TransferId,
        /// The job being staged.
        job: JobId,
        /// The file.
        file: FileId,
        /// The file whose bytes are read at `from`: `file` itself, except
        /// for a memoized job's output, which copies its twin's (seed 003
        /// §5.3).
        source: FileId,
        /// Source site (a replica in the RLS).
        from: SiteId,
        /// Destination site (the job's site).
        to: SiteId,
    },
    /// Every input is staged: put the job in the site's FIFO queue.
    Submit {
        /// The job.
        job: JobId,
        /// The site.
        site: SiteId,
        /// The status its program exits with on this attempt (0: success;
        /// a DAG sidecar's `exit` list sets others).
        exit: i32,
        /// DAGMan's counts as the job is submitted, which its submit
        /// description may name (`$(RETRY)`, `$(DAG_STATUS)`,
        /// `$(FAILED_COUNT)`) when the DAG's jobs run (else none are
        /// counted).
        macros: ScriptMacros,
    },
    /// MonitQueue: remove `job` from `site`'s queue if it has not started;
    /// answer with [`Event::JobKilled`].
    Kill {
        /// The job.
        job: JobId,
        /// The site.
        site: SiteId,
    },
    /// `condor_rm` of a node job when the DAG stops (`ABORT-DAG-ON`, or the
    /// user removed the DAG): `site` drops `job` wherever it is, queued,
    /// running or writing its outputs, frees its slot and keeps none of
    /// what it wrote; a PRE or POST script of the node running there is
    /// killed. The manager has already counted it removed, so the site
    /// answers nothing.
    Remove {
        /// The job.
        job: JobId,
        /// The site.
        site: SiteId,
    },
    /// DAGMan submits the deferred sub-DAG `subdag` (its node `node`'s PRE
    /// script has run): read its `.dag` now and answer with
    /// [`Manager::graft`](manager::Manager::graft).
    ReadSubDag {
        /// The sub-DAG: its index in the node settings' `subdags`.
        subdag: usize,
        /// Its `SUBDAG EXTERNAL` node.
        node: JobId,
    },
    /// Run the node's PRE or POST script at `site` (its pool the working
    /// directory) and answer with [`Event::ScriptDone`].
    RunScript {
        /// The job.
        job: JobId,
        /// The site.
        site: SiteId,
        /// Which script.
        kind: ScriptKind,
        /// The values of DAGMan's macros in its arguments.
        macros: ScriptMacros,
        /// How long the script takes in the simulator (nominal s; the
        /// live engine runs it in its real time).
        duration: f64,
    },
    /// Postscript (or an aborted attempt): unpin the job's files at `site` and
    /// delete `delete` once no other job pins them.
    Release {
        /// The job.
        job: JobId,
        /// The site.
        site: SiteId,
        /// Staged copies to remove (replica policy `delete`).
        delete: Vec<FileId>,
    },
    /// Every job reading `file`, an intermediate output, has ended (Pegasus's
    /// in-place cleanup): the copy at `site` need no longer be kept, and may
    /// be evicted like any cached copy. It stays registered until it is.
    Cleanup {
        /// The site.
        site: SiteId,
        /// The file.
        file: FileId,
    },
    /// Cache maintenance (seed 003 §6): delete the copy of `file` at `site`
    /// now, or as soon as no job pins it. The manager has already
    /// forgotten it.
    Delete {
        /// The site.
        site: SiteId,
        /// The file.
        file: FileId,
    },
}
