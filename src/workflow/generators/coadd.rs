//! The SDSS co-addition workflow of seed 000 §3: 44,400 independent jobs over
//! 544,500 files of about 5 MB, 5,419,370 file references.
//!
//! The paper gives the totals and the cluster design (8 ra × 3 dec × 5 filters
//! = 120 jobs; 368 full clusters and 4 of 60 jobs), from which the job grid
//! follows: 740 ra × 12 dec × 5 filters (4 dec bands of 92½ clusters). It does
//! not give the file grid, so gridbed uses the simplest one that reproduces the
//! totals: per filter, a grid of `files_per_ra × ra` columns by
//! `files_per_dec × dec` rows of image files; the job at (ra i, dec j, filter f)
//! reads, in its filter, the columns under its own ra step widened by
//! `margin_ra` on each side and the rows under its own dec step widened by
//! `margin_dec` (below, above), clipped at the edges of the sky. With the
//! defaults this gives 44,400 jobs, 544,500 files and 5,409,950 references
//! (−0.17%), each file read by ~10 jobs (paper: 10.1) spanning 3 dec grid
//! points, as the paper describes.
//!
//! Scaled variants: `sample = 0.05` keeps a random 5% of the jobs (2,220; the
//! paper's first live run), `ra = 37` a contiguous 5% strip, `ra = 40, dec = 5`
//! the 1,000-job live test.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

use crate::core::{DagError, File, Job, Workflow};
use crate::units::Size;

/// Parameters of the coadd generator; the defaults are the full workflow.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Coadd {
    /// The generator's name as the testbed writes it (`generator = "coadd"`).
    pub generator: String,
    /// Job grid points in right ascension.
    pub ra: usize,
    /// Job grid points in declination.
    pub dec: usize,
    /// Spectral filters.
    pub filters: usize,
    /// File columns per job ra step (3025 columns over 740 steps).
    pub files_per_ra: f64,
    /// File rows per job dec step.
    pub files_per_dec: usize,
    /// Extra file columns read on each side.
    pub margin_ra: usize,
    /// Extra file rows read below and above.
    pub margin_dec: [usize; 2],
    /// Nominal runtime of a job (s): 15 minutes in the paper.
    pub runtime: f64,
    /// Size of an input image.
    pub file_size: Size,
    /// Size of a job's output (the paper disregards output transfer: 0).
    pub output_size: Size,
    /// Relative runtime jitter.
    pub jitter: f64,
    /// Fraction of the jobs kept, drawn at random from the whole grid (seeded);
    /// only the files they read remain. 1 keeps the whole workflow.
    pub sample: f64,
}

impl Default for Coadd {
    fn default() -> Self {
        Coadd {
            generator: "coadd".into(),
            ra: 740,
            dec: 12,
            filters: 5,
            files_per_ra: 3025.0 / 740.0,
            files_per_dec: 3,
            margin_ra: 6,
            margin_dec: [2, 3],
            runtime: 900.0,
            file_size: Size(5_000_000),
            output_size: Size(0),
            jitter: 0.0,
            sample: 1.0,
        }
    }
}

