//! The workflow DAG: jobs with nominal runtimes, immutable named files with sizes,
//! and parent edges (the grid model of seed 000, section 4: "each job is
//! characterised by a unique identifier and the list of files it needs").
//!
//! Ids are dense indices so that the manager and both engines can keep per-job and
//! per-file state in plain vectors; names are kept for reports and for the pool.

use rustc_hash::FxHashMap as HashMap;

/// Index of a job in [`Workflow::jobs`].
pub type JobId = usize;
/// Index of a file in [`Workflow::files`].
pub type FileId = usize;

/// One immutable, named file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct File {
    /// Logical file name; may hold any character (the pool encodes it).
    pub name: String,
    /// Nominal size in bytes.
    pub size: u64,
}

/// One workflow job.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Job {
    /// Unique job name.
    pub name: String,
    /// Nominal runtime in seconds on a site of speed 1.
    pub runtime: f64,
    /// Files the job reads; all must be on the execution site before it starts.
    pub inputs: Vec<FileId>,
    /// Files the job writes on its execution site.
    pub outputs: Vec<FileId>,
    /// Jobs that must end before this one is ready.
    pub parents: Vec<JobId>,
    /// Where a spatial job sits on its sky grid: (ra, dec, filter) indices.
    /// Spatial-clustering selectors (SPCL) read it; other jobs have none.
    pub position: Option<[u32; 3]>,
    /// The program it runs (Pegasus: namespace::name:version), when known;
    /// horizontal clustering groups jobs of one transformation.
    pub transformation: Option<String>,
    /// Its arguments, when the workflow states them: with the program and
    /// the inputs they make the job's version (seed 003 §5.3).
    pub arguments: Option<String>,
    /// A Pegasus `label` profile, for label clustering.
    pub label: Option<String>,
    /// A clustered job's members, in the order `seqexec` runs them one
    /// after another in its slot (empty: the job is one program).
    pub members: Vec<Member>,
    /// The execution site its workflow file records (a trace's machine),
    /// when known before planning: clustering groups per site, as Pegasus
    /// clusters after its site selection.
    pub site: Option<String>,
}

/// One program of a clustered job (seed 004: Pegasus's `seqexec`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Member {
    /// The original job's name.
    pub name: String,
    /// Its nominal runtime on a site of speed 1.
    pub runtime: f64,
    /// The outputs it writes as it ends (of its cluster's outputs).
    pub outputs: Vec<FileId>,
}

/// Why a set of jobs and files is not a valid workflow.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DagError {
    /// Two jobs share a name.
    #[error("duplicate job name `{0}`")]
    DuplicateJob(String),
    /// Two files share a name.
    #[error("duplicate file name `{0}`")]
    DuplicateFile(String),
    /// A parent reference names no job.
    #[error("job `{job}` names a missing parent `{parent}`")]
    MissingParent {
        /// The child.
        job: String,
        /// The unknown parent name.
        parent: String,
    },
    /// A file reference names no file.
    #[error("job `{job}` names a missing file `{file}`")]
    MissingFile {
        /// The job.
        job: String,
        /// The unknown file name.
        file: String,
    },
    /// The parent relation has a cycle through this job.
    #[error("the workflow has a cycle through job `{0}`")]
    Cycle(String),
    /// Two jobs write the same file: replicas would not be immutable.
    #[error("file `{file}` is written by both `{first}` and `{second}`")]
    TwoWriters {
        /// The file.
        file: String,
        /// First writer.
        first: String,
        /// Second writer.
        second: String,
    },
    /// A job reads a file produced by a job that is not its ancestor.
    #[error("job `{job}` reads `{file}`, written by `{writer}`, which is not among its ancestors")]
    ReadBeforeWrite {
        /// The reader.
        job: String,
        /// The file.
        file: String,
        /// The writer.
        writer: String,
    },
    /// A runtime is negative or not finite.
    #[error("job `{job}` has an invalid runtime {runtime}")]
    BadRuntime {
        /// The job.
        job: String,
        /// The value.
        runtime: f64,
    },
    /// The files' sizes add up to more than [`MAX_WORKFLOW_BYTES`].
    #[error(
        "the files of the workflow add up to more than {} bytes (2^60, an exabyte)",
        MAX_WORKFLOW_BYTES
    )]
    TooLarge,
}

/// The most bytes a workflow's files may add up to (2^60, about an exabyte):
/// far beyond any real workflow, and far enough below `u64::MAX` that no sum
/// of sizes in a run (pools, transfers, records) can overflow.
pub const MAX_WORKFLOW_BYTES: u64 = 1 << 60;

