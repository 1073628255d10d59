//! `gridbed sweep`: a grid of strategies × site counts × MAXPRE × seeds, the
//! experiment of seed 000 §5 (figures 4–7), run in parallel over the machine's
//! cores on either engine, written as CSV and SVG charts.
//!
//! A site count N keeps the testbed's storage sites and its first N execution
//! sites (for `spcl-grid3.toml`, the first N rows of the Grid3 table, as the
//! paper's "first N sites listed on this table").

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};

use crate::config::{self, ConfigError, Overrides, Scenario};
use crate::live::{self, LiveOptions};
use crate::report::plot::{Bar, PlotError, Series, bar_chart, line_chart};
use crate::report::{Detail, RunRecord};
use crate::sim;

use super::CliError;
use std::process::ExitCode;

pub(crate) mod slurm;

/// Where a sweep's runs run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
pub enum Backend {
    /// This machine's cores (`--parallel` at once).
    Local,
    /// A Slurm job array, one task a run (`sbatch` must reach a cluster;
    /// every node must see the binary, the testbed and `--out`).
    Slurm,
}

/// Options of `gridbed sweep`.
#[derive(Debug, Clone, clap::Args, Serialize, Deserialize)]
pub struct SweepArgs {
    /// The testbed every run starts from.
    pub testbed: PathBuf,
    /// Strategies (site selectors), comma-separated; a comma inside a
    /// policy's `[…]` or a quoted value (`external[cmd="…", timeout=5]`)
    /// does not split.
    #[arg(long, default_value = "random,random-caching,clustered,data-present")]
    pub strategies: Vec<String>,
    /// Site counts: the first N execution sites of the testbed.
    #[arg(long, value_delimiter = ',', default_value = "5,10,15,20,25")]
    pub sites: Vec<usize>,
    /// MAXPRE values.
    #[arg(long, value_delimiter = ',', default_value = "20,40,60")]
    pub maxpre: Vec<usize>,
    /// Seeds (each cell is repeated once per seed).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub seeds: Vec<u64>,
    /// Repeat each cell with seeds 1..=N instead of `--seeds`; the summary
    /// gives mean, standard deviation and a 95% confidence interval.
    #[arg(long)]
    pub repeat: Option<u64>,
    /// Engine of every run.
    #[arg(long, default_value = "sim")]
    pub engine: String,
    /// Where the CSV and the charts go: a new or empty folder.
    #[arg(long, default_value = "sweep-out")]
    pub out: PathBuf,
    /// Clear a `--out` folder that is not empty first (an earlier
    /// sweep's outputs), rather than refuse it.
    #[arg(long)]
    pub force: bool,
    /// Runs at once (default: the machine's cores).
    #[arg(long)]
    pub parallel: Option<usize>,
    /// Site catalogue, overriding the testbed's.
    #[arg(long, value_name = "FILE")]
    pub sites_file: Option<PathBuf>,
    /// The testbed's MonitQueue only for these strategies (seed 002 pairs
    /// it with Opportunistic); the others run without it.
    #[arg(long, value_name = "STRATEGIES")]
    pub monitqueue_for: Option<Vec<String>>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Where the runs run: this machine, or a Slurm job array.
    #[arg(long, value_enum, default_value_t = Backend::Local)]
    pub backend: Backend,
    /// The Slurm partition (default: the cluster's default).
    #[arg(long, value_name = "NAME")]
    pub partition: Option<String>,
}

/// One run of the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// Index into the strategies.
    pub strategy: usize,
    /// Execution sites.
    pub sites: usize,
    /// MAXPRE.
    pub maxpre: usize,
    /// Seed.
    pub seed: u64,
}

