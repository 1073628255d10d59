//! `gridbed flows export|replay`: a simulated run's transfers as a flow
//! trace, and a trace replayed through the max-min model alone
//! ([`crate::sim::flows`]); `benches/simgrid_network.py` uses both to set
//! gridbed's sharing beside SimGrid's on the same flows.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Subcommand;

use super::{CliError, ScenarioArgs, load};
use crate::sim::{self, flow_shapes, flows};

#[derive(Subcommand)]
pub(crate) enum FlowsCmd {
    /// Simulate a testbed and write its transfers as flows (JSON): when each
    /// one's bytes began to move, its bytes, the resources it crossed (the
    /// source's out, the links up and down, the receiver's in), its cap and
    /// the simulator's end.
    Export {
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// The trace to write.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Write a trace of one of the shapes that cost the max-min model most
    /// (what `gridbed bench network` replays), drawn from a seed.
    Shape {
        /// Which shape: sender-fan-in, receiver-fan-in or mixed-tree.
        shape: flow_shapes::Shape,
        /// How many flows.
        #[arg(long, default_value_t = 1000)]
        flows: usize,
        /// The seed its sizes, sites and starts are drawn from.
        #[arg(long, default_value_t = 60)]
        seed: u64,
        /// The trace to write.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Replay a flow trace through the max-min model alone and print the
    /// seconds it took; `--out` writes the trace with the replay's ends.
    Replay {
        /// The trace.
        trace: PathBuf,
        /// Where to write the trace with the replay's ends.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

fn write(path: &Path, trace: &flows::FlowTrace) -> Result<(), CliError> {
    let text = serde_json::to_string(trace).map_err(CliError::failed)?;
    std::fs::write(path, text)
        .map_err(|e| CliError::failed(format!("writing {}: {e}", path.display())))
}

/// Runs a `flows` subcommand.
pub(super) fn flows(cmd: FlowsCmd) -> Result<ExitCode, CliError> {
    match cmd {
        FlowsCmd::Export { scenario, out } => {
            let s = load(&scenario)?;
            let run = sim::run(&s).map_err(CliError::input)?;
            let trace = flows::export(&s, &run).map_err(CliError::input)?;
            write(&out, &trace)?;
            println!(
                "{} flows over {} resources written to {}",
                trace.flows.len(),
                trace.resources.len(),
                out.display()
            );
        }
        FlowsCmd::Shape {
            shape,
            flows,
            seed,
            out,
        } => {
            write(&out, &flow_shapes::trace(shape, flows, seed))?;
            println!("{flows} flows of {} written to {}", shape.name(), out.display());
        }
        FlowsCmd::Replay { trace, out } => {
            let text = std::fs::read_to_string(&trace)
                .map_err(|e| CliError::input(format!("{}: {e}", trace.display())))?;
            let mut t: flows::FlowTrace = serde_json::from_str(&text)
                .map_err(|e| CliError::input(format!("{}: {e}", trace.display())))?;
            let began = Instant::now();
            let ends = flows::replay(&t)
                .map_err(|e| CliError::input(format!("{}: {e}", trace.display())))?;
            let seconds = began.elapsed().as_secs_f64();
            println!(
                "{} flows replayed in {seconds:.6} s ({:.0} starts+ends/s)",
                t.flows.len(),
                2.0 * t.flows.len() as f64 / seconds.max(1e-9)
            );
            if let Some(out) = out {
                for (f, end) in t.flows.iter_mut().zip(ends) {
                    f.end = Some(end);
                }
                write(&out, &t)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
