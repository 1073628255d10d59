//! The Epigenomics workflow (USC Epigenome Center's pipeline run with
//! Pegasus; Juve et al., "Characterizing and profiling scientific
//! workflows", 2013), at any size up to millions of tasks: the shape that
//! WfCommons' `EpigenomicsRecipe` imitates, built directly, so that a
//! million-task workflow costs a second instead of a Python recipe's hours.
//!
//! Each of `lanes` sequencing lanes is split (`fastqSplit`) into `chunks`
//! chunks; each chunk goes through `filterContams` → `sol2sanger` →
//! `fast2bfq` → `map` (which also reads the one reference genome every map
//! shares); a lane's maps are merged (`mapMerge`), the lanes' merges merged
//! again (`mapMerge`), indexed (`maqIndex`) and piled up (`pileup`): nine
//! levels, `lanes × (4 × chunks + 2) + 3` tasks. Runtimes and file sizes are
//! the means of the 10,000-task instance that WfCommons 1.6's recipe writes
//! (`benches/wfcommons_gen.py`), each runtime drawn uniformly within
//! ±`jitter` of its mean (seeded) and kept to the millisecond, as traces
//! record it.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

use crate::core::{DagError, File, FileId, Job, JobId, Workflow};

/// Parameters of the epigenomics generator.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Epigenomics {
    /// The generator's name as the testbed writes it (`generator = "…"`).
    pub generator: String,
    /// How many tasks, at least: the lanes are as many as it takes (the
    /// last lane complete, so up to one lane more).
    pub tasks: usize,
    /// Chunks a lane is split into.
    pub chunks: usize,
    /// Relative runtime jitter, uniform in ±jitter.
    pub jitter: f64,
}

impl Default for Epigenomics {
    fn default() -> Self {
        Epigenomics {
            generator: "epigenomics".into(),
            tasks: 10_000,
            chunks: 32,
            jitter: 0.5,
        }
    }
}

/// One program of the pipeline: its name, mean runtime (s) and the size of
/// the file it writes (bytes), from WfCommons' 10,000-task instance.
struct Program {
    name: &'static str,
    runtime: f64,
    output: u64,
}

const FASTQ_SPLIT: Program = Program {
    name: "fastqSplit",
    runtime: 878.5,
    output: 10_564_257,
};
const FILTER_CONTAMS: Program = Program {
    name: "filterContams",
    runtime: 19.4,
    output: 5_228_805,
};
const SOL2SANGER: Program = Program {
    name: "sol2sanger",
    runtime: 11.3,
    output: 7_082_006,
};
const FAST2BFQ: Program = Program {
    name: "fast2bfq",
    runtime: 4.3,
    output: 1_112_920,
};
const MAP: Program = Program {
    name: "map",
    runtime: 31.1,
    output: 883_561,
};
const MAP_MERGE: Program = Program {
    name: "mapMerge",
    runtime: 16.3,
    output: 206_117_983,
};
const MAQ_INDEX: Program = Program {
    name: "maqIndex",
    runtime: 53.0,
    output: 53_510_957,
};
const PILEUP: Program = Program {
    name: "pileup",
    runtime: 87.4,
    output: 86_669_861,
};
/// A lane's reads, as sequenced (the workflow's inputs).
const LANE_INPUT: u64 = 340_098_903;
/// The reference genome every `map` reads.
const REFERENCE: u64 = 68_513_583;

impl Epigenomics {
    /// Checks the parameters; the error names the field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.chunks == 0 {
            return Err(("chunks", "expected at least 1 chunk a lane".into()));
        }
        if !(0.0..1.0).contains(&self.jitter) {
            return Err(("jitter", "expected a fraction in [0, 1)".into()));
        }
        let jobs = self.lanes() as f64 * (4.0 * self.chunks as f64 + 2.0) + 3.0;
        // A map reads two files, a merge each of its parts' outputs.
        super::bounded("tasks", jobs, 2.0 * jobs)
    }

    /// Lanes enough for [`Epigenomics::tasks`].
    pub fn lanes(&self) -> usize {
        let per_lane = 4 * self.chunks + 2;
        self.tasks.saturating_sub(3).div_ceil(per_lane).max(1)
    }

    /// Builds the workflow.
    pub fn generate(&self, seed: u64) -> Result<Workflow, DagError> {
        let (lanes, chunks) = (self.lanes(), self.chunks);
        let n = lanes * (4 * chunks + 2) + 3;
        let mut b = Builder {
            files: Vec::with_capacity(n + lanes * chunks + lanes + 1),
            jobs: Vec::with_capacity(n),
            rng: ChaCha8Rng::seed_from_u64(seed),
            jitter: self.jitter,
        };
        let reference = b.file("reference/chr21.bfa".into(), REFERENCE);
        let mut merges = Vec::with_capacity(lanes);
        let mut maps = Vec::with_capacity(chunks);
        for l in 0..lanes {
            let lane = format!("{l:06}");
            let reads = b.file(format!("lane_{lane}.sfq"), LANE_INPUT);
            let (split, parts) = b.job(&FASTQ_SPLIT, &lane, vec![reads], vec![], chunks);
            maps.clear();
            for (c, &part) in parts.iter().enumerate() {
                let id = format!("{lane}_{c:04}");
                let (mut job, mut out) = (split, part);
                for p in [&FILTER_CONTAMS, &SOL2SANGER, &FAST2BFQ] {
                    let (j, o) = b.job(p, &id, vec![out], vec![job], 1);
                    (job, out) = (j, o[0]);
                }
                let (j, o) = b.job(&MAP, &id, vec![out, reference], vec![job], 1);
                maps.push((j, o[0]));
            }
            let (parents, inputs): (Vec<JobId>, Vec<FileId>) = maps.iter().copied().unzip();
            let (j, o) = b.job(&MAP_MERGE, &lane, inputs, parents, 1);
            merges.push((j, o[0]));
        }
        let (parents, inputs): (Vec<JobId>, Vec<FileId>) = merges.into_iter().unzip();
        let (all, all_map) = b.job(&MAP_MERGE, "all", inputs, parents, 1);
        let (index, index_file) = b.job(&MAQ_INDEX, "all", all_map.clone(), vec![all], 1);
        b.job(
            &PILEUP,
            "all",
            vec![index_file[0], all_map[0]],
            vec![index],
            1,
        );
        Workflow::from_jobs(b.files, b.jobs)
    }
}

