//! `gridbed sweep --backend slurm`: the sweep's runs as one Slurm job array,
//! one array task a run, on whatever cluster `sbatch` reaches. The sweep
//! writes its plan (the sweep's options and its cells) and a batch script
//! into `OUT/slurm/`, submits the array and waits for it (`sbatch --wait`);
//! each task runs the hidden `gridbed sweep-task PLAN INDEX`, which runs its
//! cell exactly as the local backend would and writes its row as JSON. The
//! rows are then gathered in cell order into the same CSV and charts.
//!
//! Every node must see the same paths (the gridbed binary, the testbed, the
//! output folder): a shared file system, as on any HPC cluster. HTCondor
//! would be the next backend: a submit file with `queue N` and `$(Process)`
//! in place of the array index.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use serde::{Deserialize, Serialize};

use super::{Cell, Row, SweepArgs, SweepError, run_cell};
use crate::cli::CliError;

/// What every array task reads: the sweep and its cells.
#[derive(Debug, Serialize, Deserialize)]
struct Plan {
    args: SweepArgs,
    cells: Vec<Cell>,
}

/// Absolute, so that a task started elsewhere finds it.
fn absolute(p: &Path) -> Result<PathBuf, SweepError> {
    std::path::absolute(p).map_err(|e| SweepError::Run(format!("{}: {e}", p.display())))
}

fn write(path: &Path, text: &str) -> Result<(), SweepError> {
    std::fs::write(path, text).map_err(|source| SweepError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Runs `cells` of `args` as a Slurm job array and returns their rows.
pub(super) fn execute(args: &SweepArgs, cells: &[Cell]) -> Result<Vec<Row>, SweepError> {
    let dir = absolute(&args.out.join("slurm"))?;
    std::fs::create_dir_all(&dir).map_err(|source| SweepError::Write {
        path: dir.clone(),
        source,
    })?;
    // Rows of an earlier sweep in the same folder must not pass for this one's.
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("row-") || name.starts_with("task-") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let mut task_args = args.clone();
    task_args.testbed = absolute(&args.testbed)?;
    task_args.sites_file = args.sites_file.as_deref().map(absolute).transpose()?;
    let plan = Plan {
        args: task_args,
        cells: cells.to_vec(),
    };
    let plan_path = dir.join("plan.json");
    let text = serde_json::to_string_pretty(&plan).expect("a plan serializes");
    write(&plan_path, &text)?;
    let exe = std::env::current_exe().map_err(|e| SweepError::Run(e.to_string()))?;
    let throttle = args.parallel.map_or(String::new(), |p| format!("%{p}"));
    let script = format!(
        "#!/bin/sh\n\
         #SBATCH --job-name=gridbed-sweep\n\
         #SBATCH --array=0-{last}{throttle}\n\
         #SBATCH --cpus-per-task=1\n\
         #SBATCH --output={dir}/task-%a.log\n\
         exec '{exe}' sweep-task '{plan}' \"$SLURM_ARRAY_TASK_ID\"\n",
        last = cells.len() - 1,
        dir = dir.display(),
        exe = exe.display(),
        plan = plan_path.display(),
    );
    let script_path = dir.join("sweep.sbatch");
    write(&script_path, &script)?;
    let mut sbatch = Command::new("sbatch");
    sbatch.args(["--parsable", "--wait"]);
    if let Some(p) = &args.partition {
        sbatch.arg(format!("--partition={p}"));
    }
    let out = sbatch
        .arg(&script_path)
        .current_dir(&dir)
        .output()
        .map_err(|e| SweepError::Run(format!("sbatch: {e} (is Slurm installed here?)")))?;
    let job = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() && job.is_empty() {
        return Err(SweepError::Run(format!(
            "sbatch refused the sweep: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    // A failed task fails `sbatch --wait`; its row is missing and its log says why.
    let mut rows = Vec::with_capacity(cells.len());
    for i in 0..cells.len() {
        let path = dir.join(format!("row-{i}.json"));
        let row = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str::<Row>(&t).map_err(|e| e.to_string()));
        match row {
            Ok(r) => rows.push(r),
            Err(e) => {
                let log = dir.join(format!("task-{i}.log"));
                let said = std::fs::read_to_string(&log).unwrap_or_default();
                return Err(SweepError::Run(format!(
                    "Slurm job {job}, task {i}: no row ({e}); {}: {}",
                    log.display(),
                    said.trim()
                )));
            }
        }
    }
    Ok(rows)
}

/// Arguments of the hidden `gridbed sweep-task`.
#[derive(clap::Args)]
pub(crate) struct TaskArgs {
    /// The plan the sweep wrote.
    plan: PathBuf,
    /// The array index (`$SLURM_ARRAY_TASK_ID`).
    index: usize,
}

/// One array task: runs cell `index` of the plan and writes its row beside
/// the plan (`row-INDEX.json`, renamed into place when whole).
pub(crate) fn task(a: TaskArgs) -> Result<ExitCode, CliError> {
    let text = std::fs::read_to_string(&a.plan)
        .map_err(|e| CliError::input(format!("{}: {e}", a.plan.display())))?;
    let plan: Plan = serde_json::from_str(&text)
        .map_err(|e| CliError::input(format!("{}: {e}", a.plan.display())))?;
    let cell = *plan.cells.get(a.index).ok_or_else(|| {
        CliError::input(format!(
            "task {}: the plan has {} cells",
            a.index,
            plan.cells.len()
        ))
    })?;
    let row = run_cell(&plan.args, cell).map_err(CliError::Failed)?;
    let dir = a.plan.parent().unwrap_or(Path::new("."));
    let (tmp, path) = (
        dir.join(format!(".row-{}.json", a.index)),
        dir.join(format!("row-{}.json", a.index)),
    );
    let json = serde_json::to_string(&row).expect("a row serializes");
    std::fs::write(&tmp, json)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| CliError::failed(format!("{}: {e}", path.display())))?;
    Ok(ExitCode::SUCCESS)
}
