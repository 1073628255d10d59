//! The `gridbed` command line: each command's body in its own file, the
//! binary's `main` only calls [`main`]. A command parses its arguments, loads
//! the scenario, calls an engine and prints a report. Exit codes: 0 done, 1
//! the run failed, 2 bad input ([`CliError`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::config::{self, Overrides, Scenario};

/// Prints a line to stdout; a closed pipe (`gridbed … | head`) is not an error
/// worth a panic, so write errors are ignored.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

pub mod bench;
mod calibrate;
mod farm;
mod flows;
mod inspect;
mod netbed;
mod resume;
mod run;
mod site;
pub mod sweep;
mod workflow;

/// Why a command failed, which decides its exit code.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad input: a testbed, a record, an option (exit 2).
    #[error("{0}")]
    Input(String),
    /// The command could not do its work (exit 1).
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    /// Bad input, said by `e`.
    pub fn input(e: impl std::fmt::Display) -> Self {
        CliError::Input(e.to_string())
    }
    /// A failure, said by `e`.
    pub fn failed(e: impl std::fmt::Display) -> Self {
        CliError::Failed(e.to_string())
    }
    /// A live run's failure: bad input (exit 2) when a policy's name or
    /// its external program failed or a site cannot be made as the testbed
    /// says, else a failure (exit 1).
    pub fn engine(e: crate::live::EngineError) -> Self {
        match e {
            crate::live::EngineError::Policy(p) => CliError::input(p),
            crate::live::EngineError::Setup(s) => CliError::input(s),
            e => CliError::failed(e),
        }
    }
    /// The process's exit code for it.
    pub fn code(&self) -> ExitCode {
        match self {
            CliError::Input(_) => ExitCode::from(2),
            CliError::Failed(_) => ExitCode::from(1),
        }
    }
}

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
    Run(run::RunArgs),
    /// Validate a testbed (and its site catalogue) without running it.
    Check(workflow::CheckArgs),
    /// Finish an interrupted run (a `kill -9`, a crash) from its control
    /// database: what ended does not run again, the rest runs.
    Resume(run::ResumeArgs),
    /// Run a testbed on both engines and compare them side by side.
    Validate(run::ValidateArgs),
    /// Fit the WMS model's knobs to WfCommons traces of real runs of one
    /// platform (least squares on makespan) and predict other traces.
    Calibrate(calibrate::CalibrateArgs),
    /// Run a grid of strategies × site counts × MAXPRE × seeds; CSV and charts.
    ///
    /// Writes `sweep.csv` (a row a run) and `summary.csv` (a row per
    /// strategy, site count and MAXPRE over its seeds: the makespan's mean,
    /// standard deviation and 95% confidence interval, and
    /// `speedup_total_runtime_over_makespan`, the jobs' runtimes summed over
    /// the makespan, seed 002's speedup over one CPU, mean of the runs), and
    /// the charts of seed 000's figures 4–7 and seed 002's 8–9. Names longer
    /// than 28 characters (an `external[cmd="…"]` program) show as the text
    /// before their `[` and a number, with a legend.
    Sweep(sweep::SweepArgs),
    /// Look at a testbed's workflow.
    #[command(subcommand)]
    Workflow(workflow::WorkflowCmd),
    /// Per-site submitted / ended / killed / ratio of a control database, and
    /// one job's history.
    Inspect(inspect::InspectArgs),
    /// Check a live run's kept pools against its control database: every
    /// registered replica on disk, intact, and nothing else there.
    Audit(inspect::AuditArgs),
    /// SVG plots of a finished run (Gantt, transfers, storage, queues) and an
    /// index.html, from its run record.
    Report(inspect::ReportArgs),
    /// Run one site as a daemon that a run's manager drives over HTTP (a
    /// testbed site with `url`).
    Site(site::SiteArgs),
    /// A testbed's sites as daemons in network namespaces, links shaped by
    /// the kernel (root): `up`, `down`.
    #[command(subcommand)]
    Netbed(netbed::NetbedCmd),
    /// A simulated run's transfers as a flow trace, and a trace replayed
    /// through the max-min model alone: `export`, `replay`.
    #[command(subcommand)]
    Flows(flows::FlowsCmd),
    /// Run a data-diffusion task farm (seed 001) from a farm testbed, simulated or live.
    Farm(farm::FarmArgs),
    /// Measure the manager, the live dispatcher and transfer throughput.
    Bench(bench::BenchArgs),
    /// Run a command and print its wall seconds and peak RSS as JSON (how
    /// `gridbed bench` measures whole commands from a small process: a
    /// child's peak RSS counts the memory of the process that spawned it).
    #[command(hide = true)]
    Measure(bench::MeasureArgs),
    /// One run of a sweep's plan, as a Slurm array task runs it (`sweep
    /// --backend slurm`).
    #[command(hide = true)]
    SweepTask(sweep::slurm::TaskArgs),
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
    format: Option<crate::workflow::formats::Format>,
    /// Run a `.dag` from none of its rescue DAGs (DAGMan's `-AutoRescue 0`);
    /// by default a run starts from the newest `x.dag.rescueNNN` beside it.
    #[arg(long, conflicts_with = "rescue_from")]
    no_rescue: bool,
    /// Run a `.dag` from its rescue DAG number N (DAGMan's `-DoRescueFrom N`).
    #[arg(long, value_name = "N")]
    rescue_from: Option<u32>,
    /// Run a `.dag` from a save file one of its nodes wrote
    /// (`SAVE_POINT_FILE`; DAGMan's `-load_save FILE`): a bare name is
    /// looked for in `save_files/` beside the DAG.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["rescue_from", "no_rescue"])]
    load_save: Option<PathBuf>,
    /// Run a `.dag` from this rescue file (DAGMan's `-RescueFile FILE`):
    /// the rescues numbered after the one it names (all, for a file not
    /// named `x.dag.rescueNNN`) become `.old`, and sub-DAGs start from
    /// their own rescue of that number.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["rescue_from", "no_rescue", "load_save"])]
    rescue_file: Option<PathBuf>,
    /// A `.dag`'s jobs in the queue at once (DAGMan's `-maxjobs`, over its
    /// CONFIG's `DAGMAN_MAX_JOBS_SUBMITTED`); 0 = no limit.
    #[arg(long, value_name = "N")]
    maxjobs: Option<usize>,
    /// A `.dag`'s jobs idle in the queue at once (DAGMan's `-maxidle`, over
    /// `DAGMAN_MAX_JOBS_IDLE`); 0 = no limit.
    #[arg(long, value_name = "N")]
    maxidle: Option<usize>,
    /// A `.dag`'s POST scripts running at once (DAGMan's `-maxpost`, over
    /// `DAGMAN_MAX_POST_SCRIPTS`); 0 = no limit.
    #[arg(long, value_name = "N")]
    maxpost: Option<usize>,
    /// A `.dag` node whose PRE script fails still runs its POST script,
    /// which decides the node (DAGMan's `-AlwaysRunPost`, over
    /// `DAGMAN_ALWAYS_RUN_POST`).
    #[arg(long)]
    always_run_post: bool,
}