impl Coadd {
    /// Checks the parameters; the error names the field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        for (field, v) in [
            ("ra", self.ra),
            ("dec", self.dec),
            ("filters", self.filters),
            ("files_per_dec", self.files_per_dec),
        ] {
            if v == 0 {
                return Err((field, "expected at least 1".into()));
            }
        }
        if !(self.files_per_ra.is_finite() && self.files_per_ra >= 1.0) {
            return Err(("files_per_ra", "expected a number ≥ 1".into()));
        }
        if !(self.runtime.is_finite() && self.runtime >= 0.0) {
            return Err(("runtime", "expected a runtime ≥ 0 s".into()));
        }
        if !(0.0..1.0).contains(&self.jitter) {
            return Err(("jitter", "expected a fraction in [0, 1)".into()));
        }
        if !(self.sample > 0.0 && self.sample <= 1.0) {
            return Err(("sample", "expected a fraction in (0, 1]".into()));
        }
        // Before sampling: the whole grid and its files are built first.
        let jobs = self.ra as f64 * self.dec as f64 * self.filters as f64;
        let rows = self.files_per_dec as f64 + (self.margin_dec[0] + self.margin_dec[1]) as f64;
        let cols = self.files_per_ra.ceil() + 2.0 * self.margin_ra as f64;
        let files = self.filters as f64
            * (self.dec as f64 * self.files_per_dec as f64)
            * (self.ra as f64 * self.files_per_ra);
        super::bounded("ra", jobs.max(files), jobs * rows * cols)
    }

    /// File columns in all.
    fn columns(&self) -> usize {
        (self.ra as f64 * self.files_per_ra).round() as usize
    }

    /// File columns `[lo, hi)` under job ra step `i`.
    fn own_columns(&self, i: usize) -> (usize, usize) {
        let cols = self.columns() as f64;
        let step = cols / self.ra as f64;
        (
            (i as f64 * step).floor() as usize,
            ((i + 1) as f64 * step).floor() as usize,
        )
    }

    /// Builds the workflow. At full scale that is 5.4 M references, so jobs
    /// refer to files by index (the file grid is regular) rather than by name.
    pub fn generate(&self, seed: u64) -> Result<Workflow, DagError> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let cols = self.columns();
        let rows = self.dec * self.files_per_dec;
        let per_filter = rows * cols;
        let inputs_total = self.filters * per_filter;
        let id = |f: usize, row: usize, col: usize| f * per_filter + row * cols + col;
        let mut files = Vec::with_capacity(inputs_total + self.filters * self.ra * self.dec);
        for f in 0..self.filters {
            for row in 0..rows {
                for col in 0..cols {
                    files.push(File {
                        name: format!("sdss/f{f}/r{row:03}/c{col:05}.fits"),
                        size: self.file_size.0,
                    });
                }
            }
        }
        let mut jobs = Vec::with_capacity(self.filters * self.ra * self.dec);
        for f in 0..self.filters {
            for j in 0..self.dec {
                let r0 = (j * self.files_per_dec).saturating_sub(self.margin_dec[0]);
                let r1 = ((j + 1) * self.files_per_dec)
                    .saturating_add(self.margin_dec[1])
                    .min(rows);
                for i in 0..self.ra {
                    let (c, d) = self.own_columns(i);
                    let c0 = c.saturating_sub(self.margin_ra);
                    let c1 = d.saturating_add(self.margin_ra).min(cols);
                    let mut inputs = Vec::with_capacity((r1 - r0) * (c1 - c0));
                    for row in r0..r1 {
                        inputs.extend((c0..c1).map(|col| id(f, row, col)));
                    }
                    files.push(File {
                        name: format!("coadd/f{f}/d{j:02}/r{i:04}.fits"),
                        size: self.output_size.0,
                    });
                    jobs.push(Job {
                        name: format!("coadd-{i:04}-{j:02}-{f}"),
                        runtime: super::jittered(self.runtime, self.jitter, &mut rng),
                        inputs,
                        outputs: vec![files.len() - 1],
                        parents: vec![],
                        position: Some([i as u32, j as u32, f as u32]),
                        transformation: Some("coadd".into()),
                        label: None,
                        members: Vec::new(),
                        site: None,
                    });
                }
            }
        }
        if self.sample < 1.0 {
            let (files, jobs) = sample(files, jobs, self.sample, &mut rng);
            return Workflow::from_jobs(files, jobs);
        }
        Workflow::from_jobs(files, jobs)
    }
}

/// Keeps `fraction` of `jobs`, chosen uniformly at random, in their order, and
/// the files they use, renumbered.
fn sample(
    files: Vec<File>,
    jobs: Vec<Job>,
    fraction: f64,
    rng: &mut ChaCha8Rng,
) -> (Vec<File>, Vec<Job>) {
    use rand::seq::index;
    let keep = ((jobs.len() as f64 * fraction).round() as usize).clamp(1, jobs.len());
    let mut chosen = index::sample(rng, jobs.len(), keep).into_vec();
    chosen.sort_unstable();
    let mut picked: Vec<Option<Job>> = jobs.into_iter().map(Some).collect();
    let mut jobs: Vec<Job> = chosen.iter().filter_map(|&i| picked[i].take()).collect();
    let mut new_id = vec![usize::MAX; files.len()];
    let mut kept = Vec::new();
    for job in &mut jobs {
        for f in job.inputs.iter_mut().chain(job.outputs.iter_mut()) {
            if new_id[*f] == usize::MAX {
                new_id[*f] = kept.len();
                kept.push(*f);
            }
            *f = new_id[*f];
        }
    }
    let mut files: Vec<Option<File>> = files.into_iter().map(Some).collect();
    let files = kept.iter().filter_map(|&f| files[f].take()).collect();
    (files, jobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_scale_matches_the_paper_within_one_percent() {
        let wf = Coadd::default().generate(1).unwrap();
        let within = |got: usize, paper: f64| ((got as f64 - paper) / paper).abs() < 0.01;
        assert_eq!(wf.jobs.len(), 44_400);
        assert!(
            within(wf.inputs().count(), 544_500.0),
            "{}",
            wf.inputs().count()
        );
        assert!(within(wf.references(), 5_419_370.0), "{}", wf.references());
    }

    #[test]
    fn the_5_percent_sample_and_the_live_test() {
        let strip = Coadd {
            ra: 37,
            ..Default::default()
        };
        assert_eq!(strip.generate(1).unwrap().jobs.len(), 2_220);
        let sample = Coadd {
            sample: 0.05,
            ..Default::default()
        };
        let a = sample.generate(1).unwrap();
        assert_eq!(a.jobs.len(), 2_220);
        let used: std::collections::HashSet<usize> = a
            .jobs
            .iter()
            .flat_map(|j| j.inputs.iter().copied())
            .collect();
        assert_eq!(
            used.len(),
            a.inputs().count(),
            "only the files the sample reads remain"
        );
        assert_ne!(a.jobs[0].name, sample.generate(2).unwrap().jobs[0].name);
        let live = Coadd {
            ra: 40,
            dec: 5,
            ..Default::default()
        };
        let wf = live.generate(1).unwrap();
        assert_eq!(wf.jobs.len(), 1_000);
        assert_eq!(wf.jobs[0].position, Some([0, 0, 0]));
    }
}
