//! What DAGMan's stop does to its nodes (HTCondor's `main_shutdown_rescue`,
//! `ABORT-DAG-ON`): which value stops the DAG, what the stop does to each
//! node as it stands, and why a stopped node stopped. The manager carries
//! the stop out (`abort.rs`).

use super::*;

/// A stop of the DAG: an `ABORT-DAG-ON` that took effect, or the user's
/// removal of the DAG. Every node job in flight was removed and no node
/// starts any more but the `FINAL` one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DagAbort {
    /// The node whose exit aborted the DAG; `None` when the user removed
    /// it.
    pub node: Option<JobId>,
    /// The value that node exited with (0 for a removal).
    pub status: i32,
    /// The DAG's exit value: `RETURN`, else the node's; for a removal
    /// DAGMan's `EXIT_ABORT` (2); for a halt, `EXIT_ERROR` (1).
    pub dag_return: i32,
    /// A halt (the DAG's halt file) that took effect at this time, once
    /// no node was in flight any more: nothing was removed, and `node` is
    /// `None`.
    pub halted_at: Option<Time>,
}

impl DagAbort {
    /// The stop of a drained halt at `at`.
    pub(crate) fn halt(at: Time) -> Self {
        DagAbort {
            node: None,
            status: 0,
            dag_return: 1,
            halted_at: Some(at),
        }
    }

    /// DAGMan's `DagStatus` once it stopped so: `DAG_STATUS_HALTED` 6,
    /// `DAG_STATUS_RM` 4 (a removal), else `DAG_STATUS_ABORT` 3.
    pub fn dag_status(&self) -> u8 {
        match (self.halted_at, self.node) {
            (Some(_), _) => 6,
            (None, None) => 4,
            (None, Some(_)) => 3,
        }
    }
}

/// DAGMan's exit value when the user removed the DAG (`EXIT_ABORT`).
pub const EXIT_ABORT: i32 = 2;

/// What a DAG's stop does to one of its nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopStep {
    /// Never to run, but not futile: DAGMan leaves it NOT_READY (unless a
    /// removal's failure makes it futile first).
    Block,
    /// Its attempt is removed wherever it is, and the node fails.
    Remove,
}

impl NodeLife {
    /// The top DAG stops for `abort`: returns the nodes whose submission
    /// its DAGMans' MAX_JOBS limits held. Never submitted, DAGMan has them
    /// ready and leaves them NOT_READY, neither removed nor failed.
    pub(crate) fn begin_stop(&mut self, abort: DagAbort) -> Vec<JobId> {
        self.dagmans.top_mut().aborted = Some(abort);
        self.dagmans.take_held_submissions()
    }

    /// DAGMan `d`'s halt file appeared: the top DAG's (`d` 0, `x.dag.halt`)
    /// or a sub-DAG's own (`inner.dag.halt`). That DAGMan starts no node
    /// but its FINAL one (`Dag::Halt`: no job submitted, no PRE script
    /// started), while what is in flight goes on, POST scripts included,
    /// and the DAGMans above and below it go on. False when it had already
    /// halted or stopped, or is a sub-DAG's not running (a DAGMan reads its
    /// halt file only while it runs; a later run of it is a DAGMan
    /// submitted anew). The ready queue is given lanes if it had one for
    /// all (`top_depth_first`: the top DAG's order), since the halted
    /// DAGMan's must close.
    pub(crate) fn halt(&mut self, d: dagmans::DagmanId, top_depth_first: bool) -> bool {
        // A sub-DAG's DAGMan runs from its entry's end (its PRE script's,
        // its DAG read) until its node, waiting for its DAG, is released.
        let running = d == 0
            || self.nodes.subdags.get(d - 1).is_some_and(|s| {
                self.state[s.node] == JobState::Waiting
                    && s.entry.is_none_or(|e| self.state[e] == JobState::Done)
            });
        let Some(dagman) = self.dagmans.list.get(d).filter(|_| running) else {
            return false;
        };
        if dagman.halted || dagman.aborted.is_some() {
            return false;
        }
        let one_lane = !self.dagmans.may_close();
        self.dagmans.list[d].halted = true;
        self.dagmans.halting.push(d);
        if one_lane {
            self.set_lanes(top_depth_first);
        }
        true
    }

