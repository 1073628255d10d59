//! The workflow of a testbed: a generator with its parameters (read with
//! that generator's own type, so a mistake is reported at its line), a
//! workflow file (WfFormat, DAX, Pegasus YAML, DAGMan), or `--workflow`;
//! then Pegasus clustering if the testbed asks for it.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::source::Source;
use super::{ConfigError, Overrides, TestbedFile, WorkflowSource};
use crate::core::Workflow;
use crate::workflow::WorkflowSpec;
use crate::workflow::clustering::Clustering;
use crate::workflow::formats::{self, FileSpec, FormatError, SubDagReading};
use crate::workflow::generators::{
    Coadd, Dags, Epigenomics, GENERATORS, Inline, Pipeline, Spatial,
};

/// The workflow a scenario runs, where it was read from, and its
/// clustering.
pub(super) type Resolved = (Workflow, Option<WorkflowSource>, Option<Clustering>);

/// The longest runtime a job may have, in seconds (about 31 years): past
/// it a makespan stops being a time a run can reach (1e308 s made it ∞).
pub const MAX_RUNTIME_S: f64 = 1e9;
/// The largest file, in bytes (1 PB), so that a run's byte counts stay
/// exact.
pub const MAX_FILE_BYTES: u64 = 1_000_000_000_000_000;

/// Every runtime finite and within [0, [`MAX_RUNTIME_S`]], every file at
/// most [`MAX_FILE_BYTES`]; else the field (the job's or file's name) and
/// what was expected.
fn within_limits(workflow: &Workflow) -> Result<(), (String, String)> {
    if let Some(job) = workflow
        .jobs
        .iter()
        .find(|j| !(j.runtime.is_finite() && (0.0..=MAX_RUNTIME_S).contains(&j.runtime)))
    {
        return Err((
            format!("job `{}`: runtime", job.name),
            format!(
                "expected seconds from 0 to {MAX_RUNTIME_S:e} (about 31 years), found {}",
                if job.runtime.abs() > MAX_RUNTIME_S {
                    format!("{:e}", job.runtime)
                } else {
                    job.runtime.to_string()
                }
            ),
        ));
    }
    if let Some(file) = workflow.files.iter().find(|f| f.size > MAX_FILE_BYTES) {
        return Err((
            format!("file `{}`: size", file.name),
            format!(
                "expected at most {MAX_FILE_BYTES} bytes (1 PB), found {}",
                file.size
            ),
        ));
    }
    Ok(())
}

