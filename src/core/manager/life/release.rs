//! Release of ready jobs: a node is ready when its parents ended (DAGMan);
//! NOOP and DONE nodes complete without running; the FINAL node is ready
//! when every other node is over; a stopped DAG (see `abort.rs`) releases
//! none but the FINAL node. A node with a `SAVE_POINT_FILE` records the
//! DAG's state as it starts (DAGMan's `Dag::StartNode` writes the save file
//! before the PRE script, on the node's first start, not on a retry).
//!
//! These are the node life cycle's own rules ([`NodeLife`]): each move is
//! told to the rest of the manager through a [`LifePort`], so that they
//! are tested here against a port that only records (a random DAG's
//! release against a plain recount).

use super::node_life::LifePort;
use super::*;
use crate::core::Workflow;
use crate::core::submissions::{Submissions, Workload};

/// The state of the DAG as a node with a `SAVE_POINT_FILE` started: what
/// its save file (a rescue DAG) records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavePoint {
    /// The node that started.
    pub node: JobId,
    /// The nodes that had ended well.
    pub done: Vec<JobId>,
    /// The nodes that had failed for good.
    pub failed: Vec<JobId>,
}

impl NodeLife {
    /// The run's workflows, each submitted from its own submit machine at
    /// its own time (seed 003 §9): each counts its jobs open and ready, and
    /// the roots of one submitted after time 0 wait for it (gated). Returns
    /// those roots, no longer ready (their ready-queue entries are skipped
    /// as stale).
    pub(crate) fn set_submissions(&mut self, submissions: Submissions, wf: &Workflow) -> Vec<JobId> {
        let k = submissions.list.len();
        self.workload = vec![Workload::default(); k];
        self.gated = vec![Vec::new(); k];
        for j in 0..self.state.len() {
            let w = &mut self.workload[submissions.of_job[j]];
            w.open += usize::from(!self.state[j].is_over());
            w.ready += usize::from(self.state[j] == JobState::Ready);
        }
        let mut gated = Vec::new();
        for (i, sub) in submissions.list.iter().enumerate() {
            if sub.arrival <= 0.0 {
                self.workload[i].arrived = true;
                continue;
            }
            for r in submissions.roots(wf, i) {
                if self.state[r] == JobState::Ready {
                    self.workload[i].ready -= 1;
                    self.state[r] = JobState::Waiting;
                    self.counts.ready -= 1;
                    self.counts.waiting += 1;
                    self.dagmans.node_moved(r, JobState::Ready, JobState::Waiting);
                    self.missing_parents[r] += 1;
                    self.gated[i].push(r);
                    gated.push(r);
                }
            }
        }
        self.submissions = submissions;
        gated
    }

    /// Workflow `submission` arrives: its gated roots are released.
    pub(crate) fn arrive(&mut self, submission: usize, port: &mut impl LifePort) {
        self.workload[submission].arrived = true;
        for r in std::mem::take(&mut self.gated[submission]) {
            self.missing_parents[r] -= 1;
            if self.missing_parents[r] == 0 {
                self.make_ready(r, port);
            }
        }
    }

    /// `job` moves to state `to`: it is counted, the grid hears of it,
    /// then what waits for nodes to end may go (FINAL nodes, sub-DAGs,
    /// category throttles).
    pub(crate) fn set_state(&mut self, job: JobId, to: JobState, port: &mut impl LifePort) {
        let from = self.move_node(job, to);
        port.moved(job, from, to);
        if to.is_over() != from.is_over() {
            self.count_for_subdag_finals(job, to.is_over(), port);
        }
        if to.is_over() {
            self.release_final(port);
            self.subdag_member_over(job, port);
        }
        if self.throttled[job] && !to.claims_slot() {
            self.unthrottle(job);
        }
    }

    /// Ends a node that runs no job (`NOOP`) or already ran (`DONE`).
    pub(crate) fn complete_without_running(&mut self, job: JobId, port: &mut impl LifePort) {
        self.set_state(job, JobState::Done, port);
        port.ready_now(job, true);
        self.release_children(job, port);
    }

    /// `job` is over: its workflow and ordering children lose a parent.
    pub(crate) fn release_children(&mut self, job: JobId, port: &mut impl LifePort) {
        self.hold_for_provisioner(port.workflow(), job);
        for i in 0..port.workflow().children(job).len() {
            let c = port.workflow().children(job)[i];
            self.release_child(c, port);
        }
        for i in 0..self.ordering[job].len() {
            let c = self.ordering[job][i];
            self.release_child(c, port);
        }
        self.open_gate(job, port);
    }

    /// `job`'s job took its slot: if it is a provisioner, the nodes
    /// waiting for its go-ahead may start.
    pub(crate) fn provisioned(&mut self, job: JobId, port: &mut impl LifePort) {
        for j in self.take_gate(job) {
            self.release_child(j, port);
        }
    }

