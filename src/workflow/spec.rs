//! What a testbed's `[workflow]` table names: one of the papers' generators
//! with its parameters, or a file in one of the formats users bring. Kept
//! apart from both, so that neither the generators nor the parsers need the
//! other to say what a testbed may ask for.

use super::formats::{FileSpec, Scripts};
use super::generators::{Coadd, Dags, Epigenomics, Inline, Pipeline, Spatial};
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
                _ if f.jobs == Scripts::Run && f.scripts != Scripts::Run => Err((
                    "jobs",
                    "`jobs = \"run\"` runs a DAG's node programs beside its scripts: expected `scripts = \"run\"` too".into(),
                )),
                _ => Ok(()),
            },
        }
    }
}
