//! `SUBDAG EXTERNAL` as its own DAGMan (HTCondor manual, "SUBDAG
//! EXTERNAL"; [`crate::core::nodes::SubDag`]): the sub-DAG's nodes are
//! flattened into the DAG, but a failure among them stops at the sub-DAG
//! node, which then "exits" 1 as the sub-DAG's DAGMan does
//! (`main_shutdown_rescue(EXIT_ERROR)`): its POST script sees that value
//! as `$RETURN`, and its `RETRY` runs the sub-DAG again from its rescue
//! (DAGMan's auto-rescue of the sub-DAG's own `.dag`): the nodes that ended
//! well stay done, the others wait again behind the node's PRE script, with
//! their retries reset (`DAGMAN_RESET_RETRIES_UPON_RESCUE`). Each failed
//! run of a sub-DAG is recorded, for its rescue file.

use super::node_life::LifePort;
use super::*;
use crate::core::nodes::Graft;

/// A failed run of a sub-DAG, as its rescue DAG records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubDagRun {
    /// The sub-DAG: its index in [`NodeSettings::subdags`].
    pub subdag: usize,
    /// Its nodes that had ended well.
    pub done: Vec<JobId>,
    /// Its nodes that had failed for good.
    pub failed: Vec<JobId>,
}

/// A run of a sub-DAG's DAGMan, as the DAGMan above sees its job: from
/// its submission (its node's PRE script done) to its end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SubDagSpan {
    /// The sub-DAG: its index in [`NodeSettings::subdags`].
    pub subdag: usize,
    /// When its DAGMan job was submitted.
    pub started: Time,
    /// When it ended (none: the run was stopped before, its DAGMan
    /// removed with the DAG above).
    pub ended: Option<Time>,
    /// Its DAGMan's exit value, once ended.
    pub exit: Option<i32>,
    /// An `ABORT-DAG-ON` of its own stopped it.
    pub aborted: bool,
}

impl NodeLife {
    /// Its per-job state grows to `n` jobs, the new ones waiting, of
    /// `node`'s workflow (a sub-DAG read as the run goes).
    pub(crate) fn grow(&mut self, n: usize, node: JobId) {
        let m = n - self.state.len();
        self.state.resize(n, JobState::Waiting);
        self.missing_parents.resize(n, 0);
        self.failures.resize(n, 0);
        self.ordering.resize(n, Vec::new());
        self.throttled.resize(n, false);
        self.rerun.resize(n, false);
        self.exited.resize(n, None);
        let submission = self.submissions.of_job[node];
        self.submissions.of_job.resize(n, submission);
        self.workload[submission].open += m;
        self.counts.waiting += m;
    }

    /// Whether `g`'s settings fit its nodes and the run's categories: it
    /// may be grafted.
    pub(crate) fn graft_fits(&self, g: &Graft) -> Result<(), String> {
        let (local, m) = (&g.nodes, g.jobs.len());
        let categories = self.nodes.category_limits.len() + local.category_limits.len();
        if local.retry.len() != m || local.category.iter().flatten().any(|&c| c >= categories) {
            return Err("the sub-DAG's node settings do not match its nodes".into());
        }
        Ok(())
    }

    /// Sub-DAG `k`'s DAG `g` (its settings: its jobs are in `wf` by now),
    /// read as its node was submitted, joins the run as jobs `new` of `wf`
    /// (its per-job state grown already, see [`Self::grow`]): its settings and its DAGMan's, its lanes, its
    /// counts, the sub-DAGs above it, and each node's wait for its parents
    /// (the entry among the roots'), its node's for its `leaves` too.
    pub(crate) fn graft(
        &mut self,
        k: usize,
        g: &Graft,
        new: std::ops::Range<JobId>,
        leaves: usize,
        wf: &RunDag,
        top_depth_first: bool,
    ) {
        let (local, n) = (&g.nodes, new.start);
        let from = self.nodes.subdags.len();
        self.nodes.append(local, n);
        let d = &mut self.nodes.subdags[k];
        let node = d.node;
        d.members = new.clone().collect();
        d.final_node = local.final_node.map(|f| f + n);
        d.provisioner = local.provisioner.map(|p| p + n);
        d.max_jobs_submitted = local.max_jobs_submitted;
        d.max_jobs_idle = local.max_jobs_idle;
        d.max_post = local.max_post;
        d.always_run_post = local.always_run_post;
        d.max_pre = g.max_pre;
        d.depth_first = g.depth_first;
        d.deferred = false;
        // The sub-DAGs it is nested in have its nodes too.
        let mut outer = self.dagmans.innermost(node);
        while let Some(o) = outer {
            let d = &mut self.nodes.subdags[o];
            d.members.extend(new.clone());
            outer = self.dagmans.innermost(d.node);
        }
        self.throttle.grow(&local.category_limits);
        self.dagmans.graft(&self.nodes, k, new.clone(), from);
        self.dagmans.count_nodes(new.clone(), &self.state);
        self.graft_services(new.clone());
        self.ready.extend_priorities(&self.nodes.priority, n);
        self.graft_lanes(k, new.clone(), from, top_depth_first);
        for j in new {
            self.missing_parents[j] = wf.job(j).parents.len();
        }
        self.missing_parents[node] += leaves;
    }

