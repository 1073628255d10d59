//! `gridbed run` and `gridbed validate`: a testbed on one engine, or on both
//! side by side.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{
    CliError, Engine, ScenarioArgs, SocketAddr, check_address, check_output, load, load_to_run,
    write_json,
};
use crate::config::{Scenario, WorkflowSource};
use crate::core::observer::BoxedObserver;
use crate::live::{self, LiveOptions};
use crate::report::validate::Comparison;
use crate::report::{Detail, Progress, RunRecord};
use crate::sim;
use crate::workflow::formats::dagman::files::{self as dagman_files, DagFile};

#[derive(Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// The engine.
    #[arg(long, value_enum, default_value_t = Engine::Live)]
    engine: Engine,
    #[command(flatten)]
    out: OutputArgs,
    /// Serve Prometheus metrics on this address (e.g. 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
    /// Keep /metrics up this many seconds after the run.
    #[arg(long, value_name = "SECS", default_value = "0", value_parser = super::seconds)]
    linger: std::time::Duration,
    /// Write the control database (SQLite) here as the run goes (default:
    /// beside the run record, `RECORD.db`, when `--json` is given).
    #[arg(long, value_name = "FILE")]
    db: Option<PathBuf>,
    /// Let --db replace a file that is not a gridbed control database
    /// (without it such a file is left alone and the run refused).
    #[arg(long)]
    force: bool,
    /// DAG-Condor's database (seed 003 table 1), kept across runs: a job
    /// whose version ran before and whose outputs are cached is memoized,
    /// and this run is recorded there; jobs are memoized within the run too
    /// (as with the testbed's `memoize = true`).
    #[arg(long, value_name = "FILE")]
    memo: Option<PathBuf>,
    /// Run every site on the daemons of the netbed in DIR (`gridbed netbed
    /// up`), its links shaped by the kernel.
    #[arg(long, value_name = "DIR")]
    netbed: Option<PathBuf>,
}

impl OutputArgs {
    /// Every file the run will write can be written: checked before it
    /// starts, so that a typo costs no run.
    fn check(&self) -> Result<(), CliError> {
        check_output("--json", self.json.as_deref())?;
        check_output("--trace", self.trace.as_deref())?;
        check_output("--rescue", self.rescue.as_deref())?;
        check_output("--wfformat", self.wfformat.as_deref())
    }
}

/// What a run writes and where its pools go (`run` and `resume`).
#[derive(Args)]
struct OutputArgs {
    /// Write the run record (JSON, see docs/run-record.md) here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
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
    /// Write the run's engine-neutral trace here (JSON Lines: job phases,
    /// transfers, evictions, in time order).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// If the run does not complete, write the rest of its workflow here (a
    /// rescue file, WfFormat 1.5) for `gridbed run --workflow`.
    #[arg(long, value_name = "FILE")]
    rescue: Option<PathBuf>,
    /// Write the run as a WfCommons instance (WfFormat 1.5: the workflow,
    /// and each task's start, runtime, site and bytes) here, for WfCommons'
    /// tools, WRENCH or `gridbed calibrate`.
    #[arg(long, value_name = "FILE")]
    wfformat: Option<PathBuf>,
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
    /// Instead of live vs sim: run this WfCommons trace of a real run on the
    /// testbed (its machines as the execution sites) and set the predicted
    /// makespan beside the recorded one.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Also run it on the netbed in DIR (`gridbed netbed up`) and set the
    /// two ways of shaping links side by side: governor's token buckets in
    /// each site's endpoint against the kernel's qdiscs.
    #[arg(long, value_name = "DIR")]
    netbed: Option<PathBuf>,
}

