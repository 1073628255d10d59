//! `DAGMAN_MAX_JOBS_SUBMITTED` (`condor_submit_dag -maxjobs`) per DAGMan:
//! the top DAG's and each sub-DAG's own, from its own `CONFIG`. A DAGMan
//! holds a node's submission while that many of its jobs are in the queue
//! (from submission to the job's end); a sub-DAG's jobs count against its
//! own DAGMan only, and the sub-DAG itself, whose DAGMan is one job in the
//! queue from its submission (after the node's PRE script) to its end,
//! counts as one job of the DAGMan above it (HTCondor manual,
//! "Throttling"; `Dag::SubmitReadyNodes`).

use super::*;

/// Each DAGMan's jobs in the queue and the submissions it holds: DAGMan 0
/// is the top DAG, `k + 1` sub-DAG `k`.
#[derive(Debug, Default)]
pub(super) struct SubmitLimits {
    /// Per DAGMan: its limit (0: none).
    limit: Vec<usize>,
    /// Per DAGMan: its jobs in the queue.
    submitted: Vec<usize>,
    /// Per DAGMan: submissions held, first come first out.
    held: Vec<VecDeque<Held>>,
    /// Per sub-DAG: its submission counts in the queue of the DAGMan above.
    counted: Vec<bool>,
    /// Whether any DAGMan has a limit.
    on: bool,
}

/// A submission a DAGMan holds.
#[derive(Debug, Clone, Copy)]
enum Held {
    /// A node's job.
    Job(JobId),
    /// A sub-DAG, started by its entry no-op (done): its DAGMan's job.
    SubDag(JobId),
}

impl SubmitLimits {
    /// The limits `nodes` sets.
    pub(super) fn new(nodes: &NodeSettings) -> Self {
        let limit: Vec<usize> = std::iter::once(nodes.max_jobs_submitted)
            .chain(nodes.subdags.iter().map(|d| d.max_jobs_submitted))
            .collect();
        let n = limit.len();
        SubmitLimits {
            on: limit.iter().any(|&l| l > 0),
            limit,
            submitted: vec![0; n],
            held: vec![VecDeque::new(); n],
            counted: vec![false; n - 1],
        }
    }
}

impl Manager {
    /// The DAGMan `job` is a node of.
    fn dagman_of(&self, job: JobId) -> usize {
        self.subdags.innermost(job).map_or(0, |k| k + 1)
    }

    /// Whether `job`'s DAGMan holds its submission (it is then held).
    pub(super) fn submission_held(&mut self, job: JobId) -> bool {
        self.held_by_limit(job, Held::Job(job))
    }

    /// Whether the DAGMan of `job` (a node's job, or the entry of a
    /// sub-DAG, its DAGMan's job) holds `what`; else it counts it.
    fn held_by_limit(&mut self, job: JobId, what: Held) -> bool {
        if !self.submit_limits.on {
            return false;
        }
        let d = self.dagman_of(job);
        let l = &mut self.submit_limits;
        if l.limit[d] > 0 && l.submitted[d] >= l.limit[d] {
            l.held[d].push_back(what);
            return true;
        }
        l.submitted[d] += 1;
        if let Held::SubDag(entry) = what
            && let Some(node) = self.node_of_entry(entry)
            && let Some(k) = self.subdags.of_node(node)
        {
            self.submit_limits.counted[k] = true;
        }
        false
    }

    /// The entry no-op `job` of a sub-DAG ended: its DAG is submitted, one
    /// job of the DAGMan above, which may hold it (then its nodes wait).
    pub(super) fn subdag_start_held(&mut self, job: JobId) -> bool {
        self.submit_limits.on
            && self.node_of_entry(job).is_some()
            && self.held_by_limit(job, Held::SubDag(job))
    }

    /// The sub-DAG node `job`'s DAG ended: its DAGMan's job left the queue
    /// of the DAGMan above.
    pub(super) fn subdag_left_queue(&mut self, job: JobId) {
        if !self.submit_limits.on {
            return;
        }
        if let Some(k) = self.subdags.of_node(job)
            && std::mem::take(&mut self.submit_limits.counted[k])
        {
            let d = self.dagman_of(job);
            self.submit_limits.submitted[d] -= 1;
        }
    }

    /// `job` left the queue (it ended, was killed or removed): a held
    /// submission of its DAGMan may go.
    pub(super) fn left_queue(&mut self, job: JobId) {
        if self.submit_limits.on {
            let d = self.dagman_of(job);
            self.submit_limits.submitted[d] -= 1;
        }
    }

    /// Submissions held while their DAGMan had too many jobs in the queue
    /// go as it has room.
    pub(super) fn submit_held(&mut self, out: &mut Vec<Command>) {
        if !self.submit_limits.on {
            return;
        }
        for d in 0..self.submit_limits.limit.len() {
            loop {
                let l = &self.submit_limits;
                if l.held[d].is_empty() || l.submitted[d] >= l.limit[d] {
                    break;
                }
                let Some(held) = self.submit_limits.held[d].pop_front() else {
                    break;
                };
                match held {
                    Held::Job(job) if self.state[job] == JobState::Staging => {
                        self.enter_queue(job, out);
                    }
                    Held::Job(_) => {}
                    Held::SubDag(entry) if self.state[entry] == JobState::Done => {
                        if !self.held_by_limit(entry, held) {
                            self.release_children(entry);
                        }
                    }
                    Held::SubDag(_) => {}
                }
            }
        }
    }
}
