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

use super::*;

/// The sub-DAGs of a DAG, as the manager follows them.
#[derive(Debug, Default)]
pub(super) struct SubDags {
    /// The sub-DAG of each `SUBDAG EXTERNAL` node.
    of_node: HashMap<JobId, usize>,
    /// The sub-DAG whose PRE script each entry no-op runs.
    of_entry: HashMap<JobId, usize>,
    /// Per sub-DAG: a node of its current run failed for good.
    failed: Vec<bool>,
    /// Per sub-DAG: nodes of a run again that wait for its PRE script.
    gate: Vec<Vec<JobId>>,
    /// The innermost sub-DAG of each node of one.
    member_of: HashMap<JobId, usize>,
    /// Per sub-DAG: failed, its node waits for its nodes still running.
    held: Vec<bool>,
    /// Per sub-DAG: the `ABORT-DAG-ON` that stopped its current run.
    aborted: Vec<Option<DagAbort>>,
    /// Sub-DAGs aborted.
    aborts: usize,
    /// Sub-DAGs held.
    holding: usize,
    /// Each failed run of a sub-DAG, in order.
    pub runs_failed: Vec<SubDagRun>,
    /// Each run of a sub-DAG's DAGMan, in the order they started.
    pub spans: Vec<SubDagSpan>,
    /// For each node of a sub-DAG with a FINAL or SERVICE node (those
    /// aside): those sub-DAGs (inline: they are nested, rarely more than
    /// two deep, and copied on every transition of the node).
    final_scope: HashMap<JobId, smallvec::SmallVec<[usize; 2]>>,
    /// Per sub-DAG with a FINAL or SERVICE node: its other nodes not over.
    not_over: Vec<usize>,
    /// Per sub-DAG: its SERVICE nodes.
    services: Vec<Vec<JobId>>,
    /// The sub-DAGs' FINAL nodes.
    finals: std::collections::HashSet<JobId>,
}

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

impl SubDags {
    /// Follows `nodes`' sub-DAGs.
    pub(super) fn new(nodes: &NodeSettings) -> Self {
        let n = nodes.subdags.len();
        let mut s = SubDags {
            failed: vec![false; n],
            gate: vec![Vec::new(); n],
            held: vec![false; n],
            aborted: vec![None; n],
            ..Default::default()
        };
        s.not_over = vec![0; n];
        s.services = vec![Vec::new(); n];
        for (k, d) in nodes.subdags.iter().enumerate() {
            s.of_node.insert(d.node, k);
            if let Some(e) = d.entry {
                s.of_entry.insert(e, k);
            }
            s.finals.extend(d.final_node);
        }
        // Outer sub-DAGs first, so that an inner one names its own nodes.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&k| std::cmp::Reverse(nodes.subdags[k].members.len()));
        for k in order {
            for &m in &nodes.subdags[k].members {
                s.member_of.insert(m, k);
            }
        }
        for (k, d) in nodes.subdags.iter().enumerate() {
            // Its own services, not those of a sub-DAG nested in it.
            s.services[k] = (d.members.iter().copied())
                .filter(|&m| nodes.service[m] && s.member_of.get(&m) == Some(&k))
                .collect();
            if d.final_node.is_none() && s.services[k].is_empty() {
                continue;
            }
            // Counted before any node is over (DONE nodes end after).
            for &m in &d.members {
                if Some(m) != d.final_node && !nodes.service[m] {
                    s.final_scope.entry(m).or_default().push(k);
                    s.not_over[k] += 1;
                }
            }
        }
        s
    }

