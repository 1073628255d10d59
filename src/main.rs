//! The `gridbed` command line: parse arguments, load the scenario, call an
//! engine, print a report. Exit codes: 0 done, 1 the run failed, 2 bad input.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use gridbed::config::{self, Overrides, Scenario};
use gridbed::core::observer::BoxedObserver;
use gridbed::live::{self, LiveOptions};
use gridbed::report::validate::Comparison;
use gridbed::report::{Detail, Progress, RunRecord};
use gridbed::sim;
use gridbed::units::human_bytes;

/// A live grid emulator with real transfers: runs a workflow across a mock grid
/// of sites on loopback, with DAGMan semantics and the papers' site selectors,
/// moving every byte for real.
#[derive(Parser)]
#[command(name = "gridbed", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a testbed (live by default, or simulated) and print a summary.
    Run(RunArgs),
    /// Validate a testbed (and its site catalogue) without running it.
    Check(CheckArgs),
    /// Run a testbed on both engines and compare them side by side.
    Validate(ValidateArgs),
    /// Run a grid of strategies × site counts × MAXPRE × seeds; CSV and charts.
    Sweep(gridbed::sweep::SweepArgs),
    /// Look at a testbed's workflow.
    #[command(subcommand)]
    Workflow(WorkflowCmd),
    /// Per-site submitted / ended / killed / ratio of a control database, and
    /// one job's history.
    Inspect(InspectArgs),
    /// SVG plots of a finished run (Gantt, transfers, storage, queues) and an
    /// index.html, from its run record.
    Report(ReportArgs),
    /// Simulate a data-diffusion task farm (seed 001) from a farm testbed.
    Farm(FarmArgs),
    /// Measure the manager, the live dispatcher and transfer throughput.
    Bench(gridbed::bench::BenchArgs),
}

#[derive(Args)]
struct ScenarioArgs {
    /// The testbed file (e.g. testbeds/quickstart.toml).
    testbed: PathBuf,
    /// Site selector, overriding the testbed's `strategy`.
    #[arg(long)]
    strategy: Option<String>,
    /// Seed, overriding the testbed's `seed`.
    #[arg(long)]
    seed: Option<u64>,
    /// Site catalogue, overriding the testbed's `sites_file`.
    #[arg(long, value_name = "FILE")]
    sites: Option<PathBuf>,
    /// A workflow file (WfFormat JSON, Pegasus DAX or YAML, DAGMan .dag) run
    /// instead of the testbed's workflow; its format is found from its content.
    #[arg(long, value_name = "FILE")]
    workflow: Option<PathBuf>,
    /// The format of `--workflow` (or of a workflow file given to `workflow
    /// stats`), instead of telling it from the content.
    #[arg(long, value_parser = format_parser())]
    format: Option<gridbed::workflow::formats::Format>,
}

/// `--format`'s values, from the workflow room's own list of formats.
fn format_parser()
-> impl clap::builder::TypedValueParser<Value = gridbed::workflow::formats::Format> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    use gridbed::workflow::formats::Format;
    PossibleValuesParser::new(
        Format::ALL.map(|f| PossibleValue::new(f.name()).help(f.description())),
    )
    .map(|name| Format::from_name(&name).unwrap_or(Format::Auto))
}

/// Which engine runs a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Engine {
    /// Actix sites on loopback, real transfers, wall clock.
    Live,
    /// Discrete-event simulation on a virtual clock.
    Sim,
}

#[derive(Args)]
struct RunArgs {
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
    #[arg(long, value_name = "SECS", default_value_t = 0.0)]
    linger: f64,
    /// No progress display.
    #[arg(long, short)]
    quiet: bool,
    /// Where the live sites keep their pools (default: /dev/shm when the run
    /// fits there, else the system temp dir).
    #[arg(long, value_name = "DIR")]
    pool_dir: Option<PathBuf>,
    /// Write the control database (SQLite) here as the run goes (default:
    /// beside the run record, `RECORD.db`, when `--json` is given).
    #[arg(long, value_name = "FILE")]
    db: Option<PathBuf>,
}

#[derive(Args)]
struct FarmArgs {
    /// A farm testbed (e.g. testbeds/falkon-diffusion.toml).
    testbed: PathBuf,
    /// Dispatch policy, overriding the testbed's.
    #[arg(long)]
    policy: Option<String>,
    /// Cache per executor (e.g. "1.5 GB"), overriding the testbed's.
    #[arg(long)]
    cache: Option<String>,
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
    /// Live: serve Prometheus metrics on this address.
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
    /// Live: keep /metrics up this many seconds after the run.
    #[arg(long, value_name = "SECS", default_value_t = 0.0)]
    linger: f64,
    /// Live: where the executors' pools and the store go.
    #[arg(long, value_name = "DIR")]
    pool_dir: Option<PathBuf>,
}

