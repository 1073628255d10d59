//! A sub-DAG read as the run goes (HTCondor manual, "SUBDAG EXTERNAL": the
//! sub-DAG's `.dag` need not exist before its node's PRE script runs;
//! HTCondor's test `job_dagman_pre_subdag`). DAGMan reads a sub-DAG's
//! file when it submits the node's job, after the PRE script. When the
//! testbed runs the DAG's scripts, a sub-DAG node with a PRE script is read
//! then too ([`SubDagInfo::deferred`]): the manager asks for it
//! (`Command::ReadSubDag`), the engine reads it here and hands the manager
//! a [`Graft`], and the sub-DAG's nodes are recorded in the [`DagmanInfo`]
//! so that the files written at the end (rescue, JOBSTATE_LOG, status)
//! name them.

use std::path::{Path, PathBuf};

use super::rescue::{self, Rescue};
use super::{DagmanInfo, FormatError, NodeScripts, SubDagInfo, compose};
use crate::core::nodes::Graft;
use crate::core::{JobSpec, Workflow};
use crate::workflow::formats::SubDagReading;

/// How a deferred sub-DAG's file is read: as the `.dag` was.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubDagReads {
    /// A node's runtime where the sidecar gives none (a `.dag` gives none).
    pub default_runtime: f64,
    /// The rescue DAG sub-DAGs start from ([`Rescue::for_subdags`]).
    pub rescue: Rescue,
    /// What the sidecar says of the nodes of sub-DAGs read as the run goes,
    /// by their names in the run (`S+X`), kept until they are read.
    pub sidecar: std::collections::BTreeMap<String, SidecarNode>,
    /// Which of their sub-DAGs are read as their nodes are submitted in
    /// turn: as the DAG's.
    pub reading: SubDagReading,
}

/// What a sidecar says of a node of a sub-DAG read as the run goes (which
/// reads and writes no file).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SidecarNode {
    /// Its runtime, if given.
    pub runtime: Option<f64>,
    /// Its job's exit on each attempt, the last repeating (none: 0).
    pub exit: Vec<i32>,
}

/// A deferred sub-DAG, read.
#[derive(Debug, Clone)]
pub struct ReadSubDag {
    /// Its nodes, for the manager.
    pub graft: Graft,
    /// Their scripts, indexed as the graft's jobs (empty when the scripts
    /// do not run).
    pub scripts: Vec<Option<NodeScripts>>,
    /// What reading it found worth telling the user.
    pub warnings: Vec<String>,
    /// What the DAG's record gains.
    record: Record,
}

impl DagmanInfo {
    /// Every category's name, by the manager's category id: sorted, then
    /// those of sub-DAGs read as the run went, in the order they came.
    pub fn categories(&self) -> Vec<String> {
        match &self.category_order {
            Some(order) => order.clone(),
            None => category_names(&self.nodes, &self.max_jobs),
        }
    }