/// The outcome of one run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Row {
    /// Strategy.
    pub strategy: String,
    /// Execution sites.
    pub sites: usize,
    /// MAXPRE.
    pub maxpre: usize,
    /// Seed.
    pub seed: u64,
    /// Engine.
    pub engine: String,
    /// Whether every job ended.
    pub succeeded: bool,
    /// Nominal makespan (s).
    pub makespan_s: f64,
    /// Successful transfers.
    pub transfers: usize,
    /// Nominal bytes moved.
    pub bytes: u64,
    /// Failed transfer attempts.
    pub transfer_failures: usize,
    /// Evictions.
    pub evictions: u64,
    /// Cache hits.
    pub cache_hits: u64,
    /// Job attempts beyond the first.
    pub replans: usize,
    /// Wall seconds of the run.
    pub wall_s: f64,
    /// Sum of the workflow's job runtimes (its time on one CPU), nominal s.
    pub total_runtime_s: f64,
}

/// Statistics of one cell over its seeds.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    /// Strategy.
    pub strategy: String,
    /// Execution sites.
    pub sites: usize,
    /// MAXPRE.
    pub maxpre: usize,
    /// Runs.
    pub runs: usize,
    /// Mean makespan (nominal s).
    pub mean_s: f64,
    /// Sample standard deviation (s).
    pub sd_s: f64,
    /// Half-width of the 95% confidence interval of the mean (Student t).
    pub ci95_s: f64,
    /// Mean speedup over one CPU (total runtime / makespan).
    pub speedup: f64,
}

/// Two-sided 97.5% quantile of Student's t with `df` degrees of freedom.
fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => T[df - 1],
        _ => 1.96,
    }
}

/// Mean, standard deviation and 95% CI of every (strategy, sites, maxpre).
pub fn summarize(rows: &[Row]) -> Vec<Summary> {
    let mut keys: Vec<(String, usize, usize)> = Vec::new();
    for r in rows {
        let k = (r.strategy.clone(), r.sites, r.maxpre);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(strategy, sites, maxpre)| {
            let cell: Vec<&Row> = rows
                .iter()
                .filter(|r| r.strategy == strategy && r.sites == sites && r.maxpre == maxpre)
                .collect();
            let n = cell.len();
            let mean = cell.iter().map(|r| r.makespan_s).sum::<f64>() / n as f64;
            let var = if n > 1 {
                cell.iter()
                    .map(|r| (r.makespan_s - mean).powi(2))
                    .sum::<f64>()
                    / (n - 1) as f64
            } else {
                0.0
            };
            let sd = var.sqrt();
            let ci95 = if n > 1 {
                t975(n - 1) * sd / (n as f64).sqrt()
            } else {
                0.0
            };
            let speedup = cell
                .iter()
                .map(|r| r.total_runtime_s / r.makespan_s.max(f64::MIN_POSITIVE))
                .sum::<f64>()
                / n as f64;
            Summary {
                strategy,
                sites,
                maxpre,
                runs: n,
                mean_s: mean,
                sd_s: sd,
                ci95_s: ci95,
                speedup,
            }
        })
        .collect()
}

/// The names a sweep's tables and charts show for its strategies: a name
/// up to [`Names::WHOLE`] characters as it is, a longer one (an
/// `external[cmd="…"]` program) as the text before its `[` and a number,
/// with a legend saying what each short name stands for.
struct Names {
    /// (full name, short name), in the order of `--strategies`.
    pairs: Vec<(String, String)>,
}

impl Names {
    /// The longest name shown whole.
    const WHOLE: usize = 28;

    fn new(strategies: &[String]) -> Self {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for full in strategies {
            if pairs.iter().any(|(f, _)| f == full) {
                continue;
            }
            let short = if full.chars().count() <= Self::WHOLE {
                full.clone()
            } else {
                let base: String = full.split('[').next().unwrap_or("").chars().take(16).collect();
                let k = 1 + pairs.iter().filter(|(f, s)| f != s).count();
                format!("{base}#{k}")
            };
            pairs.push((full.clone(), short));
        }
        Names { pairs }
    }

    /// The short name of `full` (itself when it is not a strategy of the
    /// sweep).
    fn short<'a>(&'a self, full: &'a str) -> &'a str {
        (self.pairs.iter())
            .find(|(f, _)| f == full)
            .map_or(full, |(_, s)| s.as_str())
    }

