//! DAGMan's per-node settings, honoured by the manager (HTCondor DAGMan
//! manual, "node job submission" and "throttling"): `RETRY` bounds the
//! attempts of one node, `PRIORITY` orders the release of ready nodes
//! (higher first, ties first come), `CATEGORY` + `MAXJOBS` bound the nodes of
//! a category in flight at once, `NOOP` nodes run no job, `DONE` nodes are
//! complete before the run starts, `PRE_SKIP` ends a node whose PRE script
//! exits its value, `ABORT-DAG-ON` stops the DAG, and the
//! `FINAL` node runs last whatever happened before. A workflow without DAGMan settings gets
//! [`NodeSettings::none`]: FIFO release, no categories, the manager's
//! `max_retries` for every job.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::JobId;

/// Per-job DAGMan settings, indexed by job id.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeSettings {
    /// `RETRY N`: attempts after the first (None: the manager's `max_retries`).
    pub retry: Vec<Option<u32>>,
    /// `PRIORITY`: release order among ready jobs, higher first.
    pub priority: Vec<i32>,
    /// `CATEGORY`: index into `category_limits`.
    pub category: Vec<Option<usize>>,
    /// `MAXJOBS` per category (`usize::MAX`: no limit).
    pub category_limits: Vec<usize>,
    /// `NOOP`: the node runs no job and ends when it is released.
    pub noop: Vec<bool>,
    /// `DONE`: already complete.
    pub done: Vec<bool>,
    /// Has a PRE script to run (before its staging).
    pub pre: Vec<bool>,
    /// Has a POST script to run (after its job).
    pub post: Vec<bool>,
    /// `RETRY … UNLESS-EXIT v`: a script exiting `v` fails the node for good.
    pub retry_unless_exit: Vec<Option<i32>>,
    /// `SCRIPT DEFER status time` of the PRE script: that exit runs it again
    /// after `time` seconds, not counted as a failure.
    pub pre_defer: Vec<Option<(i32, f64)>>,
    /// The same for the POST script.
    pub post_defer: Vec<Option<(i32, f64)>>,
    /// `PRE_SKIP v`: the PRE script exiting `v` (non-zero) ends the node,
    /// successfully, without its job or POST script.
    pub pre_skip: Vec<Option<i32>>,
    /// `DAGMAN_MAX_POST_SCRIPTS`: POST scripts running at once (0: no limit).
    pub max_post: usize,
    /// `DAGMAN_MAX_JOBS_IDLE`: jobs submitted and not started at once, over
    /// all sites (0: no limit); more wait before their submission.
    pub max_jobs_idle: usize,
    /// `DAGMAN_MAX_JOBS_SUBMITTED` of the top DAG: its jobs in the queue at
    /// once (0: no limit); a sub-DAG has its own ([`SubDag`]).
    pub max_jobs_submitted: usize,
    /// The status each job's program exits with, per attempt (the last
    /// repeats; empty: 0). A DAG's sidecar sets it (`exit = [1, 0]`).
    pub exits: Vec<Vec<i32>>,
    /// `ABORT-DAG-ON`: (exit value, DAG return value) per node: its PRE
    /// script, its POST script, or its job when it has no POST, exiting
    /// with that value aborts the DAG.
    pub abort_on: Vec<Vec<(i32, Option<i32>)>>,
    /// `FINAL`: the node that runs once every other node is done, failed or
    /// will never run (after an abort too); its outcome is the DAG's.
    pub final_node: Option<JobId>,
    /// `SUBDAG EXTERNAL`: each sub-DAG, run as its own DAGMan.
    pub subdags: Vec<SubDag>,
    /// `SERVICE`: the node runs beside the DAG from its start and is
    /// removed once every other node is over; its outcome is not the
    /// DAG's.
    pub service: Vec<bool>,
    /// `PROVISIONER`: the node whose job must run before any other node
    /// starts (DAGMan waits for its go-ahead).
    pub provisioner: Option<JobId>,
    /// `WEAK PARENT p CHILD c` edges (p, c): when `p` fails for good, `c`
    /// counts it as over and may run (a node made futile still makes all
    /// of its children futile).
    pub weak: std::collections::BTreeSet<(JobId, JobId)>,
    /// `SAVE_POINT_FILE`: the nodes that record the DAG's state (a
    /// [`crate::core::SavePoint`]) as they start.
    pub save_points: std::collections::BTreeSet<JobId>,
    /// `TOLERANCE`: the nodes whose job may fail (exit non-zero) without
    /// failing the node: with no POST script the node ends done, writing
    /// no outputs.
    pub tolerant: std::collections::BTreeSet<JobId>,
}

