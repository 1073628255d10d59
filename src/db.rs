//! The control database of seed 002 §4, persisted: the manager's control
//! records (jobs, attempts with site, submitted, started, ended, killed and
//! why, transfers, sites) in SQLite, written while the run goes on.
//!
//! Writes are batched and off the engine's thread: an engine hands what
//! changed since the last batch ([`crate::core::manager::Changes`]) to a
//! writer thread every so often, and the writer upserts whatever has queued in
//! one transaction, in WAL mode without waiting for the disk on commit, so the
//! database costs the run little (`gridbed bench db` measures it). The Opportunistic selector
//! reads the in-memory mirror of the same records, never this file.

use std::path::Path;
use std::sync::mpsc;
use std::thread::JoinHandle;

use rusqlite::{Connection, OpenFlags, params};

use crate::core::manager::Changes;
use crate::core::records::{Outcome, Records};
use crate::core::{SiteId, SiteInfo, Workflow};

/// An error of the control database, with the file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// SQLite or the file system failed.
    #[error("{path}: {message}")]
    Failed {
        /// The database file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// [`ControlDb::create`] was pointed at a file that gridbed did not
    /// write, and left it alone.
    #[error(
        "{path} exists and is not a gridbed control database; not replacing it (choose another path, or pass --force)"
    )]
    NotOurs {
        /// The file.
        path: String,
    },
}

impl DbError {
    /// An error about the database at `path`.
    fn at(path: &Path, message: impl std::fmt::Display) -> DbError {
        DbError::Failed {
            path: path.display().to_string(),
            message: message.to_string(),
        }
    }
}

/// The `application_id` in the header of every control database gridbed
/// writes ("grbd"), by which it knows a file it may replace.
const APPLICATION_ID: u32 = u32::from_be_bytes(*b"grbd");

