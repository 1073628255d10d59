//! Condor's own file transfer (seed 003 §3, the `return` replica policy of
//! ORIG): after a job ends, its starter sends every output back to the job's
//! submit machine and then deletes it, with the job's inputs, from the
//! execute machine. The slot stays claimed until the last output is home, so
//! a matchmaker does not offer the machine meanwhile; the node ends (and its
//! children are released) only then, and every later reader stages the
//! outputs from the submit machine.
//!
//! An output that cannot be sent home after `transfer_retries` tries is lost
//! with the execute machine's copy: the job runs again, against its RETRY.
//!
//! Pegasus's stage-out of final outputs (`stage_out`, Pegasus 5 user guide,
//! "Data Transfers"; its output site is `local`, the submit machine): once
//! a node ends, each output no job reads is copied to the job's submit
//! machine and registered there, and the copy where it was made is cleaned
//! up, so that a long run's results do not fill the execution sites. The
//! node's children do not wait for it (they read none of these files); the
//! run ends when every such copy arrived or failed for good, in which case
//! the copy where it was made stays kept (nothing is lost).
//!
//! The placement room decides here; `flight_ends.rs` turns the decisions
//! into steps the manager carries out.

use super::*;

/// Final outputs on their way to their submit machine (`stage_out`).
#[derive(Debug, Default)]
pub(crate) struct Finals {
    /// Copies in flight.
    pub(crate) out: usize,
    /// Nodes ended whose final outputs are to leave (job, where they are).
    pub(crate) due: Vec<(JobId, SiteId)>,
    /// Failed tries, per file.
    pub(crate) tries: HashMap<FileId, u32>,
}

/// A job's outputs on their way home.
#[derive(Debug)]
pub(crate) struct StageOut {
    site: SiteId,
    attempt: usize,
    /// Transfers not yet ended well.
    left: usize,
    /// Failed tries so far, per output.
    tries: Vec<(FileId, u32)>,
    /// Staged inputs the postscript deletes with the outputs.
    delete: Vec<FileId>,
}

/// What the end of a transfer of a job's output home means.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum HomeEnd {
    /// Of an attempt no longer sending: nothing.
    Stale,
    /// Outputs are still on their way.
    Pending,
    /// The transfer failed and is tried again after the backoff.
    Retry,
    /// Every output is home: the job ends at `site`, these files deleted
    /// there.
    Home { site: SiteId, delete: Vec<FileId> },
    /// An output could not be sent: the job's work at `site` is lost,
    /// these files deleted there.
    Lost {
        site: SiteId,
        delete: Vec<FileId>,
        reason: String,
    },
}

/// What the end of a final output's copy to the submit machine means.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FinalEnd {
    /// Registered there (freeing the jobs that waited for it), cleaned up
    /// where it was made.
    Arrived(Option<Vec<JobId>>),
    /// Tried again after the backoff.
    Retry,
    /// Given up: it stays kept where it was made.
    GaveUp,
}

impl Placement {
    /// Starts sending `job`'s outputs (of its `attempt`) from `site` home
    /// (see [`Placement::sends_home`]), `delete` going with them: returns
    /// the outputs to send.
    pub(crate) fn begin_stage_out(
        &mut self,
        wf: &RunDag,
        (job, attempt): (JobId, usize),
        site: SiteId,
        delete: Vec<FileId>,
    ) -> Vec<FileId> {
        let outputs = wf.job(job).outputs.clone();
        self.stage_outs[job] = Some(StageOut {
            site,
            attempt,
            left: outputs.len(),
            tries: Vec::new(),
            delete,
        });
        outputs
    }

    /// The transfer that sends `job`'s output `file` home, for its `attempt`
    /// (any attempt when none): `(from, to, attempt, is a retry)`; none
    /// when that attempt sends nothing.
    pub(crate) fn home_flight(
        &self,
        job: JobId,
        file: FileId,
        attempt: Option<usize>,
    ) -> Option<(SiteId, SiteId, usize, bool)> {
        let so = self.stage_outs[job].as_ref()?;
        if attempt.is_some_and(|a| a != so.attempt) {
            return None;
        }
        let retry = so.tries.iter().any(|&(f, _)| f == file);
        Some((so.site, self.home[job], so.attempt, retry))
    }