    /// Reads the deferred sub-DAG `k` (its node's PRE script has run); once
    /// the run takes its nodes, [`DagmanInfo::record_subdag`] records them. `top` is the top DAG's folder, where
    /// DAGMan runs; `run_scripts`: the nodes' scripts run (relative
    /// executables are taken from `script_dir`). A DAGMan of it
    /// without a CONFIG saying otherwise has the order `k` was given (the
    /// testbed's `submit_depth_first`).
    pub fn read_subdag(
        &self,
        k: usize,
        top: &Path,
        run_scripts: bool,
        script_dir: &Path,
    ) -> Result<ReadSubDag, FormatError> {
        let sub =
            (self.subdags.get(k).filter(|d| d.deferred).cloned()).ok_or_else(|| FormatError {
                file: PathBuf::new(),
                message: format!("sub-DAG #{k} is not one read as the run goes"),
            })?;
        let node_dir = (self.nodes.iter())
            .find(|n| n.name == sub.node)
            .and_then(|n| n.dir.clone());
        let depth = sub.node.matches('+').count();
        let depth_first = sub.submit_depth_first.unwrap_or(false);
        let reads = &self.subdag_reads;
        let (mut flat, read) = compose::read_deferred(
            &sub,
            node_dir.as_deref().map(Path::new),
            top,
            depth,
            &reads.rescue,
            reads.reading,
        )?;
        // Its DAGMan, started from rescue N, renames its later ones.
        if let Rescue::From(n) = reads.rescue {
            rescue::rename_after(&sub.file, n).map_err(|e| FormatError {
                file: sub.file.clone(),
                message: format!("cannot rename the rescue DAGs after number {n}: {e}"),
            })?;
        }
        // What the sidecar says of its nodes.
        let mut warnings = std::mem::take(&mut flat.warnings);
        let mut runtimes = vec![None; flat.nodes.len()];
        let prefix = format!("{}+", sub.node);
        // (Those of a sub-DAG in it, read as the run goes too, wait.)
        let later: Vec<String> = (flat.subdags.iter().filter(|d| d.deferred))
            .map(|d| format!("{}+", d.node))
            .collect();
        for (name, said) in reads.sidecar.range(prefix.clone()..) {
            if !name.starts_with(&prefix) {
                break;
            }
            if later.iter().any(|p| name.starts_with(p.as_str())) {
                continue;
            }
            match flat.nodes.iter().position(|n| &n.name == name) {
                Some(i) => {
                    runtimes[i] = said.runtime;
                    flat.nodes[i].exits = said.exit.clone();
                }
                None => warnings.push(format!(
                    "the sidecar's job `{name}` is no node of sub-DAG {} as read now; ignored",
                    sub.node
                )),
            }
        }
        let jobs = (flat.nodes.iter().zip(&flat.parents).zip(runtimes))
            .map(|((n, ps), runtime)| JobSpec {
                name: n.name.clone(),
                runtime: match n.noop {
                    true => 0.0,
                    false => runtime.unwrap_or(reads.default_runtime),
                },
                parents: ps.clone(),
                transformation: Some(n.submit.clone()).filter(|s| !s.is_empty()),
                ..Default::default()
            })
            .collect();
        let wf = Workflow::build(Vec::new(), jobs).map_err(|e| FormatError {
            file: sub.file.clone(),
            message: e.to_string(),
        })?;
        for d in &mut flat.subdags {
            d.submit_depth_first.get_or_insert(depth_first);
        }
        // Its categories: the run's, then its own new ones.
        let mut categories = self.categories();
        let known = categories.len();
        for c in category_names(&flat.nodes, &flat.max_jobs) {
            if !categories.contains(&c) {
                categories.push(c);
            }
        }
        let local = DagmanInfo {
            nodes: std::mem::take(&mut flat.nodes),
            max_jobs: std::mem::take(&mut flat.max_jobs),
            subdags: std::mem::take(&mut flat.subdags),
            weak_edges: std::mem::take(&mut flat.weak).into_iter().collect(),
            env_get: self.env_get.clone(),
            env_set: self.env_set.clone(),
            category_order: Some(categories.clone()),
            run_jobs: self.run_jobs,
            prohibit_multi_jobs: read.prohibit_multi_jobs,
            // Its DAGMan's priority: its node's, or its own default.
            default_priority: match self.effective_priority(&sub.node) {
                Some(p) if p != 0 => Some(p),
                _ => read.default_priority,
            },
            ..Default::default()
        };
        let mut nodes = local.node_settings(&wf, run_scripts);
        nodes.category_limits.drain(..known);
        nodes.max_post = read.max_post.unwrap_or(0);
        nodes.always_run_post = read.always_run_post.unwrap_or(false);
        nodes.max_jobs_idle = read.max_jobs_idle.unwrap_or(0);
        nodes.max_jobs_submitted = read.max_jobs_submitted.unwrap_or(0);
        let scripts = match run_scripts {
            true => local.scripts(&wf, script_dir, Some(&read.node)),
            false => Vec::new(),
        };
        let graft = Graft {
            max_pre: read.max_pre.unwrap_or(0),
            depth_first: read.submit_depth_first.unwrap_or(depth_first),
            jobs: wf.jobs,
            nodes,
        };
        Ok(ReadSubDag {
            graft,
            scripts,
            warnings,
            record: Record {
                k,
                sub: read,
                local,
            },
        })
    }

    /// Records `read`'s nodes as the DAG's, once the run took them: the
    /// files written at the end name them.
    pub fn record_subdag(&mut self, read: ReadSubDag) {
        let Record { k, sub, local } = read.record;
        for outer in &mut self.subdags {
            if outer.members.contains(&sub.node) {
                outer.members.extend(sub.members.iter().cloned());
            }
        }
        self.subdags[k] = sub;
        self.subdags.extend(local.subdags);
        self.nodes.extend(local.nodes);
        for (c, n) in local.max_jobs {
            // A global (`+`) category keeps the limit the run has.
            self.max_jobs.entry(c).or_insert(n);
        }
        self.weak_edges.extend(local.weak_edges);
        self.category_order = local.category_order;
    }
}

/// What reading a sub-DAG adds to the DAG's record.
#[derive(Debug, Clone)]
struct Record {
    /// The sub-DAG read.
    k: usize,
    /// Its record, members filled in.
    sub: SubDagInfo,
    /// Its nodes, nested sub-DAGs, categories (the run's with its own).
    local: DagmanInfo,
}

/// The names of the categories `nodes` and `max_jobs` name, sorted.
fn category_names(
    nodes: &[super::NodeInfo],
    max_jobs: &std::collections::BTreeMap<String, usize>,
) -> Vec<String> {
    let names: std::collections::BTreeSet<&String> = (nodes.iter())
        .filter_map(|n| n.category.as_ref())
        .chain(max_jobs.keys())
        .collect();
    names.into_iter().cloned().collect()
}
