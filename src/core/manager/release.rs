//! Release of ready jobs: a node is ready when its parents ended (DAGMan);
//! NOOP and DONE nodes complete without running; the FINAL node is ready
//! when every other node is over; a stopped DAG (see `abort.rs`) releases
//! none but the FINAL node. A node with a `SAVE_POINT_FILE` records the
//! DAG's state as it starts (DAGMan's `Dag::StartNode` writes the save file
//! before the PRE script, on the node's first start, not on a retry).

use super::*;

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

impl Manager {
    /// Ends a node that runs no job (`NOOP`) or already ran (`DONE`).
    pub(super) fn complete_without_running(&mut self, job: JobId) {
        self.set_state(job, JobState::Done);
        self.records.jobs[job].ready.get_or_insert(self.now);
        self.release_children(job);
    }

    /// `job` is over: its workflow and ordering children lose a parent.
    pub(super) fn release_children(&mut self, job: JobId) {
        self.dag.hold_for_provisioner(&self.wf, job);
        let wf = self.wf.clone();
        for &c in &wf.children[job] {
            self.release_child(c);
        }
        for i in 0..self.dag.ordering[job].len() {
            let c = self.dag.ordering[job][i];
            self.release_child(c);
        }
        self.open_gate(job);
    }

    /// `job`'s job took its slot: if it is a provisioner, the nodes
    /// waiting for its go-ahead may start.
    pub(super) fn provisioned(&mut self, job: JobId) {
        for j in self.dag.take_gate(job) {
            self.release_child(j);
        }
    }

    /// One parent of `c` is over; `c` is ready when none is left.
    pub(super) fn release_child(&mut self, c: JobId) {
        // A sub-DAG run again runs its PRE script's no-op again, whose
        // children done in the last run wait for nothing.
        if self.dag.missing_parents[c] == 0 {
            debug_assert!(self.dag.state[c] == JobState::Done, "released twice");
            return;
        }
        self.dag.missing_parents[c] -= 1;
        if self.dag.missing_parents[c] == 0 && self.dag.state[c] == JobState::Waiting {
            let delay = self.grid.pool.wms.draw(&self.settings.release_overhead);
            if delay > 0.0 {
                self.schedule(self.now + delay, Timer::Release { job: c });
            } else {
                self.make_ready(c);
            }
        }
    }

    /// The FINAL node is ready once every other node is over.
    pub(super) fn release_final(&mut self) {
        if let Some(f) = self.dag.nodes.final_node
            && self.dag.state[f] == JobState::Waiting
        {
            // SERVICE nodes run on beside it.
            let (over, of) = self.dag.over_beside_services();
            if over + 1 == of {
                self.make_ready(f);
            }
        }
    }

    pub(super) fn make_ready(&mut self, job: JobId) {
        if self.dag.stopped_for(job) || self.grid.memoizing(job) || self.dag.subdag_holds(job) {
            return;
        }
        if self.dag.state[job] == JobState::Waiting {
            self.set_state(job, JobState::Ready);
            self.records.jobs[job].ready = Some(self.now);
            self.dag.ready.push(job);
            if !self.dag.nodes.save_points.is_empty() && self.dag.nodes.save_points.contains(&job) {
                self.dag.save_point(job);
            }
        }
    }

}

impl NodeLife {
    /// Records the DAG's state as `job`, a save point, starts. A node is
    /// made ready once per run of its DAG (a retry does not wait again), so
    /// this is its first start, or its first in a sub-DAG run again.
    pub(super) fn save_point(&mut self, job: JobId) {
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
