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

/// DAGMan's exit value when the user removed the DAG (`EXIT_ABORT`).
pub const EXIT_ABORT: i32 = 2;

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
    fn abort_subdag(&mut self, k: usize, abort: DagAbort, out: &mut Vec<Command>) {
        for m in self.life(|dag, port| dag.stop_subdag(k, abort, port)) {
            if self.dag.state[m].claims_slot() {
                self.remove_node(m, out);
            }
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
        };
        self.stop(abort, None, out);
    }

    /// The DAG stops: nodes not yet started never will, and those in
    /// flight (but `spare`, whose end is being handled) are removed, in
    /// job order ([`NodeLife::stop_step`], asked as each node's turn
    /// comes, since a removal may make the nodes below it futile first).
    fn stop(&mut self, abort: DagAbort, spare: Option<JobId>, out: &mut Vec<Command>) {
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

/// What a DAG's stop does to one of its nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StopStep {
    /// Never to run, but not futile: DAGMan leaves it NOT_READY (unless a
    /// removal's failure makes it futile first).
    Block,
    /// Its attempt is removed wherever it is, and the node fails.
    Remove,
}

impl NodeLife {
    /// The top DAG stops for `abort`: returns the nodes whose submission
    /// its DAGMans' MAX_JOBS limits held. Never submitted, DAGMan has them
    /// ready and leaves them NOT_READY, neither removed nor failed.
    pub(super) fn begin_stop(&mut self, abort: DagAbort) -> Vec<JobId> {
        self.dagmans.top_mut().aborted = Some(abort);
        self.dagmans.take_held_submissions()
    }

    /// What the stop does to `job` as it stands now: a node not started
    /// is blocked, one in flight removed; one over, the FINAL node (which
    /// runs after the stop) and `spare` (whose end is being handled) are
    /// left.
    pub(super) fn stop_step(&self, job: JobId, spare: Option<JobId>) -> Option<StopStep> {
        if Some(job) == spare || Some(job) == self.nodes.final_node {
            return None;
        }
        match self.state[job] {
            JobState::Waiting | JobState::Ready => Some(StopStep::Block),
            JobState::Staging | JobState::Queued | JobState::Running => Some(StopStep::Remove),
            JobState::Done | JobState::Failed | JobState::Blocked => None,
        }
    }

    /// The stop `job`'s exit `status` (its job's, or its PRE or POST
    /// script's) makes by its `ABORT-DAG-ON`, unless the DAG stopped
    /// already.
    pub(super) fn abort_for(&self, job: JobId, status: i32) -> Option<DagAbort> {
        if self.dagmans.top().aborted.is_some() {
            return None;
        }
        let &(_, ret) = self.nodes.abort_on[job].iter().find(|(v, _)| *v == status)?;
        Some(DagAbort {
            node: Some(job),
            status,
            dag_return: ret.unwrap_or(status),
        })
    }

    /// DAGMan's script macros for a `kind` script of `job` starting now,
    /// its job having exited `status` (`records` say which nodes a stop
    /// left unrun and which it removed): the counts are of `job`'s own
    /// DAGMan's nodes (a sub-DAG's, or the top DAG's, where a sub-DAG is
    /// one node).
    pub(super) fn script_macros(
        &self,
        records: &Records,
        job: JobId,
        kind: ScriptKind,
        status: i32,
    ) -> ScriptMacros {
        // A sub-DAG node's PRE script runs in a no-op: the node's.
        let owner = self.node_of_entry(job).unwrap_or(job);
        let own = self.dagmans.innermost(owner);
        let stopped = self.dagmans.top().aborted.is_some() || self.dagmans.stopped(owner).is_some();
        let (c, nodes) = self.own_counts(own.map_or(0, |k| k + 1));
        let mut unrun = 0;
        // Nodes a stop left unrun are blocked but not futile.
        if stopped {
            unrun = (0..self.state.len())
                .filter(|&j| {
                    self.state[j] == JobState::Blocked
                        && records.jobs[j].blocked_by.is_none()
                        && self.dagmans.own_node_of(j, own)
                })
                .count();
        }
        // The nodes a stop removed, which count as failed once DAGMan reads
        // their abort events. FINAL's PRE script starts as the stop
        // removes the jobs in flight (`Dag::StartFinalNode` in
        // `main_shutdown_rescue`), before it reads them: not failed yet.
        let removed_failed = match stopped {
            true => (0..self.state.len())
                .filter(|&j| {
                    self.state[j] == JobState::Failed
                        && self.dagmans.own_node_of(j, own)
                        && (records.jobs[j].attempts.last())
                            .is_some_and(|a| matches!(a.outcome, Outcome::Removed(_)))
                })
                .count(),
            false => 0,
        };
        let is_final = Some(owner) == self.nodes.final_node || self.dagmans.is_final(owner);
        let not_yet_failed = match kind == ScriptKind::Pre && is_final {
            true => removed_failed,
            false => 0,
        };
        // DAGMan's DagStatus: DAG_STATUS_ABORT 3, _RM 4, _NODE_FAILED 2.
        let abort = match own {
            Some(_) => self.dagmans.stopped(owner),
            None => self.dagmans.top().aborted,
        };
        // A stop's `RETURN 0` forces DAG_STATUS_OK, until DAGMan reads a
        // node's failure after it (a removal's, once FINAL runs).
        let returns_zero = |n: JobId, s: i32| self.nodes.abort_on[n].contains(&(s, Some(0)));
        let dag_status = match abort {
            Some(DagAbort {
                node: Some(n),
                status: s,
                ..
            }) if returns_zero(n, s) => 2 * i32::from(removed_failed > not_yet_failed),
            Some(DagAbort { node: Some(_), .. }) => 3,
            Some(DagAbort { node: None, .. }) => 4,
            None if c.failed > 0 => 2,
            // Its DAG ended with nodes on a cycle left, none failed:
            // DAG_STATUS_CYCLE, which DAGMan sets as it starts FINAL.
            None if is_final && (self.nodes.in_cycle.iter()).any(|&j| self.dagmans.own_node_of(j, own)) => 5,
            None => 0,
        };
        ScriptMacros {
            retry: self.failures[owner],
            status,
            pre_status: self.pre_return.get(&owner).copied().unwrap_or(-1),
            dag_status,
            failed: c.failed - not_yet_failed,
            futile: c.blocked - unrun,
            done: c.done,
            queued: c.queued + c.running,
            nodes,
            job_id: 0,
        }
    }