    /// The halted DAGMans that have drained (`condor_event_timer`: no node
    /// job in the queue, no POST script to run): none of their nodes in
    /// flight, nested sub-DAGs' included, and none ready that would still
    /// start. Each then stops, with [`DagAbort::halt`]. Those stopped
    /// otherwise meanwhile are dropped. A DAGMan with a sub-DAG below it
    /// that drained too waits for the next call: the sub-DAG stops first,
    /// and may then run its FINAL node or end its node, which the DAGMan
    /// above waits for (the sub-DAG's DAGMan is its node's job, in flight
    /// until it exits).
    pub(crate) fn drained_halts(&mut self) -> Vec<dagmans::DagmanId> {
        let mut drained = Vec::new();
        let mut halting = std::mem::take(&mut self.dagmans.halting);
        let (dagmans, state, c, nodes) = (&self.dagmans, &self.state, &self.counts, &self.nodes);
        let in_flight = |m: JobId| match state[m] {
            JobState::Staging | JobState::Queued | JobState::Running => true,
            JobState::Ready => {
                let dagman = &dagmans.list[dagmans.dagman_of(m)];
                !dagman.halted || dagman.aborted.is_some() || Self::starts_halted(dagmans, nodes, m)
            }
            _ => false,
        };
        halting.retain(|&d| {
            let dagman = &dagmans.list[d];
            if !dagman.halted || dagman.aborted.is_some() {
                return false;
            }
            // The top DAG's members are every node: its counts say it.
            let busy = match d {
                0 => {
                    c.staging + c.queued + c.running > 0
                        || (dagmans.list.iter().skip(1))
                            .any(|s| (!s.halted || s.aborted.is_some()) && s.counts.ready > 0)
                        || (nodes.subdags.iter()).any(|s| in_flight(s.node))
                }
                _ => nodes.subdags[d - 1].members.iter().any(|&m| in_flight(m)),
            };
            if !busy {
                drained.push(d);
            }
            busy
        });
        // One above another that drained waits for it.
        let above = |d: dagmans::DagmanId| (d > 0).then(|| dagmans.dagman_of(nodes.subdags[d - 1].node));
        let mut waits = Vec::new();
        for &d in &drained {
            let mut up = above(d);
            while let Some(a) = up {
                if drained.contains(&a) && !waits.contains(&a) {
                    waits.push(a);
                }
                up = above(a);
            }
        }
        drained.retain(|d| !waits.contains(d));
        halting.extend(waits);
        self.dagmans.halting = halting;
        drained
    }

    /// Whether the ready `job` starts though its DAGMan is halted: its
    /// FINAL node, or the node of a sub-DAG that ran, whose job (that
    /// sub-DAG's DAGMan) was submitted before and is only ending now.
    pub(crate) fn starts_halted(dagmans: &dagmans::Dagmans, nodes: &NodeSettings, job: JobId) -> bool {
        Some(job) == nodes.final_node
            || dagmans.is_final(job)
            || dagmans.of_node(job).is_some_and(|k| !nodes.subdags[k].members.is_empty())
    }

    /// What the stop does to `job` as it stands now: a node not started
    /// is blocked, one in flight removed; one over, the FINAL node (which
    /// runs after the stop) and `spare` (whose end is being handled) are
    /// left.
    pub(crate) fn stop_step(&self, job: JobId, spare: Option<JobId>) -> Option<StopStep> {
        if Some(job) == spare || Some(job) == self.nodes.final_node {
            return None;
        }
        match self.state[job] {
            JobState::Waiting | JobState::Ready => Some(StopStep::Block),
            JobState::Staging | JobState::Queued | JobState::Running => Some(StopStep::Remove),
            JobState::Done | JobState::Failed | JobState::Blocked => None,
        }
    }

    /// The stop `job`'s exit `status` (its job's, or its PRE or POST
    /// script's) makes by its `ABORT-DAG-ON`, unless the DAG stopped
    /// already.
    pub(crate) fn abort_for(&self, job: JobId, status: i32) -> Option<DagAbort> {
        if self.dagmans.top().aborted.is_some() {
            return None;
        }
        let &(_, ret) = self.nodes.abort_on[job].iter().find(|(v, _)| *v == status)?;
        Some(DagAbort {
            node: Some(job),
            status,
            dag_return: ret.unwrap_or(status),
            halted_at: None,
        })
    }

