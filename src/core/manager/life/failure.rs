//! A node's failures (DAGMan's `RETRY` count), its failure for good and
//! what it blocks (DAGMan's rescue semantics), and a done node run again
//! for an output that was lost (gridbed's `reproduce_lost`).

use super::*;

/// What follows a failed submission ([`NodeLife::submit_failed`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum SubmitFailure {
    /// The node is submitted again once its DAGMan's wait is over
    /// ([`NodeLife::submit_gate`]).
    TryAgain,
    /// The submission failed for good.
    GiveUp,
}

impl NodeLife {
    /// `RETRY`: whether node `owner` may run again after its failures so
    /// far; `max` when it sets none.
    pub(crate) fn retries_left(&self, owner: JobId, max: u32) -> bool {
        self.failures[owner] < self.nodes.retry[owner].unwrap_or(max)
    }

    /// Node `owner` failed once more: its failures and the retries it is
    /// allowed (`max` when it sets none), once they are spent.
    pub(crate) fn count_failure(&mut self, owner: JobId, max: u32) -> Option<(u32, u32)> {
        self.failures[owner] += 1;
        let allowed = self.nodes.retry[owner].unwrap_or(max);
        (self.failures[owner] > allowed).then_some((self.failures[owner], allowed))
    }

    /// DAGMan could not submit `job`'s job at `now`, after `tries`
    /// submissions of the node in all (this one and those that went
    /// through included), as HTCondor's `Dag::ProcessFailedSubmit` goes
    /// on: with tries left (only through `condor_submit`, not with direct
    /// submission) its DAGMan waits, twice as long as after its last
    /// failure, before it submits anything again, and the node is
    /// submitted once the wait is over; else the node's `RETRY` is spent
    /// (`max` when it sets none) and the waits start over.
    pub(crate) fn submit_failed(&mut self, job: JobId, tries: u32, now: Time, max: u32) -> SubmitFailure {
        let d = self.dagmans.dagman_of(job);
        let dagman = &mut self.dagmans.list[d];
        let allowed = match self.nodes.submit.direct {
            true => 0,
            false => self.nodes.submit.max_attempts,
        };
        if tries < allowed {
            let wait = dagman.submit_wait.max(1.0);
            dagman.submit_wait = 2.0 * wait;
            dagman.submit_gate = now + wait;
            return SubmitFailure::TryAgain;
        }
        self.submitted_well(job);
        self.failures[job] = self.nodes.retry[job].unwrap_or(max);
        SubmitFailure::GiveUp
    }

    /// A submission of `job`'s DAGMan went through: it waits no more.
    pub(crate) fn submitted_well(&mut self, job: JobId) {
        let d = self.dagmans.dagman_of(job);
        let dagman = &mut self.dagmans.list[d];
        (dagman.submit_gate, dagman.submit_wait) = (0.0, 0.0);
    }

    /// The earliest time `job`'s DAGMan submits it (a failed submission
    /// holds its submissions for a while).
    pub(crate) fn submit_gate(&self, job: JobId) -> Time {
        self.dagmans.list[self.dagmans.dagman_of(job)].submit_gate
    }

    /// An output of `job` was lost and must be made again: if it ended
    /// done, it is ready to run again (outside DAGMan's rules: gridbed's
    /// `reproduce_lost`). Returns whether it was.
    pub(crate) fn run_again(&mut self, job: JobId, port: &mut impl LifePort) -> bool {
        if self.state[job] != JobState::Done {
            return false;
        }
        self.rerun[job] = true;
        self.set_state(job, JobState::Ready, port);
        self.ready.push(job);
        true
    }

