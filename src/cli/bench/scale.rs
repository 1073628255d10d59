//! Whole commands at scale (`gridbed bench record,parse,dslab,million`):
//! what users run, with the outputs they ask for, each in a child process
//! of this binary so that its wall time and peak memory are its own — the
//! full coadd with `--json`, the WfFormat parse rate, the side-by-side with
//! dslab-dag on the same files and platform shape, and a million tasks.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{Failure, Figure};

/// Wall time and peak resident memory of one child process.
#[derive(serde::Serialize, serde::Deserialize)]
struct Measured {
    wall: f64,
    rss: f64,
}

/// `gridbed measure PROGRAM ARGS…` (hidden).
#[derive(clap::Args)]
pub(crate) struct MeasureArgs {
    /// The program and its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    command: Vec<String>,
}

/// Runs the command, its output discarded and its errors passed on, and
/// prints `{"wall": s, "rss": bytes}`; fails as the command failed.
pub(crate) fn measure_command(
    args: MeasureArgs,
) -> Result<std::process::ExitCode, super::super::CliError> {
    let (program, rest) = args
        .command
        .split_first()
        .ok_or_else(|| super::super::CliError::Input("measure: expected a command".into()))?;
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    let m = run_measured(Path::new(program), &rest).map_err(super::super::CliError::failed)?;
    println!(
        "{}",
        serde_json::to_string(&m).map_err(super::super::CliError::failed)?
    );
    Ok(std::process::ExitCode::SUCCESS)
}

/// Runs `program args…` in a fresh `gridbed measure` process, so that the
/// peak RSS is the command's own and not this (possibly large) process's:
/// Linux counts a spawned child's pre-exec memory, its parent's, in its
/// peak.
fn measure(program: &Path, args: &[&str]) -> Result<Measured, Failure> {
    let exe = std::env::current_exe()?;
    let out = std::process::Command::new(exe)
        .arg("measure")
        .arg(program)
        .args(args)
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "`{} {}`: {}",
            program.display(),
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// Runs `program args…` to its end, its output discarded: its wall seconds
/// and peak RSS (bytes, from the kernel's accounting of that child).
fn run_measured(program: &Path, args: &[&str]) -> Result<Measured, Failure> {
    let started = Instant::now();
    let child = std::process::Command::new(program)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let pid = child.id() as libc::pid_t;
    let stderr = child.stderr;
    // Read stderr on a thread so that a chatty child never blocks on a
    // full pipe while we wait for it.
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut e) = stderr {
            let _ = std::io::Read::read_to_string(&mut e, &mut text);
        }
        text
    });
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value; wait4 fills it for `pid`,
    // our own child, which nothing else waits for.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = started.elapsed().as_secs_f64();
    let stderr = reader.join().unwrap_or_default();
    if rc != pid {
        return Err(format!(
            "waiting for {}: {}",
            program.display(),
            std::io::Error::last_os_error()
        )
        .into());
    }
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        return Err(format!(
            "`{} {}` failed: {}",
            program.display(),
            args.join(" "),
            stderr.trim()
        )
        .into());
    }
    Ok(Measured {
        wall,
        rss: usage.ru_maxrss as f64 * 1024.0,
    })
}

fn gb(bytes: f64) -> f64 {
    bytes / 1e9
}

/// The full SDSS coadd through the whole `gridbed run --json` command
/// (record and control database written), SPCL and Random.
pub(super) fn whole_coadd() -> Result<Vec<Figure>, Failure> {
    let exe = std::env::current_exe()?;
    let dir = tempfile::tempdir()?;
    let mut figures = Vec::new();
    for strategy in ["clustered", "random"] {
        let json = dir.path().join(format!("{strategy}.json"));
        let m = measure(
            &exe,
            &[
                "run",
                "testbeds/spcl-grid3.toml",
                "--engine",
                "sim",
                "--strategy",
                strategy,
                "-q",
                "--json",
                json.to_str().ok_or("temp path")?,
            ],
        )?;
        let record = std::fs::metadata(&json)?.len() as f64;
        let db = std::fs::metadata(json.with_extension("db"))?.len() as f64;
        figures.push(Figure {
            name: format!(
                "record: `gridbed run testbeds/spcl-grid3.toml --engine sim --strategy {strategy} --json F`: peak RSS {:.2} GB, record {:.1} MB, control database {:.0} MB",
                gb(m.rss),
                record / 1e6,
                db / 1e6
            ),
            value: m.wall,
            unit: "s wall".into(),
            goal: Some("≤ 10 s, ≤ 1 GB, record ≤ 20 MB".into()),
            met: m.wall <= 10.0 && m.rss <= 1e9 && record <= 20e6,
        });
    }
    Ok(figures)
}