    /// The sub-DAGs `from..` of `nodes` were read into sub-DAG `k` (they
    /// are nested in it), whose nodes are jobs `new`: they are followed
    /// too, and the sub-DAGs with a FINAL or SERVICE node count the new
    /// nodes of theirs not over.
    pub(super) fn graft(
        &mut self,
        nodes: &NodeSettings,
        k: usize,
        new: std::ops::Range<JobId>,
        from: usize,
    ) {
        let n = nodes.subdags.len();
        for (i, d) in nodes.subdags.iter().enumerate().skip(from) {
            self.of_node.insert(d.node, i);
            if let Some(e) = d.entry {
                self.of_entry.insert(e, i);
            }
            self.finals.extend(d.final_node);
        }
        self.failed.resize(n, false);
        self.gate.resize(n, Vec::new());
        self.held.resize(n, false);
        self.aborted.resize(n, None);
        self.not_over.resize(n, 0);
        self.services.resize(n, Vec::new());
        for j in new.clone() {
            self.member_of.insert(j, k);
        }
        let mut inner: Vec<usize> = (from..n).collect();
        inner.sort_by_key(|&i| std::cmp::Reverse(nodes.subdags[i].members.len()));
        for i in inner {
            for &m in &nodes.subdags[i].members {
                self.member_of.insert(m, i);
            }
        }
        for i in std::iter::once(k).chain(from..n) {
            self.services[i] = (nodes.subdags[i].members.iter().copied())
                .filter(|&m| nodes.service[m] && self.member_of.get(&m) == Some(&i))
                .collect();
        }
        for (i, d) in nodes.subdags.iter().enumerate() {
            if d.final_node.is_none() && self.services[i].is_empty() {
                continue;
            }
            for &m in &d.members {
                if new.contains(&m) && Some(m) != d.final_node && !nodes.service[m] {
                    self.final_scope.entry(m).or_default().push(i);
                    self.not_over[i] += 1;
                }
            }
        }
    }

    /// Sub-DAG `k`'s file could not be read: its DAGMan exits 1 before
    /// running a node.
    pub(super) fn unreadable(&mut self, k: usize) {
        self.failed[k] = true;
    }

    /// The sub-DAG of `node` ended at `now`, its DAGMan exiting `exit`.
    fn run_ended(&mut self, node: JobId, now: Time, exit: i32) {
        let Some(k) = self.of_node(node) else {
            return;
        };
        let aborted = self.aborted[k].is_some();
        if let Some(s) = (self.spans.iter_mut().rev()).find(|s| s.subdag == k && s.ended.is_none()) {
            (s.ended, s.exit, s.aborted) = (Some(now), Some(exit), aborted);
        }
    }

    /// The sub-DAG whose node `job` is.
    pub(super) fn of_node(&self, job: JobId) -> Option<usize> {
        if self.of_node.is_empty() {
            return None;
        }
        self.of_node.get(&job).copied()
    }

    /// Whether every node of the top DAG ended well (the nodes of its
    /// sub-DAGs, and their PRE scripts' no-ops, are their nodes' business;
    /// a `service` node's outcome is no one's).
    pub(super) fn top_level_done(&self, state: &[JobState], service: &[bool]) -> bool {
        (0..state.len()).all(|j| {
            state[j] == JobState::Done
                || service[j]
                || self.member_of.contains_key(&j)
                || self.of_entry.contains_key(&j)
        })
    }

    /// The innermost sub-DAG `job` is a node of.
    pub(super) fn innermost(&self, job: JobId) -> Option<usize> {
        if self.member_of.is_empty() {
            return None;
        }
        self.member_of.get(&job).copied()
    }

    /// The abort that stopped the current run of `job`'s sub-DAG, if one
    /// did.
    pub(super) fn stopped(&self, job: JobId) -> Option<DagAbort> {
        if self.aborts == 0 {
            return None;
        }
        self.aborted[self.innermost(job)?]
    }

    /// Whether `job` is a node of DAGMan `own` (sub-DAG `k`, or `None`
    /// the top DAG): of no sub-DAG nested in it, and no entry no-op (a
    /// nested sub-DAG is one node of it).
    pub(super) fn own_node_of(&self, job: JobId, own: Option<usize>) -> bool {
        self.innermost(job) == own && self.of_entry(job).is_none()
    }

    /// Whether `job` is a sub-DAG's FINAL node.
    pub(super) fn is_final(&self, job: JobId) -> bool {
        !self.finals.is_empty() && self.finals.contains(&job)
    }

    /// The sub-DAG whose PRE script the no-op `job` runs.
    fn of_entry(&self, job: JobId) -> Option<usize> {
        if self.of_entry.is_empty() {
            return None;
        }
        self.of_entry.get(&job).copied()
    }
}

