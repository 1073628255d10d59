//! The manager's part in the transfers that are no stage-in: an output
//! sent home (`stage_out.rs`'s `return` policy and Pegasus's stage-out of
//! final outputs), a k-replication move (`maintenance.rs`), a memoized
//! job's copy (`memo.rs`). The placement room decides what each transfer's
//! end means; here the manager carries it out on the node life cycle, the
//! records and the timers.

use super::maintenance::CacheStep;
use super::memo::MemoCopied;
use super::stage_out::{FinalEnd, HomeEnd};
use super::*;

impl Manager {
    /// Starts sending `job`'s outputs from `site` home, `delete` going with
    /// them.
    pub(super) fn start_stage_out(
        &mut self,
        job: JobId,
        site: SiteId,
        delete: Vec<FileId>,
        out: &mut Vec<Command>,
    ) {
        let attempt = self.records.jobs[job].attempts.len() - 1;
        for file in self.grid.begin_stage_out(&self.wf, (job, attempt), site, delete) {
            self.send_home(job, file, None, out);
        }
    }

    /// One output of `job` leaves for its submit machine, if `attempt` (any
    /// when none) still sends it.
    fn send_home(&mut self, job: JobId, file: FileId, attempt: Option<usize>, out: &mut Vec<Command>) {
        if let Some((from, to, attempt, retry)) = self.grid.home_flight(job, file, attempt) {
            let kind = FlightKind::StageOut;
            self.start_flight((job, attempt), file, from, to, kind, retry, out);
        }
    }

    /// A transfer of an output home ended.
    pub(super) fn on_stage_out_done(
        &mut self,
        job: JobId,
        attempt: usize,
        file: FileId,
        ok: bool,
        out: &mut Vec<Command>,
    ) {
        let retries = self.settings.transfer_retries;
        match self.grid.home_done(&self.wf, (job, attempt), file, (ok, retries), out) {
            HomeEnd::Stale | HomeEnd::Pending => {}
            HomeEnd::Retry => {
                let at = self.now + self.settings.transfer_backoff;
                self.schedule(at, Timer::RetryStageOut { job, attempt, file });
            }
            // The slot is free, and the job ends as any other.
            HomeEnd::Home { site, delete } => self.ended_well(job, site, delete, out),
            // The only copy could not be sent: the job's work is lost.
            HomeEnd::Lost { site, delete, reason } => {
                self.leave_slot(job, site, out);
                self.grid.release_pins(&self.wf, (job, site), delete, false, out);
                if let Some(a) = self.records.jobs[job].attempts.last_mut() {
                    a.ended = Some(self.now);
                    a.outcome = Outcome::Failed(JobFailure::Failed(reason));
                }
                self.records.sites[site].failed += 1;
                self.set_state(job, JobState::Ready);
                self.retry(job, Retry::Counted);
            }
        }
    }

    /// A retry timer of an output's transfer home fired.
    pub(super) fn retry_stage_out(
        &mut self,
        job: JobId,
        attempt: usize,
        file: FileId,
        out: &mut Vec<Command>,
    ) {
        self.send_home(job, file, Some(attempt), out);
    }

    /// `job`'s node ended with its outputs registered at `site`: its final
    /// outputs leave for its submit machine.
    pub(super) fn stage_out_finals(&mut self, job: JobId, site: SiteId, out: &mut Vec<Command>) {
        for file in self.grid.finals_to_send(&self.wf, job, site) {
            self.send_final(job, file, site, false, out);
        }
    }

    fn send_final(&mut self, job: JobId, file: FileId, from: SiteId, retry: bool, out: &mut Vec<Command>) {
        let attempt = self.records.jobs[job].attempts.len().saturating_sub(1);
        let to = self.grid.home[job];
        self.start_flight((job, attempt), file, from, to, FlightKind::Final, retry, out);
    }

    /// A final output's copy to the submit machine ended.
    pub(super) fn on_final_done(
        &mut self,
        job: JobId,
        file: FileId,
        from: SiteId,
        ok: bool,
        out: &mut Vec<Command>,
    ) {
        let retries = self.settings.transfer_retries;
        match self.grid.final_done(&self.wf, (job, file, from), (ok, retries), out) {
            FinalEnd::Arrived(waiting) => {
                if let Some(jobs) = waiting {
                    self.dag.requeue_ready(jobs);
                }
            }
            FinalEnd::Retry => {
                let at = self.now + self.settings.transfer_backoff;
                self.schedule(at, Timer::RetryFinal { job, file, from });
            }
            FinalEnd::GaveUp => {}
        }
    }

    /// A retry timer of a final output's copy fired.
    pub(super) fn retry_final(&mut self, job: JobId, file: FileId, from: SiteId, out: &mut Vec<Command>) {
        if self.grid.final_still_there(file, from) {
            self.send_final(job, file, from, true, out);
        }
    }

    /// A job ended at `site`: its cache is brought back under the bound.
    pub(super) fn maintain_cache(&mut self, site: SiteId, job: JobId, out: &mut Vec<Command>) {
        let Some(bound) = self.settings.cache_bound else {
            return;
        };
        let view = maintenance::CacheView {
            wf: &self.wf,
            sites: &self.sites,
            state: &self.dag.state,
            now: self.now,
            k: self.settings.replicas,
        };
        for step in self.grid.cache_plan(&view, site, bound) {
            match step {
                CacheStep::Replicate { file, from, to } => {
                    let attempt = self.records.jobs[job].attempts.len().saturating_sub(1);
                    let kind = FlightKind::Replica;
                    self.start_flight((job, attempt), file, from, to, kind, false, out);
                }
                CacheStep::Delete { file, site } => self.delete_copy(file, site, out),
            }
        }
    }

    /// A k-replication transfer ended.
    pub(super) fn on_replica_done(
        &mut self,
        file: FileId,
        (from, to): (SiteId, SiteId),
        ok: bool,
        out: &mut Vec<Command>,
    ) {
        let (waiting, delete) = self.grid.replica_done(file, (from, to), ok);
        if let Some(jobs) = waiting {
            self.dag.requeue_ready(jobs);
        }
        if delete {
            self.delete_copy(file, from, out);
        }
    }

    /// The copy of `file` at `site` goes: forgotten, then deleted.
    fn delete_copy(&mut self, file: FileId, site: SiteId, out: &mut Vec<Command>) {
        self.forget_copy(file, site);
        out.push(Command::Delete { site, file });
    }

    /// A copy of memoized `job`'s output `file` to `to` ended.
    pub(super) fn on_memo_copied(&mut self, job: JobId, file: FileId, to: SiteId, ok: bool) {
        match self.grid.memo_copied(job, file, to, ok) {
            MemoCopied::Stale => {}
            MemoCopied::GaveUp => {
                if self.dag.missing_parents[job] == 0 {
                    self.make_ready(job);
                }
            }
            MemoCopied::Copied { last, waiting } => {
                if let Some(jobs) = waiting {
                    self.dag.requeue_ready(jobs);
                }
                if last {
                    self.memo_done(job);
                }
            }
        }
    }
}
