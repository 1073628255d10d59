//! The run record: what a run did, in nominal units — totals, per-site
//! figures, the timeline, faults. Written by `--json FILE`; the schema is in
//! `docs/run-record.md`. Both engines write the same record from the core's
//! control records, so records compare like with like. The per-attempt and
//! per-transfer detail is never written into it (a full coadd has millions of
//! transfers): it lives in the control database, which `gridbed report`
//! reads beside the record; in memory a record may carry it
//! ([`Detail::Full`]).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::config::Scenario;
use crate::core::TransferFailure;
use crate::core::records::{Outcome, Records};
use crate::core::result::RunResult;
use crate::core::timeline::Timeline;
pub use crate::db::{AttemptEntry, JobEntry, TransferEntry};
use crate::units::human_bytes;

/// Whether a record in memory carries every job attempt and transfer, or
/// only the summary and per-site totals (enough for the table and the file;
/// millions of transfers are not worth building for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Summary and sites only; `jobs` and `transfers` are empty.
    Summary,
    /// Everything.
    Full,
}

/// Version of the run-record schema.
pub const SCHEMA_VERSION: u32 = 2;

/// The run record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// Schema version.
    pub schema: u32,
    /// gridbed version.
    pub gridbed: String,
    /// Run id (also on the metrics).
    pub run_id: String,
    /// `live` or `sim`.
    pub engine: String,
    /// Testbed name and file.
    pub testbed: String,
    /// Testbed path.
    pub testbed_path: String,
    /// Site selector.
    pub strategy: String,
    /// Replica policy.
    pub replica_policy: String,
    /// Eviction policy.
    pub eviction: String,
    /// Seed.
    pub seed: u64,
    /// Nominal seconds per real second.
    pub time_scale: f64,
    /// Nominal bytes per real byte.
    pub byte_scale: f64,
    /// Totals.
    pub summary: Summary,
    /// Per site, in scenario order.
    pub sites: Vec<SiteSummary>,
    /// The control database that holds the run's detail: a path relative to
    /// the record's folder, or absolute when it lies elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db: Option<String>,
    /// Per job, in workflow order ([`Detail::Full`] or read back from the
    /// control database; never in the file).
    #[serde(skip)]
    pub jobs: Vec<JobEntry>,
    /// Every transfer attempt, in start order (as `jobs`).
    #[serde(skip)]
    pub transfers: Vec<TransferEntry>,
    /// Per-site queue, running jobs and storage over time (site order as
    /// in `sites`).
    #[serde(default)]
    pub timeline: Timeline,
    /// Every fault that happened (`[[fault]]`, a site's corruption), in the
    /// order the manager learnt of it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultEntry>,
    /// Per workflow submitted (`[[submission]]`), when there are several:
    /// its response time from its arrival to its last job's end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workflows: Vec<WorkflowEntry>,
}

/// One submitted workflow of a run (seed 003's response time).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorkflowEntry {
    /// Its name.
    pub name: String,
    /// Its submit machine.
    pub origin: String,
    /// Its jobs.
    pub jobs: usize,
    /// When it was submitted (nominal s).
    pub arrival_s: f64,
    /// When its last job ended (nominal s); its arrival if none did.
    pub end_s: f64,
    /// `end_s − arrival_s`.
    pub response_s: f64,
}

/// One fault of a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FaultEntry {
    /// When (nominal s).
    pub t: f64,
    /// Site name.
    pub site: String,
    /// What happened: `kind` and its fields.
    #[serde(flatten)]
    pub fault: crate::core::faults::Fault,
}

