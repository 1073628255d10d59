//! Workflows of many identical DAGs, the shapes of seed 003 §9: the BLAST
//! workflow (figure 6, table 2: `blastall`, 22 minutes, reads the sequence,
//! the ~3.9 GB protein database and its executable and writes a 2 MB `.blast`
//! file that `javawrap`, 2 s, turns into CSV and binary results), the fan
//! DAG of figures 7, 8 and 10 (A writes one pipeline file to each of `n`
//! jobs B1…Bn, each writes one to C; figure 7's is `n = 2`), and the chain
//! of figure 9 (`depth` jobs, each reading its parent's pipeline file).
//!
//! "Batch I/O" is one file read by the first job of every DAG; "pipeline
//! I/O" the files passed inside a DAG (Thain et al.'s terms, which the
//! paper uses). Executables are files too (§5.1): every job reads its
//! program's, `bin/<program>`, which a machine that ran the program caches.
//!
//! Each DAG's jobs take the DAG's number as their argument (the sequence or
//! parameter it processes), so the A jobs of two fans, which read the same
//! files, are different runs. `distinct = k` makes DAG `d` a resubmission of
//! DAG `d mod k` (same arguments and inputs, its own file names): the
//! repeated experiments that memoization (§5.3) serves.

use serde::Deserialize;

use crate::core::{DagError, File, JobSpec, Workflow};
use crate::units::Size;

/// A DAG's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Shape {
    /// blastall → javawrap (figure 6).
    Blast,
    /// A → B1…Bn → C (figures 7, 8, 10).
    Fan,
    /// J1 → J2 → … → Jd (figure 9).
    Chain,
}

/// Parameters of the `dags` generator.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Dags {
    /// The generator's name as the testbed writes it (`generator = "dags"`).
    pub generator: String,
    /// The DAG's shape.
    pub shape: Shape,
    /// DAGs in the workflow (50 in the paper's tables 3–6).
    pub dags: usize,
    /// Jobs B1…Bn of a fan.
    pub branching: usize,
    /// Jobs in a chain.
    pub depth: usize,
    /// Runtime of each job (s; 600 by default); BLAST: blastall's (1,320 s
    /// by default; javawrap's is 2 s).
    pub runtime: Option<f64>,
    /// Size of each pipeline file (100 MB; BLAST 2 MB).
    pub pipeline: Option<Size>,
    /// Size of the batch input every DAG's first job reads (100 MB; BLAST's
    /// database 3.88 GB).
    pub batch: Option<Size>,
    /// Size of each program's executable (1 MB; BLAST 10 MB).
    pub executable: Option<Size>,
    /// Different DAGs (default: all): DAG `d` repeats DAG `d mod distinct`.
    pub distinct: Option<usize>,
}

impl Default for Dags {
    fn default() -> Self {
        Dags {
            generator: "dags".into(),
            shape: Shape::Fan,
            dags: 50,
            branching: 2,
            depth: 3,
            runtime: None,
            pipeline: None,
            batch: None,
            executable: None,
            distinct: None,
        }
    }
}

impl Dags {
    /// BLAST as table 2 ran it: `dags` sequences, blastall 22 minutes,
    /// 2 MB `.blast` files, the database and executables 3.9 GB in all.
    pub fn blast(dags: usize) -> Self {
        Dags {
            shape: Shape::Blast,
            dags,
            ..Dags::default()
        }
    }

    /// The shape's default: BLAST's (table 2) or the other DAGs' (tables 3-6).
    fn or_default<T>(&self, value: Option<T>, others: T, blast: T) -> T {
        value.unwrap_or(if self.shape == Shape::Blast {
            blast
        } else {
            others
        })
    }

    /// Each job's runtime (s).
    pub fn runtime(&self) -> f64 {
        self.or_default(self.runtime, 600.0, 1320.0)
    }

    /// Each pipeline file's size.
    pub fn pipeline(&self) -> u64 {
        self.or_default(self.pipeline.map(|s| s.0), 100_000_000, 2_000_000)
    }

    /// The batch input's size.
    pub fn batch(&self) -> u64 {
        self.or_default(self.batch.map(|s| s.0), 100_000_000, 3_880_000_000)
    }

    /// Each executable's size.
    pub fn executable(&self) -> u64 {
        self.or_default(self.executable.map(|s| s.0), 1_000_000, 10_000_000)
    }

