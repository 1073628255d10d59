//! `gridbed report`, `gridbed inspect` and `gridbed audit`: what a finished
//! run left, its run record drawn as plots, its control database read back
//! and checked against the pools it kept.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::CliError;

#[derive(Args)]
pub(crate) struct ReportArgs {
    /// A run record written by `gridbed run --json` (sim or live).
    record: PathBuf,
    /// The directory to write the plots and index.html into.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// The run's control database (default: the one the record names,
    /// written beside it by `gridbed run --json`).
    #[arg(long, value_name = "FILE")]
    db: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct AuditArgs {
    /// A control database written by `gridbed run --keep-pools DIR --db FILE`.
    db: PathBuf,
}

#[derive(Args)]
pub(crate) struct InspectArgs {
    /// A control database written by `gridbed run --db`.
    db: PathBuf,
    /// Also print this job's attempts.
    #[arg(long, value_name = "NAME")]
    job: Option<String>,
}

pub(super) fn report(args: ReportArgs) -> Result<ExitCode, CliError> {
    use crate::report::run_report;
    let rec = run_report::read_run(&args.record, args.db.as_deref()).map_err(CliError::input)?;
    let written = run_report::write_report(&rec, &args.out).map_err(CliError::failed)?;
    for path in &written {
        say!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `gridbed audit`: each difference between the run's replica catalogue and
/// its kept pools on a line; exit 1 if there is any.
pub(super) fn audit(args: AuditArgs) -> Result<ExitCode, CliError> {
    use crate::live::audit::{AuditError, audit};
    let differences = audit(&args.db).map_err(|e| match e {
        AuditError::Unreadable { .. } => CliError::failed(e),
        _ => CliError::input(e),
    })?;
    for d in &differences {
        say!("{d}");
    }
    say!(
        "audit of {}: {} difference{}",
        args.db.display(),
        differences.len(),
        if differences.len() == 1 { "" } else { "s" }
    );
    Ok(if differences.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub(super) fn inspect(args: InspectArgs) -> Result<ExitCode, CliError> {
    let bad = |e: crate::db::DbError| CliError::input(e);
    let sites = crate::db::site_rows(&args.db).map_err(bad)?;
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
        let history = crate::db::job_history(&args.db, job).map_err(bad)?;
        if history.is_empty() {
            return Err(CliError::Input(format!(
                "{}: no job named `{job}`",
                args.db.display()
            )));
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
