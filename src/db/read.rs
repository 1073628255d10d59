//! Reading a control database back: its end state for `gridbed audit`,
//! per-site counts and one job's history for `gridbed inspect`.

use std::path::Path;

use super::{DbError, open_existing};

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
    let replicas = rows(
        "SELECT f.name, r.site, r.real_bytes FROM replicas r JOIN files f ON f.id = r.file \
         ORDER BY r.site, f.name",
    )
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
