//! Nothing lost: transfer retries, re-planning with back-off, failure for
//! good (DAGMan's rescue semantics), and seed 002's MonitQueue, which kills
//! jobs idling too long at a site and sends them back to the prescript.
//! A node's failure for good and what it blocks are the node life cycle's
//! own rule ([`NodeLife::fail_node`], told through its `LifePort`,
//! `life/failure.rs`); the back-off and when re-planning gives up are the
//! placement's (`grid/replan.rs`).

use super::*;
pub(crate) use super::retry::Retry;


impl Manager {
    /// Starts MonitQueue's periodic check if it is on.
    pub(super) fn start_monit(&mut self) {
        if self.settings.monit_interval > 0.0 && self.settings.max_idle.is_finite() {
            let at = self.settings.monit_interval;
            self.schedule(at, Timer::Monit);
        }
    }

    pub(super) fn retry(&mut self, job: JobId, retry: Retry) {
        // A sub-DAG node's PRE script runs in a no-op: the node's RETRY.
        let owner = self.dag.node_of_entry(job).unwrap_or(job);
        if self.dag.stopped_for(job) {
            let why = self.dag.stop_reason(&self.wf, job);
            // A node the stop kept from its retries fails without making
            // the nodes below it futile (DAGMan had restarted it).
            let max = self.settings.max_retries;
            if matches!(retry, Retry::Counted) && self.dag.retries_left(owner, max) {
                self.set_state(job, JobState::Failed);
                self.records.jobs[job].failure = Some(why);
            } else {
                self.fail_for_good(job, why);
            }
            return;
        }
        if let Retry::Remade(file) = retry {
            self.grid.replicas.wait_for(file, job);
            return;
        }
        let backoff = self.settings.replan_backoff;
        // Described only for a job that fails for good: retries are a hot
        // path (millions in a deadlocked run).
        let last = |m: &Manager| {
            m.records.jobs[job]
                .attempts
                .last()
                .map_or_else(String::new, |a| a.outcome.describe())
        };
        let (why, at) = match retry {
            Retry::Counted => {
                let spent = self.dag.count_failure(owner, self.settings.max_retries);
                let why = spent.map(|(n, allowed)| {
                    let last = last(self);
                    format!("failed {n} times, more than its {allowed} retries; last: {last}")
                });
                (why, self.now + backoff)
            }
            Retry::Now => {
                let max = self.settings.max_replans;
                let why = self.grid.replanned(job, max).map(|n| {
                    let last = last(self);
                    format!("planned again {n} times, more than max_replans {max}; last: {last}")
                });
                (why, self.now)
            }
            Retry::Never => (
                Some(format!("{}, its RETRY's UNLESS-EXIT status", last(self))),
                self.now,
            ),
            Retry::Remade(_) => unreachable!("waits above"),
            Retry::Later | Retry::SitesDown => {
                let (wait, gave_up) = self.grid.room_backoff(job, self.now, backoff);
                let why = gave_up.map(|(n, stalled)| match retry {
                    Retry::SitesDown => format!(
                        "every site that can run it was down, {n} times over {stalled:.0} s \
                         in which no job ended anywhere"
                    ),
                    _ => format!(
                        "no room for its files at the sites it tried, {n} times over \
                         {stalled:.0} s in which no job ended anywhere (a deadlock on \
                         disk space); last: {}",
                        last(self)
                    ),
                });
                (why, self.now + wait)
            }
        };
        if let Some(why) = why {
            self.fail_for_good(job, why);
        } else if let Some(k) = self.dag.dagmans.of_node(job) {
            // DAGMan submits the sub-DAG again at once.
            self.life(|dag, port| dag.restart_subdag(job, k, port));
        } else if at <= self.now {
            self.dag.ready.push(job);
        } else {
            self.schedule(at, Timer::Replan { job });
        }
    }

    /// The job will never run ([`NodeLife::fail_node`]).
    pub(super) fn fail_for_good(&mut self, job: JobId, why: String) {
        self.fail_node(job, why, true);
    }

