//! Stopping the DAG as DAGMan does (HTCondor's `main_shutdown_rescue`):
//! an `ABORT-DAG-ON` value, or the user's removal of the DAG, removes every
//! node job in flight (`condor_rm`) and ends every PRE and POST script,
//! before the `FINAL` node runs; nothing starts after that but the FINAL
//! node. A removed attempt is recorded as such, frees its slot and
//! registers none of its outputs; its node fails and is never retried.
//!
//! What is not removed: a node whose job has ended well and waits only for
//! DAGMan to read that end, or for its outputs to go home. Its job is no
//! longer in the queue for `condor_rm` to reach, so it ends done if it has
//! no POST script; one that has is removed when that script would start,
//! since no script starts after the stop.

use super::*;
pub use super::life::stop::EXIT_ABORT;
use super::life::stop::StopStep;

impl Manager {
    /// `ABORT-DAG-ON`: `job` exited `status` (its job, or its PRE or POST
    /// script); if that value aborts the DAG, the DAG stops. `job` itself
    /// is left to its caller, which ends it as its status says.
    pub(super) fn abort_on(&mut self, job: JobId, status: i32, out: &mut Vec<Command>) {
        let Some(abort) = self.dag.abort_for(job, status) else {
            return;
        };
        // In a sub-DAG, only its own DAGMan stops.
        match self.dag.dagmans.innermost(job) {
            Some(k) => self.abort_subdag(k, abort, out),
            None => self.stop(abort, Some(job), out),
        }
    }

    /// `ABORT-DAG-ON` in sub-DAG `k` ([`NodeLife::stop_subdag`]): its
    /// nodes in flight are removed, in job order.
    pub(super) fn abort_subdag(&mut self, k: usize, abort: DagAbort, out: &mut Vec<Command>) {
        for m in self.life(|dag, port| dag.stop_subdag(k, abort, port)) {
            if self.dag.state[m].claims_slot() {
                self.remove_node(m, out);
            }
        }
    }

    /// DAGMan `d`'s halt file appeared ([`NodeLife::halt`]; 0 the top
    /// DAG): it stops once drained (`pump`).
    pub(super) fn halt(&mut self, d: dagmans::DagmanId) {
        if !self.is_finished() {
            self.dag.halt(d, self.settings.submit_depth_first);
        }
    }

    /// The user removed the DAG (Ctrl-C): it stops, and exits
    /// [`EXIT_ABORT`] unless its FINAL node ends well.
    pub(super) fn remove_dag(&mut self, out: &mut Vec<Command>) {
        if self.dag.dagmans.top().aborted.is_some() || self.is_finished() {
            return;
        }
        let abort = DagAbort {
            node: None,
            status: 0,
            dag_return: EXIT_ABORT,
            halted_at: None,
        };
        self.stop(abort, None, out);
    }

    /// The DAG stops: nodes not yet started never will, and those in
    /// flight (but `spare`, whose end is being handled) are removed, in
    /// job order ([`NodeLife::stop_step`], asked as each node's turn
    /// comes, since a removal may make the nodes below it futile first).
    pub(super) fn stop(&mut self, abort: DagAbort, spare: Option<JobId>, out: &mut Vec<Command>) {
        for j in self.dag.begin_stop(abort) {
            if self.dag.state[j] == JobState::Staging && Some(j) != spare {
                self.withdraw(j, out);
                let why = self.dag.stop_reason(&self.wf, j);
                self.record_removal(j, &why);
                self.set_state(j, JobState::Blocked);
            }
        }
        for j in 0..self.dag.state.len() {
            match self.dag.stop_step(j, spare) {
                Some(StopStep::Block) => self.set_state(j, JobState::Blocked),
                Some(StopStep::Remove) => self.remove_node(j, out),
                None => {}
            }
        }
    }

    /// `condor_rm` of `job`'s attempt, wherever it is: its PRE script or
    /// staging, the schedd, its site's queue or slot, or its POST script;
    /// the node fails.
    pub(super) fn remove_node(&mut self, job: JobId, out: &mut Vec<Command>) {
        if self.withdraw(job, out) {
            self.end_removed(job);
        }
    }

    /// Takes `job`'s attempt back from wherever it is (see
    /// [`Self::remove_node`]); false when there was nothing to take back.
    pub(super) fn withdraw(&mut self, job: JobId, out: &mut Vec<Command>) -> bool {
        let site = self.grid.site_of[job];
        let at_site = self.dag.state[job] == JobState::Queued
            || self.grid.pool.at_site[job]
                && self.records.jobs[job]
                    .attempts
                    .last()
                    .is_some_and(|a| a.finished.is_none());
        match self.dag.state[job] {
            JobState::Staging => {
                if let Some(st) = self.grid.staging[job].as_ref().filter(|s| s.pre_running) {
                    // Its PRE script is killed where it runs.
                    out.push(Command::Remove { job, site: st.site });
                }
                if !self.end_staging(job, out) {
                    // Submitted, not yet in the schedd (condor_submit's
                    // overhead, DAGMan's submit cycle, MAX_JOBS_IDLE).
                    self.unpin_staged(job, site, out);
                }
            }
            JobState::Queued | JobState::Running if at_site => {
                self.grid.pool.killing[job] = false;
                if self.grid.pool.at_site[job] {
                    out.push(Command::Remove { job, site });
                }
                self.leave_queue(job, site, out);
            }
            JobState::Running => {
                // Its job ended: only a POST script running or waiting for
                // MAX_POST is stopped; any other end is left to come.
                let post_running = self.records.jobs[job].attempts.last().is_some_and(|a| {
                    a.scripts
                        .iter()
                        .any(|r| r.kind == ScriptKind::Post && r.end.is_none())
                });
                let was_held = self.dag.forget_post(job);
                if post_running {
                    self.post_ended(job, out);
                    out.push(Command::Remove { job, site });
                } else if !was_held {
                    return false;
                }
            }
            _ => return false,
        }
        true
    }

    /// A node the DAG's stop reached ends failed, its attempt removed.
    pub(super) fn end_removed(&mut self, job: JobId) {
        let why = self.dag.stop_reason(&self.wf, job);
        self.record_removal(job, &why);
        self.fail_node(job, format!("removed: {why}"), false);
    }

    /// `job`'s attempt is recorded as removed, for `why`.
    pub(super) fn record_removal(&mut self, job: JobId, why: &str) {
        self.dag.exited[job] = None;
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.ended = Some(self.now);
            a.outcome = Outcome::Removed(why.to_string());
            // A script it ran is ended with it (DAGMan kills them).
            for r in a.scripts.iter_mut().filter(|r| r.end.is_none()) {
                r.end = Some(self.now);
            }
        }
    }
}