/// The WfCommons file the parse and side-by-side figures read, or why not.
fn wfcommons(n: usize) -> Result<PathBuf, Failure> {
    let path = PathBuf::from(format!("target/wfcommons/epigenomics-{n}.json"));
    if path.is_file() {
        return Ok(path);
    }
    Err(format!(
        "{} is missing: generate it with `python3 benches/wfcommons_gen.py target/wfcommons` (needs `pip install wfcommons==1.6`)",
        path.display()
    )
    .into())
}

/// WfFormat read, parsed and made a validated DAG, in bytes of the file a
/// second: the 170 MB WfCommons 1.6 instance, median of three.
pub(super) fn parse_rate() -> Result<Figure, Failure> {
    let path = wfcommons(100_000)?;
    let bytes = std::fs::metadata(&path)?.len() as f64;
    let mut secs = Vec::new();
    let mut tasks = 0;
    for _ in 0..3 {
        let started = Instant::now();
        let loaded = crate::workflow::formats::load(&path, &Default::default())?;
        secs.push(started.elapsed().as_secs_f64());
        tasks = loaded.workflow.jobs.len();
    }
    secs.sort_by(f64::total_cmp);
    let rate = bytes / secs[1] / 1e6;
    Ok(Figure {
        name: format!(
            "parse: WfCommons epigenomics {tasks} tasks, {:.0} MB of WfFormat 1.6 read, parsed and validated ({:.2} s, median of 3)",
            bytes / 1e6,
            secs[1]
        ),
        value: rate,
        unit: "MB/s".into(),
        goal: Some("≥ 300 MB/s".into()),
        met: rate >= 300.0,
    })
}

/// The same WfCommons instances on the same platform shape (4 hosts of
/// 10/10/4/4 cores, 30 MB/s links) in gridbed and, when `DSLAB_DAG` names
/// dslab-dag's `dag-benchmark` binary, in dslab-dag (it reads WfFormat 1.4:
/// `benches/wfformat_to_v14.py` writes `target/dslab/epigenomics-N-v14.json`;
/// `benches/dslab_side_by_side.sh` does all of it).
pub(super) fn side_by_side() -> Result<Vec<Figure>, Failure> {
    let exe = std::env::current_exe()?;
    let dslab = std::env::var_os("DSLAB_DAG").map(PathBuf::from);
    if dslab.is_none() {
        eprintln!(
            "note: DSLAB_DAG is not set: gridbed's side only (benches/dslab_side_by_side.sh builds dslab-dag and runs both)"
        );
    }
    let gridbed_on = |file: &str| {
        let run = [
            "run",
            "testbeds/dslab-platform.toml",
            "--engine",
            "sim",
            "-q",
        ];
        let args: Vec<&str> = run.iter().copied().chain(["--workflow", file]).collect();
        measure(&exe, &args)
    };
    let mut figures = Vec::new();
    for n in [10_000, 100_000] {
        let file = wfcommons(n)?;
        let file = file.to_str().ok_or("path")?;
        let ours = gridbed_on(file)?;
        let size = std::fs::metadata(file)?.len() as f64;
        let Some(dslab) = &dslab else {
            figures.push(Figure {
                name: format!(
                    "dslab: gridbed, WfCommons epigenomics {n} on 10/10/4/4 cores (whole `gridbed run`, {:.0} MB file): peak RSS {:.2} GB",
                    size / 1e6,
                    gb(ours.rss)
                ),
                value: ours.wall,
                unit: "s wall".into(),
                goal: None,
                met: true,
            });
            continue;
        };
        let v14 = format!("target/dslab/epigenomics-{n}-v14.json");
        if !Path::new(&v14).is_file() {
            return Err(format!(
                "{v14} is missing: python3 benches/wfformat_to_v14.py {file} {v14}"
            )
            .into());
        }
        let theirs = measure(
            dslab,
            &["--dag", &v14, "--system", "benches/dslab-platform.yaml"],
        )?;
        // The same DAG from the file dslab-dag reads, for the memory figure.
        let ours_v14 = gridbed_on(&v14)?;
        let speedup = theirs.wall / ours.wall;
        let goal = if n == 10_000 { 4.0 } else { 30.0 };
        figures.push(Figure {
            name: format!(
                "dslab: epigenomics {n} tasks on 10/10/4/4 cores, dslab-dag {:.2} s / gridbed {:.2} s wall (whole commands, parse included)",
                theirs.wall, ours.wall
            ),
            value: speedup,
            unit: "× faster".into(),
            goal: Some(format!("≥ {goal}×")),
            met: speedup >= goal,
        });
        figures.push(Figure {
            name: format!(
                "dslab: epigenomics {n} peak RSS, gridbed on the 1.6 file {:.0} MB / on dslab-dag's 1.4 file {:.0} MB / dslab-dag {:.0} MB ({:.0} MB file)",
                ours.rss / 1e6,
                ours_v14.rss / 1e6,
                theirs.rss / 1e6,
                size / 1e6
            ),
            value: ours_v14.rss / theirs.rss,
            unit: "× dslab-dag's".into(),
            goal: (n == 100_000).then(|| "≤ 1".to_string()),
            met: n != 100_000 || (ours_v14.rss <= theirs.rss && ours.rss <= theirs.rss),
        });
    }
    Ok(figures)
}