/// A `SUBDAG EXTERNAL` node and its DAG's nodes, flattened into the DAG:
/// the node is a no-op that follows its DAG's leaves, and its "job" is its
/// DAG, which ends with DAGMan's exit value (0 when every node of it ended
/// well, or its FINAL node did; else 1). A failure inside blocks only the nodes of the sub-DAG
/// below it; the node's POST script sees the exit value as `$RETURN`, and
/// its `RETRY` runs the sub-DAG again from its rescue (the nodes that ended
/// well stay done).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SubDag {
    /// The `SUBDAG EXTERNAL` node.
    pub node: JobId,
    /// The no-op that starts its DAG: the node's PRE script runs there,
    /// and its end submits the DAG (a `.dag`'s sub-DAGs always have one).
    pub entry: Option<JobId>,
    /// Its DAG's nodes, those of sub-DAGs nested in it included.
    pub members: Vec<JobId>,
    /// `DAGMAN_MAX_JOBS_SUBMITTED` of its own `CONFIG` (0: no limit).
    pub max_jobs_submitted: usize,
    /// `DAGMAN_MAX_JOBS_IDLE` of its own `CONFIG` (0: no limit).
    pub max_jobs_idle: usize,
    /// `DAGMAN_MAX_POST_SCRIPTS` of its own `CONFIG` (0: no limit).
    pub max_post: usize,
    /// `DAGMAN_MAX_PRE_SCRIPTS` of its own `CONFIG` (0: no limit): its
    /// nodes' prescripts at once, within the submit host's `maxpre`.
    pub max_pre: usize,
    /// Its own FINAL node (one of `members`): it runs once every other
    /// node of the sub-DAG is over, and its outcome is the sub-DAG's. A
    /// sub-DAG with one has an `entry`.
    pub final_node: Option<JobId>,
    /// Its own PROVISIONER node (one of `members`): the sub-DAG's other
    /// nodes start once its job runs. A sub-DAG with one has an `entry`.
    pub provisioner: Option<JobId>,
}

impl NodeSettings {
    /// No settings for `jobs` jobs: plain FIFO, no limits.
    pub fn none(jobs: usize) -> Self {
        NodeSettings {
            retry: vec![None; jobs],
            priority: vec![0; jobs],
            category: vec![None; jobs],
            category_limits: Vec::new(),
            noop: vec![false; jobs],
            done: vec![false; jobs],
            pre: vec![false; jobs],
            post: vec![false; jobs],
            retry_unless_exit: vec![None; jobs],
            pre_defer: vec![None; jobs],
            post_defer: vec![None; jobs],
            pre_skip: vec![None; jobs],
            max_post: 0,
            max_jobs_idle: 0,
            max_jobs_submitted: 0,
            exits: vec![Vec::new(); jobs],
            abort_on: vec![Vec::new(); jobs],
            final_node: None,
            subdags: Vec::new(),
            service: vec![false; jobs],
            provisioner: None,
            weak: Default::default(),
            save_points: Default::default(),
            tolerant: Default::default(),
        }
    }
}

/// Ready jobs waiting for a prescript: FIFO, or by priority (higher first,
/// then first come) when any job has one. Depth-first
/// (`DAGMAN_SUBMIT_DEPTH_FIRST`) puts newly ready jobs at the head instead
/// of the tail: last come first among equal priorities.
#[derive(Debug, Clone, Default)]
pub struct ReadyQueue {
    fifo: VecDeque<JobId>,
    heap: BinaryHeap<(i32, Reverse<u64>, JobId)>,
    priority: Option<Vec<i32>>,
    seq: u64,
    depth_first: bool,
}

impl ReadyQueue {
    /// A FIFO queue.
    pub fn fifo() -> Self {
        ReadyQueue::default()
    }

    /// A queue that serves the newest ready job first.
    pub fn depth_first() -> Self {
        ReadyQueue {
            depth_first: true,
            ..ReadyQueue::default()
        }
    }

    /// Orders by `priority` from now on (the jobs queued keep their order
    /// among equals).
    pub fn set_priorities(&mut self, priority: Vec<i32>) {
        if priority.iter().all(|&p| p == 0) {
            return;
        }
        let mut queued: Vec<JobId> = self.fifo.drain(..).collect();
        if self.depth_first {
            queued.reverse(); // pushed again oldest first, they keep their order
        }
        self.priority = Some(priority);
        for j in queued {
            self.push(j);
        }
    }

    /// Queues `job`.
    pub fn push(&mut self, job: JobId) {
        match &self.priority {
            None if self.depth_first => self.fifo.push_front(job),
            None => self.fifo.push_back(job),
            Some(p) => {
                self.seq += 1;
                let order = if self.depth_first {
                    u64::MAX - self.seq
                } else {
                    self.seq
                };
                self.heap.push((p[job], Reverse(order), job));
            }
        }
    }

