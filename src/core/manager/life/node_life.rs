//! The DAGMan node life cycle's state (HTCondor's `Dag`, seed 000 §4): each
//! node's state and the parents it waits for, its retries and exit, the
//! ready queue in DAGMan's order with MAXJOBS per category, the tree of
//! DAGMans (`dagmans`: each one's `DAGMAN_MAX_*` throttles, abort and
//! sub-DAG run), the service nodes, and the workflows submitted. The grid's data placement is the other room
//! (`placement`); the manager drives both.

use super::dagmans::Dagmans;
use super::release::SavePoint;
use super::service::Services;
use crate::core::JobId;
use crate::core::nodes::{NodeSettings, Throttle};
use crate::core::ready_queue::ReadyQueue;
use crate::core::submissions::{Submissions, Workload};
use crate::core::Time;

/// The nodes that write a save file as they start (`SAVE_POINT_FILE`).
type SavePoints = std::collections::BTreeSet<JobId>;

/// What the node life cycle tells the rest of the manager as its nodes
/// move, and the little it asks of it: the grid hears of each move (slots
/// claimed or freed, inputs read for the last time), the records of when
/// a node became ready, and a release's delay goes on the manager's clock.
/// The manager answers for the grid's data placement and its records
/// (`Manager::life`); the node life cycle's rules (`release.rs`, the
/// sub-DAGs' in `subdag.rs`) run against this alone.
pub(crate) trait LifePort {
    /// The time now.
    fn now(&self) -> Time;
    /// The run's DAG (the workflow it started with and the sub-DAGs read
    /// as it went): its edges.
    fn workflow(&self) -> &crate::core::RunDag;
    /// `job` moved from `from` to `to`.
    fn moved(&mut self, job: JobId, from: JobState, to: JobState);
    /// `job` became ready now; `first` keeps an earlier time it was ready
    /// (a node that ends without running).
    fn ready_now(&mut self, job: JobId, first: bool);
    /// Whether `job` waits for a twin's outputs instead of running.
    fn memoizing(&self, job: JobId) -> bool;
    /// The delay before a node whose parents are over is ready (DAGMan's
    /// release overhead, drawn from the pool's random stream).
    fn release_delay(&mut self) -> Time;
    /// Makes `job` ready at `at` ([`NodeLife::make_ready`] then).
    fn release_at(&mut self, job: JobId, at: Time);
    /// `job` failed for good, saying `why`; returns the jobs that waited
    /// for one of its outputs to be made again, which it never will be.
    fn failed(&mut self, job: JobId, why: String) -> Vec<JobId>;
    /// The node whose failure left `job` futile, if any.
    fn blocked_by(&self, job: JobId) -> Option<JobId>;
    /// `job` is futile: `by` failed above it.
    fn set_blocked_by(&mut self, job: JobId, by: JobId);
    /// `job` runs again with its sub-DAG (a new run of its DAGMan): its
    /// failure is forgotten, its re-plans reset, its inputs read again.
    fn runs_again(&mut self, job: JobId);
}

/// Where every node of the run stands in DAGMan's life cycle.
pub(crate) struct NodeLife {
    /// Per job: where it is in its life.
    pub(crate) state: Vec<JobState>,
    /// Per job: parents (and selector orderings) not yet over.
    pub(crate) missing_parents: Vec<usize>,
    /// Jobs per state.
    pub(crate) counts: StateCounts,
    /// Per job: ordering children from the selector (not workflow edges).
    pub(crate) ordering: Vec<Vec<JobId>>,
    /// Per job: attempts that failed at a site (DAGMan's `RETRY`).
    pub(crate) failures: Vec<u32>,
    /// Per job: the non-zero status its program exited with on this attempt
    /// (it wrote no outputs; its POST script decides the node).
    pub(crate) exited: Vec<Option<i32>>,
    /// What each job's last PRE script exited with (DAGMan's
    /// `$PRE_SCRIPT_RETURN`; -1 before any, so only jobs whose PRE script
    /// ran are kept).
    pub(crate) pre_return: rustc_hash::FxHashMap<JobId, i32>,
    /// Per job: running again to make a lost output anew (its children
    /// were released the first time).
    pub(crate) rerun: Vec<bool>,
    /// Ready jobs in DAGMan's order (per DAGMan, by priority).
    pub(crate) ready: ReadyQueue,
    /// DAGMan's node settings (RETRY, PRIORITY, CATEGORY, NOOP, DONE).
    pub(crate) nodes: NodeSettings,
    /// MAXJOBS per category.
    pub(crate) throttle: Throttle,
    /// Per job: counted in flight by the throttle.
    pub(crate) throttled: Vec<bool>,
    /// Ready jobs the selector holds until the grid changes.
    pub(crate) held: Vec<JobId>,
    /// Earliest time the next prescript may start.
    pub(crate) next_prescript: Time,
    /// Prescripts running now (MAXPRE).
    pub(crate) prescripts_running: usize,
    /// The DAGMans of the run, a tree: the top DAG's and each `SUBDAG
    /// EXTERNAL` node's, with their throttles and runs.
    pub(crate) dagmans: Dagmans,
    /// `SERVICE` and `PROVISIONER` nodes.
    pub(crate) services: Services,
    /// The save points written, in order.
    pub(crate) save_points: Vec<SavePoint>,
    /// The workflows submitted and each job's.
    pub(crate) submissions: Submissions,
    /// How each workflow stands.
    pub(crate) workload: Vec<Workload>,
    /// The roots each late workflow holds back until it arrives.
    pub(crate) gated: Vec<Vec<JobId>>,
}

