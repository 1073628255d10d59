//! The run's DAG (issue 62, DAGMan as a tree): the workflow a run started
//! with, which it never changes, and the nodes of each sub-DAG read as the
//! run goes, under one job numbering.
//!
//! DAGMan reads a sub-DAG's file only when it submits the sub-DAG's node,
//! after the node's PRE script has run (HTCondor's test
//! `job_dagman_pre_subdag`): from then on that sub-DAG's DAGMan, a child of
//! its node's, has nodes of its own. Here they take the ids after those
//! already known ([`RunDag::graft`]), and the run sees them and the edges
//! that tie them in (the sub-DAG's roots wait for its entry, its node for
//! its leaves) through [`RunDag::job`] and [`RunDag::children`]. The started
//! [`Workflow`] is shared, never written: a started job whose parents or
//! children a graft changed has its run's view kept beside it.

use super::dag::{DagError, File, FileId, Job, JobId, Workflow};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::ops::Range;
use std::sync::Arc;

/// The workflow a run started with and the sub-DAGs it read as it went.
/// See the module docs.
#[derive(Debug, Clone, Default)]
pub struct RunDag {
    started: Arc<Workflow>,
    /// The nodes read as the run went, job `started.jobs.len()` first;
    /// their parents are run ids.
    grafted: Vec<Job>,
    grafted_children: Vec<Vec<JobId>>,
    /// The run's view of started jobs a graft gave a parent or a child.
    changed_jobs: HashMap<JobId, Job>,
    changed_children: HashMap<JobId, Vec<JobId>>,
    /// Every job's name, from the first graft on: each graft's names are
    /// checked against it, and a run that reads none pays nothing for it.
    names: Option<HashSet<String>>,
}

impl From<Arc<Workflow>> for RunDag {
    fn from(started: Arc<Workflow>) -> Self {
        RunDag {
            started,
            ..RunDag::default()
        }
    }
}

impl From<Workflow> for RunDag {
    fn from(started: Workflow) -> Self {
        RunDag::from(Arc::new(started))
    }
}

impl RunDag {
    /// The workflow the run started with, as it started.
    pub fn started(&self) -> &Arc<Workflow> {
        &self.started
    }

    /// Job `j`, as the run sees it (a started job with the parents a graft
    /// gave it).
    #[inline]
    pub fn job(&self, j: JobId) -> &Job {
        let n = self.started.jobs.len();
        if j >= n {
            return &self.grafted[j - n];
        }
        if !self.changed_jobs.is_empty()
            && let Some(job) = self.changed_jobs.get(&j)
        {
            return job;
        }
        &self.started.jobs[j]
    }

    /// Job `j`, if there is one.
    pub fn get(&self, j: JobId) -> Option<&Job> {
        (j < self.job_count()).then(|| self.job(j))
    }

    /// Job `j`'s children, as the run sees them.
    #[inline]
    pub fn children(&self, j: JobId) -> &[JobId] {
        let n = self.started.jobs.len();
        if j >= n {
            return &self.grafted_children[j - n];
        }
        if !self.changed_children.is_empty()
            && let Some(c) = self.changed_children.get(&j)
        {
            return c;
        }
        &self.started.children[j]
    }

    /// How many jobs the run has now.
    pub fn job_count(&self) -> usize {
        self.started.jobs.len() + self.grafted.len()
    }