    /// `job` is over: if it was the last node running of a held sub-DAG,
    /// that sub-DAG's node is ready.
    pub(crate) fn subdag_member_over(&mut self, job: JobId, port: &mut impl LifePort) {
        if self.dagmans.holding == 0 {
            return;
        }
        let Some(k) = self.dagmans.innermost(job) else {
            return;
        };
        if self.dagmans.sub(k).held && self.subdag_over(k) {
            self.dagmans.sub_mut(k).held = false;
            self.dagmans.holding -= 1;
            self.make_ready(self.nodes.subdags[k].node, port);
        }
    }

    /// A leaf of the sub-DAG of `node` failed for good or will never run:
    /// `node` is not blocked but counts it as over, and its DAG will end
    /// failed.
    pub(crate) fn subdag_leaf_failed(&mut self, node: JobId, k: usize, port: &mut impl LifePort) {
        self.dagmans.sub_mut(k).failed = true;
        self.release_child(node, port);
    }

    /// The no-op `job` ended its PRE script's part: the nodes of its
    /// sub-DAG's new run that waited for it may start.
    pub(crate) fn open_gate(&mut self, job: JobId, port: &mut impl LifePort) {
        if let Some(k) = self.dagmans.of_entry(job) {
            // Its DAGMan job is submitted, unless a PRE_SKIP made the node
            // done without it.
            if self.state[self.nodes.subdags[k].node] != JobState::Done {
                let started = port.now();
                let span = SubDagSpan { subdag: k, started, ended: None, exit: None, aborted: false };
                self.dagmans.spans.push(span);
            }
            for m in std::mem::take(&mut self.dagmans.sub_mut(k).gate) {
                self.release_child(m, port);
            }
            self.release_subdag_final(k, port);
        }
    }

    /// The sub-DAG node `node`'s PRE script exited its PRE_SKIP value: the
    /// node is done without its DAG running or its POST script, and the
    /// DAG's nodes with it, as a DONE sub-DAG node's are.
    pub(crate) fn skip_subdag(&mut self, node: JobId, port: &mut impl LifePort) {
        let Some(k) = self.dagmans.of_node(node) else {
            return;
        };
        for m in self.nodes.subdags[k].members.clone().into_iter().chain([node]) {
            if matches!(self.state[m], JobState::Waiting | JobState::Ready) {
                self.complete_without_running(m, port);
            }
        }
    }

    /// `job` went over (`over`), or back from over: the sub-DAGs with a
    /// FINAL node it is a node of count it, and run their FINAL once every
    /// other node is over.
    pub(crate) fn count_for_subdag_finals(&mut self, job: JobId, over: bool, port: &mut impl LifePort) {
        if self.dagmans.final_scope.is_empty() {
            return;
        }
        let Some(ks) = self.dagmans.final_scope.get(&job).cloned() else {
            return;
        };
        for k in ks {
            if over {
                self.dagmans.sub_mut(k).not_over -= 1;
                self.release_subdag_final(k, port);
            } else {
                self.dagmans.sub_mut(k).not_over += 1;
            }
        }
    }

