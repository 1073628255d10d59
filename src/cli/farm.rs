//! `gridbed farm`: a data-diffusion task farm (seed 001) simulated, live, or
//! both side by side.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::{CliError, Engine, SocketAddr, write_json};
use crate::report::Progress;
use crate::units::human_bytes;

#[derive(Args)]
pub(crate) struct FarmArgs {
    /// A farm testbed (e.g. testbeds/falkon-diffusion.toml).
    testbed: PathBuf,
    /// Dispatch policy, overriding the testbed's.
    #[arg(long)]
    policy: Option<String>,
    /// Cache per executor (e.g. "1.5 GB"), overriding the testbed's.
    #[arg(long)]
    cache: Option<String>,
    /// Each executor's local disk (e.g. "200 MB/s", or "none" for free local
    /// reads), overriding the testbed's.
    #[arg(long, value_name = "RATE")]
    disk_bandwidth: Option<String>,
    /// Set-up seconds of each peer read, overriding the testbed's.
    #[arg(long, value_name = "SECS")]
    peer_latency: Option<f64>,
    /// Executors from the start instead of the provisioner.
    #[arg(long = "static")]
    fixed: bool,
    /// No caching: every read from the store.
    #[arg(long)]
    no_cache: bool,
    /// Write the summary view (throughput vs ideal, queue, executors,
    /// cache hits over time) as an SVG here.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Write what each engine measured (totals and intervals; with
    /// `--validate` the comparison too) as JSON here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write the per-interval metrics (arrivals, ended tasks, bytes read,
    /// reads local/global/miss, wait queue, executors allocated/busy) as
    /// CSV here (the live run's when there is one).
    #[arg(long, value_name = "FILE")]
    intervals: Option<PathBuf>,
    /// The engine: the simulator, or live executors moving real bytes
    /// (scaled by the testbed's `[emulation]`).
    #[arg(long, value_enum, default_value_t = Engine::Sim)]
    engine: Engine,
    /// Run both engines and compare: exit 1 if the live makespan deviates
    /// from the simulated one by more than `--tolerance`.
    #[arg(long)]
    validate: bool,
    /// Largest makespan deviation (live vs sim) `--validate` accepts.
    #[arg(long, default_value_t = 0.10)]
    tolerance: f64,
    /// Run seed 001's LAN experiment set on this testbed in the simulator
    /// (first-available on the store; good-cache-compute with 1, 1.5, 2 and
    /// 4 GB caches and with 4 GB on static executors; max-cache-hit and
    /// max-compute-util with 4 GB) and write its table (summary.csv,
    /// summary.json), each run's summary view and figures 12–15 here.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["validate", "policy", "cache", "fixed", "no_cache"])]
    experiments: Option<PathBuf>,
    /// Live: serve Prometheus metrics on this address.
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
    /// Live: keep /metrics up this many seconds after the run.
    #[arg(long, value_name = "SECS", default_value = "0", value_parser = super::seconds)]
    linger: std::time::Duration,
    /// Live: where the executors' pools and the store go.
    #[arg(long, value_name = "DIR")]
    pool_dir: Option<PathBuf>,
}

