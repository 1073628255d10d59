//! A job's end at its site and the postscript: the replica policy, output
//! registration, DAGMan POST scripts, and the node's end.

use super::*;

impl Manager {
    pub(super) fn on_job_started(&mut self, job: JobId, site: SiteId) {
        if self.dag.state[job] != JobState::Queued || self.grid.site_of[job] != site {
            return;
        }
        self.set_state(job, JobState::Running);
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
        let Some(m) = wf.jobs[job].members.get(member) else {
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
            Ok(()) if home_bound => self.start_stage_out(job, site, delete, out),
            Ok(()) => self.ended_well(job, site, delete, out),
            Err(JobFailure::Exit(status)) => {
                self.leave_slot(job, site, out);
                self.grid.release_pins(&self.wf, (job, site), delete, false, out);
                self.job_exited(job, site, status, out);
            }
            Err(failure) => {
                if let Some(a) = attempt {
                    a.ended = Some(self.now);
                    a.outcome = Outcome::Failed(failure.clone());
                }
                self.records.sites[site].failed += 1;
                self.leave_slot(job, site, out);
                self.grid.release_pins(&self.wf, (job, site), delete, false, out);
                self.set_state(job, JobState::Ready);
                let retry = match failure {
                    JobFailure::MissingInput(_) => Retry::Now,
                    JobFailure::NoSpace { never: true } => {
                        self.grid.avoid.entry(job).or_default().push(site);
                        Retry::Now
                    }
                    JobFailure::NoSpace { never: false } => Retry::Later,
                    // (An exit is `job_exited`'s.)
                    JobFailure::Failed(_) | JobFailure::Exit(_) => Retry::Counted,
                };
                self.retry(job, retry);
            }
        }
    }

    /// The node's job (or its sub-DAG) exited `status` ≠ 0 at `site` and
    /// left it, as DAGMan's `Dag::ProcessJobProcEnd` takes it: the POST
    /// script runs, `$RETURN` the status, and decides the node; else a
    /// failure its `TOLERANCE` allows leaves the job list successful and
    /// the node ends done (writing no outputs); else the node is retried or
    /// fails.
    pub(super) fn job_exited(
        &mut self,
        job: JobId,
        site: SiteId,
        status: i32,
        out: &mut Vec<Command>,
    ) {
        if self.dag.nodes.post[job] || self.dag.nodes.tolerant.contains(&job) {
            self.dag.exited[job] = Some(status);
            if self.dag.nodes.post[job] {
                self.run_script(job, ScriptKind::Post, status, out);
            } else {
                self.abort_on(job, status, out);
                self.postscript(job, site);
            }
            return;
        }
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.ended = Some(self.now);
            a.outcome = Outcome::Failed(JobFailure::Exit(status));
        }
        self.records.sites[site].failed += 1;
        self.set_state(job, JobState::Ready);
        self.abort_on(job, status, out);
        let retry = self.dag.unless_exit(job, status);
        self.retry(job, retry);
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
            self.job_succeeded(job, site, out);
        }
    }

    /// The job ended well at `site`: its POST script runs if it has one, then
    /// the postscript.
    pub(super) fn job_succeeded(&mut self, job: JobId, site: SiteId, out: &mut Vec<Command>) {
        if self.dag.nodes.post[job] {
            self.run_script(job, ScriptKind::Post, 0, out);
        } else {
            self.abort_on(job, 0, out);
            self.postscript(job, site);
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
        let defer = match kind {
            ScriptKind::Pre => self.dag.nodes.pre_defer[job],
            ScriptKind::Post => self.dag.nodes.post_defer[job],
        };
        let retry = self.dag.unless_exit(job, status);
        if let Some(run) = self.records.jobs[job].attempts.last_mut().and_then(|a| {
            a.scripts
                .iter_mut()
                .rev()
                .find(|r| r.kind == kind && r.end.is_none())
        }) {
            run.end = Some(self.now);
            run.status = Some(status);
        }
        match kind {
            ScriptKind::Pre => {
                let Some(st) = self.grid.staging[job].as_mut().filter(|s| s.pre_running) else {
                    return;
                };
                if let Some((deferred, time)) = defer
                    && deferred == status
                {
                    self.schedule(self.now + time, Timer::Script { job, kind });
                    return;
                }
                st.pre_running = false;
                let owner = self.dag.node_of_entry(job).unwrap_or(job);
                self.dag.pre_return.insert(owner, status);
                self.abort_on(job, status, out);
                if status != 0 && self.dag.nodes.pre_skip[job] == Some(status) {
                    self.pre_skipped(job, out);
                } else if status != 0
                    && self.dag.nodes.post[job]
                    && self.dag.always_runs_post(job)
                    && !self.dag.stopped_for(job)
                {
                    self.post_after_failed_pre(job, out);
                } else if status == 0 && !self.dag.stopped_for(job) {
                    self.launch(job, out);
                } else if status == 0 {
                    let reason = self.dag.stop_reason(&self.wf, job);
                    self.abort_staging(job, reason, Retry::Never, out);
                } else {
                    let reason = format!("PRE script exited {status}");
                    self.abort_staging(job, reason, retry, out);
                }
            }
            ScriptKind::Post => {
                if self.dag.state[job] != JobState::Running {
                    return;
                }
                self.post_ended(job, out);
                if let Some((deferred, time)) = defer
                    && deferred == status
                {
                    self.schedule(self.now + time, Timer::Script { job, kind });
                    return;
                }
                let site = self.grid.site_of[job];
                self.abort_on(job, status, out);
                if status == 0 {
                    // A POST script that exits 0 rescues a failed job.
                    self.postscript(job, site);
                    return;
                }
                if self.dag.exited[job].is_none() {
                    for &o in &self.wf.clone().jobs[job].outputs {
                        self.register(o, site);
                    }
                }
                if let Some(a) = self.records.jobs[job].attempts.last_mut() {
                    a.ended = Some(self.now);
                    a.outcome =
                        Outcome::Failed(JobFailure::Failed(format!("POST script exited {status}")));
                }
                self.records.sites[site].failed += 1;
                self.set_state(job, JobState::Ready);
                self.retry(job, retry);
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
            for &o in &self.wf.clone().jobs[job].outputs {
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

impl Placement {
    /// Applies the replica policy to the copies a job staged at `site`: caching
    /// registers them, delete returns them for removal (never a registered one).
    pub(super) fn postscript_replicas(&mut self, site: SiteId, staged: &[FileId]) -> Vec<FileId> {
        match self.policy {
            // Registered when they arrived (see `on_transfer_done`), or now.
            ReplicaPolicy::Caching => {
                self.replicas.publish(staged, site);
                Vec::new()
            }
            ReplicaPolicy::Delete | ReplicaPolicy::Return => staged
                .iter()
                .copied()
                .filter(|&f| !self.replicas.has(f, site))
                .collect(),
        }
    }
}

impl NodeLife {
    /// `RETRY … UNLESS-EXIT`: a node exiting that value is not retried.
    fn unless_exit(&self, job: JobId, status: i32) -> Retry {
        if self.nodes.retry_unless_exit[job] == Some(status) {
            Retry::Never
        } else {
            Retry::Counted
        }
    }
}