    /// The widest short name, at least `min`.
    fn width(&self, min: usize) -> usize {
        (self.pairs.iter())
            .map(|(_, s)| s.chars().count())
            .fold(min, usize::max)
    }

    /// One line per shortened name: `short = full`.
    fn legend(&self) -> Vec<String> {
        (self.pairs.iter())
            .filter(|(f, s)| f != s)
            .map(|(f, s)| format!("{s} = {f}"))
            .collect()
    }
}

/// Why a sweep could not run.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The testbed (or an override) is bad input.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A parameter is out of range.
    #[error("{0}")]
    Invalid(String),
    /// A run failed to run.
    #[error("{0}")]
    Run(String),
    /// A chart could not be drawn.
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// An output file could not be written.
    #[error("writing {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

fn load(args: &SweepArgs, strategy: &str, seed: u64) -> Result<Scenario, ConfigError> {
    let overrides = Overrides {
        strategy: Some(strategy.to_string()),
        seed: Some(seed),
        sites_file: args.sites_file.clone(),
        ..Default::default()
    };
    config::load(&args.testbed, &overrides)
}

/// Keeps the storage sites and the first `n` execution sites.
fn first_sites(s: &mut Scenario, n: usize) -> Result<(), String> {
    let mut submit: Vec<crate::core::SiteId> =
        s.submissions.list.iter().map(|w| w.origin).collect();
    submit.push(s.origin);
    let mut exec = 0;
    let sites = (0..s.sites.len())
        .filter(|&i| {
            let runs = s.sites[i].info.cpus > 0;
            exec += usize::from(runs);
            !runs || exec <= n || submit.contains(&i)
        })
        .map(|i| s.sites[i].clone())
        .collect();
    // Every submit machine is kept; a faulted site may not be.
    s.replace_sites(sites)
        .map_err(|e| format!("the first {n} execution sites: {e}"))
}

fn run_cell(args: &SweepArgs, cell: Cell) -> Result<Row, String> {
    let strategy = &args.strategies[cell.strategy];
    let mut s = load(args, strategy, cell.seed).map_err(|e| e.to_string())?;
    first_sites(&mut s, cell.sites)?;
    s.manager.maxpre = cell.maxpre;
    if let Some(with) = &args.monitqueue_for
        && !with.contains(strategy)
    {
        s.manager.monit_interval = 0.0;
    }
    let id = format!(
        "{}-{strategy}-{}-{}-{}",
        s.name, cell.sites, cell.maxpre, cell.seed
    );
    let started = std::time::Instant::now();
    let record = if args.engine == "live" {
        let run = live::run(
            &s,
            LiveOptions {
                remove_on_interrupt: true,
                ..Default::default()
            },
        ).map_err(|e| e.to_string())?;
        RunRecord::from_run(&s, &run, &id, Detail::Summary)
    } else {
        let run = sim::run(&s).map_err(|e| e.to_string())?;
        RunRecord::from_run(&s, &run, &id, Detail::Summary)
    };
    let m = &record.summary;
    Ok(Row {
        strategy: strategy.clone(),
        sites: cell.sites,
        maxpre: cell.maxpre,
        seed: cell.seed,
        engine: record.engine.clone(),
        succeeded: m.succeeded,
        makespan_s: m.makespan_s,
        transfers: m.transfers,
        bytes: m.bytes,
        transfer_failures: m.transfer_failures,
        evictions: m.evictions,
        cache_hits: m.cache_hits,
        replans: m.replans,
        wall_s: started.elapsed().as_secs_f64(),
        total_runtime_s: s.workflow.jobs.iter().map(|j| j.runtime).sum(),
    })
}

