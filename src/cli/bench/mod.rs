//! `gridbed bench`: the figures of `docs/benchmarks.md`, measured in one run so
//! that ratios compare like with like on a shared, noisy machine.
//!
//! * **manager**: jobs planned per second by the sans-IO core alone (a world
//!   that completes every command at once), 10,000 jobs on the 25 Grid3 sites.
//! * **dispatch**: 10,000 zero-runtime, zero-input jobs through the whole live
//!   engine on 5 sites (prescript interval 0, MAXPRE unbounded), jobs ended per
//!   wall second.
//! * **transfer**: 1 GiB in 64 MB files pulled over loopback with sha256
//!   verification, as a ratio to `std::fs::copy` + sha256 of the same bytes.
//! * **faults**: the live dispatch of jobs that each pull one input, with 5%
//!   of the responses reset halfway, as a ratio to the same run without; and
//!   `testbeds/chaos.toml` live with its faults against the same testbed
//!   without them.
//! * **network**: the max-min flow model alone, 10,000 flows over 100 sites
//!   and 10 shared links, 2,000 ends each followed by a start, flows
//!   re-rated per second (`network.rs`).
//! * **calibrate**: `gridbed calibrate` over 20 traces with the default
//!   knob choice (every candidate cross-validated), and whether it finds
//!   the rate the traces were made with (`calibrate.rs`).
//! * **planner**: seed 003's AssignDAGs + Parallelize on 5,000 DAGs and 100
//!   machines, its re-planning after a machine loss, and its share of a sim
//!   run (`planner.rs`).
//! * **subdags**: a hierarchical DAG of 1,000 sub-DAGs of 50 nodes over
//!   one of 250, through the whole `gridbed run --engine sim` command, the
//!   sub-DAGs read with the DAG and as submitted (`subdags.rs`).

mod calibrate;
mod external;
mod farm;
mod live_runs;
mod netbed;
mod network;
mod planner;
mod remote;
mod scale;
mod scenarios;
mod simulated;
mod subdags;

pub(crate) use scale::{MeasureArgs, measure_command};
use scenarios::{bench_scenario, bench_site, dispatch_scenario, dispatch_scenario_on, unthrottled};

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::config::{Emulation, Scenario, SiteConfig};
use crate::core::file_server::{FileServer, ResponseFaults};
use crate::core::manager::scripted::ScriptedWorld;
use crate::core::{File, JobSpec, ManagerSettings, ReplicaPolicy, SiteInfo, Workflow};
use crate::live::{self, gridftp, store};
use crate::policy::{self, eviction::Lru};
use crate::workflow::generators::Spatial;

/// Options of `gridbed bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Which benchmarks (default: all).
    #[arg(value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(BENCHMARKS))]
    which: Vec<String>,
    /// The same, as an option.
    #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(BENCHMARKS))]
    only: Vec<String>,
    /// Scale every size down by this factor (for a quick check of the code path).
    #[arg(long, default_value_t = 1)]
    shrink: u32,
    /// Also write the results as a Markdown table to this file.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
}

/// One measured figure.
#[derive(Debug, Clone)]
pub struct Figure {
    /// What was measured.
    pub name: String,
    /// The value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// The goal, as text; none for a figure that only explains another.
    pub goal: Option<String>,
    /// Whether the goal was met (true when there is none).
    pub met: bool,
}

/// The benchmarks, by the names `gridbed bench` takes.
const BENCHMARKS: [&str; 22] = [
    "sim",
    "policy",
    "calibrate",
    "network",
    "diffusion",
    "farm",
    "db",
    "wfformat",
    "manager",
    "decisions",
    "dispatch",
    "remote",
    "netbed",
    "metrics",
    "transfer",
    "faults",
    "planner",
    "record",
    "parse",
    "dslab",
    "million",
    "subdags",
];

/// Why a benchmark failed inside: any error of the rooms it drives, or
/// what it found wrong with a run.
type Failure = Box<dyn std::error::Error + Send + Sync>;

/// Why `gridbed bench` failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A benchmark could not run, or its run did not do what it measures.
    #[error("benchmark `{bench}`: {source}")]
    Failed {
        /// Which benchmark.
        bench: &'static str,
        /// Why.
        source: Failure,
    },
    /// The markdown table could not be written.
    #[error("writing {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Names a benchmark's failure.
fn failed(bench: &'static str) -> impl FnOnce(Failure) -> BenchError {
    move |source| BenchError::Failed { bench, source }
}

