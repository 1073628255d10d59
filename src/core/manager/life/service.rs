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
//!
//! The node life cycle decides here; the manager moves the nodes it names
//! (`Manager::set_services`, `provisioned`, `remove_services`).

use super::*;

/// The SERVICE and PROVISIONER nodes, as the manager follows them.
#[derive(Debug, Default)]
pub(crate) struct Services {
    /// SERVICE nodes in the DAG.
    count: usize,
    /// SERVICE nodes over (done, failed, blocked).
    over: usize,
}

impl NodeLife {
    /// Follows the SERVICE and PROVISIONER nodes of `self.nodes`, once set:
    /// every node ready now but the provisioner and the services waits for
    /// the provisioner's job to run. Returns those nodes, to move back to
    /// waiting.
    pub(crate) fn set_services(&mut self) -> Vec<JobId> {
        self.services = Services {
            count: self.nodes.service.iter().filter(|&&s| s).count(),
            ..Default::default()
        };
        self.services.over = (0..self.state.len())
            .filter(|&j| self.nodes.service[j] && self.is_over(j))
            .count();
        let Some(p) = self.nodes.provisioner.filter(|&p| !self.is_over(p)) else {
            return Vec::new();
        };
        let gated: Vec<JobId> = (0..self.state.len())
            .filter(|&j| j != p && !self.nodes.service[j] && self.state[j] == JobState::Ready)
            .collect();
        for &j in &gated {
            self.missing_parents[j] += 1;
        }
        self.dagmans.list[0].awaiting_provisioner.clone_from(&gated);
        gated
    }

    /// The sub-DAG whose entry no-op `entry` ended starts: if its
    /// PROVISIONER has not run yet, its other nodes that would start now
    /// (the entry's children in `wf`, and those of a run again behind it)
    /// wait for the go-ahead too.
    pub(crate) fn hold_for_provisioner(&mut self, wf: &RunDag, entry: JobId) {
        let Some(k) = self.dagmans.of_entry(entry) else {
            return;
        };
        let Some(p) = self.nodes.subdags[k].provisioner else {
            return;
        };
        // A provisioner whose job runs (or ended) gave its go-ahead.
        if !matches!(
            self.state[p],
            JobState::Waiting | JobState::Ready | JobState::Staging | JobState::Queued
        ) {
            return;
        }
        let starting: Vec<JobId> = (wf.children(entry).iter())
            .chain(self.waiting_for_entry(entry))
            .copied()
            .filter(|&c| c != p && !self.nodes.service[c] && self.state[c] == JobState::Waiting)
            .collect();
        for &c in &starting {
            self.missing_parents[c] += 1;
        }
        self.dagmans.sub_mut(k).awaiting_provisioner.extend(starting);
    }

    /// The SERVICE nodes still going to remove (DAGMan's
    /// `RemoveServiceNodes`), once every other node is over and no final
    /// output is on its way (`finals_out` of them are).
    pub(crate) fn services_to_remove(&self, finals_out: usize) -> Vec<JobId> {
        if self.services.over == self.services.count {
            return Vec::new();
        }
        let (over, of) = self.over_beside_services();
        if over < of || finals_out > 0 {
            return Vec::new();
        }
        (0..self.state.len())
            .filter(|&j| self.nodes.service[j] && !self.is_over(j))
            .collect()
    }

    /// A sub-DAG was read as jobs `new`: their SERVICE nodes count (their
    /// PROVISIONERs are their DAGMans', [`Dagmans::graft`]).
    pub(crate) fn graft_services(&mut self, new: std::ops::Range<JobId>) {
        self.services.count += new.filter(|&j| self.nodes.service[j]).count();
    }

    fn is_over(&self, job: JobId) -> bool {
        self.state[job].is_over()
    }

    /// Nodes over, SERVICE nodes aside; and how many nodes that is of.
    pub(crate) fn over_beside_services(&self) -> (usize, usize) {
        let c = &self.counts;
        let over = c.done + c.failed + c.blocked - self.services.over;
        (over, self.state.len() - self.services.count)
    }

    /// `job` went from state `from` to `to`: a SERVICE node's end counts.
    pub(crate) fn service_moved(&mut self, job: JobId, from: JobState, to: JobState) {
        if self.services.count == 0 || !self.nodes.service[job] {
            return;
        }
        let over = JobState::is_over;
        self.services.over = self.services.over + usize::from(over(to)) - usize::from(over(from));
    }

    /// The nodes waiting for the PROVISIONER `job`'s go-ahead (its DAG's
    /// or its sub-DAG's), taken.
    pub(crate) fn take_gate(&mut self, job: JobId) -> Vec<JobId> {
        match self.dagmans.provisioned_by(job) {
            Some(d) => std::mem::take(&mut self.dagmans.list[d].awaiting_provisioner),
            None => Vec::new(),
        }
    }

    /// The provisioner `job` failed for good before its go-ahead: the nodes
    /// waiting for it; none for any other node.
    pub(crate) fn never_provisioned(&mut self, job: JobId) -> Vec<JobId> {
        self.take_gate(job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four nodes without parents: 0 a SERVICE node, 1 the PROVISIONER.
    fn life() -> NodeLife {
        let mut life = NodeLife::new(vec![0; 4], vec![Vec::new(); 4], false, 0);
        let mut nodes = NodeSettings::none(4);
        nodes.service[0] = true;
        nodes.provisioner = Some(1);
        life.dagmans = super::super::dagmans::Dagmans::new(&nodes);
        life.nodes = nodes;
        life
    }

    #[test]
    fn the_provisioner_holds_the_others_and_services_go_once_the_rest_is_over() {
        let mut life = life();
        // Every ready node but the provisioner and the service waits for
        // the go-ahead.
        assert_eq!(life.set_services(), [2, 3]);
        assert_eq!(life.missing_parents, [0, 0, 1, 1]);
        assert_eq!(life.take_gate(2), [] as [JobId; 0], "2 is no provisioner");
        assert_eq!(life.take_gate(1), [2, 3]);
        assert_eq!(life.take_gate(1), [] as [JobId; 0], "taken once");
        // The service runs on until every other node is over.
        for j in [1, 2] {
            life.move_node(j, JobState::Done);
        }
        assert!(life.services_to_remove(0).is_empty(), "3 is not over");
        life.move_node(3, JobState::Failed);
        assert!(life.services_to_remove(1).is_empty(), "a final output is on its way");
        assert_eq!(life.services_to_remove(0), [0]);
        life.move_node(0, JobState::Done);
        assert!(life.services_to_remove(0).is_empty(), "removed once");
    }
}