#[derive(Args)]
struct ReportArgs {
    /// A run record written by `gridbed run --json` (sim or live).
    record: PathBuf,
    /// The directory to write the plots and index.html into.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

#[derive(Args)]
struct InspectArgs {
    /// A control database written by `gridbed run --db`.
    db: PathBuf,
    /// Also print this job's attempts.
    #[arg(long, value_name = "NAME")]
    job: Option<String>,
}

#[derive(Args)]
struct ValidateArgs {
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

#[derive(Subcommand)]
enum WorkflowCmd {
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
struct CheckArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
}

/// Prints a line to stdout; a closed pipe (`gridbed … | head`) is not an error
/// worth a panic, so write errors are ignored.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

fn load(args: &ScenarioArgs) -> Result<Scenario, ExitCode> {
    let overrides = Overrides {
        strategy: args.strategy.clone(),
        seed: args.seed,
        sites_file: args.sites.clone(),
        workflow: args.workflow.clone(),
        format: args.format,
    };
    let s = config::load(&args.testbed, &overrides).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })?;
    if let Some(src) = &s.source {
        for w in &src.warnings {
            eprintln!("warning: {}: {w}", src.path.display());
        }
    }
    Ok(s)
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Run(args) => run(args),
        Cmd::Check(args) => check(args),
        Cmd::Validate(args) => validate(args),
        Cmd::Sweep(args) => sweep(args),
        Cmd::Inspect(args) => inspect(args),
        Cmd::Report(args) => report(args),
        Cmd::Farm(args) => farm(args),
        Cmd::Workflow(WorkflowCmd::Stats { scenario, json }) => workflow_stats(&scenario, json),
        Cmd::Bench(args) => gridbed::bench::run(args)
            .map(|()| ExitCode::SUCCESS)
            .map_err(|e| {
                eprintln!("error: {e}");
                ExitCode::from(1)
            }),
    };
    result.unwrap_or_else(|code| code)
}