pub(super) fn run(args: RunArgs) -> Result<ExitCode, CliError> {
    args.out.check()?;
    check_output("--db", args.db.as_deref())?;
    check_output("--memo", args.memo.as_deref())?;
    check_address("--metrics-addr", args.metrics_addr)?;
    let mut scenario = load_to_run(&args.scenario, args.memo.is_some())?;
    if let Some(src) = scenario.source.as_ref()
        && let Some(info) = &src.dagman
    {
        let renamed = info.rename_later_rescues(&src.path).map_err(|e| {
            CliError::Failed(format!("cannot rename the later rescue DAGs: {e}"))
        })?;
        for r in renamed {
            say!("renamed {} to its .old (a run from an earlier rescue)", r.display());
        }
    }
    if let Some(dir) = &args.netbed {
        super::netbed::apply(&mut scenario, dir)?;
    }
    let mut memo = match &args.memo {
        Some(path) => {
            let history = crate::memo::History::open(path).map_err(CliError::input)?;
            let versions = crate::core::versions::Versions::of(&scenario.workflow, scenario.seed);
            let resume = history
                .memoized(&scenario, &versions, &scenario.no_memoize)
                .map_err(CliError::input)?;
            let memoized = resume.done.iter().filter(|&&d| d).count();
            say!(
                "memoization: {memoized} of {} jobs ran before with the same versions and are not run ({})",
                resume.done.len(),
                path.display()
            );
            if memoized > 0 {
                scenario.resume = Some(resume);
            }
            scenario.memoize = true;
            Some((history, versions))
        }
        None => None,
    };
    let db_path = args
        .db
        .clone()
        .or_else(|| args.out.json.as_ref().map(|j| j.with_extension("db")));
    let digests = scenario.digests();
    let run_id = run_id(&scenario, args.engine, &digests);
    let db = match &db_path {
        Some(path) => {
            let run = run_keys(&args, &scenario, &run_id, &digests);
            let run: Vec<(&str, String)> = run.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
            let db = crate::db::ControlDb::create(
                path,
                args.force,
                &run,
                &scenario.site_infos(),
                &scenario.workflow,
            )
            .map_err(db_error)?;
            Some(db)
        }
        None => None,
    };
    let ex = Execution {
        engine: args.engine,
        run_id,
        metrics_addr: args.metrics_addr,
        linger: args.linger,
        out: args.out,
    };
    let outcome = execute(&scenario, &ex, db, db_path.as_deref(), memo.as_mut());
    // The process ends with this command: freeing a million-job workflow
    // piece by piece would only delay the exit (3% of a 100K-task run).
    std::mem::forget(scenario);
    outcome
}

#[derive(Args)]
pub(crate) struct ResumeArgs {
    /// The control database of the interrupted run (`gridbed run --db FILE`);
    /// the resumed run goes on writing it.
    db: PathBuf,
    /// The engine (default: the interrupted run's).
    #[arg(long, value_enum)]
    engine: Option<Engine>,
    /// Resume though the testbed, the sites or the workflow changed since
    /// the run was recorded (their digests differ): the jobs that ended are
    /// still taken as done, on what is there now.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    out: OutputArgs,
}

