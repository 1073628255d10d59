//! Messages between the live engine's actors, one struct each.

use actix::Message;

use crate::core::{Event, FileId, JobId, SiteId, TransferId};

/// Manager → site: a prescript chose this site for `job` (see
/// [`crate::core::Command::Pin`]).
#[derive(Message, Debug, Clone, serde::Serialize, serde::Deserialize)]
#[rtype(result = "()")]
pub struct Pin {
    /// The job.
    pub job: JobId,
}

/// Manager → destination site: pull `file` from `from`.
#[derive(Message, Debug, Clone, serde::Serialize, serde::Deserialize)]
#[rtype(result = "()")]
pub struct Fetch {
    /// Transfer id.
    pub id: TransferId,
    /// Job being staged.
    pub job: JobId,
    /// The file.
    pub file: FileId,
    /// The file read at the source (see [`Command::StartTransfer`]).
    pub source: FileId,
    /// Source site.
    pub from: SiteId,
    /// The source's gridftp endpoint, when the site should not look it up
    /// by `from` (a site daemon is told where to stage from).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// Manager → site: enqueue `job` in the FIFO queue.
#[derive(Message, Debug, Clone, serde::Serialize, serde::Deserialize)]
#[rtype(result = "()")]
pub struct Submit {
    /// The job.
    pub job: JobId,
    /// The status its program exits with (0: success).
    pub exit: i32,
    /// DAGMan's counts as it is submitted, for its program's macros.
    pub macros: crate::core::ScriptMacros,
}

/// Manager → site (MonitQueue): take `job` out of the queue if it has not
/// started; the site answers with [`crate::core::Event::JobKilled`].
#[derive(Message, Debug, Clone, serde::Serialize, serde::Deserialize)]
#[rtype(result = "()")]
pub struct Kill {
    /// The job.
    pub job: JobId,
}

/// Manager → site (the DAG stopped): `condor_rm` of `job`, queued,
/// running or writing its outputs; the site answers nothing (see
/// [`crate::core::Command::Remove`]).
#[derive(Message, Debug, Clone, serde::Serialize, serde::Deserialize)]
#[rtype(result = "()")]
pub struct Remove {
    /// The job.
    pub job: JobId,
}

/// Manager → site: run `job`'s PRE or POST script in the pool; the site
/// answers with [`crate::core::Event::ScriptDone`].
#[derive(Message, Debug, Clone, serde::Serialize, serde::Deserialize)]
#[rtype(result = "()")]
pub struct RunScript {
    /// The job.
    pub job: JobId,
    /// Which script.
    pub kind: crate::core::ScriptKind,
    /// The values of DAGMan's macros in its arguments.
    pub macros: crate::core::ScriptMacros,
}

/// Manager → site: unpin `job`'s files and delete `delete` when unpinned.
#[derive(Message, Debug, Clone, serde::Serialize, serde::Deserialize)]
#[rtype(result = "()")]
pub struct Release {
    /// The job.
    pub job: JobId,
    /// Staged copies to remove.
    pub delete: Vec<FileId>,
}

/// Manager → site: every job reading `file` ended (in-place cleanup).
#[derive(Message, Debug, Clone, serde::Serialize, serde::Deserialize)]
#[rtype(result = "()")]
pub struct Cleanup {
    /// The file, no longer kept.
    pub file: FileId,
}

/// Manager → site: cache maintenance deletes a file (seed 003 §6).
#[derive(Message, Debug, Clone, serde::Serialize, serde::Deserialize)]
#[rtype(result = "()")]
pub struct Delete {
    /// The file.
    pub file: FileId,
}

/// Manager → site: a sub-DAG read as the run goes added `jobs` to the
/// workflow, from id `first` on, with their PRE/POST scripts when the DAG's
/// scripts run (empty otherwise).
#[derive(Message, Debug, Clone, serde::Serialize, serde::Deserialize)]
#[rtype(result = "()")]
pub struct AddJobs {
    /// The first new job's id.
    pub first: JobId,
    /// The new jobs.
    pub jobs: Vec<crate::core::Job>,
    /// Their scripts, as `jobs`.
    pub scripts: Vec<Option<crate::workflow::formats::dagman::NodeScripts>>,
}

/// Engine → site: a timed fault of the site happens now (`[[fault]]`).
#[derive(Message, Debug, Clone, serde::Serialize, serde::Deserialize)]
#[rtype(result = "()")]
pub struct SiteFault(pub crate::core::faults::Fault);

/// Site → manager: something happened (the manager stamps the time).
#[derive(Message, Debug, Clone, serde::Serialize, serde::Deserialize)]
#[rtype(result = "()")]
pub struct SiteEvent(pub Event);

/// Engine → site, at the end: verify every file on disk and report.
#[derive(Message)]
#[rtype(result = "SiteReport")]
pub struct TakeInventory;

/// One file as found on disk at the end of a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FileCheck {
    /// The file.
    pub file: FileId,
    /// Real bytes on disk.
    pub size: u64,
    /// sha256 of the bytes on disk.
    pub sha256: String,
    /// Whether size and hash match what the pool recorded when it was written.
    pub intact: bool,
}

/// A site's state at the end of a run.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct SiteReport {
    /// Files held in the pool, each re-read and re-hashed from disk.
    pub files: Vec<FileCheck>,
    /// Directory entries that are not listed files (should be none).
    pub strays: Vec<String>,
    /// Files evicted.
    pub evictions: u64,
    /// Nominal bytes held.
    pub used: u64,
    /// Most nominal bytes held at any time.
    pub peak_used: u64,
    /// Nominal capacity.
    pub capacity: u64,
    /// Jobs that ran here (started).
    pub jobs_run: u64,
    /// Real bytes pulled into this site.
    pub real_bytes_in: u64,
}
