//! `DAGMAN_MAX_JOBS_SUBMITTED` (`condor_submit_dag -maxjobs`) per DAGMan:
//! the top DAG's and each sub-DAG's own, from its own `CONFIG`. A DAGMan
//! holds a node's submission while that many of its jobs are in the queue
//! (from submission to the job's end); a sub-DAG's jobs count against its
//! own DAGMan only (HTCondor manual, "Throttling"; `Dag::SubmitReadyNodes`).

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
    held: Vec<VecDeque<JobId>>,
    /// Whether any DAGMan has a limit.
    on: bool,
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
        if !self.submit_limits.on {
            return false;
        }
        let d = self.dagman_of(job);
        let l = &mut self.submit_limits;
        if l.limit[d] > 0 && l.submitted[d] >= l.limit[d] {
            l.held[d].push_back(job);
            return true;
        }
        l.submitted[d] += 1;
        false
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
                let Some(job) = self.submit_limits.held[d].pop_front() else {
                    break;
                };
                if self.state[job] == JobState::Staging {
                    self.enter_queue(job, out);
                }
            }
        }
    }
}