    /// Checks the parameters; the error names the field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.dags == 0 {
            return Err(("dags", "expected at least 1 DAG".into()));
        }
        if self.shape == Shape::Fan && self.branching == 0 {
            return Err(("branching", "expected at least 1 job B".into()));
        }
        if self.distinct.is_some_and(|k| k == 0 || k > self.dags) {
            return Err(("distinct", format!("expected 1 to {} (dags)", self.dags)));
        }
        if self.shape == Shape::Chain && self.depth == 0 {
            return Err(("depth", "expected at least 1 job".into()));
        }
        if !(self.runtime().is_finite() && self.runtime() >= 0.0) {
            return Err(("runtime", "expected seconds ≥ 0".into()));
        }
        let per_dag = match self.shape {
            Shape::Blast => 2.0,
            Shape::Fan => self.branching as f64 + 2.0,
            Shape::Chain => self.depth as f64,
        };
        let jobs = per_dag * self.dags as f64;
        // Each job reads its executable and at most its parents' files.
        let references = match self.shape {
            Shape::Fan => jobs * 2.0 + self.branching as f64 * self.dags as f64,
            _ => jobs * 3.0,
        };
        super::bounded("dags", jobs, references)
    }

    /// Builds the workflow.
    pub fn generate(&self) -> Result<Workflow, DagError> {
        let mut w = Builder::default();
        let batch = w.file("batch/input".into(), self.batch());
        let distinct = self.distinct.unwrap_or(self.dags).max(1);
        for d in 0..self.dags {
            w.argument = d % distinct;
            match self.shape {
                Shape::Blast => {
                    let seq = format!("seq/{:04}", w.argument);
                    if d < distinct {
                        w.file(seq.clone(), 10_000);
                    }
                    let blast = w.file(format!("blast/{d:04}.blast"), self.pipeline());
                    let csv = w.file(format!("out/{d:04}.csv"), 100_000);
                    let bin = w.file(format!("out/{d:04}.bin"), 100_000);
                    let a = w.job(
                        self,
                        "blastall",
                        d,
                        self.runtime(),
                        vec![seq, batch.clone()],
                        vec![blast.clone()],
                        vec![],
                    );
                    w.job(
                        self,
                        "javawrap",
                        d,
                        2.0,
                        vec![blast],
                        vec![csv, bin],
                        vec![a],
                    );
                }
                Shape::Fan => {
                    let n = self.branching;
                    let f: Vec<String> = (1..=n)
                        .map(|i| w.file(format!("F{i}/{d:04}"), self.pipeline()))
                        .collect();
                    let g: Vec<String> = (1..=n)
                        .map(|i| w.file(format!("G{i}/{d:04}"), self.pipeline()))
                        .collect();
                    let out = w.file(format!("out/{d:04}"), self.pipeline());
                    let a = w.job(
                        self,
                        "A",
                        d,
                        self.runtime(),
                        vec![batch.clone()],
                        f.clone(),
                        vec![],
                    );
                    let bs: Vec<String> = (0..n)
                        .map(|i| {
                            let name = format!("B{}", i + 1);
                            w.job(
                                self,
                                &name,
                                d,
                                self.runtime(),
                                vec![f[i].clone()],
                                vec![g[i].clone()],
                                vec![a.clone()],
                            )
                        })
                        .collect();
                    w.job(self, "C", d, self.runtime(), g, vec![out], bs);
                }
                Shape::Chain => {
                    let mut input = batch.clone();
                    let mut parent: Vec<String> = Vec::new();
                    for k in 1..=self.depth {
                        let out = w.file(format!("P{k}/{d:04}"), self.pipeline());
                        let name = format!("J{k}");
                        let j = w.job(
                            self,
                            &name,
                            d,
                            self.runtime(),
                            vec![input],
                            vec![out.clone()],
                            parent,
                        );
                        parent = vec![j];
                        input = out;
                    }
                }
            }
        }
        Workflow::build(w.files, w.jobs)
    }
}

#[derive(Default)]
struct Builder {
    files: Vec<File>,
    jobs: Vec<JobSpec>,
    /// The argument of the DAG being built.
    argument: usize,
}

impl Builder {
    fn file(&mut self, name: String, size: u64) -> String {
        self.files.push(File {
            name: name.clone(),
            size,
        });
        name
    }