impl Manager {
    /// `job` is over: if it was the last node running of a held sub-DAG,
    /// that sub-DAG's node is ready.
    pub(super) fn subdag_member_over(&mut self, job: JobId) {
        if self.dag.subdags.holding == 0 {
            return;
        }
        let Some(&k) = self.dag.subdags.member_of.get(&job) else {
            return;
        };
        if self.dag.subdags.held[k] && self.dag.subdag_over(k) {
            self.dag.subdags.held[k] = false;
            self.dag.subdags.holding -= 1;
            self.make_ready(self.dag.nodes.subdags[k].node);
        }
    }

    /// A leaf of the sub-DAG of `node` failed for good or will never run:
    /// `node` is not blocked but counts it as over, and its DAG will end
    /// failed.
    pub(super) fn subdag_leaf_failed(&mut self, node: JobId, k: usize) {
        self.dag.subdags.failed[k] = true;
        self.release_child(node);
    }

    /// The no-op `job` ended its PRE script's part: the nodes of its
    /// sub-DAG's new run that waited for it may start.
    pub(super) fn open_gate(&mut self, job: JobId) {
        if let Some(k) = self.dag.subdags.of_entry(job) {
            // Its DAGMan job is submitted, unless a PRE_SKIP made the node
            // done without it.
            if self.dag.state[self.dag.nodes.subdags[k].node] != JobState::Done {
                let started = self.now;
                let span = SubDagSpan { subdag: k, started, ended: None, exit: None, aborted: false };
                self.dag.subdags.spans.push(span);
            }
            for m in std::mem::take(&mut self.dag.subdags.gate[k]) {
                self.release_child(m);
            }
            self.release_subdag_final(k);
        }
    }

    /// The sub-DAG node `node`'s PRE script exited its PRE_SKIP value: the
    /// node is done without its DAG running or its POST script, and the
    /// DAG's nodes with it, as a DONE sub-DAG node's are.
    pub(super) fn skip_subdag(&mut self, node: JobId) {
        let Some(k) = self.dag.subdags.of_node(node) else {
            return;
        };
        for m in self.dag.nodes.subdags[k].members.clone().into_iter().chain([node]) {
            if matches!(self.dag.state[m], JobState::Waiting | JobState::Ready) {
                self.complete_without_running(m);
            }
        }
    }

    /// `job` went over (`over`), or back from over: the sub-DAGs with a
    /// FINAL node it is a node of count it, and run their FINAL once every
    /// other node is over.
    pub(super) fn count_for_subdag_finals(&mut self, job: JobId, over: bool) {
        if self.dag.subdags.final_scope.is_empty() {
            return;
        }
        let Some(ks) = self.dag.subdags.final_scope.get(&job).cloned() else {
            return;
        };
        for k in ks {
            if over {
                self.dag.subdags.not_over[k] -= 1;
                self.release_subdag_final(k);
            } else {
                self.dag.subdags.not_over[k] += 1;
            }
        }
    }

    /// Sub-DAG `k`'s SERVICE nodes still going are removed once every other
    /// node of it, its FINAL included, is over (its DAGMan's
    /// `RemoveServiceNodes`): they end done, their attempts recorded as
    /// removed.
    pub(super) fn remove_subdag_services(&mut self, out: &mut Vec<Command>) {
        if self.dag.subdags.services.iter().all(Vec::is_empty) {
            return;
        }
        for k in 0..self.dag.nodes.subdags.len() {
            let fin = self.dag.nodes.subdags[k].final_node;
            let over = JobState::is_over;
            if self.dag.subdags.services[k].is_empty()
                || self.dag.subdags.not_over[k] > 0
                || fin.is_some_and(|f| !over(self.dag.state[f]))
            {
                continue;
            }
            for j in std::mem::take(&mut self.dag.subdags.services[k]) {
                if over(self.dag.state[j]) {
                    continue;
                }
                self.withdraw(j, out);
                self.record_removal(j, "its sub-DAG ended (a SERVICE node is removed at its end)");
                self.set_state(j, JobState::Done);
            }
        }
    }