/// A validated workflow: acyclic, every reference resolved, one writer per file.
#[derive(Debug, Clone, Default)]
pub struct Workflow {
    /// Jobs in a topological order (parents before children).
    pub jobs: Vec<Job>,
    /// All files, inputs and outputs.
    pub files: Vec<File>,
    /// For each file, the job that writes it (None: a workflow input).
    pub producer: Vec<Option<JobId>>,
    /// For each job, its children.
    pub children: Vec<Vec<JobId>>,
}

/// A job as a builder or parser writes it: references by name.
#[derive(Debug, Clone, Default)]
pub struct JobSpec {
    /// Unique name.
    pub name: String,
    /// Nominal runtime (s).
    pub runtime: f64,
    /// Input file names.
    pub inputs: Vec<String>,
    /// Output file names.
    pub outputs: Vec<String>,
    /// Parent job names.
    pub parents: Vec<String>,
    /// Sky-grid position (ra, dec, filter), for spatial workflows.
    pub position: Option<[u32; 3]>,
    /// The program it runs, when known.
    pub transformation: Option<String>,
    /// Its arguments, when known.
    pub arguments: Option<String>,
    /// A Pegasus `label` profile, for label clustering.
    pub label: Option<String>,
    /// A clustered job's members in seqexec order: (name, runtime, outputs).
    pub members: Vec<(String, f64, Vec<String>)>,
    /// The execution site its file records, if any.
    pub site: Option<String>,
}

impl Workflow {
    /// Builds and validates a workflow from named jobs and files. Jobs may come in
    /// any order; the result is topologically sorted (stable for ties, so that the
    /// same input always gives the same ids).
    pub fn build(files: Vec<File>, specs: Vec<JobSpec>) -> Result<Workflow, DagError> {
        let mut file_ids = HashMap::with_capacity_and_hasher(files.len(), Default::default());
        for (i, f) in files.iter().enumerate() {
            if file_ids.insert(f.name.as_str(), i).is_some() {
                return Err(DagError::DuplicateFile(f.name.clone()));
            }
        }
        let mut job_ids = HashMap::with_capacity_and_hasher(specs.len(), Default::default());
        for (i, j) in specs.iter().enumerate() {
            if job_ids.insert(j.name.as_str(), i).is_some() {
                return Err(DagError::DuplicateJob(j.name.clone()));
            }
        }
        let resolve_files = |job: &str, names: &[String]| -> Result<Vec<FileId>, DagError> {
            names
                .iter()
                .map(|n| {
                    file_ids
                        .get(n.as_str())
                        .copied()
                        .ok_or_else(|| DagError::MissingFile {
                            job: job.to_string(),
                            file: n.clone(),
                        })
                })
                .collect()
        };
        let mut jobs = Vec::with_capacity(specs.len());
        for j in &specs {
            let mut parents = Vec::with_capacity(j.parents.len());
            for p in &j.parents {
                let id = *job_ids
                    .get(p.as_str())
                    .ok_or_else(|| DagError::MissingParent {
                        job: j.name.clone(),
                        parent: p.clone(),
                    })?;
                if !parents.contains(&id) {
                    parents.push(id);
                }
            }
            jobs.push(Job {
                name: j.name.clone(),
                runtime: j.runtime,
                inputs: resolve_files(&j.name, &j.inputs)?,
                outputs: resolve_files(&j.name, &j.outputs)?,
                parents,
                position: j.position,
                transformation: j.transformation.clone(),
                arguments: j.arguments.clone(),
                label: j.label.clone(),
                members: j
                    .members
                    .iter()
                    .map(|(name, runtime, outputs)| {
                        Ok(Member {
                            name: name.clone(),
                            runtime: *runtime,
                            outputs: resolve_files(&j.name, outputs)?,
                        })
                    })
                    .collect::<Result<_, DagError>>()?,
                site: j.site.clone(),
            });
        }
        drop(file_ids);
        drop(job_ids);
        Self::from_jobs(files, jobs)
    }

