//! The auxiliary jobs Pegasus's planner adds to a workflow it runs (Pegasus
//! 5 user guide, "Data Transfers" and "Transfer Refiners"): a `create_dir`
//! job that makes the workflow's scratch directory before anything runs;
//! per level, the workflow inputs that level reads first, staged by
//! `pegasus.stagein.clusters` stage-in jobs (default 2), each a parent of
//! every job reading its files; per level, the final outputs staged out by
//! `pegasus.stageout.clusters` stage-out jobs (default 2) after their
//! producers; and a registration job after each stage-out job.
//!
//! They are the WMS's own jobs: each takes a slot and passes through DAGMan,
//! the negotiator and the schedd like any other, for `runtime` nominal
//! seconds; the bytes they would move are moved by gridbed's prescripts as
//! before (the planner's jobs add their cost to the run, not their data).
//! The WfCommons traces of Pegasus runs leave them out; a replay that adds
//! them back predicts what they cost.

use crate::core::{DagError, File, JobSpec, Workflow};

/// What the planner adds (`[planner]` in a testbed).
#[derive(Debug, Clone, PartialEq)]
pub struct Planner {
    /// A `create_dir` job before every other.
    pub create_dir: bool,
    /// `pegasus.stagein.clusters`: stage-in jobs per level (0: none).
    pub stagein_clusters: usize,
    /// `pegasus.stageout.clusters`: stage-out jobs per level (0: none).
    pub stageout_clusters: usize,
    /// A registration job after each stage-out job.
    pub register: bool,
    /// Nominal seconds each of them runs.
    pub runtime: f64,
}

impl Default for Planner {
    fn default() -> Self {
        Planner {
            create_dir: true,
            stagein_clusters: 2,
            stageout_clusters: 2,
            register: true,
            runtime: 1.0,
        }
    }
}

/// `items` dealt round-robin into at most `n` groups (none for `n` = 0).
fn deal<T: Clone>(items: &[T], n: usize) -> Vec<Vec<T>> {
    let k = n.min(items.len());
    if k == 0 {
        return Vec::new();
    }
    let mut groups = vec![Vec::new(); k];
    for (i, x) in items.iter().enumerate() {
        groups[i % k].push(x.clone());
    }
    groups
}