/// Runs the grid and writes `sweep.csv`, `summary.csv` and the charts into
/// `args.out`.
pub fn run(args: &SweepArgs) -> Result<Vec<Row>, SweepError> {
    let mut args = args.clone();
    let split = |lists: &[String]| -> Result<Vec<String>, SweepError> {
        let mut names = Vec::new();
        for list in lists {
            let parts = crate::policy::split_policy_list(list)
                .map_err(|e| SweepError::Invalid(format!("`{list}`: {e}")))?;
            names.extend(parts);
        }
        Ok(names)
    };
    args.strategies = split(&args.strategies)?;
    if let Some(with) = &args.monitqueue_for {
        args.monitqueue_for = Some(split(with)?);
    }
    if let Some(n) = args.repeat {
        if n == 0 {
            return Err(SweepError::Invalid("--repeat: expected at least 1".into()));
        }
        args.seeds = (1..=n).collect();
    }
    let args = &args;
    if args.engine != "sim" && args.engine != "live" {
        return Err(SweepError::Invalid(format!(
            "--engine: expected sim or live, found `{}`",
            args.engine
        )));
    }
    if args.strategies.is_empty()
        || args.sites.is_empty()
        || args.maxpre.is_empty()
        || args.seeds.is_empty()
    {
        return Err(SweepError::Invalid(
            "every axis needs at least one value".into(),
        ));
    }
    if let Some(st) = args
        .monitqueue_for
        .iter()
        .flatten()
        .find(|st| !args.strategies.contains(st))
    {
        return Err(SweepError::Invalid(format!(
            "--monitqueue-for: `{st}` is not one of --strategies ({})",
            args.strategies.join(", ")
        )));
    }
    // Validate the testbed and every strategy name once, up front.
    let base = load(args, &args.strategies[0], args.seeds[0])?;
    for st in &args.strategies {
        load(args, st, args.seeds[0])?;
    }
    let exec = base.sites.iter().filter(|s| s.info.cpus > 0).count();
    if let Some(&n) = args.sites.iter().find(|&&n| n == 0 || n > exec) {
        return Err(SweepError::Invalid(format!(
            "--sites: {n} is not between 1 and the testbed's {exec} execution sites"
        )));
    }
    for &n in &args.sites {
        first_sites(&mut base.clone(), n)
            .map_err(|e| SweepError::Invalid(format!("--sites: {e}")))?;
    }
    prepare_out(&args.out, args.force)?;
    let mut cells = Vec::new();
    for strategy in 0..args.strategies.len() {
        for &sites in &args.sites {
            for &maxpre in &args.maxpre {
                for &seed in &args.seeds {
                    cells.push(Cell {
                        strategy,
                        sites,
                        maxpre,
                        seed,
                    });
                }
            }
        }
    }
    let rows = match args.backend {
        Backend::Local => run_here(args, &cells)?,
        Backend::Slurm => slurm::execute(args, &cells)?,
    };
    write_csv(&args.out.join("sweep.csv"), &rows)?;
    let summary = summarize(&rows);
    write_summary(&args.out.join("summary.csv"), &summary)?;
    // A sweep stopped before any run ended has nothing to draw.
    if !rows.is_empty() {
        let names = Names::new(&args.strategies);
        charts(&args.out, &base.name, args, &rows, &names)?;
        bars(&args.out, &base.name, &summary, &names)?;
    }
    Ok(rows)
}

/// Runs `cells` on this machine's cores, `--parallel` at once.
fn run_here(args: &SweepArgs, cells: &[Cell]) -> Result<Vec<Row>, SweepError> {
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        let bar = ProgressBar::new(cells.len() as u64);
        if let Ok(style) =
            ProgressStyle::with_template("{bar:32} {pos}/{len} runs  {msg}  ETA {eta}")
        {
            bar.set_style(style);
        }
        bar
    };
    let workers = args
        .parallel
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .clamp(1, cells.len());
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Row, String>>>> = Mutex::new(vec![None; cells.len()]);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&cell) = cells.get(i) else {
                        break;
                    };
                    let r = run_cell(args, cell);
                    // A signal stops the sweep: a run it cut short is no
                    // sample, and no cell starts after it.
                    if crate::interrupt::requested().is_some() {
                        break;
                    }
                    if let Ok(mut all) = results.lock() {
                        all[i] = Some(r);
                    }
                    bar.set_message(format!(
                        "{} at {} sites",
                        args.strategies[cell.strategy], cell.sites
                    ));
                    bar.inc(1);
                }
            });
        }
    });
    bar.finish_and_clear();
    if crate::interrupt::requested().is_some() {
        let done = results.lock().map_or(0, |r| r.iter().flatten().count());
        eprintln!(
            "the sweep was stopped: {done} of {} runs had ended; the outputs hold those",
            cells.len()
        );
    }
    let mut rows = Vec::with_capacity(cells.len());
    for r in results
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .flatten()
    {
        rows.push(r.map_err(SweepError::Run)?);
    }
    Ok(rows)
}

