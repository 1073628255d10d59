//! DAG-Condor's database (seed 003 §8.1, table 1) and its memoization
//! (§5.3): a SQLite file kept across submissions (`gridbed run --memo
//! FILE`), unlike the control database of one run.
//!
//! After a run, it records each workflow's jobs with their versions
//! (`job_list`, `job_contents`, `job_queue`, `job_schedule`), the files
//! with their versions and types (`file_version`) and where they are cached
//! at the end (`file_location`), each program version with its inputs
//! (`program_version`), what a program version wrote (`program_output`)
//! and its CPU time (`program_stats`), and the workflow's status
//! (`workflow_status`). Before a run, a job of a workflow of the same name
//! whose version ran before, and whose outputs are all cached on a site of
//! the testbed, is memoized: it does not run, and its outputs start where
//! they are cached.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};

use crate::config::{Resume, Scenario};
use crate::core::SiteId;
use crate::core::result::RunResult;
use crate::core::versions::{Versions, hex, program};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS workflow_status (workflowname TEXT NOT NULL,
    workflownum INTEGER NOT NULL, status TEXT NOT NULL, PRIMARY KEY (workflowname, workflownum));
CREATE TABLE IF NOT EXISTS job_list (workflowname TEXT NOT NULL, jobnum INTEGER NOT NULL,
    submittime REAL NOT NULL, PRIMARY KEY (workflowname, jobnum));
CREATE TABLE IF NOT EXISTS job_contents (workflowname TEXT NOT NULL, jobnum INTEGER NOT NULL,
    executablename TEXT NOT NULL, version TEXT NOT NULL, PRIMARY KEY (workflowname, jobnum));
CREATE TABLE IF NOT EXISTS file_version (workflowname TEXT NOT NULL, filename TEXT NOT NULL,
    version TEXT NOT NULL, filetype TEXT NOT NULL, checksum TEXT NOT NULL, filesize INTEGER NOT NULL,
    PRIMARY KEY (workflowname, filename, version));
CREATE TABLE IF NOT EXISTS file_location (workflowname TEXT NOT NULL, filename TEXT NOT NULL,
    version TEXT NOT NULL, machine TEXT NOT NULL, path TEXT NOT NULL,
    PRIMARY KEY (workflowname, filename, version, machine));
CREATE TABLE IF NOT EXISTS program_version (workflowname TEXT NOT NULL,
    executablename TEXT NOT NULL, version TEXT NOT NULL, inputlist TEXT NOT NULL,
    PRIMARY KEY (workflowname, executablename, version));
CREATE TABLE IF NOT EXISTS job_queue (workflowname TEXT NOT NULL, jobnum INTEGER NOT NULL,
    parentlist TEXT NOT NULL, status TEXT NOT NULL, PRIMARY KEY (workflowname, jobnum));
CREATE TABLE IF NOT EXISTS job_schedule (workflowname TEXT NOT NULL, jobnum INTEGER NOT NULL,
    machine TEXT, afterworkflow TEXT, afterjob INTEGER, status TEXT NOT NULL,
    PRIMARY KEY (workflowname, jobnum));
CREATE TABLE IF NOT EXISTS program_output (workflowname TEXT NOT NULL,
    executablename TEXT NOT NULL, version TEXT NOT NULL, filename TEXT NOT NULL,
    PRIMARY KEY (workflowname, executablename, version, filename));
CREATE TABLE IF NOT EXISTS program_stats (workflowname TEXT NOT NULL,
    executablename TEXT NOT NULL, version TEXT NOT NULL, cputime REAL NOT NULL,
    PRIMARY KEY (workflowname, executablename, version));
";

/// An error of the memoization database, with its file.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct MemoError {
    /// The database file.
    pub path: PathBuf,
    /// What went wrong.
    pub message: String,
}

/// DAG-Condor's database, open. See the module docs.
pub struct History {
    conn: Connection,
    path: PathBuf,
}

/// The workflow name each job is recorded under: its submission's, or the
/// testbed's name when the testbed submits one workflow.
fn workflow_names(s: &Scenario) -> Vec<String> {
    if s.submissions.list.len() < 2 {
        vec![s.name.clone()]
    } else {
        s.submissions.list.iter().map(|w| w.name.clone()).collect()
    }
}

fn of_job(s: &Scenario, job: usize) -> usize {
    s.submissions.of_job.get(job).copied().unwrap_or(0)
}