    /// Adds program `program`'s job of DAG `d`, reading `inputs` and its
    /// executable (added once per program); returns the job's name.
    #[allow(clippy::too_many_arguments)]
    fn job(
        &mut self,
        spec: &Dags,
        program: &str,
        d: usize,
        runtime: f64,
        mut inputs: Vec<String>,
        outputs: Vec<String>,
        parents: Vec<String>,
    ) -> String {
        let exe = format!("bin/{program}");
        if !self.files.iter().any(|f| f.name == exe) {
            self.file(exe.clone(), spec.executable());
        }
        inputs.push(exe);
        let name = format!("{program}-{d:04}");
        self.jobs.push(JobSpec {
            name: name.clone(),
            runtime,
            inputs,
            outputs,
            parents,
            transformation: Some(program.into()),
            arguments: Some(self.argument.to_string()),
            ..Default::default()
        });
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(wf: &Workflow, j: usize) -> (String, Vec<String>, Vec<String>) {
        let job = &wf.jobs[j];
        let files = |v: &[usize]| v.iter().map(|&f| wf.files[f].name.clone()).collect();
        (job.name.clone(), files(&job.inputs), files(&job.outputs))
    }

    #[test]
    fn blast_is_blastall_then_javawrap_with_the_database_as_batch_input() {
        let wf = Dags::blast(25).generate().unwrap();
        assert_eq!(wf.jobs.len(), 50);
        let (name, inputs, outputs) = names(&wf, 0);
        assert_eq!(name, "blastall-0000");
        assert_eq!(inputs, ["seq/0000", "batch/input", "bin/blastall"]);
        assert_eq!(outputs, ["blast/0000.blast"]);
        let jw = wf
            .jobs
            .iter()
            .position(|j| j.name == "javawrap-0000")
            .unwrap();
        assert_eq!(wf.jobs[jw].parents, [0]);
        assert_eq!(wf.jobs[jw].runtime, 2.0);
        // Everything a blastall needs besides its sequence: ~3.9 GB.
        let batch: u64 = wf.jobs[0].inputs[1..]
            .iter()
            .map(|&f| wf.files[f].size)
            .sum();
        assert_eq!(batch, 3_890_000_000);
    }

    #[test]
    fn a_fan_of_n_passes_one_pipeline_file_down_each_branch() {
        let spec = Dags {
            branching: 4,
            dags: 3,
            ..Dags::default()
        };
        let wf = spec.generate().unwrap();
        assert_eq!(wf.jobs.len(), 3 * 6);
        let c = wf.jobs.iter().find(|j| j.name == "C-0002").unwrap();
        assert_eq!(c.parents.len(), 4);
        let a = wf.jobs.iter().position(|j| j.name == "A-0002").unwrap();
        assert_eq!(wf.children[a].len(), 4);
        assert_eq!(wf.jobs[a].outputs.len(), 4);
        let stats = wf.stats();
        assert_eq!(stats.depth, 3);
    }

    #[test]
    fn distinct_k_makes_dag_d_a_resubmission_of_dag_d_mod_k() {
        let spec = |distinct| Dags {
            shape: Shape::Blast,
            dags: 5,
            distinct,
            ..Dags::default()
        };
        let wf = spec(Some(2)).generate().unwrap();
        let by = |n: &str| wf.jobs.iter().position(|j| j.name == n).unwrap();
        let (_, inputs, _) = names(&wf, by("blastall-0004"));
        assert_eq!(inputs[0], "seq/0000");
        assert_eq!(wf.jobs[by("blastall-0004")].arguments.as_deref(), Some("0"));
        assert_eq!(wf.jobs[by("javawrap-0003")].arguments.as_deref(), Some("1"));
        assert_eq!(
            wf.files
                .iter()
                .filter(|f| f.name.starts_with("seq/"))
                .count(),
            2
        );
        assert_eq!(spec(Some(0)).validate().unwrap_err().0, "distinct");
        assert_eq!(spec(Some(6)).validate().unwrap_err().0, "distinct");
    }

    #[test]
    fn a_chain_of_depth_d_has_no_branching() {
        let spec = Dags {
            shape: Shape::Chain,
            depth: 5,
            dags: 2,
            ..Dags::default()
        };
        let wf = spec.generate().unwrap();
        assert_eq!(wf.jobs.len(), 10);
        assert!(wf.children.iter().all(|c| c.len() <= 1));
        assert_eq!(wf.stats().depth, 5);
        assert_eq!(
            Dags {
                dags: 0,
                ..Dags::default()
            }
            .validate()
            .unwrap_err()
            .0,
            "dags"
        );
    }
}
