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
//!   nodes waiting for it never run. A sub-DAG's PROVISIONER is its own
//!   DAGMan's: each run of the sub-DAG starts it with the sub-DAG, and
//!   holds the sub-DAG's other nodes until its job runs.

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
    /// Per sub-DAG with a PROVISIONER node, by its entry no-op: the
    /// provisioner, and the nodes of the sub-DAG's run waiting for it.
    subdag_gates: HashMap<JobId, (JobId, Vec<JobId>)>,
    /// Each sub-DAG's PROVISIONER node, and the entry of its sub-DAG.
    entry_of_provisioner: HashMap<JobId, JobId>,
}

impl Manager {
    /// Follows the SERVICE and PROVISIONER nodes of `self.dag.nodes`, once set:
    /// every node ready now but the provisioner and the services waits for
    /// the provisioner's job to run.
    pub(super) fn set_services(&mut self) {
        self.dag.services = Services {
            count: self.dag.nodes.service.iter().filter(|&&s| s).count(),
            ..Default::default()
        };
        for d in &self.dag.nodes.subdags {
            if let (Some(p), Some(e)) = (d.provisioner, d.entry) {
                self.dag.services.subdag_gates.insert(e, (p, Vec::new()));
                self.dag.services.entry_of_provisioner.insert(p, e);
            }
        }
        self.dag.services.over = (0..self.dag.state.len())
            .filter(|&j| self.dag.nodes.service[j] && self.dag.is_over(j))
            .count();
        let Some(p) = self.dag.nodes.provisioner.filter(|&p| !self.dag.is_over(p)) else {
            return;
        };
        for j in 0..self.dag.state.len() {
            if j != p && !self.dag.nodes.service[j] && self.dag.state[j] == JobState::Ready {
                // Its ready-queue entry is skipped as stale.
                self.set_state(j, JobState::Waiting);
                self.records.jobs[j].ready = None;
                self.dag.missing_parents[j] += 1;
                self.dag.services.gate.push(j);
            }
        }
    }

    /// The sub-DAG whose entry no-op `entry` ended starts: if its
    /// PROVISIONER has not run yet, its other nodes that would start now
    /// (the entry's children, and those of a run again behind it) wait for
    /// the go-ahead too.
    pub(super) fn hold_for_provisioner(&mut self, entry: JobId) {
        if self.dag.services.subdag_gates.is_empty() {
            return;
        }
        let Some(&(p, _)) = self.dag.services.subdag_gates.get(&entry) else {
            return;
        };
        // A provisioner whose job runs (or ended) gave its go-ahead.
        if !matches!(
            self.dag.state[p],
            JobState::Waiting | JobState::Ready | JobState::Staging | JobState::Queued
        ) {
            return;
        }
        let starting: Vec<JobId> = (self.wf.children[entry].iter())
            .chain(self.dag.waiting_for_entry(entry))
            .copied()
            .filter(|&c| {
                c != p && !self.dag.nodes.service[c] && self.dag.state[c] == JobState::Waiting
            })
            .collect();
        for &c in &starting {
            self.dag.missing_parents[c] += 1;
        }
        if let Some((_, gate)) = self.dag.services.subdag_gates.get_mut(&entry) {
            gate.extend(starting);
        }
    }

    /// `job`'s job took its slot: if it is a provisioner, the nodes
    /// waiting for its go-ahead may start.
    pub(super) fn provisioned(&mut self, job: JobId) {
        for j in self.dag.take_gate(job) {
            self.release_child(j);
        }
    }

    /// Once every other node is over, the SERVICE nodes still going are
    /// removed (DAGMan's `RemoveServiceNodes`) and end done.
    pub(super) fn remove_services(&mut self, out: &mut Vec<Command>) {
        if self.dag.services.over == self.dag.services.count {
            return;
        }
        let (over, of) = self.dag.over_beside_services();
        if over < of || self.grid.finals.out > 0 {
            return;
        }
        for j in 0..self.dag.state.len() {
            if !self.dag.nodes.service[j] || self.dag.is_over(j) {
                continue;
            }
            self.withdraw(j, out);
            self.record_removal(j, "the DAG ended (a SERVICE node is removed at its end)");
            self.set_state(j, JobState::Done);
        }
    }
}

impl NodeLife {
    /// Sub-DAG `k` was read as jobs `new`, with the sub-DAGs `from..`
    /// nested in it: their SERVICE nodes count, their PROVISIONERs hold
    /// their sub-DAGs.
    pub(super) fn graft_services(&mut self, k: usize, new: std::ops::Range<JobId>, from: usize) {
        self.services.count += new.filter(|&j| self.nodes.service[j]).count();
        for i in std::iter::once(k).chain(from..self.nodes.subdags.len()) {
            let d = &self.nodes.subdags[i];
            if let (Some(p), Some(e)) = (d.provisioner, d.entry) {
                self.services.subdag_gates.insert(e, (p, Vec::new()));
                self.services.entry_of_provisioner.insert(p, e);
            }
        }
    }

    fn is_over(&self, job: JobId) -> bool {
        self.state[job].is_over()
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
        let over = JobState::is_over;
        self.services.over = self.services.over + usize::from(over(to)) - usize::from(over(from));
    }

    /// The nodes waiting for the PROVISIONER `job`'s go-ahead (its DAG's
    /// or its sub-DAG's), taken.
    fn take_gate(&mut self, job: JobId) -> Vec<JobId> {
        if Some(job) == self.nodes.provisioner {
            return std::mem::take(&mut self.services.gate);
        }
        if self.services.entry_of_provisioner.is_empty() {
            return Vec::new();
        }
        match self.services.entry_of_provisioner.get(&job) {
            Some(e) => self
                .services
                .subdag_gates
                .get_mut(e)
                .map_or_else(Vec::new, |(_, gate)| std::mem::take(gate)),
            None => Vec::new(),
        }
    }

    /// The provisioner `job` failed for good before its go-ahead: the nodes
    /// waiting for it; none for any other node.
    pub(super) fn never_provisioned(&mut self, job: JobId) -> Vec<JobId> {
        self.take_gate(job)
    }
}
