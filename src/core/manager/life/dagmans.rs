//! The run's DAGMans as a tree (HTCondor's `Dag` objects; issue 62): the
//! top DAG at the root, and the DAGMan of each `SUBDAG EXTERNAL` node a
//! child of the DAGMan that node is in. Each instance ([`Dagman`]) owns
//! its throttles (`DAGMAN_MAX_JOBS_SUBMITTED`, `_JOBS_IDLE`,
//! `_POST_SCRIPTS`, `_PRE_SCRIPTS`: their counts and what they hold, see
//! `dagman_limits`) and its current run's standing (failed, aborted, held
//! for its nodes still running, the nodes of a run again waiting for its
//! node's PRE script, what its FINAL node waits for, its SERVICE nodes;
//! see `subdag`).
//!
//! The nodes themselves are still one flattened DAG: a sub-DAG's nodes
//! are jobs of the run, its node's PRE script an entry no-op before them
//! ([`crate::core::nodes::SubDag`]). The tree's indexes say which DAGMan
//! each node is a node of, and which sub-DAG each node and entry stands
//! for. DAGMan 0 is the top DAG, DAGMan `k + 1` sub-DAG `k` of
//! [`NodeSettings::subdags`].

use super::subdag::{SubDagRun, SubDagSpan};
use super::*;
use rustc_hash::FxHashSet as HashSet;

/// A DAGMan of the run: 0 the top DAG, `k + 1` sub-DAG `k`.
pub(crate) type DagmanId = usize;

/// A submission or script a DAGMan holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    /// A node's job, or its POST script.
    Job(JobId),
    /// A sub-DAG, started by its entry no-op (done): its DAGMan's job.
    SubDag(JobId),
}

/// One throttle of one DAGMan.
#[derive(Debug, Clone, Default)]
pub(crate) struct Limit {
    /// Its value (0: none).
    pub(crate) limit: usize,
    /// What counts against it now.
    pub(crate) count: usize,
    /// What it holds, first come first out.
    pub(crate) held: VecDeque<Held>,
}

impl Limit {
    /// Whether the DAGMan is at this limit.
    pub(crate) fn full(&self) -> bool {
        self.limit > 0 && self.count >= self.limit
    }

    /// Counts one more unless full; then holds `what`. Returns whether it
    /// was held.
    pub(crate) fn hold_or_count(&mut self, what: Held) -> bool {
        if self.full() {
            self.held.push_back(what);
            return true;
        }
        self.count += 1;
        false
    }

    /// What it held that may go now.
    pub(crate) fn next(&mut self) -> Option<Held> {
        if self.full() {
            return None;
        }
        self.held.pop_front()
    }
}

/// One DAGMan: its throttles and its current run's standing.
#[derive(Debug, Clone, Default)]
pub(crate) struct Dagman {
    /// `DAGMAN_MAX_JOBS_SUBMITTED`: its jobs in the queue.
    pub(crate) submitted: Limit,
    /// `DAGMAN_MAX_JOBS_IDLE`: its jobs idle in the queue.
    pub(crate) idle: Limit,
    /// `DAGMAN_MAX_POST_SCRIPTS`: its POST scripts running.
    pub(crate) post: Limit,
    /// `DAGMAN_MAX_PRE_SCRIPTS` (a sub-DAG's; the top DAG's is the submit
    /// host's `maxpre`): its prescripts running.
    pub(crate) pre: Limit,
    /// Its DAGMan job counts in the queue of the DAGMan above.
    pub(crate) counted: bool,
    /// A node of its current run failed for good.
    pub(crate) failed: bool,
    /// Nodes that wait for its node's PRE script beside its roots: those of
    /// a run again, and those whose parents were DONE in its rescue DAG.
    pub(crate) gate: Vec<JobId>,
    /// Failed, its node waits for its nodes still running.
    pub(crate) held: bool,
    /// What stopped its current run: an `ABORT-DAG-ON` (the top DAG's
    /// may also be the user's removal).
    pub(crate) aborted: Option<DagAbort>,
    /// With a FINAL or SERVICE node: its other nodes not over.
    pub(crate) not_over: usize,
    /// Its own SERVICE nodes (a sub-DAG's).
    pub(crate) services: Vec<JobId>,
    /// Nodes waiting for its PROVISIONER node's go-ahead (its job running).
    pub(crate) awaiting_provisioner: Vec<JobId>,
    /// Its own nodes (not those of a sub-DAG below, where the sub-DAG is
    /// one node), counted while the run has sub-DAGs.
    pub(crate) own: usize,
    /// Its own nodes per state, likewise.
    pub(crate) counts: StateCounts,
    /// After a failed submission: it submits nothing before this time.
    pub(crate) submit_gate: Time,
    /// The wait after its next failed submission (0: the first wait, 1 s).
    pub(crate) submit_wait: Time,
    /// Halted (its halt file): it starts no node but its FINAL one.
    pub(crate) halted: bool,
}