    /// A transfer of `job`'s output `file` home, of its `attempt`, ended
    /// `ok` or not; `retries` tries are allowed each.
    pub(crate) fn home_done(
        &mut self,
        wf: &RunDag,
        (job, attempt): (JobId, usize),
        file: FileId,
        (ok, retries): (bool, u32),
        out: &mut Vec<Command>,
    ) -> HomeEnd {
        let Some(so) = self.stage_outs[job].as_mut().filter(|so| so.attempt == attempt) else {
            return HomeEnd::Stale;
        };
        if ok {
            so.left -= 1;
            if so.left > 0 {
                return HomeEnd::Pending;
            }
        } else {
            let tries = match so.tries.iter_mut().find(|(f, _)| *f == file) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    so.tries.push((file, 1));
                    1
                }
            };
            if tries <= retries {
                return HomeEnd::Retry;
            }
        }
        let Some(so) = self.stage_outs[job].take() else {
            return HomeEnd::Stale;
        };
        let mut delete = so.delete;
        delete.extend(self.own_outputs(wf, job, so.site, out));
        if ok {
            return HomeEnd::Home { site: so.site, delete };
        }
        let name = &wf.files()[file].name;
        let reason = format!("could not send `{name}` back to the submit machine");
        HomeEnd::Lost {
            site: so.site,
            delete,
            reason,
        }
    }

    /// `job`'s node ended with its outputs registered at `site`: its final
    /// outputs to copy to its submit machine (none when it is there or
    /// down), counted as on their way.
    pub(crate) fn finals_to_send(&mut self, wf: &RunDag, job: JobId, site: SiteId) -> Vec<FileId> {
        let home = self.home[job];
        if site == home || self.pool.down[home] {
            return Vec::new();
        }
        let finals: Vec<FileId> = (wf.job(job).outputs.iter().copied())
            .filter(|&f| self.cache.unread[f])
            .collect();
        self.finals.out += finals.len();
        finals
    }

    /// A copy of `job`'s final output `file` from `from` to its submit
    /// machine ended, `ok` or not; `retries` tries are allowed.
    pub(crate) fn final_done(
        &mut self,
        wf: &RunDag,
        (job, file, from): (JobId, FileId, SiteId),
        (ok, retries): (bool, u32),
        out: &mut Vec<Command>,
    ) -> FinalEnd {
        if ok {
            self.finals.out -= 1;
            let waiting = self.replicas.register(file, self.home[job]);
            self.room.unkeep(wf, file, from);
            out.push(Command::Cleanup { site: from, file });
            return FinalEnd::Arrived(waiting);
        }
        let tries = self.finals.tries.entry(file).or_insert(0);
        *tries += 1;
        if *tries <= retries && !self.pool.down[from] && self.replicas.has(file, from) {
            FinalEnd::Retry
        } else {
            self.finals.out -= 1;
            FinalEnd::GaveUp
        }
    }

    /// A retry of a final output's copy from `from` is due: whether it is
    /// still there to send (lost meanwhile, its producer makes it again).
    pub(crate) fn final_still_there(&mut self, file: FileId, from: SiteId) -> bool {
        let there = self.replicas.has(file, from);
        if !there {
            self.finals.out -= 1;
        }
        there
    }

    /// The site a job's outputs are registered at when its node ends: its
    /// submit machine with the `return` policy, else where it ran.
    pub(crate) fn output_site(&self, job: JobId, ran_at: SiteId) -> SiteId {
        match self.policy {
            ReplicaPolicy::Return => self.home[job],
            _ => ran_at,
        }
    }

    /// Whether `job`, ended well at `site`, sends its outputs home before
    /// its node ends: with the `return` policy, when it has outputs and ran
    /// away from home.
    pub(crate) fn sends_home(&self, wf: &RunDag, job: JobId, site: SiteId) -> bool {
        self.policy == ReplicaPolicy::Return
            && site != self.home[job]
            && !wf.job(job).outputs.is_empty()
    }

    /// `job`'s outputs at `site`, no longer kept there (so that a release
    /// may delete them).
    fn own_outputs(
        &mut self,
        wf: &RunDag,
        job: JobId,
        site: SiteId,
        out: &mut Vec<Command>,
    ) -> Vec<FileId> {
        let outputs = wf.job(job).outputs.clone();
        for &file in &outputs {
            self.room.unkeep(wf, file, site);
            out.push(Command::Cleanup { site, file });
        }
        outputs
    }
}