    /// Why `job` stopped, in words, once its DAG (or sub-DAG) did.
    pub(crate) fn stop_reason(&self, wf: &RunDag, job: JobId) -> String {
        let (abort, what) = match self.dagmans.stopped(job) {
            Some(a) => (Some(a), "its sub-DAG"),
            None => (self.dagmans.top().aborted, "the DAG"),
        };
        match abort {
            Some(DagAbort {
                node: Some(n),
                status,
                ..
            }) => format!(
                "{what} was aborted (ABORT-DAG-ON: `{}` exited {status})",
                wf.job(n).name
            ),
            Some(DagAbort {
                halted_at: Some(_), ..
            }) => format!("{what} was halted"),
            Some(DagAbort { node: None, .. }) => "the user removed the DAG".into(),
            None => String::new(),
        }
    }

    /// Whether the DAG stopped for `job`: it did, and `job` is not FINAL.
    pub(crate) fn stopped_for(&self, job: JobId) -> bool {
        self.dagmans.top().aborted.is_some() && Some(job) != self.nodes.final_node
            || self.dagmans.stopped(job).is_some() && !self.dagmans.is_final(job)
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    /// A stop blocks what has not started and removes what is in
    /// flight; it leaves the nodes over, FINAL and the node it spares.
    #[test]
    fn a_stop_blocks_the_unstarted_and_removes_the_nodes_in_flight() {
        let mut life = NodeLife::new(vec![0; 9], vec![Vec::new(); 9], false, 0);
        let states = [
            JobState::Waiting,
            JobState::Ready,
            JobState::Staging,
            JobState::Queued,
            JobState::Running,
            JobState::Done,
            JobState::Failed,
            JobState::Blocked,
            JobState::Waiting,
        ];
        for (j, &s) in states.iter().enumerate() {
            life.move_node(j, s);
        }
        life.nodes = NodeSettings::none(9);
        life.nodes.final_node = Some(8);
        let block = Some(StopStep::Block);
        let remove = Some(StopStep::Remove);
        let want = [block, block, remove, remove, remove, None, None, None, None];
        let got: Vec<_> = (0..9).map(|j| life.stop_step(j, None)).collect();
        assert_eq!(got, want);
        assert_eq!(life.stop_step(3, Some(3)), None, "spared");
        let abort = DagAbort {
            node: None,
            status: 0,
            dag_return: EXIT_ABORT,
            halted_at: None,
        };
        assert_eq!(life.begin_stop(abort), Vec::<JobId>::new());
        assert_eq!(life.dagmans.top().aborted, Some(abort));
    }

    #[test]
    fn abort_dag_on_values_stop_the_dag_once_and_say_why() {
        let mut life = NodeLife::new(vec![0; 2], vec![Vec::new(); 2], false, 0);
        let mut nodes = NodeSettings::none(2);
        nodes.abort_on[1] = vec![(3, Some(0)), (4, None)];
        life.nodes = nodes;
        assert_eq!(life.abort_for(0, 3), None, "0 has no ABORT-DAG-ON");
        assert_eq!(life.abort_for(1, 1), None, "not its value");
        let abort = DagAbort {
            node: Some(1),
            status: 4,
            dag_return: 4,
            halted_at: None,
        };
        assert_eq!(life.abort_for(1, 4), Some(abort), "RETURN defaults to the value");
        assert_eq!(life.abort_for(1, 3).map(|a| a.dag_return), Some(0));
        let wf = crate::core::Workflow::build(
            Vec::new(),
            ["a", "b"].map(|n| crate::core::JobSpec {
                name: n.into(),
                ..Default::default()
            })
            .to_vec(),
        )
        .unwrap();
        let wf = crate::core::RunDag::from(wf);
        assert_eq!(life.stop_reason(&wf, 0), "", "the DAG has not stopped");
        life.dagmans.top_mut().aborted = Some(abort);
        assert_eq!(life.abort_for(1, 4), None, "it stops once");
        assert_eq!(
            life.stop_reason(&wf, 0),
            "the DAG was aborted (ABORT-DAG-ON: `b` exited 4)"
        );
    }
}

