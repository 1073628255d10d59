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
//! The limits are the node life cycle's own state (`NodeLife`): what they
//! hold and release is decided here, and the manager only carries out what
//! is released ([`Released`], a POST script let run).

use super::*;
use super::subdag::SubDags;
use crate::core::nodes::SubDag;
use rustc_hash::FxHashSet as HashSet;

/// A submission or script a DAGMan holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// A node's job, or its POST script.
    Job(JobId),
    /// A sub-DAG, started by its entry no-op (done): its DAGMan's job.
    SubDag(JobId),
}

/// One limit of every DAGMan: DAGMan 0 is the top DAG, `k + 1` sub-DAG
/// `k`.
#[derive(Debug, Default)]
struct PerDagman {
    /// Per DAGMan: its limit (0: none).
    limit: Vec<usize>,
    /// Per DAGMan: what counts against it now.
    count: Vec<usize>,
    /// Per DAGMan: what it holds, first come first out.
    held: Vec<VecDeque<Held>>,
    /// Whether any DAGMan has this limit.
    on: bool,
}

impl PerDagman {
    /// Counting from the start when `on` (a sub-DAG read later may bring
    /// a limit), else only when a DAGMan has one.
    fn new(limit: Vec<usize>, on: bool) -> Self {
        let n = limit.len();
        PerDagman {
            on: on || limit.iter().any(|&l| l > 0),
            limit,
            count: vec![0; n],
            held: vec![VecDeque::new(); n],
        }
    }

    /// The limits are now `limit`: those of DAGMans added, and a grafted
    /// sub-DAG's own.
    fn grow(&mut self, limit: Vec<usize>) {
        let n = limit.len();
        self.limit = limit;
        self.count.resize(n, 0);
        self.held.resize(n, VecDeque::new());
    }

    /// Whether DAGMan `d` is at its limit.
    fn full(&self, d: usize) -> bool {
        self.limit[d] > 0 && self.count[d] >= self.limit[d]
    }

    /// DAGMan `d` counts one more unless it is full; then it holds `what`.
    /// Returns whether it was held.
    fn hold_or_count(&mut self, d: usize, what: Held) -> bool {
        if self.full(d) {
            self.held[d].push_back(what);
            return true;
        }
        self.count[d] += 1;
        false
    }

    /// What DAGMan `d` held that may go now.
    fn next(&mut self, d: usize) -> Option<Held> {
        if self.full(d) {
            return None;
        }
        self.held[d].pop_front()
    }
}

/// Every DAGMan's limits, and which sub-DAGs count in the queue above.
#[derive(Debug, Default)]
pub(super) struct DagmanLimits {
    submitted: PerDagman,
    idle: PerDagman,
    post: PerDagman,
    pre: PerDagman,
    /// Per sub-DAG: its submission counts in the queue of the DAGMan above.
    counted: Vec<bool>,
    /// Nodes without a PRE script counted in their DAGMan's queue from the
    /// start of their prescript stage, not yet submitted.
    reserved: HashSet<JobId>,
}

impl DagmanLimits {
    /// The limits `nodes` sets.
    pub(super) fn new(nodes: &NodeSettings) -> Self {
        // A deferred sub-DAG's limits are known only once it is read: its
        // DAG's jobs are counted from the start, in case.
        let on = nodes.subdags.iter().any(|d| d.deferred);
        let [submitted, idle, post, pre] = Self::limits(nodes).map(|l| PerDagman::new(l, on));
        DagmanLimits {
            submitted,
            idle,
            post,
            pre,
            counted: vec![false; nodes.subdags.len()],
            reserved: HashSet::default(),
        }
    }

    /// Whether a DAGMan's `DAGMAN_MAX_JOBS_SUBMITTED` may stop it: its
    /// ready queue's lane may close.
    pub(super) fn may_close(&self) -> bool {
        self.submitted.on
    }

    /// Every DAGMan's `DAGMAN_MAX_JOBS_SUBMITTED`, `_JOBS_IDLE`,
    /// `_POST_SCRIPTS` and `_PRE_SCRIPTS`, DAGMan 0 the top DAG.
    fn limits(nodes: &NodeSettings) -> [Vec<usize>; 4] {
        let each = |top: usize, sub: fn(&SubDag) -> usize| {
            std::iter::once(top)
                .chain(nodes.subdags.iter().map(sub))
                .collect()
        };
        [
            each(nodes.max_jobs_submitted, |d| d.max_jobs_submitted),
            each(nodes.max_jobs_idle, |d| d.max_jobs_idle),
            each(nodes.max_post, |d| d.max_post),
            // The top DAG's is the submit host's slots (`maxpre`).
            each(0, |d| d.max_pre),
        ]
    }