impl NodeLife {
    /// `DAGMAN_ALWAYS_RUN_POST` of `job`'s DAGMan.
    pub(crate) fn always_runs_post(&self, job: JobId) -> bool {
        match self.dagmans.innermost(job) {
            Some(k) => self.nodes.subdags[k].always_run_post,
            None => self.nodes.always_run_post,
        }
    }

    /// Every node waiting for its `missing_parents` (workflow parents and
    /// selector orderings, `ordering` the latter's children); those with
    /// none are ready now, in the ready queue in job order (at its head
    /// with `depth_first`). One workflow, submitted from `origin`.
    pub(crate) fn new(
        missing_parents: Vec<usize>,
        ordering: Vec<Vec<JobId>>,
        depth_first: bool,
        origin: crate::core::SiteId,
    ) -> Self {
        let n = missing_parents.len();
        let mut ready = if depth_first {
            ReadyQueue::depth_first()
        } else {
            ReadyQueue::fifo()
        };
        let mut state = vec![JobState::Waiting; n];
        for j in 0..n {
            if missing_parents[j] == 0 {
                state[j] = JobState::Ready;
                ready.push(j);
            }
        }
        let counts = StateCounts {
            waiting: n - ready.len(),
            ready: ready.len(),
            ..Default::default()
        };
        NodeLife {
            state,
            missing_parents,
            counts,
            ordering,
            failures: vec![0; n],
            exited: vec![None; n],
            pre_return: Default::default(),
            rerun: vec![false; n],
            ready,
            nodes: NodeSettings::none(n),
            throttle: Throttle::default(),
            throttled: vec![false; n],
            held: Vec::new(),
            next_prescript: 0.0,
            prescripts_running: 0,
            dagmans: Default::default(),
            services: Default::default(),
            save_points: Vec::new(),
            submissions: Submissions::single(n, origin),
            workload: vec![Workload {
                arrived: true,
                claimed: 0,
                ready: counts.ready,
                open: n,
            }],
            gated: vec![Vec::new()],
        }
    }

    /// DAGMan's node settings, before the first event: its priorities,
    /// categories, DAGMans and their lanes. Returns the DONE nodes and the
    /// save points, which the caller marks once the DONE nodes are done.
    pub(crate) fn set_nodes(&mut self, nodes: NodeSettings, top_depth_first: bool) -> (Vec<JobId>, SavePoints) {
        self.ready.set_priorities(nodes.priority.clone());
        self.throttle = Throttle::new(nodes.category_limits.clone());
        let done = (0..nodes.done.len()).filter(|&j| nodes.done[j]).collect();
        self.dagmans = Dagmans::new(&nodes);
        self.dagmans.count_nodes(0..self.state.len(), &self.state);
        self.nodes = nodes;
        if !self.nodes.subdags.is_empty() {
            self.set_lanes(top_depth_first);
        }
        (done, std::mem::take(&mut self.nodes.save_points))
    }

    /// The save points `points` ([`Self::set_nodes`]), once the DONE nodes
    /// are done: those of nodes ready now are written.
    pub(crate) fn keep_save_points(&mut self, points: SavePoints) {
        self.nodes.save_points = points;
        for j in self.nodes.save_points.clone() {
            if self.state[j] == JobState::Ready {
                self.save_point(j);
            }
        }
    }