    /// One parent of `c` is over; `c` is ready when none is left.
    pub(crate) fn release_child(&mut self, c: JobId, port: &mut impl LifePort) {
        // A sub-DAG run again runs its PRE script's no-op again, whose
        // children done in the last run wait for nothing.
        if self.missing_parents[c] == 0 {
            debug_assert!(self.state[c] == JobState::Done, "released twice");
            return;
        }
        self.missing_parents[c] -= 1;
        if self.missing_parents[c] == 0 && self.state[c] == JobState::Waiting {
            let delay = port.release_delay();
            if delay > 0.0 {
                port.release_at(c, port.now() + delay);
            } else {
                self.make_ready(c, port);
            }
        }
    }

    /// The FINAL node is ready once every other node is over.
    pub(crate) fn release_final(&mut self, port: &mut impl LifePort) {
        if let Some(f) = self.nodes.final_node
            && self.state[f] == JobState::Waiting
        {
            // SERVICE nodes run on beside it.
            let (over, of) = self.over_beside_services();
            if over + 1 == of {
                self.make_ready(f, port);
            }
        }
    }

    /// `job`, its parents over, is ready: unless the DAG stopped, it waits
    /// for a twin's outputs, or its sub-DAG still runs.
    pub(crate) fn make_ready(&mut self, job: JobId, port: &mut impl LifePort) {
        if self.stopped_for(job) || port.memoizing(job) || self.subdag_holds(job) {
            return;
        }
        if self.state[job] == JobState::Waiting {
            self.set_state(job, JobState::Ready, port);
            port.ready_now(job, false);
            self.ready.push(job);
            if !self.nodes.save_points.is_empty() && self.nodes.save_points.contains(&job) {
                self.save_point(job);
            }
        }
    }

    /// Records the DAG's state as `job`, a save point, starts. A node is
    /// made ready once per run of its DAG (a retry does not wait again), so
    /// this is its first start, or its first in a sub-DAG run again.
    pub(crate) fn save_point(&mut self, job: JobId) {
        let state = &self.state;
        let with = |s: JobState| (0..state.len()).filter(|&j| state[j] == s).collect();
        let point = SavePoint {
            node: job,
            done: with(JobState::Done),
            failed: with(JobState::Failed),
        };
        self.save_points.push(point);
    }
}

#[cfg(test)]
mod tests {
    use super::super::node_life::recorder::life_of;
    use super::*;
    use proptest::prelude::*;

    fn dag() -> impl Strategy<Value = Vec<Vec<usize>>> {
        (1..12usize).prop_flat_map(|n| {
            (0..n)
                .map(|j| proptest::sample::subsequence((0..j).collect::<Vec<_>>(), 0..=j.min(3)))
                .collect::<Vec<_>>()
        })
    }

    proptest! {
        /// Random DAGs whose ready nodes end in a random order, one in five
        /// failing for good, some releases delayed (the release overhead).
        /// After every step, against a plain recount sharing no code with
        /// the rules: a node is ready exactly when its parents are all done
        /// and no delay of its release is pending, and blocked exactly when
        /// a parent failed or is blocked, a failed ancestor named as its
        /// cause; the port hears every move, in order. Every node ends
        /// done, failed (those failed) or blocked, and every node released
        /// that was not blocked was made ready.
        #[test]
        fn a_node_is_ready_exactly_when_its_parents_are_done(
            parents in dag(),
            picks in proptest::collection::vec((any::<proptest::sample::Index>(), 0..5u8), 40),
            delays in proptest::collection::vec(prop_oneof![Just(0.0), Just(2.0)], 0..20),
        ) {
            let n = parents.len();
            let (mut life, mut port) = life_of(&parents, delays);
            let mut state: Vec<JobState> = life.state.clone();
            let mut failed = Vec::new();
            let mut picks = picks.into_iter();
            let ancestor = |a: usize, j: usize| {
                let mut stack = vec![j];
                let mut seen = vec![false; n];
                while let Some(x) = stack.pop() {
                    for &p in &parents[x] {
                        if p == a {
                            return true;
                        }
                        if !std::mem::replace(&mut seen[p], true) {
                            stack.push(p);
                        }
                    }
                }
                false
            };
            loop {
                let is = |j: usize, s: JobState| life.state[j] == s;
                for (j, ps) in parents.iter().enumerate() {
                    let pending = port.later.iter().any(|&(x, _)| x == j);
                    let over = is(j, JobState::Done) || is(j, JobState::Failed);
                    let free = !over && ps.iter().all(|&p| is(p, JobState::Done));
                    prop_assert_eq!(is(j, JobState::Ready), free && !pending, "j{}", j);
                    let dead = ps.iter().any(|&p| is(p, JobState::Failed) || is(p, JobState::Blocked));
                    prop_assert_eq!(is(j, JobState::Blocked), dead, "j{}", j);
                    if dead {
                        let by = port.blocked_by[j];
                        prop_assert!(by.is_some_and(|f| failed.contains(&f) && ancestor(f, j)), "j{}", j);
                    }
                }
                for &(job, from, to) in &port.moves {
                    prop_assert_eq!(state[job], from);
                    state[job] = to;
                }
                port.moves.clear();
                prop_assert_eq!(&state, &life.state);
                let ready: Vec<usize> = (0..n).filter(|&j| life.state[j] == JobState::Ready).collect();
                port.now += 1.0;
                let pick = (picks.next().filter(|_| !ready.is_empty()))
                    .map(|(i, fail)| (ready[i.index(ready.len())], fail == 0));
                if let Some((j, true)) = pick {
                    failed.push(j);
                    life.fail_node(j, "it failed".into(), true, &mut port);
                } else if let Some((j, false)) = pick {
                    life.set_state(j, JobState::Done, &mut port);
                    life.release_children(j, &mut port);
                } else if let Some((job, at)) = port.later.pop() {
                    port.now = port.now.max(at);
                    life.make_ready(job, &mut port);
                } else if ready.is_empty() {
                    break;
                } else {
                    let j = ready[0];
                    life.set_state(j, JobState::Done, &mut port);
                    life.release_children(j, &mut port);
                }
            }
            for (j, ps) in parents.iter().enumerate() {
                let s = life.state[j];
                prop_assert_eq!(s == JobState::Failed, failed.contains(&j), "j{}", j);
                prop_assert!(matches!(s, JobState::Done | JobState::Failed | JobState::Blocked));
                if ps.is_empty() {
                    // The roots were ready from the start, not through the port.
                    prop_assert!(port.ready_at[j].is_none());
                } else if s != JobState::Blocked {
                    prop_assert!(port.ready_at[j].is_some(), "j{} never made ready", j);
                }
            }
            let failures: Vec<JobId> = port.failures.iter().map(|f| f.0).collect();
            prop_assert_eq!(failures, failed);
        }
    }

