//! The SDSS co-addition workflow of seed 000 §3: 44,400 independent jobs over
//! 544,500 files of about 5 MB, 5,419,370 file references.
//!
//! The paper gives the totals and the cluster design (8 ra × 3 dec × 5 filters
//! = 120 jobs; 368 full clusters and 4 of 60 jobs), from which the job grid
//! follows: 740 ra × 12 dec × 5 filters (4 dec bands of 92½ clusters). It does
//! not give the file grid, so gridbed uses the simplest one that reproduces the
//! totals: per filter, a grid of `files_per_ra × ra` columns by
//! `files_per_dec × dec` rows of image files; the job at (ra i, dec j, filter f)
//! reads, in its filter, a window: the columns under its own ra step widened
//! by `margin_ra` on each side and the rows under its own dec step widened by
//! `margin_dec` (below, above).
//!
//! Where the window lies is the layout, and it decides how many files
//! neighbouring clusters share:
//!
//! * **Blocked** (the default, `block = [8, 3]`): the paper chose its clusters
//!   because "most files are referenced by jobs in three declination grid points
//!   and eight ra grid points" (§3), i.e. the data come in blocks of 8 ra × 3 dec
//!   job points and a file is read by the jobs of one block. A job's window is
//!   slid to lie inside its block. Defaults: 44,400 jobs, 544,500 files,
//!   5,414,400 references (−0.09%), each file read by 9.94 jobs (paper: 10.1).
//! * **Sliding** (`block = [0, 0]`, `margin_ra = 6`): windows are clipped only
//!   at the edges of the sky, so a file near a block boundary is read by the
//!   jobs of two blocks (5,409,950 references; a cluster shares ~half its
//!   files with its neighbours). Kept to show what the layout costs SPCL.
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
    /// Extra file columns read on each side (fractional: the window's bounds
    /// are rounded down). Unset: 5.58 blocked, 6 sliding, the values that
    /// reproduce the paper's 5,419,370 references.
    pub margin_ra: Option<f64>,
    /// Extra file rows read below and above.
    pub margin_dec: [usize; 2],
    /// Job grid points (ra, dec) per data block: a job's window is slid to lie
    /// inside its block. `[0, 0]`: no blocks (the sliding layout).
    pub block: [usize; 2],
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
            margin_ra: None,
            margin_dec: [2, 3],
            // The paper's cluster cell (§3), which SPCL's `clustered` uses too.
            block: [8, 3],
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
        if !(self.margin().is_finite() && self.margin() >= 0.0) {
            return Err(("margin_ra", "expected a number of columns ≥ 0".into()));
        }
        if (self.block[0] == 0) != (self.block[1] == 0) {
            return Err((
                "block",
                "expected [ra, dec] both ≥ 1, or [0, 0] for no blocks".into(),
            ));
        }
        let cols = self.files_per_ra.ceil() + 2.0 * self.margin();
        let files = self.filters as f64
            * (self.dec as f64 * self.files_per_dec as f64)
            * (self.ra as f64 * self.files_per_ra);
        super::bounded("ra", jobs.max(files), jobs * rows * cols)
    }

    /// File columns in all.
    fn columns(&self) -> usize {
        (self.ra as f64 * self.files_per_ra).round() as usize
    }

    /// Whether windows are kept inside data blocks.
    fn blocked(&self) -> bool {
        self.block != [0, 0]
    }

    /// Columns read on each side of a job's own.
    fn margin(&self) -> f64 {
        self.margin_ra
            .unwrap_or(if self.blocked() { 5.58 } else { 6.0 })
    }

    /// File column where job ra step `i` begins (`i = ra` gives the end).
    fn column_at(&self, i: usize) -> i64 {
        (i as f64 * self.columns() as f64 / self.ra as f64).floor() as i64
    }

    /// File columns `[lo, hi)` read by the jobs at ra step `i`.
    fn window_ra(&self, i: usize) -> (usize, usize) {
        let step = self.columns() as f64 / self.ra as f64;
        let lo = (i as f64 * step - self.margin()).floor() as i64;
        let hi = ((i + 1) as f64 * step + self.margin()).floor() as i64;
        let (b0, b1) = match self.block[0] {
            0 => (0, self.columns() as i64),
            b => (
                self.column_at(i / b * b),
                self.column_at((i / b * b + b).min(self.ra)),
            ),
        };
        fit(lo, hi, b0, b1, self.blocked())
    }

    /// File rows `[lo, hi)` read by the jobs at dec step `j`.
    fn window_dec(&self, j: usize) -> (usize, usize) {
        let per = self.files_per_dec as i64;
        let lo = j as i64 * per - self.margin_dec[0] as i64;
        let hi = (j as i64 + 1) * per + self.margin_dec[1] as i64;
        let (b0, b1) = match self.block[1] {
            0 => (0, self.dec as i64 * per),
            b => (
                (j / b * b) as i64 * per,
                (j / b * b + b).min(self.dec) as i64 * per,
            ),
        };
        fit(lo, hi, b0, b1, self.blocked())
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
                let (r0, r1) = self.window_dec(j);
                for i in 0..self.ra {
                    let (c0, c1) = self.window_ra(i);
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
                        arguments: None,
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

/// The window `[lo, hi)` inside `[b0, b1)`: slid in when `slide` (a block
/// keeps its width), else clipped (the sky's edge).
fn fit(lo: i64, hi: i64, b0: i64, b1: i64, slide: bool) -> (usize, usize) {
    let (lo, hi) = if !slide || hi - lo >= b1 - b0 {
        (lo.max(b0), hi.min(b1))
    } else if lo < b0 {
        (b0, hi + (b0 - lo))
    } else if hi > b1 {
        (lo - (hi - b1), b1)
    } else {
        (lo, hi)
    };
    (lo as usize, hi as usize)
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
    fn blocked_windows_stay_in_their_block_and_sliding_ones_cross() {
        let g = Coadd::default();
        let wf = g.generate(1).unwrap();
        let cols = g.columns();
        let rows = g.dec * g.files_per_dec;
        let mut ra_of_col = vec![0; cols];
        for i in 0..g.ra {
            ra_of_col[g.column_at(i) as usize..g.column_at(i + 1) as usize].fill(i);
        }
        let block_of = |f: usize| {
            let (row, col) = ((f % (rows * cols)) / cols, f % cols);
            (row / (3 * g.files_per_dec), ra_of_col[col] / 8)
        };
        let mut readers = vec![Vec::new(); wf.files.len()];
        for job in &wf.jobs {
            let [ra, dec, _] = job.position.unwrap();
            let own = ((dec / 3) as usize, (ra / 8) as usize);
            for &f in &job.inputs {
                assert_eq!(block_of(f), own, "{} reads outside its block", job.name);
                readers[f].push(ra);
            }
        }
        // Each file is read by ~10 jobs spanning at most 8 ra points.
        let used: Vec<&Vec<u32>> = readers.iter().filter(|r| !r.is_empty()).collect();
        assert_eq!(used.len(), 544_500);
        assert!(
            used.iter()
                .all(|r| r.iter().max().unwrap() - r.iter().min().unwrap() < 8)
        );
        let sliding = Coadd {
            block: [0, 0],
            ..Default::default()
        };
        assert_eq!(sliding.generate(1).unwrap().references(), 5_409_950);
        let bad = Coadd {
            block: [8, 0],
            ..Default::default()
        };
        assert_eq!(bad.validate().unwrap_err().0, "block");
    }

    #[test]
    fn a_window_is_slid_into_its_block_or_clipped_at_the_sky() {
        assert_eq!(fit(-3, 5, 0, 20, true), (0, 8));
        assert_eq!(fit(15, 23, 0, 20, true), (12, 20));
        assert_eq!(fit(4, 12, 0, 20, true), (4, 12));
        assert_eq!(fit(-3, 25, 0, 20, true), (0, 20), "wider than the block");
        assert_eq!(fit(-3, 5, 0, 20, false), (0, 5));
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