    /// The HTCondor cluster of `job`'s last attempt, for a POST script
    /// that names `$JOBID` (0 for any other, or a job never submitted).
    pub(super) fn job_id(&self, records: &Records, job: JobId) -> u64 {
        let attempt = records.jobs[job].attempts.len().checked_sub(1);
        match attempt {
            Some(k) if self.nodes.post_job_id.contains(&job) => {
                let dagmans: Vec<Time> = self.dagmans.spans.iter().map(|s| s.started).collect();
                let s = crate::core::clusters::Submission::Job(job, k);
                crate::core::clusters::number_of(records, &dagmans, s).unwrap_or(0)
            }
            _ => 0,
        }
    }

    /// DAGMan's counts as `job`'s job is submitted (`InitVars`): its
    /// DAG's status and failed nodes as a POST script starting now would
    /// see them, the PRE script's exit for `$RETURN` unread.
    pub(super) fn job_macros(&self, records: &Records, job: JobId) -> ScriptMacros {
        self.script_macros(records, job, ScriptKind::Post, 0)
    }

    /// Why `job` stopped, in words, once its DAG (or sub-DAG) did.
    pub(super) fn stop_reason(&self, wf: &Workflow, job: JobId) -> String {
        let (abort, what) = match self.dagmans.stopped(job) {
            Some(a) => (Some(a), "its sub-DAG"),
            None => (self.dagmans.top().aborted, "the DAG"),
        };
        match abort {
            Some(DagAbort {
                node: Some(n),
                status,
                ..
            }) => format!(
                "{what} was aborted (ABORT-DAG-ON: `{}` exited {status})",
                wf.jobs[n].name
            ),
            Some(DagAbort { node: None, .. }) => "the user removed the DAG".into(),
            None => String::new(),
        }
    }

    /// Whether the DAG stopped for `job`: it did, and `job` is not FINAL.
    pub(super) fn stopped_for(&self, job: JobId) -> bool {
        self.dagmans.top().aborted.is_some() && Some(job) != self.nodes.final_node
            || self.dagmans.stopped(job).is_some() && !self.dagmans.is_final(job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stop blocks what has not started and removes what is in
    /// flight; it leaves the nodes over, FINAL and the node it spares.
    #[test]
    fn a_stop_blocks_the_unstarted_and_removes_the_nodes_in_flight() {
        let mut life = NodeLife::new(vec![0; 9], vec![Vec::new(); 9], false, 0);
        let states = [
            JobState::Waiting,
            JobState::Ready,
            JobState::Staging,
            JobState::Queued,
            JobState::Running,
            JobState::Done,
            JobState::Failed,
            JobState::Blocked,
            JobState::Waiting,
        ];
        for (j, &s) in states.iter().enumerate() {
            life.move_node(j, s);
        }
        life.nodes = NodeSettings::none(9);
        life.nodes.final_node = Some(8);
        let block = Some(StopStep::Block);
        let remove = Some(StopStep::Remove);
        let want = [block, block, remove, remove, remove, None, None, None, None];
        let got: Vec<_> = (0..9).map(|j| life.stop_step(j, None)).collect();
        assert_eq!(got, want);
        assert_eq!(life.stop_step(3, Some(3)), None, "spared");
        let abort = DagAbort {
            node: None,
            status: 0,
            dag_return: EXIT_ABORT,
        };
        assert_eq!(life.begin_stop(abort), Vec::<JobId>::new());
        assert_eq!(life.dagmans.top().aborted, Some(abort));
    }

    #[test]
    fn abort_dag_on_values_stop_the_dag_once_and_say_why() {
        let mut life = NodeLife::new(vec![0; 2], vec![Vec::new(); 2], false, 0);
        let mut nodes = NodeSettings::none(2);
        nodes.abort_on[1] = vec![(3, Some(0)), (4, None)];
        life.nodes = nodes;
        assert_eq!(life.abort_for(0, 3), None, "0 has no ABORT-DAG-ON");
        assert_eq!(life.abort_for(1, 1), None, "not its value");
        let abort = DagAbort {
            node: Some(1),
            status: 4,
            dag_return: 4,
        };
        assert_eq!(life.abort_for(1, 4), Some(abort), "RETURN defaults to the value");
        assert_eq!(life.abort_for(1, 3).map(|a| a.dag_return), Some(0));
        let wf = crate::core::Workflow::build(
            Vec::new(),
            ["a", "b"].map(|n| crate::core::JobSpec {
                name: n.into(),
                ..Default::default()
            })
            .to_vec(),
        )
        .unwrap();
        assert_eq!(life.stop_reason(&wf, 0), "", "the DAG has not stopped");
        life.dagmans.top_mut().aborted = Some(abort);
        assert_eq!(life.abort_for(1, 4), None, "it stops once");
        assert_eq!(
            life.stop_reason(&wf, 0),
            "the DAG was aborted (ABORT-DAG-ON: `b` exited 4)"
        );
    }
}
