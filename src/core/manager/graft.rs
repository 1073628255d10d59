//! A sub-DAG whose `.dag` its node's PRE script writes (HTCondor's test
//! `job_dagman_pre_subdag`): DAGMan reads a sub-DAG's file only when it
//! submits the node's job, after the PRE script has run. A deferred
//! sub-DAG ([`SubDag::deferred`]) has no nodes until then. Once its entry's
//! PRE script has run, the manager asks the engine to read the file
//! ([`Command::ReadSubDag`]), and [`Manager::graft`] adds its nodes to the
//! run's DAG ([`RunDag`], the workflow the run started with unchanged) as
//! jobs after the DAG's: its roots wait for the entry, its node for its
//! leaves, and it runs as any sub-DAG does (`subdag.rs`). A file that
//! cannot be read is a sub-DAG whose DAGMan exits 1 at once, as
//! `condor_dagman` does: the node's POST script sees `$RETURN` 1, and its
//! `RETRY` runs the PRE script again and reads the file again.

use super::*;
use crate::core::nodes::Graft;

impl Manager {
    /// The no-op `job` ended its PRE script: if it is the entry of a
    /// deferred sub-DAG, its DAG is read now and the entry waits for
    /// [`Manager::graft`]. Returns whether it was.
    pub(super) fn read_deferred(&mut self, job: JobId, out: &mut Vec<Command>) -> bool {
        let Some(node) = self.dag.node_of_entry(job) else {
            return false;
        };
        let Some(k) = self.dag.dagmans.of_node(node) else {
            return false;
        };
        if !self.dag.nodes.subdags[k].deferred {
            return false;
        }
        out.push(Command::ReadSubDag { subdag: k, node });
        true
    }

    /// The engine's answer to [`Command::ReadSubDag`] for sub-DAG `subdag`
    /// at nominal time `now`: its DAG, or why it could not be read (the
    /// sub-DAG then exits 1 without running). The sub-DAG's entry then ends
    /// and its DAG starts. Returns why its nodes were not added, if they
    /// were not (also when the read is stale: the DAG stopped meanwhile).
    pub fn graft(
        &mut self,
        now: Time,
        subdag: usize,
        graft: Result<Graft, String>,
        out: &mut Vec<Command>,
    ) -> Result<(), String> {
        if now > self.now {
            self.now = now;
        }
        let k = subdag;
        let entry = (self.dag.nodes.subdags.get(k))
            .filter(|d| d.deferred)
            .and_then(|d| d.entry)
            .ok_or_else(|| format!("sub-DAG #{k} is not one read as the run goes"))?;
        if self.dag.state[entry] != JobState::Running {
            return Err("the DAG stopped before its sub-DAG was read".into());
        }
        let read = graft.and_then(|g| self.add_graft(k, g));
        if read.is_err() {
            // Its DAGMan exits 1 before running a node.
            self.dag.dagmans.unreadable(k);
        }
        let site = self.grid.site_of[entry];
        self.job_ended(entry, site, None, out);
        self.pump(out);
        read
    }

