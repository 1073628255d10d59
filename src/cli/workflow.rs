//! `gridbed check` and `gridbed workflow stats`: a testbed or a workflow file
//! read and described without running it.

use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::{CliError, ScenarioArgs, load};
use crate::units::human_bytes;

#[derive(Subcommand)]
pub(crate) enum WorkflowCmd {
    /// Jobs, edges, files, input bytes, references, total runtime, critical
    /// path and width of a testbed's workflow, or of a workflow file
    /// (WfFormat JSON, Pegasus DAX or YAML, DAGMan .dag).
    Stats {
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Writes the workflow of a testbed (a generator's, or a file in any
    /// format) as a WfCommons instance: WfFormat 1.5, its tasks, edges,
    /// files and sizes, and each task's nominal runtime — for gridbed
    /// `--workflow`, WfCommons' tools or another simulator.
    Write {
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// The file to write (compact JSON).
        #[arg(long, value_name = "FILE")]
        out: std::path::PathBuf,
    },
}

#[derive(Args)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
}

pub(super) fn check(args: CheckArgs) -> Result<ExitCode, CliError> {
    let s = load(&args.scenario)?;
    let wf = &s.workflow;
    let input_bytes: u64 = wf.inputs().map(|f| wf.files[f].size).sum();
    say!("{}: ok", s.path.display());
    say!(
        "  workflow  {} jobs, {} files ({} inputs, {}), {} file references",
        wf.jobs.len(),
        wf.files.len(),
        wf.inputs().count(),
        human_bytes(input_bytes as f64),
        wf.references()
    );
    say!(
        "  sites     {} ({} CPUs), origin {}",
        s.sites.len(),
        s.sites.iter().map(|x| x.info.cpus).sum::<usize>(),
        s.sites[s.origin].info.name
    );
    say!(
        "  manager   strategy {}, replica policy {:?}, eviction {}, MAXPRE {}, prescript interval {} s",
        s.strategy,
        s.manager.replica_policy,
        s.eviction,
        s.manager.maxpre,
        s.manager.prescript_interval
    );
    say!(
        "  emulation time_scale {}, byte_scale {}",
        s.emulation.time_scale,
        s.emulation.byte_scale
    );
    Ok(ExitCode::SUCCESS)
}

/// A testbed's workflow (.toml) or a workflow file of its own: a name for
/// it, the workflow and its clustering.
fn read_workflow(
    args: &ScenarioArgs,
) -> Result<
    (
        String,
        std::sync::Arc<crate::core::Workflow>,
        Option<crate::workflow::clustering::Clustering>,
    ),
    CliError,
> {
    use crate::workflow::formats;
    if args.testbed.extension().is_some_and(|e| e == "toml") {
        let s = load(args)?;
        return Ok((s.name.clone(), s.workflow.clone(), s.clustering.clone()));
    }
    let opts = formats::Options {
        format: args.format.unwrap_or(formats::Format::Auto),
        ..Default::default()
    };
    let loaded = formats::load(&args.testbed, &opts).map_err(CliError::input)?;
    for w in &loaded.warnings {
        eprintln!("warning: {}: {w}", args.testbed.display());
    }
    let name = format!("{} ({})", args.testbed.display(), loaded.format.name());
    Ok((name, std::sync::Arc::new(loaded.workflow), None))
}

/// `gridbed workflow write`.
pub(super) fn workflow_write(
    args: &ScenarioArgs,
    out: &std::path::Path,
) -> Result<ExitCode, CliError> {
    let (name, wf, _) = read_workflow(args)?;
    let ids = crate::report::wfinstance::ids(&wf);
    let doc = crate::report::wfinstance::workflow_instance(&name, &wf, &ids);
    let fail =
        |e: &dyn std::fmt::Display| CliError::Failed(format!("writing {}: {e}", out.display()));
    let file = std::fs::File::create(out).map_err(|e| fail(&e))?;
    let mut w = std::io::BufWriter::new(file);
    serde_json::to_writer(&mut w, &doc).map_err(|e| fail(&e))?;
    std::io::Write::flush(&mut w).map_err(|e| fail(&e))?;
    say!(
        "{}: {} tasks, {} files (WfFormat 1.5)",
        out.display(),
        wf.jobs.len(),
        wf.files.len()
    );
    Ok(ExitCode::SUCCESS)
}

pub(super) fn workflow_stats(args: &ScenarioArgs, json: bool) -> Result<ExitCode, CliError> {
    let (name, wf, clustering) = read_workflow(args)?;
    let st = wf.stats();
    if json {
        let text = serde_json::to_string_pretty(&st).map_err(CliError::failed)?;
        say!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    say!("workflow of `{name}`");
    say!("  jobs                {:>14}", st.jobs);
    say!("  edges               {:>14}", st.edges);
    say!("  files               {:>14}", st.files);
    say!(
        "  input files         {:>14}  ({})",
        st.input_files,
        human_bytes(st.input_bytes as f64)
    );
    say!(
        "  file references     {:>14}  ({:.2} per input file)",
        st.references,
        st.references_per_file
    );
    say!("  total runtime       {:>14.0} s nominal", st.total_runtime);
    say!("  critical path       {:>14.0} s nominal", st.critical_path);
    say!(
        "  depth × width       {:>14}",
        format!("{} × {}", st.depth, st.width)
    );
    if let Some(c) = clustering {
        let originals: usize = c.members.iter().map(Vec::len).sum();
        say!(
            "  clustering          {:>14}  ({} original jobs; {} clusters of 2 or more)",
            format!("{} jobs", c.members.len()),
            originals,
            c.clusters()
        );
    }
    Ok(ExitCode::SUCCESS)
}