/// Which throttle any DAGMan of the run has (a sub-DAG read as the run
/// goes may bring one: then each is counted from the start).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LimitsOn {
    pub(crate) submitted: bool,
    pub(crate) idle: bool,
    pub(crate) post: bool,
    pub(crate) pre: bool,
}

/// The tree of the run's DAGMans.
#[derive(Debug)]
pub(crate) struct Dagmans {
    /// Each DAGMan, by [`DagmanId`].
    pub(crate) list: Vec<Dagman>,
    /// Which throttles are counted.
    pub(crate) on: LimitsOn,
    /// Nodes without a PRE script counted in their DAGMan's queue from the
    /// start of their prescript stage, not yet submitted.
    pub(crate) reserved: HashSet<JobId>,
    /// The sub-DAG of each `SUBDAG EXTERNAL` node.
    of_node: HashMap<JobId, usize>,
    /// The sub-DAG whose PRE script each entry no-op runs.
    of_entry: HashMap<JobId, usize>,
    /// The innermost sub-DAG of each node of one.
    member_of: HashMap<JobId, usize>,
    /// For each node of a sub-DAG with a FINAL or SERVICE node (those
    /// aside): those sub-DAGs (inline: they are nested, rarely more than
    /// two deep, and copied on every transition of the node).
    pub(crate) final_scope: HashMap<JobId, smallvec::SmallVec<[usize; 2]>>,
    /// The sub-DAGs' FINAL nodes.
    finals: std::collections::HashSet<JobId>,
    /// The DAGMan of each PROVISIONER node (a sub-DAG's only when its node
    /// has an entry, which starts its runs).
    of_provisioner: HashMap<JobId, DagmanId>,
    /// Sub-DAGs aborted now.
    pub(crate) aborts: usize,
    /// Sub-DAGs held now.
    pub(crate) holding: usize,
    /// DAGMans halted by their halt file, not yet stopped (0 the top DAG).
    pub(crate) halting: Vec<DagmanId>,
    /// Each failed run of a sub-DAG, in order.
    pub(crate) runs_failed: Vec<SubDagRun>,
    /// Each run of a sub-DAG's DAGMan, in the order they started.
    pub(crate) spans: Vec<SubDagSpan>,
}

impl Default for Dagmans {
    /// The top DAG alone.
    fn default() -> Self {
        Dagmans {
            list: vec![Dagman::default()],
            on: LimitsOn::default(),
            reserved: HashSet::default(),
            of_node: HashMap::default(),
            of_entry: HashMap::default(),
            member_of: HashMap::default(),
            final_scope: HashMap::default(),
            finals: Default::default(),
            of_provisioner: HashMap::default(),
            aborts: 0,
            holding: 0,
            halting: Vec::new(),
            runs_failed: Vec::new(),
            spans: Vec::new(),
        }
    }
}

