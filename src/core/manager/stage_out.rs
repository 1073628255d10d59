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

use super::*;

/// Final outputs on their way to their submit machine (`stage_out`).
#[derive(Debug, Default)]
pub(super) struct Finals {
    /// Copies in flight.
    pub(super) out: usize,
    /// Nodes ended whose final outputs are to leave (job, where they are).
    pub(super) due: Vec<(JobId, SiteId)>,
    /// Failed tries, per file.
    pub(super) tries: HashMap<FileId, u32>,
}

/// A job's outputs on their way home.
#[derive(Debug)]
pub(super) struct StageOut {
    site: SiteId,
    attempt: usize,
    /// Transfers not yet ended well.
    left: usize,
    /// Failed tries so far, per output.
    tries: Vec<(FileId, u32)>,
    /// Staged inputs the postscript deletes with the outputs.
    delete: Vec<FileId>,
}

impl Manager {
    /// Starts sending `job`'s outputs from `site` home (see
    /// [`Placement::sends_home`]).
    pub(super) fn start_stage_out(
        &mut self,
        job: JobId,
        site: SiteId,
        delete: Vec<FileId>,
        out: &mut Vec<Command>,
    ) {
        let outputs = self.wf.jobs[job].outputs.clone();
        let attempt = self.records.jobs[job].attempts.len() - 1;
        self.grid.stage_outs[job] = Some(StageOut {
            site,
            attempt,
            left: outputs.len(),
            tries: Vec::new(),
            delete,
        });
        for file in outputs {
            self.send_home(job, file, out);
        }
    }

    /// One output of `job` leaves for its submit machine.
    fn send_home(&mut self, job: JobId, file: FileId, out: &mut Vec<Command>) {
        let Some(so) = self.grid.stage_outs[job].as_ref() else {
            return;
        };
        let (from, to, attempt) = (so.site, self.grid.home[job], so.attempt);
        let retry = so.tries.iter().any(|&(f, _)| f == file);
        let kind = FlightKind::StageOut;
        self.start_flight((job, attempt), file, from, to, kind, retry, out);
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
        let Some(so) = self.grid.stage_outs[job]
            .as_mut()
            .filter(|so| so.attempt == attempt)
        else {
            return;
        };
        if ok {
            so.left -= 1;
            if so.left == 0 {
                self.finish_stage_out(job, out);
            }
            return;
        }
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
            let at = self.now + self.settings.transfer_backoff;
            self.schedule(at, Timer::RetryStageOut { job, attempt, file });
            return;
        }
        // The only copy could not be sent: the job's work is lost.
        let Some(so) = self.grid.stage_outs[job].take() else {
            return;
        };
        let name = &self.wf.files[file].name;
        let reason = format!("could not send `{name}` back to the submit machine");
        let mut delete = so.delete;
        delete.extend(self.grid.own_outputs(&self.wf, job, so.site, out));
        self.leave_slot(job, so.site, out);
        self.release_pins(job, so.site, delete, false, out);
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.ended = Some(self.now);
            a.outcome = Outcome::Failed(JobFailure::Failed(reason));
        }
        self.records.sites[so.site].failed += 1;
        self.set_state(job, JobState::Ready);
        self.retry(job, Retry::Counted);
    }

    /// A retry timer of an output's transfer home fired.
    pub(super) fn retry_stage_out(
        &mut self,
        job: JobId,
        attempt: usize,
        file: FileId,
        out: &mut Vec<Command>,
    ) {
        if self.grid.stage_outs[job]
            .as_ref()
            .is_some_and(|so| so.attempt == attempt)
        {
            self.send_home(job, file, out);
        }
    }

    /// Every output is home: the execute machine's copies and staged inputs
    /// go, the slot is free, and the job ends as any other.
    fn finish_stage_out(&mut self, job: JobId, out: &mut Vec<Command>) {
        let Some(so) = self.grid.stage_outs[job].take() else {
            return;
        };
        let mut delete = so.delete;
        delete.extend(self.grid.own_outputs(&self.wf, job, so.site, out));
        self.ended_well(job, so.site, delete, out);
    }
}

impl Manager {
    /// `job`'s node ended with its outputs registered at `site`: its final
    /// outputs leave for its submit machine (see the module's note).
    pub(super) fn stage_out_finals(&mut self, job: JobId, site: SiteId, out: &mut Vec<Command>) {
        let home = self.grid.home[job];
        if site == home || self.grid.pool.down[home] {
            return;
        }
        for i in 0..self.wf.jobs[job].outputs.len() {
            let file = self.wf.jobs[job].outputs[i];
            if self.grid.cache.unread[file] {
                self.grid.finals.out += 1;
                self.send_final(job, file, site, false, out);
            }
        }
    }

    fn send_final(
        &mut self,
        job: JobId,
        file: FileId,
        from: SiteId,
        retry: bool,
        out: &mut Vec<Command>,
    ) {
        let attempt = self.records.jobs[job].attempts.len().saturating_sub(1);
        let to = self.grid.home[job];
        self.start_flight((job, attempt), file, from, to, FlightKind::Final, retry, out);
    }

    /// A final output's copy to the submit machine ended: registered there
    /// and cleaned up where it was made, or tried again.
    pub(super) fn on_final_done(
        &mut self,
        job: JobId,
        file: FileId,
        from: SiteId,
        ok: bool,
        out: &mut Vec<Command>,
    ) {
        let to = self.grid.home[job];
        if ok {
            self.grid.finals.out -= 1;
            self.register(file, to);
            self.grid.room.unkeep(&self.wf, file, from);
            out.push(Command::Cleanup { site: from, file });
            return;
        }
        let tries = self.grid.finals.tries.entry(file).or_insert(0);
        *tries += 1;
        if *tries <= self.settings.transfer_retries && !self.grid.pool.down[from] && self.grid.replicas.has(file, from)
        {
            let at = self.now + self.settings.transfer_backoff;
            self.schedule(at, Timer::RetryFinal { job, file, from });
        } else {
            self.grid.finals.out -= 1; // stays kept where it was made
        }
    }

    /// A retry timer of a final output's copy fired.
    pub(super) fn retry_final(&mut self, job: JobId, file: FileId, from: SiteId, out: &mut Vec<Command>) {
        if self.grid.replicas.has(file, from) {
            self.send_final(job, file, from, true, out);
        } else {
            self.grid.finals.out -= 1; // lost meanwhile: its producer makes it again
        }
    }
}

impl Placement {
    /// The site a job's outputs are registered at when its node ends: its
    /// submit machine with the `return` policy, else where it ran.
    pub(super) fn output_site(&self, job: JobId, ran_at: SiteId) -> SiteId {
        match self.policy {
            ReplicaPolicy::Return => self.home[job],
            _ => ran_at,
        }
    }

    /// Whether `job`, ended well at `site`, sends its outputs home before
    /// its node ends: with the `return` policy, when it has outputs and ran
    /// away from home.
    pub(super) fn sends_home(&self, wf: &Workflow, job: JobId, site: SiteId) -> bool {
        self.policy == ReplicaPolicy::Return
            && site != self.home[job]
            && !wf.jobs[job].outputs.is_empty()
    }

    /// `job`'s outputs at `site`, no longer kept there (so that a release
    /// may delete them).
    fn own_outputs(
        &mut self,
        wf: &Workflow,
        job: JobId,
        site: SiteId,
        out: &mut Vec<Command>,
    ) -> Vec<FileId> {
        let outputs = wf.jobs[job].outputs.clone();
        for &file in &outputs {
            self.room.unkeep(wf, file, site);
            out.push(Command::Cleanup { site, file });
        }
        outputs
    }
}
