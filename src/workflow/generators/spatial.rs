//! A small SDSS-like sky (seed 000 §3): input files on an `ra × dec` grid in
//! `filters` filters; the job at (ra, dec, filter) coadds the neighbourhood
//! `ra ± ra_radius`, `dec ± dec_radius` in its own filter (clipped at the edges)
//! and writes one output. Jobs are independent, as in the coadd workflow. The
//! defaults (radii 4 and 1: a 9 × 3 neighbourhood) mirror the paper's remark
//! that most files are read by jobs at 8 ra and 3 dec grid points.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

use crate::core::{DagError, File, JobSpec, Workflow};
use crate::units::Size;

/// Parameters of the spatial generator.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Spatial {
    /// The generator's name as the testbed writes it (`generator = "…"`).
    pub generator: String,
    /// Grid points in right ascension.
    pub ra: usize,
    /// Grid points in declination.
    pub dec: usize,
    /// Filters (SDSS has u, g, r, i, z).
    pub filters: usize,
    /// Neighbourhood half-width in ra.
    pub ra_radius: usize,
    /// Neighbourhood half-width in dec.
    pub dec_radius: usize,
    /// Nominal runtime of a job (s).
    pub runtime: f64,
    /// Size of an input file.
    pub file_size: Size,
    /// Size of a job's output.
    pub output_size: Size,
    /// Relative runtime jitter.
    pub jitter: f64,
}

impl Default for Spatial {
    fn default() -> Self {
        Spatial {
            generator: "spatial".into(),
            ra: 20,
            dec: 3,
            filters: 5,
            ra_radius: 4,
            dec_radius: 1,
            runtime: 900.0,
            file_size: Size(5_000_000),
            output_size: Size(5_000_000),
            jitter: 0.0,
        }
    }
}

impl Spatial {
    /// Checks the parameters; the error names the field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        for (field, v) in [
            ("ra", self.ra),
            ("dec", self.dec),
            ("filters", self.filters),
        ] {
            if v == 0 {
                return Err((field, "expected at least 1".into()));
            }
        }
        if !(self.runtime.is_finite() && self.runtime >= 0.0) {
            return Err(("runtime", "expected a runtime ≥ 0 s".into()));
        }
        if !(0.0..1.0).contains(&self.jitter) {
            return Err(("jitter", "expected a fraction in [0, 1)".into()));
        }
        let jobs = self.ra as f64 * self.dec as f64 * self.filters as f64;
        let window = (2.0 * self.ra_radius as f64 + 1.0).min(self.ra as f64)
            * (2.0 * self.dec_radius as f64 + 1.0).min(self.dec as f64);
        super::bounded("ra", jobs, jobs * window)
    }

    /// Builds the workflow.
    pub fn generate(&self, seed: u64) -> Result<Workflow, DagError> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let input = |r: usize, d: usize, f: usize| format!("sky/ra{r:03}-dec{d:02}-f{f}.fits");
        let mut files = Vec::new();
        for f in 0..self.filters {
            for d in 0..self.dec {
                for r in 0..self.ra {
                    files.push(File {
                        name: input(r, d, f),
                        size: self.file_size.0,
                    });
                }
            }
        }
        let mut jobs = Vec::new();
        for f in 0..self.filters {
            for d in 0..self.dec {
                for r in 0..self.ra {
                    let mut inputs = Vec::new();
                    let (r0, r1) = (
                        r.saturating_sub(self.ra_radius),
                        r.saturating_add(self.ra_radius).min(self.ra - 1),
                    );
                    let (d0, d1) = (
                        d.saturating_sub(self.dec_radius),
                        d.saturating_add(self.dec_radius).min(self.dec - 1),
                    );
                    for dd in d0..=d1 {
                        for rr in r0..=r1 {
                            inputs.push(input(rr, dd, f));
                        }
                    }
                    let out = format!("coadd/ra{r:03}-dec{d:02}-f{f}.fits");
                    files.push(File {
                        name: out.clone(),
                        size: self.output_size.0,
                    });
                    jobs.push(JobSpec {
                        name: format!("coadd-{r:03}-{d:02}-{f}"),
                        runtime: super::jittered(self.runtime, self.jitter, &mut rng),
                        inputs,
                        outputs: vec![out],
                        parents: vec![],
                        position: Some([r as u32, d as u32, f as u32]),
                        transformation: Some("coadd".into()),
                        arguments: None,
                        label: None,
                        members: Vec::new(),
                        site: None,
                    });
                }
            }
        }
        Workflow::build(files, jobs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbourhoods_are_clipped_at_the_edges() {
        let s = Spatial {
            ra: 10,
            dec: 3,
            filters: 2,
            ..Default::default()
        };
        let wf = s.generate(0).unwrap();
        assert_eq!(wf.jobs.len(), 60);
        assert_eq!(wf.inputs().count(), 60);
        let corner = wf.jobs.iter().find(|j| j.name == "coadd-000-00-0").unwrap();
        assert_eq!(corner.inputs.len(), 5 * 2);
        let middle = wf.jobs.iter().find(|j| j.name == "coadd-005-01-1").unwrap();
        assert_eq!(middle.inputs.len(), 9 * 3);
    }
}