/// Totals of a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    /// Whether every job ended.
    pub succeeded: bool,
    /// DAGMan's exit value for the run: 0 when it succeeded, an
    /// `ABORT-DAG-ON`'s `RETURN`, 1 for any other failure (gridbed itself
    /// exits 1 for every failed run).
    #[serde(default)]
    pub dag_exit: i32,
    /// Nominal makespan (s).
    pub makespan_s: f64,
    /// Wall time of the workflow (s); 0 for sim.
    pub wall_s: f64,
    /// Wall time of setup (s).
    pub setup_wall_s: f64,
    /// Jobs in the workflow.
    pub jobs: usize,
    /// Jobs ended.
    pub jobs_done: usize,
    /// Jobs failed for good.
    pub jobs_failed: usize,
    /// Jobs that could not run (an ancestor failed).
    pub jobs_blocked: usize,
    /// Job attempts beyond the first (re-plans and retries).
    pub replans: usize,
    /// Jobs MonitQueue killed in a site queue (each planned again).
    pub kills: u64,
    /// Kills that arrived after the job had started (it ran; the kill was void).
    #[serde(default)]
    pub kills_void: u64,
    /// Successful transfers.
    pub transfers: usize,
    /// Failed transfer attempts (each was retried or re-sourced).
    pub transfer_failures: usize,
    /// Transfers that retried a failed one.
    pub transfer_retries: usize,
    /// Nominal bytes moved.
    pub bytes: u64,
    /// Real bytes moved over loopback.
    pub real_bytes: u64,
    /// Inputs already on site when planned.
    pub cache_hits: u64,
    /// Files evicted.
    pub evictions: u64,
    /// Transfers a source refused at its `max_connections` (HTTP 503; each
    /// is a failed try, counted in `transfer_failures` too).
    pub transfers_refused_busy: usize,
    /// Mean nominal wait in site queues (submitted → started).
    pub mean_queue_wait_s: f64,
    /// Files on disk that failed verification at the end (should be 0).
    pub corrupt_at_end: usize,
    /// Every job that failed for good, and why (the jobs they block are
    /// in `jobs_blocked`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<FailedJob>,
}

/// Per-site totals.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SiteSummary {
    /// Site name.
    pub name: String,
    /// CPU slots.
    pub cpus: usize,
    /// Jobs ended here.
    pub jobs_ended: u64,
    /// Job attempts that failed here.
    pub jobs_failed: u64,
    /// Jobs MonitQueue killed in this site's queue.
    pub jobs_killed: u64,
    /// Transfers into the site.
    pub transfers_in: u64,
    /// Nominal bytes into the site.
    pub bytes_in: u64,
    /// Transfers served by the site.
    pub transfers_out: u64,
    /// Inputs found here when planned.
    pub cache_hits: u64,
    /// Files evicted here.
    pub evictions: u64,
    /// Nominal bytes held at the end.
    pub used_at_end: u64,
    /// Nominal capacity.
    pub capacity: u64,
}

/// A job that failed for good, and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FailedJob {
    /// Job name.
    pub job: String,
    /// Why, in words (retries spent, no site can hold it, a deadlock on
    /// disk space, …) with its last attempt's end.
    pub reason: String,
}

/// Each submitted workflow's response time, when there are several.
fn workflow_entries(scenario: &Scenario, records: &Records) -> Vec<WorkflowEntry> {
    let subs = &scenario.submissions;
    if subs.list.len() < 2 {
        return Vec::new();
    }
    let mut entries: Vec<WorkflowEntry> = subs
        .list
        .iter()
        .map(|w| WorkflowEntry {
            name: w.name.clone(),
            origin: scenario.sites[w.origin].info.name.clone(),
            jobs: 0,
            arrival_s: w.arrival,
            end_s: w.arrival,
            response_s: 0.0,
        })
        .collect();
    for (j, r) in records.jobs.iter().enumerate() {
        let e = &mut entries[subs.of_job[j]];
        e.jobs += 1;
        for end in r.attempts.iter().filter_map(|a| a.ended).chain(r.memoized) {
            e.end_s = e.end_s.max(end);
        }
    }
    for e in &mut entries {
        e.response_s = e.end_s - e.arrival_s;
    }
    entries
}

impl RunRecord {
    /// Builds the record of a finished run, simulated or live.
    pub fn from_run(
        scenario: &Scenario,
        run: &RunResult,
        run_id: &str,
        detail: Detail,
    ) -> RunRecord {
        let mut rec = Self::from_records(
            scenario,
            &run.workflow,
            &run.records,
            run.engine,
            run_id,
            run.makespan,
            detail,
        );
        rec.summary.succeeded = run.succeeded;
        rec.summary.dag_exit = run.dag_exit;
        rec.set_counts(run.counts.done, run.counts.failed, run.counts.blocked);
        rec.summary.evictions = run.evictions.iter().sum();
        rec.timeline = run.timeline.clone();
        for ((entry, ev), used) in rec.sites.iter_mut().zip(&run.evictions).zip(&run.used) {
            entry.evictions = *ev;
            entry.used_at_end = *used;
        }
        if let Some(live) = &run.live {
            rec.summary.wall_s = run.wall.as_secs_f64();
            rec.summary.setup_wall_s = live.setup.as_secs_f64();
            rec.summary.real_bytes = live.real_bytes;
            rec.summary.corrupt_at_end = live.corrupt_at_end;
        }
        rec
    }

