//! A job's end at its site and the postscript: the replica policy, output
//! registration, DAGMan POST scripts, and the node's end.

use super::ends::{JobEnd, PostEnd, PreEnd};
use super::*;

impl Manager {
    pub(super) fn on_job_started(&mut self, job: JobId, site: SiteId) {
        if self.dag.state[job] != JobState::Queued || self.grid.site_of[job] != site {
            return;
        }
        self.set_state(job, JobState::Running);
        self.dag.submitted_well(job);
        self.life(|dag, port| dag.provisioned(job, port));
        self.records.sites[site].started += 1;
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.started = Some(self.now);
        }
    }

    /// A member of a clustered job ended at `site`: recorded, and its
    /// outputs, written as it ended, registered there.
    pub(super) fn on_member_ended(&mut self, job: JobId, site: SiteId, member: usize, status: i32) {
        if self.dag.state[job] != JobState::Running || self.grid.site_of[job] != site {
            return;
        }
        let wf = self.wf.clone();
        let Some(m) = wf.job(job).members.get(member) else {
            return;
        };
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            let start = a
                .members
                .last()
                .map(|r| r.end)
                .or(a.started)
                .unwrap_or(self.now);
            a.members.push(MemberRun {
                name: m.name.clone(),
                start,
                end: self.now,
                status,
            });
        }
        if status == 0 {
            for &o in &m.outputs {
                self.register(o, site);
            }
        }
    }

    /// The procs of `job`'s cluster ended at `site`: recorded against
    /// its attempt there.
    pub(super) fn on_procs_ended(&mut self, job: JobId, site: SiteId, exits: Vec<Option<i32>>) {
        if !self.dag.state[job].claims_slot() || self.grid.site_of[job] != site {
            return;
        }
        let attempt = self.records.jobs[job].attempts.len().saturating_sub(1);
        self.records.procs.entry(job).or_default().push((attempt, exits));
    }

    pub(super) fn on_job_ended(
        &mut self,
        job: JobId,
        site: SiteId,
        result: Result<(), JobFailure>,
        out: &mut Vec<Command>,
    ) {
        let st = self.dag.state[job];
        if !matches!(st, JobState::Queued | JobState::Running) || self.grid.site_of[job] != site {
            return;
        }
        self.grid.pool.active[site] -= 1;
        self.dag.left_queue(job);
        if let Err(JobFailure::SubmitFailed(why)) = result {
            return self.submit_failed(job, site, why, out);
        }
        let staged = self.grid.take_staged(job);
        let delete = self.grid.postscript_replicas(site, &staged);
        let home_bound = result.is_ok() && self.grid.sends_home(&self.wf, job, site);
        let mut attempt = self.records.jobs[job].attempts.last_mut();
        if let Some(a) = attempt.as_mut() {
            a.finished = Some(self.now);
            a.exit = match &result {
                Ok(()) => Some(0),
                Err(JobFailure::Exit(status)) => Some(*status),
                Err(_) => None,
            };
        }
        match result {
            // With the `return` policy the slot stays claimed while the
            // outputs go home.
            Ok(()) if home_bound => {
                let attempt = self.records.jobs[job].attempts.len() - 1;
                let mut steps = Vec::new();
                self.grid.start_stage_out(&self.wf, (job, attempt), site, delete, &mut steps);
                self.route(&mut steps, out);
            }
            Ok(()) => self.ended_well(job, site, delete, out),
            Err(JobFailure::Exit(status)) => {
                self.leave_slot(job, site, out);
                self.grid.release_pins(&self.wf, (job, site), delete, false, out);
                self.job_ended(job, site, Some(status), out);
            }
            Err(failure) => {
                self.failed_at_site(job, site, delete, failure.clone(), out);
                let retry = match failure {
                    JobFailure::MissingInput(_) => Retry::Now,
                    JobFailure::NoSpace { never: true } => {
                        self.grid.avoid.entry(job).or_default().push(site);
                        Retry::Now
                    }
                    JobFailure::NoSpace { never: false } => Retry::Later,
                    // (An exit is `job_ended`'s, a failed submission
                    // `submit_failed`'s.)
                    JobFailure::Failed(_) | JobFailure::Exit(_) | JobFailure::SubmitFailed(_) => {
                        Retry::Counted
                    }
                };
                self.retry(job, retry);
            }
        }
    }

    /// DAGMan could not submit `job`'s job to `site`, for `why`: it tries
    /// again later, its placement kept, or gives up
    /// ([`NodeLife::submit_failed`]); then its POST script runs, seeing
    /// [`SUBMIT_FAILED`], or the node fails.
    fn submit_failed(&mut self, job: JobId, site: SiteId, why: String, out: &mut Vec<Command>) {
        // A MonitQueue kill on its way finds nothing to kill.
        self.grid.pool.killing[job] = false;
        self.leave_slot(job, site, out);
        self.records.sites[site].submitted -= 1;
        let rec = &mut self.records.jobs[job];
        let attempt = rec.attempts.len().saturating_sub(1);
        if let Some(a) = rec.attempts.last_mut() {
            a.submitted = None;
        }
        let failed = self.records.submit_failures.entry(job).or_default();
        failed.push((attempt, self.now));
        // DAGMan counts each submission of the node, those that went
        // through too.
        let went = rec.attempts.iter().filter(|a| a.submitted.is_some()).count();
        let tries = failed.len() + went;
        let max = self.settings.max_retries;
        match self.dag.submit_failed(job, tries as u32, self.now, max) {
            SubmitFailure::TryAgain => {
                self.set_state(job, JobState::Staging);
                self.condor_submit(job, attempt, self.now, out);
            }
            SubmitFailure::GiveUp if self.dag.nodes.post[job] => {
                self.unpin_staged(job, site, out);
                self.dag.exited[job] = Some(SUBMIT_FAILED);
                self.set_state(job, JobState::Running);
                self.run_script(job, ScriptKind::Post, SUBMIT_FAILED, out);
            }
            SubmitFailure::GiveUp => {
                self.unpin_staged(job, site, out);
                if let Some(a) = self.records.jobs[job].attempts.last_mut() {
                    a.ended = Some(self.now);
                    a.outcome = Outcome::Failed(JobFailure::SubmitFailed(why.clone()));
                }
                self.records.sites[site].failed += 1;
                self.fail_for_good(job, format!("job submit failed: {why}"));
            }
        }
    }

    /// The sub-DAG node `job` ended at `site` with its DAG's failure
    /// `status`, as a job that exits it: its POST script decides, its
    /// TOLERANCE lets it end done, or the node is retried (its DAG run
    /// again) or fails.
    pub(super) fn subdag_failed(&mut self, job: JobId, site: SiteId, status: i32, out: &mut Vec<Command>) {
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.finished = Some(self.now);
            a.exit = Some(status);
        }
        self.job_ended(job, site, Some(status), out);
    }

    /// `job`'s attempt failed at `site` for `failure`, not an exit of its
    /// own: recorded, its slot and pins released (`delete` going), and its
    /// node ready to be planned again.
    pub(super) fn failed_at_site(
        &mut self,
        job: JobId,
        site: SiteId,
        delete: Vec<FileId>,
        failure: JobFailure,
        out: &mut Vec<Command>,
    ) {
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.ended = Some(self.now);
            a.outcome = Outcome::Failed(failure);
        }
        self.records.sites[site].failed += 1;
        self.leave_slot(job, site, out);
        self.grid.release_pins(&self.wf, (job, site), delete, false, out);
        self.set_state(job, JobState::Ready);
    }

    /// The node's job (or its sub-DAG) ended at `site`, having exited
    /// `exit` (`None`: it ended well), and left it: the node decides what
    /// that means ([`NodeLife::job_end`]), the manager carries it out.
    pub(super) fn job_ended(
        &mut self,
        job: JobId,
        site: SiteId,
        exit: Option<i32>,
        out: &mut Vec<Command>,
    ) {
        let status = exit.unwrap_or(0);
        match self.dag.job_end(job, exit) {
            JobEnd::Post => self.run_script(job, ScriptKind::Post, status, out),
            JobEnd::Done => {
                self.abort_on(job, status, out);
                self.postscript(job, site);
            }
            JobEnd::Failed(retry) => {
                if let Some(a) = self.records.jobs[job].attempts.last_mut() {
                    a.ended = Some(self.now);
                    a.outcome = Outcome::Failed(JobFailure::Exit(status));
                }
                self.records.sites[site].failed += 1;
                self.set_state(job, JobState::Ready);
                self.abort_on(job, status, out);
                self.retry(job, retry);
            }
        }
    }

    /// The job ended well at `site` and left its slot: the site deletes
    /// `delete`, and DAGMan learns of the end at its next log scan.
    pub(super) fn ended_well(
        &mut self,
        job: JobId,
        site: SiteId,
        delete: Vec<FileId>,
        out: &mut Vec<Command>,
    ) {
        self.leave_slot(job, site, out);
        self.grid.release_pins(&self.wf, (job, site), delete, true, out);
        let noticed = self.grid.pool.wms.noticed(self.now);
        if noticed > self.now {
            self.schedule(noticed, Timer::Noticed { job, site });
        } else {
            self.job_ended(job, site, None, out);
        }
    }

    /// DAGMan's `PRE_SKIP`: the PRE script exited the node's skip value, so
    /// the node is done, successfully, with neither its job nor its POST
    /// script run (HTCondor's `Dag::PreScriptReaper`). Like a DONE node it
    /// writes no outputs.
    fn pre_skipped(&mut self, job: JobId, out: &mut Vec<Command>) {
        if !self.end_staging(job, out) {
            return;
        }
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.ended = Some(self.now);
            a.outcome = Outcome::Ended;
        }
        if let Some(node) = self.dag.node_of_entry(job) {
            self.life(|dag, port| dag.skip_subdag(node, port));
        }
        self.set_state(job, JobState::Done);
        if !std::mem::take(&mut self.dag.rerun[job]) {
            self.life(|dag, port| dag.release_children(job, port));
        }
    }

    /// `DAGMAN_ALWAYS_RUN_POST`: the PRE script failed, so the job is
    /// skipped, and the POST script runs anyway with `$RETURN` DAGMan's
    /// `DAG_ERROR_JOB_SKIPPED` (-1004) and `$PRE_SCRIPT_RETURN` the PRE
    /// script's exit; its exit decides the node as after a job
    /// (`Dag::PreScriptReaper`). The job wrote nothing.
    fn post_after_failed_pre(&mut self, job: JobId, out: &mut Vec<Command>) {
        const DAG_ERROR_JOB_SKIPPED: i32 = -1004;
        // The prescript placed it: `site_of` is where its POST script runs.
        if !self.end_staging(job, out) {
            return;
        }
        self.set_state(job, JobState::Running);
        self.dag.exited[job] = Some(DAG_ERROR_JOB_SKIPPED);
        self.run_script(job, ScriptKind::Post, DAG_ERROR_JOB_SKIPPED, out);
    }

    /// The postscript, after its overhead if there is one.
    pub(super) fn postscript(&mut self, job: JobId, site: SiteId) {
        let delay = self.grid.pool.wms.draw(&self.settings.postscript_overhead);
        if delay > 0.0 {
            self.schedule(self.now + delay, Timer::Postscript { job, site });
        } else {
            self.node_done(job, site);
        }
    }

    /// A node's script ended. A failed PRE script fails the attempt before
    /// anything is staged; a failed POST script fails the node (its outputs,
    /// already written, stay registered where they are); both count against
    /// the node's RETRY, as in DAGMan.
    pub(super) fn on_script_done(
        &mut self,
        job: JobId,
        kind: ScriptKind,
        status: i32,
        out: &mut Vec<Command>,
    ) {
        if let Some(run) = self.records.jobs[job].attempts.last_mut().and_then(|a| {
            a.scripts
                .iter_mut()
                .rev()
                .find(|r| r.kind == kind && r.end.is_none())
        }) {
            run.end = Some(self.now);
            run.status = Some(status);
        }
        let running = match kind {
            ScriptKind::Pre => (self.grid.staging[job].as_ref()).is_some_and(|s| s.pre_running),
            ScriptKind::Post => self.dag.state[job] == JobState::Running,
        };
        if !running {
            return;
        }
        if kind == ScriptKind::Post {
            self.post_ended(job, out);
        }
        if let Some(wait) = self.dag.deferral(job, kind, status) {
            self.schedule(self.now + wait, Timer::Script { job, kind });
            return;
        }
        match kind {
            ScriptKind::Pre => {
                if let Some(st) = self.grid.staging[job].as_mut() {
                    st.pre_running = false;
                }
                self.dag.pre_returned(job, status);
                self.abort_on(job, status, out);
                match self.dag.pre_end(&self.wf, job, status) {
                    PreEnd::Skip => self.pre_skipped(job, out),
                    PreEnd::PostAnyway => self.post_after_failed_pre(job, out),
                    PreEnd::Submit => self.launch(job, out),
                    PreEnd::Failed(why, retry) => self.abort_staging(job, why, retry, out),
                }
            }
            ScriptKind::Post => {
                let site = self.grid.site_of[job];
                self.abort_on(job, status, out);
                match self.dag.post_end(job, status) {
                    // A POST script that exits 0 rescues a failed job.
                    PostEnd::Done => self.postscript(job, site),
                    PostEnd::Failed { wrote, retry } => {
                        if wrote {
                            for &o in &self.wf.clone().job(job).outputs {
                                self.register(o, site);
                            }
                        }
                        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
                            a.ended = Some(self.now);
                            let why = format!("POST script exited {status}");
                            a.outcome = Outcome::Failed(JobFailure::Failed(why));
                        }
                        self.records.sites[site].failed += 1;
                        self.set_state(job, JobState::Ready);
                        self.retry(job, retry);
                    }
                }
            }
        }
    }

    /// The job ended well and its postscript is over: outputs registered,
    /// children released. `ended` is this instant (the node's end).
    pub(super) fn node_done(&mut self, job: JobId, site: SiteId) {
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.ended = Some(self.now);
            a.outcome = Outcome::Ended;
        }
        // A job its POST script rescued wrote nothing.
        if self.dag.exited[job].take().is_none() {
            let at = self.grid.output_site(job, site);
            for &o in &self.wf.clone().job(job).outputs {
                self.register(o, at);
                self.grid.cache.made_at[o] = Some(at);
            }
            self.grid.memo_ended(job);
            if self.settings.stage_out {
                self.grid.finals.due.push((job, at));
            }
        }
        if self.settings.cache_bound.is_some() {
            self.grid.cache.maintenance_due.push((site, job));
        }
        self.records.sites[site].ended += 1;
        self.grid.last_ended = Some(site);
        self.set_state(job, JobState::Done);
        if std::mem::take(&mut self.dag.rerun[job]) {
            return; // its children were released when it first ended
        }
        // A sub-DAG's entry submits its DAG, which its DAGMan's limit may
        // hold.
        if self.dag.subdag_start_held(job) {
            return;
        }
        self.life(|dag, port| dag.release_children(job, port));
    }
}