/// Whether the file at `path` may be replaced without `--force`: it is
/// empty (nothing to lose) or a control database gridbed wrote (SQLite's
/// header, with gridbed's `application_id` at offset 68).
fn replaceable(path: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut head = Vec::with_capacity(72);
    std::fs::File::open(path)?.take(72).read_to_end(&mut head)?;
    Ok(head.is_empty()
        || (head.len() == 72
            && head.starts_with(b"SQLite format 3\0")
            && head[68..72] == APPLICATION_ID.to_be_bytes()))
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS run (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS sites (id INTEGER PRIMARY KEY, name TEXT NOT NULL, cpus INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, name TEXT NOT NULL,
    failure TEXT, blocked_by INTEGER);
CREATE TABLE IF NOT EXISTS attempts (
    job INTEGER NOT NULL, attempt INTEGER NOT NULL, site INTEGER NOT NULL,
    prescript REAL NOT NULL, submitted REAL, started REAL, ended REAL,
    outcome TEXT NOT NULL, reason TEXT, transfers INTEGER NOT NULL,
    PRIMARY KEY (job, attempt));
CREATE TABLE IF NOT EXISTS transfers (
    id INTEGER PRIMARY KEY, job INTEGER NOT NULL, file TEXT NOT NULL,
    source INTEGER NOT NULL, destination INTEGER NOT NULL, start REAL NOT NULL,
    end REAL, bytes INTEGER NOT NULL, failure TEXT, retry INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS faults (
    t REAL NOT NULL, site INTEGER NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS replicas (
    file TEXT NOT NULL, site INTEGER NOT NULL, real_bytes INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS pools (site INTEGER PRIMARY KEY, dir TEXT NOT NULL);
";

/// An open control database: the connection lives on a writer thread, so
/// that neither engine waits for SQLite; batches queue on a channel and the
/// writer folds whatever has queued up into one transaction.
pub struct ControlDb {
    batches: Option<mpsc::Sender<Batch>>,
    writer: Option<JoinHandle<Result<(), DbError>>>,
    /// Faults of the records already queued.
    faults_written: usize,
    /// A resumed run's attempts and transfers go after the interrupted
    /// run's: per job, attempts it already has; transfers already written.
    attempt_base: Vec<i64>,
    transfer_base: i64,
}

/// What the control database of an interrupted run says of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Interrupted {
    /// Its `run` table (testbed path, overrides, seed, engine…).
    pub run: std::collections::BTreeMap<String, String>,
    /// Job names, by job id.
    pub jobs: Vec<String>,
    /// Per job: the site its last attempt ended well at (its node ended,
    /// postscript included), or `None`.
    pub ended_at: Vec<Option<SiteId>>,
}

/// One attempt as written.
struct AttemptWrite {
    job: i64,
    attempt: i64,
    site: i64,
    prescript: f64,
    submitted: Option<f64>,
    started: Option<f64>,
    ended: Option<f64>,
    outcome: &'static str,
    reason: Option<String>,
    transfers: u32,
}

/// One transfer as written.
struct TransferWrite {
    id: i64,
    job: i64,
    file: String,
    from: i64,
    to: i64,
    start: f64,
    end: Option<f64>,
    bytes: i64,
    failure: Option<String>,
    retry: bool,
}

/// A job that failed for good (why) or is blocked (by which job).
struct JobEnd {
    job: i64,
    failure: Option<String>,
    blocked_by: Option<i64>,
}

/// One fault as written: time, site, kind, the fault as JSON.
struct FaultWrite(f64, i64, &'static str, String);

/// What one hand-over from an engine asks the writer to upsert.
#[derive(Default)]
struct Batch {
    /// `run` keys to set.
    run: Vec<(String, String)>,
    /// At the end of a run: the RLS (file, site, real bytes) and, when kept,
    /// each site's pool directory.
    replicas: Vec<(String, i64, i64)>,
    pools: Vec<(i64, String)>,
    faults: Vec<FaultWrite>,
    ends: Vec<JobEnd>,
    attempts: Vec<AttemptWrite>,
    transfers: Vec<TransferWrite>,
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
    /// Creates the database of a run, with its sites and jobs, replacing
    /// an old control database at `path` (or, with `force`, any file). The
    /// file is opened here, so a bad path fails at once; the schema and
    /// everything after are written by the writer thread.
    pub fn create(
        path: &Path,
        force: bool,
        run: &[(&str, String)],
        sites: &[SiteInfo],
        wf: &Workflow,
    ) -> Result<ControlDb, DbError> {
        let err = |e: &dyn std::fmt::Display| DbError::at(path, e);
        if !force && path.exists() && !replaceable(path).map_err(|e| err(&e))? {
            return Err(DbError::NotOurs {
                path: path.display().to_string(),
            });
        }
        // What can be checked without SQLite is checked here, so that a bad
        // path fails before the run; SQLite's own set-up (about a
        // millisecond) happens on the writer thread, beside the run.
        for suffix in ["", "-wal", "-shm"] {
            let p = format!("{}{suffix}", path.display());
            if Path::new(&p).exists() {
                std::fs::remove_file(&p).map_err(|e| err(&e))?;
            }
        }
        std::fs::File::create(path).map_err(|e| err(&e))?;
        let run: Vec<(String, String)> = run
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let sites: Vec<(String, i64)> = sites
            .iter()
            .map(|s| (s.name.clone(), s.cpus as i64))
            .collect();
        let jobs: Vec<String> = wf.jobs.iter().map(|j| j.name.clone()).collect();
        let (tx, rx) = mpsc::channel();
        let owned = path.to_path_buf();
        let writer = std::thread::Builder::new()
            .name("gridbed-db".into())
            .spawn(move || writer(&owned, run, sites, jobs, rx))
            .map_err(|e| err(&e))?;
        Ok(ControlDb {
            batches: Some(tx),
            writer: Some(writer),
            faults_written: 0,
            attempt_base: Vec::new(),
            transfer_base: 0,
        })
    }

    /// Opens the control database of an interrupted run to write its resumed
    /// run on (`gridbed resume`): what it holds, and a handle whose attempts
    /// and transfers are numbered after the ones already there.
    pub fn reopen(path: &Path) -> Result<(ControlDb, Interrupted), DbError> {
        let conn = open_existing(path)?;
        let err = |e: rusqlite::Error| DbError::at(path, e);
        let pairs = |sql: &str| -> Result<Vec<(String, String)>, DbError> {
            let mut st = conn.prepare(sql).map_err(err)?;
            let it = st
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(err)?;
            it.collect::<Result<Vec<_>, _>>().map_err(err)
        };
        let run = pairs("SELECT key, value FROM run")?.into_iter().collect();
        let jobs: Vec<String> = pairs("SELECT name, CAST(id AS TEXT) FROM jobs ORDER BY id")?
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let mut ended_at = vec![None; jobs.len()];
        let mut attempt_base = vec![0i64; jobs.len()];
        {
            let mut st = conn
                .prepare(
                    "SELECT a.job, a.attempt, a.site, a.outcome FROM attempts a \
                     WHERE a.attempt = (SELECT max(b.attempt) FROM attempts b WHERE b.job = a.job)",
                )
                .map_err(err)?;
            let rows = st
                .query_map([], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, String>(3)?,
                    ))
                })
                .map_err(err)?;
            for row in rows {
                let (job, attempt, site, outcome) = row.map_err(err)?;
                let Some(j) = usize::try_from(job).ok().filter(|&j| j < jobs.len()) else {
                    continue;
                };
                attempt_base[j] = attempt + 1;
                if outcome == "ended" {
                    ended_at[j] = usize::try_from(site).ok();
                }
            }
        }
        let transfer_base: i64 = conn
            .query_row("SELECT coalesce(max(id) + 1, 0) FROM transfers", [], |r| {
                r.get(0)
            })
            .map_err(err)?;
        let resumed = run_count(&run) + 1;
        drop(conn);
        // The attempts the interrupted run left going end as interrupted.
        Connection::open(path)
            .and_then(|c| {
                c.execute(
                    "UPDATE attempts SET outcome = 'interrupted', \
                     reason = 'the run stopped before this attempt ended' \
                     WHERE outcome = 'pending'",
                    [],
                )
            })
            .map_err(err)?;
        let (tx, rx) = mpsc::channel();
        let owned = path.to_path_buf();
        let keys = vec![("resumed".to_string(), resumed.to_string())];
        let writer = std::thread::Builder::new()
            .name("gridbed-db".into())
            .spawn(move || writer(&owned, keys, Vec::new(), Vec::new(), rx))
            .map_err(|e| DbError::at(path, e))?;
        Ok((
            ControlDb {
                batches: Some(tx),
                writer: Some(writer),
                faults_written: 0,
                attempt_base,
                transfer_base,
            },
            Interrupted {
                run,
                jobs,
                ended_at,
            },
        ))
    }

    /// Queues for writing what `changes` lists, as `records` has it now. A
    /// failed writer is not reported here but by [`ControlDb::finish`].
    pub fn write(&mut self, changes: &Changes, records: &Records, wf: &Workflow) {
        let Some(tx) = &self.batches else {
            return;
        };
        let mut batch = Batch::default();
        for f in &records.faults[self.faults_written.min(records.faults.len())..] {
            let detail = serde_json::to_string(&f.fault).unwrap_or_default();
            batch
                .faults
                .push(FaultWrite(f.time, f.site as i64, f.fault.kind(), detail));
        }
        self.faults_written = records.faults.len();
        for &j in &changes.jobs {
            let r = &records.jobs[j];
            if r.failure.is_some() || r.blocked_by.is_some() {
                batch.ends.push(JobEnd {
                    job: j as i64,
                    failure: r.failure.clone(),
                    blocked_by: r.blocked_by.map(|b| b as i64),
                });
            }
            for (k, a) in r.attempts.iter().enumerate() {
                let (outcome, reason) = outcome_text(&a.outcome);
                batch.attempts.push(AttemptWrite {
                    job: j as i64,
                    attempt: k as i64 + self.attempt_base.get(j).copied().unwrap_or(0),
                    site: a.site as i64,
                    prescript: a.prescript,
                    submitted: a.submitted,
                    started: a.started,
                    ended: a.ended,
                    outcome,
                    reason,
                    transfers: a.transfers,
                });
            }
        }
        // A transfer that started and ended within one batch is written once.
        let mut ids = changes.transfers.clone();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            let t = &records.transfers[id as usize];
            batch.transfers.push(TransferWrite {
                id: t.id as i64 + self.transfer_base,
                job: t.job as i64,
                file: wf.files[t.file].name.clone(),
                from: t.from as i64,
                to: t.to as i64,
                start: t.start,
                end: t.end,
                bytes: t.bytes as i64,
                failure: t
                    .failure
                    .as_ref()
                    .and_then(|f| serde_json::to_string(f).ok()),
                retry: t.retry,
            });
        }
        if tx.send(batch).is_err() {
            // The writer stopped on an error; finish() reports it.
            self.batches = None;
        }
    }

    /// Notes where a live run's pools are while it runs (`run` keys
    /// `pool_dir.<site>`): a resumed run removes what a killed one left.
    pub fn note_pool_dirs(&mut self, dirs: &[std::path::PathBuf]) {
        let Some(tx) = &self.batches else {
            return;
        };
        let batch = Batch {
            run: dirs
                .iter()
                .enumerate()
                .map(|(i, d)| (format!("pool_dir.{i}"), d.display().to_string()))
                .collect(),
            ..Default::default()
        };
        if tx.send(batch).is_err() {
            self.batches = None;
        }
    }

    /// Notes the files whose bytes derive from another file's name (`run`
    /// keys `content.<file>`): a memoized job's outputs hold its twin's
    /// bytes, and `gridbed audit` checks them against those.
    pub fn note_contents(&mut self, contents: &[(String, String)]) {
        let Some(tx) = &self.batches else {
            return;
        };
        if contents.is_empty() {
            return;
        }
        let batch = Batch {
            run: contents
                .iter()
                .map(|(f, c)| (format!("content.{f}"), c.clone()))
                .collect(),
            ..Default::default()
        };
        if tx.send(batch).is_err() {
            self.batches = None;
        }
    }

    /// Queues the run's end state: every registered replica (file, site,
    /// real bytes), and each site's pool directory when the pools are kept
    /// on disk (`gridbed audit` compares them).
    pub fn write_final(&mut self, replicas: Vec<(String, SiteId, u64)>, pools: &[(SiteId, &Path)]) {
        let Some(tx) = &self.batches else {
            return;
        };
        let batch = Batch {
            replicas: replicas
                .into_iter()
                .map(|(f, s, b)| (f, s as i64, b as i64))
                .collect(),
            pools: pools
                .iter()
                .map(|(s, p)| (*s as i64, p.display().to_string()))
                .collect(),
            ..Default::default()
        };
        if tx.send(batch).is_err() {
            self.batches = None;
        }
    }

    /// Waits until everything queued is written and the file closed; the
    /// first error of the writer, if any.
    pub fn finish(mut self) -> Result<(), DbError> {
        self.batches = None;
        match self.writer.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(DbError::Failed {
                path: String::new(),
                message: "the database writer panicked".into(),
            }),
            None => Ok(()),
        }
    }
}

