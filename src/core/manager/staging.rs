//! The prescript (seed 000 §4) and submission, as the manager carries them
//! out: a site chosen and the job placed there (the placement's rules,
//! `grid/site_choice.rs`), its PRE script, every missing input staged
//! from the least busy replica (`grid/stage_in.rs`), then its submission,
//! DAGMan's submit cycle and the pool's schedd (`grid/schedd.rs`).

use super::*;
use super::dagman_limits::Released;
use super::schedd::Entered;
use super::site_choice::{DagSide, NoSite};

/// What became of a ready job offered a prescript.
pub(super) enum Prescript {
    /// Its prescript started (or it went back to wait for a site to
    /// recover, or failed for good).
    Started,
    /// The selector holds it: no prescript started.
    Held,
    /// No site has room for it now: it waits for room, no prescript
    /// started.
    WaitsForRoom,
}

impl Manager {
    /// Starts `job`'s prescript, unless the selector holds it or no site
    /// has room for it now (then nothing starts and no prescript interval
    /// is used).
    pub(super) fn start_prescript(&mut self, job: JobId, out: &mut Vec<Command>) -> Prescript {
        self.dag.exited[job] = None;
        let dag = DagSide {
            states: &self.dag.state,
            submissions: &self.dag.submissions,
            workload: &self.dag.workload,
            ready: &self.dag.ready,
        };
        let chosen = self.grid.choose_site(job, &self.wf, &self.sites, &self.records.sites, dag, self.now);
        let site = match chosen {
            Ok(Some(site)) => site,
            Ok(None) => return Prescript::Held,
            Err(NoSite::AllDown) => {
                // Every site that could run it crashed: wait for a recovery.
                self.retry(job, Retry::SitesDown);
                return Prescript::Started;
            }
            Err(NoSite::NoRoom(could)) => {
                if let Some(at) = self.grid.wait_for_room(&self.wf, job, &could, self.now) {
                    self.schedule(at, Timer::RoomCheck);
                }
                return Prescript::WaitsForRoom;
            }
            Err(NoSite::None) => {
                let why = self.grid.why_no_site(job);
                self.fail_for_good(job, why);
                return Prescript::Started;
            }
        };
        // Most jobs run once: room for one attempt, not Vec's first four.
        let attempts = &mut self.records.jobs[job].attempts;
        attempts.reserve_exact(1);
        attempts.push(Attempt::begun(site, self.now));
        let attempt = attempts.len() - 1;
        let pre = self.dag.nodes.pre[job];
        self.grid.place_at(&self.wf, job, site, attempt, pre, &mut self.records.sites[site], out);
        // The slot it claims is the site's it was placed at.
        self.set_state(job, JobState::Staging);
        if self.dag.submissions.list.len() > 1 {
            self.grid.grid_changed = true; // the fair share moved
        }
        self.dag.prescript_started(job);
        if pre {
            self.run_script(job, ScriptKind::Pre, 0, out);
        } else {
            self.launch(job, out);
        }
        Prescript::Started
    }

    /// `job`'s POST script ended (or was stopped): the next one its DAGMan
    /// held may run.
    pub(super) fn post_ended(&mut self, job: JobId, out: &mut Vec<Command>) {
        if let Some(next) = self.dag.post_slot_freed(job) {
            let status = self.dag.exited[next].unwrap_or(0);
            self.run_script(next, ScriptKind::Post, status, out);
        }
    }

    /// Submissions held while their DAGMan had too many jobs idle or in the
    /// queue go as it has room.
    pub(super) fn submit_held(&mut self, out: &mut Vec<Command>) {
        while let Some(released) = self.dag.next_released() {
            match released {
                Released::Submit(job) => self.enter_queue(job, out),
                Released::SubDag(entry) => self.life(|dag, port| dag.release_children(entry, port)),
            }
        }
    }