/// The workflow as it is built: files and jobs by index.
struct Builder {
    files: Vec<File>,
    jobs: Vec<Job>,
    rng: ChaCha8Rng,
    jitter: f64,
}

impl Builder {
    fn file(&mut self, name: String, size: u64) -> FileId {
        self.files.push(File { name, size });
        self.files.len() - 1
    }

    /// A run of `p` called `{p}_{id}`, writing `outputs` files of its
    /// output size: the job and its outputs.
    fn job(
        &mut self,
        p: &Program,
        id: &str,
        inputs: Vec<FileId>,
        parents: Vec<JobId>,
        outputs: usize,
    ) -> (JobId, Vec<FileId>) {
        let name = format!("{}_{id}", p.name);
        let outputs: Vec<FileId> = match outputs {
            1 => vec![self.file(format!("{name}.out"), p.output)],
            k => (0..k)
                .map(|c| self.file(format!("{name}.{c:04}.out"), p.output))
                .collect(),
        };
        self.jobs.push(Job {
            name,
            // Milliseconds, as kickstart records them in real traces.
            runtime: (super::jittered(p.runtime, self.jitter, &mut self.rng) * 1e3).round() / 1e3,
            inputs,
            outputs: outputs.clone(),
            parents,
            position: None,
            transformation: Some(p.name.to_string()),
            arguments: None,
            label: None,
            members: Vec::new(),
            site: None,
        });
        (self.jobs.len() - 1, outputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_thousand_tasks_make_epigenomics_nine_levels_deep() {
        let g = Epigenomics::default();
        let wf = g.generate(7).unwrap();
        // 77 lanes of 32 chunks: 77 × 130 + 3.
        assert_eq!(g.lanes(), 77);
        assert_eq!(wf.jobs.len(), 10_013);
        let count = |p: &str| {
            wf.jobs
                .iter()
                .filter(|j| j.transformation.as_deref() == Some(p))
                .count()
        };
        for (p, n) in [
            ("fastqSplit", 77),
            ("filterContams", 77 * 32),
            ("sol2sanger", 77 * 32),
            ("fast2bfq", 77 * 32),
            ("map", 77 * 32),
            ("mapMerge", 78),
            ("maqIndex", 1),
            ("pileup", 1),
        ] {
            assert_eq!(count(p), n, "{p}");
        }
        // Nine levels: every job one below its deepest parent.
        let mut level = vec![0usize; wf.jobs.len()];
        for (j, job) in wf.jobs.iter().enumerate() {
            level[j] = job.parents.iter().map(|&p| level[p] + 1).max().unwrap_or(0);
        }
        assert_eq!(level.iter().max(), Some(&8));
        let widest = (0..9)
            .map(|l| level.iter().filter(|&&x| x == l).count())
            .max();
        assert_eq!(widest, Some(77 * 32));
        // Inputs: the lanes' reads and the reference every map shares.
        let inputs: Vec<usize> = wf.inputs().collect();
        assert_eq!(inputs.len(), 78);
        let reference = wf
            .files
            .iter()
            .position(|f| f.name == "reference/chr21.bfa");
        let readers = wf
            .jobs
            .iter()
            .filter(|j| j.inputs.contains(&reference.unwrap()))
            .count();
        assert_eq!(readers, 77 * 32);
        // Runtimes within ±50% of their means, the same for the same seed.
        for j in &wf.jobs {
            assert!(j.runtime > 0.0);
        }
        let again = g.generate(7).unwrap();
        assert!(
            wf.jobs
                .iter()
                .zip(&again.jobs)
                .all(|(a, b)| a.runtime == b.runtime)
        );
        assert_ne!(
            g.generate(8).unwrap().jobs[5].runtime,
            wf.jobs[5].runtime,
            "another seed, other runtimes"
        );
    }

    #[test]
    fn bad_parameters_name_their_field() {
        let zero = Epigenomics {
            chunks: 0,
            ..Default::default()
        };
        assert_eq!(zero.validate().unwrap_err().0, "chunks");
        let huge = Epigenomics {
            tasks: 100_000_000,
            ..Default::default()
        };
        assert_eq!(huge.validate().unwrap_err().0, "tasks");
    }
}