    /// Builds and validates a workflow from jobs that already refer to files and
    /// parents by index (generators at scale skip the name lookups). Jobs may
    /// come in any order; the result is topologically sorted, stable for ties.
    pub fn from_jobs(files: Vec<File>, jobs: Vec<Job>) -> Result<Workflow, DagError> {
        let n = jobs.len();
        files
            .iter()
            .try_fold(0u64, |sum, f| sum.checked_add(f.size))
            .filter(|&total| total <= MAX_WORKFLOW_BYTES)
            .ok_or(DagError::TooLarge)?;
        for j in &jobs {
            if !(j.runtime.is_finite() && j.runtime >= 0.0) {
                return Err(DagError::BadRuntime {
                    job: j.name.clone(),
                    runtime: j.runtime,
                });
            }
            if let Some(&f) = j
                .inputs
                .iter()
                .chain(&j.outputs)
                .find(|&&f| f >= files.len())
            {
                return Err(DagError::MissingFile {
                    job: j.name.clone(),
                    file: format!("#{f}"),
                });
            }
            if let Some(&p) = j.parents.iter().find(|&&p| p >= n) {
                return Err(DagError::MissingParent {
                    job: j.name.clone(),
                    parent: format!("#{p}"),
                });
            }
        }
        let order = topo_order(n, |j| &jobs[j].parents)
            .map_err(|j| DagError::Cycle(jobs[j].name.clone()))?;
        let mut new_id = vec![0; n];
        for (new, &old) in order.iter().enumerate() {
            new_id[old] = new;
        }
        let mut slots: Vec<Option<Job>> = jobs.into_iter().map(Some).collect();
        let mut jobs = Vec::with_capacity(n);
        for &old in &order {
            let mut j = slots[old]
                .take()
                .ok_or_else(|| DagError::Cycle(String::new()))?;
            for p in &mut j.parents {
                *p = new_id[*p];
            }
            jobs.push(j);
        }
        let mut producer = vec![None; files.len()];
        for (id, j) in jobs.iter().enumerate() {
            for &f in &j.outputs {
                if let Some(first) = producer[f] {
                    let first: JobId = first;
                    return Err(DagError::TwoWriters {
                        file: files[f].name.clone(),
                        first: jobs[first].name.clone(),
                        second: j.name.clone(),
                    });
                }
                producer[f] = Some(id);
            }
        }
        let mut children = vec![Vec::new(); jobs.len()];
        for (id, j) in jobs.iter().enumerate() {
            for &p in &j.parents {
                children[p].push(id);
            }
        }
        let wf = Workflow {
            jobs,
            files,
            producer,
            children,
        };
        wf.check_reads()?;
        Ok(wf)
    }