    /// Sub-DAG `k`'s FINAL node is ready once the sub-DAG started (its
    /// entry, which runs the node's PRE script, is done) and every other
    /// node of it is over (DAGMan's `Dag::StartFinalNode`).
    fn release_subdag_final(&mut self, k: usize) {
        let d = &self.dag.nodes.subdags[k];
        if let (Some(f), Some(e)) = (d.final_node, d.entry)
            && self.dag.subdags.not_over[k] == 0
            && self.dag.state[e] == JobState::Done
            && self.dag.state[f] == JobState::Waiting
        {
            self.make_ready(f);
        }
    }

    /// `ABORT-DAG-ON` in sub-DAG `k`: its DAGMan stops as the DAG's does
    /// (see `abort.rs`), and exits `abort.dag_return`; the DAG around it
    /// goes on. `abort.node`'s own end is left to its caller.
    pub(super) fn abort_subdag(&mut self, k: usize, abort: DagAbort, out: &mut Vec<Command>) {
        if self.dag.subdags.aborted[k].is_some() {
            return;
        }
        self.dag.subdags.aborted[k] = Some(abort);
        self.dag.subdags.aborts += 1;
        self.dag.subdags.failed[k] = true;
        let node = self.dag.nodes.subdags[k].node;
        let members = self.dag.nodes.subdags[k].members.clone();
        let wf = self.wf.clone();
        let fin = self.dag.nodes.subdags[k].final_node;
        for &m in &members {
            if Some(m) != abort.node
                && Some(m) != fin
                && matches!(self.dag.state[m], JobState::Waiting | JobState::Ready)
            {
                self.set_state(m, JobState::Blocked);
                // A leaf that will never run is over for the node.
                if wf.children[m].contains(&node) {
                    self.release_child(node);
                }
            }
        }
        for m in members {
            if Some(m) != abort.node
                && self.dag.state[m].claims_slot()
            {
                self.remove_node(m, out);
            }
        }
    }

    /// The sub-DAG node `job` ended at `site` with its DAG's failure
    /// `status`, as a job that exits it: its POST script decides, its
    /// TOLERANCE lets it end done, or the node is retried (its DAG run
    /// again) or fails.
    pub(super) fn subdag_failed(
        &mut self,
        job: JobId,
        site: SiteId,
        status: i32,
        out: &mut Vec<Command>,
    ) {
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.finished = Some(self.now);
            a.exit = Some(status);
        }
        self.job_exited(job, site, status, out);
    }

    /// `RETRY` of the sub-DAG node `job` (of sub-DAG `k`): its DAGMan runs
    /// again from its rescue. Its nodes that did not end well wait again,
    /// their retries reset, behind its PRE script if it has one; `job`
    /// waits for its DAG's leaves again.
    pub(super) fn restart_subdag(&mut self, job: JobId, k: usize) {
        self.dag.subdags.failed[k] = false;
        if self.dag.subdags.aborted[k].take().is_some() {
            self.dag.subdags.aborts -= 1;
        }
        let sub = self.dag.nodes.subdags[k].clone();
        // Its FINAL node runs again with every run.
        let mut again: Vec<JobId> = sub
            .members
            .iter()
            .copied()
            .filter(|&m| {
                matches!(self.dag.state[m], JobState::Failed | JobState::Blocked)
                    || Some(m) == sub.final_node && self.dag.state[m] != JobState::Waiting
            })
            .collect();
        // A nested sub-DAG run again runs its PRE script again too, and so
        // does this one.
        for d in &self.dag.nodes.subdags {
            if let Some(e) = d.entry
                && (d.node == job || again.contains(&d.node))
                && self.dag.state[e] == JobState::Done
            {
                again.push(e);
            }
        }
        for d in self.dag.nodes.subdags.clone() {
            if again.contains(&d.node)
                && let Some(n) = self.dag.subdags.of_node(d.node)
            {
                self.dag.subdags.failed[n] = false;
                if self.dag.subdags.aborted[n].take().is_some() {
                    self.dag.subdags.aborts -= 1;
                }
            }
        }
        for &m in &again {
            self.records.jobs[m].failure = None;
            self.records.jobs[m].blocked_by = None;
            self.dag.failures[m] = 0;
            self.grid.replans[m] = 0;
            for i in 0..self.wf.jobs[m].inputs.len() {
                let f = self.wf.jobs[m].inputs[i];
                self.grid.readers_left[f] += 1;
            }
            self.set_state(m, JobState::Waiting);
        }
        self.set_state(job, JobState::Waiting);
        again.push(job);
        // Each waits for its parents that have not ended well.
        for &m in &again {
            let wf = &self.wf;
            let workflow = wf.jobs[m].parents.iter();
            let ordering = (0..self.dag.ordering.len()).filter(|&p| self.dag.ordering[p].contains(&m));
            self.dag.missing_parents[m] = workflow
                .copied()
                .chain(ordering)
                .filter(|&p| self.dag.state[p] != JobState::Done)
                .count();
        }
        for m in again {
            // A FINAL node waits for the rest of its sub-DAG.
            if self.dag.missing_parents[m] > 0 || self.dag.subdags.is_final(m) {
                continue;
            }
            match sub.entry {
                Some(e) if e != m => {
                    self.dag.missing_parents[m] += 1;
                    self.dag.subdags.gate[k].push(m);
                }
                _ => self.make_ready(m),
            }
        }
    }
}

