//! The control database of seed 002 §4, persisted: the manager's control
//! records (jobs, attempts with site, submitted, started, ended, killed and
//! why, transfers, sites) in SQLite, written while the run goes on.
//!
//! Writes are batched: an engine hands over what changed since the last batch
//! ([`crate::core::manager::Changes`]) every so often, and one transaction
//! upserts it, in WAL mode without waiting for the disk on commit, so the database costs
//! the run little (`gridbed bench db` measures it). The Opportunistic selector
//! reads the in-memory mirror of the same records, never this file.

use std::path::Path;

use rusqlite::{Connection, OpenFlags, params};

use crate::core::manager::Changes;
use crate::core::records::{Outcome, Records};
use crate::core::{SiteInfo, Workflow};

/// An error of the control database, with the file it concerns.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct DbError {
    /// The database file.
    pub path: String,
    /// What went wrong.
    pub message: String,
}

impl DbError {
    /// An error about the database at `path`.
    fn at(path: &Path, message: impl std::fmt::Display) -> DbError {
        DbError {
            path: path.display().to_string(),
            message: message.to_string(),
        }
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS run (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS sites (id INTEGER PRIMARY KEY, name TEXT NOT NULL, cpus INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS attempts (
    job INTEGER NOT NULL, attempt INTEGER NOT NULL, site INTEGER NOT NULL,
    prescript REAL NOT NULL, submitted REAL, started REAL, ended REAL,
    outcome TEXT NOT NULL, reason TEXT, transfers INTEGER NOT NULL,
    PRIMARY KEY (job, attempt));
CREATE TABLE IF NOT EXISTS transfers (
    id INTEGER PRIMARY KEY, job INTEGER NOT NULL, file TEXT NOT NULL,
    source INTEGER NOT NULL, destination INTEGER NOT NULL, start REAL NOT NULL,
    end REAL, bytes INTEGER NOT NULL, failure TEXT, retry INTEGER NOT NULL);
";

/// An open control database.
pub struct ControlDb {
    conn: Connection,
    path: String,
}

fn outcome_text(o: &Outcome) -> (&'static str, Option<String>) {
    match o {
        Outcome::Pending => ("pending", None),
        Outcome::Ended => ("ended", None),
        Outcome::StagingFailed(r) => ("staging_failed", Some(r.clone())),
        Outcome::Failed(f) => ("failed", serde_json::to_string(f).ok()),
        Outcome::Killed => ("killed", Some("idle longer than max_idle".into())),
    }
}

impl ControlDb {
    /// Creates (replacing any old one) the database of a run, with its sites
    /// and jobs.
    pub fn create(
        path: &Path,
        run: &[(&str, String)],
        sites: &[SiteInfo],
        wf: &Workflow,
    ) -> Result<ControlDb, DbError> {
        let err = |e: &dyn std::fmt::Display| DbError::at(path, e);
        for suffix in ["", "-wal", "-shm"] {
            let p = format!("{}{suffix}", path.display());
            if Path::new(&p).exists() {
                std::fs::remove_file(&p).map_err(|e| err(&e))?;
            }
        }
        let mut conn = Connection::open(path).map_err(|e| err(&e))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| err(&e))?;
        // The run record is the durable account; this database only has to
        // survive the process, so commits need not wait for the disk.
        conn.pragma_update(None, "synchronous", "OFF")
            .map_err(|e| err(&e))?;
        let tx = conn.transaction().map_err(|e| err(&e))?;
        tx.execute_batch(SCHEMA).map_err(|e| err(&e))?;
        {
            let mut st = tx
                .prepare("INSERT INTO run (key, value) VALUES (?1, ?2)")
                .map_err(|e| err(&e))?;
            for (k, v) in run {
                st.execute(params![k, v]).map_err(|e| err(&e))?;
            }
            let mut st = tx
                .prepare("INSERT INTO sites (id, name, cpus) VALUES (?1, ?2, ?3)")
                .map_err(|e| err(&e))?;
            for (i, s) in sites.iter().enumerate() {
                st.execute(params![i as i64, s.name, s.cpus as i64])
                    .map_err(|e| err(&e))?;
            }
            let mut st = tx
                .prepare("INSERT INTO jobs (id, name) VALUES (?1, ?2)")
                .map_err(|e| err(&e))?;
            for (i, j) in wf.jobs.iter().enumerate() {
                st.execute(params![i as i64, j.name]).map_err(|e| err(&e))?;
            }
        }
        tx.commit().map_err(|e| err(&e))?;
        Ok(ControlDb {
            conn,
            path: path.display().to_string(),
        })
    }

    /// Writes what `changes` lists, from `records`, in one transaction.
    pub fn write(
        &mut self,
        changes: &Changes,
        records: &Records,
        wf: &Workflow,
    ) -> Result<(), DbError> {
        let path = std::path::PathBuf::from(&self.path);
        let err = |e: &dyn std::fmt::Display| DbError::at(&path, e);
        if changes.jobs.is_empty() && changes.transfers.is_empty() {
            return Ok(());
        }
        let tx = self.conn.transaction().map_err(|e| err(&e))?;
        {
            let mut st = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO attempts (job, attempt, site, prescript, submitted, \
                     started, ended, outcome, reason, transfers) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )
                .map_err(|e| err(&e))?;
            for &j in &changes.jobs {
                for (k, a) in records.jobs[j].attempts.iter().enumerate() {
                    let (outcome, reason) = outcome_text(&a.outcome);
                    st.execute(params![
                        j as i64,
                        k as i64,
                        a.site as i64,
                        a.prescript,
                        a.submitted,
                        a.started,
                        a.ended,
                        outcome,
                        reason,
                        a.transfers
                    ])
                    .map_err(|e| err(&e))?;
                }
            }
            let mut st = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO transfers (id, job, file, source, destination, \
                     start, end, bytes, failure, retry) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )
                .map_err(|e| err(&e))?;
            // A transfer that started and ended within one batch is written once.
            let mut ids = changes.transfers.clone();
            ids.sort_unstable();
            ids.dedup();
            for &id in &ids {
                let t = &records.transfers[id as usize];
                let failure = t
                    .failure
                    .as_ref()
                    .and_then(|f| serde_json::to_string(f).ok());
                st.execute(params![
                    t.id as i64,
                    t.job as i64,
                    wf.files[t.file].name,
                    t.from as i64,
                    t.to as i64,
                    t.start,
                    t.end,
                    t.bytes as i64,
                    failure,
                    t.retry
                ])
                .map_err(|e| err(&e))?;
            }
        }
        tx.commit().map_err(|e| err(&e))
    }
}

/// Per-site counts read back from a database.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteRow {
    /// Site name.
    pub name: String,
    /// Attempts that entered its queue.
    pub submitted: u64,
    /// Attempts that ended there.
    pub ended: u64,
    /// Attempts MonitQueue killed there.
    pub killed: u64,
}

