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

use std::collections::{BTreeMap, VecDeque};
use std::ops::{Index, IndexMut};

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
    pub retry_unless_exit: Sparse<Option<i32>>,
    /// `SCRIPT DEFER status time` of the PRE script: that exit runs it again
    /// after `time` seconds, not counted as a failure.
    pub pre_defer: Sparse<Option<(i32, f64)>>,
    /// The same for the POST script.
    pub post_defer: Sparse<Option<(i32, f64)>>,
    /// `PRE_SKIP v`: the PRE script exiting `v` (non-zero) ends the node,
    /// successfully, without its job or POST script.
    pub pre_skip: Sparse<Option<i32>>,
    /// `DAGMAN_MAX_POST_SCRIPTS`: POST scripts running at once (0: no limit).
    pub max_post: usize,
    /// `DAGMAN_ALWAYS_RUN_POST` of the top DAG (`-AlwaysRunPost`): a node
    /// whose PRE script failed runs its POST script anyway, which decides
    /// the node; a sub-DAG has its own ([`SubDag`]).
    pub always_run_post: bool,
    /// `DAGMAN_MAX_JOBS_IDLE`: jobs submitted and not started at once, over
    /// all sites (0: no limit); more wait before their submission.
    pub max_jobs_idle: usize,
    /// `DAGMAN_MAX_JOBS_SUBMITTED` of the top DAG: its jobs in the queue at
    /// once (0: no limit); a sub-DAG has its own ([`SubDag`]).
    pub max_jobs_submitted: usize,
    /// The status each job's program exits with, per attempt (the last
    /// repeats; empty: 0). A DAG's sidecar sets it (`exit = [1, 0]`).
    pub exits: Sparse<Vec<i32>>,
    /// `ABORT-DAG-ON`: (exit value, DAG return value) per node: its PRE
    /// script, its POST script, or its job when it has no POST, exiting
    /// with that value aborts the DAG.
    pub abort_on: Sparse<Vec<(i32, Option<i32>)>>,
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
    /// The nodes on a cycle of the DAG's edges, or below one: DAGMan never
    /// finds them ready (it does not look for cycles before it runs), so
    /// they are never run and the DAG ends failed, "cycle".
    pub in_cycle: std::collections::BTreeSet<JobId>,
    /// The nodes whose POST script names `$JOBID`: its job's HTCondor id
    /// is found for it (a count over the run's submissions).
    pub post_job_id: std::collections::BTreeSet<JobId>,
    /// The jobs run the programs their submit descriptions name
    /// (`jobs = "run"`): each submission carries DAGMan's counts for its
    /// description's macros.
    pub job_programs: bool,
    /// How DAGMan submits the jobs (`DAGMAN_USE_DIRECT_SUBMIT`,
    /// `DAGMAN_MAX_SUBMIT_ATTEMPTS`): what a failed submission leads to.
    pub submit: SubmitTries,
}

/// DAGMan's `DAG_ERROR_CONDOR_SUBMIT_FAILED`: the `$RETURN` a node's POST
/// script sees when its job could not be submitted.
pub const SUBMIT_FAILED: i32 = -1001;

/// What DAGMan does when a node's job cannot be submitted (HTCondor's
/// `Dag::ProcessFailedSubmit`): with direct submission (the default) a
/// failure is for good at once; through `condor_submit` it tries again,
/// up to `max_attempts` submissions of the node in all, after a wait
/// that doubles from 1 s with each failure and holds every submission of
/// its DAGMan meanwhile. Once it gives up, the node's `RETRY` is spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubmitTries {
    /// `DAGMAN_USE_DIRECT_SUBMIT` (default true).
    pub direct: bool,
    /// `DAGMAN_MAX_SUBMIT_ATTEMPTS` (default 6).
    pub max_attempts: u32,
}

impl Default for SubmitTries {
    fn default() -> Self {
        SubmitTries {
            direct: true,
            max_attempts: 6,
        }
    }
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
    /// `DAGMAN_ALWAYS_RUN_POST` of its own `CONFIG`.
    pub always_run_post: bool,
    /// Its own FINAL node (one of `members`): it runs once every other
    /// node of the sub-DAG is over, and its outcome is the sub-DAG's. A
    /// sub-DAG with one has an `entry`.
    pub final_node: Option<JobId>,
    /// Its own PROVISIONER node (one of `members`): the sub-DAG's other
    /// nodes start once its job runs. A sub-DAG with one has an `entry`.
    pub provisioner: Option<JobId>,
    /// `DAGMAN_SUBMIT_DEPTH_FIRST` of its own DAGMan: its newest ready
    /// node first (`core::ready_queue`).
    pub depth_first: bool,
    /// Its `.dag` is read only once its node's PRE script has run (which
    /// may write it), as DAGMan reads it when it submits the node: until
    /// then it has no members, and the engine answers
    /// [`Command::ReadSubDag`](super::Command::ReadSubDag) with a [`Graft`].
    pub deferred: bool,
}

