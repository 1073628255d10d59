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
//! sha256 of its program, its arguments and its inputs' versions in the
//! order it reads them; where the workflow states no arguments, the names
//! of its outputs stand for them (two jobs that write different files are
//! then never taken for one run). An output's version is the sha256 of its
//! job's version and its place among the job's outputs, so two runs of one
//! version write outputs of the same versions. A changed input changes the
//! version of every job downstream of it, and of no other.
//!
//! [`Twins`] groups the jobs of one run by version: a job whose twin ended
//! earlier in the run need not run either.

use sha2::{Digest, Sha256};

use std::collections::HashMap;

use super::{FileId, JobId, Workflow};

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
            h.update(b"gridbed job v2\0");
            h.update(program(wf, j).as_bytes());
            h.update([0]);
            match &job.arguments {
                Some(args) => {
                    h.update([1]);
                    h.update(args.as_bytes());
                }
                // What it writes stands for its arguments: without them,
                // the A jobs of seed 003's fan DAGs read the same files but
                // are not one run.
                None => {
                    h.update([2]);
                    for &o in &job.outputs {
                        h.update(wf.files[o].name.as_bytes());
                        h.update([0]);
                    }
                }
            }
            h.update([0]);
            for &f in &job.inputs {
                h.update(files[f]);
            }
            jobs[j] = h.finalize().into();
            for (k, &o) in job.outputs.iter().enumerate() {
                let mut h = Sha256::new();
                h.update(jobs[j]);
                h.update((k as u64).to_le_bytes());
                files[o] = h.finalize().into();
            }
        }
        Versions { files, jobs }
    }
}

/// The jobs of one run grouped by version (seed 003 §5.3 within a run):
/// jobs of one group are runs of one program on the same inputs with the
/// same arguments, and write outputs of the same sizes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Twins {
    /// Per job: its group, or `None` when no other job shares its version.
    pub group: Vec<Option<u32>>,
    /// Per file: the file whose bytes it holds (itself unless it is the
    /// output of a twin: then the first twin's output in its place).
    pub content: Vec<FileId>,
}

impl Twins {
    /// Groups `wf`'s jobs by `versions`; jobs that `excluded` marks (never
    /// memoized) are in no group.
    pub fn of(wf: &Workflow, versions: &Versions, excluded: &[bool]) -> Twins {
        let mut first: HashMap<(&Version, Vec<u64>), JobId> = HashMap::new();
        let mut group = vec![None; wf.jobs.len()];
        let mut content: Vec<FileId> = (0..wf.files.len()).collect();
        let mut groups = 0u32;
        for (j, job) in wf.jobs.iter().enumerate() {
            if excluded.get(j).copied().unwrap_or(false) {
                continue;
            }
            let sizes = job.outputs.iter().map(|&o| wf.files[o].size).collect();
            let e = *first.entry((&versions.jobs[j], sizes)).or_insert(j);
            if e == j {
                continue;
            }
            let g = *group[e].get_or_insert_with(|| {
                groups += 1;
                groups - 1
            });
            group[j] = Some(g);
            for (&o, &oe) in job.outputs.iter().zip(&wf.jobs[e].outputs) {
                content[o] = content[oe];
            }
        }
        Twins { group, content }
    }

    /// Whether any two jobs share a version.
    pub fn any(&self) -> bool {
        self.group.iter().any(Option::is_some)
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

    /// in → a0, a1, a2 (program p, arguments 0, 1, 0) → b0, b2 (program q,
    /// argument 0) reading a0's and a2's outputs; `args` off: none.
    fn repeated(args: bool) -> Workflow {
        let files = ["in", "x0", "x1", "x2", "y0", "y2"]
            .iter()
            .map(|n| File {
                name: n.to_string(),
                size: 1,
            })
            .collect();
        let job = |name: &str, program: &str, arg: &str, input: &str, out: &str| JobSpec {
            name: name.into(),
            runtime: 1.0,
            inputs: vec![input.into()],
            outputs: vec![out.into()],
            transformation: Some(program.into()),
            arguments: args.then(|| arg.into()),
            parents: if input == "in" {
                vec![]
            } else {
                vec![format!("a{}", &input[1..])]
            },
            ..Default::default()
        };
        let jobs = vec![
            job("a0", "p", "0", "in", "x0"),
            job("a1", "p", "1", "in", "x1"),
            job("a2", "p", "0", "in", "x2"),
            job("b0", "q", "0", "x0", "y0"),
            job("b2", "q", "0", "x2", "y2"),
        ];
        Workflow::build(files, jobs).unwrap()
    }

    #[test]
    fn twins_are_runs_of_one_program_on_the_same_inputs_with_the_same_arguments() {
        let wf = repeated(true);
        let v = Versions::of(&wf, 1);
        let t = Twins::of(&wf, &v, &[]);
        let job = |n: &str| wf.jobs.iter().position(|j| j.name == n).unwrap();
        let file = |n: &str| wf.files.iter().position(|f| f.name == n).unwrap();
        let g = |n: &str| t.group[job(n)];
        assert!(g("a0").is_some() && g("b0").is_some());
        assert_eq!(g("a0"), g("a2"));
        // Its input is a twin's output: a twin too.
        assert_eq!(g("b0"), g("b2"));
        assert_ne!(g("a0"), g("b0"));
        assert_eq!(g("a1"), None, "other arguments");
        // A twin's outputs hold the first twin's bytes; the rest their own.
        assert_eq!(t.content[file("y2")], file("y0"));
        assert_eq!(t.content[file("x0")], file("x0"));
        assert_eq!(t.content[file("in")], file("in"));
        // Opted out: in no group.
        let mut excluded = vec![false; wf.jobs.len()];
        excluded[job("a2")] = true;
        assert_eq!(Twins::of(&wf, &v, &excluded).group[job("a2")], None);
        // Without arguments, the outputs' names stand for them: no twins.
        let w = repeated(false);
        assert!(!Twins::of(&w, &Versions::of(&w, 1), &[]).any());
    }
}