impl Drop for ControlDb {
    fn drop(&mut self) {
        self.batches = None;
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

/// The writer thread: schema and static rows, then every batch until the
/// engines hang up.
fn writer(
    path: &Path,
    run: Vec<(String, String)>,
    sites: Vec<(String, i64)>,
    jobs: Vec<String>,
    batches: mpsc::Receiver<Batch>,
) -> Result<(), DbError> {
    let err = |e: rusqlite::Error| DbError::at(path, e);
    let mut conn = Connection::open(path).map_err(err)?;
    // WAL with synchronous=NORMAL: a killed process loses nothing it
    // committed, and a power loss at worst the last commits, never the
    // file's consistency (with OFF, an OS crash could corrupt it). Commits
    // wait for the disk only at checkpoints. Set first: switching to WAL is
    // itself a commit.
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(err)?;
    conn.pragma_update(None, "application_id", APPLICATION_ID as i32)
        .map_err(err)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(err)?;
    let tx = conn.transaction().map_err(err)?;
    tx.execute_batch(SCHEMA).map_err(err)?;
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
        for (i, (name, cpus)) in sites.iter().enumerate() {
            st.execute(params![i as i64, name, cpus]).map_err(err)?;
        }
        let mut st = tx
            .prepare("INSERT INTO jobs (id, name) VALUES (?1, ?2)")
            .map_err(err)?;
        for (i, name) in jobs.iter().enumerate() {
            st.execute(params![i as i64, name]).map_err(err)?;
        }
    }
    tx.commit().map_err(err)?;
    while let Ok(first) = batches.recv() {
        let tx = conn.transaction().map_err(err)?;
        {
            let mut attempts = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO attempts (job, attempt, site, prescript, submitted, \
                     started, ended, outcome, reason, transfers) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )
                .map_err(err)?;
            let mut transfers = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO transfers (id, job, file, source, destination, \
                     start, end, bytes, failure, retry) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )
                .map_err(err)?;
            let mut ends = tx
                .prepare_cached("UPDATE jobs SET failure = ?2, blocked_by = ?3 WHERE id = ?1")
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
            // Whatever queued while the last transaction ran goes into this one.
            let mut run_keys = tx
                .prepare_cached("INSERT OR REPLACE INTO run (key, value) VALUES (?1, ?2)")
                .map_err(err)?;
            for batch in std::iter::once(first).chain(batches.try_iter()) {
                for (k, v) in &batch.run {
                    run_keys.execute(params![k, v]).map_err(err)?;
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
                for e in &batch.ends {
                    ends.execute(params![e.job, e.failure, e.blocked_by])
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
                            a.ended,
                            a.outcome,
                            a.reason,
                            a.transfers
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

/// Per-site counts read back from a database.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteRow {
    /// Site name.
    pub name: String,
    /// Attempts that entered its queue.
    pub submitted: u64,
    /// Attempts that took a slot there.
    pub started: u64,
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

/// How often the run of `run` (a `run` table) was resumed already.
fn run_count(run: &std::collections::BTreeMap<String, String>) -> u64 {
    run.get("resumed").and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The end state of a run as its control database holds it: what
/// `gridbed audit` checks the pools on disk against.
#[derive(Debug, Clone, PartialEq)]
pub struct FinalState {
    /// The run's seed (file contents derive from it).
    pub seed: u64,
    /// Site names, by site id.
    pub sites: Vec<String>,
    /// Every registered replica: file, site id, real bytes.
    pub replicas: Vec<(String, usize, u64)>,
    /// Pool directories kept on disk, by site id.
    pub pools: Vec<(usize, std::path::PathBuf)>,
    /// Files whose bytes derive from another file's name (a memoized
    /// job's outputs): file, that name.
    pub contents: std::collections::HashMap<String, String>,
}

/// Reads the end state of the run in the database at `path`.
pub fn final_state(path: &Path) -> Result<FinalState, DbError> {
    let conn = open_existing(path)?;
    let err = |e: rusqlite::Error| DbError::at(path, e);
    let seed: String = conn
        .query_row("SELECT value FROM run WHERE key = 'seed'", [], |r| r.get(0))
        .map_err(err)?;
    let seed = seed
        .parse()
        .map_err(|_| DbError::at(path, format!("run.seed is not a number: {seed}")))?;
    let rows = |sql: &str| -> Result<Vec<(String, i64, i64)>, DbError> {
        let mut st = conn.prepare(sql).map_err(err)?;
        let it = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(err)?;
        it.collect::<Result<Vec<_>, _>>().map_err(err)
    };
    let sites = rows("SELECT name, id, 0 FROM sites ORDER BY id")?
        .into_iter()
        .map(|(n, _, _)| n)
        .collect();
    let replicas = rows("SELECT file, site, real_bytes FROM replicas ORDER BY site, file")
        .map_err(|_| DbError::at(path, "no replicas table: written by an older gridbed"))?
        .into_iter()
        .map(|(f, s, b)| (f, s as usize, b as u64))
        .collect();
    let pools = rows("SELECT dir, site, 0 FROM pools ORDER BY site")?
        .into_iter()
        .map(|(d, s, _)| (s as usize, std::path::PathBuf::from(d)))
        .collect();
    let contents = {
        let mut st = conn
            .prepare("SELECT substr(key, 9), value FROM run WHERE key LIKE 'content.%'")
            .map_err(err)?;
        let it = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(err)?;
        it.collect::<Result<_, _>>().map_err(err)?
    };
    Ok(FinalState {
        seed,
        sites,
        replicas,
        pools,
        contents,
    })
}

/// Per-site submitted / ended / killed counts of a database.
pub fn site_rows(path: &Path) -> Result<Vec<SiteRow>, DbError> {
    let conn = open_existing(path)?;
    let err = |e: rusqlite::Error| DbError::at(path, e);
    let mut st = conn
        .prepare(
            "SELECT s.name, \
             (SELECT count(*) FROM attempts a WHERE a.site = s.id AND a.submitted IS NOT NULL), \
             (SELECT count(*) FROM attempts a WHERE a.site = s.id AND a.started IS NOT NULL), \
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
                started: r.get::<_, i64>(2)? as u64,
                ended: r.get::<_, i64>(3)? as u64,
                killed: r.get::<_, i64>(4)? as u64,
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