    /// Adds `g`'s nodes to the run as sub-DAG `k`'s.
    fn add_graft(&mut self, k: usize, g: Graft) -> Result<(), String> {
        if self.grid.memo.is_some() {
            return Err("a sub-DAG read as the run goes cannot be memoized".into());
        }
        let d = &self.dag.nodes.subdags[k];
        let (node, entry) = (d.node, d.entry.ok_or("a deferred sub-DAG has an entry")?);
        let local = &g.nodes;
        let m = g.jobs.len();
        if local.retry.len() != m || local.category.iter().flatten().any(|&c| {
            c >= self.dag.nodes.category_limits.len() + local.category_limits.len()
        }) {
            return Err("the sub-DAG's node settings do not match its nodes".into());
        }
        // As the DAG's flattened sub-DAGs (`compose.rs`): the roots wait for
        // the entry, the node for the leaves and the FINAL node; FINAL,
        // SERVICE and PROVISIONER nodes are neither leaves nor (FINAL)
        // roots.
        let finals: Vec<JobId> = (local.final_node.iter())
            .chain(local.subdags.iter().filter_map(|d| d.final_node.as_ref()))
            .copied()
            .collect();
        let provisioners: Vec<JobId> = (local.provisioner.iter())
            .chain(local.subdags.iter().filter_map(|d| d.provisioner.as_ref()))
            .copied()
            .collect();
        let mut has_child = vec![false; m];
        for j in &g.jobs {
            for &p in &j.parents {
                if let Some(h) = has_child.get_mut(p) {
                    *h = true;
                }
            }
        }
        let roots: Vec<JobId> = (0..m)
            .filter(|&j| g.jobs[j].parents.is_empty() && !finals.contains(&j))
            .collect();
        let leaves: Vec<JobId> = (0..m)
            .filter(|&j| {
                !has_child[j]
                    && !finals.contains(&j)
                    && !provisioners.contains(&j)
                    && !local.service.get(j).copied().unwrap_or(false)
            })
            .chain(local.final_node)
            .collect();
        let longest = g.jobs.iter().map(|j| j.runtime).fold(0.0, f64::max);
        // The run's DAG grows in place where the engine holds no other copy.
        let wf = Arc::make_mut(&mut self.wf);
        let new = wf.graft(g.jobs).map_err(|e| e.to_string())?;
        let n = new.start;
        for &r in &roots {
            wf.add_edge(entry, n + r);
        }
        for &l in &leaves {
            wf.add_edge(n + l, node);
        }
        self.grow(m, node);
        let horizon = stall_horizon(&self.settings, &self.sites, longest);
        self.grid.stall.horizon = self.grid.stall.horizon.max(horizon);
        // The nodes' settings, and the sub-DAG's own.
        let from = self.dag.nodes.subdags.len();
        self.dag.nodes.append(local, n);
        let d = &mut self.dag.nodes.subdags[k];
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
        let mut outer = self.dag.dagmans.innermost(node);
        while let Some(o) = outer {
            let d = &mut self.dag.nodes.subdags[o];
            d.members.extend(new.clone());
            outer = self.dag.dagmans.innermost(d.node);
        }
        self.dag.throttle.grow(&local.category_limits);
        self.dag.dagmans.graft(&self.dag.nodes, k, new.clone(), from);
        let dag = &mut self.dag;
        dag.dagmans.count_nodes(new.clone(), &dag.state);
        self.dag.graft_services(new.clone());
        (self.dag.ready).extend_priorities(&self.dag.nodes.priority, n);
        let top_depth_first = self.settings.submit_depth_first;
        self.dag.graft_lanes(k, new.clone(), from, top_depth_first);
        // Each waits for its parents (the entry among them, still running)
        // and the node for its leaves too.
        for j in new.clone() {
            self.dag.missing_parents[j] = self.wf.job(j).parents.len();
        }
        self.dag.missing_parents[node] += leaves.len();
        // DONE nodes (of the sub-DAG's rescue) are done at once, parents
        // first.
        for j in new {
            if self.dag.nodes.done[j] && self.dag.state[j] == JobState::Waiting {
                self.complete_without_running(j);
            }
        }
        Ok(())
    }

    /// Every per-job record grows by `m` waiting jobs, of `node`'s
    /// submission and submit machine: each room's, then the records.
    fn grow(&mut self, m: usize, node: JobId) {
        let n = self.dag.state.len() + m;
        self.dag.grow(n, node);
        self.grid.grow(n, node);
        self.records.jobs.resize(n, JobRecord::default());
        let first = self.job_dirty.len();
        self.job_dirty.resize(n, false);
        if self.changes.is_some() {
            for j in first..n {
                self.mark_changed(j);
            }
        }
    }
}
