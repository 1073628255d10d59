//! The pipelined workflow of seed 002 §5 (its figures 5 and 6): `width`
//! independent pipelines of `levels` programs. Program P1 reads the one shared
//! file of dataset D1 and its own file of D2; P2 reads P1's output, the D1 file
//! and its own file of D4; P3 reads P2's output. In general a job of level `l`
//! reads its parent's output, the shared file if `l` is in `shared_levels`, and a
//! private input of its level's dataset if `l` is in `input_levels`; it writes
//! one output. The paper's table 2 gives 100 jobs a level, runtimes 300/120/60 s
//! and 1 MB files: those are the defaults.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

use crate::core::{DagError, File, JobSpec, Workflow};
use crate::units::Size;

/// Parameters of the pipeline generator.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Pipeline {
    /// The generator's name as the testbed writes it (`generator = "…"`).
    pub generator: String,
    /// Programs per pipeline.
    pub levels: usize,
    /// Pipelines (jobs per level).
    pub width: usize,
    /// Nominal runtime per level (s); the last value repeats for deeper levels.
    #[serde(deserialize_with = "super::one_or_many")]
    pub runtime: Vec<f64>,
    /// Size of every file of a level; the last value repeats.
    #[serde(deserialize_with = "super::one_or_many")]
    pub file_size: Vec<Size>,
    /// Levels that read the single shared file (dataset D1).
    pub shared_levels: Vec<usize>,
    /// Levels that read a private input file of their own dataset.
    pub input_levels: Vec<usize>,
    /// Relative runtime jitter, uniform in ±jitter (0 = exact runtimes).
    pub jitter: f64,
}

impl Default for Pipeline {
    fn default() -> Self {
        Pipeline {
            generator: "pipeline".into(),
            levels: 3,
            width: 100,
            runtime: vec![300.0, 120.0, 60.0],
            file_size: vec![Size(1_000_000)],
            shared_levels: vec![0, 1],
            input_levels: vec![0, 1],
            jitter: 0.0,
        }
    }
}

fn at<T: Copy>(v: &[T], i: usize) -> T {
    v[i.min(v.len() - 1)]
}

impl Pipeline {
    /// Checks the parameters; the error names the field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.levels == 0 {
            return Err(("levels", "expected at least 1 level".into()));
        }
        if self.width == 0 {
            return Err(("width", "expected at least 1 pipeline".into()));
        }
        if self.runtime.is_empty() || self.runtime.iter().any(|r| !(r.is_finite() && *r >= 0.0)) {
            return Err(("runtime", "expected one or more runtimes ≥ 0 s".into()));
        }
        if self.file_size.is_empty() {
            return Err(("file_size", "expected one or more sizes".into()));
        }
        if !(0.0..1.0).contains(&self.jitter) {
            return Err(("jitter", "expected a fraction in [0, 1)".into()));
        }
        // At most three inputs a job: its parent's, the shared and its own.
        let jobs = self.levels as f64 * self.width as f64;
        super::bounded("width", jobs, 3.0 * jobs)
    }

    /// Builds the workflow.
    pub fn generate(&self, seed: u64) -> Result<Workflow, DagError> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut files = vec![File {
            name: "D1/shared".into(),
            size: at(&self.file_size, 0).0,
        }];
        let mut jobs = Vec::with_capacity(self.levels * self.width);
        for w in 0..self.width {
            for l in 0..self.levels {
                let size = at(&self.file_size, l).0;
                let mut inputs = Vec::new();
                if l > 0 {
                    inputs.push(format!("P{l}/out-{w:04}"));
                }
                if self.shared_levels.contains(&l) {
                    inputs.push("D1/shared".into());
                }
                if self.input_levels.contains(&l) {
                    let name = format!("L{}/in-{w:04}", l + 1);
                    files.push(File {
                        name: name.clone(),
                        size,
                    });
                    inputs.push(name);
                }
                let out = format!("P{}/out-{w:04}", l + 1);
                files.push(File {
                    name: out.clone(),
                    size,
                });
                jobs.push(JobSpec {
                    name: format!("P{}-{w:04}", l + 1),
                    runtime: super::jittered(at(&self.runtime, l), self.jitter, &mut rng),
                    inputs,
                    outputs: vec![out],
                    parents: if l > 0 {
                        vec![format!("P{l}-{w:04}")]
                    } else {
                        vec![]
                    },
                    position: None,
                    transformation: Some(format!("P{}", l + 1)),
                    arguments: None,
                    label: None,
                    members: Vec::new(),
                    site: None,
                });
            }
        }
        Workflow::build(files, jobs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_shape() {
        let wf = Pipeline::default().generate(1).unwrap();
        assert_eq!(wf.jobs.len(), 300);
        // D1 + 100 of D2 + 100 of D4 inputs; 300 outputs.
        assert_eq!(wf.inputs().count(), 201);
        assert_eq!(wf.files.len(), 501);
        let p2 = wf.jobs.iter().find(|j| j.name == "P2-0007").unwrap();
        assert_eq!(p2.inputs.len(), 3);
        assert_eq!(p2.runtime, 120.0);
        let p3 = wf.jobs.iter().find(|j| j.name == "P3-0007").unwrap();
        assert_eq!(p3.inputs.len(), 1);
    }

    #[test]
    fn jitter_is_seeded() {
        let p = Pipeline {
            jitter: 0.2,
            width: 5,
            ..Default::default()
        };
        let a: Vec<f64> = p
            .generate(3)
            .unwrap()
            .jobs
            .iter()
            .map(|j| j.runtime)
            .collect();
        let b: Vec<f64> = p
            .generate(3)
            .unwrap()
            .jobs
            .iter()
            .map(|j| j.runtime)
            .collect();
        let c: Vec<f64> = p
            .generate(4)
            .unwrap()
            .jobs
            .iter()
            .map(|j| j.runtime)
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