/// `--format`'s values, from the workflow room's own list of formats.
fn format_parser() -> impl clap::builder::TypedValueParser<Value = crate::workflow::formats::Format>
{
    use crate::workflow::formats::Format;
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
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

impl Engine {
    /// Its name on the command line.
    fn name(self) -> &'static str {
        match self {
            Engine::Live => "live",
            Engine::Sim => "sim",
        }
    }

    /// The engine of that name.
    fn from_name(name: &str) -> Option<Engine> {
        [Engine::Live, Engine::Sim]
            .into_iter()
            .find(|e| e.name() == name)
    }
}

/// Parses seconds for an option: finite and ≥ 0, at most a year (a
/// duration no run needs more of), so that no value can overflow a timer.
fn seconds(text: &str) -> Result<std::time::Duration, String> {
    const YEAR: f64 = 365.0 * 86_400.0;
    match text.trim().parse::<f64>() {
        Ok(s) if (0.0..=YEAR).contains(&s) => Ok(std::time::Duration::from_secs_f64(s)),
        _ => Err(format!("expected seconds from 0 to {YEAR}, found `{text}`")),
    }
}

fn load(args: &ScenarioArgs) -> Result<Scenario, CliError> {
    load_with(args, false, false)
}

/// [`load`] for a run (`memoize`: with `--memo`): a `.dag` refused as it
/// is read gets DAGMan's log of its refusal, as a DAGMan that fails to
/// parse its DAG writes it.
fn load_to_run(args: &ScenarioArgs, memoize: bool) -> Result<Scenario, CliError> {
    load_with(args, true, memoize)
}

fn load_with(args: &ScenarioArgs, log_refusal: bool, memoize: bool) -> Result<Scenario, CliError> {
    let overrides = Overrides {
        log_refusal,
        memoize,
        strategy: args.strategy.clone(),
        seed: args.seed,
        sites_file: args.sites.clone(),
        workflow: args.workflow.clone(),
        format: args.format,
        rescue: {
            use crate::workflow::formats::dagman::rescue::Rescue;
            match (args.no_rescue, args.rescue_from, &args.load_save, &args.rescue_file) {
                (true, ..) => Some(Rescue::Ignore),
                (false, Some(n), ..) => Some(Rescue::From(n)),
                (false, None, Some(f), _) => Some(Rescue::SaveFile(f.clone())),
                (false, None, None, Some(f)) => Some(Rescue::File(f.clone())),
                (false, None, None, None) => None,
            }
        },
    };
    let mut s = config::load(&args.testbed, &overrides).map_err(CliError::input)?;
    let limits = [args.maxjobs, args.maxidle, args.maxpost];
    if limits.iter().any(Option::is_some) || args.always_run_post {
        // DAGMan's command line wins over its CONFIG file.
        let Some(info) = s.source.as_mut().and_then(|src| src.dagman.as_mut()) else {
            return Err(CliError::Input(match limits.iter().any(Option::is_some) {
                true => "--maxjobs, --maxidle and --maxpost apply to a .dag workflow".into(),
                false => "--always-run-post applies to a .dag workflow".into(),
            }));
        };
        let [jobs, idle, post] = limits;
        info.max_jobs_submitted = jobs.or(info.max_jobs_submitted);
        info.max_jobs_idle = idle.or(info.max_jobs_idle);
        info.max_post = post.or(info.max_post);
        if args.always_run_post {
            info.always_run_post = Some(true);
        }
    }
    if let Some(src) = &s.source {
        for w in &src.warnings {
            eprintln!("warning: {}: {w}", src.path.display());
        }
    }
    Ok(s)
}

