//! Release of ready jobs: a node is ready when its parents ended (DAGMan);
//! NOOP and DONE nodes complete without running; the FINAL node is ready
//! when every other node is over; ABORT-DAG-ON stops all releases but the
//! FINAL node's.

use super::*;

impl Manager {
    /// Ends a node that runs no job (`NOOP`) or already ran (`DONE`).
    pub(super) fn complete_without_running(&mut self, job: JobId) {
        self.set_state(job, JobState::Done);
        self.records.jobs[job].ready.get_or_insert(self.now);
        self.release_children(job);
    }

    /// `job` is over: its workflow and ordering children lose a parent.
    pub(super) fn release_children(&mut self, job: JobId) {
        let wf = self.wf.clone();
        for &c in &wf.children[job] {
            self.release_child(c);
        }
        for i in 0..self.ordering[job].len() {
            let c = self.ordering[job][i];
            self.release_child(c);
        }
    }

    /// One parent of `c` is over; `c` is ready when none is left.
    pub(super) fn release_child(&mut self, c: JobId) {
        self.missing_parents[c] -= 1;
        if self.missing_parents[c] == 0 && self.state[c] == JobState::Waiting {
            let delay = self.wms.draw(&self.settings.release_overhead);
            if delay > 0.0 {
                self.schedule(self.now + delay, Timer::Release { job: c });
            } else {
                self.make_ready(c);
            }
        }
    }

    /// The FINAL node is ready once every other node is over.
    pub(super) fn release_final(&mut self) {
        if let Some(f) = self.nodes.final_node
            && self.state[f] == JobState::Waiting
        {
            let c = &self.counts;
            if c.done + c.failed + c.blocked + 1 == self.state.len() {
                self.make_ready(f);
            }
        }
    }

    /// `ABORT-DAG-ON`: `job` exited `status`; if that value aborts the DAG,
    /// no node starts any more but the FINAL one (those waiting will never
    /// run; those in flight end as they do, without retries).
    pub(super) fn abort_on(&mut self, job: JobId, status: i32) {
        if self.abort.is_some() {
            return;
        }
        let Some(&(_, ret)) = self.nodes.abort_on[job].iter().find(|(v, _)| *v == status) else {
            return;
        };
        self.abort = Some(DagAbort {
            node: job,
            status,
            dag_return: ret.unwrap_or(status),
        });
        for j in 0..self.state.len() {
            if j != job
                && Some(j) != self.nodes.final_node
                && matches!(self.state[j], JobState::Waiting | JobState::Ready)
            {
                self.set_state(j, JobState::Blocked);
                self.records.jobs[j].blocked_by = Some(job);
            }
        }
    }

    pub(super) fn make_ready(&mut self, job: JobId) {
        if self.abort.is_some() && Some(job) != self.nodes.final_node || self.memoizing(job) {
            return;
        }
        if self.state[job] == JobState::Waiting {
            self.set_state(job, JobState::Ready);
            self.records.jobs[job].ready = Some(self.now);
            self.ready.push(job);
        }
    }
}