impl Dagmans {
    /// The DAGMans of `nodes`: the top DAG and each sub-DAG.
    pub(crate) fn new(nodes: &NodeSettings) -> Self {
        let mut t = Dagmans::default();
        t.set_limits(nodes, 0..nodes.subdags.len());
        // A deferred sub-DAG's limits are known only once it is read: its
        // DAG's jobs are counted from the start, in case.
        let deferred = nodes.subdags.iter().any(|d| d.deferred);
        let any = |f: fn(&Dagman) -> &Limit| deferred || t.list.iter().any(|d| f(d).limit > 0);
        t.on = LimitsOn {
            submitted: any(|d| &d.submitted),
            idle: any(|d| &d.idle),
            post: any(|d| &d.post),
            pre: any(|d| &d.pre),
        };
        let n = nodes.subdags.len();
        t.index(nodes, 0..n);
        t.follow_services_and_finals(nodes, 0..n, None);
        t.of_provisioner.extend(nodes.provisioner.map(|p| (p, 0)));
        t.index_provisioners(nodes, 0..n);
        t
    }

    /// The sub-DAGs `from..` of `nodes` were read into sub-DAG `k` (they
    /// are nested in it), whose nodes are jobs `new`: they are DAGMans of
    /// the tree too, and the sub-DAGs with a FINAL or SERVICE node count
    /// the new nodes of theirs not over.
    pub(crate) fn graft(
        &mut self,
        nodes: &NodeSettings,
        k: usize,
        new: std::ops::Range<JobId>,
        from: usize,
    ) {
        let n = nodes.subdags.len();
        self.set_limits(nodes, std::iter::once(k).chain(from..n));
        for j in new.clone() {
            self.member_of.insert(j, k);
        }
        self.index(nodes, from..n);
        // Its FINAL node came with its file (the others', with theirs).
        self.finals.extend(nodes.subdags[k].final_node);
        // Sub-DAG `k` has new nodes of its own, as have those read.
        self.follow_services_and_finals(nodes, std::iter::once(k).chain(from..n), Some(new));
        self.index_provisioners(nodes, std::iter::once(k).chain(from..n));
    }

    /// Follows the PROVISIONER nodes of sub-DAGs `ks`.
    fn index_provisioners(&mut self, nodes: &NodeSettings, ks: impl IntoIterator<Item = usize>) {
        for k in ks {
            if let (Some(p), Some(_)) = (nodes.subdags[k].provisioner, nodes.subdags[k].entry) {
                self.of_provisioner.insert(p, k + 1);
            }
        }
    }

    /// The DAGMan whose PROVISIONER node `job` is.
    pub(crate) fn provisioned_by(&self, job: JobId) -> Option<DagmanId> {
        if self.of_provisioner.is_empty() {
            return None;
        }
        self.of_provisioner.get(&job).copied()
    }

    /// A DAGMan for each sub-DAG of `nodes` that has none yet, and the top
    /// DAG's and sub-DAGs `ks`' throttles as `nodes` sets them now (a
    /// sub-DAG read as the run goes brings its own); what they count and
    /// hold stays.
    fn set_limits(&mut self, nodes: &NodeSettings, ks: impl IntoIterator<Item = usize>) {
        self.list.resize_with(nodes.subdags.len() + 1, Dagman::default);
        let top = &mut self.list[0];
        top.submitted.limit = nodes.max_jobs_submitted;
        top.idle.limit = nodes.max_jobs_idle;
        top.post.limit = nodes.max_post;
        for k in ks {
            let (d, sub) = (&mut self.list[k + 1], &nodes.subdags[k]);
            d.submitted.limit = sub.max_jobs_submitted;
            d.idle.limit = sub.max_jobs_idle;
            d.post.limit = sub.max_post;
            d.pre.limit = sub.max_pre;
        }
    }

    /// Follows sub-DAGs `range`: their nodes, entries and FINAL nodes, and
    /// which sub-DAG each of their nodes is innermost in (outer ones
    /// first, so that an inner one names its own nodes).
    fn index(&mut self, nodes: &NodeSettings, range: std::ops::Range<usize>) {
        for k in range.clone() {
            let d = &nodes.subdags[k];
            self.of_node.insert(d.node, k);
            if let Some(e) = d.entry {
                self.of_entry.insert(e, k);
            }
            self.finals.extend(d.final_node);
        }
        let mut order: Vec<usize> = range.collect();
        order.sort_by_key(|&k| std::cmp::Reverse(nodes.subdags[k].members.len()));
        for k in order {
            for &m in &nodes.subdags[k].members {
                self.member_of.insert(m, k);
            }
        }
    }