/// `gridbed resume`: loads the interrupted run's scenario again, as its
/// control database names it, marks the jobs that ended DONE (their outputs
/// where they were written), and runs the rest, writing on in the same
/// database.
pub(super) fn resume(args: ResumeArgs) -> Result<ExitCode, CliError> {
    args.out.check()?;
    // Read first, write only once every check has passed: a refused resume
    // leaves the database as it was.
    let was = crate::db::ControlDb::interrupted(&args.db).map_err(CliError::input)?;
    let recorded = was.run.clone();
    let key = |k: &str| recorded.get(k).cloned();
    if let Some(pid) = key("pid").and_then(|p| p.parse::<u32>().ok())
        && pid != std::process::id()
        && is_gridbed(pid)
    {
        return Err(CliError::input(format!(
            "{}: its run is still going (gridbed process {pid}): resume it once that process has ended",
            args.db.display()
        )));
    }
    let testbed = key("testbed_path").ok_or_else(|| {
        CliError::input(format!(
            "{}: its run names no testbed_path (written by an older gridbed): resume needs it",
            args.db.display()
        ))
    })?;
    let scenario_args = ScenarioArgs {
        testbed: PathBuf::from(testbed),
        strategy: key("strategy"),
        seed: key("seed").and_then(|s| s.parse().ok()),
        sites: key("sites_file").map(PathBuf::from),
        workflow: key("workflow").map(PathBuf::from),
        format: key("format").and_then(|f| crate::workflow::formats::Format::from_name(&f)),
        // A `.dag` resumes from its newest rescue, as its run would start;
        // the database's record of what ended decides either way.
        no_rescue: false,
        rescue_from: None,
        load_save: None,
        rescue_file: None,
        maxjobs: key("maxjobs").and_then(|n| n.parse().ok()),
        maxidle: key("maxidle").and_then(|n| n.parse().ok()),
        maxpost: key("maxpost").and_then(|n| n.parse().ok()),
        always_run_post: key("always_run_post").is_some(),
    };
    let mut scenario = super::load_with(&scenario_args, false, key("memo").is_some())?;
    if let Some(dir) = key("netbed") {
        super::netbed::apply(&mut scenario, std::path::Path::new(&dir))?;
    }
    check_digests(&scenario, &was.run, &args)?;
    let ended_at = super::resume::ended_at(&was, &scenario).map_err(|why| {
        CliError::input(format!(
            "{}: {why}; resume cannot go on from there, even with --force (see docs/run-record.md, \"Resuming\")",
            args.db.display()
        ))
    })?;
    // The pools a killed live run left behind (its temp dirs had no chance
    // to go), as it noted them: its process is gone (above), and this
    // resume is the one that goes on with it.
    let mut removed = 0;
    for (k, dir) in &was.run {
        let dir = std::path::Path::new(dir);
        let ours = dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("gridbed-"));
        if k.starts_with("pool_dir.") && ours && std::fs::remove_dir_all(dir).is_ok() {
            removed += 1;
        }
    }
    if removed > 0 {
        say!("removed the {removed} pool directories the interrupted run left");
    }
    let resume = crate::config::Resume::new(
        &scenario.workflow,
        &ended_at,
        &scenario.sites,
        scenario.origin,
    );
    let mut db =
        crate::db::ControlDb::resume(&args.db, was, &scenario.site_infos(), &scenario.workflow)
            .map_err(CliError::input)?;
    db.note_writer(std::process::id());
    let ended = resume.done.iter().filter(|&&d| d).count();
    say!(
        "resuming `{}` from {}: {ended} of {} jobs ended before and do not run again",
        scenario.name,
        args.db.display(),
        resume.done.len()
    );
    scenario.resume = Some(resume);
    let engine = args
        .engine
        .or_else(|| key("engine").and_then(|e| Engine::from_name(&e)))
        .unwrap_or(Engine::Live);
    let mut memo = match key("memo") {
        Some(path) => {
            let history = crate::memo::History::open(std::path::Path::new(&path))
                .map_err(CliError::input)?;
            let versions = crate::core::versions::Versions::of(&scenario.workflow, scenario.seed);
            Some((history, versions))
        }
        None => None,
    };
    let ex = Execution {
        engine,
        // The same run, gone on with: older databases have no id.
        run_id: key("run_id").unwrap_or_else(|| run_id(&scenario, engine, &scenario.digests())),
        metrics_addr: None,
        linger: std::time::Duration::ZERO,
        out: args.out,
    };
    execute(&scenario, &ex, Some(db), Some(&args.db), memo.as_mut())
}

/// Refuses to resume on a testbed, sites or workflow other than the ones
/// the run recorded, unless `--force` (then says what changed).
fn check_digests(
    scenario: &Scenario,
    recorded: &std::collections::BTreeMap<String, String>,
    args: &ResumeArgs,
) -> Result<(), CliError> {
    let mut changed = Vec::new();
    for (what, now) in scenario.digests() {
        match recorded.get(&format!("digest.{what}")) {
            Some(was) if *was != now => changed.push(what),
            _ => {}
        }
    }
    if changed.is_empty() {
        return Ok(());
    }
    let which = changed.join(", ");
    if args.force {
        eprintln!(
            "note: resuming with --force though the {which} changed since {} was recorded",
            args.db.display()
        );
        return Ok(());
    }
    Err(CliError::input(format!(
        "{}: the {which} changed since the run was recorded (sha256 differs): resuming would mix two runs; pass --force to resume on what is there now",
        args.db.display()
    )))
}

/// Whether process `pid` is a running gridbed (Linux: its command line).
fn is_gridbed(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| String::from_utf8_lossy(&c).contains("gridbed"))
}