fn farm(args: FarmArgs) -> Result<ExitCode, ExitCode> {
    use gridbed::diffusion::{config, farm};
    let bad = |m: String| {
        eprintln!("error: {m}");
        ExitCode::from(2)
    };
    let mut tb = config::load(&args.testbed).map_err(|e| bad(e.to_string()))?;
    if let Some(p) = args.policy {
        gridbed::policy::dispatch_policy(&p, 1).map_err(|e| bad(format!("--policy: {e}")))?;
        tb.spec.policy = p;
    }
    if let Some(c) = args.cache {
        let size: gridbed::units::Size = toml::Value::String(c.clone())
            .try_into()
            .map_err(|e| bad(format!("--cache `{c}`: {e}")))?;
        tb.spec.cache = size.0;
    }
    if args.fixed {
        tb.spec.drp = None;
    }
    if args.no_cache {
        tb.spec.caching = false;
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
        let opts = gridbed::live::farm::FarmOptions {
            run_id: format!("{}-{}-farm", tb.name, tb.spec.seed),
            testbed: tb.name.clone(),
            progress: Box::new(Progress::counting(tb.tasks.len(), "tasks")),
            corrupt_store_responses: 0,
            metrics_addr: args.metrics_addr,
            linger: std::time::Duration::from_secs_f64(args.linger.max(0.0)),
            pool_root: args.pool_dir.clone(),
        };
        let r = gridbed::live::farm::run(&tb.spec, &tb.tasks, em, opts).map_err(|e| {
            eprintln!("error: {e}");
            ExitCode::from(1)
        })?;
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
        gridbed::report::farm_view::summary_svg(r, path, &title, &tb.spec).map_err(|e| {
            eprintln!("error: {e}");
            ExitCode::from(1)
        })?;
        say!("  summary view    {}", path.display());
    }
    if let (Some(path), Some(r)) = (&args.intervals, shown) {
        std::fs::write(path, r.intervals_csv(&tb.spec)).map_err(|e| {
            eprintln!("error: writing {}: {e}", path.display());
            ExitCode::from(1)
        })?;
        say!("  intervals       {}", path.display());
    }
    let rows = match (&sim_run, &live_run) {
        (Some(sim), Some(live)) => Some(gridbed::report::validate::farm_rows(sim, live)),
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
        use gridbed::report::validate;
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

/// Prints what a farm run measured.
fn print_farm(r: &gridbed::diffusion::farm::FarmRun, tb: &gridbed::diffusion::config::FarmTestbed) {
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
}

fn report(args: ReportArgs) -> Result<ExitCode, ExitCode> {
    use gridbed::report::run_report;
    let rec = run_report::read_record(&args.record).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })?;
    let written = run_report::write_report(&rec, &args.out).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(1)
    })?;
    for path in &written {
        say!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn check(args: CheckArgs) -> Result<ExitCode, ExitCode> {
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

fn run(args: RunArgs) -> Result<ExitCode, ExitCode> {
    let scenario = load(&args.scenario)?;
    if !(args.linger.is_finite() && args.linger >= 0.0) {
        eprintln!(
            "error: --linger: expected seconds ≥ 0, found {}",
            args.linger
        );
        return Err(ExitCode::from(2));
    }
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
            let db = gridbed::db::ControlDb::create(
                path,
                &run,
                &scenario.site_infos(),
                &scenario.workflow,
            )
            .map_err(|e| {
                eprintln!("error: control database {e}");
                ExitCode::from(1)
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
            if args.metrics_addr.is_some() || args.linger > 0.0 || args.pool_dir.is_some() {
                eprintln!(
                    "note: --metrics-addr, --linger and --pool-dir apply to the live engine only"
                );
            }
            // A simulated run is a function of the scenario: its id is too.
            let run_id = format!("{}-{}-sim", scenario.name, scenario.seed);
            let result = sim::run_recorded(&scenario, db).map_err(|e| {
                eprintln!("error: {e}");
                ExitCode::from(2)
            })?;
            db_error = result.db_error.clone();
            let record = RunRecord::from_run(&scenario, &result, &run_id, detail);
            say!("{}", record.table().trim_end());
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
                linger: Duration::from_secs_f64(args.linger),
                progress,
                run_id: run_id.clone(),
                pool_root: args.pool_dir.clone(),
                db,
            };
            let result = live::run(&scenario, opts).map_err(|e| {
                eprintln!("error: {e}");
                ExitCode::from(1)
            })?;
            db_error = result.db_error.clone();
            let record = RunRecord::from_run(&scenario, &result, &run_id, detail);
            say!("{}", record.table().trim_end());
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
        eprintln!("error: control database {e}");
        return Ok(ExitCode::from(1));
    }
    let s = &record.summary;
    if s.succeeded && s.corrupt_at_end == 0 {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "error: the run did not complete: {} of {} jobs ended ({} failed, {} blocked)",
            s.jobs_done, s.jobs, s.jobs_failed, s.jobs_blocked
        );
        Ok(ExitCode::from(1))
    }
}

fn inspect(args: InspectArgs) -> Result<ExitCode, ExitCode> {
    let bad = |e: gridbed::db::DbError| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    };
    let sites = gridbed::db::site_rows(&args.db).map_err(bad)?;
    say!(
        "{:<20} {:>10} {:>8} {:>8} {:>8}",
        "site",
        "submitted",
        "ended",
        "killed",
        "ratio"
    );
    for s in &sites {
        let ratio = if s.submitted == 0 {
            "-".to_string()
        } else {
            format!("{:.3}", s.ended as f64 / s.submitted as f64)
        };
        say!(
            "{:<20} {:>10} {:>8} {:>8} {:>8}",
            s.name,
            s.submitted,
            s.ended,
            s.killed,
            ratio
        );
    }
    if let Some(job) = &args.job {
        let history = gridbed::db::job_history(&args.db, job).map_err(bad)?;
        if history.is_empty() {
            eprintln!("error: {}: no job named `{job}`", args.db.display());
            return Ok(ExitCode::from(2));
        }
        say!("\njob {job}");
        let t = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}"));
        for (i, a) in history.iter().enumerate() {
            say!(
                "  attempt {i}: {} prescript {:.1} submitted {} started {} ended {} → {}{}",
                a.site,
                a.prescript,
                t(a.submitted),
                t(a.started),
                t(a.ended),
                a.outcome,
                a.reason
                    .as_ref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn workflow_stats(args: &ScenarioArgs, json: bool) -> Result<ExitCode, ExitCode> {
    use gridbed::workflow::formats;
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
        let loaded = formats::load(&args.testbed, &opts).map_err(|e| {
            eprintln!("error: {e}");
            ExitCode::from(2)
        })?;
        for w in &loaded.warnings {
            eprintln!("warning: {}: {w}", args.testbed.display());
        }
        let name = format!("{} ({})", args.testbed.display(), loaded.format.name());
        (name, std::sync::Arc::new(loaded.workflow), None)
    };
    let st = wf.stats();
    if json {
        let text = serde_json::to_string_pretty(&st).map_err(|e| {
            eprintln!("error: {e}");
            ExitCode::from(1)
        })?;
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

fn sweep(args: gridbed::sweep::SweepArgs) -> Result<ExitCode, ExitCode> {
    use gridbed::sweep::SweepError;
    let rows = gridbed::sweep::run(&args).map_err(|e| {
        eprintln!("error: {e}");
        match e {
            SweepError::Config(_) | SweepError::Invalid(_) => ExitCode::from(2),
            SweepError::Run(_) => ExitCode::from(1),
        }
    })?;
    say!(
        "{:<16} {:>5} {:>6} {:>5} {:>12} {:>10} {:>9} {:>8}",
        "strategy",
        "sites",
        "maxpre",
        "seed",
        "makespan h",
        "transfers",
        "evicted",
        "wall s"
    );
    for r in &rows {
        say!(
            "{:<16} {:>5} {:>6} {:>5} {:>12.2} {:>10} {:>9} {:>8.2}{}",
            r.strategy,
            r.sites,
            r.maxpre,
            r.seed,
            r.makespan_s / 3600.0,
            r.transfers,
            r.evictions,
            r.wall_s,
            if r.succeeded {
                ""
            } else {
                "  (did not complete)"
            }
        );
    }
    let summary = gridbed::sweep::summarize(&rows);
    if summary.iter().any(|s| s.runs > 1) {
        say!(
            "\n{:<16} {:>5} {:>6} {:>5} {:>14} {:>12} {:>14} {:>8}",
            "strategy",
            "sites",
            "maxpre",
            "runs",
            "mean min",
            "sd min",
            "95% CI min",
            "speedup"
        );
        for s in &summary {
            say!(
                "{:<16} {:>5} {:>6} {:>5} {:>14.1} {:>12.1} {:>14} {:>8.1}",
                s.strategy,
                s.sites,
                s.maxpre,
                s.runs,
                s.mean_s / 60.0,
                s.sd_s / 60.0,
                format!("± {:.1}", s.ci95_s / 60.0),
                s.speedup
            );
        }
    }
    say!("\nCSV and charts written to {}", args.out.display());
    if rows.iter().all(|r| r.succeeded) {
        Ok(ExitCode::SUCCESS)
    } else {
        Ok(ExitCode::from(1))
    }
}

fn validate(args: ValidateArgs) -> Result<ExitCode, ExitCode> {
    let scenario = load(&args.scenario)?;
    if !(args.tolerance.is_finite() && args.tolerance >= 0.0) {
        eprintln!(
            "error: --tolerance: expected a fraction ≥ 0, found {}",
            args.tolerance
        );
        return Err(ExitCode::from(2));
    }
    let run_id = format!("{}-{}-validate", scenario.name, scenario.seed);
    let sim_run = sim::run(&scenario).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })?;
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
    let live_run = live::run(&scenario, opts).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(1)
    })?;
    let live_record = RunRecord::from_run(&scenario, &live_run, &run_id, Detail::Full);
    let cmp = Comparison::new(&sim_record, &live_record, args.tolerance);
    say!("{}", cmp.table().trim_end());
    if let Some(path) = &args.json {
        write_json(path, &cmp)?;
        say!("\ncomparison written to {}", path.display());
    }
    let complete = sim_record.summary.succeeded && live_record.summary.succeeded;
    if !complete {
        eprintln!("error: a run did not complete");
    }
    if cmp.within_tolerance && complete {
        Ok(ExitCode::SUCCESS)
    } else {
        Ok(ExitCode::from(1))
    }
}

/// Writes `value` as pretty JSON to `path`.
fn write_json<T: serde::Serialize>(path: &std::path::Path, value: &T) -> Result<(), ExitCode> {
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("error: writing {}: {e}", path.display());
        ExitCode::from(1)
    };
    let file = std::fs::File::create(path).map_err(|e| fail(&e))?;
    let mut out = std::io::BufWriter::new(file);
    serde_json::to_writer_pretty(&mut out, value).map_err(|e| fail(&e))?;
    std::io::Write::flush(&mut out).map_err(|e| fail(&e))
}