/// `wf` with the planner's auxiliary jobs.
pub fn apply(wf: &Workflow, p: &Planner) -> Result<Workflow, DagError> {
    let level = super::clustering::levels(wf);
    let depth = level.iter().max().map_or(0, |l| l + 1);
    let name = |j: usize| wf.jobs[j].name.clone();
    let mut specs: Vec<JobSpec> = (0..wf.jobs.len()).map(|j| wf.spec(j)).collect();
    let aux = |name: String, program: &str, parents: Vec<String>| JobSpec {
        name,
        runtime: p.runtime,
        parents,
        transformation: Some(program.to_string()),
        ..Default::default()
    };
    let create_dir = p.create_dir.then(|| "create_dir_0".to_string());
    if let Some(cd) = &create_dir {
        for s in specs.iter_mut().filter(|s| s.parents.is_empty()) {
            s.parents.push(cd.clone());
        }
        specs.push(aux(cd.clone(), "pegasus::dirmanager", vec![]));
    }
    // Stage-in: each workflow input with the level that reads it first.
    let mut first_read = vec![usize::MAX; wf.files.len()];
    for (j, job) in wf.jobs.iter().enumerate() {
        for &f in &job.inputs {
            if wf.producer[f].is_none() {
                first_read[f] = first_read[f].min(level[j]);
            }
        }
    }
    let mut by_level: Vec<Vec<usize>> = vec![Vec::new(); depth];
    for (f, &l) in first_read.iter().enumerate() {
        if l != usize::MAX {
            by_level[l].push(f);
        }
    }
    let mut stage_in_of = vec![None; wf.files.len()];
    for (l, files) in by_level.iter().enumerate() {
        for (i, group) in deal(files, p.stagein_clusters).into_iter().enumerate() {
            let job = format!("stage_in_{l}_{i}");
            for &f in &group {
                stage_in_of[f] = Some(job.clone());
            }
            specs.push(aux(
                job,
                "pegasus::transfer",
                create_dir.iter().cloned().collect(),
            ));
        }
    }
    for (s, job) in specs.iter_mut().zip(&wf.jobs) {
        for &f in &job.inputs {
            if let Some(si) = &stage_in_of[f]
                && !s.parents.contains(si)
            {
                s.parents.push(si.clone());
            }
        }
    }
    // Stage-out and registration: the final outputs (read by no job), per
    // producing level.
    let mut read = vec![false; wf.files.len()];
    for job in &wf.jobs {
        for &f in &job.inputs {
            read[f] = true;
        }
    }
    let mut finals: Vec<Vec<usize>> = vec![Vec::new(); depth];
    for (f, (&producer, &read)) in wf.producer.iter().zip(&read).enumerate() {
        if let Some(j) = producer.filter(|_| !read) {
            finals[level[j]].push(f);
        }
    }
    for (l, files) in finals.iter().enumerate() {
        for (i, group) in deal(files, p.stageout_clusters).into_iter().enumerate() {
            let mut parents: Vec<String> = group
                .iter()
                .filter_map(|&f| wf.producer[f].map(name))
                .collect();
            parents.sort();
            parents.dedup();
            let out = format!("stage_out_{l}_{i}");
            specs.push(aux(out.clone(), "pegasus::transfer", parents));
            if p.register {
                specs.push(aux(
                    format!("register_{l}_{i}"),
                    "pegasus::rc-client",
                    vec![out],
                ));
            }
        }
    }
    let files: Vec<File> = wf.files.clone();
    Workflow::build(files, specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// a reads in1, in2 and writes m; b reads m and in3, writes out.
    fn chain() -> Workflow {
        let files = ["in1", "in2", "in3", "m", "out"]
            .iter()
            .map(|n| File {
                name: n.to_string(),
                size: 1,
            })
            .collect();
        let job = |name: &str, inputs: &[&str], outputs: &[&str], parents: &[&str]| JobSpec {
            name: name.into(),
            runtime: 10.0,
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
            parents: parents.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        Workflow::build(
            files,
            vec![
                job("a", &["in1", "in2"], &["m"], &[]),
                job("b", &["m", "in3"], &["out"], &["a"]),
            ],
        )
        .unwrap()
    }

    fn parents(wf: &Workflow, name: &str) -> Vec<String> {
        let j = wf.jobs.iter().find(|j| j.name == name).unwrap();
        let mut v: Vec<String> = j.parents.iter().map(|&p| wf.jobs[p].name.clone()).collect();
        v.sort();
        v
    }

    #[test]
    fn the_planner_adds_create_dir_stage_in_and_out_and_registration() {
        let wf = apply(&chain(), &Planner::default()).unwrap();
        let names: Vec<&str> = wf.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(wf.jobs.len(), 2 + 1 + 3 + 2, "{names:?}");
        // Level 0 reads in1 and in2 first (two stage-in clusters), level 1
        // reads in3 first (one); `out` is the only final output.
        assert_eq!(
            parents(&wf, "a"),
            ["create_dir_0", "stage_in_0_0", "stage_in_0_1"]
        );
        assert_eq!(parents(&wf, "b"), ["a", "stage_in_1_0"]);
        assert_eq!(parents(&wf, "stage_in_1_0"), ["create_dir_0"]);
        assert_eq!(parents(&wf, "stage_out_1_0"), ["b"]);
        assert_eq!(parents(&wf, "register_1_0"), ["stage_out_1_0"]);
        assert!(wf.jobs.iter().all(|j| !j.name.starts_with("stage_out_0")));
        // One stage-in cluster takes both files; nothing but the chain.
        let bare = Planner {
            create_dir: false,
            stagein_clusters: 1,
            stageout_clusters: 0,
            register: false,
            runtime: 3.0,
        };
        let wf = apply(&chain(), &bare).unwrap();
        assert_eq!(wf.jobs.len(), 4);
        assert_eq!(parents(&wf, "a"), ["stage_in_0_0"]);
        let si = wf.jobs.iter().find(|j| j.name == "stage_in_0_0").unwrap();
        assert_eq!(si.runtime, 3.0);
    }
}