/// A deferred sub-DAG's DAG, read once its node's PRE script ran: its nodes
/// join the run as jobs after the DAG's.
#[derive(Debug, Clone, Default)]
pub struct Graft {
    /// Its nodes as jobs, in a topological order, parents indexing `jobs`
    /// (0 the first). They read and write no file.
    pub jobs: Vec<super::Job>,
    /// Their settings, indexed as `jobs`. Categories are the run's ids:
    /// those the graft adds are numbered after the run's, and
    /// `category_limits` holds only theirs. Its nested sub-DAGs index
    /// `jobs`. Its `final_node`, `provisioner`, `max_post`,
    /// `max_jobs_idle` and `max_jobs_submitted` are the sub-DAG's own.
    pub nodes: NodeSettings,
    /// Its DAGMan's `DAGMAN_MAX_PRE_SCRIPTS` (0: no limit).
    pub max_pre: usize,
    /// Its DAGMan's `DAGMAN_SUBMIT_DEPTH_FIRST`.
    pub depth_first: bool,
}

impl Graft {
    /// Its roots and its leaves, as they join the run: the roots wait for
    /// the sub-DAG's entry, its node for the leaves and its FINAL node
    /// (as the DAG's flattened sub-DAGs, `compose.rs`). FINAL, SERVICE and
    /// PROVISIONER nodes are neither leaves nor (FINAL) roots.
    pub fn ends(&self) -> (Vec<JobId>, Vec<JobId>) {
        let (local, m) = (&self.nodes, self.jobs.len());
        let finals: Vec<JobId> = (local.final_node.iter())
            .chain(local.subdags.iter().filter_map(|d| d.final_node.as_ref()))
            .copied()
            .collect();
        let provisioners: Vec<JobId> = (local.provisioner.iter())
            .chain(local.subdags.iter().filter_map(|d| d.provisioner.as_ref()))
            .copied()
            .collect();
        let mut has_child = vec![false; m];
        for j in &self.jobs {
            for &p in &j.parents {
                if let Some(h) = has_child.get_mut(p) {
                    *h = true;
                }
            }
        }
        let roots = (0..m)
            .filter(|&j| self.jobs[j].parents.is_empty() && !finals.contains(&j))
            .collect();
        let leaves = (0..m)
            .filter(|&j| {
                !has_child[j]
                    && !finals.contains(&j)
                    && !provisioners.contains(&j)
                    && !local.service.get(j).copied().unwrap_or(false)
            })
            .chain(local.final_node)
            .collect();
        (roots, leaves)
    }
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
            retry_unless_exit: Sparse::default(),
            pre_defer: Sparse::default(),
            post_defer: Sparse::default(),
            pre_skip: Sparse::default(),
            max_post: 0,
            always_run_post: false,
            max_jobs_idle: 0,
            max_jobs_submitted: 0,
            exits: Sparse::default(),
            abort_on: Sparse::default(),
            final_node: None,
            subdags: Vec::new(),
            service: vec![false; jobs],
            provisioner: None,
            weak: Default::default(),
            save_points: Default::default(),
            tolerant: Default::default(),
            in_cycle: Default::default(),
            post_job_id: Default::default(),
            job_programs: false,
            submit: SubmitTries::default(),
        }
    }
}

