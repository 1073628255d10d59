//! The control database's writer thread: the schema, and the batches an
//! engine queues, each folded with whatever queued behind it into one
//! transaction. Rows name jobs, sites and files by id; `files` holds a
//! file's name once, written the first time a row names it, so that the
//! millions of transfer rows of a large run carry integers, not names.

use std::path::Path;
use std::sync::mpsc;

use rusqlite::{Connection, params};

use super::{APPLICATION_ID, DbError};

/// The schema's version (`PRAGMA user_version`): 2 added `files` (names by
/// id, so `transfers.file` and `replicas.file` are ids), `jobs.ready` and
/// the attempts' `finished`, `exit`, `scripts` and `members`.
pub(super) const SCHEMA_VERSION: i32 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS run (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS sites (id INTEGER PRIMARY KEY, name TEXT NOT NULL, cpus INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, name TEXT NOT NULL,
    ready REAL, failure TEXT, blocked_by INTEGER);
CREATE TABLE IF NOT EXISTS files (id INTEGER PRIMARY KEY, name TEXT NOT NULL, bytes INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS attempts (
    job INTEGER NOT NULL, attempt INTEGER NOT NULL, site INTEGER NOT NULL,
    prescript REAL NOT NULL, submitted REAL, started REAL, finished REAL, ended REAL,
    outcome TEXT NOT NULL, reason TEXT, transfers INTEGER NOT NULL, exit INTEGER,
    scripts TEXT, members TEXT,
    PRIMARY KEY (job, attempt));
CREATE TABLE IF NOT EXISTS transfers (
    id INTEGER PRIMARY KEY, job INTEGER NOT NULL, file INTEGER NOT NULL,
    source INTEGER NOT NULL, destination INTEGER NOT NULL, start REAL NOT NULL,
    end REAL, bytes INTEGER NOT NULL, failure TEXT, retry INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS faults (
    t REAL NOT NULL, site INTEGER NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS replicas (
    file INTEGER NOT NULL, site INTEGER NOT NULL, real_bytes INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS pools (site INTEGER PRIMARY KEY, dir TEXT NOT NULL);
";

/// One attempt as written.
pub(super) struct AttemptWrite {
    pub job: i64,
    pub attempt: i64,
    pub site: i64,
    pub prescript: f64,
    pub submitted: Option<f64>,
    pub started: Option<f64>,
    pub finished: Option<f64>,
    pub ended: Option<f64>,
    pub outcome: &'static str,
    pub reason: Option<String>,
    pub transfers: u32,
    pub exit: Option<i32>,
    /// Its DAG script runs, as JSON, when it has any.
    pub scripts: Option<String>,
    /// A clustered job's member runs, as JSON, when it has any.
    pub members: Option<String>,
}

/// One transfer as written.
pub(super) struct TransferWrite {
    pub id: i64,
    pub job: i64,
    pub file: i64,
    pub from: i64,
    pub to: i64,
    pub start: f64,
    pub end: Option<f64>,
    pub bytes: i64,
    pub failure: Option<String>,
    pub retry: bool,
}

/// A job's own row: when it became ready, why it failed for good, or which
/// failed ancestor blocked it.
pub(super) struct JobWrite {
    pub job: i64,
    pub ready: Option<f64>,
    pub failure: Option<String>,
    pub blocked_by: Option<i64>,
}

/// One fault as written: time, site, kind, the fault as JSON.
pub(super) struct FaultWrite(pub f64, pub i64, pub &'static str, pub String);

/// What one hand-over from an engine asks the writer to upsert.
#[derive(Default)]
pub(super) struct Batch {
    /// `run` keys to set.
    pub run: Vec<(String, String)>,
    /// Files named for the first time: id, name, nominal bytes.
    pub files: Vec<(i64, String, i64)>,
    /// At the end of a run: the RLS (file, site, real bytes) and, when kept,
    /// each site's pool directory.
    pub replicas: Vec<(i64, i64, i64)>,
    pub pools: Vec<(i64, String)>,
    pub faults: Vec<FaultWrite>,
    /// Jobs a sub-DAG read as the run goes added: id, name.
    pub new_jobs: Vec<(i64, String)>,
    pub jobs: Vec<JobWrite>,
    pub attempts: Vec<AttemptWrite>,
    pub transfers: Vec<TransferWrite>,
}

/// The writer thread: schema and static rows, then every batch until the
/// engines hang up.
pub(super) fn writer(
    path: &Path,
    run: Vec<(String, String)>,
    sites: Vec<(i64, String, i64)>,
    jobs: Vec<(i64, String)>,
    batches: mpsc::Receiver<Batch>,
) -> Result<(), DbError> {
    let err = |e: rusqlite::Error| DbError::at(path, e);
    let mut conn = Connection::open(path).map_err(err)?;
    // WAL with synchronous=NORMAL: a killed process loses nothing it
    // committed, and a power loss at worst the last commits, never the
    // file's consistency (with OFF, an OS crash could corrupt it). Commits
    // wait for the disk only at checkpoints. Set first: switching to WAL is
    // itself a commit. A 64 MiB page cache keeps the transfers table's
    // growing end and the attempts' index in memory on runs of millions of
    // rows (SQLite's default 2 MiB made it spill and re-read pages).
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(err)?;
    conn.pragma_update(None, "application_id", APPLICATION_ID as i32)
        .map_err(err)?;
    conn.pragma_update(None, "cache_size", -65536)
        .map_err(err)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(err)?;
    let tx = conn.transaction().map_err(err)?;
    tx.execute_batch(SCHEMA).map_err(err)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(err)?;
    {
        let mut st = tx
            .prepare("INSERT OR REPLACE INTO run (key, value) VALUES (?1, ?2)")
            .map_err(err)?;
        for (k, v) in &run {
            st.execute(params![k, v]).map_err(err)?;
        }
        let mut st = tx
            .prepare("INSERT INTO sites (id, name, cpus) VALUES (?1, ?2, ?3)")
            .map_err(err)?;
        for (row, name, cpus) in &sites {
            st.execute(params![row, name, cpus]).map_err(err)?;
        }
        let mut st = tx
            .prepare("INSERT INTO jobs (id, name) VALUES (?1, ?2)")
            .map_err(err)?;
        for (row, name) in &jobs {
            st.execute(params![row, name]).map_err(err)?;
        }
    }
    tx.commit().map_err(err)?;
    while let Ok(first) = batches.recv() {
        let tx = conn.transaction().map_err(err)?;
        {
            let mut attempts = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO attempts (job, attempt, site, prescript, submitted, \
                     started, finished, ended, outcome, reason, transfers, exit, scripts, members) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                )
                .map_err(err)?;
            let mut transfers = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO transfers (id, job, file, source, destination, \
                     start, end, bytes, failure, retry) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )
                .map_err(err)?;
            let mut files = tx
                .prepare_cached("INSERT OR IGNORE INTO files (id, name, bytes) VALUES (?1, ?2, ?3)")
                .map_err(err)?;
            let mut jobs = tx
                .prepare_cached(
                    "UPDATE jobs SET ready = ?2, failure = ?3, blocked_by = ?4 WHERE id = ?1",
                )
                .map_err(err)?;
            let mut new_jobs = tx
                .prepare_cached("INSERT OR IGNORE INTO jobs (id, name) VALUES (?1, ?2)")
                .map_err(err)?;
            let mut faults = tx
                .prepare_cached(
                    "INSERT INTO faults (t, site, kind, detail) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(err)?;
            let mut replicas = tx
                .prepare_cached("INSERT INTO replicas (file, site, real_bytes) VALUES (?1, ?2, ?3)")
                .map_err(err)?;
            let mut pools = tx
                .prepare_cached("INSERT OR REPLACE INTO pools (site, dir) VALUES (?1, ?2)")
                .map_err(err)?;
            let mut run_keys = tx
                .prepare_cached("INSERT OR REPLACE INTO run (key, value) VALUES (?1, ?2)")
                .map_err(err)?;
            // Whatever queued while the last transaction ran goes into this one.
            for batch in std::iter::once(first).chain(batches.try_iter()) {
                for (k, v) in &batch.run {
                    run_keys.execute(params![k, v]).map_err(err)?;
                }
                for (id, name, bytes) in &batch.files {
                    files.execute(params![id, name, bytes]).map_err(err)?;
                }
                if !batch.replicas.is_empty() || !batch.pools.is_empty() {
                    // The run's end state replaces an earlier run's.
                    tx.execute_batch("DELETE FROM replicas; DELETE FROM pools;")
                        .map_err(err)?;
                }
                for (f, s, b) in &batch.replicas {
                    replicas.execute(params![f, s, b]).map_err(err)?;
                }
                for (s, d) in &batch.pools {
                    pools.execute(params![s, d]).map_err(err)?;
                }
                for f in &batch.faults {
                    faults.execute(params![f.0, f.1, f.2, f.3]).map_err(err)?;
                }
                for (id, name) in &batch.new_jobs {
                    new_jobs.execute(params![id, name]).map_err(err)?;
                }
                for j in &batch.jobs {
                    jobs.execute(params![j.job, j.ready, j.failure, j.blocked_by])
                        .map_err(err)?;
                }
                for a in &batch.attempts {
                    attempts
                        .execute(params![
                            a.job,
                            a.attempt,
                            a.site,
                            a.prescript,
                            a.submitted,
                            a.started,
                            a.finished,
                            a.ended,
                            a.outcome,
                            a.reason,
                            a.transfers,
                            a.exit,
                            a.scripts,
                            a.members
                        ])
                        .map_err(err)?;
                }
                for t in &batch.transfers {
                    transfers
                        .execute(params![
                            t.id, t.job, t.file, t.from, t.to, t.start, t.end, t.bytes, t.failure,
                            t.retry
                        ])
                        .map_err(err)?;
                }
            }
        }
        tx.commit().map_err(err)?;
    }
    conn.close().map_err(|(_, e)| err(e))
}
