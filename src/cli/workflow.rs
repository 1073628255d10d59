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

pub(super) fn workflow_stats(args: &ScenarioArgs, json: bool) -> Result<ExitCode, CliError> {
    use crate::workflow::formats;
    // A testbed (.toml) or a workflow file of its own.
    let is_testbed = args.testbed.extension().is_some_and(|e| e == "toml");
    let (name, wf, clustering) = if is_testbed {
        let s = load(args)?;
        (s.name.clone(), s.workflow.clone(), s.clustering.clone())
    } else {
        let opts = formats::Options {
            format: args.format.unwrap_or(formats::Format::Auto),
            ..Default::default()
        };
        let loaded = formats::load(&args.testbed, &opts).map_err(CliError::input)?;
        for w in &loaded.warnings {
            eprintln!("warning: {}: {w}", args.testbed.display());
        }
        let name = format!("{} ({})", args.testbed.display(), loaded.format.name());
        (name, std::sync::Arc::new(loaded.workflow), None)
    };
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