    /// `job` moves to state `to`; returns the state it left. The counts
    /// of its state, its workflow's and its DAGMan's idle jobs follow.
    pub(crate) fn move_node(&mut self, job: JobId, to: JobState) -> JobState {
        let from = std::mem::replace(&mut self.state[job], to);
        *self.count_mut(from) -= 1;
        *self.count_mut(to) += 1;
        self.dagmans.node_moved(job, from, to);
        self.service_moved(job, from, to);
        self.reserve_moved(job, from, to);
        let w = &mut self.workload[self.submissions.of_job[job]];
        w.ready =
            w.ready + usize::from(to == JobState::Ready) - usize::from(from == JobState::Ready);
        w.claimed = w.claimed + usize::from(to.claims_slot()) - usize::from(from.claims_slot());
        w.open = w.open + usize::from(from.is_over()) - usize::from(to.is_over());
        if (from == JobState::Queued) != (to == JobState::Queued) {
            self.idle_moved(job, to == JobState::Queued);
        }
        from
    }
}

/// A recording port for the node life cycle's unit tests.
/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Some parent has not ended.
    Waiting,
    /// Waiting for a prescript slot (or a back-off).
    Ready,
    /// Its prescript is staging inputs.
    Staging,
    /// In a site's FIFO queue.
    Queued,
    /// Running on a site.
    Running,
    /// Ended and post-processed.
    Done,
    /// Failed for good.
    Failed,
    /// An ancestor failed for good; it will never run.
    Blocked,
}

impl JobState {
    /// Done, failed or blocked: it will not run (again).
    pub fn is_over(self) -> bool {
        matches!(self, JobState::Done | JobState::Failed | JobState::Blocked)
    }

    /// Staging, queued or running: it holds a slot of its site.
    pub fn claims_slot(self) -> bool {
        matches!(self, JobState::Staging | JobState::Queued | JobState::Running)
    }
}

/// Counts of jobs per state, for progress and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct StateCounts {
    /// Parents pending.
    pub waiting: usize,
    /// Ready, not yet in a prescript.
    pub ready: usize,
    /// In a prescript.
    pub staging: usize,
    /// Queued at a site.
    pub queued: usize,
    /// Running.
    pub running: usize,
    /// Done.
    pub done: usize,
    /// Failed for good.
    pub failed: usize,
    /// Never to run.
    pub blocked: usize,
}

impl StateCounts {
    /// The count of jobs in state `s`.
    #[cfg(test)]
    pub(crate) fn of(mut self, s: JobState) -> usize {
        *self.of_mut(s)
    }

    /// The count of jobs in state `s`, to change.
    pub(crate) fn of_mut(&mut self, s: JobState) -> &mut usize {
        match s {
            JobState::Waiting => &mut self.waiting,
            JobState::Ready => &mut self.ready,
            JobState::Staging => &mut self.staging,
            JobState::Queued => &mut self.queued,
            JobState::Running => &mut self.running,
            JobState::Done => &mut self.done,
            JobState::Failed => &mut self.failed,
            JobState::Blocked => &mut self.blocked,
        }
    }
}


impl NodeLife {
    /// `job` no longer counts against its category's MAXJOBS.
    pub(crate) fn unthrottle(&mut self, job: JobId) {
        self.throttled[job] = false;
        if let Some(held) = self.throttle.leave(self.nodes.category[job]) {
            self.ready.push(held);
        }
    }

    fn count_mut(&mut self, s: JobState) -> &mut usize {
        self.counts.of_mut(s)
    }
}

#[cfg(test)]
pub(crate) mod recorder {
    use super::*;
    use crate::core::{JobSpec, RunDag, Workflow};

    /// A port that records what the node life cycle tells it.
    pub struct Recorder {
        pub wf: RunDag,
        pub now: Time,
        /// The delays `release_delay` hands out, in turn (0 once used up).
        pub delays: Vec<Time>,
        pub moves: Vec<(JobId, JobState, JobState)>,
        pub ready_at: Vec<Option<Time>>,
        pub later: Vec<(JobId, Time)>,
        pub failures: Vec<(JobId, String)>,
        pub blocked_by: Vec<Option<JobId>>,
    }

