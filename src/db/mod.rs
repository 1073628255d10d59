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

use rusqlite::{Connection, OpenFlags};

use crate::core::manager::Changes;
use crate::core::records::{Outcome, Records};
use crate::core::{File, FileId, RunDag, SiteId, SiteInfo, Workflow};

mod detail;
mod read;
mod writer;

pub use detail::{AttemptEntry, JobEntry, TransferEntry, run_detail};
pub use read::{final_state, job_history, site_rows};
use writer::{AttemptWrite, Batch, FaultWrite, JobWrite, TransferWrite};

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
    /// Another process writes the database now: one writer at a time.
    #[error(
        "{path} is being written by {holder}; one run writes a control database at a time (wait for it to end, or choose another --db)"
    )]
    Busy {
        /// The file.
        path: String,
        /// Who holds it: `gridbed (pid N)` as its `run` table says, or
        /// `another process`.
        holder: String,
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

/// Takes the writer's lock of the database at `path` (an exclusive `flock`
/// of the file, which SQLite's own locks leave alone), creating the file
/// when missing; held while the returned handle is open. Taken before
/// anything is written, so that a second run, or a resume, refused by it
/// changes nothing.
fn lock(path: &Path) -> Result<std::fs::File, DbError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| DbError::at(path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => {
            let pid = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
                .and_then(|c| {
                    c.query_row("SELECT value FROM run WHERE key = 'pid'", [], |r| {
                        r.get::<_, String>(0)
                    })
                })
                .ok();
            Err(DbError::Busy {
                path: path.display().to_string(),
                holder: match pid {
                    Some(pid) => format!("gridbed (pid {pid})"),
                    None => "another process".into(),
                },
            })
        }
        Err(std::fs::TryLockError::Error(e)) => Err(DbError::at(path, e)),
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
    /// Per job, its attempts at the last write: the ones before the last of
    /// them had ended then and never change again, so they are not rewritten.
    attempts_written: Vec<u32>,
    /// Per file, whether its `files` row (its name) was queued.
    files_written: Vec<bool>,
    /// Jobs with a `jobs` row (a sub-DAG read as the run goes adds some).
    jobs_named: usize,
    /// A resumed run's: the interrupted run's jobs the resumed one did not
    /// start with, by name: their row and attempts. A sub-DAG read as the
    /// run goes names them again, and takes their rows.
    unclaimed: Option<std::collections::HashMap<String, (i64, i64)>>,
    /// The rows of the run's sites, jobs and files.
    rows: Rows,
    /// The writer's lock ([`lock`]), released once the writer has ended.
    _lock: std::fs::File,
}

/// Where a run's own ids (its scenario's) fall among a database's rows: a
/// resumed run names sites, jobs and files as the database did, by name,
/// so that an edit of the testbed between the two runs (a site added or
/// removed, jobs reordered) cannot attribute one's records to another;
/// what the database never had gets rows after its own.
#[derive(Debug, Clone, Default)]
struct Ids {
    /// Row of each id the map covers (empty: each id is its own row).
    to: Vec<i64>,
    /// The row of id `to.len()`; the ids after it follow on.
    next: i64,
    /// The first row given to a name the database did not have.
    fresh: i64,
}

impl Ids {
    fn row(&self, id: usize) -> i64 {
        match self.to.get(id) {
            Some(&r) => r,
            None => self.next + (id - self.to.len()) as i64,
        }
    }

    /// The rows of `names` (a run's, by id) among `recorded` (row, name).
    fn by_name<'a>(names: impl Iterator<Item = &'a str>, recorded: &[(i64, String)]) -> Ids {
        let known: std::collections::HashMap<&str, i64> =
            recorded.iter().map(|(r, n)| (n.as_str(), *r)).collect();
        let fresh = recorded.iter().map(|(r, _)| r + 1).max().unwrap_or(0);
        let mut next = fresh;
        let to = names
            .map(|n| {
                known.get(n).copied().unwrap_or_else(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect();
        Ids { to, next, fresh }
    }

    /// Whether `id`'s row is one the database had.
    fn had(&self, id: usize) -> bool {
        self.row(id) < self.fresh
    }

    /// Id `to.len()` (the first the map does not cover) takes `row`, one
    /// the database had; or, with none, the next fresh row, returned.
    fn claim(&mut self, row: Option<i64>) -> i64 {
        let row = row.unwrap_or_else(|| {
            self.next += 1;
            self.next - 1
        });
        self.to.push(row);
        row
    }
}

/// The rows of a run's sites, jobs and files.
#[derive(Debug, Clone, Default)]
struct Rows {
    site: Ids,
    job: Ids,
    file: Ids,
}

/// What the control database of an interrupted run says of it, read
/// without writing a byte; the database is held against other writers
/// until [`ControlDb::resume`] goes on writing it, or this is dropped.
#[derive(Debug)]
pub struct Interrupted {
    /// Its `run` table (testbed path, overrides, seed, engine…).
    pub run: std::collections::BTreeMap<String, String>,
    /// Its sites: row, name, CPUs.
    pub sites: Vec<(i64, String, i64)>,
    /// Its jobs: row, name.
    pub jobs: Vec<(i64, String)>,
    /// Per job of `jobs`: the row of the site its last attempt ended well
    /// at (its node ended, postscript included), or `None`.
    pub ended_at: Vec<Option<i64>>,
    /// The files it named: row, name.
    files: Vec<(i64, String)>,
    /// Per job row: the attempts it has.
    attempts: std::collections::HashMap<i64, i64>,
    /// The transfers it has.
    transfers: i64,
    lock: std::fs::File,
}

impl Interrupted {
    /// The name of the site of row `row`.
    pub fn site_name(&self, row: i64) -> Option<&str> {
        self.sites
            .iter()
            .find(|(r, ..)| *r == row)
            .map(|(_, n, _)| n.as_str())
    }
}

fn outcome_text(o: &Outcome) -> (&'static str, Option<String>) {
    match o {
        Outcome::Pending => ("pending", None),
        Outcome::Ended => ("ended", None),
        Outcome::StagingFailed(r) => ("staging_failed", Some(r.clone())),
        Outcome::Failed(f) => ("failed", serde_json::to_string(f).ok()),
        Outcome::Killed => ("killed", Some("idle longer than max_idle".into())),
        Outcome::Removed(r) => ("removed", Some(r.clone())),
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
        // millisecond) happens on the writer thread, beside the run. The
        // file is emptied in place, not replaced, so that the lock holds.
        let lock = lock(path)?;
        for suffix in ["-wal", "-shm"] {
            let p = format!("{}{suffix}", path.display());
            if Path::new(&p).exists() {
                std::fs::remove_file(&p).map_err(|e| err(&e))?;
            }
        }
        lock.set_len(0).map_err(|e| err(&e))?;
        let run: Vec<(String, String)> = run
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let sites: Vec<(i64, String, i64)> = sites
            .iter()
            .enumerate()
            .map(|(i, s)| (i as i64, s.name.clone(), s.cpus as i64))
            .collect();
        let jobs: Vec<(i64, String)> = (wf.jobs.iter().enumerate())
            .map(|(i, j)| (i as i64, j.name.clone()))
            .collect();
        let (tx, rx) = mpsc::channel();
        let owned = path.to_path_buf();
        let writer = std::thread::Builder::new()
            .name("gridbed-db".into())
            .spawn(move || writer::writer(&owned, run, sites, jobs, rx))
            .map_err(|e| err(&e))?;
        Ok(ControlDb {
            batches: Some(tx),
            writer: Some(writer),
            faults_written: 0,
            attempt_base: Vec::new(),
            transfer_base: 0,
            attempts_written: Vec::new(),
            files_written: Vec::new(),
            jobs_named: wf.jobs.len(),
            unclaimed: None,
            rows: Rows::default(),
            _lock: lock,
        })
    }

    /// Reads the control database of an interrupted run (`gridbed
    /// resume`), writing nothing: a resume refused after this leaves the
    /// file as it was. The writer's lock is taken and held by the answer.
    pub fn interrupted(path: &Path) -> Result<Interrupted, DbError> {
        let conn = open_existing(path)?;
        let lock = lock(path)?;
        let err = |e: rusqlite::Error| DbError::at(path, e);
        let rows = |sql: &str| -> Result<Vec<(i64, String, i64)>, DbError> {
            let mut st = conn.prepare(sql).map_err(err)?;
            let it = st
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .map_err(err)?;
            it.collect::<Result<Vec<_>, _>>().map_err(err)
        };
        let two = |v: Vec<(i64, String, i64)>| v.into_iter().map(|(r, n, _)| (r, n)).collect();
        let values = {
            let mut st = conn.prepare("SELECT key, value FROM run").map_err(err)?;
            let it = st
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(err)?;
            it.collect::<Result<std::collections::BTreeMap<String, String>, _>>()
                .map_err(err)?
        };
        let sites = rows("SELECT id, name, cpus FROM sites ORDER BY id")?;
        let jobs: Vec<(i64, String)> = two(rows("SELECT id, name, 0 FROM jobs ORDER BY id")?);
        let files = two(rows("SELECT id, name, 0 FROM files ORDER BY id")?);
        let index: std::collections::HashMap<i64, usize> =
            jobs.iter().enumerate().map(|(i, (r, _))| (*r, i)).collect();
        let mut ended_at = vec![None; jobs.len()];
        let mut attempts = std::collections::HashMap::new();
        {
            let mut st = conn
                .prepare(
                    "SELECT a.job, a.attempt, a.site, a.outcome FROM attempts a \
                     WHERE a.attempt = (SELECT max(b.attempt) FROM attempts b WHERE b.job = a.job)",
                )
                .map_err(err)?;
            let it = st
                .query_map([], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, String>(3)?,
                    ))
                })
                .map_err(err)?;
            for row in it {
                let (job, attempt, site, outcome) = row.map_err(err)?;
                attempts.insert(job, attempt + 1);
                if outcome == "ended"
                    && let Some(&j) = index.get(&job)
                {
                    ended_at[j] = Some(site);
                }
            }
        }
        let transfers: i64 = conn
            .query_row("SELECT coalesce(max(id) + 1, 0) FROM transfers", [], |r| {
                r.get(0)
            })
            .map_err(err)?;
        Ok(Interrupted {
            run: values,
            sites,
            jobs,
            ended_at,
            files,
            attempts,
            transfers,
            lock,
        })
    }

    /// Goes on writing the database of `was` for its resumed run, on
    /// `sites` and `wf` as they are now: sites, jobs and files are the
    /// database's rows of the same name (new ones are added), attempts and
    /// transfers are numbered after the ones there, and the attempts the
    /// interrupted run left going end as interrupted.
    pub fn resume(
        path: &Path,
        was: Interrupted,
        sites: &[SiteInfo],
        wf: &Workflow,
    ) -> Result<ControlDb, DbError> {
        let err = |e: rusqlite::Error| DbError::at(path, e);
        let recorded_sites: Vec<(i64, String)> =
            was.sites.iter().map(|(r, n, _)| (*r, n.clone())).collect();
        let rows = Rows {
            site: Ids::by_name(sites.iter().map(|s| s.name.as_str()), &recorded_sites),
            job: Ids::by_name(wf.jobs.iter().map(|j| j.name.as_str()), &was.jobs),
            file: Ids::by_name(wf.files.iter().map(|f| f.name.as_str()), &was.files),
        };
        let new_sites = (sites.iter().enumerate())
            .filter(|&(i, _)| !rows.site.had(i))
            .map(|(i, s)| (rows.site.row(i), s.name.clone(), s.cpus as i64))
            .collect();
        let new_jobs = (wf.jobs.iter().enumerate())
            .filter(|&(j, _)| !rows.job.had(j))
            .map(|(j, job)| (rows.job.row(j), job.name.clone()))
            .collect();
        let attempt_base = (0..wf.jobs.len())
            .map(|j| was.attempts.get(&rows.job.row(j)).copied().unwrap_or(0))
            .collect();
        let claimed: std::collections::HashSet<i64> =
            (0..wf.jobs.len()).map(|j| rows.job.row(j)).collect();
        let unclaimed = (was.jobs.iter())
            .filter(|(r, _)| !claimed.contains(r))
            .map(|(r, n)| (n.clone(), (*r, was.attempts.get(r).copied().unwrap_or(0))))
            .collect();
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
        let resumed = run_count(&was.run) + 1;
        let keys = vec![("resumed".to_string(), resumed.to_string())];
        let (tx, rx) = mpsc::channel();
        let owned = path.to_path_buf();
        let writer = std::thread::Builder::new()
            .name("gridbed-db".into())
            .spawn(move || writer::writer(&owned, keys, new_sites, new_jobs, rx))
            .map_err(|e| DbError::at(path, e))?;
        Ok(ControlDb {
            batches: Some(tx),
            writer: Some(writer),
            faults_written: 0,
            attempt_base,
            transfer_base: was.transfers,
            attempts_written: Vec::new(),
            files_written: Vec::new(),
            jobs_named: wf.jobs.len(),
            unclaimed: Some(unclaimed),
            rows,
            _lock: was.lock,
        })
    }

    /// Queues for writing what `changes` lists, as `records` has it now. A
    /// failed writer is not reported here but by [`ControlDb::finish`].
    pub fn write(&mut self, changes: &Changes, records: &Records, wf: &RunDag) {
        if self.batches.is_none() {
            return;
        }
        let mut batch = Batch::default();
        for f in &records.faults[self.faults_written.min(records.faults.len())..] {
            let detail = serde_json::to_string(&f.fault).unwrap_or_default();
            batch.faults.push(FaultWrite(
                f.time,
                self.rows.site.row(f.site),
                f.fault.kind(),
                detail,
            ));
        }
        self.faults_written = records.faults.len();
        if self.attempts_written.len() < records.jobs.len() {
            self.attempts_written.resize(records.jobs.len(), 0);
        }
        for (j, job) in wf.jobs().enumerate().skip(self.jobs_named) {
            let Some(was) = self.unclaimed.as_mut() else {
                batch.new_jobs.push((self.rows.job.row(j), job.name.clone()));
                continue;
            };
            // A resumed run's: the interrupted run's row of that name, if
            // it had one, with its attempts numbered on.
            match was.remove(&job.name) {
                Some((row, attempts)) => {
                    self.rows.job.claim(Some(row));
                    self.attempt_base.resize(j, 0);
                    self.attempt_base.push(attempts);
                }
                None => {
                    let row = self.rows.job.claim(None);
                    batch.new_jobs.push((row, job.name.clone()));
                }
            }
        }
        self.jobs_named = self.jobs_named.max(wf.job_count());
        for &j in &changes.jobs {
            let r = &records.jobs[j];
            batch.jobs.push(JobWrite {
                job: self.rows.job.row(j),
                ready: r.ready,
                failure: r.failure.clone(),
                blocked_by: r.blocked_by.map(|b| self.rows.job.row(b)),
            });
            // A new attempt begins only once the one before it ended, so
            // only the last attempt written before may have changed since.
            let from = self.attempts_written[j].saturating_sub(1) as usize;
            for (k, a) in r.attempts.iter().enumerate().skip(from) {
                let (outcome, reason) = outcome_text(&a.outcome);
                batch.attempts.push(AttemptWrite {
                    job: self.rows.job.row(j),
                    attempt: k as i64 + self.attempt_base.get(j).copied().unwrap_or(0),
                    site: self.rows.site.row(a.site),
                    prescript: a.prescript,
                    submitted: a.submitted,
                    started: a.started,
                    finished: a.finished,
                    ended: a.ended,
                    outcome,
                    reason,
                    transfers: a.transfers,
                    exit: a.exit,
                    scripts: (!a.scripts.is_empty())
                        .then(|| serde_json::to_string(&a.scripts).unwrap_or_default()),
                    members: (!a.members.is_empty())
                        .then(|| serde_json::to_string(&a.members).unwrap_or_default()),
                });
            }
            self.attempts_written[j] = r.attempts.len() as u32;
        }
        // A transfer that started and ended within one batch is written once.
        let mut ids = changes.transfers.clone();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            let t = &records.transfers[id as usize];
            self.name_file(&mut batch, wf.files(), t.file);
            batch.transfers.push(TransferWrite {
                id: t.id as i64 + self.transfer_base,
                job: self.rows.job.row(t.job),
                file: self.rows.file.row(t.file),
                from: self.rows.site.row(t.from),
                to: self.rows.site.row(t.to),
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
        self.send(batch);
    }

    /// Queues `file`'s `files` row unless it was queued before.
    fn name_file(&mut self, batch: &mut Batch, files: &[File], file: FileId) {
        if self.files_written.len() < files.len() {
            self.files_written.resize(files.len(), false);
        }
        if !std::mem::replace(&mut self.files_written[file], true) {
            let f = &files[file];
            batch
                .files
                .push((self.rows.file.row(file), f.name.clone(), f.size as i64));
        }
    }

    /// Hands `batch` to the writer; a stopped writer is reported by
    /// [`ControlDb::finish`].
    fn send(&mut self, batch: Batch) {
        if let Some(tx) = &self.batches
            && tx.send(batch).is_err()
        {
            self.batches = None;
        }
    }

    /// Notes where a live run's temporary pools are while it runs (`run`
    /// keys `pool_dir.<site>`): a resumed run removes what a killed one left.
    pub fn note_pool_dirs(&mut self, dirs: &[(SiteId, &Path)]) {
        let run = dirs
            .iter()
            .map(|(s, d)| (format!("pool_dir.{s}"), d.display().to_string()))
            .collect();
        self.send(Batch {
            run,
            ..Default::default()
        });
    }

    /// Notes the pools a live run keeps (`--keep-pools`) as it starts, so
    /// that `gridbed audit` finds them even if the run is killed before
    /// its end state ([`ControlDb::write_final`]) replaces them.
    pub fn note_kept_pools(&mut self, dirs: &[(SiteId, &Path)]) {
        let pools = dirs
            .iter()
            .map(|(s, d)| (self.rows.site.row(*s), d.display().to_string()))
            .collect();
        self.send(Batch {
            pools,
            ..Default::default()
        });
    }

    /// Notes that process `pid` writes the database now (`run` key `pid`):
    /// a resume refuses to start while it runs.
    pub fn note_writer(&mut self, pid: u32) {
        self.send(Batch {
            run: vec![("pid".into(), pid.to_string())],
            ..Default::default()
        });
    }

    /// Notes the files whose bytes derive from another file's name (`run`
    /// keys `content.<file>`): a memoized job's outputs hold its twin's
    /// bytes, and `gridbed audit` checks them against those.
    pub fn note_contents(&mut self, contents: &[(String, String)]) {
        if contents.is_empty() {
            return;
        }
        let run = contents
            .iter()
            .map(|(f, c)| (format!("content.{f}"), c.clone()))
            .collect();
        self.send(Batch {
            run,
            ..Default::default()
        });
    }

    /// Queues the run's end state: every registered replica (file, site,
    /// real bytes), and each site's pool directory when the pools are kept
    /// on disk (`gridbed audit` compares them).
    pub fn write_final(
        &mut self,
        replicas: &[(FileId, SiteId, u64)],
        wf: &Workflow,
        pools: &[(SiteId, &Path)],
    ) {
        if self.batches.is_none() {
            return;
        }
        let mut batch = Batch::default();
        for &(f, s, b) in replicas {
            self.name_file(&mut batch, &wf.files, f);
            let (f, s) = (self.rows.file.row(f), self.rows.site.row(s));
            batch.replicas.push((f, s, b as i64));
        }
        batch.pools = pools
            .iter()
            .map(|(s, p)| (self.rows.site.row(*s), p.display().to_string()))
            .collect();
        self.send(batch);
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
    let version: i32 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|e| err(format!("cannot read its schema version: {e}")))?;
    if version != writer::SCHEMA_VERSION {
        return Err(err(format!(
            "control database schema {version}, this gridbed reads schema {} (written by another gridbed version: run it again to write it anew)",
            writer::SCHEMA_VERSION
        )));
    }
    Ok(conn)
}

/// How often the run of `run` (a `run` table) was resumed already.
fn run_count(run: &std::collections::BTreeMap<String, String>) -> u64 {
    run.get("resumed").and_then(|v| v.parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::Ids;

    #[test]
    fn ids_follow_names_and_new_names_get_rows_after_the_databases() {
        let recorded = vec![(0, "a".to_string()), (1, "b".into()), (2, "c".into())];
        // c moved ahead, b removed, d new; a later id (a graft) after d.
        let ids = Ids::by_name(["c", "a", "d"].into_iter(), &recorded);
        assert_eq!((0..4).map(|i| ids.row(i)).collect::<Vec<_>>(), [2, 0, 3, 4]);
        assert_eq!((0..4).map(|i| ids.had(i)).collect::<Vec<_>>(), [true, true, false, false]);
        // A run's own ids, when it created the database.
        let own = Ids::default();
        assert_eq!((own.row(0), own.row(7)), (0, 7));
    }

    #[test]
    fn a_later_id_takes_a_row_the_database_had_or_the_next_fresh_one() {
        let recorded = vec![(0, "a".to_string()), (1, "b".into()), (2, "c".into())];
        let mut ids = Ids::by_name(["c", "d"].into_iter(), &recorded);
        assert_eq!(ids.row(2), 4);
        // Grafted: b again (row 1), then e, then f.
        assert_eq!(ids.claim(Some(1)), 1);
        assert_eq!(ids.claim(None), 4);
        assert_eq!((2..5).map(|i| ids.row(i)).collect::<Vec<_>>(), [1, 4, 5]);
        assert_eq!(ids.claim(None), 5);
        assert_eq!(ids.row(5), 6);
    }
}
