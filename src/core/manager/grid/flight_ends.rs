//! The transfers that are no stage-in, as the placement room runs them: an
//! output sent home (`stage_out.rs`'s `return` policy and Pegasus's
//! stage-out of final outputs), a k-replication move (`maintenance.rs`), a
//! memoized job's copy (`memo.rs`). Each rule here decides what starting
//! or ending such a transfer means and says it as [`GridStep`]s, which the
//! manager carries out on the node life cycle, the records and the timers.

use super::maintenance::{CacheStep, CacheView};
use super::memo::MemoCopied;
use super::placement::GridStep;
use super::stage_out::{FinalEnd, HomeEnd};
use super::transfers::{Flight, FlightKind};
use super::*;

impl Placement {
    /// Starts sending `job`'s outputs (of its `attempt`) from `site` home,
    /// `delete` going with them.
    pub(crate) fn start_stage_out(
        &mut self,
        wf: &RunDag,
        (job, attempt): (JobId, usize),
        site: SiteId,
        delete: Vec<FileId>,
        steps: &mut Vec<GridStep>,
    ) {
        for file in self.begin_stage_out(wf, (job, attempt), site, delete) {
            self.send_home(job, file, None, steps);
        }
    }

    /// One output of `job` leaves for its submit machine, if `attempt` (any
    /// when none) still sends it.
    fn send_home(&self, job: JobId, file: FileId, attempt: Option<usize>, steps: &mut Vec<GridStep>) {
        if let Some((from, to, attempt, retry)) = self.home_flight(job, file, attempt) {
            let kind = FlightKind::StageOut;
            let attempt = Some(attempt);
            steps.push(GridStep::Send { job, attempt, file, from, to, kind, retry });
        }
    }

    /// A retry timer of `job`'s output transfer home, of its `attempt`,
    /// fired.
    pub(crate) fn retry_stage_out(&self, job: JobId, attempt: usize, file: FileId, steps: &mut Vec<GridStep>) {
        self.send_home(job, file, Some(attempt), steps);
    }

    /// `job`'s node ended with its outputs registered at `site`: its final
    /// outputs leave for its submit machine.
    pub(crate) fn stage_out_finals(
        &mut self,
        wf: &RunDag,
        job: JobId,
        site: SiteId,
        steps: &mut Vec<GridStep>,
    ) {
        for file in self.finals_to_send(wf, job, site) {
            self.send_final(job, file, site, false, steps);
        }
    }

    fn send_final(&self, job: JobId, file: FileId, from: SiteId, retry: bool, steps: &mut Vec<GridStep>) {
        let (to, kind) = (self.home[job], FlightKind::Final);
        steps.push(GridStep::Send { job, attempt: None, file, from, to, kind, retry });
    }

    /// A retry timer of a final output's copy fired.
    pub(crate) fn retry_final(&mut self, job: JobId, file: FileId, from: SiteId, steps: &mut Vec<GridStep>) {
        if self.final_still_there(file, from) {
            self.send_final(job, file, from, true, steps);
        }
    }

    /// A job ended at `site`: its cache is brought back under `bound`, the
    /// k-replication moves counted as the transfers of `job`.
    pub(crate) fn maintain_cache(
        &mut self,
        view: &CacheView,
        (site, job): (SiteId, JobId),
        bound: u64,
        steps: &mut Vec<GridStep>,
    ) {
        for step in self.cache_plan(view, site, bound) {
            steps.push(match step {
                CacheStep::Replicate { file, from, to } => {
                    let kind = FlightKind::Replica;
                    GridStep::Send { job, attempt: None, file, from, to, kind, retry: false }
                }
                CacheStep::Delete { file, site } => GridStep::Delete { file, site },
            });
        }
    }

    /// Transfer `fl`, which is no stage-in, ended `ok` or not; `retries`
    /// tries are allowed each.
    pub(crate) fn flight_ended(
        &mut self,
        wf: &RunDag,
        fl: &Flight,
        (ok, retries): (bool, u32),
        out: &mut Vec<Command>,
        steps: &mut Vec<GridStep>,
    ) {
        let Flight { job, attempt, file, from, to, kind } = *fl;
        match kind {
            // A stage-in's end is its prescript's (`stage_ended`).
            FlightKind::Stage => {}
            FlightKind::StageOut => match self.home_done(wf, (job, attempt), file, (ok, retries), out) {
                HomeEnd::Stale | HomeEnd::Pending => {}
                HomeEnd::Retry => steps.push(GridStep::AfterBackoff(Timer::RetryStageOut { job, attempt, file })),
                HomeEnd::Home { site, delete } => steps.push(GridStep::Home { job, site, delete }),
                HomeEnd::Lost { site, delete, reason } => {
                    steps.push(GridStep::Lost { job, site, delete, reason })
                }
            },
            FlightKind::Final => match self.final_done(wf, (job, file, from), (ok, retries), out) {
                FinalEnd::Arrived(waiting) => steps.extend(waiting.map(GridStep::Requeue)),
                FinalEnd::Retry => steps.push(GridStep::AfterBackoff(Timer::RetryFinal { job, file, from })),
                FinalEnd::GaveUp => {}
            },
            FlightKind::Replica => {
                let (waiting, delete) = self.replica_done(file, (from, to), ok);
                steps.extend(waiting.map(GridStep::Requeue));
                if delete {
                    steps.push(GridStep::Delete { file, site: from });
                }
            }
            FlightKind::Memo { .. } => match self.memo_copied(job, file, to, ok) {
                MemoCopied::Stale => {}
                MemoCopied::GaveUp => steps.push(GridStep::Unmemoized(job)),
                MemoCopied::Copied { last, waiting } => {
                    steps.extend(waiting.map(GridStep::Requeue));
                    if last {
                        steps.push(GridStep::Memoized(job));
                    }
                }
            },
        }
    }
}