impl NodeLife {
    /// Whether every node of sub-DAG `k` is over.
    fn subdag_over(&self, k: usize) -> bool {
        self.nodes.subdags[k].members.iter().all(|&m| {
            self.state[m].is_over()
        })
    }

    /// Whether the sub-DAG node `job`, its parents over, must wait: its DAG
    /// failed and some of its nodes still run (DAGMan's sub-DAG ends when
    /// nothing more of it can run).
    pub(super) fn subdag_holds(&mut self, job: JobId) -> bool {
        let Some(k) = self.subdags.of_node(job) else {
            return false;
        };
        if !self.subdags.failed[k] || self.subdag_over(k) {
            return false;
        }
        if !self.subdags.held[k] {
            self.subdags.held[k] = true;
            self.subdags.holding += 1;
        }
        true
    }

    /// The nodes of a sub-DAG's run again waiting for its entry no-op
    /// `entry` (none when `entry` is no entry).
    pub(super) fn waiting_for_entry(&self, entry: JobId) -> &[JobId] {
        self.subdags
            .of_entry(entry)
            .map_or(&[], |k| &self.subdags.gate[k])
    }

    /// The PRE script's no-op `job` failed for good: the nodes of its
    /// sub-DAG's new run that waited for it, and its FINAL node, are
    /// blocked (the sub-DAG never runs); returns them.
    pub(super) fn close_gate(&mut self, job: JobId) -> Vec<JobId> {
        match self.subdags.of_entry(job) {
            Some(k) => {
                let mut gated = std::mem::take(&mut self.subdags.gate[k]);
                gated.extend(self.nodes.subdags[k].final_node);
                gated
            }
            None => Vec::new(),
        }
    }

    /// The sub-DAG node whose PRE script the no-op `job` runs: its RETRY
    /// counts the PRE script's failures, and it fails when they fail it.
    pub(super) fn node_of_entry(&self, job: JobId) -> Option<JobId> {
        let k = self.subdags.of_entry(job)?;
        Some(self.nodes.subdags[k].node)
    }

    /// The sub-DAG node `job`, released once its DAG is over, "ran" at
    /// `site`: its DAG's exit value when that is a failure, else `None`.
    pub(super) fn subdag_exit(&mut self, job: JobId, now: Time) -> Option<i32> {
        let exit = self.subdag_failure(job);
        self.subdags.run_ended(job, now, exit.unwrap_or(0));
        exit
    }

    /// The failure value of sub-DAG node `job`'s DAG (see `subdag_exit`),
    /// its failed run recorded.
    fn subdag_failure(&mut self, job: JobId) -> Option<i32> {
        let k = self.subdags.of_node(job)?;
        // With a FINAL node, its outcome is the sub-DAG's.
        let failed = match self.nodes.subdags[k].final_node {
            Some(f) => self.state[f] != JobState::Done,
            None => self.subdags.failed[k],
        };
        if !failed {
            return None;
        }
        // An abort's RETURN 0 is the sub-DAG's success.
        let exit = self.subdags.aborted[k].map_or(1, |a| a.dag_return);
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
            self.subdags.runs_failed.push(run);
        }
        Some(exit)
    }
}