/// What a control database keeps of how its run was asked for, so that
/// `gridbed resume` can load the same scenario again.
fn run_keys(
    args: &RunArgs,
    scenario: &Scenario,
    run_id: &str,
    digests: &[(&str, String)],
) -> Vec<(String, String)> {
    let absolute = |p: &std::path::Path| {
        std::fs::canonicalize(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .display()
            .to_string()
    };
    let s = &args.scenario;
    let mut keys = vec![
        ("run_id", run_id.to_string()),
        ("testbed", scenario.name.clone()),
        ("strategy", scenario.strategy.clone()),
        ("engine", args.engine.name().to_string()),
        ("seed", scenario.seed.to_string()),
        ("testbed_path", absolute(&s.testbed)),
        // The process writing the database: a resume leaves its pools
        // alone while it runs.
        ("pid", std::process::id().to_string()),
    ];
    let paths = [
        ("sites_file", &s.sites),
        ("workflow", &s.workflow),
        ("netbed", &args.netbed),
        ("memo", &args.memo),
    ];
    for (key, path) in paths {
        if let Some(p) = path {
            keys.push((key, absolute(p)));
        }
    }
    if let Some(f) = s.format {
        keys.push(("format", f.name().to_string()));
    }
    for (key, limit) in [("maxjobs", s.maxjobs), ("maxidle", s.maxidle), ("maxpost", s.maxpost)] {
        if let Some(n) = limit {
            keys.push((key, n.to_string()));
        }
    }
    if s.always_run_post {
        keys.push(("always_run_post", "true".into()));
    }
    let mut keys: Vec<(String, String)> = keys.into_iter().map(|(k, v)| (k.into(), v)).collect();
    keys.extend(super::resume::site_keys(&scenario.sites));
    for (what, digest) in digests {
        keys.push((format!("digest.{what}"), digest.clone()));
    }
    keys
}

/// The id the run record, the control database and the metrics share: a
/// simulated run is a function of its scenario, so its id is too (the
/// testbed, seed and a digest of what it ran); a live one is stamped with
/// its start and process.
fn run_id(scenario: &Scenario, engine: Engine, digests: &[(&str, String)]) -> String {
    match engine {
        Engine::Sim => {
            use sha2::{Digest, Sha256};
            let mut all = Sha256::new();
            for (what, digest) in digests {
                all.update(format!("{what}={digest}\n"));
            }
            all.update(format!("{}\n{}\n", scenario.strategy, scenario.eviction));
            let short: String = all.finalize()[..4].iter().map(|b| format!("{b:02x}")).collect();
            format!("{}-{}-sim-{short}", scenario.name, scenario.seed)
        }
        Engine::Live => format!(
            "{}-{}-{}-{}",
            scenario.name,
            scenario.seed,
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            std::process::id()
        ),
    }
}

fn db_error(e: crate::db::DbError) -> CliError {
    match e {
        crate::db::DbError::NotOurs { .. } | crate::db::DbError::Busy { .. } => {
            CliError::input(format!("--db: {e}"))
        }
        _ => CliError::Failed(format!("control database {e}")),
    }
}

/// How a scenario is run and what the run writes (`run` and `resume`).
struct Execution {
    engine: Engine,
    /// The id the record, the database and the metrics share.
    run_id: String,
    metrics_addr: Option<SocketAddr>,
    linger: std::time::Duration,
    out: OutputArgs,
}

/// Runs `scenario` as `ex` says, writing `db` (at `db_path`) as it goes;
/// prints the summary and writes the record and trace.
fn execute(
    scenario: &Scenario,
    ex: &Execution,
    db: Option<crate::db::ControlDb>,
    db_path: Option<&std::path::Path>,
    memo: Option<&mut (crate::memo::History, crate::core::versions::Versions)>,
) -> Result<ExitCode, CliError> {
    let db_error;
    let epoch = std::time::SystemTime::now();
    let drawn = match scenario.source.as_ref() {
        Some(src @ WorkflowSource { dagman: Some(info), .. }) => {
            dagman_files::write_at_start(&src.path, info, &scenario.workflow, epoch)
                .map_err(|e| CliError::Failed(format!("writing the DAG's DOT file: {e}")))?
        }
        _ => Vec::new(),
    };
    for path in drawn {
        say!("{} written (as the .dag asks)", path.display());
    }
    // The record file holds no per-attempt or per-transfer detail: that is
    // in the control database it names.
    let detail = Detail::Summary;
    // A run that read sub-DAGs as it went reports the DAG it grew.
    let grown: Option<Scenario>;
    let (record, ended) = match ex.engine {
        Engine::Sim => {
            if ex.metrics_addr.is_some()
                || !ex.linger.is_zero()
                || ex.out.pool_dir.is_some()
                || ex.out.keep_pools.is_some()
            {
                eprintln!(
                    "note: --metrics-addr, --linger, --pool-dir and --keep-pools apply to the live engine only"
                );
            }
            let run_id = &ex.run_id;
            let progress: BoxedObserver = if ex.out.quiet {
                Box::new(Progress::Hidden)
            } else {
                Box::new(Progress::for_stderr(scenario.workflow.jobs.len()))
            };
            let result = sim::run_observed(scenario, db, progress).map_err(CliError::input)?;
            grown = result.grown.as_ref().map(|g| scenario.grown(g));
            let scenario = grown.as_ref().unwrap_or(scenario);
            db_error = result.db_error.clone();
            let record = RunRecord::from_run(scenario, &result, run_id, detail);
            say!("{}", record.table().trim_end());
            write_outputs(&ex.out, scenario, &result, epoch)?;
            say!(
                "  simulated     {} events in {:.2} s wall",
                result.events,
                result.wall.as_secs_f64()
            );
            remember(memo, scenario, &result.result)?;
            (record, ended_and_forgotten(result.result))
        }
        Engine::Live => {
            let run_id = &ex.run_id;
            let progress: BoxedObserver = if ex.out.quiet {
                Box::new(Progress::Hidden)
            } else {
                Box::new(Progress::for_stderr(scenario.workflow.jobs.len()))
            };
            let opts = LiveOptions {
                metrics_addr: ex.metrics_addr,
                linger: ex.linger,
                progress,
                run_id: run_id.clone(),
                pool_root: ex
                    .out
                    .keep_pools
                    .clone()
                    .or_else(|| ex.out.pool_dir.clone()),
                db,
                keep_pools: ex.out.keep_pools.is_some(),
                remove_on_interrupt: true,
            };
            let result = live::run(scenario, opts).map_err(CliError::engine)?;
            grown = result.grown.as_ref().map(|g| scenario.grown(g));
            let scenario = grown.as_ref().unwrap_or(scenario);
            db_error = result.db_error.clone();
            let record = RunRecord::from_run(scenario, &result, run_id, detail);
            say!("{}", record.table().trim_end());
            write_outputs(&ex.out, scenario, &result, epoch)?;
            remember(memo, scenario, &result.result)?;
            (record, ended_and_forgotten(result.result))
        }
    };
    let scenario = grown.as_ref().unwrap_or(scenario);
    let mut record = record;
    if let Some(path) = &ex.out.json {
        record.db = db_path.map(|db| db_reference(path, db));
        write_json(path, &record)?;
        say!("\nrun record written to {}", path.display());
    }
    if let Some(path) = db_path {
        say!("control database written to {}", path.display());
    }
    if let Some(e) = db_error {
        return Err(CliError::Failed(format!("control database {e}")));
    }
    let s = &record.summary;
    let complete = s.succeeded && s.corrupt_at_end == 0;
    if let Some(stop) = ended.stop.filter(|s| s.halted_at.is_some()) {
        say!(
            "the DAG was halted (its halt file): it started nothing more and stopped once \
             what was in flight ended; its exit value {}",
            stop.dag_return
        );
    } else if let Some(stop) = ended.stop {
        let why = match stop.node {
            Some(n) => format!(
                "ABORT-DAG-ON: node `{}` exited {}",
                scenario.workflow.jobs[n].name, stop.status
            ),
            None => "removed by the user".into(),
        };
        say!(
            "the DAG stopped ({why}): its jobs in flight were removed; its exit value {}",
            stop.dag_return
        );
    }
    if complete {
        Ok(ExitCode::SUCCESS)
    } else {
        if let Some(path) = &ex.out.rescue {
            let name = format!("{}-rescue", scenario.name);
            let done = &ended.done;
            let rest = crate::workflow::formats::wfformat::rest(&scenario.workflow, done, &name);
            write_json(path, &rest)?;
            let left = done.iter().filter(|&&d| !d).count();
            say!(
                "rescue file with the {left} jobs left written to {} (gridbed run --workflow)",
                path.display()
            );
        }
        Err(CliError::Failed(format!(
            "the run did not complete: {} of {} jobs ended ({} failed, {} blocked)",
            s.jobs_done, s.jobs, s.jobs_failed, s.jobs_blocked
        )))
    }
}

/// How a run's jobs ended, all a failed run's rescue file needs.
struct Ended {
    /// Per job: it ended done.
    done: Vec<bool>,
    /// What stopped the DAG, if anything did.
    stop: Option<crate::core::DagAbort>,
}

/// How the jobs ended; the rest of the result is not freed, as the
/// process ends with this command (freeing a 100K-job run's records piece by
/// piece took 30 ms of its 1.2 s).
fn ended_and_forgotten(mut result: crate::core::result::RunResult) -> Ended {
    let ended = Ended {
        done: std::mem::take(&mut result.done),
        stop: result.dag_stop,
    };
    std::mem::forget(result);
    ended
}

/// How a record at `record` names the control database at `db`: its file
/// name when both lie in one folder (they move together), else its
/// absolute path.
fn db_reference(record: &std::path::Path, db: &std::path::Path) -> String {
    let folder = |p: &std::path::Path| {
        std::path::absolute(p)
            .ok()
            .and_then(|a| a.parent().map(|d| d.to_path_buf()))
    };
    match (folder(record), folder(db), db.file_name()) {
        (Some(a), Some(b), Some(name)) if a == b => name.to_string_lossy().into_owned(),
        _ => std::path::absolute(db)
            .unwrap_or_else(|_| db.to_path_buf())
            .display()
            .to_string(),
    }
}

/// Records the run in DAG-Condor's database, when `--memo` gave one.
fn remember(
    memo: Option<&mut (crate::memo::History, crate::core::versions::Versions)>,
    scenario: &Scenario,
    run: &crate::core::result::RunResult,
) -> Result<(), CliError> {
    let Some((history, versions)) = memo else {
        return Ok(());
    };
    history
        .record(scenario, versions, run)
        .map_err(|e| CliError::Failed(format!("memoization database {e}")))
}

pub(super) fn validate(args: ValidateArgs) -> Result<ExitCode, CliError> {
    check_output("--json", args.json.as_deref())?;
    if let Some(trace) = &args.trace {
        return super::calibrate::validate_trace(
            &args.scenario.testbed,
            trace,
            args.scenario.seed,
            args.json.as_deref(),
        );
    }
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
    let live_run = live::run(&scenario, opts).map_err(CliError::engine)?;
    let live_record = RunRecord::from_run(&scenario, &live_run, &run_id, Detail::Full);
    let cmp = Comparison::new(&sim_record, &live_record, args.tolerance)
        .with_traces(&sim_run.records.trace(), &live_run.records.trace());
    say!("{}", cmp.table().trim_end());
    if args.netbed.is_none() {
        say!(
            "\n{}",
            shaping_table(
                &scenario,
                &[
                    ("simulator (the model)", &sim_run),
                    ("live, governor", &live_run),
                ]
            )
            .trim_end()
        );
    }
    if let Some(dir) = &args.netbed {
        let mut on_net = scenario.clone();
        super::netbed::apply(&mut on_net, dir)?;
        let opts = LiveOptions {
            progress: Box::new(Progress::Hidden),
            run_id: format!("{run_id}-netbed"),
            ..Default::default()
        };
        let net_run = live::run(&on_net, opts).map_err(CliError::engine)?;
        say!(
            "\n{}",
            shaping_table(
                &scenario,
                &[
                    ("simulator (the model)", &sim_run),
                    ("live, governor in each endpoint", &live_run),
                    ("live, kernel qdiscs (netbed)", &net_run),
                ]
            )
            .trim_end()
        );
        let fit = crate::sim::flows::own_starts(&scenario, &net_run)
            .map(crate::report::validate::agreement)
            .unwrap_or_else(|_| {
                crate::report::validate::transfer_agreement(&sim_run.records, &net_run.records)
            });
        if fit.matched > 0 {
            let now = scenario.topology.protocol_efficiency;
            say!(
                "the kernel's transfers take {:.3}x the model's (least squares over {}): \
                 `[network] protocol_efficiency = {:.3}` fits them (now {now}; \
                 TCP/IP's headers over Ethernet alone: {:.3})",
                fit.scale,
                fit.matched,
                now / fit.scale,
                1448.0 / 1514.0
            );
        }
        if !net_run.succeeded {
            return Err(CliError::Failed(
                "the run on the netbed did not complete".into(),
            ));
        }
    }
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

/// Makespan and transfer times of runs of one scenario, each beside the
/// first's: how two ways of shaping links agree with the model, on the
/// whole and transfer by transfer — beside the simulated run's transfers,
/// and beside the model's times for the run's own flows (its bytes
/// starting when they did: see [`crate::sim::flows::own_starts`]).
fn shaping_table(
    scenario: &crate::config::Scenario,
    runs: &[(&str, &crate::core::result::RunResult)],
) -> String {
    use crate::report::validate::{agreement, transfer_agreement};
    let mean_transfer = |r: &crate::core::result::RunResult| {
        let times: Vec<f64> = r
            .records
            .transfers
            .iter()
            .filter(|t| t.failure.is_none())
            .filter_map(|t| t.end.map(|e| e - t.start))
            .collect();
        times.iter().sum::<f64>() / times.len().max(1) as f64
    };
    let (m0, t0) = (runs[0].1.makespan, mean_transfer(runs[0].1));
    let mut out = format!(
        "{:<34} {:>13} {:>8} {:>18} {:>8} {:>20} {:>20}\n",
        "shaping",
        "makespan (s)",
        "× model",
        "mean transfer (s)",
        "× model",
        "per transfer |Δ|",
        "on its own starts"
    );
    for (name, r) in runs {
        let t = mean_transfer(r);
        let a = transfer_agreement(&runs[0].1.records, &r.records);
        let own = match crate::sim::flows::own_starts(scenario, r) {
            Ok(pairs) => {
                let o = agreement(pairs);
                format!("{:>5.1}% / {:>5.1}%", o.mean_abs * 100.0, o.p95_abs * 100.0)
            }
            Err(_) => "—".to_string(),
        };
        out += &format!(
            "{name:<34} {:>13.1} {:>8.3} {t:>18.3} {:>8.3} {:>12.1}% / {:>5.1}% {own:>20}\n",
            r.makespan,
            r.makespan / m0,
            if t0 > 0.0 { t / t0 } else { f64::NAN },
            a.mean_abs * 100.0,
            a.p95_abs * 100.0
        );
    }
    out + "(per transfer: mean / p95 of |Δ| against the simulated run's transfer, and against \
           the model's time for the same flows starting when they did in that run)\n"
}

/// Writes what the run is asked to write besides its record: its trace,
/// its WfCommons instance, and the files a `.dag` run writes (those it
/// names, its save files and its rescue DAGs).
fn write_outputs(
    out: &OutputArgs,
    scenario: &Scenario,
    run: &crate::core::result::RunResult,
    epoch: std::time::SystemTime,
) -> Result<(), CliError> {
    write_trace(out.trace.as_deref(), &run.records)?;
    if let Some(path) = &out.wfformat {
        let ids = crate::report::wfinstance::ids(&scenario.workflow);
        let doc = crate::report::wfinstance::instance(
            scenario,
            &run.records,
            run.engine,
            run.makespan,
            epoch,
            &ids,
        );
        write_json(path, &doc)?;
        say!("WfCommons instance written to {}", path.display());
    }
    let Some(src @ WorkflowSource { dagman: Some(info), .. }) = scenario.source.as_ref() else {
        return Ok(());
    };
    let written = dagman_files::write_at_end(&src.path, info, run, epoch)
        .map_err(|e| CliError::Failed(format!("writing the DAG's files: {e}")))?;
    for (path, kind) in written {
        let path = path.display();
        match kind {
            DagFile::Save => {
                say!("save file written to {path} (gridbed run --load-save starts from it)")
            }
            DagFile::Rescue => say!(
                "rescue DAG written to {path} (the next `gridbed run` of its DAG starts from it)"
            ),
            DagFile::JobstateLog | DagFile::NodeStatus | DagFile::Dot => {
                say!("{path} written (as the .dag asks)")
            }
            DagFile::Metrics => say!("{path} written (DAGMan's metrics)"),
            DagFile::DagmanOut => say!("{path} appended to (DAGMan's log)"),
        }
    }
    Ok(())
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