    /// The node jobs whose submission a DAGMan holds, no longer held: a
    /// stopped DAG submits nothing more, and DAGMan counts such a node
    /// ready, not submitted (its PRE script may have run).
    pub(super) fn take_held_submissions(&mut self) -> Vec<JobId> {
        let mut jobs = Vec::new();
        for limit in [&mut self.idle, &mut self.submitted] {
            for held in &mut limit.held {
                held.retain(|h| match *h {
                    Held::Job(j) => {
                        jobs.push(j);
                        false
                    }
                    Held::SubDag(_) => true,
                });
            }
        }
        jobs
    }

    /// A deferred sub-DAG was read: the limits of `nodes` as they are now.
    pub(super) fn graft(&mut self, nodes: &NodeSettings) {
        let [submitted, idle, post, pre] = Self::limits(nodes);
        self.submitted.grow(submitted);
        self.idle.grow(idle);
        self.post.grow(post);
        self.pre.grow(pre);
        self.counted.resize(nodes.subdags.len(), false);
    }
}

/// What a DAGMan held that may go now (see [`NodeLife::next_released`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Released {
    /// A node's job goes to the queue (its DAGMan counts it).
    Submit(JobId),
    /// A sub-DAG's DAG starts: its entry's children are released.
    SubDag(JobId),
}

impl NodeLife {
    /// `job`'s POST script ended (or was stopped): its DAGMan counts one
    /// fewer; returns the POST script it held that may run now.
    pub(super) fn post_slot_freed(&mut self, job: JobId) -> Option<JobId> {
        if !self.limits.post.on {
            return None;
        }
        let d = self.dagman_of(job);
        self.limits.post.count[d] -= 1;
        match self.limits.post.next(d) {
            Some(Held::Job(next)) => Some(next),
            _ => None,
        }
    }