    /// Builds the engine-independent part of a record from control records
    /// of a run of `wf` (the scenario's, grown by the sub-DAGs it read as it
    /// went).
    pub fn from_records(
        scenario: &Scenario,
        wf: &crate::core::Workflow,
        records: &Records,
        engine: &str,
        run_id: &str,
        makespan: f64,
        detail: Detail,
    ) -> RunRecord {
        let full = detail == Detail::Full;
        let site_name = |s: usize| scenario.sites[s].info.name.clone();
        let jobs: Vec<JobEntry> = records
            .jobs
            .iter()
            .enumerate()
            .filter(|_| full)
            .map(|(j, r)| JobEntry {
                name: wf.jobs[j].name.clone(),
                ready: r.ready,
                attempts: r
                    .attempts
                    .iter()
                    .map(|a| AttemptEntry {
                        site: site_name(a.site),
                        prescript: a.prescript,
                        submitted: a.submitted,
                        started: a.started,
                        finished: a.finished,
                        ended: a.ended,
                        outcome: a.outcome.clone(),
                        transfers: a.transfers,
                        exit: a.exit,
                        scripts: a.scripts.clone(),
                        members: a.members.clone(),
                    })
                    .collect(),
                failure: r.failure.clone(),
                blocked_by: r.blocked_by.map(|b| wf.jobs[b].name.clone()),
            })
            .collect();
        let transfers: Vec<TransferEntry> = records
            .transfers
            .iter()
            .filter(|_| full)
            .map(|t| TransferEntry {
                id: t.id,
                job: wf.jobs[t.job].name.clone(),
                file: wf.files[t.file].name.clone(),
                from: site_name(t.from),
                to: site_name(t.to),
                start: t.start,
                end: t.end,
                bytes: t.bytes,
                failure: t.failure.as_deref().cloned(),
                retry: t.retry,
            })
            .collect();
        let waits: Vec<f64> = records
            .jobs
            .iter()
            .flat_map(|j| j.attempts.iter())
            .filter_map(|a| Some(a.started? - a.submitted?))
            .collect();
        let done = records
            .jobs
            .iter()
            .filter(|j| {
                j.attempts
                    .last()
                    .is_some_and(|a| a.outcome == Outcome::Ended)
            })
            .count();
        let t = &records.transfers;
        let summary = Summary {
            succeeded: done == wf.jobs.len(),
            dag_exit: i32::from(done != wf.jobs.len()),
            makespan_s: makespan,
            wall_s: 0.0,
            setup_wall_s: 0.0,
            jobs: wf.jobs.len(),
            jobs_done: done,
            jobs_failed: 0,
            jobs_blocked: 0,
            kills: records.sites.iter().map(|s| s.killed).sum(),
            kills_void: records.sites.iter().map(|s| s.kills_void).sum(),
            replans: records
                .jobs
                .iter()
                .map(|j| j.attempts.len().saturating_sub(1))
                .sum(),
            transfers: t
                .iter()
                .filter(|t| t.failure.is_none() && t.end.is_some())
                .count(),
            transfer_failures: t.iter().filter(|t| t.failure.is_some()).count(),
            transfer_retries: t.iter().filter(|t| t.retry).count(),
            bytes: records.transfers.iter().map(|t| t.bytes).sum(),
            real_bytes: 0,
            cache_hits: records.sites.iter().map(|s| s.cache_hits).sum(),
            evictions: 0,
            transfers_refused_busy: t
                .iter()
                .filter(|t| t.failure.as_deref() == Some(&TransferFailure::Busy))
                .count(),
            mean_queue_wait_s: if waits.is_empty() {
                0.0
            } else {
                waits.iter().sum::<f64>() / waits.len() as f64
            },
            corrupt_at_end: 0,
            failures: records
                .jobs
                .iter()
                .enumerate()
                .filter_map(|(j, r)| {
                    Some(FailedJob {
                        job: wf.jobs[j].name.clone(),
                        reason: r.failure.clone()?,
                    })
                })
                .collect(),
        };
        let sites = scenario
            .sites
            .iter()
            .zip(&records.sites)
            .map(|(s, c)| SiteSummary {
                name: s.info.name.clone(),
                cpus: s.info.cpus,
                jobs_ended: c.ended,
                jobs_failed: c.failed,
                jobs_killed: c.killed,
                transfers_in: c.transfers_in,
                bytes_in: c.bytes_in,
                transfers_out: c.transfers_out,
                cache_hits: c.cache_hits,
                evictions: 0,
                used_at_end: 0,
                capacity: s.info.disk,
            })
            .collect();
        RunRecord {
            schema: SCHEMA_VERSION,
            gridbed: env!("CARGO_PKG_VERSION").to_string(),
            run_id: run_id.to_string(),
            engine: engine.to_string(),
            testbed: scenario.name.clone(),
            testbed_path: scenario.path.display().to_string(),
            strategy: scenario.strategy.clone(),
            replica_policy: format!("{:?}", scenario.manager.replica_policy).to_lowercase(),
            eviction: scenario.eviction.clone(),
            seed: scenario.seed,
            time_scale: scenario.emulation.time_scale,
            byte_scale: scenario.emulation.byte_scale,
            summary,
            sites,
            db: None,
            jobs,
            transfers,
            timeline: Timeline::default(),
            faults: records
                .faults
                .iter()
                .map(|f| FaultEntry {
                    t: f.time,
                    site: site_name(f.site),
                    fault: f.fault.clone(),
                })
                .collect(),
            workflows: workflow_entries(scenario, records),
        }
    }

