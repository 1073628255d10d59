//! DAGMan's script macros (`$RETURN`, `$RETRY`, `$DAG_STATUS`,
//! `$FAILED_COUNT`, `$FUTILE_COUNT`, `$JOBID`, …) as a node's PRE or POST
//! script, or its job, would see them now: counts of the node's own
//! DAGMan's nodes, with what a stop left unrun or removed.

use super::*;

impl NodeLife {
    /// DAGMan's script macros for a `kind` script of `job` starting now,
    /// its job having exited `status` (`records` say which nodes a stop
    /// left unrun and which it removed): the counts are of `job`'s own
    /// DAGMan's nodes (a sub-DAG's, or the top DAG's, where a sub-DAG is
    /// one node).
    pub(crate) fn script_macros(
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
        // DAGMan's DagStatus: DAG_STATUS_ABORT 3, _RM 4, _HALTED 6,
        // _NODE_FAILED 2.
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
            Some(a) => i32::from(a.dag_status()),
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
    pub(crate) fn job_id(&self, records: &Records, job: JobId) -> u64 {
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
    pub(crate) fn job_macros(&self, records: &Records, job: JobId) -> ScriptMacros {
        self.script_macros(records, job, ScriptKind::Post, 0)
    }
}