    /// Every job, in id order.
    pub fn jobs(&self) -> impl ExactSizeIterator<Item = &Job> + '_ {
        (0..self.job_count()).map(|j| self.job(j))
    }

    /// The jobs from `first` on (the ones a site in another process has yet
    /// to be sent).
    pub fn jobs_from(&self, first: JobId) -> Vec<Job> {
        (first..self.job_count())
            .map(|j| self.job(j).clone())
            .collect()
    }

    /// Every file (grafts add none: a `.dag` names no file).
    pub fn files(&self) -> &[File] {
        &self.started.files
    }

    /// The job that writes `file`, if any (None: a workflow input).
    pub fn producer(&self, file: FileId) -> Option<JobId> {
        self.started.producer[file]
    }

    /// Sum of the nominal sizes of a job's inputs.
    pub fn input_bytes(&self, job: JobId) -> u64 {
        let files = self.files();
        self.job(job).inputs.iter().map(|&f| files[f].size).sum()
    }

    /// Sum of the nominal sizes of a job's inputs and outputs: what must be
    /// on its site's disk at once when it ends.
    pub fn footprint(&self, job: JobId) -> u64 {
        let files = self.files();
        let outputs: u64 = self.job(job).outputs.iter().map(|&f| files[f].size).sum();
        self.input_bytes(job) + outputs
    }

    /// Adds `jobs` after the run's: a sub-DAG read as the run goes. Their
    /// parents index `jobs` (0 is the first), which come in a topological
    /// order, and they read and write no file (a `.dag` names none). Returns
    /// the ids they take. Nothing is added when they are refused.
    pub fn graft(&mut self, jobs: Vec<Job>) -> Result<Range<JobId>, DagError> {
        let first = self.job_count();
        let started = &self.started;
        let known = (self.names)
            .get_or_insert_with(|| started.jobs.iter().map(|j| j.name.clone()).collect());
        let mut names = std::collections::HashSet::new();
        for (i, j) in jobs.iter().enumerate() {
            if known.contains(&j.name) || !names.insert(j.name.as_str()) {
                return Err(DagError::DuplicateJob(j.name.clone()));
            }
            if let Some(&p) = j.parents.iter().find(|&&p| p >= i) {
                return Err(DagError::MissingParent {
                    job: j.name.clone(),
                    parent: format!("#{p}"),
                });
            }
            if let Some(&f) = j.inputs.iter().chain(&j.outputs).next() {
                return Err(DagError::MissingFile {
                    job: j.name.clone(),
                    file: format!("#{f} (a sub-DAG read as the run goes moves no data)"),
                });
            }
            if !(j.runtime.is_finite() && j.runtime >= 0.0) {
                return Err(DagError::BadRuntime {
                    job: j.name.clone(),
                    runtime: j.runtime,
                });
            }
        }
        drop(names);
        known.extend(jobs.iter().map(|j| j.name.clone()));
        for mut j in jobs {
            let id = self.job_count();
            for p in &mut j.parents {
                *p += first;
                self.grafted_children[*p - self.started.jobs.len()].push(id);
            }
            self.grafted.push(j);
            self.grafted_children.push(Vec::new());
        }
        Ok(first..self.job_count())
    }

    /// `child` waits for `parent` too (the edge must keep the DAG acyclic:
    /// a grafted sub-DAG's entry before its roots, its leaves before its
    /// node).
    pub fn add_edge(&mut self, parent: JobId, child: JobId) {
        if self.job(child).parents.contains(&parent) {
            return;
        }
        let n = self.started.jobs.len();
        let started = &self.started;
        let job = match child.checked_sub(n) {
            Some(g) => &mut self.grafted[g],
            None => (self.changed_jobs.entry(child)).or_insert_with(|| started.jobs[child].clone()),
        };
        job.parents.push(parent);
        let children = match parent.checked_sub(n) {
            Some(g) => &mut self.grafted_children[g],
            None => (self.changed_children.entry(parent))
                .or_insert_with(|| started.children[parent].clone()),
        };
        children.push(child);
    }

    /// Jobs `first..` of the run, as a site in another process is sent
    /// them: the ones it has already are kept. Only the jobs are kept, not
    /// the edges: a site runs jobs, it does not release them.
    pub fn add_jobs(&mut self, first: JobId, jobs: &[Job]) {
        let known = self.job_count().saturating_sub(first);
        for j in jobs.iter().skip(known) {
            self.grafted.push(j.clone());
            self.grafted_children.push(Vec::new());
        }
    }

    /// The run's DAG as one workflow, for the reports of a run that read
    /// sub-DAGs as it went (a copy; the started workflow is unchanged).
    pub fn flattened(&self) -> Arc<Workflow> {
        if self.grafted.is_empty() && self.changed_jobs.is_empty() {
            return self.started.clone();
        }
        let n = self.job_count();
        Arc::new(Workflow {
            jobs: self.jobs().cloned().collect(),
            files: self.started.files.clone(),
            producer: self.started.producer.clone(),
            children: (0..n).map(|j| self.children(j).to_vec()).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn job(name: String, parents: Vec<JobId>) -> Job {
        Job {
            name,
            runtime: 1.0,
            parents,
            ..Job::default()
        }
    }

    /// A started workflow of `n` jobs, each job's parents among those before.
    fn started(parents: &[Vec<JobId>]) -> Workflow {
        let jobs = (parents.iter().enumerate())
            .map(|(i, p)| {
                let mut p: Vec<JobId> =
                    p.iter().map(|&p| p % i.max(1)).filter(|&p| p < i).collect();
                p.sort_unstable();
                p.dedup();
                job(format!("j{i}"), p)
            })
            .collect();
        Workflow::from_jobs(Vec::new(), jobs).unwrap()
    }

    /// The oracle: the run's DAG kept as plain edge lists, grown in place.
    #[derive(Clone, Default)]
    struct Plain {
        names: Vec<String>,
        parents: Vec<Vec<JobId>>,
    }

    impl Plain {
        fn children(&self, j: JobId) -> Vec<JobId> {
            (0..self.parents.len())
                .filter(|&c| self.parents[c].contains(&j))
                .collect()
        }
    }

    #[derive(Debug, Clone)]
    enum Step {
        /// A graft of jobs with parents (local, taken modulo their index).
        Graft(Vec<Vec<usize>>),
        /// An edge between two jobs (taken modulo the count, lower first).
        Edge(usize, usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            prop::collection::vec(prop::collection::vec(0usize..6, 0..3), 0..5)
                .prop_map(Step::Graft),
            (0usize..40, 0usize..40).prop_map(|(a, b)| Step::Edge(a, b)),
        ]
    }

    proptest! {
        /// Any sequence of grafts and edges: the run's view matches the
        /// plain oracle, the started workflow never changes, and the
        /// flattened copy is the same DAG.
        #[test]
        fn the_run_sees_what_was_grafted_and_the_start_is_unchanged(
            start in prop::collection::vec(prop::collection::vec(0usize..8, 0..3), 0..6),
            steps in prop::collection::vec(step(), 0..8),
        ) {
            let wf = Arc::new(started(&start));
            let before = format!("{:?}", wf);
            let mut run = RunDag::from(wf.clone());
            let mut plain = Plain {
                names: wf.jobs.iter().map(|j| j.name.clone()).collect(),
                parents: wf.jobs.iter().map(|j| j.parents.clone()).collect(),
            };
            let mut grafts = 0;
            for s in steps {
                match s {
                    Step::Graft(ps) => {
                        let first = plain.names.len();
                        let jobs: Vec<Job> = (ps.iter().enumerate())
                            .map(|(i, p)| {
                                let mut p: Vec<JobId> = p.iter().filter(|_| i > 0).map(|&p| p % i.max(1)).collect();
                                p.sort_unstable();
                                p.dedup();
                                job(format!("g{grafts}_{i}"), p)
                            })
                            .collect();
                        grafts += 1;
                        let got = run.graft(jobs.clone()).unwrap();
                        prop_assert_eq!(got, first..first + jobs.len());
                        for j in jobs {
                            plain.names.push(j.name);
                            plain.parents.push(j.parents.iter().map(|&p| p + first).collect());
                        }
                    }
                    Step::Edge(a, b) => {
                        let n = plain.names.len();
                        if n < 2 {
                            continue;
                        }
                        let (a, b) = (a % n, b % n);
                        if a == b {
                            continue;
                        }
                        let (p, c) = (a.min(b), a.max(b));
                        run.add_edge(p, c);
                        if !plain.parents[c].contains(&p) {
                            plain.parents[c].push(p);
                        }
                    }
                }
            }
            prop_assert_eq!(format!("{:?}", wf), before);
            prop_assert_eq!(run.job_count(), plain.names.len());
            let flat = run.flattened();
            for j in 0..plain.names.len() {
                prop_assert_eq!(&run.job(j).name, &plain.names[j]);
                prop_assert_eq!(&run.job(j).parents, &plain.parents[j]);
                let mut c = run.children(j).to_vec();
                c.sort();
                prop_assert_eq!(&c, &plain.children(j));
                prop_assert_eq!(&flat.jobs[j].parents, &plain.parents[j]);
                prop_assert_eq!(&flat.children[j], run.children(j));
            }
        }
    }

    #[test]
    fn a_graft_is_refused_whole_and_changes_nothing() {
        let mut run = RunDag::from(started(&[vec![], vec![0]]));
        let dup = vec![job("x".into(), vec![]), job("j1".into(), vec![0])];
        assert_eq!(run.graft(dup), Err(DagError::DuplicateJob("j1".into())));
        let twice = vec![job("x".into(), vec![]), job("x".into(), vec![])];
        assert_eq!(run.graft(twice), Err(DagError::DuplicateJob("x".into())));
        let forward = vec![job("x".into(), vec![1]), job("y".into(), vec![])];
        assert!(matches!(
            run.graft(forward),
            Err(DagError::MissingParent { .. })
        ));
        let mut reads = job("x".into(), vec![]);
        reads.inputs.push(0);
        assert!(matches!(
            run.graft(vec![reads]),
            Err(DagError::MissingFile { .. })
        ));
        let mut endless = job("x".into(), vec![]);
        endless.runtime = f64::NAN;
        assert!(matches!(
            run.graft(vec![endless]),
            Err(DagError::BadRuntime { .. })
        ));
        assert_eq!(run.job_count(), 2);
        assert_eq!(run.graft(vec![job("x".into(), vec![])]), Ok(2..3));
        assert_eq!(
            run.graft(vec![job("x".into(), vec![])]),
            Err(DagError::DuplicateJob("x".into()))
        );
    }

    #[test]
    fn a_remote_sites_copy_keeps_the_jobs_it_has() {
        let mut run = RunDag::from(started(&[vec![]]));
        run.graft(vec![job("a".into(), vec![]), job("b".into(), vec![0])])
            .unwrap();
        let mut site = RunDag::from(run.started().clone());
        site.add_jobs(1, &run.jobs_from(1)[..1]);
        site.add_jobs(1, &run.jobs_from(1));
        let names: Vec<&str> = site.jobs().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["j0", "a", "b"]);
        assert_eq!(site.job(2).parents, [1]);
    }
}