    /// Orders the node's script at its site; POST scripts beyond
    /// `DAGMAN_MAX_POST_SCRIPTS` wait for one to end.
    pub(super) fn run_script(
        &mut self,
        job: JobId,
        kind: ScriptKind,
        status: i32,
        out: &mut Vec<Command>,
    ) {
        if kind == ScriptKind::Post {
            if self.dag.stopped_for(job) {
                // No script starts once the DAG stopped (a deferred one,
                // or one whose job's end DAGMan reads only now).
                self.end_removed(job);
                return;
            }
            if self.dag.post_held(job) {
                return;
            }
        }
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.scripts.push(ScriptRun {
                kind,
                start: self.now,
                end: None,
                status: None,
            });
        }
        let mut macros = self.dag.script_macros(&self.records, job, kind, status);
        if kind == ScriptKind::Post {
            macros.job_id = self.dag.job_id(&self.records, job);
        }
        out.push(Command::RunScript {
            job,
            site: self.grid.site_of[job],
            kind,
            macros,
            duration: self.grid.pool.wms.draw(&self.settings.script_time),
        });
    }

    /// Starts as many of the job's pending transfers as its prescript may run;
    /// submits the job when nothing is left to stage.
    pub(super) fn launch(&mut self, job: JobId, out: &mut Vec<Command>) {
        let streams = self.settings.prescript_streams.max(1);
        loop {
            match self.grid.next_stage(&self.wf, job, streams) {
                StageNext::Wait => return,
                StageNext::Submit => return self.submit(job, out),
                StageNext::Send { file, from, to, attempt, retry } => {
                    let kind = FlightKind::Stage;
                    self.start_flight((job, attempt), file, from, to, kind, retry, out);
                }
                StageNext::Lost(file) => {
                    let name = &self.wf.files()[file].name;
                    let lost = format!("every replica of `{name}` was lost");
                    if self.reproduce(file) {
                        let reason = format!("{lost}; it is made again");
                        return self.abort_staging(job, reason, Retry::Remade(file), out);
                    }
                    return self.abort_staging(job, lost, Retry::Never, out);
                }
                StageNext::Fail(reason, retry) => return self.abort_staging(job, reason, retry, out),
            }
        }
    }

    /// The prescript is over: the job goes to its site's queue, after the
    /// submit overhead if there is one.
    pub(super) fn submit(&mut self, job: JobId, out: &mut Vec<Command>) {
        let Some(st) = self.grid.staging[job].take() else {
            return;
        };
        self.grid.replicas.unplan(&st.planned, st.site);
        self.grid.site_of[job] = st.site;
        self.grid.staged[job] = st.staged;
        self.dag.prescript_ended(job);
        if self.dag.nodes.noop[job] {
            // DAGMan's NOOP: no job reaches the site; the POST script (if
            // any) still runs. Its placement is let go, to be made again
            // if it runs again.
            self.grid.release_pins(&self.wf, (job, st.site), Vec::new(), false, out);
            self.set_state(job, JobState::Running);
            if self.read_deferred(job, out) {
                return;
            }
            // A sub-DAG node's "job" is its DAG, over by now.
            self.dag.subdag_left_queue(job);
            match self.dag.subdag_exit(job, self.now) {
                Some(status) => self.subdag_failed(job, st.site, status, out),
                None => self.job_ended(job, st.site, None, out),
            }
            return;
        }
        let attempt = self.records.jobs[job].attempts.len() - 1;
        if self.grid.pool.wms.settings.dagman_cycle() {
            if let Some(at) = self.grid.pool.wms.queue_submit(job, attempt, self.now) {
                self.schedule(at, Timer::DagmanTick);
            }
            return;
        }
        self.condor_submit(job, attempt, self.now, out);
    }

    /// `condor_submit` of `job` ends at `at`, or once its DAGMan's wait
    /// after a failed submission is over: it reaches the schedd after the
    /// submit overhead.
    pub(super) fn condor_submit(&mut self, job: JobId, attempt: usize, at: Time, out: &mut Vec<Command>) {
        let at = at.max(self.dag.submit_gate(job));
        let at = at + self.grid.pool.wms.draw(&self.settings.submit_overhead);
        if at > self.now {
            self.schedule(at, Timer::Submit { job, attempt });
        } else {
            self.enter_queue(job, out);
        }
    }

    /// DAGMan's event loop: submits the staged jobs its limit allows.
    pub(super) fn dagman_tick(&mut self, out: &mut Vec<Command>) {
        let (made, next) = {
            let (state, attempts) = (&self.dag.state, &self.records.jobs);
            self.grid.pool.wms.dagman_tick(self.now, |j, a| {
                state[j] == JobState::Staging && attempts[j].attempts.len() == a + 1
            })
        };
        // With no submit delay a submission ends at its tick and the job
        // goes to its site at once.
        for (job, attempt, at) in made {
            self.condor_submit(job, attempt, at, out);
        }
        if let Some(at) = next {
            self.schedule(at, Timer::DagmanTick);
        }
    }

    pub(super) fn enter_queue(&mut self, job: JobId, out: &mut Vec<Command>) {
        if self.dag.submission_held(job) {
            return;
        }
        let site = self.grid.site_of[job];
        if self.settings.cache_bound.is_some() {
            self.grid.note_uses(&self.wf, job, self.now);
        }
        self.set_state(job, JobState::Queued);
        self.records.sites[site].submitted += 1;
        let attempt = self.records.jobs[job].attempts.len() - 1;
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.submitted = Some(self.now);
        }
        let monit = self.settings.monit_interval > 0.0;
        match self.grid.pool.enter(job, attempt, site, self.now, monit) {
            // Idle in the schedd until the negotiator matches it to a slot.
            Entered::Idle(at) => {
                if let Some(at) = at {
                    self.schedule(at, Timer::Negotiate);
                }
            }
            Entered::Matched => self.start_matched(job, out),
        }
    }

    /// Whether (job, attempt) is idle in the schedd: submitted, not yet at
    /// its site.
    pub(super) fn is_idle(&self, job: JobId, attempt: usize) -> bool {
        self.grid.pool.waits(job, attempt, queued(&self.dag.state, &self.records.jobs))
    }

    /// A negotiation cycle: matched jobs start.
    pub(super) fn negotiate(&mut self, out: &mut Vec<Command>) {
        let queued = queued(&self.dag.state, &self.records.jobs);
        let (matched, next) = self.grid.pool.negotiate(self.now, queued);
        for (job, _) in matched {
            self.start_matched(job, out);
        }
        if let Some(at) = next {
            self.schedule(at, Timer::Negotiate);
        }
    }

    /// A job with a slot: the schedd starts it (its shadow) as its start
    /// rate allows, and it enters its site's queue.
    pub(super) fn start_matched(&mut self, job: JobId, out: &mut Vec<Command>) {
        let at = self.grid.pool.wms.start_at(self.now);
        if at > self.now {
            let attempt = self.records.jobs[job].attempts.len() - 1;
            self.schedule(at, Timer::Start { job, attempt });
            // Held by the start throttle, it is still idle; the timer finds it
            // so. Its claim is held meanwhile.
            return;
        }
        self.send_to_site(job, out);
    }

    /// The schedd started `job`: it enters its site's queue.
    pub(super) fn send_to_site(&mut self, job: JobId, out: &mut Vec<Command>) {
        self.grid.pool.sent(job);
        let exits = &self.dag.nodes.exits[job];
        // The program's runs so far (its retries may have been reset since:
        // a sub-DAG run again from its rescue).
        let attempt = self.records.jobs[job]
            .attempts
            .iter()
            .filter(|a| a.started.is_some())
            .count();
        out.push(Command::Submit {
            job,
            site: self.grid.site_of[job],
            exit: exits.get(attempt).or(exits.last()).copied().unwrap_or(0),
            macros: match self.dag.nodes.job_programs {
                true => self.dag.job_macros(&self.records, job),
                false => ScriptMacros::default(),
            },
        });
    }

    /// `job` left the queue at `site` without ending (killed by
    /// MonitQueue, removed by a stop): it leaves its slot, and the copies
    /// it staged are let go as the replica policy says.
    pub(super) fn leave_queue(&mut self, job: JobId, site: SiteId, out: &mut Vec<Command>) {
        self.grid.pool.active[site] -= 1;
        self.dag.left_queue(job);
        self.leave_slot(job, site, out);
        self.unpin_staged(job, site, out);
    }

    /// `job`'s placement at `site` is let go; the copies it staged there
    /// stay or go as the replica policy says.
    pub(super) fn unpin_staged(&mut self, job: JobId, site: SiteId, out: &mut Vec<Command>) {
        let staged = self.grid.take_staged(job);
        let delete = self.grid.postscript_replicas(site, &staged);
        self.grid.release_pins(&self.wf, (job, site), delete, false, out);
    }

    /// `job` left its slot at `site` (ended, failed, killed): its claim goes
    /// to the site's next idle job, if any.
    pub(super) fn leave_slot(&mut self, job: JobId, site: SiteId, out: &mut Vec<Command>) {
        let queued = queued(&self.dag.state, &self.records.jobs);
        if let Some(next) = self.grid.pool.leave_slot(job, site, self.now, queued) {
            self.start_matched(next, out);
        }
    }

    pub(super) fn on_transfer_done(
        &mut self,
        id: TransferId,
        result: Result<u64, TransferFailure>,
        out: &mut Vec<Command>,
    ) {
        let Some(fl) = self.grid.transfer_ended(id, result.is_ok()) else {
            return;
        };
        let key = (fl.file, fl.to);
        if let Some(c) = self.changes.as_mut() {
            c.transfers.push(id);
        }
        let rec = &mut self.records.transfers[id as usize];
        rec.end = Some(self.now);

        match &result {
            Ok(bytes) => {
                rec.bytes = *bytes;
                let to = rec.to;
                self.records.sites[to].transfers_in += 1;
                self.records.sites[to].bytes_in += bytes;
                self.records.sites[fl.from].transfers_out += 1;
            }
            Err(e) => rec.failure = Some(Box::new(e.clone())),
        }
        if fl.kind != FlightKind::Stage {
            let mut steps = Vec::new();
            let tries = (result.is_ok(), self.settings.transfer_retries);
            self.grid.flight_ended(&self.wf, &fl, tries, out, &mut steps);
            self.route(&mut steps, out);
            return;
        }
        self.wake_waiters(key, result.is_ok(), out);
        let retries = self.settings.transfer_retries;
        let end = self.grid.stage_ended(&self.wf, &fl, &result, retries);
        debug_assert!(end == StageEnd::Stale || self.is_current(fl.job, fl.attempt));
        match end {
            // The attempt was aborted; its stragglers only count.
            StageEnd::Stale => {}
            StageEnd::Staged => self.launch(fl.job, out),
            StageEnd::Fail(reason, retry) => self.abort_staging(fl.job, reason, retry, out),
            StageEnd::Again(timer) => {
                let at = self.now + self.settings.transfer_backoff;
                self.schedule(at, timer);
            }
        }
    }

    /// A transfer of `key.0` to `key.1` ended: the prescripts waiting for it
    /// go on (after a failure, each stages the file itself).
    pub(super) fn wake_waiters(&mut self, key: (FileId, SiteId), ok: bool, out: &mut Vec<Command>) {
        let Some(waiters) = self.grid.transfers.take_waiters(key.0, key.1) else {
            return;
        };
        for (job, attempt) in waiters {
            if self.grid.woken(job, attempt, key.0, ok) {
                self.launch(job, out);
            }
        }
    }

    /// Ends a prescript that cannot finish; the job goes back to be planned.
    /// Ends `job`'s staging without a submission: its planned copies
    /// forgotten, its prescript's place freed, its inputs' pins released;
    /// false if it was not staging.
    pub(super) fn end_staging(&mut self, job: JobId, out: &mut Vec<Command>) -> bool {
        let Some(st) = self.grid.staging[job].take() else {
            return false;
        };
        self.grid.replicas.unplan(&st.planned, st.site);
        self.dag.prescript_ended(job);
        let delete = self.grid.postscript_replicas(st.site, &st.staged);
        self.grid.release_pins(&self.wf, (job, st.site), delete, false, out);
        true
    }

    pub(super) fn abort_staging(
        &mut self,
        job: JobId,
        reason: String,
        retry: Retry,
        out: &mut Vec<Command>,
    ) {
        if !self.end_staging(job, out) {
            return;
        }
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.ended = Some(self.now);
            a.outcome = Outcome::StagingFailed(reason);
        }
        self.set_state(job, JobState::Ready);
        self.retry(job, retry);
    }
}


/// Whether a job's attempt is queued, as the node life cycle and the
/// records say: its state is `Queued` and the attempt is its last.
pub(super) fn queued<'a>(state: &'a [JobState], jobs: &'a [JobRecord]) -> impl Fn(JobId, usize) -> bool + 'a {
    move |job, attempt| state[job] == JobState::Queued && jobs[job].attempts.len() == attempt + 1
}
