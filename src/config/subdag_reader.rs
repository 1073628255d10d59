//! The sub-DAGs a run reads as it goes (`workflow::formats::dagman`'s
//! deferred sub-DAGs): both engines answer the manager's
//! [`Command::ReadSubDag`](crate::core::Command::ReadSubDag) here, so that
//! they read a sub-DAG the same way.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Scenario;
use crate::core::submissions::Submissions;
use crate::core::{Command, Manager, Time, Workflow};
use crate::workflow::formats::dagman::halt::HaltFiles;
use crate::workflow::formats::dagman::{DagmanInfo, NodeScripts};

/// The run's DAG as it grows, and how its sub-DAGs are read.
#[derive(Debug, Clone)]
pub struct SubDagReader {
    info: DagmanInfo,
    run_scripts: bool,
    /// The top DAG's folder, where DAGMan runs.
    top: PathBuf,
    script_dir: PathBuf,
}

/// The DAG a run ended with, once it read sub-DAGs as it went: what its
/// records and the files written at its end name.
#[derive(Debug, Clone)]
pub struct GrownDag {
    /// The run's DAG as one workflow, the sub-DAGs' nodes added: a copy
    /// made at the end, the workflow the run started with unchanged.
    pub workflow: Arc<Workflow>,
    /// The DAG's settings, the sub-DAGs' nodes added.
    pub dagman: DagmanInfo,
    /// Each job's submission, the added ones' too.
    pub submissions: Submissions,
}

impl Scenario {
    /// This scenario with the DAG `grown` as its run left it.
    pub fn grown(&self, grown: &GrownDag) -> Scenario {
        let mut s = self.clone();
        s.workflow = grown.workflow.clone();
        if let Some(src) = s.source.as_mut() {
            src.dagman = Some(grown.dagman.clone());
        }
        s.submissions = grown.submissions.clone();
        s.no_memoize.resize(grown.workflow.jobs.len(), false);
        s
    }

    /// The reader of this run's deferred sub-DAGs, if it has any.
    pub fn subdag_reader(&self) -> Option<SubDagReader> {
        let src = self.source.as_ref()?;
        let info = src.dagman.as_ref()?;
        info.subdags
            .iter()
            .any(|d| d.deferred)
            .then(|| SubDagReader {
                info: info.clone(),
                run_scripts: src.run_scripts,
                top: src.path.parent().unwrap_or(Path::new(".")).to_path_buf(),
                script_dir: self.script_dir(),
            })
    }
}

impl SubDagReader {
    /// Answers `manager`'s [`Command::ReadSubDag`] of sub-DAG `subdag` with
    /// `reader`, the run's ([`SubDagReader::read`]); without one, the
    /// sub-DAG is not read.
    pub fn answer(
        reader: Option<&mut SubDagReader>,
        manager: &mut Manager,
        now: Time,
        subdag: usize,
        out: &mut Vec<Command>,
    ) -> Vec<Option<NodeScripts>> {
        match reader {
            Some(r) => r.read(manager, now, subdag, out),
            None => {
                let why = Err("the run reads no sub-DAG as it goes".to_string());
                if let Err(why) = manager.graft(now, subdag, why, out) {
                    tracing::warn!("{why}");
                }
                Vec::new()
            }
        }
    }

    /// Reads sub-DAG `subdag` at `now` and hands it to `manager`, whose
    /// commands go to `out`; returns the scripts of the jobs it added (none
    /// when it could not be read: the manager then fails the sub-DAG, and
    /// the reason is logged).
    pub fn read(
        &mut self,
        manager: &mut Manager,
        now: Time,
        subdag: usize,
        out: &mut Vec<Command>,
    ) -> Vec<Option<NodeScripts>> {
        let read = self
            .info
            .read_subdag(subdag, &self.top, self.run_scripts, &self.script_dir);
        let (graft, read) = match read {
            Ok(mut r) => {
                for w in &r.warnings {
                    tracing::warn!("{w}");
                }
                (Ok(std::mem::take(&mut r.graft)), Some(r))
            }
            Err(e) => (Err(format!("{}: {}", e.file.display(), e.message)), None),
        };
        match (manager.graft(now, subdag, graft, out), read) {
            (Ok(()), Some(mut r)) => {
                let scripts = std::mem::take(&mut r.scripts);
                self.info.record_subdag(r);
                scripts
            }
            (Err(why), _) => {
                tracing::warn!("a sub-DAG read as the run goes exits 1: {why}");
                Vec::new()
            }
            (Ok(()), None) => Vec::new(),
        }
    }

    /// The DAG file of the sub-DAG of node `node`, one read as the run
    /// went included.
    pub fn subdag_file(&self, node: &str) -> Option<PathBuf> {
        (self.info.subdags.iter())
            .find(|d| d.node == node)
            .map(|d| d.file.clone())
    }

    /// Follows in `halts` the sub-DAG runs `manager` started since last
    /// told ([`HaltFiles::follow`]), with `reader` the run's.
    pub fn follow_halts(halts: &mut HaltFiles, manager: &Manager, reader: Option<&SubDagReader>) {
        let name_of = |k: usize| {
            let node = manager.subdag_node(k)?;
            Some(manager.run_dag().get(node)?.name.clone())
        };
        let read_later = |n: &str| reader.and_then(|r| r.subdag_file(n));
        halts.follow(manager.subdag_spans(), name_of, read_later);
    }

    /// The DAG as `manager` ends the run with it.
    pub fn finish(self, manager: &Manager) -> GrownDag {
        GrownDag {
            workflow: manager.run_dag().flattened(),
            dagman: self.info,
            submissions: manager.submissions().clone(),
        }
    }
}