    /// Sub-DAGs `ks`' own SERVICE nodes (not those of a sub-DAG nested in
    /// them), and, in those with a FINAL or SERVICE node, their other
    /// nodes not over (counted before any node is over: DONE nodes end
    /// after): every node, or those of `new`.
    fn follow_services_and_finals(
        &mut self,
        nodes: &NodeSettings,
        ks: impl IntoIterator<Item = usize>,
        new: Option<std::ops::Range<JobId>>,
    ) {
        for k in ks {
            let d = &nodes.subdags[k];
            self.list[k + 1].services = (d.members.iter().copied())
                .filter(|&m| nodes.service[m] && self.member_of.get(&m) == Some(&k))
                .collect();
        }
        for (k, d) in nodes.subdags.iter().enumerate() {
            if d.final_node.is_none() && self.list[k + 1].services.is_empty() {
                continue;
            }
            for &m in &d.members {
                if new.as_ref().is_none_or(|n| n.contains(&m))
                    && Some(m) != d.final_node
                    && !nodes.service[m]
                {
                    self.final_scope.entry(m).or_default().push(k);
                    self.list[k + 1].not_over += 1;
                }
            }
        }
    }

    /// The top DAG's DAGMan.
    pub(crate) fn top(&self) -> &Dagman {
        &self.list[0]
    }

    /// The top DAG's DAGMan, to change.
    pub(crate) fn top_mut(&mut self) -> &mut Dagman {
        &mut self.list[0]
    }

    /// The DAGMan `job` is an own node of: none for an entry no-op (a
    /// sub-DAG node's PRE script, run before its DAGMan starts).
    pub(crate) fn owner_of(&self, job: JobId) -> Option<DagmanId> {
        match self.of_entry(job) {
            Some(_) => None,
            None => Some(self.dagman_of(job)),
        }
    }

    /// `jobs`, in the states `state` gives, are nodes of their DAGMans
    /// (kept only while there are sub-DAGs: else the run's own counts are
    /// the top DAG's).
    pub(crate) fn count_nodes(&mut self, jobs: impl Iterator<Item = JobId>, state: &[JobState]) {
        if self.list.len() == 1 {
            return;
        }
        for j in jobs {
            if let Some(d) = self.owner_of(j) {
                self.list[d].own += 1;
                *self.list[d].counts.of_mut(state[j]) += 1;
            }
        }
    }

    /// Node `job` moved from state `from` to `to`: its DAGMan counts it.
    pub(crate) fn node_moved(&mut self, job: JobId, from: JobState, to: JobState) {
        if self.list.len() == 1 {
            return;
        }
        if let Some(d) = self.owner_of(job) {
            let c = &mut self.list[d].counts;
            *c.of_mut(from) -= 1;
            *c.of_mut(to) += 1;
        }
    }

    /// Sub-DAG `k`'s DAGMan.
    pub(crate) fn sub(&self, k: usize) -> &Dagman {
        &self.list[k + 1]
    }

    /// Sub-DAG `k`'s DAGMan, to change.
    pub(crate) fn sub_mut(&mut self, k: usize) -> &mut Dagman {
        &mut self.list[k + 1]
    }

    /// The DAGMan `job` is a node of.
    pub(crate) fn dagman_of(&self, job: JobId) -> DagmanId {
        self.innermost(job).map_or(0, |k| k + 1)
    }

    /// Whether a DAGMan's `DAGMAN_MAX_JOBS_SUBMITTED` or halt may stop it: its
    /// ready queue's lane may close.
    pub(crate) fn may_close(&self) -> bool {
        self.on.submitted || self.list.iter().any(|d| d.halted)
    }