    /// Sub-DAG `k`'s FINAL node is ready once the sub-DAG started (its
    /// entry, which runs the node's PRE script, is done) and every other
    /// node of it is over (DAGMan's `Dag::StartFinalNode`).
    fn release_subdag_final(&mut self, k: usize, port: &mut impl LifePort) {
        let d = &self.nodes.subdags[k];
        if let (Some(f), Some(e)) = (d.final_node, d.entry)
            && self.dagmans.sub(k).not_over == 0
            && self.state[e] == JobState::Done
            && self.state[f] == JobState::Waiting
        {
            self.make_ready(f, port);
        }
    }

    /// Whether every node of sub-DAG `k` is over.
    fn subdag_over(&self, k: usize) -> bool {
        self.nodes.subdags[k].members.iter().all(|&m| {
            self.state[m].is_over()
        })
    }

    /// Whether the sub-DAG node `job`, its parents over, must wait: its DAG
    /// failed and some of its nodes still run (DAGMan's sub-DAG ends when
    /// nothing more of it can run).
    pub(crate) fn subdag_holds(&mut self, job: JobId) -> bool {
        let Some(k) = self.dagmans.of_node(job) else {
            return false;
        };
        if !self.dagmans.sub(k).failed || self.subdag_over(k) {
            return false;
        }
        if !self.dagmans.sub(k).held {
            self.dagmans.sub_mut(k).held = true;
            self.dagmans.holding += 1;
        }
        true
    }

    /// The nodes ready before their sub-DAG's run started (their parents
    /// DONE in its rescue DAG, read before any node starts) wait for its
    /// entry no-op, as its roots do: returns them, to move back to waiting.
    pub(crate) fn hold_for_entries(&mut self) -> Vec<JobId> {
        if self.nodes.subdags.is_empty() {
            return Vec::new();
        }
        let mut held = Vec::new();
        for j in 0..self.state.len() {
            let Some(k) = self.dagmans.innermost(j) else {
                continue;
            };
            let entry = self.nodes.subdags[k].entry;
            if self.state[j] == JobState::Ready
                && entry.is_some_and(|e| self.state[e] != JobState::Done)
            {
                self.missing_parents[j] += 1;
                self.dagmans.sub_mut(k).gate.push(j);
                held.push(j);
            }
        }
        held
    }

    /// The nodes waiting for the entry no-op
    /// `entry` (none when `entry` is no entry).
    pub(crate) fn waiting_for_entry(&self, entry: JobId) -> &[JobId] {
        self.dagmans
            .of_entry(entry)
            .map_or(&[], |k| &self.dagmans.sub(k).gate)
    }

    /// The PRE script's no-op `job` failed for good: the nodes of its
    /// sub-DAG's new run that waited for it, and its FINAL node, are
    /// blocked (the sub-DAG never runs); returns them.
    pub(crate) fn close_gate(&mut self, job: JobId) -> Vec<JobId> {
        match self.dagmans.of_entry(job) {
            Some(k) => {
                let mut gated = std::mem::take(&mut self.dagmans.sub_mut(k).gate);
                gated.extend(self.nodes.subdags[k].final_node);
                gated
            }
            None => Vec::new(),
        }
    }

    /// The sub-DAG node whose PRE script the no-op `job` runs: its RETRY
    /// counts the PRE script's failures, and it fails when they fail it.
    pub(crate) fn node_of_entry(&self, job: JobId) -> Option<JobId> {
        let k = self.dagmans.of_entry(job)?;
        Some(self.nodes.subdags[k].node)
    }

    /// The sub-DAG node `job`, released once its DAG is over, "ran" at
    /// `site`: its DAG's exit value when that is a failure, else `None`.
    pub(crate) fn subdag_exit(&mut self, job: JobId, now: Time) -> Option<i32> {
        let exit = self.subdag_failure(job);
        self.dagmans.run_ended(job, now, exit.unwrap_or(0));
        exit
    }

    /// The failure value of sub-DAG node `job`'s DAG (see `subdag_exit`),
    /// its failed run recorded.
    fn subdag_failure(&mut self, job: JobId) -> Option<i32> {
        let k = self.dagmans.of_node(job)?;
        // With a FINAL node, its outcome is the sub-DAG's.
        let failed = match self.nodes.subdags[k].final_node {
            Some(f) => self.state[f] != JobState::Done,
            None => self.dagmans.sub(k).failed,
        };
        if !failed {
            return None;
        }
        // An abort's RETURN 0 is the sub-DAG's success.
        let exit = self.dagmans.sub(k).aborted.map_or(1, |a| a.dag_return);
        if exit == 0 {
            return None;
        }
        let (members, state) = (&self.nodes.subdags[k].members, &self.state);
        let ended = |s: JobState| -> Vec<JobId> {
            members.iter().copied().filter(|&m| state[m] == s).collect()
        };
        let run = SubDagRun {
            subdag: k,
            done: ended(JobState::Done),
            failed: ended(JobState::Failed),
        };
        // A sub-DAG whose file could not be read ran nothing to rescue.
        if !self.nodes.subdags[k].deferred {
            self.dagmans.runs_failed.push(run);
        }
        Some(exit)
    }