    /// A job may only read a derived file if its writer is an ancestor; otherwise
    /// the manager could plan it before the file exists.
    fn check_reads(&self) -> Result<(), DagError> {
        let mut ancestors: Vec<Option<std::collections::HashSet<JobId>>> = vec![None; 0];
        ancestors.resize_with(self.jobs.len(), || None);
        // Each job's parents marked with its id, not searched: jobs with
        // thousands of parents read thousands of files.
        let mut parent_of = vec![usize::MAX; self.jobs.len()];
        for (id, job) in self.jobs.iter().enumerate() {
            job.parents.iter().for_each(|&p| parent_of[p] = id);
            for &f in &job.inputs {
                let Some(writer) = self.producer[f] else {
                    continue;
                };
                if parent_of[writer] == id {
                    continue;
                }
                // Rare path (reads from a grandparent): compute ancestors lazily.
                let set = ancestors[id].get_or_insert_with(|| self.ancestors_of(id));
                if !set.contains(&writer) {
                    return Err(DagError::ReadBeforeWrite {
                        job: job.name.clone(),
                        file: self.files[f].name.clone(),
                        writer: self.jobs[writer].name.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    fn ancestors_of(&self, job: JobId) -> std::collections::HashSet<JobId> {
        let mut seen = std::collections::HashSet::new();
        let mut stack = self.jobs[job].parents.clone();
        while let Some(j) = stack.pop() {
            if seen.insert(j) {
                stack.extend(&self.jobs[j].parents);
            }
        }
        seen
    }

    /// Job `j` as a builder writes it, references by name: the inverse of
    /// [`Workflow::build`], for transforms that add jobs or edges.
    pub fn spec(&self, j: JobId) -> JobSpec {
        let names = |fs: &[FileId]| -> Vec<String> {
            fs.iter().map(|&f| self.files[f].name.clone()).collect()
        };
        let job = &self.jobs[j];
        JobSpec {
            name: job.name.clone(),
            runtime: job.runtime,
            inputs: names(&job.inputs),
            outputs: names(&job.outputs),
            parents: job
                .parents
                .iter()
                .map(|&p| self.jobs[p].name.clone())
                .collect(),
            position: job.position,
            transformation: job.transformation.clone(),
            arguments: job.arguments.clone(),
            label: job.label.clone(),
            members: job
                .members
                .iter()
                .map(|m| (m.name.clone(), m.runtime, names(&m.outputs)))
                .collect(),
            site: job.site.clone(),
        }
    }

    /// Files no job writes: they must be placed on a site before the run.
    pub fn inputs(&self) -> impl Iterator<Item = FileId> + '_ {
        (0..self.files.len()).filter(|&f| self.producer[f].is_none())
    }

    /// The workflow's DAGs in seed 003's sense: its weakly connected
    /// components over parent edges (files alone do not connect them, so
    /// DAGs sharing a batch input stay apart). Returns each job's DAG and
    /// each DAG's jobs in id order; DAGs are numbered by their first job.
    pub fn components(&self) -> (Vec<usize>, Vec<Vec<JobId>>) {
        let n = self.jobs.len();
        let mut root: Vec<usize> = (0..n).collect();
        fn find(root: &mut [usize], mut x: usize) -> usize {
            while root[x] != x {
                root[x] = root[root[x]];
                x = root[x];
            }
            x
        }
        for j in 0..n {
            for &p in &self.jobs[j].parents {
                let (a, b) = (find(&mut root, j), find(&mut root, p));
                root[a.max(b)] = a.min(b);
            }
        }
        let mut dag_of = vec![0; n];
        let mut index = vec![usize::MAX; n];
        let mut dags: Vec<Vec<JobId>> = Vec::new();
        for (j, dag) in dag_of.iter_mut().enumerate() {
            let r = find(&mut root, j);
            if index[r] == usize::MAX {
                index[r] = dags.len();
                dags.push(Vec::new());
            }
            *dag = index[r];
            dags[index[r]].push(j);
        }
        (dag_of, dags)
    }

    /// Sum of the nominal sizes of a job's inputs.
    pub fn input_bytes(&self, job: JobId) -> u64 {
        self.jobs[job]
            .inputs
            .iter()
            .map(|&f| self.files[f].size)
            .sum()
    }

    /// Sum of the nominal sizes of a job's inputs and outputs: what must be
    /// on its site's disk at once when it ends.
    pub fn footprint(&self, job: JobId) -> u64 {
        let outputs: u64 = self.jobs[job]
            .outputs
            .iter()
            .map(|&f| self.files[f].size)
            .sum();
        self.input_bytes(job) + outputs
    }

    /// Number of file references (sum over jobs of their inputs).
    pub fn references(&self) -> usize {
        self.jobs.iter().map(|j| j.inputs.len()).sum()
    }
}

/// The shape of a workflow, as `gridbed workflow stats` prints it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Stats {
    /// Jobs.
    pub jobs: usize,
    /// Parent → child edges.
    pub edges: usize,
    /// Files (inputs and outputs).
    pub files: usize,
    /// Workflow inputs (files no job writes).
    pub input_files: usize,
    /// Nominal bytes of the inputs.
    pub input_bytes: u64,
    /// File references (sum over jobs of their inputs).
    pub references: usize,
    /// References per input file read at least once.
    pub references_per_file: f64,
    /// Sum of runtimes (nominal s).
    pub total_runtime: f64,
    /// Longest runtime path from a root to a leaf (nominal s).
    pub critical_path: f64,
    /// Levels (longest parent chain).
    pub depth: usize,
    /// Most jobs on one level.
    pub width: usize,
}

impl Workflow {
    /// Counts, total work, critical path and width.
    pub fn stats(&self) -> Stats {
        let n = self.jobs.len();
        let mut level = vec![0usize; n];
        let mut finish = vec![0.0f64; n];
        // Jobs are in topological order, parents first.
        for (j, job) in self.jobs.iter().enumerate() {
            let (mut l, mut f) = (0, 0.0f64);
            for &p in &job.parents {
                l = l.max(level[p] + 1);
                f = f.max(finish[p]);
            }
            level[j] = l;
            finish[j] = f + job.runtime;
        }
        let depth = level.iter().max().map_or(0, |m| m + 1);
        let mut per_level = vec![0usize; depth];
        for &l in &level {
            per_level[l] += 1;
        }
        let mut read = vec![false; self.files.len()];
        for j in &self.jobs {
            for &f in &j.inputs {
                read[f] = true;
            }
        }
        let inputs: Vec<FileId> = self.inputs().collect();
        let read_inputs = inputs.iter().filter(|&&f| read[f]).count();
        let references = self.references();
        Stats {
            jobs: n,
            edges: self.jobs.iter().map(|j| j.parents.len()).sum(),
            files: self.files.len(),
            input_files: inputs.len(),
            input_bytes: inputs.iter().map(|&f| self.files[f].size).sum(),
            references,
            references_per_file: if read_inputs == 0 {
                0.0
            } else {
                self.jobs
                    .iter()
                    .flat_map(|j| &j.inputs)
                    .filter(|&&f| self.producer[f].is_none())
                    .count() as f64
                    / read_inputs as f64
            },
            total_runtime: self.jobs.iter().map(|j| j.runtime).sum(),
            critical_path: finish.iter().copied().fold(0.0, f64::max),
            depth,
            width: per_level.into_iter().max().unwrap_or(0),
        }
    }
}

/// Kahn's algorithm, taking the smallest index first so that the order is stable.
/// Returns a job on a cycle when there is one.
fn topo_order<'a>(n: usize, parents: impl Fn(usize) -> &'a [usize]) -> Result<Vec<usize>, usize> {
    // Children as one flat list (compressed rows): no list per job.
    let mut indegree: Vec<usize> = (0..n).map(|c| parents(c).len()).collect();
    let mut start = vec![0usize; n + 1];
    for c in 0..n {
        for &p in parents(c) {
            start[p + 1] += 1;
        }
    }
    for j in 0..n {
        start[j + 1] += start[j];
    }
    let mut fill = start.clone();
    let mut children = vec![0usize; start[n]];
    for c in 0..n {
        for &p in parents(c) {
            children[fill[p]] = c;
            fill[p] += 1;
        }
    }
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = (0..n)
        .filter(|&i| indegree[i] == 0)
        .map(std::cmp::Reverse)
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some(std::cmp::Reverse(j)) = ready.pop() {
        order.push(j);
        for &c in &children[start[j]..start[j + 1]] {
            indegree[c] -= 1;
            if indegree[c] == 0 {
                ready.push(std::cmp::Reverse(c));
            }
        }
    }
    if order.len() == n {
        Ok(order)
    } else {
        Err((0..n).find(|&i| indegree[i] > 0).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str) -> File {
        File {
            name: name.into(),
            size: 10,
        }
    }
    fn j(name: &str, inputs: &[&str], outputs: &[&str], parents: &[&str]) -> JobSpec {
        JobSpec {
            name: name.into(),
            runtime: 1.0,
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
            parents: parents.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn sorts_parents_first_and_links_children() {
        let wf = Workflow::build(
            vec![f("a"), f("b")],
            vec![
                j("child", &["b"], &[], &["root"]),
                j("root", &["a"], &["b"], &[]),
            ],
        )
        .unwrap();
        assert_eq!(wf.jobs[0].name, "root");
        assert_eq!(wf.jobs[1].parents, vec![0]);
        assert_eq!(wf.children[0], vec![1]);
        assert_eq!(wf.producer, vec![None, Some(0)]);
        assert_eq!(wf.inputs().collect::<Vec<_>>(), vec![0]);
    }

    #[test]
    fn rejects_cycles_missing_parents_and_bad_reads() {
        let cyc = Workflow::build(
            vec![],
            vec![j("a", &[], &[], &["b"]), j("b", &[], &[], &["a"])],
        );
        assert!(matches!(cyc, Err(DagError::Cycle(_))));
        let missing = Workflow::build(vec![], vec![j("a", &[], &[], &["ghost"])]);
        assert!(matches!(missing, Err(DagError::MissingParent { .. })));
        let early = Workflow::build(
            vec![f("x")],
            vec![j("w", &[], &["x"], &[]), j("r", &["x"], &[], &[])],
        );
        assert!(matches!(early, Err(DagError::ReadBeforeWrite { .. })));
        let two = Workflow::build(
            vec![f("x")],
            vec![j("w", &[], &["x"], &[]), j("v", &[], &["x"], &[])],
        );
        assert!(matches!(two, Err(DagError::TwoWriters { .. })));
    }

    #[test]
    fn stats_of_a_diamond() {
        let mut specs = vec![
            j("a", &["in"], &["x"], &[]),
            j("b", &["x"], &[], &["a"]),
            j("c", &["x", "in"], &[], &["a"]),
            j("d", &[], &[], &["b", "c"]),
        ];
        specs[2].runtime = 5.0;
        let wf = Workflow::build(vec![f("in"), f("x")], specs).unwrap();
        let s = wf.stats();
        assert_eq!((s.jobs, s.edges, s.depth, s.width), (4, 4, 3, 2));
        assert_eq!((s.input_files, s.references), (1, 4));
        assert_eq!(s.references_per_file, 2.0);
        assert_eq!(s.critical_path, 7.0);
        assert_eq!(s.total_runtime, 8.0);
    }

    #[test]
    fn grandparent_reads_are_allowed() {
        let wf = Workflow::build(
            vec![f("x")],
            vec![
                j("a", &[], &["x"], &[]),
                j("b", &[], &[], &["a"]),
                j("c", &["x"], &[], &["b"]),
            ],
        );
        assert!(wf.is_ok());
    }
}