    /// The next submission a DAGMan held while it had too many jobs idle
    /// or in the queue that may go now, counted (call until `None`; each
    /// is carried out before the next is asked for, as it changes the
    /// counts). Held jobs no longer staging are dropped.
    pub(super) fn next_released(&mut self) -> Option<Released> {
        let dagmans = self.limits.submitted.limit.len();
        if self.limits.idle.on {
            for d in 0..dagmans {
                while let Some(Held::Job(job)) = self.limits.idle.next(d) {
                    if self.state[job] == JobState::Staging {
                        return Some(Released::Submit(job));
                    }
                }
            }
        }
        if !self.limits.submitted.on {
            return None;
        }
        for d in 0..dagmans {
            while let Some(held) = self.limits.submitted.next(d) {
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
    /// The DAGMan `job` is a node of.
    fn dagman_of(&self, job: JobId) -> usize {
        self.subdags.innermost(job).map_or(0, |k| k + 1)
    }

    /// Whether `job`'s DAGMan holds its submission (it is then held): too
    /// many of its jobs idle, or in the queue.
    pub(super) fn submission_held(&mut self, job: JobId) -> bool {
        let l = &self.limits;
        if !l.idle.on && !l.submitted.on {
            return false;
        }
        let d = self.dagman_of(job);
        if self.limits.idle.on && self.limits.idle.full(d) {
            self.limits.idle.held[d].push_back(Held::Job(job));
            return true;
        }
        self.submission_held_by(d, Held::Job(job))
    }

    /// Whether DAGMan `d`'s `DAGMAN_MAX_JOBS_SUBMITTED` holds `what`; else
    /// it counts it.
    fn submission_held_by(&mut self, d: usize, what: Held) -> bool {
        if !self.limits.submitted.on {
            return false;
        }
        if let Held::Job(job) = what
            && self.limits.reserved.remove(&job)
        {
            return false; // counted since its prescript stage began
        }
        if self.limits.submitted.hold_or_count(d, what) {
            return true;
        }
        if let Held::SubDag(entry) = what
            && let Some(node) = self.node_of_entry(entry)
            && let Some(k) = self.subdags.of_node(node)
        {
            self.limits.counted[k] = true;
        }
        false
    }

    /// `job` went into or out of the queue's idle jobs (`idle`): its
    /// DAGMan's count of them follows.
    pub(super) fn idle_moved(&mut self, job: JobId, idle: bool) {
        if self.limits.idle.on {
            let d = self.dagman_of(job);
            let c = &mut self.limits.idle.count[d];
            *c = if idle { *c + 1 } else { *c - 1 };
        }
    }

    /// The entry no-op `job` of a sub-DAG ended: its DAG is submitted, one
    /// job of the DAGMan above, which may hold it (then its nodes wait).
    pub(super) fn subdag_start_held(&mut self, job: JobId) -> bool {
        self.limits.submitted.on
            && self.node_of_entry(job).is_some()
            && self.submission_held_by(self.dagman_of(job), Held::SubDag(job))
    }

    /// The sub-DAG node `job`'s DAG ended: its DAGMan's job left the queue
    /// of the DAGMan above.
    pub(super) fn subdag_left_queue(&mut self, job: JobId) {
        if !self.limits.submitted.on {
            return;
        }
        if let Some(k) = self.subdags.of_node(job)
            && std::mem::take(&mut self.limits.counted[k])
        {
            self.uncount_submitted(self.dagman_of(job));
        }
    }

    /// `job` left the queue (it ended, was killed or removed): a held
    /// submission of its DAGMan may go.
    pub(super) fn left_queue(&mut self, job: JobId) {
        if self.limits.submitted.on {
            self.uncount_submitted(self.dagman_of(job));
        }
    }

    /// DAGMan `d` has one job fewer in the queue: its ready queue's lane
    /// is open again.
    fn uncount_submitted(&mut self, d: usize) {
        self.limits.submitted.count[d] -= 1;
        self.ready.reopen(d);
    }

    /// Whether `job`, at the head of its DAGMan's ready queue, may start
    /// its prescript stage: it has a PRE script (run regardless), stands
    /// for a sub-DAG's end (its DAG counted since its entry), or its
    /// DAGMan has room for one more job in the queue.
    fn admits(limits: &DagmanLimits, nodes: &NodeSettings, subdags: &SubDags, job: JobId) -> bool {
        !limits.submitted.on
            || Self::submits_regardless(nodes, subdags, job)
            || !limits.submitted.full(subdags.innermost(job).map_or(0, |k| k + 1))
    }

    /// Whether `job` starts its prescript stage whatever its DAGMan's
    /// `DAGMAN_MAX_JOBS_SUBMITTED`: it has a PRE script, or is a sub-DAG's
    /// node.
    fn submits_regardless(nodes: &NodeSettings, subdags: &SubDags, job: JobId) -> bool {
        nodes.pre[job] || subdags.of_node(job).is_some()
    }

    /// The next ready job whose DAGMan may take it (see [`Self::admits`]).
    pub(super) fn pop_ready(&mut self) -> Option<JobId> {
        let NodeLife {
            ready,
            limits,
            nodes,
            subdags,
            ..
        } = self;
        ready.pop_open(|job| Self::admits(limits, nodes, subdags, job))
    }

    /// `job` moved from state `from` to `to`: a node that does not submit
    /// regardless counts in its DAGMan's queue from the start of its
    /// prescript stage until it is submitted (or goes back, or ends
    /// without a job, as a NOOP does).
    pub(super) fn reserve_moved(&mut self, job: JobId, from: JobState, to: JobState) {
        if !self.limits.submitted.on || from.claims_slot() == to.claims_slot() {
            return;
        }
        if to.claims_slot() {
            if !Self::submits_regardless(&self.nodes, &self.subdags, job) {
                let d = self.dagman_of(job);
                self.limits.submitted.count[d] += 1;
                self.limits.reserved.insert(job);
            }
        } else if self.limits.reserved.remove(&job) {
            self.uncount_submitted(self.dagman_of(job));
        }
    }

    /// Whether `job`'s DAGMan holds its POST script (it is then held).
    pub(super) fn post_held(&mut self, job: JobId) -> bool {
        self.limits.post.on && {
            let d = self.dagman_of(job);
            self.limits.post.hold_or_count(d, Held::Job(job))
        }
    }

    /// Whether `job`'s DAGMan has as many prescripts running as its
    /// `DAGMAN_MAX_PRE_SCRIPTS`: it holds `job` (Ready) until one ends.
    pub(super) fn prescript_held(&mut self, job: JobId) -> bool {
        if !self.limits.pre.on {
            return false;
        }
        let d = self.dagman_of(job);
        let full = self.limits.pre.full(d);
        if full {
            self.limits.pre.held[d].push_back(Held::Job(job));
        }
        full
    }

    /// `job`'s prescript started: its DAGMan counts it.
    pub(super) fn prescript_started(&mut self, job: JobId) {
        if self.limits.pre.on {
            let d = self.dagman_of(job);
            self.limits.pre.count[d] += 1;
        }
    }

    /// `job`'s prescript ended: a ready node its DAGMan held is offered
    /// again.
    pub(super) fn prescript_ended(&mut self, job: JobId) {
        if !self.limits.pre.on {
            return;
        }
        let d = self.dagman_of(job);
        self.limits.pre.count[d] -= 1;
        while let Some(Held::Job(next)) = self.limits.pre.next(d) {
            if self.state[next] == JobState::Ready {
                self.ready.push(next);
                break;
            }
        }
    }

    /// `job`'s POST script, held by its DAGMan, will not run: whether it
    /// was held.
    pub(super) fn forget_post(&mut self, job: JobId) -> bool {
        if !self.limits.post.on {
            return false;
        }
        let d = self.dagman_of(job);
        let held = &mut self.limits.post.held[d];
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
        life.limits = DagmanLimits::new(&nodes);
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
