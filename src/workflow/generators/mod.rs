//! Seeded, deterministic workflow generators, picked by `generator = "…"` in a
//! testbed's `[workflow]` table.

mod coadd;
mod dags;
mod epigenomics;
mod inline;
mod pipeline;
mod spatial;

pub use coadd::Coadd;
pub use dags::{Dags, Shape as DagShape};
pub use epigenomics::Epigenomics;
pub use inline::{Inline, InlineFile, InlineJob};
pub use pipeline::Pipeline;
pub use spatial::Spatial;

use crate::core::{DagError, Workflow};

/// A generator with its parameters, as a testbed writes it.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkflowSpec {
    /// Seed 002's batch pipeline.
    Pipeline(Pipeline),
    /// A small SDSS-like sky of seed 000.
    Spatial(Spatial),
    /// Jobs and files written out in the testbed.
    Inline(Inline),
    /// The SDSS coadd of seed 000.
    Coadd(Coadd),
    /// Seed 003's workflows of many DAGs (BLAST, fan, chain).
    Dags(Dags),
    /// The Epigenomics pipeline at any size (millions of tasks).
    Epigenomics(Epigenomics),
    /// A workflow file users bring (WfFormat, DAX, Pegasus YAML, DAGMan).
    File(FileSpec),
}

/// `workflow = { file = "…" }`: a workflow read from a file, relative to the
/// testbed.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// The workflow file.
    pub file: String,
    /// Its format (default: chosen by content).
    #[serde(default = "auto")]
    pub format: crate::workflow::formats::Format,
    /// Keep auxiliary/transfer tasks of Pegasus traces.
    #[serde(default)]
    pub auxiliary: bool,
    /// Runtime (nominal s) of a job the file gives none (default 1).
    pub default_runtime: Option<f64>,
    /// Size of a file the file gives none (default 0 B).
    pub default_size: Option<crate::units::Size>,
    /// A DAGMan file's sidecar (TOML `[[file]]` and `[[job]]` tables with
    /// sizes, runtimes, inputs and outputs), relative to the testbed.
    pub sidecar: Option<String>,
    /// A DAGMan file's PRE/POST scripts: `skip` (default) or `run` (live:
    /// really run in the site's pool; sim: each ends at once, well).
    #[serde(default)]
    pub scripts: Scripts,
}

/// Whether a DAGMan file's scripts run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scripts {
    /// Parsed, not run.
    #[default]
    Skip,
    /// Run.
    Run,
}

fn auto() -> crate::workflow::formats::Format {
    crate::workflow::formats::Format::Auto
}

impl FileSpec {
    /// The reading options this spec asks for; `base` is the testbed's folder.
    pub fn options(&self, base: &std::path::Path) -> crate::workflow::formats::Options {
        let d = crate::workflow::formats::Options::default();
        crate::workflow::formats::Options {
            format: self.format,
            keep_auxiliary: self.auxiliary,
            default_runtime: self.default_runtime.unwrap_or(d.default_runtime),
            default_size: self.default_size.map_or(d.default_size, |s| s.0),
            sidecar: self.sidecar.as_ref().map(|s| base.join(s)),
        }
    }
}

/// The most jobs a generator builds: ten times the million-task runs this
/// project is measured on, far below what would exhaust a machine's memory.
pub const MAX_JOBS: f64 = 1e7;
/// The most input references (job × file) a generator builds, for the same
/// reason (the full SDSS coadd has 5.4 million).
pub const MAX_REFERENCES: f64 = 5e8;

/// Refuses parameters that would build more than [`MAX_JOBS`] jobs or
/// [`MAX_REFERENCES`] references (counted in `f64`, so that no product
/// overflows); `field` is the parameter the error names.
fn bounded(field: &'static str, jobs: f64, references: f64) -> Result<(), (&'static str, String)> {
    if jobs > MAX_JOBS {
        return Err((
            field,
            format!("these parameters make {jobs:.3e} jobs; expected at most {MAX_JOBS:.0e}"),
        ));
    }
    if references > MAX_REFERENCES {
        return Err((
            field,
            format!(
                "these parameters make {references:.3e} input references; expected at most {MAX_REFERENCES:.0e}"
            ),
        ));
    }
    Ok(())
}

/// Generator names, for error messages.
pub const GENERATORS: &[&str] = &[
    "pipeline",
    "spatial",
    "coadd",
    "dags",
    "epigenomics",
    "inline",
];

/// A value or a list of values.
fn one_or_many<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum OneOrMany<T> {
        One(T),
        Many(Vec<T>),
    }
    match <OneOrMany<T> as serde::Deserialize>::deserialize(d) {
        Ok(OneOrMany::One(v)) => Ok(vec![v]),
        Ok(OneOrMany::Many(v)) => Ok(v),
        Err(_) => Err(serde::de::Error::custom(
            "expected a value or a list of values",
        )),
    }
}

impl WorkflowSpec {
    /// Builds the workflow; `seed` drives any jitter.
    pub fn generate(&self, seed: u64) -> Result<Workflow, DagError> {
        match self {
            WorkflowSpec::Pipeline(p) => p.generate(seed),
            WorkflowSpec::Spatial(s) => s.generate(seed),
            WorkflowSpec::Inline(i) => i.generate(),
            WorkflowSpec::Coadd(c) => c.generate(seed),
            WorkflowSpec::Dags(d) => d.generate(),
            WorkflowSpec::Epigenomics(e) => e.generate(seed),
            // Read by the scenario loader, which knows the testbed's folder.
            WorkflowSpec::File(_) => Ok(Workflow::default()),
        }
    }

    /// Checks the parameters; the error names the field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        match self {
            WorkflowSpec::Pipeline(p) => p.validate(),
            WorkflowSpec::Spatial(s) => s.validate(),
            WorkflowSpec::Inline(i) => i.validate(),
            WorkflowSpec::Coadd(c) => c.validate(),
            WorkflowSpec::Dags(d) => d.validate(),
            WorkflowSpec::Epigenomics(e) => e.validate(),
            WorkflowSpec::File(f) => match f.default_runtime {
                Some(r) if !(r.is_finite() && r >= 0.0) => Err((
                    "default_runtime",
                    format!("expected seconds ≥ 0, found {r}"),
                )),
                _ => Ok(()),
            },
        }
    }
}

/// Draws a runtime around `base` with uniform relative jitter in ±`jitter`.
fn jittered(base: f64, jitter: f64, rng: &mut rand_chacha::ChaCha8Rng) -> f64 {
    use rand::Rng;
    if jitter <= 0.0 {
        return base;
    }
    base * (1.0 + rng.random_range(-jitter..=jitter))
}