impl NodeSettings {
    /// Appends `more`'s per-node settings for jobs `first..` (its ids
    /// shifted by `first`), its categories' limits and its sub-DAGs; its
    /// DAG-wide settings (FINAL, PROVISIONER, limits) are left to the
    /// caller.
    pub fn append(&mut self, more: &NodeSettings, first: JobId) {
        self.retry.extend(&more.retry);
        self.priority.extend(&more.priority);
        self.category.extend(&more.category);
        self.category_limits.extend(&more.category_limits);
        self.noop.extend(&more.noop);
        self.done.extend(&more.done);
        self.pre.extend(&more.pre);
        self.post.extend(&more.post);
        self.retry_unless_exit.append(&more.retry_unless_exit, first);
        self.pre_defer.append(&more.pre_defer, first);
        self.post_defer.append(&more.post_defer, first);
        self.pre_skip.append(&more.pre_skip, first);
        self.exits.append(&more.exits, first);
        self.abort_on.append(&more.abort_on, first);
        self.service.extend(&more.service);
        let at = |j: JobId| j + first;
        self.weak.extend(more.weak.iter().map(|&(p, c)| (at(p), at(c))));
        self.save_points.extend(more.save_points.iter().map(|&j| at(j)));
        self.tolerant.extend(more.tolerant.iter().map(|&j| at(j)));
        self.in_cycle.extend(more.in_cycle.iter().map(|&j| at(j)));
        self.post_job_id.extend(more.post_job_id.iter().map(|&j| at(j)));
        self.subdags.extend(more.subdags.iter().map(|d| SubDag {
            node: at(d.node),
            entry: d.entry.map(at),
            members: d.members.iter().map(|&m| at(m)).collect(),
            final_node: d.final_node.map(at),
            provisioner: d.provisioner.map(at),
            ..d.clone()
        }));
    }
}

/// A per-node setting that few nodes have (`ABORT-DAG-ON`, `SCRIPT DEFER`,
/// `PRE_SKIP`, a sidecar's exits, …): the nodes that have it, each other
/// node the default. A run of 100,000 jobs with none of these holds
/// nothing for them, where one entry a job cost 112 bytes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sparse<T> {
    set: BTreeMap<JobId, T>,
    default: T,
}

impl<T: Default + PartialEq> Sparse<T> {
    /// Gives `job` this value (the default one: takes its own away).
    pub fn set(&mut self, job: JobId, value: T) {
        match value == self.default {
            true => self.set.remove(&job),
            false => self.set.insert(job, value),
        };
    }
}

impl<T: Clone> Sparse<T> {
    /// Adds `more`'s nodes, their ids shifted by `first`.
    pub fn append(&mut self, more: &Sparse<T>, first: JobId) {
        self.set.extend(more.set.iter().map(|(&j, v)| (j + first, v.clone())));
    }
}

impl<T: Clone + Default + PartialEq> From<Vec<T>> for Sparse<T> {
    /// Job `j` gets `values[j]`.
    fn from(values: Vec<T>) -> Self {
        let mut s = Sparse::default();
        for (j, v) in values.into_iter().enumerate() {
            s.set(j, v);
        }
        s
    }
}

impl<T> Index<JobId> for Sparse<T> {
    type Output = T;

    fn index(&self, job: JobId) -> &T {
        self.set.get(&job).unwrap_or(&self.default)
    }
}

impl<T: Clone> IndexMut<JobId> for Sparse<T> {
    /// `job`'s own value, made from the default if it had none.
    fn index_mut(&mut self, job: JobId) -> &mut T {
        let default = &self.default;
        self.set.entry(job).or_insert_with(|| default.clone())
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

    /// Categories with these limits are added after the others.
    pub fn grow(&mut self, limits: &[usize]) {
        self.limits.extend(limits);
        let n = self.limits.len();
        self.in_flight.resize(n, 0);
        self.held.resize(n, VecDeque::new());
        self.peak.resize(n, 0);
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

    proptest::proptest! {
        /// A sparse setting reads as a plain per-job list would, after any
        /// mix of sets (defaults among them), writes through an index and
        /// appends; it holds only the jobs whose value is not the default.
        #[test]
        fn a_sparse_setting_reads_as_a_list(
            ops in proptest::collection::vec(
                (0u8..3, 0usize..6, proptest::option::of(0i32..3)),
                0..40,
            ),
        ) {
            let mut list: Vec<Option<i32>> = vec![None; 6];
            let mut sparse = Sparse::default();
            for (op, job, value) in ops {
                match op {
                    0 => {
                        list[job] = value;
                        sparse.set(job, value);
                    }
                    1 => {
                        list[job] = value;
                        sparse[job] = value;
                    }
                    _ => {
                        let more: Vec<Option<i32>> = vec![value, None, value];
                        list.extend(&more);
                        sparse.append(&Sparse::from(more), list.len() - 3);
                    }
                }
            }
            for (j, v) in list.iter().enumerate() {
                proptest::prop_assert_eq!(&sparse[j], v);
            }
            proptest::prop_assert_eq!(sparse[list.len() + 5], None);
            let from = Sparse::from(list.clone());
            proptest::prop_assert_eq!(from.set.len(), list.iter().flatten().count());
        }
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