/// Runs the selected benchmarks and prints their figures.
pub fn run(args: BenchArgs) -> Result<(), BenchError> {
    // Names not in BENCHMARKS were refused by the command line.
    let chosen: Vec<&String> = args.which.iter().chain(&args.only).collect();
    let want = |n: &str| chosen.is_empty() || chosen.iter().any(|o| *o == n);
    let shrink = args.shrink.max(1) as usize;
    let mut figures = Vec::new();
    // First, so that the peak RSS it reports is its own.
    if want("sim") {
        figures.extend(simulated::sim_full_coadd().map_err(failed("sim"))?);
    }
    if want("db") {
        let rounds = if shrink > 1 { 2 } else { 20 };
        figures
            .push(simulated::db_cost_command("testbeds/osg-12-pipeline.toml", rounds).map_err(failed("db"))?);
        figures.push(simulated::db_cost("testbeds/osg-12-pipeline.toml", rounds).map_err(failed("db"))?);
        figures.push(simulated::db_cost("testbeds/spcl-live-10.toml", rounds / 10 + 1).map_err(failed("db"))?);
    }
    if want("manager") {
        figures.extend(simulated::manager_decisions(10_000 / shrink).map_err(failed("manager"))?);
    }
    if want("dispatch") {
        figures.push(live_runs::live_dispatch(10_000 / shrink).map_err(failed("dispatch"))?);
    }
    if want("remote") {
        figures.extend(remote::remote_dispatch(10_000 / shrink).map_err(failed("remote"))?);
    }
    if want("netbed") {
        // Namespaces need root: asked for by name, the bench says so; in a
        // run of them all, it is left out.
        if chosen.is_empty() && unsafe { libc::geteuid() } != 0 {
            eprintln!("note: the netbed benchmark needs root; left out");
        } else {
            figures.extend(netbed::link_classes().map_err(failed("netbed"))?);
        }
    }
    if want("record") {
        figures.extend(scale::whole_coadd().map_err(failed("record"))?);
    }
    if want("parse") {
        figures.push(scale::parse_rate().map_err(failed("parse"))?);
    }
    if want("dslab") {
        figures.extend(scale::side_by_side().map_err(failed("dslab"))?);
    }
    if want("million") {
        let sizes: &[usize] = if shrink > 1 {
            &[10_000, 100_000]
        } else {
            &[10_000, 100_000, 1_000_000]
        };
        figures.extend(scale::million(sizes).map_err(failed("million"))?);
    }
    if want("subdags") {
        figures.extend(subdags::scaling(1000 / shrink).map_err(failed("subdags"))?);
    }
    if want("wfformat") {
        figures.extend(
            simulated::wfformat_parse_sim(std::path::Path::new("target/wfcommons"))
                .map_err(failed("wfformat"))?,
        );
    }
    if want("diffusion") {
        figures.extend(farm::diffusion_250k().map_err(failed("diffusion"))?);
    }
    if want("farm") {
        figures.push(farm::farm_live_dispatch(100_000 / shrink).map_err(failed("farm"))?);
    }
    if want("decisions") {
        figures.extend(farm::dispatch_decisions(200_000 / shrink).map_err(failed("decisions"))?);
    }
    if want("metrics") {
        figures.push(
            live_runs::metrics_overhead(200_000 / shrink, if shrink > 1 { 1 } else { 3 })
                .map_err(failed("metrics"))?,
        );
    }
    if want("transfer") {
        figures.extend(
            live_runs::transfer_throughput(16, (64 << 20) / shrink as u64).map_err(failed("transfer"))?,
        );
        figures.push(live_runs::paced_small_pulls((300 / shrink).max(2)).map_err(failed("transfer"))?);
    }
    if want("faults") {
        figures.push(live_runs::dispatch_under_resets(2_000 / shrink).map_err(failed("faults"))?);
        figures.push(live_runs::chaos_vs_clean().map_err(failed("faults"))?);
    }
    if want("network") {
        let (flows, ends) = (10_000 / shrink, 2_000 / shrink as u64);
        figures.push(
            network::network(flows.max(10), 100, 10, ends.max(10)).map_err(failed("network"))?,
        );
        let sizes: Vec<usize> = [1_000, 3_000, 10_000, 100_000]
            .iter()
            .map(|n| (n / shrink).max(10))
            .collect();
        figures.extend(network::shapes(&sizes, 120.0).map_err(failed("network"))?);
    }
    if want("calibrate") {
        figures.extend(calibrate::calibrate((20 / shrink).max(2)).map_err(failed("calibrate"))?);
    }
    if want("policy") {
        figures.extend(external::decisions(20_000 / shrink).map_err(failed("policy"))?);
    }
    if want("planner") {
        figures.extend(planner::planner(5_000 / shrink, 100).map_err(failed("planner"))?);
    }
    let mut md = String::from("| benchmark | value | goal | met |\n|---|---:|---|---|\n");
    for f in &figures {
        println!(
            "{:<58} {:>14.2} {:<10} goal {:<14} {}",
            f.name,
            f.value,
            f.unit,
            f.goal.as_deref().unwrap_or("—"),
            match (&f.goal, f.met) {
                (None, _) => "",
                (_, true) => "met",
                _ => "NOT met",
            }
        );
        let _ = writeln!(
            md,
            "| {} | {:.2} {} | {} | {} |",
            f.name,
            f.value,
            f.unit,
            f.goal.as_deref().unwrap_or("—"),
            match (&f.goal, f.met) {
                (None, _) => "—",
                (_, true) => "yes",
                _ => "no",
            }
        );
    }
    if let Some(path) = args.markdown {
        std::fs::write(&path, md).map_err(|source| BenchError::Write { path, source })?;
    }
    Ok(())
}

/// Peak resident set of this process so far (Linux), in bytes.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Resets the process's peak resident set (Linux ≥ 4.0), so that the next
/// [`peak_rss`] is the peak of what runs after.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