/// The testbed's workflow (`base`: the testbed's folder), generated with
/// `seed` or read from its file.
pub(super) fn resolve(
    tb: &TestbedFile<WorkflowSpec>,
    src: &Source,
    base: &Path,
    overrides: &Overrides,
    seed: u64,
    plans_ahead: bool,
) -> Result<Resolved, ConfigError> {
    let spec = tb.workflow.get_ref();
    spec.validate().map_err(|(field, msg)| {
        src.error(
            Some(tb.workflow.span()),
            Some(format!("workflow.{field}")),
            msg,
        )
    })?;
    let file = match (&overrides.workflow, spec) {
        (Some(file), _) => Some((
            file.clone(),
            formats::Options {
                format: overrides.format.unwrap_or(formats::Format::Auto),
                ..Default::default()
            },
            false,
            false,
        )),
        (None, WorkflowSpec::File(f)) => Some((
            base.join(&f.file),
            f.options(base),
            f.scripts == crate::workflow::formats::Scripts::Run,
            f.jobs == crate::workflow::formats::Scripts::Run,
        )),
        _ => None,
    };
    let file = file.map(|(path, mut opts, scripts, run_jobs)| {
        if let Some(r) = &overrides.rescue {
            opts.rescue = r.clone();
        }
        // DAGMan reads a sub-DAG as it submits its node, after its PRE
        // script: what plans the whole DAG ahead reads those no script
        // writes with the DAG.
        opts.subdag_reading = match (scripts, plans_ahead) {
            (false, _) => SubDagReading::WithTheDag,
            (true, true) => SubDagReading::WhenWritten,
            (true, false) => SubDagReading::AtSubmission,
        };
        (path, opts, scripts, run_jobs)
    });
    let (workflow, source) = match file {
        Some((path, opts, run_scripts, run_jobs)) => {
            let loaded = formats::load(&path, &opts).map_err(|e: FormatError| {
                if overrides.log_refusal && formats::is_dagman(&path, opts.format) {
                    let now = std::time::SystemTime::now();
                    let logged =
                        formats::dagman::files::write_refused(&path, &e.file, &e.message, now);
                    if let Err(w) = logged {
                        tracing::warn!("{}: its DAGMan log not written: {w}", path.display());
                    }
                }
                ConfigError {
                    file: e.file,
                    line: 0,
                    column: 0,
                    field: "(workflow file)".into(),
                    message: e.message,
                }
            })?;
            let mut dagman = loaded.dagman;
            if let Some(d) = dagman.as_mut() {
                d.run_jobs = run_jobs;
            }
            let source = WorkflowSource {
                path,
                format: loaded.format,
                warnings: loaded.warnings,
                dagman,
                run_scripts,
            };
            (Ok(loaded.workflow), Some(source))
        }
        None => (spec.generate(seed), None),
    };
    let workflow = workflow.map_err(|e| {
        let located = match spec {
            WorkflowSpec::Inline(inline) => inline.locate(&e),
            _ => None,
        };
        match located {
            Some((i, span)) => src.error(
                Some(span),
                Some(format!("workflow.job[{i}]")),
                e.to_string(),
            ),
            None => src.error(
                Some(tb.workflow.span()),
                Some("workflow".into()),
                e.to_string(),
            ),
        }
    })?;
    if let Err((field, message)) = within_limits(&workflow) {
        return Err(match &source {
            Some(source) => ConfigError {
                file: source.path.clone(),
                line: 0,
                column: 0,
                field,
                message,
            },
            None => src.error(Some(tb.workflow.span()), Some(field), message),
        });
    }
    let (workflow, clustering) = match &tb.clustering {
        None => (workflow, None),
        Some(spec) => {
            let at = |m: String| src.error(Some(spec.span()), None, m);
            let techniques = crate::workflow::clustering::parse(spec.get_ref()).map_err(at)?;
            let (clustered, map) = crate::workflow::clustering::apply(&workflow, &techniques)
                .map_err(|e| at(format!("clustering makes an invalid workflow: {e}")))?;
            (clustered, Some(map))
        }
    };
    // Pegasus adds its auxiliary jobs after clustering them.
    let Some(planner) = &tb.planner else {
        return Ok((workflow, source, clustering));
    };
    let at = |m: String| src.error(Some(planner.span()), Some("planner".into()), m);
    let planned = crate::workflow::planner::apply(&workflow, &planner.get_ref().settings())
        .map_err(|e| at(format!("the planner's jobs make an invalid workflow: {e}")))?;
    // A clustered job keeps its members; the planner's jobs are their own.
    let clustering = clustering.map(|c| {
        let index: std::collections::HashMap<&str, usize> = workflow
            .jobs
            .iter()
            .enumerate()
            .map(|(j, job)| (job.name.as_str(), j))
            .collect();
        Clustering {
            members: planned
                .jobs
                .iter()
                .map(|job| match index.get(job.name.as_str()) {
                    Some(&j) => c.members[j].clone(),
                    None => vec![job.name.clone()],
                })
                .collect(),
        }
    });
    Ok((planned, source, clustering))
}

/// `[planner]`: the auxiliary jobs Pegasus's planner adds
/// ([`crate::workflow::planner`]); every field defaults to Pegasus's.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PlannerFile {
    create_dir: Option<bool>,
    stagein_clusters: Option<usize>,
    stageout_clusters: Option<usize>,
    register: Option<bool>,
    runtime: Option<super::Seconds>,
}