/// A generated Epigenomics workflow of 10K, 100K and 1M tasks written as
/// WfFormat, then read and simulated by the whole `gridbed run` command on
/// the 100-site testbed: wall, peak RSS, and the cost per task from one
/// size to the next.
pub(super) fn million(sizes: &[usize]) -> Result<Vec<Figure>, Failure> {
    use crate::workflow::generators::Epigenomics;
    let exe = std::env::current_exe()?;
    let dir = PathBuf::from("target/scale");
    std::fs::create_dir_all(&dir)?;
    let mut figures = Vec::new();
    let mut last: Option<(usize, f64)> = None;
    for &n in sizes {
        let file = dir.join(format!("epigenomics-{n}.json"));
        let started = Instant::now();
        let tasks = {
            let wf = Epigenomics {
                tasks: n,
                ..Default::default()
            }
            .generate(1)?;
            let ids = crate::report::wfinstance::ids(&wf);
            let name = format!("epigenomics-{n}");
            let doc = crate::report::wfinstance::workflow_instance(&name, &wf, &ids);
            let mut out = std::io::BufWriter::new(std::fs::File::create(&file)?);
            serde_json::to_writer(&mut out, &doc)?;
            std::io::Write::flush(&mut out)?;
            wf.jobs.len()
        };
        let written = started.elapsed().as_secs_f64();
        let size = std::fs::metadata(&file)?.len() as f64;
        let m = measure(
            &exe,
            &[
                "run",
                "testbeds/grid-100.toml",
                "--engine",
                "sim",
                "-q",
                "--workflow",
                file.to_str().ok_or("path")?,
            ],
        )?;
        let per_task = m.wall / tasks as f64;
        figures.push(Figure {
            name: format!(
                "million: epigenomics {tasks} tasks ({:.0} MB WfFormat, generated and written in {written:.1} s) read and simulated on 100 sites: peak RSS {:.2} GB, {:.2} µs a task",
                size / 1e6,
                gb(m.rss),
                per_task * 1e6
            ),
            value: m.wall,
            unit: "s wall".into(),
            goal: None,
            met: true,
        });
        if let Some((prev, prev_cost)) = last {
            // O(n log n) lets the cost per task grow by log(n) / log(prev).
            let bound = (tasks as f64).ln() / (prev as f64).ln();
            let growth = per_task / prev_cost;
            figures.push(Figure {
                name: format!(
                    "million: cost per task, {tasks} / {prev} tasks (n log n allows {bound:.2}×)"
                ),
                value: growth,
                unit: "×".into(),
                goal: Some("≤ 1.5× per 10× tasks".into()),
                met: growth <= 1.5,
            });
        }
        last = Some((tasks, per_task));
    }
    Ok(figures)
}