    impl LifePort for Recorder {
        fn now(&self) -> Time {
            self.now
        }
        fn workflow(&self) -> &RunDag {
            &self.wf
        }
        fn moved(&mut self, job: JobId, from: JobState, to: JobState) {
            self.moves.push((job, from, to));
        }
        fn ready_now(&mut self, job: JobId, first: bool) {
            if !first || self.ready_at[job].is_none() {
                self.ready_at[job] = Some(self.now);
            }
        }
        fn memoizing(&self, _: JobId) -> bool {
            false
        }
        fn release_delay(&mut self) -> Time {
            self.delays.pop().unwrap_or(0.0)
        }
        fn release_at(&mut self, job: JobId, at: Time) {
            self.later.push((job, at));
        }
        fn failed(&mut self, job: JobId, why: String) -> Vec<JobId> {
            self.failures.push((job, why));
            Vec::new()
        }
        fn blocked_by(&self, job: JobId) -> Option<JobId> {
            self.blocked_by[job]
        }
        fn set_blocked_by(&mut self, job: JobId, by: JobId) {
            self.blocked_by[job] = Some(by);
        }
        fn runs_again(&mut self, job: JobId) {
            self.blocked_by[job] = None;
        }
    }

    /// Jobs `j0`..: job `j`'s parents are `parents[j]` (earlier jobs).
    pub fn life_of(parents: &[Vec<usize>], delays: Vec<Time>) -> (NodeLife, Recorder) {
        let specs = (0..parents.len())
            .map(|j| JobSpec {
                name: format!("j{j}"),
                runtime: 1.0,
                parents: parents[j].iter().map(|p| format!("j{p}")).collect(),
                ..Default::default()
            })
            .collect();
        let wf = RunDag::from(Workflow::build(Vec::new(), specs).unwrap());
        let missing = wf.jobs().map(|j| j.parents.len()).collect();
        let n = parents.len();
        let life = NodeLife::new(missing, vec![Vec::new(); n], false, 0);
        let port = Recorder {
            wf,
            now: 0.0,
            delays,
            moves: Vec::new(),
            ready_at: vec![None; n],
            later: Vec::new(),
            failures: Vec::new(),
            blocked_by: vec![None; n],
        };
        (life, port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn state() -> impl Strategy<Value = JobState> {
        prop_oneof![
            Just(JobState::Waiting),
            Just(JobState::Ready),
            Just(JobState::Staging),
            Just(JobState::Queued),
            Just(JobState::Running),
            Just(JobState::Done),
            Just(JobState::Failed),
            Just(JobState::Blocked),
        ]
    }

    proptest! {
        /// Random moves of a few nodes (to the state they are in too):
        /// the counts per state and the workflow's ready, claiming and
        /// open nodes always equal a recount of the states.
        #[test]
        fn the_counts_are_a_recount_of_the_states(
            parents in proptest::collection::vec(0..3usize, 0..6),
            moves in proptest::collection::vec((0..6usize, state()), 0..40),
        ) {
            let n = parents.len();
            let mut life = NodeLife::new(parents, vec![Vec::new(); n], false, 0);
            for (job, to) in moves {
                if job >= n {
                    continue;
                }
                let before = life.state[job];
                prop_assert_eq!(life.move_node(job, to), before);
                let count = |s: JobState| life.state.iter().filter(|&&x| x == s).count();
                let c = life.counts;
                let by_state = [
                    (c.waiting, JobState::Waiting),
                    (c.ready, JobState::Ready),
                    (c.staging, JobState::Staging),
                    (c.queued, JobState::Queued),
                    (c.running, JobState::Running),
                    (c.done, JobState::Done),
                    (c.failed, JobState::Failed),
                    (c.blocked, JobState::Blocked),
                ];
                for (counted, s) in by_state {
                    prop_assert_eq!(counted, count(s), "{:?}", s);
                }
                let w = &life.workload[0];
                prop_assert_eq!(w.ready, count(JobState::Ready));
                prop_assert_eq!(w.claimed, life.state.iter().filter(|s| s.claims_slot()).count());
                prop_assert_eq!(w.open, life.state.iter().filter(|s| !s.is_over()).count());
            }
        }
    }

    #[test]
    fn the_nodes_without_parents_are_ready_in_job_order() {
        let mut life = NodeLife::new(vec![1, 0, 2, 0], vec![Vec::new(); 4], false, 0);
        assert_eq!(life.counts.ready, 2);
        assert_eq!(life.counts.waiting, 2);
        assert_eq!(life.ready.pop(), Some(1));
        assert_eq!(life.ready.pop(), Some(3));
        assert_eq!(life.ready.pop(), None);
    }
}