impl PlannerFile {
    fn settings(&self) -> crate::workflow::planner::Planner {
        let d = crate::workflow::planner::Planner::default();
        crate::workflow::planner::Planner {
            create_dir: self.create_dir.unwrap_or(d.create_dir),
            stagein_clusters: self.stagein_clusters.unwrap_or(d.stagein_clusters),
            stageout_clusters: self.stageout_clusters.unwrap_or(d.stageout_clusters),
            register: self.register.unwrap_or(d.register),
            runtime: self.runtime.as_ref().map_or(d.runtime, |s| s.0),
        }
    }
}

/// Reads the generator name first, then the whole testbed with that
/// generator's parameter type, so that a mistake in a parameter is reported at
/// its own line (a tagged enum would buffer the table and lose the position).
pub(super) fn parse_testbed(src: &Source) -> Result<TestbedFile<WorkflowSpec>, ConfigError> {
    #[derive(Deserialize)]
    struct Probe {
        workflow: Option<ProbeWorkflow>,
    }
    #[derive(Deserialize)]
    struct ProbeWorkflow {
        generator: Option<Spanned<String>>,
        // A string names a workflow file; the inline generator's
        // `[[workflow.file]]` tables are something else.
        file: Option<toml::Value>,
    }
    let probe: Probe = src.parse()?;
    let (generator, file) = match probe.workflow {
        Some(w) => (w.generator, w.file.filter(toml::Value::is_str)),
        None => (None, None),
    };
    let generator = match (generator, file) {
        (Some(g), None) => g,
        (None, Some(_)) => {
            return Ok(with(
                src.parse::<TestbedFile<FileSpec>>()?,
                WorkflowSpec::File,
            ));
        }
        (Some(g), Some(_)) => {
            let msg = "a workflow is generated or read from a file: expected `generator` or `file`, not both".to_string();
            return Err(src.error(Some(g.span()), None, msg));
        }
        (None, None) => {
            let msg = format!(
                "expected a [workflow] table with `generator = …` (one of: {}) or `file = …` (a WfFormat, DAX, Pegasus YAML or DAGMan file)",
                GENERATORS.join(", ")
            );
            return Err(src.error(None, Some("workflow".into()), msg));
        }
    };
    fn with<W>(tb: TestbedFile<W>, f: fn(W) -> WorkflowSpec) -> TestbedFile<WorkflowSpec> {
        let span = tb.workflow.span();
        TestbedFile {
            workflow: Spanned::new(span, f(tb.workflow.into_inner())),
            name: tb.name,
            description: tb.description,
            seed: tb.seed,
            sites_file: tb.sites_file,
            strategy: tb.strategy,
            replica_policy: tb.replica_policy,
            eviction: tb.eviction,
            origin: tb.origin,
            emulation: tb.emulation,
            manager: tb.manager,
            site: tb.site,
            link: tb.link,
            network: tb.network,
            fault: tb.fault,
            clustering: tb.clustering,
            planner: tb.planner,
            submission: tb.submission,
            memoize: tb.memoize,
            no_memoize: tb.no_memoize,
        }
    }
    match generator.get_ref().as_str() {
        "pipeline" => Ok(with(
            src.parse::<TestbedFile<Pipeline>>()?,
            WorkflowSpec::Pipeline,
        )),
        "spatial" => Ok(with(
            src.parse::<TestbedFile<Spatial>>()?,
            WorkflowSpec::Spatial,
        )),
        "coadd" => Ok(with(
            src.parse::<TestbedFile<Coadd>>()?,
            WorkflowSpec::Coadd,
        )),
        "dags" => Ok(with(src.parse::<TestbedFile<Dags>>()?, WorkflowSpec::Dags)),
        "epigenomics" => Ok(with(
            src.parse::<TestbedFile<Epigenomics>>()?,
            WorkflowSpec::Epigenomics,
        )),
        "inline" => Ok(with(
            src.parse::<TestbedFile<Inline>>()?,
            WorkflowSpec::Inline,
        )),
        other => {
            let msg = format!(
                "unknown generator `{other}`; expected one of: {}",
                GENERATORS.join(", ")
            );
            Err(src.error(Some(generator.span()), None, msg))
        }
    }
}
