//! DAGMan's `SERVICE` and `PROVISIONER` nodes (HTCondor's
//! `Dag::StartServiceNodes`, `RemoveServiceNodes` and
//! `StartProvisionerNode`; `NodeSettings::service`, `provisioner`).
//!
//! - A SERVICE node has no edges. It starts with the DAG and runs beside
//!   it; the DAG's end (FINAL included) does not wait for it, and once
//!   every other node is over it is removed (`condor_rm`) if still going.
//!   Its outcome is not the DAG's: a removed one ends done, its attempt
//!   recorded as removed.
//! - The PROVISIONER node runs first: no other node starts before its job
//!   runs, the go-ahead DAGMan waits for (its job ad's `ProvisionerState`;
//!   here the job taking its slot). If it fails for good before that, the
//!   nodes waiting for it never run.

use super::*;

/// The SERVICE and PROVISIONER nodes, as the manager follows them.
#[derive(Debug, Default)]
pub(super) struct Services {
    /// SERVICE nodes in the DAG.
    count: usize,
    /// SERVICE nodes over (done, failed, blocked).
    over: usize,
    /// Nodes ready at the start, waiting for the provisioner's go-ahead.
    gate: Vec<JobId>,
}

impl Manager {
    /// Follows the SERVICE and PROVISIONER nodes of `self.nodes`, once set:
    /// every node ready now but the provisioner and the services waits for
    /// the provisioner's job to run.
    pub(super) fn set_services(&mut self) {
        self.services = Services {
            count: self.nodes.service.iter().filter(|&&s| s).count(),
            ..Default::default()
        };
        self.services.over = (0..self.state.len())
            .filter(|&j| self.nodes.service[j] && self.is_over(j))
            .count();
        let Some(p) = self.nodes.provisioner.filter(|&p| !self.is_over(p)) else {
            return;
        };
        for j in 0..self.state.len() {
            if j != p && !self.nodes.service[j] && self.state[j] == JobState::Ready {
                // Its ready-queue entry is skipped as stale.
                self.set_state(j, JobState::Waiting);
                self.records.jobs[j].ready = None;
                self.missing_parents[j] += 1;
                self.services.gate.push(j);
            }
        }
    }

    fn is_over(&self, job: JobId) -> bool {
        matches!(
            self.state[job],
            JobState::Done | JobState::Failed | JobState::Blocked
        )
    }

    /// Nodes over, SERVICE nodes aside; and how many nodes that is of.
    pub(super) fn over_beside_services(&self) -> (usize, usize) {
        let c = &self.counts;
        let over = c.done + c.failed + c.blocked - self.services.over;
        (over, self.state.len() - self.services.count)
    }

    /// `job` went from state `from` to `to`: a SERVICE node's end counts.
    pub(super) fn service_moved(&mut self, job: JobId, from: JobState, to: JobState) {
        if self.services.count == 0 || !self.nodes.service[job] {
            return;
        }
        let over = |s| matches!(s, JobState::Done | JobState::Failed | JobState::Blocked);
        self.services.over = self.services.over + usize::from(over(to)) - usize::from(over(from));
    }

    /// `job`'s job took its slot: if it is the provisioner, the nodes
    /// waiting for its go-ahead may start.
    pub(super) fn provisioned(&mut self, job: JobId) {
        if Some(job) == self.nodes.provisioner {
            for j in std::mem::take(&mut self.services.gate) {
                self.release_child(j);
            }
        }
    }

    /// The provisioner `job` failed for good before its go-ahead: the nodes
    /// waiting for it; none for any other node.
    pub(super) fn never_provisioned(&mut self, job: JobId) -> Vec<JobId> {
        match Some(job) == self.nodes.provisioner {
            true => std::mem::take(&mut self.services.gate),
            false => Vec::new(),
        }
    }

    /// Once every other node is over, the SERVICE nodes still going are
    /// removed (DAGMan's `RemoveServiceNodes`) and end done.
    pub(super) fn remove_services(&mut self, out: &mut Vec<Command>) {
        if self.services.over == self.services.count {
            return;
        }
        let (over, of) = self.over_beside_services();
        if over < of || self.finals_out > 0 {
            return;
        }
        for j in 0..self.state.len() {
            if !self.nodes.service[j] || self.is_over(j) {
                continue;
            }
            self.withdraw(j, out);
            self.record_removal(j, "the DAG ended (a SERVICE node is removed at its end)");
            self.set_state(j, JobState::Done);
        }
    }
}
