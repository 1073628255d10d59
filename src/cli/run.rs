//! `gridbed run` and `gridbed validate`: a testbed on one engine, or on both
//! side by side.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{CliError, Engine, ScenarioArgs, SocketAddr, load, write_json};
use crate::core::observer::BoxedObserver;
use crate::live::{self, LiveOptions};
use crate::report::validate::Comparison;
use crate::report::{Detail, Progress, RunRecord};
use crate::sim;

#[derive(Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// The engine.
    #[arg(long, value_enum, default_value_t = Engine::Live)]
    engine: Engine,
    /// Write the run record (JSON, see docs/run-record.md) here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Serve Prometheus metrics on this address (e.g. 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
    /// Keep /metrics up this many seconds after the run.
    #[arg(long, value_name = "SECS", default_value = "0", value_parser = super::seconds)]
    linger: std::time::Duration,
    /// No progress display.
    #[arg(long, short)]
    quiet: bool,
    /// Where the live sites keep their pools (default: /dev/shm when the run
    /// fits there, else the system temp dir).
    #[arg(long, value_name = "DIR")]
    pool_dir: Option<PathBuf>,
    /// Leave the live sites' pools in DIR after the run, their paths in the
    /// control database (`gridbed audit` checks them against it).
    #[arg(long, value_name = "DIR", conflicts_with = "pool_dir")]
    keep_pools: Option<PathBuf>,
    /// Write the control database (SQLite) here as the run goes (default:
    /// beside the run record, `RECORD.db`, when `--json` is given).
    #[arg(long, value_name = "FILE")]
    db: Option<PathBuf>,
    /// Let --db replace a file that is not a gridbed control database
    /// (without it such a file is left alone and the run refused).
    #[arg(long)]
    force: bool,
    /// Write the run's engine-neutral trace here (JSON Lines: job phases,
    /// transfers, evictions, in time order).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct ValidateArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Largest makespan deviation (live vs sim) accepted, as a fraction.
    #[arg(long, default_value_t = 0.10)]
    tolerance: f64,
    /// Write the comparison (JSON) here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// No progress display.
    #[arg(long, short)]
    quiet: bool,
    /// Where the live sites keep their pools (default as for `run`).
    #[arg(long, value_name = "DIR")]
    pool_dir: Option<PathBuf>,
}

