//! The detail of a run: every job attempt and every transfer, by name. A
//! run record (`--json`) carries only totals, per-site figures and the
//! timeline; this detail lives in the control database, and
//! [`run_detail`] reads it back for `gridbed report` and for tests.

use std::path::Path;

use rusqlite::Row;
use serde::{Deserialize, Serialize};

use super::{DbError, open_existing};
use crate::core::records::{MemberRun, Outcome, ScriptRun};
use crate::core::{JobFailure, TransferFailure};

/// One job.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobEntry {
    /// Job name.
    pub name: String,
    /// When it became ready (nominal s).
    pub ready: Option<f64>,
    /// Its attempts.
    pub attempts: Vec<AttemptEntry>,
    /// Why it failed for good.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The failed ancestor that kept it from running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<String>,
}

/// One attempt of a job.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AttemptEntry {
    /// Site name.
    pub site: String,
    /// Prescript start.
    pub prescript: f64,
    /// Entered the site queue.
    pub submitted: Option<f64>,
    /// Started running.
    pub started: Option<f64>,
    /// The site reported the run's end (before the postscript).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<f64>,
    /// The node ended (after the postscript, or the failure).
    pub ended: Option<f64>,
    /// How it ended.
    pub outcome: Outcome,
    /// Transfers its prescript started.
    pub transfers: u32,
    /// The status its program exited with, when it ran to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    /// Its DAGMan PRE and POST script runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scripts: Vec<ScriptRun>,
    /// A clustered job's members as seqexec ran them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberRun>,
}

/// One transfer attempt.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TransferEntry {
    /// Transfer id.
    pub id: u64,
    /// Job name.
    pub job: String,
    /// File name.
    pub file: String,
    /// Source site.
    pub from: String,
    /// Destination site.
    pub to: String,
    /// Start (nominal s).
    pub start: f64,
    /// End (nominal s).
    pub end: Option<f64>,
    /// Nominal bytes.
    pub bytes: u64,
    /// Why it failed.
    pub failure: Option<TransferFailure>,
    /// Whether it retried a failed transfer of the same input.
    pub retry: bool,
}

/// Every job (in workflow order, with its attempts) and every transfer (in
/// id order) of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunDetail {
    /// The run's id (databases of older gridbeds have none).
    pub run_id: Option<String>,
    /// Per job.
    pub jobs: Vec<JobEntry>,
    /// Per transfer attempt.
    pub transfers: Vec<TransferEntry>,
}

/// The outcome an attempt row stores (`outcome`, `reason`), as the run
/// recorded it; an attempt a killed run left going (`interrupted`) reads as
/// still pending.
fn outcome_of(kind: &str, reason: Option<String>) -> Outcome {
    let reason = reason.unwrap_or_default();
    match kind {
        "ended" => Outcome::Ended,
        "killed" => Outcome::Killed,
        "removed" => Outcome::Removed(reason),
        "staging_failed" => Outcome::StagingFailed(reason),
        "failed" => {
            Outcome::Failed(serde_json::from_str(&reason).unwrap_or(JobFailure::Failed(reason)))
        }
        _ => Outcome::Pending,
    }
}

/// A JSON column that holds a list, or NULL for an empty one.
fn list<T: for<'de> Deserialize<'de>>(row: &Row, i: usize) -> rusqlite::Result<Vec<T>> {
    let text: Option<String> = row.get(i)?;
    Ok(text
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default())
}

