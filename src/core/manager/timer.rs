//! The manager's timers: what is due at a time the engines wake it for
//! (`Manager::next_wakeup`). Both rooms name them in what they ask for
//! (a retry after its back-off), so they are their own module.

use crate::core::{FileId, JobId, ScriptKind, SiteId};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timer {
    RetryTransfer {
        job: JobId,
        attempt: usize,
        file: FileId,
    },
    Replan {
        job: JobId,
    },
    /// Try again to send an output home.
    RetryStageOut {
        job: JobId,
        attempt: usize,
        file: FileId,
    },
    Monit,
    /// A workflow is submitted: its roots are released.
    Arrival {
        submission: usize,
    },
    /// `release_overhead` elapsed: the job is ready.
    Release {
        job: JobId,
    },
    /// `submit_overhead` elapsed: the job enters its site's queue.
    Submit {
        job: JobId,
        attempt: usize,
    },
    /// `postscript_overhead` elapsed: the job's node is over.
    Postscript {
        job: JobId,
        site: SiteId,
    },
    /// DAGMan's log scan noticed the job's end at its site.
    Noticed {
        job: JobId,
        site: SiteId,
    },
    /// DAGMan's event loop: submit ready nodes.
    DagmanTick,
    /// Jobs wait for room: has any job ended since the last look?
    RoomCheck,
    /// Try again to copy a final output to the submit machine.
    RetryFinal {
        job: JobId,
        file: FileId,
        from: SiteId,
    },
    /// A negotiation cycle: match idle jobs to slots.
    Negotiate,
    /// The schedd starts a matched job (its shadow).
    Start {
        job: JobId,
        attempt: usize,
    },
    /// `SCRIPT DEFER` elapsed: run the script again.
    Script {
        job: JobId,
        kind: ScriptKind,
    },
}