    /// The node `job` will never run: its descendants are blocked
    /// (DAGMan), while the jobs that were only ordered after it are
    /// released; the jobs waiting for its outputs to be made again plan
    /// again. With `futile`, the nodes a stop left unrun below `job`
    /// become futile too (a removed node's do not: DAGMan reads no end of
    /// a job it removed).
    pub(crate) fn fail_node(
        &mut self,
        job: JobId,
        why: String,
        futile: bool,
        port: &mut impl LifePort,
    ) {
        // A sub-DAG whose PRE script failed for good never runs: its node
        // fails (no POST script runs), before its DAG's nodes are blocked.
        if let Some(node) = self.node_of_entry(job)
            && self.state[node] == JobState::Waiting
        {
            let why = format!("its PRE script's no-op failed: {why}");
            self.fail_node(node, why, futile, port);
        }
        self.set_state(job, JobState::Failed, port);
        let waiting = port.failed(job, why);
        self.requeue_ready(waiting);
        // (node, a stop had left it unrun: a sub-DAG's node counted it then)
        let mut stack = vec![(job, false)];
        while let Some((j, was_stopped)) = stack.pop() {
            for i in 0..self.ordering[j].len() {
                let c = self.ordering[j][i];
                self.release_child(c, port);
            }
            let mut below = port.workflow().children(j).to_vec();
            below.extend(self.close_gate(j));
            below.extend(self.never_provisioned(j));
            for c in below {
                // A weak child of the node that failed runs all the same
                // (DAGMan's weak arc: its parent is over).
                if j == job && !self.nodes.weak.is_empty() && self.nodes.weak.contains(&(j, c)) {
                    if self.state[c] == JobState::Waiting {
                        self.release_child(c, port);
                    }
                    continue;
                }
                // A node a stop left unrun becomes futile too.
                if futile && self.state[c] == JobState::Blocked && port.blocked_by(c).is_none() {
                    port.set_blocked_by(c, job);
                    stack.push((c, true));
                    continue;
                }
                if self.state[c] != JobState::Waiting {
                    continue;
                }
                // A sub-DAG's failure stops at its node, whose DAG ends
                // failed once nothing more of it can run.
                if let Some(k) = self.dagmans.of_node(c) {
                    if !was_stopped {
                        self.subdag_leaf_failed(c, k, port);
                    }
                    continue;
                }
                self.set_state(c, JobState::Blocked, port);
                port.set_blocked_by(c, job);
                stack.push((c, false));
            }
        }
    }

    /// Those of `jobs` still ready go back to the ready queue.
    pub(crate) fn requeue_ready(&mut self, jobs: Vec<JobId>) {
        for job in jobs {
            if self.state[job] == JobState::Ready {
                self.ready.push(job);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::node_life::recorder::life_of;
    use super::*;

    /// A node whose output was lost runs again once it ended done, and
    /// only then: one still to end makes the output anyway.
    #[test]
    fn a_done_node_whose_output_was_lost_is_ready_to_run_again() {
        let (mut life, mut port) = life_of(&[vec![], vec![0]], Vec::new());
        assert!(!life.run_again(0, &mut port), "j0 has not ended");
        life.set_state(0, JobState::Done, &mut port);
        life.release_children(0, &mut port);
        while life.ready.pop().is_some() {}
        assert!(life.run_again(0, &mut port));
        assert_eq!(life.state[0], JobState::Ready);
        assert!(life.rerun[0]);
        assert_eq!(life.ready.pop(), Some(0));
        assert_eq!(port.moves.last(), Some(&(0, JobState::Done, JobState::Ready)));
    }

    /// `RETRY n`: a node may fail n times and run again each time; its
    /// (n+1)th failure spends them. A node with no `RETRY` gets the
    /// run's `max_retries`.
    #[test]
    fn retry_counts_a_nodes_failures_against_its_own_or_the_runs_allowance() {
        let mut life = NodeLife::new(vec![0; 2], vec![Vec::new(); 2], false, 0);
        life.nodes = NodeSettings::none(2);
        life.nodes.retry[0] = Some(1);
        assert!(life.retries_left(0, 5));
        assert_eq!(life.count_failure(0, 5), None);
        assert!(!life.retries_left(0, 5), "RETRY 1 is spent after one failure");
        assert_eq!(life.count_failure(0, 5), Some((2, 1)));
        for _ in 0..2 {
            assert!(life.retries_left(1, 2));
            assert_eq!(life.count_failure(1, 2), None);
        }
        assert_eq!(life.count_failure(1, 2), Some((3, 2)), "max_retries 2");
    }
}