/// Reads every job, attempt and transfer of the run in the control
/// database at `path`.
pub fn run_detail(path: &Path) -> Result<RunDetail, DbError> {
    let conn = open_existing(path)?;
    let err = |e: rusqlite::Error| DbError::at(path, e);
    let names = |sql: &str| -> Result<Vec<String>, DbError> {
        let mut st = conn.prepare(sql).map_err(err)?;
        let it = st.query_map([], |r| r.get(0)).map_err(err)?;
        it.collect::<Result<_, _>>().map_err(err)
    };
    let sites = names("SELECT name FROM sites ORDER BY id")?;
    let job_names = names("SELECT name FROM jobs ORDER BY id")?;
    // Ids index the lists above; a row naming another id is not ours.
    let name = |list: &[String], id: i64, what: &str| -> Result<String, DbError> {
        usize::try_from(id)
            .ok()
            .and_then(|i| list.get(i).cloned())
            .ok_or_else(|| {
                DbError::at(path, format!("a row names {what} {id}, which it lists not"))
            })
    };
    let mut jobs = Vec::with_capacity(job_names.len());
    {
        let mut st = conn
            .prepare("SELECT id, name, ready, failure, blocked_by FROM jobs ORDER BY id")
            .map_err(err)?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<f64>>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, Option<i64>>(4)?,
                ))
            })
            .map_err(err)?;
        for row in rows {
            let (job, ready, failure, blocked_by) = row.map_err(err)?;
            jobs.push(JobEntry {
                name: job,
                ready,
                attempts: Vec::new(),
                failure,
                blocked_by: blocked_by.map(|b| name(&job_names, b, "job")).transpose()?,
            });
        }
    }
    {
        let mut st = conn
            .prepare(
                "SELECT job, site, prescript, submitted, started, finished, ended, outcome, \
                 reason, transfers, exit, scripts, members FROM attempts ORDER BY job, attempt",
            )
            .map_err(err)?;
        let rows = st
            .query_map([], |r| {
                let outcome: String = r.get(7)?;
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    AttemptEntry {
                        site: String::new(),
                        prescript: r.get(2)?,
                        submitted: r.get(3)?,
                        started: r.get(4)?,
                        finished: r.get(5)?,
                        ended: r.get(6)?,
                        outcome: outcome_of(&outcome, r.get(8)?),
                        transfers: r.get(9)?,
                        exit: r.get(10)?,
                        scripts: list(r, 11)?,
                        members: list(r, 12)?,
                    },
                ))
            })
            .map_err(err)?;
        for row in rows {
            let (job, site, mut attempt) = row.map_err(err)?;
            attempt.site = name(&sites, site, "site")?;
            let entry = usize::try_from(job)
                .ok()
                .and_then(|j| jobs.get_mut(j))
                .ok_or_else(|| {
                    DbError::at(path, format!("an attempt of job {job}, which it lists not"))
                })?;
            entry.attempts.push(attempt);
        }
    }
    let mut transfers = Vec::new();
    {
        let mut st = conn
            .prepare(
                "SELECT t.id, t.job, f.name, t.source, t.destination, t.start, t.end, t.bytes, \
                 t.failure, t.retry FROM transfers t JOIN files f ON f.id = t.file ORDER BY t.id",
            )
            .map_err(err)?;
        let rows = st
            .query_map([], |r| {
                let failure: Option<String> = r.get(8)?;
                Ok((
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                    TransferEntry {
                        id: r.get::<_, i64>(0)? as u64,
                        job: String::new(),
                        file: r.get(2)?,
                        from: String::new(),
                        to: String::new(),
                        start: r.get(5)?,
                        end: r.get(6)?,
                        bytes: r.get::<_, i64>(7)? as u64,
                        failure: failure.and_then(|f| serde_json::from_str(&f).ok()),
                        retry: r.get(9)?,
                    },
                ))
            })
            .map_err(err)?;
        for row in rows {
            let (job, from, to, mut t) = row.map_err(err)?;
            t.job = name(&job_names, job, "job")?;
            t.from = name(&sites, from, "site")?;
            t.to = name(&sites, to, "site")?;
            transfers.push(t);
        }
    }
    let run_id = conn
        .query_row("SELECT value FROM run WHERE key = 'run_id'", [], |r| r.get(0))
        .ok();
    Ok(RunDetail {
        run_id,
        jobs,
        transfers,
    })
}
