//! Each DAGMan's own limits (HTCondor manual, "Throttling"): the top DAG's
//! and each sub-DAG's, from its own `CONFIG`.
//!
//! - `DAGMAN_MAX_JOBS_SUBMITTED` (`condor_submit_dag -maxjobs`): a DAGMan
//!   submits nothing while that many of its jobs are in the queue (from
//!   submission to the job's end; `Dag::SubmitReadyJobs`). A node without
//!   a PRE script then stays in the ready queue, in its DAGMan's order
//!   (its lane closed, see `ready_queue`); it counts from the start of its
//!   prescript stage, which stands for its submission. A node with a PRE
//!   script runs it regardless, as DAGMan runs PRE scripts before the
//!   ready queue, and its submission is held after it, first come first
//!   out. A sub-DAG, whose DAGMan is one job in the queue from its
//!   submission (after the node's PRE script) to its end, counts as one
//!   job of the DAGMan above it.
//! - `DAGMAN_MAX_JOBS_IDLE`: a DAGMan holds a submission while that many
//!   of its jobs wait idle in the queue.
//! - `DAGMAN_MAX_POST_SCRIPTS`: a DAGMan holds a POST script while that
//!   many of its own run.
//! - `DAGMAN_MAX_PRE_SCRIPTS` of a sub-DAG: it holds a ready node while
//!   that many of its prescripts (its PRE scripts and staging, as the
//!   top DAG's `maxpre` counts them) run. The top DAG's is the submit
//!   host's `maxpre`, which every prescript shares.
//!
//! A sub-DAG's jobs and scripts count against its own DAGMan only.
//!
//! Each limit is its DAGMan's, an instance of the tree of DAGMans the node
//! life cycle keeps (`dagmans`): what they hold and release is decided
//! here, and the manager only carries out what is released ([`Released`],
//! a POST script let run).

use super::dagmans::{Dagmans, Held};
use super::*;

/// What a DAGMan held that may go now (see [`NodeLife::next_released`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Released {
    /// A node's job goes to the queue (its DAGMan counts it).
    Submit(JobId),
    /// A sub-DAG's DAG starts: its entry's children are released.
    SubDag(JobId),
}

impl NodeLife {
    /// `job`'s POST script ended (or was stopped): its DAGMan counts one
    /// fewer; returns the POST script it held that may run now.
    pub(crate) fn post_slot_freed(&mut self, job: JobId) -> Option<JobId> {
        if !self.dagmans.on.post {
            return None;
        }
        let d = self.dagmans.dagman_of(job);
        self.dagmans.list[d].post.count -= 1;
        match self.dagmans.list[d].post.next() {
            Some(Held::Job(next)) => Some(next),
            _ => None,
        }
    }

    /// The next submission a DAGMan held while it had too many jobs idle
    /// or in the queue that may go now, counted (call until `None`; each
    /// is carried out before the next is asked for, as it changes the
    /// counts). Held jobs no longer staging are dropped.
    pub(crate) fn next_released(&mut self) -> Option<Released> {
        let dagmans = self.dagmans.list.len();
        if self.dagmans.on.idle {
            for d in 0..dagmans {
                while let Some(Held::Job(job)) = self.dagmans.list[d].idle.next() {
                    if self.state[job] == JobState::Staging {
                        return Some(Released::Submit(job));
                    }
                }
            }
        }
        if !self.dagmans.on.submitted {
            return None;
        }
        for d in 0..dagmans {
            while let Some(held) = self.dagmans.list[d].submitted.next() {
                match held {
                    Held::Job(job) if self.state[job] == JobState::Staging => {
                        return Some(Released::Submit(job));
                    }
                    // `next` found room: the guard counts the sub-DAG in its
                    // DAGMan's queue (it is not held again).
                    Held::SubDag(entry)
                        if self.state[entry] == JobState::Done
                            && !self.submission_held_by(d, held) =>
                    {
                        return Some(Released::SubDag(entry));
                    }
                    _ => {}
                }
            }
        }
        None
    }
}

impl NodeLife {
    /// Whether `job`'s DAGMan holds its submission (it is then held): too
    /// many of its jobs idle, or in the queue.
    pub(crate) fn submission_held(&mut self, job: JobId) -> bool {
        if !self.dagmans.on.idle && !self.dagmans.on.submitted {
            return false;
        }
        let d = self.dagmans.dagman_of(job);
        if self.dagmans.on.idle && self.dagmans.list[d].idle.full() {
            self.dagmans.list[d].idle.held.push_back(Held::Job(job));
            return true;
        }
        self.submission_held_by(d, Held::Job(job))
    }

