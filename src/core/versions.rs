//! Versions of files and jobs, seed 003 §5.3 and §8.1: "the versions of
//! input and executable files are determined by a checksum … the version
//! number of a job and its output files is defined by the versions of its
//! executable and input files". A job whose version ran before need not run
//! again (memoization).
//!
//! An input's checksum is the sha256 of what determines its bytes in
//! gridbed: the run's seed, its name and its nominal size (the live engine
//! writes exactly the bytes these give; hashing terabytes of nominal bytes
//! for a simulated run would tell nothing more). A job's version is the
//! sha256 of its program, its inputs' versions in the order it reads them
//! and the names of its outputs (which stand for its arguments); an output's is the sha256 of its job's version and its name. So
//! a changed input changes the version of every job downstream of it, and
//! of no other.

use sha2::{Digest, Sha256};

use super::Workflow;

/// A version: a sha256 digest.
pub type Version = [u8; 32];

/// The version of every file and job of a workflow.
#[derive(Debug, Clone, PartialEq)]
pub struct Versions {
    /// Per file.
    pub files: Vec<Version>,
    /// Per job.
    pub jobs: Vec<Version>,
}

impl Versions {
    /// Computes the versions of `wf`'s files and jobs for a run seeded
    /// `seed`.
    pub fn of(wf: &Workflow, seed: u64) -> Versions {
        let mut files = vec![[0u8; 32]; wf.files.len()];
        for f in wf.inputs() {
            let mut h = Sha256::new();
            h.update(b"gridbed input v1\0");
            h.update(seed.to_le_bytes());
            h.update(wf.files[f].size.to_le_bytes());
            h.update(wf.files[f].name.as_bytes());
            files[f] = h.finalize().into();
        }
        let mut jobs = vec![[0u8; 32]; wf.jobs.len()];
        // Jobs come parents first, so their inputs' versions are known.
        for (j, job) in wf.jobs.iter().enumerate() {
            let mut h = Sha256::new();
            h.update(b"gridbed job v1\0");
            h.update(program(wf, j).as_bytes());
            h.update([0]);
            for &f in &job.inputs {
                h.update(files[f]);
            }
            // What it writes stands for its arguments: the 50 A jobs of
            // seed 003's fan DAGs read the same files but are not one run.
            h.update([1]);
            for &o in &job.outputs {
                h.update(wf.files[o].name.as_bytes());
                h.update([0]);
            }
            jobs[j] = h.finalize().into();
            for &o in &job.outputs {
                let mut h = Sha256::new();
                h.update(jobs[j]);
                h.update(wf.files[o].name.as_bytes());
                files[o] = h.finalize().into();
            }
        }
        Versions { files, jobs }
    }
}

/// A job's program: its transformation, else its name.
pub fn program(wf: &Workflow, job: usize) -> &str {
    let j = &wf.jobs[job];
    j.transformation.as_deref().unwrap_or(&j.name)
}

/// A version as the database keeps it: lowercase hex.
pub fn hex(v: &Version) -> String {
    v.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{File, JobSpec};

    /// in0 → a → b, in1 → c; `size` is in0's size.
    fn wf(size: u64) -> Workflow {
        let files = ["in0", "in1", "x", "y", "z"]
            .iter()
            .map(|n| File {
                name: n.to_string(),
                size: if *n == "in0" { size } else { 1 },
            })
            .collect();
        let job = |name: &str, inputs: &[&str], outputs: &[&str], parents: &[&str]| JobSpec {
            name: name.into(),
            runtime: 1.0,
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
            parents: parents.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let jobs = vec![
            job("a", &["in0"], &["x"], &[]),
            job("b", &["x"], &["y"], &["a"]),
            job("c", &["in1"], &["z"], &[]),
        ];
        Workflow::build(files, jobs).unwrap()
    }

    #[test]
    fn a_changed_input_changes_exactly_the_jobs_downstream_of_it() {
        let (v1, v2) = (Versions::of(&wf(10), 1), Versions::of(&wf(11), 1));
        assert_eq!(Versions::of(&wf(10), 1), v1, "versions are a function");
        let changed: Vec<bool> = (0..3).map(|j| v1.jobs[j] != v2.jobs[j]).collect();
        assert_eq!(changed, [true, true, false]);
        // Another seed writes other bytes: every job changes.
        let v3 = Versions::of(&wf(10), 2);
        assert!((0..3).all(|j| v1.jobs[j] != v3.jobs[j]));
        assert_eq!(hex(&v1.jobs[0]).len(), 64);
    }
}