    /// A sub-DAG `S` (entry `S+PRE` j0, then its nodes x j1 and y j2,
    /// x -> y) whose y fails: the failure stops at `S`, which is then
    /// over for the DAG above; its RETRY runs the sub-DAG again, y and the
    /// entry waiting again (y behind the entry), x staying done, and `S`
    /// is ready once y ends well.
    #[test]
    fn a_subdag_run_again_waits_behind_its_entry_and_keeps_what_ended_well() {
        use crate::core::nodes::{NodeSettings, SubDag};
        let (mut life, mut port) = life_of(&[vec![], vec![0], vec![1], vec![2]], Vec::new());
        let mut nodes = NodeSettings::none(4);
        nodes.subdags = vec![SubDag {
            node: 3,
            entry: Some(0),
            members: vec![1, 2],
            ..Default::default()
        }];
        life.dagmans = super::super::dagmans::Dagmans::new(&nodes);
        life.dagmans.count_nodes(0..4, &life.state);
        life.nodes = nodes;
        life.set_lanes(false);
        for j in [0, 1] {
            life.set_state(j, JobState::Done, &mut port);
            life.release_children(j, &mut port);
        }
        assert_eq!(life.state[2], JobState::Ready);
        life.fail_node(2, "y failed".into(), true, &mut port);
        assert_eq!(port.failures.len(), 1);
        // The failure stops at S: its DAG is over, failed.
        assert_eq!(life.state[3], JobState::Ready, "S reports its DAG's end");
        assert_eq!(life.subdag_exit(3, 1.0), Some(1));
        life.restart_subdag(3, 0, &mut port);
        let states = [0, 1, 2, 3].map(|j| life.state[j]);
        use JobState::*;
        assert_eq!(states, [Ready, Done, Waiting, Waiting]);
        life.set_state(0, Done, &mut port);
        life.release_children(0, &mut port);
        assert_eq!(life.state[2], Ready, "y behind the entry");
        life.set_state(2, Done, &mut port);
        life.release_children(2, &mut port);
        assert_eq!(life.state[3], Ready);
        assert_eq!(life.subdag_exit(3, 2.0), None, "its second run ended well");
    }

    #[test]
    fn the_final_node_waits_for_every_other_node() {
        // j0 -> j1; j2 is FINAL.
        let (mut life, mut port) = life_of(&[vec![], vec![0], vec![]], Vec::new());
        life.nodes.final_node = Some(2);
        life.set_state(2, JobState::Waiting, &mut port);
        for j in [0, 1] {
            assert_ne!(life.state[2], JobState::Ready, "before j{j} ends");
            life.set_state(j, JobState::Done, &mut port);
            life.release_children(j, &mut port);
        }
        assert_eq!(life.state[2], JobState::Ready);
        // A node that ends without running keeps the time it was ready.
        let (mut life, mut port) = life_of(&[vec![], vec![0]], Vec::new());
        port.ready_at[0] = Some(-1.0);
        port.now = 5.0;
        life.complete_without_running(0, &mut port);
        assert_eq!(port.ready_at[0], Some(-1.0));
        assert_eq!(port.ready_at[1], Some(5.0));
        assert_eq!(life.state[1], JobState::Ready);
    }
}