pub(super) fn farm(args: FarmArgs) -> Result<ExitCode, CliError> {
    use crate::sim::farm;
    let bad = CliError::Input;
    // Outputs and the address before any work, each error naming its flag.
    super::check_output("--svg", args.svg.as_deref())?;
    super::check_output("--json", args.json.as_deref())?;
    super::check_output("--intervals", args.intervals.as_deref())?;
    super::check_address("--metrics-addr", args.metrics_addr)?;
    if let Some(dir) = &args.experiments
        && dir.exists()
        && !dir.is_dir()
    {
        return Err(bad(format!(
            "--experiments `{}`: is a file; expected a folder",
            dir.display()
        )));
    }
    let mut tb = crate::config::farm::load(&args.testbed).map_err(|e| bad(e.to_string()))?;
    if let Some(p) = args.policy {
        crate::policy::dispatch_policy(&p, 1).map_err(|e| bad(format!("--policy: {e}")))?;
        tb.spec.policy = p;
    }
    if let Some(c) = args.cache {
        let size: crate::units::Size = toml::Value::String(c.clone())
            .try_into()
            .map_err(|e| bad(format!("--cache `{c}`: {e}")))?;
        tb.spec.cache = size.0;
    }
    if args.fixed {
        tb.spec.drp = None;
    }
    if let Some(d) = args.disk_bandwidth {
        tb.spec.disk_bandwidth = if d == "none" {
            f64::INFINITY
        } else {
            let rate: crate::units::Rate = toml::Value::String(d.clone())
                .try_into()
                .map_err(|e| bad(format!("--disk-bandwidth `{d}`: {e}")))?;
            if rate.0.is_nan() || rate.0 <= 0.0 {
                return Err(bad(format!("--disk-bandwidth `{d}`: expected a rate > 0")));
            }
            rate.0
        };
    }
    if let Some(l) = args.peer_latency {
        if !(l.is_finite() && l >= 0.0) {
            return Err(bad(format!("--peer-latency {l}: expected seconds ≥ 0")));
        }
        tb.spec.peer_latency = l;
    }
    if args.no_cache {
        tb.spec.caching = false;
    }
    if let Some(dir) = &args.experiments {
        return experiments(&tb, dir);
    }
    if !(args.tolerance.is_finite() && args.tolerance >= 0.0) {
        return Err(bad(format!(
            "--tolerance: expected a fraction ≥ 0, found {}",
            args.tolerance
        )));
    }
    say!(
        "farm `{}` — {}, {}{}, {} tasks",
        tb.name,
        tb.spec.policy,
        if tb.spec.caching {
            format!("{} caches", human_bytes(tb.spec.cache as f64))
        } else {
            "no caching".to_string()
        },
        if tb.spec.drp.is_some() {
            ", provisioner on"
        } else {
            ""
        },
        tb.tasks.len()
    );
    let mut sim_run = None;
    if args.engine == Engine::Sim || args.validate {
        let started = std::time::Instant::now();
        let r = farm::run(&tb.spec, &tb.tasks).map_err(|e| bad(e.to_string()))?;
        say!("simulated ({:.2} s wall)", started.elapsed().as_secs_f64());
        print_farm(&r, &tb);
        sim_run = Some(r);
    }
    let mut live_run = None;
    let mut live_extra = None;
    if args.engine == Engine::Live || args.validate {
        let em = tb.emulation;
        say!(
            "live (time scale {}, byte scale {}: files of {} real bytes)",
            em.time_scale,
            em.byte_scale,
            em.real_bytes(tb.spec.file_size)
        );
        let opts = crate::live::farm::FarmOptions {
            run_id: format!("{}-{}-farm", tb.name, tb.spec.seed),
            testbed: tb.name.clone(),
            progress: Box::new(Progress::counting(tb.tasks.len(), "tasks")),
            corrupt_store_responses: 0,
            metrics_addr: args.metrics_addr,
            linger: args.linger,
            pool_root: args.pool_dir.clone(),
            registry: None,
        };
        let r = crate::live::farm::run(&tb.spec, &tb.tasks, em, opts).map_err(CliError::engine)?;
        print_farm(&r.run, &tb);
        say!(
            "  live            {:.1} s wall (setup {:.1} s); {} transfers, {} real; {} peer reads re-sent to the store; executors started {}, released {} (pools left {}); {} cached files verified",
            r.wall.as_secs_f64(),
            r.setup.as_secs_f64(),
            r.transfers,
            human_bytes(r.real_bytes as f64),
            r.rerouted,
            r.started,
            r.released,
            r.pools_left,
            r.files_verified
        );
        live_extra = Some(serde_json::json!({
            "wall_s": r.wall.as_secs_f64(),
            "setup_s": r.setup.as_secs_f64(),
            "transfers": r.transfers,
            "real_bytes": r.real_bytes,
            "rerouted": r.rerouted,
            "failed_reads": r.failed_reads,
            "executors_started": r.started,
            "executors_released": r.released,
            "pools_left": r.pools_left,
            "files_verified": r.files_verified,
        }));
        live_run = Some(r.run);
    }
    let shown = live_run.as_ref().or(sim_run.as_ref());
    if let (Some(path), Some(r)) = (&args.svg, shown) {
        let title = format!("{} — {}", tb.name, tb.spec.policy);
        crate::report::farm_view::summary_svg(r, path, &title, &tb.spec)
            .map_err(CliError::failed)?;
        say!("  summary view    {}", path.display());
    }
    if let (Some(path), Some(r)) = (&args.intervals, shown) {
        std::fs::write(path, r.intervals_csv(&tb.spec))
            .map_err(|e| CliError::Failed(format!("writing {}: {e}", path.display())))?;
        say!("  intervals       {}", path.display());
    }
    let rows = match (&sim_run, &live_run) {
        (Some(sim), Some(live)) => Some(crate::report::validate::farm_rows(sim, live)),
        _ => None,
    };
    if let Some(path) = &args.json {
        let record = serde_json::json!({
            "testbed": tb.name,
            "policy": tb.spec.policy,
            "seed": tb.spec.seed,
            "tasks": tb.tasks.len(),
            "interval_s": tb.spec.interval,
            "sim": sim_run,
            "live": live_run,
            "live_run": live_extra,
            "comparison": rows,
        });
        write_json(path, &record)?;
        say!("  record          {}", path.display());
    }
    if let (true, Some(sim), Some(live), Some(rows)) = (args.validate, &sim_run, &live_run, &rows) {
        use crate::report::validate;
        say!("\n{}", validate::rows_table(rows).trim_end());
        let dev = validate::deviation(sim.makespan, live.makespan).unwrap_or(f64::INFINITY);
        let ok = dev.abs() <= args.tolerance;
        say!(
            "makespan deviation {:+.1}% ({} the tolerance of {:.0}%)",
            100.0 * dev,
            if ok { "within" } else { "outside" },
            100.0 * args.tolerance
        );
        if !ok {
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs seed 001's experiment set on `tb` (simulated) and writes its table
/// and figures into `dir`.
fn experiments(
    tb: &crate::config::farm::FarmTestbed,
    dir: &Path,
) -> Result<ExitCode, CliError> {
    use crate::diffusion::experiments as ex;
    let failed = |e: &dyn std::fmt::Display| CliError::Failed(format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(|e| failed(&e))?;
    let set = ex::paper_set();
    let mut runs = Vec::with_capacity(set.len());
    for e in &set {
        let spec = e.spec(&tb.spec);
        let started = std::time::Instant::now();
        let r =
            crate::sim::farm::run(&spec, &tb.tasks).map_err(|e| CliError::Input(e.to_string()))?;
        say!(
            "{:<22} makespan {:>8.1} s  ({:.1} s wall)",
            e.name,
            r.makespan,
            started.elapsed().as_secs_f64()
        );
        let title = format!("{} — {}", tb.name, e.name);
        crate::report::farm_view::summary_svg(
            &r,
            &dir.join(format!("{}.svg", e.name)),
            &title,
            &spec,
        )
        .map_err(CliError::failed)?;
        runs.push((e.name.to_string(), r));
    }
    let ideal = ex::ideal_makespan(&tb.tasks, &tb.spec);
    let figs = ex::figures(&runs, &tb.spec, ideal);
    let steps: Vec<Vec<(f64, f64)>> = runs
        .iter()
        .map(|(_, r)| ex::slowdown_by_step(r, tb.step, tb.spec.interval))
        .collect();
    crate::report::farm_view::experiment_figures(dir, &figs, &steps).map_err(CliError::failed)?;
    let csv = dir.join("summary.csv");
    std::fs::write(&csv, ex::summary_csv(&set, &figs)).map_err(|e| failed(&e))?;
    let record = serde_json::json!({
        "testbed": tb.name,
        "seed": tb.spec.seed,
        "ideal_s": ideal,
        "step_s": tb.step,
        "runs": figs,
        "slowdown_by_step": runs.iter().zip(&steps).map(|((n, _), s)| (n.clone(), s.clone())).collect::<std::collections::BTreeMap<_, _>>(),
    });
    write_json(&dir.join("summary.json"), &record)?;
    say!(
        "\n{:<22} {:>9} {:>8} {:>7} {:>6} {:>8} {:>9}  local/global/miss",
        "run",
        "makespan",
        "speedup",
        "CPU h",
        "PI",
        "slowdown",
        "response"
    );
    for f in &figs {
        say!(
            "{:<22} {:>9.1} {:>8.2} {:>7.1} {:>6.2} {:>8.2} {:>9.1}  {:.1} / {:.1} / {:.1}%",
            f.name,
            f.makespan,
            f.speedup,
            f.cpu_hours,
            f.performance_index,
            f.slowdown,
            f.response_mean,
            f.reads_pct[0],
            f.reads_pct[1],
            f.reads_pct[2]
        );
    }
    say!("  table           {}", csv.display());
    Ok(ExitCode::SUCCESS)
}

/// Prints what a farm run measured.
fn print_farm(r: &crate::core::farm::FarmRun, tb: &crate::config::farm::FarmTestbed) {
    let ideal = tb.tasks.last().map_or(0.0, |t| t.arrival) + tb.spec.compute;
    let reads = (r.local_hits + r.global_hits + r.misses).max(1) as f64;
    let pct = |n: u64| 100.0 * n as f64 / reads;
    say!(
        "  makespan        {:>10.1} s (ideal {ideal:.1} s, efficiency {:.0}%), {} tasks",
        r.makespan,
        100.0 * ideal / r.makespan.max(1e-9),
        r.tasks
    );
    say!(
        "  reads           local {:.1}%  global {:.1}%  miss {:.1}%  ({} moved)",
        pct(r.local_hits),
        pct(r.global_hits),
        pct(r.misses),
        human_bytes(r.bytes_moved as f64)
    );
    say!(
        "  executors       peak {}, at the end {}; {:.1} CPU hours; utilization {:.0}%",
        r.peak_executors,
        r.final_executors,
        r.cpu_hours,
        100.0 * r.utilization
    );
    say!("  longest queue   {} tasks", r.peak_queue);
    say!(
        "  response time   mean {:.1} s (arrival to end); slowdown {:.2}",
        r.response_mean,
        r.makespan / ideal.max(1e-9)
    );
}