fn write_summary(path: &Path, summary: &[Summary]) -> Result<(), SweepError> {
    let mut rows = vec![csv_fields(&[
        "strategy",
        "sites",
        "maxpre",
        "runs",
        "mean_s",
        "sd_s",
        "ci95_s",
        "speedup_total_runtime_over_makespan",
    ])];
    for s in summary {
        rows.push(vec![
            s.strategy.clone(),
            s.sites.to_string(),
            s.maxpre.to_string(),
            s.runs.to_string(),
            format!("{:.3}", s.mean_s),
            format!("{:.3}", s.sd_s),
            format!("{:.3}", s.ci95_s),
            format!("{:.3}", s.speedup),
        ]);
    }
    write_records(path, &rows)
}

fn csv_fields(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// `rows` as CSV (RFC 4180: a field with a comma or a quote is quoted, as
/// a strategy's parameters can be) into `path`.
fn write_records(path: &Path, rows: &[Vec<String>]) -> Result<(), SweepError> {
    let failed = |source: std::io::Error| SweepError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut out = csv::Writer::from_path(path).map_err(|e| failed(e.into()))?;
    for row in rows {
        out.write_record(row).map_err(|e| failed(e.into()))?;
    }
    out.flush().map_err(failed)
}

/// Makes `out` a new or empty folder before any run starts: a file there,
/// or an earlier sweep's outputs without `--force`, is refused (their
/// CSVs would be replaced and their charts left mixed in with the new).
fn prepare_out(out: &Path, force: bool) -> Result<(), SweepError> {
    let invalid = |why: String| SweepError::Invalid(format!("--out `{}`: {why}", out.display()));
    if out.exists() && !out.is_dir() {
        return Err(invalid("is a file; expected a folder".into()));
    }
    let full = out
        .read_dir()
        .map(|mut entries| entries.next().is_some())
        .unwrap_or(false);
    if full {
        if !force {
            return Err(invalid(
                "is not empty (an earlier sweep's outputs?); name a new folder, or pass --force to clear it first".into(),
            ));
        }
        std::fs::remove_dir_all(out).map_err(|e| invalid(format!("cannot clear it: {e}")))?;
    }
    std::fs::create_dir_all(out).map_err(|e| invalid(format!("cannot create it: {e}")))
}

/// Seed 002's figures 8–9: mean makespan with its 95% CI, and speedup, per
/// strategy, one pair of charts per (sites, MAXPRE).
fn bars(out: &Path, name: &str, summary: &[Summary], names: &Names) -> Result<(), PlotError> {
    let legend = names.legend();
    let mut cells: Vec<(usize, usize)> = Vec::new();
    for s in summary {
        if !cells.contains(&(s.sites, s.maxpre)) {
            cells.push((s.sites, s.maxpre));
        }
    }
    for (sites, maxpre) in cells {
        let of_cell: Vec<&Summary> = summary
            .iter()
            .filter(|s| s.sites == sites && s.maxpre == maxpre)
            .collect();
        let runs = of_cell.iter().map(|s| s.runs).max().unwrap_or(0);
        let makespan: Vec<Bar> = of_cell
            .iter()
            .map(|s| Bar {
                label: names.short(&s.strategy).to_string(),
                mean: s.mean_s / 60.0,
                ci: s.ci95_s / 60.0,
            })
            .collect();
        bar_chart(
            &out.join(format!("makespan-bars-sites{sites}-maxpre{maxpre}.svg")),
            &format!("{name}: mean makespan, 95% CI, {runs} runs ({sites} sites, MAXPRE {maxpre})"),
            "makespan (minutes, nominal)",
            &makespan,
            &legend,
        )?;
        let speedup: Vec<Bar> = of_cell
            .iter()
            .map(|s| Bar {
                label: names.short(&s.strategy).to_string(),
                mean: s.speedup,
                ci: 0.0,
            })
            .collect();
        bar_chart(
            &out.join(format!("speedup-sites{sites}-maxpre{maxpre}.svg")),
            &format!("{name}: speedup over one CPU ({sites} sites, MAXPRE {maxpre})"),
            "speedup (total runtime / makespan)",
            &speedup,
            &legend,
        )?;
    }
    Ok(())
}

fn write_csv(path: &Path, rows: &[Row]) -> Result<(), SweepError> {
    let mut records = vec![csv_fields(&[
        "strategy",
        "sites",
        "maxpre",
        "seed",
        "engine",
        "succeeded",
        "makespan_s",
        "transfers",
        "bytes",
        "transfer_failures",
        "evictions",
        "cache_hits",
        "replans",
        "wall_s",
    ])];
    for r in rows {
        records.push(vec![
            r.strategy.clone(),
            r.sites.to_string(),
            r.maxpre.to_string(),
            r.seed.to_string(),
            r.engine.clone(),
            r.succeeded.to_string(),
            format!("{:.3}", r.makespan_s),
            r.transfers.to_string(),
            r.bytes.to_string(),
            r.transfer_failures.to_string(),
            r.evictions.to_string(),
            r.cache_hits.to_string(),
            r.replans.to_string(),
            format!("{:.3}", r.wall_s),
        ]);
    }
    write_records(path, &records)
}

/// Mean of `f` over the seeds of each (strategy, sites) at `maxpre`.
fn series(args: &SweepArgs, rows: &[Row], maxpre: usize, f: impl Fn(&Row) -> f64) -> Vec<Series> {
    args.strategies
        .iter()
        .map(|st| {
            let mut points = Vec::new();
            for &n in &args.sites {
                let vals: Vec<f64> = rows
                    .iter()
                    .filter(|r| &r.strategy == st && r.sites == n && r.maxpre == maxpre)
                    .map(&f)
                    .collect();
                if !vals.is_empty() {
                    points.push((n as f64, vals.iter().sum::<f64>() / vals.len() as f64));
                }
            }
            Series {
                name: st.clone(),
                points,
            }
        })
        .collect()
}

/// Figure 4 (transfers by strategy and site count) and figures 5–7 (makespan
/// by site count, one chart per MAXPRE).
fn charts(
    out: &Path,
    name: &str,
    args: &SweepArgs,
    rows: &[Row],
    names: &Names,
) -> Result<(), PlotError> {
    let legend = names.legend();
    let short = |mut series: Vec<Series>| {
        for s in &mut series {
            s.name = names.short(&s.name).to_string();
        }
        series
    };
    for &maxpre in &args.maxpre {
        let t = short(series(args, rows, maxpre, |r| r.transfers as f64));
        line_chart(
            &out.join(format!("transfers-maxpre{maxpre}.svg")),
            &format!("{name}: file transfers by strategy (MAXPRE {maxpre})"),
            "sites",
            "transfers",
            &t,
            &legend,
        )?;
        let m = short(series(args, rows, maxpre, |r| r.makespan_s / 3600.0));
        line_chart(
            &out.join(format!("makespan-maxpre{maxpre}.svg")),
            &format!("{name}: execution time for MAXPRE = {maxpre}"),
            "sites",
            "makespan (hours, nominal)",
            &m,
            &legend,
        )?;
    }
    Ok(())
}

/// `gridbed sweep`: runs the grid and prints its rows and summary.
pub(super) fn command(args: SweepArgs) -> Result<ExitCode, CliError> {
    let rows = run(&args).map_err(|e| match e {
        SweepError::Config(_) | SweepError::Invalid(_) => CliError::input(e),
        SweepError::Run(_) | SweepError::Plot(_) | SweepError::Write { .. } => CliError::failed(e),
    })?;
    let strategies: Vec<String> = rows.iter().map(|r| r.strategy.clone()).collect();
    let names = Names::new(&strategies);
    let w = names.width("strategy".len());
    say!(
        "{:<w$} {:>5} {:>6} {:>5} {:>12} {:>10} {:>9} {:>8}",
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
            "{:<w$} {:>5} {:>6} {:>5} {:>12.2} {:>10} {:>9} {:>8.2}{}",
            names.short(&r.strategy),
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
    let summary = summarize(&rows);
    if summary.iter().any(|s| s.runs > 1) {
        say!(
            "\n{:<w$} {:>5} {:>6} {:>5} {:>14} {:>12} {:>14} {:>8}",
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
                "{:<w$} {:>5} {:>6} {:>5} {:>14.1} {:>12.1} {:>14} {:>8.1}",
                names.short(&s.strategy),
                s.sites,
                s.maxpre,
                s.runs,
                s.mean_s / 60.0,
                s.sd_s / 60.0,
                format!("± {:.1}", s.ci95_s / 60.0),
                s.speedup
            );
        }
        say!("(speedup: the jobs' total runtime over the makespan, mean of the runs)");
    }
    for line in names.legend() {
        say!("{line}");
    }
    match rows.is_empty() {
        false => say!("\nCSV and charts written to {}", args.out.display()),
        true => say!("\nno run ended: CSV headers written to {}", args.out.display()),
    }
    if rows.iter().all(|r| r.succeeded) {
        Ok(ExitCode::SUCCESS)
    } else {
        Ok(ExitCode::from(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_strategy_names_show_short_with_a_legend() {
        let long_a = r#"external[cmd="python3 examples/python/data_present.py"]"#.to_string();
        let long_b = "a-long-built-in-name[with=parameters, many=more]".to_string();
        let names = Names::new(&[
            "random".into(),
            long_a.clone(),
            "random".into(),
            long_b.clone(),
        ]);
        assert_eq!(names.short("random"), "random");
        assert_eq!(names.short(&long_a), "external#1");
        assert_eq!(names.short(&long_b), "a-long-built-in-#2");
        assert_eq!(names.short("not in the sweep"), "not in the sweep");
        assert_eq!(names.width(8), "a-long-built-in-#2".len());
        assert_eq!(
            names.legend(),
            [format!("external#1 = {long_a}"), format!("a-long-built-in-#2 = {long_b}")]
        );
        // A name of exactly the longest shown whole stays whole.
        let edge = "x".repeat(Names::WHOLE);
        assert_eq!(Names::new(std::slice::from_ref(&edge)).short(&edge), edge);
    }

    fn row(strategy: &str, makespan_s: f64) -> Row {
        Row {
            strategy: strategy.into(),
            sites: 12,
            maxpre: 20,
            seed: 1,
            engine: "sim".into(),
            succeeded: true,
            makespan_s,
            transfers: 0,
            bytes: 0,
            transfer_failures: 0,
            evictions: 0,
            cache_hits: 0,
            replans: 0,
            wall_s: 0.0,
            total_runtime_s: 1000.0,
        }
    }

    #[test]
    fn mean_sd_and_student_t_interval() {
        let rows = vec![
            row("a", 10.0),
            row("a", 12.0),
            row("a", 14.0),
            row("b", 5.0),
        ];
        let s = summarize(&rows);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].runs, s[0].mean_s, s[0].sd_s), (3, 12.0, 2.0));
        assert!((s[0].ci95_s - 4.303 * 2.0 / 3f64.sqrt()).abs() < 1e-9);
        assert!((s[0].speedup - (100.0 + 1000.0 / 12.0 + 1000.0 / 14.0) / 3.0).abs() < 1e-9);
        assert_eq!((s[1].runs, s[1].sd_s, s[1].ci95_s), (1, 0.0, 0.0));
    }
}