pub(super) fn run(args: RunArgs) -> Result<ExitCode, CliError> {
    let scenario = load(&args.scenario)?;
    let db_path = args
        .db
        .clone()
        .or_else(|| args.json.as_ref().map(|j| j.with_extension("db")));
    let engine_name = match args.engine {
        Engine::Live => "live",
        Engine::Sim => "sim",
    };
    let db = match &db_path {
        Some(path) => {
            let run = [
                ("testbed", scenario.name.clone()),
                ("strategy", scenario.strategy.clone()),
                ("engine", engine_name.to_string()),
                ("seed", scenario.seed.to_string()),
            ];
            let db = crate::db::ControlDb::create(
                path,
                args.force,
                &run,
                &scenario.site_infos(),
                &scenario.workflow,
            )
            .map_err(|e| match e {
                crate::db::DbError::NotOurs { .. } => CliError::input(format!("--db: {e}")),
                _ => CliError::Failed(format!("control database {e}")),
            })?;
            Some(db)
        }
        None => None,
    };
    let db_error;
    let detail = if args.json.is_some() {
        Detail::Full
    } else {
        Detail::Summary
    };
    let record = match args.engine {
        Engine::Sim => {
            if args.metrics_addr.is_some()
                || !args.linger.is_zero()
                || args.pool_dir.is_some()
                || args.keep_pools.is_some()
            {
                eprintln!(
                    "note: --metrics-addr, --linger, --pool-dir and --keep-pools apply to the live engine only"
                );
            }
            // A simulated run is a function of the scenario: its id is too.
            let run_id = format!("{}-{}-sim", scenario.name, scenario.seed);
            let result = sim::run_recorded(&scenario, db).map_err(CliError::input)?;
            db_error = result.db_error.clone();
            let record = RunRecord::from_run(&scenario, &result, &run_id, detail);
            say!("{}", record.table().trim_end());
            write_trace(args.trace.as_deref(), &result.records)?;
            say!(
                "  simulated     {} events in {:.2} s wall",
                result.events,
                result.wall.as_secs_f64()
            );
            record
        }
        Engine::Live => {
            let run_id = format!(
                "{}-{}-{}",
                scenario.name,
                scenario.seed,
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0)
            );
            let progress: BoxedObserver = if args.quiet {
                Box::new(Progress::Hidden)
            } else {
                Box::new(Progress::for_stderr(scenario.workflow.jobs.len()))
            };
            let opts = LiveOptions {
                metrics_addr: args.metrics_addr,
                linger: args.linger,
                progress,
                run_id: run_id.clone(),
                pool_root: args.keep_pools.clone().or_else(|| args.pool_dir.clone()),
                db,
                keep_pools: args.keep_pools.is_some(),
            };
            let result = live::run(&scenario, opts).map_err(CliError::failed)?;
            db_error = result.db_error.clone();
            let record = RunRecord::from_run(&scenario, &result, &run_id, detail);
            say!("{}", record.table().trim_end());
            write_trace(args.trace.as_deref(), &result.records)?;
            record
        }
    };
    if let Some(path) = &args.json {
        write_json(path, &record)?;
        say!("\nrun record written to {}", path.display());
    }
    if let Some(path) = &db_path {
        say!("control database written to {}", path.display());
    }
    if let Some(e) = db_error {
        return Err(CliError::Failed(format!("control database {e}")));
    }
    let s = &record.summary;
    if s.succeeded && s.corrupt_at_end == 0 {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(CliError::Failed(format!(
            "the run did not complete: {} of {} jobs ended ({} failed, {} blocked)",
            s.jobs_done, s.jobs, s.jobs_failed, s.jobs_blocked
        )))
    }
}

pub(super) fn validate(args: ValidateArgs) -> Result<ExitCode, CliError> {
    let scenario = load(&args.scenario)?;
    if !(args.tolerance.is_finite() && args.tolerance >= 0.0) {
        return Err(CliError::Input(format!(
            "--tolerance: expected a fraction ≥ 0, found {}",
            args.tolerance
        )));
    }
    let run_id = format!("{}-{}-validate", scenario.name, scenario.seed);
    let sim_run = sim::run(&scenario).map_err(CliError::input)?;
    let sim_record = RunRecord::from_run(&scenario, &sim_run, &run_id, Detail::Full);
    let progress: BoxedObserver = if args.quiet {
        Box::new(Progress::Hidden)
    } else {
        Box::new(Progress::for_stderr(scenario.workflow.jobs.len()))
    };
    let opts = LiveOptions {
        progress,
        run_id: run_id.clone(),
        pool_root: args.pool_dir.clone(),
        ..Default::default()
    };
    let live_run = live::run(&scenario, opts).map_err(CliError::failed)?;
    let live_record = RunRecord::from_run(&scenario, &live_run, &run_id, Detail::Full);
    let cmp = Comparison::new(&sim_record, &live_record, args.tolerance)
        .with_traces(&sim_run.records.trace(), &live_run.records.trace());
    say!("{}", cmp.table().trim_end());
    if let Some(path) = &args.json {
        write_json(path, &cmp)?;
        say!("\ncomparison written to {}", path.display());
    }
    if !(sim_record.summary.succeeded && live_record.summary.succeeded) {
        return Err(CliError::Failed("a run did not complete".into()));
    }
    Ok(if cmp.within_tolerance {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Writes the run's trace to `path`, if given.
fn write_trace(
    path: Option<&std::path::Path>,
    records: &crate::core::records::Records,
) -> Result<(), CliError> {
    let Some(path) = path else { return Ok(()) };
    crate::report::write_trace(path, &records.trace())
        .map_err(|e| CliError::Failed(format!("writing {}: {e}", path.display())))?;
    say!("trace written to {}", path.display());
    Ok(())
}