    /// The node jobs whose submission a DAGMan holds, no longer held: a
    /// stopped DAG submits nothing more, and DAGMan counts such a node
    /// ready, not submitted (its PRE script may have run).
    pub(crate) fn take_held_submissions(&mut self) -> Vec<JobId> {
        let mut jobs = Vec::new();
        for d in &mut self.list {
            for limit in [&mut d.idle, &mut d.submitted] {
                limit.held.retain(|h| match *h {
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

    /// Sub-DAG `k`'s file could not be read: its DAGMan exits 1 before
    /// running a node.
    pub(crate) fn unreadable(&mut self, k: usize) {
        self.sub_mut(k).failed = true;
    }

    /// The sub-DAG of `node` ended at `now`, its DAGMan exiting `exit`.
    pub(crate) fn run_ended(&mut self, node: JobId, now: Time, exit: i32) {
        let Some(k) = self.of_node(node) else {
            return;
        };
        let aborted = self.sub(k).aborted.is_some();
        if let Some(s) = (self.spans.iter_mut().rev()).find(|s| s.subdag == k && s.ended.is_none()) {
            (s.ended, s.exit, s.aborted) = (Some(now), Some(exit), aborted);
        }
    }

    /// The sub-DAG whose node `job` is.
    pub(crate) fn of_node(&self, job: JobId) -> Option<usize> {
        if self.of_node.is_empty() {
            return None;
        }
        self.of_node.get(&job).copied()
    }

    /// Whether every node of the top DAG ended well (the nodes of its
    /// sub-DAGs, and their PRE scripts' no-ops, are their nodes' business;
    /// a `service` node's outcome is no one's).
    pub(crate) fn top_level_done(&self, state: &[JobState], service: &[bool]) -> bool {
        (0..state.len()).all(|j| {
            state[j] == JobState::Done
                || service[j]
                || self.member_of.contains_key(&j)
                || self.of_entry.contains_key(&j)
        })
    }

    /// The innermost sub-DAG `job` is a node of.
    pub(crate) fn innermost(&self, job: JobId) -> Option<usize> {
        if self.member_of.is_empty() {
            return None;
        }
        self.member_of.get(&job).copied()
    }

    /// The abort that stopped the current run of `job`'s sub-DAG, if one
    /// did.
    pub(crate) fn stopped(&self, job: JobId) -> Option<DagAbort> {
        if self.aborts == 0 {
            return None;
        }
        self.sub(self.innermost(job)?).aborted
    }

    /// Whether `job` is a node of DAGMan `own` (sub-DAG `k`, or `None`
    /// the top DAG): of no sub-DAG nested in it, and no entry no-op (a
    /// nested sub-DAG is one node of it).
    pub(crate) fn own_node_of(&self, job: JobId, own: Option<usize>) -> bool {
        self.innermost(job) == own && self.of_entry(job).is_none()
    }

    /// Whether `job` is a sub-DAG's FINAL node.
    pub(crate) fn is_final(&self, job: JobId) -> bool {
        !self.finals.is_empty() && self.finals.contains(&job)
    }

    /// The sub-DAG whose PRE script the no-op `job` runs.
    pub(crate) fn of_entry(&self, job: JobId) -> Option<usize> {
        if self.of_entry.is_empty() {
            return None;
        }
        self.of_entry.get(&job).copied()
    }
}

impl NodeLife {
    /// DAGMan `d`'s own nodes per state, and how many it has.
    pub(crate) fn own_counts(&self, d: DagmanId) -> (StateCounts, usize) {
        match self.dagmans.list.len() {
            1 => (self.counts, self.state.len()),
            _ => (self.dagmans.list[d].counts, self.dagmans.list[d].own),
        }
    }

    /// Each DAGMan orders its own ready nodes: a lane of the ready queue
    /// per DAGMan of the tree, depth first where its DAGMan is
    /// (`DAGMAN_SUBMIT_DEPTH_FIRST`; the top DAG's `top_depth_first`).
    pub(crate) fn set_lanes(&mut self, top_depth_first: bool) {
        let dagman_of = (0..self.state.len())
            .map(|j| self.dagmans.dagman_of(j))
            .collect();
        let depth_first = std::iter::once(top_depth_first)
            .chain(self.nodes.subdags.iter().map(|d| d.depth_first))
            .collect();
        let throttled = self.dagmans.may_close();
        self.ready.set_dagmans(dagman_of, depth_first, throttled);
    }

    /// [`Self::set_lanes`] once sub-DAG `k` was read as the run went, its
    /// nodes jobs `new` and its nested sub-DAGs `from..`: the lanes grow
    /// by those alone, unless the ready queue must be ordered anew.
    pub(crate) fn graft_lanes(
        &mut self,
        k: usize,
        new: std::ops::Range<JobId>,
        from: usize,
        top_depth_first: bool,
    ) {
        let subdags = &self.nodes.subdags;
        let lanes: Vec<(DagmanId, bool)> = (std::iter::once(k).chain(from..subdags.len()))
            .map(|d| (d + 1, subdags[d].depth_first))
            .collect();
        let dagman_of = new.map(|j| self.dagmans.dagman_of(j));
        let throttled = self.dagmans.may_close();
        if !self.ready.extend_dagmans(dagman_of, &lanes, throttled) {
            self.set_lanes(top_depth_first);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::nodes::SubDag;

    /// Top DAG: 0 (its PROVISIONER), 1 (SUBDAG S), 2 (S's entry). S: 3
    /// (SERVICE), 4 (FINAL), 5 (SUBDAG T), 6 (T's entry), 8 (S's
    /// PROVISIONER); T: 7. And 9, U's node, 10 its entry: a sub-DAG read as
    /// the run goes.
    fn nodes() -> NodeSettings {
        let mut n = NodeSettings::none(11);
        n.provisioner = Some(0);
        n.max_jobs_submitted = 2;
        n.service[3] = true;
        n.subdags = vec![
            SubDag {
                node: 1,
                entry: Some(2),
                members: vec![3, 4, 5, 6, 7, 8],
                final_node: Some(4),
                provisioner: Some(8),
                ..Default::default()
            },
            SubDag {
                node: 5,
                entry: Some(6),
                members: vec![7],
                max_post: 1,
                ..Default::default()
            },
            SubDag {
                node: 9,
                entry: Some(10),
                deferred: true,
                ..Default::default()
            },
        ];
        n
    }

    #[test]
    fn each_dagman_is_an_instance_and_each_node_is_its_innermost_dagmans() {
        let n = nodes();
        let t = Dagmans::new(&n);
        assert_eq!(t.list.len(), 4, "the top DAG and three sub-DAGs");
        let of: Vec<DagmanId> = (0..11).map(|j| t.dagman_of(j)).collect();
        assert_eq!(of, [0, 0, 0, 1, 1, 1, 1, 2, 1, 0, 0]);
        // T's node and entry are nodes of S; only its node is S's own.
        assert!(t.own_node_of(5, Some(0)) && !t.own_node_of(6, Some(0)));
        assert!(!t.own_node_of(7, Some(0)) && t.own_node_of(7, Some(1)));
        assert_eq!((t.of_node(5), t.of_entry(6), t.of_node(6)), (Some(1), Some(1), None));
        assert!(t.is_final(4) && !t.is_final(3));
        // S's own SERVICE node; its FINAL waits for its other nodes, T's
        // included (SERVICE, FINAL aside).
        assert_eq!(t.sub(0).services, [3]);
        assert_eq!(t.sub(0).not_over, 4);
        assert_eq!(t.final_scope.get(&7).map(|s| s.to_vec()), Some(vec![0]));
        assert_eq!(t.sub(1).not_over, 0);
        assert_eq!((t.provisioned_by(0), t.provisioned_by(8), t.provisioned_by(3)), (Some(0), Some(1), None));
        // Each DAGMan's own throttles; a deferred sub-DAG may bring any,
        // so each is counted.
        assert_eq!(t.list[0].submitted.limit, 2);
        assert_eq!(t.list[2].post.limit, 1);
        assert_eq!(t.list[1].post.limit, 0);
        let on = t.on;
        assert!(on.submitted && on.idle && on.post && on.pre);
    }

    #[test]
    fn a_sub_dag_read_as_the_run_goes_joins_the_tree_with_its_own_throttles() {
        let mut n = nodes();
        let mut t = Dagmans::new(&n);
        t.list[2].post.count = 1;
        assert!(t.list[2].post.full());
        // U is read: 11 (its PROVISIONER), 12 (SERVICE), and V nested in
        // it: 13 its node, 14 its entry, 15 its node.
        n.service.resize(16, false);
        n.service[12] = true;
        n.subdags[2].members = vec![11, 12, 13, 14, 15];
        n.subdags[2].max_jobs_idle = 3;
        n.subdags[2].provisioner = Some(11);
        n.subdags.push(SubDag {
            node: 13,
            entry: Some(14),
            members: vec![15],
            max_pre: 2,
            ..Default::default()
        });
        t.graft(&n, 2, 11..16, 3);
        assert_eq!(t.list.len(), 5);
        assert_eq!(t.list[2].post.count, 1, "what a DAGMan counts stays");
        assert_eq!((t.list[3].idle.limit, t.list[4].pre.limit), (3, 2));
        let of: Vec<DagmanId> = (11..16).map(|j| t.dagman_of(j)).collect();
        assert_eq!(of, [3, 3, 3, 3, 4]);
        assert_eq!(t.sub(2).services, [12]);
        assert_eq!(t.sub(2).not_over, 4, "11, 13, 14 and 15");
        assert_eq!(t.provisioned_by(11), Some(3));
        assert_eq!(t.of_entry(14), Some(3));
    }

    fn state() -> impl proptest::strategy::Strategy<Value = JobState> {
        use proptest::prelude::*;
        prop_oneof![
            Just(JobState::Waiting),
            Just(JobState::Ready),
            Just(JobState::Staging),
            Just(JobState::Running),
            Just(JobState::Done),
            Just(JobState::Failed),
            Just(JobState::Blocked),
        ]
    }

    proptest::proptest! {
        /// Random moves of the nodes of [`nodes`]: each DAGMan's counts are
        /// a recount of its own nodes' states, by the layout written out
        /// (entries are no DAGMan's nodes).
        #[test]
        fn each_dagmans_counts_are_a_recount_of_its_own_nodes(
            moves in proptest::collection::vec((0..11usize, state()), 0..60),
        ) {
            const OWNER: [Option<DagmanId>; 11] =
                [Some(0), Some(0), None, Some(1), Some(1), Some(1), None, Some(2), Some(1), Some(0), None];
            let n = nodes();
            let mut life = NodeLife::new(vec![0; 11], vec![Vec::new(); 11], false, 0);
            life.dagmans = Dagmans::new(&n);
            life.dagmans.count_nodes(0..11, &life.state);
            life.nodes = n;
            for (job, to) in moves {
                life.move_node(job, to);
                for d in 0..4 {
                    let mine: Vec<JobId> = (0..11).filter(|&j| OWNER[j] == Some(d)).collect();
                    let (c, own) = life.own_counts(d);
                    proptest::prop_assert_eq!(own, mine.len());
                    for s in [JobState::Waiting, JobState::Ready, JobState::Staging, JobState::Running,
                              JobState::Done, JobState::Failed, JobState::Blocked] {
                        let recount = mine.iter().filter(|&&j| life.state[j] == s).count();
                        proptest::prop_assert_eq!(c.of(s), recount, "DAGMan {} {:?}", d, s);
                    }
                }
            }
        }
    }

    #[test]
    fn a_limit_holds_first_come_first_out_once_full() {
        let mut l = Limit {
            limit: 1,
            ..Default::default()
        };
        assert!(!l.hold_or_count(Held::Job(0)));
        assert!(l.hold_or_count(Held::Job(1)) && l.hold_or_count(Held::SubDag(2)));
        assert_eq!(l.next(), None, "still full");
        l.count -= 1;
        assert_eq!(l.next(), Some(Held::Job(1)));
        assert_eq!(l.next(), Some(Held::SubDag(2)));
        assert_eq!(l.next(), None);
        let none = Limit::default();
        assert!(!none.full(), "0 is no limit");
    }
}