    /// `RETRY` of the sub-DAG node `job` (of sub-DAG `k`): its DAGMan runs
    /// again from its rescue. Its nodes that did not end well wait again,
    /// their retries reset, behind its PRE script if it has one; `job`
    /// waits for its DAG's leaves again.
    pub(crate) fn restart_subdag(&mut self, job: JobId, k: usize, port: &mut impl LifePort) {
        // A DAGMan submitted anew: not halted, until its halt file is
        // seen again.
        self.dagmans.sub_mut(k).halted = false;
        self.dagmans.sub_mut(k).failed = false;
        if self.dagmans.sub_mut(k).aborted.take().is_some() {
            self.dagmans.aborts -= 1;
        }
        let sub = self.nodes.subdags[k].clone();
        // Its FINAL node runs again with every run.
        let mut again: Vec<JobId> = sub
            .members
            .iter()
            .copied()
            .filter(|&m| {
                matches!(self.state[m], JobState::Failed | JobState::Blocked)
                    || Some(m) == sub.final_node && self.state[m] != JobState::Waiting
            })
            .collect();
        // A nested sub-DAG run again runs its PRE script again too, and so
        // does this one.
        for d in &self.nodes.subdags {
            if let Some(e) = d.entry
                && (d.node == job || again.contains(&d.node))
                && self.state[e] == JobState::Done
            {
                again.push(e);
            }
        }
        for d in self.nodes.subdags.clone() {
            if again.contains(&d.node)
                && let Some(n) = self.dagmans.of_node(d.node)
            {
                self.dagmans.sub_mut(n).halted = false;
                self.dagmans.sub_mut(n).failed = false;
                if self.dagmans.sub_mut(n).aborted.take().is_some() {
                    self.dagmans.aborts -= 1;
                }
            }
        }
        for &m in &again {
            self.failures[m] = 0;
            port.runs_again(m);
            self.set_state(m, JobState::Waiting, port);
        }
        self.set_state(job, JobState::Waiting, port);
        again.push(job);
        // Each waits for its parents that have not ended well.
        for &m in &again {
            let workflow = port.workflow().job(m).parents.iter();
            let ordering = (0..self.ordering.len()).filter(|&p| self.ordering[p].contains(&m));
            self.missing_parents[m] = workflow
                .copied()
                .chain(ordering)
                .filter(|&p| self.state[p] != JobState::Done)
                .count();
        }
        for m in again {
            // A FINAL node waits for the rest of its sub-DAG.
            if self.missing_parents[m] > 0 || self.dagmans.is_final(m) {
                continue;
            }
            match sub.entry {
                Some(e) if e != m => {
                    self.missing_parents[m] += 1;
                    self.dagmans.sub_mut(k).gate.push(m);
                }
                _ => self.make_ready(m, port),
            }
        }
    }
}

impl NodeLife {
    /// Sub-DAG `k`'s SERVICE nodes still going, to remove once every other
    /// node of it, its FINAL included, is over (its DAGMan's
    /// `RemoveServiceNodes`); none before, and each only once.
    pub(crate) fn subdag_services_due(&mut self, k: usize) -> Vec<JobId> {
        let over = |s: JobState| s.is_over();
        let fin = self.nodes.subdags[k].final_node;
        if self.dagmans.sub(k).services.is_empty()
            || self.dagmans.sub(k).not_over > 0
            || fin.is_some_and(|f| !over(self.state[f]))
        {
            return Vec::new();
        }
        let mut due = std::mem::take(&mut self.dagmans.sub_mut(k).services);
        due.retain(|&j| !over(self.state[j]));
        due
    }