/// Opens an existing database read-only; a missing or corrupt file is an error.
fn open_existing(path: &Path) -> Result<Connection, DbError> {
    let err = |m: String| DbError::at(path, m);
    if !path.is_file() {
        return Err(err("no such database file".into()));
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| err(format!("cannot open: {e}")))?;
    conn.query_row("SELECT count(*) FROM attempts", [], |r| r.get::<_, i64>(0))
        .map_err(|e| err(format!("not a gridbed control database: {e}")))?;
    Ok(conn)
}

/// Per-site submitted / ended / killed counts of a database.
pub fn site_rows(path: &Path) -> Result<Vec<SiteRow>, DbError> {
    let conn = open_existing(path)?;
    let err = |e: rusqlite::Error| DbError::at(path, e);
    let mut st = conn
        .prepare(
            "SELECT s.name, \
             (SELECT count(*) FROM attempts a WHERE a.site = s.id AND a.submitted IS NOT NULL), \
             (SELECT count(*) FROM attempts a WHERE a.site = s.id AND a.outcome = 'ended'), \
             (SELECT count(*) FROM attempts a WHERE a.site = s.id AND a.outcome = 'killed') \
             FROM sites s WHERE s.cpus > 0 ORDER BY s.id",
        )
        .map_err(err)?;
    let rows = st
        .query_map([], |r| {
            Ok(SiteRow {
                name: r.get(0)?,
                submitted: r.get::<_, i64>(1)? as u64,
                ended: r.get::<_, i64>(2)? as u64,
                killed: r.get::<_, i64>(3)? as u64,
            })
        })
        .map_err(err)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(err)
}

/// One attempt of a job as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptRow {
    /// Site name.
    pub site: String,
    /// Prescript start.
    pub prescript: f64,
    /// Submitted.
    pub submitted: Option<f64>,
    /// Started.
    pub started: Option<f64>,
    /// Ended.
    pub ended: Option<f64>,
    /// Outcome.
    pub outcome: String,
    /// Why, if it did not end well.
    pub reason: Option<String>,
}

/// The attempts of the job called `job`, in order.
pub fn job_history(path: &Path, job: &str) -> Result<Vec<AttemptRow>, DbError> {
    let conn = open_existing(path)?;
    let err = |e: rusqlite::Error| DbError::at(path, e);
    let mut st = conn
        .prepare(
            "SELECT s.name, a.prescript, a.submitted, a.started, a.ended, a.outcome, a.reason \
             FROM attempts a JOIN jobs j ON j.id = a.job JOIN sites s ON s.id = a.site \
             WHERE j.name = ?1 ORDER BY a.attempt",
        )
        .map_err(err)?;
    let rows = st
        .query_map([job], |r| {
            Ok(AttemptRow {
                site: r.get(0)?,
                prescript: r.get(1)?,
                submitted: r.get(2)?,
                started: r.get(3)?,
                ended: r.get(4)?,
                outcome: r.get(5)?,
                reason: r.get(6)?,
            })
        })
        .map_err(err)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(err)
}