impl History {
    /// Opens (or creates) the database at `path`.
    pub fn open(path: &Path) -> Result<History, MemoError> {
        let err = |e: rusqlite::Error| MemoError {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let conn = Connection::open(path).map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        Ok(History {
            conn,
            path: path.to_path_buf(),
        })
    }

    fn err(&self, e: rusqlite::Error) -> MemoError {
        MemoError {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    /// The jobs of `scenario` that need not run (their version ran before
    /// and every output is cached on one of its sites; `excluded` jobs
    /// always run) and where their outputs start.
    pub fn memoized(
        &self,
        scenario: &Scenario,
        versions: &Versions,
        excluded: &[bool],
    ) -> Result<Resume, MemoError> {
        let wf = &scenario.workflow;
        let names = workflow_names(scenario);
        let site: HashMap<&str, SiteId> = scenario
            .sites
            .iter()
            .enumerate()
            .map(|(i, s)| (s.info.name.as_str(), i))
            .collect();
        let mut ran = self
            .conn
            .prepare(
                "SELECT 1 FROM program_stats WHERE workflowname = ?1 AND executablename = ?2 AND version = ?3",
            )
            .map_err(|e| self.err(e))?;
        let mut at = self
            .conn
            .prepare(
                "SELECT machine FROM file_location WHERE workflowname = ?1 AND filename = ?2 AND version = ?3 ORDER BY machine",
            )
            .map_err(|e| self.err(e))?;
        let mut resume = Resume {
            done: vec![false; wf.jobs.len()],
            outputs: Vec::new(),
        };
        for (j, job) in wf.jobs.iter().enumerate() {
            if excluded.get(j).copied().unwrap_or(false) {
                continue;
            }
            let name = &names[of_job(scenario, j)];
            let version = hex(&versions.jobs[j]);
            let before = ran
                .query_row(params![name, program(wf, j), version], |_| Ok(()))
                .optional()
                .map_err(|e| self.err(e))?;
            if before.is_none() {
                continue;
            }
            let mut outputs = Vec::new();
            for &o in &job.outputs {
                let machines: Vec<String> = at
                    .query_map(
                        params![name, wf.files[o].name, hex(&versions.files[o])],
                        |r| r.get(0),
                    )
                    .and_then(|rows| rows.collect())
                    .map_err(|e| self.err(e))?;
                match machines.iter().find_map(|m| site.get(m.as_str())) {
                    Some(&s) => outputs.push((o, s)),
                    None => break,
                }
            }
            if outputs.len() == job.outputs.len() {
                resume.done[j] = true;
                resume.outputs.extend(outputs);
            }
        }
        Ok(resume)
    }

    /// Records a finished run of `scenario` (table 1), in one transaction.
    pub fn record(
        &mut self,
        scenario: &Scenario,
        versions: &Versions,
        run: &RunResult,
    ) -> Result<(), MemoError> {
        let path = self.path.clone();
        let err = |e: rusqlite::Error| MemoError {
            path: path.clone(),
            message: e.to_string(),
        };
        let wf = &scenario.workflow;
        let names = workflow_names(scenario);
        let site_name = |s: SiteId| scenario.sites[s].info.name.as_str();
        let tx = self.conn.transaction().map_err(err)?;
        // Job numbers are unique across a workflow's submissions.
        let mut base = Vec::new();
        for (w, name) in names.iter().enumerate() {
            let next: i64 = tx
                .query_row(
                    "SELECT COALESCE(MAX(jobnum) + 1, 0) FROM job_list WHERE workflowname = ?1",
                    [name],
                    |r| r.get(0),
                )
                .map_err(err)?;
            base.push(next);
            let num: i64 = tx
                .query_row(
                    "SELECT COALESCE(MAX(workflownum) + 1, 0) FROM workflow_status WHERE workflowname = ?1",
                    [name],
                    |r| r.get(0),
                )
                .map_err(err)?;
            let ok = (0..wf.jobs.len())
                .filter(|&j| of_job(scenario, j) == w)
                .all(|j| run.done[j]);
            tx.execute(
                "INSERT INTO workflow_status VALUES (?1, ?2, ?3)",
                params![name, num, if ok { "done" } else { "failed" }],
            )
            .map_err(err)?;
        }
        let jobnum = |j: usize| base[of_job(scenario, j)] + j as i64;
        // Per machine, the last job that started there, for `afterjob`.
        let mut starts: Vec<(f64, usize, SiteId)> = Vec::new();
        for (j, r) in run.records.jobs.iter().enumerate() {
            if let Some(a) = r.attempts.last()
                && let Some(t) = a.started
            {
                starts.push((t, j, a.site));
            }
        }
        starts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut after: HashMap<usize, usize> = HashMap::new();
        let mut last_on: HashMap<SiteId, usize> = HashMap::new();
        for &(_, j, s) in &starts {
            if let Some(prev) = last_on.insert(s, j) {
                after.insert(j, prev);
            }
        }
        for (j, job) in wf.jobs.iter().enumerate() {
            let name = &names[of_job(scenario, j)];
            let arrival = scenario
                .submissions
                .list
                .get(of_job(scenario, j))
                .map_or(0.0, |w| w.arrival);
            let exe = program(wf, j);
            let version = hex(&versions.jobs[j]);
            let status = match (run.done[j], run.records.jobs[j].failure.is_some()) {
                (true, _) => "done",
                (false, true) => "failed",
                (false, false) => "waiting",
            };
            tx.execute(
                "INSERT INTO job_list VALUES (?1, ?2, ?3)",
                params![name, jobnum(j), arrival],
            )
            .map_err(err)?;
            tx.execute(
                "INSERT INTO job_contents VALUES (?1, ?2, ?3, ?4)",
                params![name, jobnum(j), exe, version],
            )
            .map_err(err)?;
            let parents: Vec<String> = job.parents.iter().map(|&p| jobnum(p).to_string()).collect();
            tx.execute(
                "INSERT INTO job_queue VALUES (?1, ?2, ?3, ?4)",
                params![name, jobnum(j), parents.join(","), status],
            )
            .map_err(err)?;
            let machine = run.records.jobs[j]
                .attempts
                .last()
                .map(|a| site_name(a.site));
            let afterjob = after.get(&j).map(|&p| jobnum(p));
            let afterworkflow = after.get(&j).map(|&p| names[of_job(scenario, p)].clone());
            tx.execute(
                "INSERT INTO job_schedule VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![name, jobnum(j), machine, afterworkflow, afterjob, status],
            )
            .map_err(err)?;
            let inputs: Vec<String> = job
                .inputs
                .iter()
                .map(|&f| format!("{}@{}", wf.files[f].name, hex(&versions.files[f])))
                .collect();
            tx.execute(
                "INSERT OR IGNORE INTO program_version VALUES (?1, ?2, ?3, ?4)",
                params![name, exe, version, inputs.join(",")],
            )
            .map_err(err)?;
            if run.done[j] {
                for &o in &job.outputs {
                    tx.execute(
                        "INSERT OR IGNORE INTO program_output VALUES (?1, ?2, ?3, ?4)",
                        params![name, exe, version, wf.files[o].name],
                    )
                    .map_err(err)?;
                }
                // A memoized job has no attempt: its CPU time stays as known.
                if let Some(a) = run.records.jobs[j].attempts.last()
                    && let (Some(s), Some(f)) = (a.started, a.finished)
                {
                    tx.execute(
                        "INSERT OR REPLACE INTO program_stats VALUES (?1, ?2, ?3, ?4)",
                        params![name, exe, version, f - s],
                    )
                    .map_err(err)?;
                }
            }
        }
        // Files, with their type, and where they are cached at the end.
        let mut readers = vec![0usize; wf.files.len()];
        let mut user = vec![None; wf.files.len()];
        for (j, job) in wf.jobs.iter().enumerate() {
            for &f in job.inputs.iter().chain(&job.outputs) {
                user[f].get_or_insert(of_job(scenario, j));
            }
            for &f in &job.inputs {
                readers[f] += 1;
            }
        }
        for (f, file) in wf.files.iter().enumerate() {
            let Some(w) = user[f] else { continue };
            let name = &names[w];
            let kind = match (wf.producer[f].is_some(), readers[f] > 0) {
                (false, _) if file.name.starts_with("bin/") => "executable",
                (false, _) => "input",
                (true, true) => "intermediate",
                (true, false) => "output",
            };
            let version = hex(&versions.files[f]);
            tx.execute(
                "INSERT OR IGNORE INTO file_version VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![name, file.name, version, kind, version, file.size as i64],
            )
            .map_err(err)?;
            for &s in run.rls.holders(f) {
                tx.execute(
                    "INSERT OR REPLACE INTO file_location VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![
                        name,
                        file.name,
                        version,
                        site_name(s),
                        format!("{}:{}", site_name(s), file.name)
                    ],
                )
                .map_err(err)?;
            }
        }
        tx.commit().map_err(err)
    }
}