    /// The job will never run, its stopped descendants futile or not
    /// ([`NodeLife::fail_node`]).
    pub(super) fn fail_node(&mut self, job: JobId, why: String, futile: bool) {
        self.life(|dag, port| dag.fail_node(job, why, futile, port));
    }

    /// A fault at `site` is recorded; a crash takes the site out of every
    /// plan (its staging prescripts fail, counted against RETRY; its queued
    /// and running jobs follow, as the site reports them) and, with its
    /// pool, every replica it held; a recovery lets jobs go there again.
    pub(super) fn on_fault(&mut self, site: SiteId, fault: Fault, out: &mut Vec<Command>) {
        match fault {
            Fault::Crash { pool_lost } => {
                for job in self.grid.crash(site, pool_lost) {
                    let reason = "its site crashed".to_string();
                    self.abort_staging(job, reason, Retry::Counted, out);
                }
                // Jobs idle in the schedd for the site never reached it: they
                // fail as its queued ones do.
                let idle: Vec<JobId> = (0..self.dag.state.len())
                    .filter(|&j| {
                        self.dag.state[j] == JobState::Queued
                            && self.grid.site_of[j] == site
                            && !self.grid.pool.at_site[j]
                    })
                    .collect();
                for job in idle {
                    let failure = JobFailure::Failed("its site crashed".into());
                    self.on_job_ended(job, site, Err(failure), out);
                }
            }
            Fault::Recover => self.grid.pool.down[site] = false,
            _ => {}
        }
        self.records.faults.push(FaultRecord {
            time: self.now,
            site,
            fault,
        });
    }

    /// Every replica of `file` is lost: its producer runs again if it had
    /// ended (and lost inputs of its own are made again the same way when it
    /// stages). False when nothing can make it: a workflow input, or
    /// `reproduce_lost` off.
    pub(super) fn reproduce(&mut self, file: FileId) -> bool {
        let Some(p) = self.wf.producer(file).filter(|_| self.settings.reproduce_lost) else {
            return false;
        };
        if self.life(|dag, port| dag.run_again(p, port)) {
            self.grid.read_again(&self.wf, p);
        }
        // Otherwise it is running again already, or has yet to end.
        !matches!(self.dag.state[p], JobState::Failed | JobState::Blocked)
    }

    /// MonitQueue (seed 002 §4): kills the jobs idle in a site queue longer
    /// than `max_idle` ([`Placement::next_overdue`]), one at a time since a
    /// kill may start another job, then looks again after `monit_interval`.
    pub(super) fn monit_queue(&mut self, out: &mut Vec<Command>) {
        let max_idle = self.settings.max_idle;
        while let Some(job) = {
            let queued = super::staging::queued(&self.dag.state, &self.records.jobs);
            self.grid.next_overdue(self.now, max_idle, queued)
        } {
            let site = self.grid.site_of[job];
            if self.grid.pool.at_site[job] {
                out.push(Command::Kill { job, site });
            } else {
                // Still idle in the schedd: removed there, at once.
                self.on_job_killed(job, site, true, out);
            }
        }
        let at = self.now + self.settings.monit_interval;
        self.schedule(at, Timer::Monit);
    }

    pub(super) fn on_job_killed(
        &mut self,
        job: JobId,
        site: SiteId,
        killed: bool,
        out: &mut Vec<Command>,
    ) {
        if !self.grid.pool.killing[job] || self.grid.site_of[job] != site {
            return;
        }
        self.grid.pool.killing[job] = false;
        if !killed || self.dag.state[job] != JobState::Queued {
            // It started first: it runs, the kill is void.
            self.records.sites[site].kills_void += 1;
            return;
        }
        self.leave_queue(job, site, out);
        self.records.sites[site].killed += 1;
        if let Some(a) = self.records.jobs[job].attempts.last_mut() {
            a.ended = Some(self.now);
            a.outcome = Outcome::Killed;
        }
        self.set_state(job, JobState::Ready);
        self.grid.avoid_once[job] = Some(site);
        self.retry(job, Retry::Now);
    }
}