    /// `ABORT-DAG-ON` in sub-DAG `k`: its DAGMan stops as the DAG's does
    /// (see `abort.rs`), and exits `abort.dag_return`; the DAG around it
    /// goes on. Its nodes not started never will (a leaf among them is
    /// over for the sub-DAG node); returns its nodes to remove when in
    /// flight, `abort.node` aside (its own end is left to its caller), or
    /// none when it had stopped already.
    pub(crate) fn stop_subdag(&mut self, k: usize, abort: DagAbort, port: &mut impl LifePort) -> Vec<JobId> {
        if self.dagmans.sub(k).aborted.is_some() {
            return Vec::new();
        }
        self.dagmans.sub_mut(k).aborted = Some(abort);
        self.dagmans.aborts += 1;
        self.dagmans.sub_mut(k).failed = true;
        let node = self.nodes.subdags[k].node;
        let mut members = self.nodes.subdags[k].members.clone();
        members.retain(|&m| Some(m) != abort.node);
        let fin = self.nodes.subdags[k].final_node;
        for &m in &members {
            if Some(m) != fin && matches!(self.state[m], JobState::Waiting | JobState::Ready) {
                self.set_state(m, JobState::Blocked, port);
                if port.workflow().children(m).contains(&node) {
                    self.release_child(node, port);
                }
            }
        }
        members
    }
}

#[cfg(test)]
mod tests {
    use super::super::dagmans::Dagmans;
    use super::super::node_life::recorder::life_of;
    use super::*;

    /// Sub-DAG `s` of `s+a` → `s+b` and `s+c`, then `after`: jobs 0–4, node
    /// 3 is `s`; `s+c` is a SERVICE node with `service`. The nodes stand as
    /// `states` say.
    fn subdag_life(service: bool, states: [JobState; 3]) -> (NodeLife, impl LifePort) {
        let (mut life, port) = life_of(&[vec![], vec![0], vec![], vec![1, 2], vec![3]], Vec::new());
        for (j, s) in states.into_iter().enumerate() {
            life.move_node(j, s);
        }
        let mut nodes = NodeSettings::none(5);
        nodes.service[2] = service;
        nodes.subdags = vec![crate::core::nodes::SubDag {
            node: 3,
            members: vec![0, 1, 2],
            ..Default::default()
        }];
        life.dagmans = Dagmans::new(&nodes);
        life.dagmans.count_nodes(0..5, &life.state);
        life.nodes = nodes;
        (life, port)
    }

    /// `ABORT-DAG-ON` in a sub-DAG: its unstarted nodes are blocked (a leaf
    /// among them is over for the sub-DAG node), those in flight are
    /// handed back for removal, the aborting node aside; it stops once.
    #[test]
    fn a_subdags_stop_blocks_its_unstarted_nodes_and_hands_back_the_rest() {
        use JobState::*;
        let (mut life, mut port) = subdag_life(false, [Running, Waiting, Running]);
        let abort = DagAbort {
            node: Some(0),
            status: 1,
            dag_return: 3,
            halted_at: None,
        };
        assert_eq!(life.missing_parents[3], 2);
        assert_eq!(life.stop_subdag(0, abort, &mut port), [1, 2]);
        assert_eq!(life.state[..3], [Running, Blocked, Running]);
        assert_eq!(life.missing_parents[3], 1, "the blocked leaf is over for `s`");
        assert_eq!(life.dagmans.sub(0).aborted, Some(abort));
        assert!(life.dagmans.sub(0).failed);
        assert_eq!(life.dagmans.aborts, 1);
        assert_eq!(life.stop_subdag(0, abort, &mut port), Vec::<JobId>::new(), "once");
        assert_eq!(life.dagmans.aborts, 1);
    }

    /// A sub-DAG's SERVICE node is due for removal once every other node of
    /// it is over, and only once.
    #[test]
    fn a_subdags_service_is_removed_once_its_other_nodes_are_over() {
        use JobState::*;
        let (mut life, mut port) = subdag_life(true, [Ready, Waiting, Running]);
        assert_eq!(life.subdag_services_due(0), Vec::<JobId>::new());
        life.set_state(0, Done, &mut port);
        assert_eq!(life.subdag_services_due(0), Vec::<JobId>::new(), "s+b is not over");
        life.set_state(1, Failed, &mut port);
        assert_eq!(life.subdag_services_due(0), [2]);
        assert_eq!(life.subdag_services_due(0), Vec::<JobId>::new(), "once");
    }
}