    /// The next job to plan.
    pub fn pop(&mut self) -> Option<JobId> {
        match self.priority {
            None => self.fifo.pop_front(),
            Some(_) => self.heap.pop().map(|(_, _, j)| j),
        }
    }

    /// Up to `n` queued jobs in the order [`pop`](Self::pop) would give
    /// them, without taking them.
    pub fn peek(&self, n: usize) -> Vec<JobId> {
        match self.priority {
            None => self.fifo.iter().take(n).copied().collect(),
            Some(_) => {
                let mut next: Vec<_> = self.heap.iter().copied().collect();
                if next.len() > n {
                    next.select_nth_unstable_by(n, |a, b| b.cmp(a));
                    next.truncate(n);
                }
                next.sort_unstable_by(|a, b| b.cmp(a));
                next.into_iter().map(|(_, _, j)| j).collect()
            }
        }
    }

    /// Jobs queued.
    pub fn len(&self) -> usize {
        self.fifo.len() + self.heap.len()
    }

    /// Whether none is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `MAXJOBS`: jobs of each category in flight (prescript to end) and the
/// ready ones held back while their category is full.
#[derive(Debug, Clone, Default)]
pub struct Throttle {
    limits: Vec<usize>,
    in_flight: Vec<usize>,
    held: Vec<VecDeque<JobId>>,
    /// Most jobs of each category ever in flight at once (for checks).
    pub peak: Vec<usize>,
}

impl Throttle {
    /// A throttle over categories with these limits.
    pub fn new(limits: Vec<usize>) -> Self {
        let n = limits.len();
        Throttle {
            limits,
            in_flight: vec![0; n],
            held: vec![VecDeque::new(); n],
            peak: vec![0; n],
        }
    }

    /// Whether a job of `category` may start now; if so it counts as in
    /// flight, else it is held until one of its category leaves.
    pub fn admit(&mut self, category: Option<usize>, job: JobId) -> bool {
        let Some(c) = category else {
            return true;
        };
        if self.in_flight[c] >= self.limits[c] {
            self.held[c].push_back(job);
            return false;
        }
        self.in_flight[c] += 1;
        self.peak[c] = self.peak[c].max(self.in_flight[c]);
        true
    }

    /// A job of `category` left flight; returns a held job to queue again.
    pub fn leave(&mut self, category: Option<usize>) -> Option<JobId> {
        let c = category?;
        self.in_flight[c] = self.in_flight[c].saturating_sub(1);
        self.held[c].pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_release_higher_first_and_ties_in_arrival_order() {
        let mut q = ReadyQueue::fifo();
        for j in 0..4 {
            q.push(j);
        }
        q.set_priorities(vec![0, 5, -1, 5]);
        q.push(2);
        assert_eq!(
            std::iter::from_fn(|| q.pop()).collect::<Vec<_>>(),
            [1, 3, 0, 2, 2]
        );
        let mut fifo = ReadyQueue::fifo();
        fifo.set_priorities(vec![0; 3]);
        fifo.push(2);
        fifo.push(0);
        assert_eq!(fifo.pop(), Some(2));
    }

    #[test]
    fn depth_first_serves_the_newest_first_among_equal_priorities() {
        let mut q = ReadyQueue::depth_first();
        for j in 0..3 {
            q.push(j);
        }
        assert_eq!(q.pop(), Some(2));
        q.push(3);
        assert_eq!(q.peek(3), [3, 1, 0]);
        // Priorities first; the queued keep their order when they are set.
        q.set_priorities(vec![0, 0, 0, 0, 7]);
        assert_eq!(q.peek(3), [3, 1, 0]);
        q.push(4);
        q.push(2);
        assert_eq!(
            std::iter::from_fn(|| q.pop()).collect::<Vec<_>>(),
            [4, 2, 3, 1, 0]
        );
    }

    #[test]
    fn peek_gives_what_pop_would_without_taking_it() {
        let mut q = ReadyQueue::fifo();
        for j in [4, 1, 3] {
            q.push(j);
        }
        assert_eq!(q.peek(2), [4, 1]);
        q.set_priorities(vec![0, 5, -1, 5, 2]);
        q.push(0);
        for n in 0..=5 {
            let mut taken = q.clone();
            let popped: Vec<_> = std::iter::from_fn(|| taken.pop()).take(n).collect();
            assert_eq!(q.peek(n), popped, "peek({n})");
        }
        assert_eq!(q.len(), 4);
    }

    #[test]
    fn a_full_category_holds_jobs_until_one_leaves() {
        let mut t = Throttle::new(vec![1]);
        assert!(t.admit(Some(0), 7));
        assert!(!t.admit(Some(0), 8));
        assert!(t.admit(None, 9));
        assert_eq!(t.leave(Some(0)), Some(8));
        assert!(t.admit(Some(0), 8));
        assert_eq!(t.peak, [1]);
    }
}