    /// Whether DAGMan `d`'s `DAGMAN_MAX_JOBS_SUBMITTED` holds `what`; else
    /// it counts it.
    fn submission_held_by(&mut self, d: usize, what: Held) -> bool {
        if !self.dagmans.on.submitted {
            return false;
        }
        if let Held::Job(job) = what
            && self.dagmans.reserved.remove(&job)
        {
            return false; // counted since its prescript stage began
        }
        if self.dagmans.list[d].submitted.hold_or_count(what) {
            return true;
        }
        if let Held::SubDag(entry) = what
            && let Some(node) = self.node_of_entry(entry)
            && let Some(k) = self.dagmans.of_node(node)
        {
            self.dagmans.sub_mut(k).counted = true;
        }
        false
    }

    /// `job` went into or out of the queue's idle jobs (`idle`): its
    /// DAGMan's count of them follows.
    pub(crate) fn idle_moved(&mut self, job: JobId, idle: bool) {
        if self.dagmans.on.idle {
            let d = self.dagmans.dagman_of(job);
            let c = &mut self.dagmans.list[d].idle.count;
            *c = if idle { *c + 1 } else { *c - 1 };
        }
    }

    /// The entry no-op `job` of a sub-DAG ended: its DAG is submitted, one
    /// job of the DAGMan above, which may hold it (then its nodes wait).
    pub(crate) fn subdag_start_held(&mut self, job: JobId) -> bool {
        self.dagmans.on.submitted
            && self.node_of_entry(job).is_some()
            && self.submission_held_by(self.dagmans.dagman_of(job), Held::SubDag(job))
    }

    /// The sub-DAG node `job`'s DAG ended: its DAGMan's job left the queue
    /// of the DAGMan above.
    pub(crate) fn subdag_left_queue(&mut self, job: JobId) {
        if !self.dagmans.on.submitted {
            return;
        }
        if let Some(k) = self.dagmans.of_node(job)
            && std::mem::take(&mut self.dagmans.sub_mut(k).counted)
        {
            self.uncount_submitted(self.dagmans.dagman_of(job));
        }
    }

    /// `job` left the queue (it ended, was killed or removed): a held
    /// submission of its DAGMan may go.
    pub(crate) fn left_queue(&mut self, job: JobId) {
        if self.dagmans.on.submitted {
            self.uncount_submitted(self.dagmans.dagman_of(job));
        }
    }

    /// DAGMan `d` has one job fewer in the queue: its ready queue's lane
    /// is open again.
    fn uncount_submitted(&mut self, d: usize) {
        self.dagmans.list[d].submitted.count -= 1;
        self.ready.reopen(d);
    }

    /// Whether `job`, at the head of its DAGMan's ready queue, may start
    /// its prescript stage: it has a PRE script (run regardless), stands
    /// for a sub-DAG's end (its DAG counted since its entry), or its
    /// DAGMan has room for one more job in the queue. A halted DAGMan
    /// admits only its FINAL node until it stops (then only FINAL is
    /// still ready).
    fn admits(dagmans: &Dagmans, nodes: &NodeSettings, job: JobId) -> bool {
        let dagman = &dagmans.list[dagmans.dagman_of(job)];
        if dagman.halted && dagman.aborted.is_none() {
            return Self::starts_halted(dagmans, nodes, job);
        }
        !dagmans.on.submitted
            || Self::submits_regardless(nodes, dagmans, job)
            || !dagman.submitted.full()
    }

    /// Whether `job` starts its prescript stage whatever its DAGMan's
    /// `DAGMAN_MAX_JOBS_SUBMITTED`: it has a PRE script, or is a sub-DAG's
    /// node.
    fn submits_regardless(nodes: &NodeSettings, dagmans: &Dagmans, job: JobId) -> bool {
        nodes.pre[job] || dagmans.of_node(job).is_some()
    }

    /// The next ready job whose DAGMan may take it (see [`Self::admits`]).
    pub(crate) fn pop_ready(&mut self) -> Option<JobId> {
        let NodeLife {
            ready,
            dagmans,
            nodes,
            ..
        } = self;
        ready.pop_open(|job| Self::admits(dagmans, nodes, job))
    }

    /// `job` moved from state `from` to `to`: a node that does not submit
    /// regardless counts in its DAGMan's queue from the start of its
    /// prescript stage until it is submitted (or goes back, or ends
    /// without a job, as a NOOP does).
    pub(crate) fn reserve_moved(&mut self, job: JobId, from: JobState, to: JobState) {
        if !self.dagmans.on.submitted || from.claims_slot() == to.claims_slot() {
            return;
        }
        if to.claims_slot() {
            if !Self::submits_regardless(&self.nodes, &self.dagmans, job) {
                let d = self.dagmans.dagman_of(job);
                self.dagmans.list[d].submitted.count += 1;
                self.dagmans.reserved.insert(job);
            }
        } else if self.dagmans.reserved.remove(&job) {
            self.uncount_submitted(self.dagmans.dagman_of(job));
        }
    }

    /// Whether `job`'s DAGMan holds its POST script (it is then held).
    pub(crate) fn post_held(&mut self, job: JobId) -> bool {
        self.dagmans.on.post && {
            let d = self.dagmans.dagman_of(job);
            self.dagmans.list[d].post.hold_or_count(Held::Job(job))
        }
    }

