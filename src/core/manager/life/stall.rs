//! A run that can make no more progress ends, saying why, rather than wait
//! for ever (issue 61): nothing is in flight (no job staging, queued or
//! running, no transfer, no script), the manager has nothing to wake for,
//! and jobs are left. Only something outside it could move it then (a
//! timed fault, a site coming back), which the engines know of and wait
//! out first. The jobs left ready fail for good with the reason, and their
//! descendants are blocked, so both engines end the same way, with the
//! same words, the record and database written.
//!
//! Each room answers for its own part: the node life cycle whether a node
//! is in flight, which nodes are left and which are stuck; the grid's
//! placement whether a site could run them and who holds them
//! (`Placement::any_execution_site_up`, `selector_words`). The manager
//! (`Manager::stalled`) adds its timers.

use super::node_life::{JobState, NodeLife};
use crate::core::JobId;

impl NodeLife {
    /// Whether a node is staging, queued or running, or a prescript runs.
    pub(crate) fn in_flight(&self) -> bool {
        let c = &self.counts;
        c.staging + c.queued + c.running > 0 || self.prescripts_running > 0
    }

    /// Nodes not over yet.
    pub(crate) fn left(&self) -> usize {
        let c = &self.counts;
        self.state.len() - c.done - c.failed - c.blocked
    }

    /// The nodes a stall leaves to fail for good: each ready one (held
    /// or not), else each one waiting; the selector holds none after.
    pub(crate) fn stuck(&mut self) -> Vec<JobId> {
        self.held.clear();
        let in_state = |s: JobState| -> Vec<JobId> {
            (0..self.state.len()).filter(|&j| self.state[j] == s).collect()
        };
        match in_state(JobState::Ready) {
            ready if ready.is_empty() => in_state(JobState::Waiting),
            ready => ready,
        }
    }

    /// Why nothing moves, in words, when nothing is in flight and no
    /// timer is due: no execution site is up (`any_site_up` false), every
    /// ready node is held by the site selector (as `selector` names it),
    /// or nothing can start.
    pub(crate) fn stall_words(&self, any_site_up: bool, selector: impl FnOnce() -> String) -> String {
        let left = self.left();
        if !any_site_up {
            return format!("{left} jobs are left and no execution site is up");
        }
        if !self.held.is_empty() {
            return format!(
                "every ready job ({}) is held by the {}, and no job runs or moves that could change its mind",
                self.held.len(),
                selector()
            );
        }
        format!("{left} jobs are left and none can start: no job runs, no file moves and nothing is due")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_fails_the_ready_nodes_else_the_waiting_ones() {
        let mut life = NodeLife::new(vec![0, 1, 0, 2], vec![Vec::new(); 4], false, 0);
        assert!(!life.in_flight());
        assert_eq!(life.left(), 4);
        life.held.push(2);
        assert_eq!(life.stuck(), vec![0, 2], "the ready ones, held or not");
        assert!(life.held.is_empty());
        for j in [0, 2] {
            life.move_node(j, JobState::Done);
        }
        assert_eq!(life.left(), 2);
        assert_eq!(life.stuck(), vec![1, 3], "none ready: the waiting ones");
        life.move_node(1, JobState::Staging);
        assert!(life.in_flight());
    }
}