/// Runs the command line: parses the arguments, runs the command, and
/// turns its error into a message on stderr and an exit code.
pub fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                // A reset injected on purpose (`[[fault]] kind = "reset"`)
                // is an error to actix's HTTP layer, not to the user.
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,actix_http=off")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    // The commands that run work stop on SIGINT/SIGTERM as
    // [`crate::interrupt`] says, and exit 128 + the signal.
    let stoppable = matches!(
        cli.cmd,
        Cmd::Run(_) | Cmd::Resume(_) | Cmd::Sweep(_) | Cmd::Farm(_)
    );
    if stoppable && let Err(e) = crate::interrupt::watch() {
        eprintln!("warning: SIGINT and SIGTERM will end the process at once: {e}");
    }
    let result = match cli.cmd {
        Cmd::Run(args) => run::run(args),
        Cmd::Check(args) => workflow::check(args),
        Cmd::Validate(args) => run::validate(args),
        Cmd::Calibrate(args) => calibrate::calibrate(args),
        Cmd::Sweep(args) => sweep::command(args),
        Cmd::Inspect(args) => inspect::inspect(args),
        Cmd::Resume(args) => run::resume(args),
        Cmd::Audit(args) => inspect::audit(args),
        Cmd::Report(args) => inspect::report(args),
        Cmd::Farm(args) => farm::farm(args),
        Cmd::Site(args) => site::site(args),
        Cmd::Netbed(cmd) => netbed::netbed(cmd),
        Cmd::Flows(cmd) => flows::flows(cmd),
        Cmd::Workflow(workflow::WorkflowCmd::Stats { scenario, json }) => {
            workflow::workflow_stats(&scenario, json)
        }
        Cmd::Workflow(workflow::WorkflowCmd::Write { scenario, out }) => {
            workflow::workflow_write(&scenario, &out)
        }
        Cmd::Measure(args) => bench::measure_command(args),
        Cmd::SweepTask(args) => sweep::slurm::task(args),
        Cmd::Bench(args) => bench::run(args)
            .map(|()| ExitCode::SUCCESS)
            .map_err(CliError::failed),
    };
    if let Some(sig) = crate::interrupt::requested() {
        if let Err(e) = &result {
            eprintln!("error: {e}");
        }
        eprintln!(
            "stopped by {}: what ran up to then is in the outputs written above",
            crate::interrupt::name(sig)
        );
        return ExitCode::from(u8::try_from(128 + sig).unwrap_or(1));
    }
    result.unwrap_or_else(|e| {
        eprintln!("error: {e}");
        e.code()
    })
}

/// Writes `value` as pretty JSON to `path`.
/// Refuses, before any work, an output file that could not be written
/// after it: its folder missing or not a folder, or the path a folder
/// itself. The error names the flag (exit 2).
fn check_output(flag: &str, path: Option<&std::path::Path>) -> Result<(), CliError> {
    let Some(path) = path else {
        return Ok(());
    };
    let refuse = |why: String| CliError::Input(format!("{flag} `{}`: {why}", path.display()));
    if path.is_dir() {
        return Err(refuse("is a folder; expected a file".into()));
    }
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    if !folder.is_dir() {
        return Err(refuse(format!(
            "its folder `{}` does not exist",
            folder.display()
        )));
    }
    Ok(())
}

/// Refuses, before any work, an address to serve on that is taken or not
/// this machine's, naming the flag (exit 2).
fn check_address(flag: &str, addr: Option<SocketAddr>) -> Result<(), CliError> {
    let Some(addr) = addr else {
        return Ok(());
    };
    std::net::TcpListener::bind(addr)
        .map(drop)
        .map_err(|e| CliError::Input(format!("{flag} {addr}: cannot listen there: {e}")))
}

fn write_json<T: serde::Serialize>(path: &std::path::Path, value: &T) -> Result<(), CliError> {
    let fail =
        |e: &dyn std::fmt::Display| CliError::Failed(format!("writing {}: {e}", path.display()));
    let file = std::fs::File::create(path).map_err(|e| fail(&e))?;
    let mut out = std::io::BufWriter::new(file);
    serde_json::to_writer_pretty(&mut out, value).map_err(|e| fail(&e))?;
    std::io::Write::flush(&mut out).map_err(|e| fail(&e))
}