    /// Whether `job`'s DAGMan has as many prescripts running as its
    /// `DAGMAN_MAX_PRE_SCRIPTS`: it holds `job` (Ready) until one ends.
    pub(crate) fn prescript_held(&mut self, job: JobId) -> bool {
        if !self.dagmans.on.pre {
            return false;
        }
        let d = self.dagmans.dagman_of(job);
        let full = self.dagmans.list[d].pre.full();
        if full {
            self.dagmans.list[d].pre.held.push_back(Held::Job(job));
        }
        full
    }

    /// `job`'s prescript started: the run and its DAGMan count it.
    pub(crate) fn prescript_started(&mut self, job: JobId) {
        self.prescripts_running += 1;
        if self.dagmans.on.pre {
            let d = self.dagmans.dagman_of(job);
            self.dagmans.list[d].pre.count += 1;
        }
    }

    /// `job`'s prescript ended: a ready node its DAGMan held is offered
    /// again.
    pub(crate) fn prescript_ended(&mut self, job: JobId) {
        self.prescripts_running -= 1;
        if !self.dagmans.on.pre {
            return;
        }
        let d = self.dagmans.dagman_of(job);
        self.dagmans.list[d].pre.count -= 1;
        while let Some(Held::Job(next)) = self.dagmans.list[d].pre.next() {
            if self.state[next] == JobState::Ready {
                self.ready.push(next);
                break;
            }
        }
    }

    /// `job`'s POST script, held by its DAGMan, will not run: whether it
    /// was held.
    pub(crate) fn forget_post(&mut self, job: JobId) -> bool {
        if !self.dagmans.on.post {
            return false;
        }
        let d = self.dagmans.dagman_of(job);
        let held = &mut self.dagmans.list[d].post.held;
        let before = held.len();
        held.retain(|&h| h != Held::Job(job));
        held.len() != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DAGMan of `n` nodes without parents, every one in the ready
    /// queue, with `set`'s limits.
    fn life(n: usize, set: impl FnOnce(&mut NodeSettings)) -> NodeLife {
        let mut life = NodeLife::new(vec![0; n], vec![Vec::new(); n], false, 0);
        let mut nodes = NodeSettings::none(n);
        set(&mut nodes);
        life.dagmans = Dagmans::new(&nodes);
        life.nodes = nodes;
        life
    }

    #[test]
    fn post_scripts_past_the_limit_wait_and_go_first_come_first_as_one_ends() {
        let mut life = life(4, |n| n.max_post = 2);
        assert!(!life.post_held(0) && !life.post_held(1));
        assert!(life.post_held(2) && life.post_held(3));
        assert_eq!(life.post_slot_freed(1), Some(2));
        // The manager runs it, and its DAGMan counts it.
        assert!(!life.post_held(2));
        assert!(life.forget_post(3), "3 was held");
        assert_eq!(life.post_slot_freed(0), None);
    }

    #[test]
    fn held_submissions_go_in_their_order_as_jobs_leave_the_queue() {
        // Nodes with PRE scripts: their submissions wait after it.
        let mut life = life(3, |n| {
            n.max_jobs_submitted = 1;
            n.pre = vec![true; 3];
        });
        for j in 0..3 {
            life.move_node(j, JobState::Staging);
        }
        assert!(!life.submission_held(0));
        assert!(life.submission_held(1) && life.submission_held(2));
        assert_eq!(life.next_released(), None, "the queue is full");
        life.left_queue(0);
        assert_eq!(life.next_released(), Some(Released::Submit(1)));
        assert!(!life.submission_held(1), "counted as it goes");
        assert_eq!(life.next_released(), None);
        // A held node that left its prescript stage meanwhile is dropped.
        life.move_node(2, JobState::Ready);
        life.left_queue(1);
        assert_eq!(life.next_released(), None);
    }

    #[test]
    fn a_node_without_a_pre_script_counts_from_its_prescript_stage_until_it_goes_back() {
        let mut life = life(2, |n| n.max_jobs_submitted = 1);
        assert_eq!(life.pop_ready(), Some(0));
        life.move_node(0, JobState::Staging);
        assert_eq!(life.pop_ready(), None, "its DAGMan is full: 1 waits");
        assert!(!life.submission_held(0), "0 was counted already");
        // 0 fails at its site and is ready again: 1 may go.
        life.move_node(0, JobState::Queued);
        life.left_queue(0);
        life.move_node(0, JobState::Ready);
        assert_eq!(life.pop_ready(), Some(1));
        life.move_node(1, JobState::Staging);
        // Back to ready without a submission: the reservation is let go.
        life.move_node(1, JobState::Ready);
        life.ready.push(1);
        assert_eq!(life.pop_ready(), Some(1));
        assert_eq!(life.pop_ready(), None, "the queue is empty");
    }
}