    /// Sets the final job counts from the manager's view.
    /// Jobs done include DAGMan's `DONE` nodes and those a resumed run
    /// found ended, which have no attempt in this run.
    pub fn set_counts(&mut self, done: usize, failed: usize, blocked: usize) {
        self.summary.jobs_done = done;
        self.summary.jobs_failed = failed;
        self.summary.jobs_blocked = blocked;
    }

    /// The end-of-run summary table.
    pub fn table(&self) -> String {
        let s = &self.summary;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "gridbed {} run of `{}` — strategy {}, replica policy {}, seed {}",
            self.engine, self.testbed, self.strategy, self.replica_policy, self.seed
        );
        let wall = if s.wall_s > 0.0 {
            format!(
                " (wall {:.2} s at time_scale {})",
                s.wall_s, self.time_scale
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  makespan      {:>12.1} s nominal{wall}",
            s.makespan_s
        );
        let _ = writeln!(
            out,
            "  jobs          {:>12} ended of {} ({} failed, {} blocked, {} re-plans, {} killed by MonitQueue)",
            s.jobs_done, s.jobs, s.jobs_failed, s.jobs_blocked, s.replans, s.kills
        );
        const SHOWN: usize = 5;
        for f in s.failures.iter().take(SHOWN) {
            let _ = writeln!(out, "  failed job    `{}`: {}", f.job, f.reason);
        }
        if s.failures.len() > SHOWN {
            let more = s.failures.len() - SHOWN;
            let _ = writeln!(
                out,
                "  … and {more} more failed jobs (summary.failures in --json)"
            );
        }
        let _ = writeln!(
            out,
            "  transfers     {:>12} ({} nominal, {} real; {} failed, {} retries, {} refused busy)",
            s.transfers,
            human_bytes(s.bytes as f64),
            human_bytes(s.real_bytes as f64),
            s.transfer_failures,
            s.transfer_retries,
            s.transfers_refused_busy
        );
        let _ = writeln!(
            out,
            "  cache hits    {:>12}    evictions {}    mean queue wait {:.1} s",
            s.cache_hits, s.evictions, s.mean_queue_wait_s
        );
        for w in &self.workflows {
            let _ = writeln!(
                out,
                "  workflow      {:>12.1} s response  `{}` ({} jobs from {}, submitted at {:.0} s)",
                w.response_s, w.name, w.jobs, w.origin, w.arrival_s
            );
        }
        if !self.faults.is_empty() {
            let mut kinds: Vec<(&str, usize)> = Vec::new();
            for f in &self.faults {
                match kinds.iter_mut().find(|(k, _)| *k == f.fault.kind()) {
                    Some((_, n)) => *n += 1,
                    None => kinds.push((f.fault.kind(), 1)),
                }
            }
            let list: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
            let _ = writeln!(
                out,
                "  faults        {:>12} ({})",
                self.faults.len(),
                list.join(", ")
            );
        }
        let _ = writeln!(
            out,
            "\n  {:<14} {:>5} {:>8} {:>7} {:>10} {:>12} {:>9} {:>9} {:>10}",
            "site",
            "cpus",
            "jobs",
            "failed",
            "transf in",
            "bytes in",
            "served",
            "evicted",
            "cache hit"
        );
        for site in &self.sites {
            let _ = writeln!(
                out,
                "  {:<14} {:>5} {:>8} {:>7} {:>10} {:>12} {:>9} {:>9} {:>10}",
                site.name,
                site.cpus,
                site.jobs_ended,
                site.jobs_failed,
                site.transfers_in,
                human_bytes(site.bytes_in as f64),
                site.transfers_out,
                site.evictions,
                site.cache_hits
            );
        }
        out
    }
}
