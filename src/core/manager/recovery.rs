//! Nothing lost: transfer retries, re-planning with back-off, failure for
//! good (DAGMan's rescue semantics), and seed 002's MonitQueue, which kills
//! jobs idling too long at a site and sends them back to the prescript.
//! A node's failure for good and what it blocks are the node life cycle's
//! own rule ([`NodeLife::fail_node`], told through its `LifePort`).

use super::node_life::LifePort;
use super::*;

/// Waits for room in a row with no job ending anywhere in between, after
/// which (and after the manager's stall horizon) a job fails: waits double
/// up to 64 × `replan_backoff`, so ten are about 53 minutes of nominal time
/// at the default 10 s.
pub(super) const MAX_STALLS: u32 = 10;

/// How a job goes back to the prescript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Retry {
    /// At once, not its fault (an input vanished, a site that can never fit).
    Now,
    /// After a growing back-off, not its fault (no room now); gives up only
    /// when no job anywhere ends meanwhile (see [`MAX_STALLS`]).
    Later,
    /// After `replan_backoff`, counted against `max_retries`.
    Counted,
    /// Never: the node fails for good (DAGMan's `RETRY … UNLESS-EXIT`).
    Never,
    /// After a growing back-off, not its fault: every site that could run it
    /// is down; as [`Retry::Later`], it gives up only when no job anywhere
    /// ends meanwhile.
    SitesDown,
    /// When this file, whose every replica was lost, is registered again
    /// (its producer ran again), or its producer fails for good: not a try
    /// every back-off while the producer runs.
    Remade(FileId),
}

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
        let Some(p) = self.wf.producer[file].filter(|_| self.settings.reproduce_lost) else {
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
            let (state, jobs) = (&self.dag.state, &self.records.jobs);
            let queued = |job: JobId, attempt: usize| {
                state[job] == JobState::Queued && jobs[job].attempts.len() == attempt + 1
            };
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

impl NodeLife {
    /// `RETRY`: whether node `owner` may run again after its failures so
    /// far; `max` when it sets none.
    pub(super) fn retries_left(&self, owner: JobId, max: u32) -> bool {
        self.failures[owner] < self.nodes.retry[owner].unwrap_or(max)
    }

    /// Node `owner` failed once more: its failures and the retries it is
    /// allowed (`max` when it sets none), once they are spent.
    pub(super) fn count_failure(&mut self, owner: JobId, max: u32) -> Option<(u32, u32)> {
        self.failures[owner] += 1;
        let allowed = self.nodes.retry[owner].unwrap_or(max);
        (self.failures[owner] > allowed).then_some((self.failures[owner], allowed))
    }

    /// An output of `job` was lost and must be made again: if it ended
    /// done, it is ready to run again (outside DAGMan's rules: gridbed's
    /// `reproduce_lost`). Returns whether it was.
    pub(super) fn run_again(&mut self, job: JobId, port: &mut impl LifePort) -> bool {
        if self.state[job] != JobState::Done {
            return false;
        }
        self.rerun[job] = true;
        self.set_state(job, JobState::Ready, port);
        self.ready.push(job);
        true
    }

    /// The node `job` will never run: its descendants are blocked
    /// (DAGMan), while the jobs that were only ordered after it are
    /// released; the jobs waiting for its outputs to be made again plan
    /// again. With `futile`, the nodes a stop left unrun below `job`
    /// become futile too (a removed node's do not: DAGMan reads no end of
    /// a job it removed).
    pub(super) fn fail_node(
        &mut self,
        job: JobId,
        why: String,
        futile: bool,
        port: &mut impl LifePort,
    ) {
        // A sub-DAG whose PRE script failed for good never runs: its node
        // fails (no POST script runs), before its DAG's nodes are blocked.
        if let Some(node) = self.node_of_entry(job)
            && self.state[node] == JobState::Waiting
        {
            let why = format!("its PRE script's no-op failed: {why}");
            self.fail_node(node, why, futile, port);
        }
        self.set_state(job, JobState::Failed, port);
        let waiting = port.failed(job, why);
        self.requeue_ready(waiting);
        // (node, a stop had left it unrun: a sub-DAG's node counted it then)
        let mut stack = vec![(job, false)];
        while let Some((j, was_stopped)) = stack.pop() {
            for i in 0..self.ordering[j].len() {
                let c = self.ordering[j][i];
                self.release_child(c, port);
            }
            let mut below = port.workflow().children[j].clone();
            below.extend(self.close_gate(j));
            below.extend(self.never_provisioned(j));
            for c in below {
                // A weak child of the node that failed runs all the same
                // (DAGMan's weak arc: its parent is over).
                if j == job && !self.nodes.weak.is_empty() && self.nodes.weak.contains(&(j, c)) {
                    if self.state[c] == JobState::Waiting {
                        self.release_child(c, port);
                    }
                    continue;
                }
                // A node a stop left unrun becomes futile too.
                if futile && self.state[c] == JobState::Blocked && port.blocked_by(c).is_none() {
                    port.set_blocked_by(c, job);
                    stack.push((c, true));
                    continue;
                }
                if self.state[c] != JobState::Waiting {
                    continue;
                }
                // A sub-DAG's failure stops at its node, whose DAG ends
                // failed once nothing more of it can run.
                if let Some(k) = self.dagmans.of_node(c) {
                    if !was_stopped {
                        self.subdag_leaf_failed(c, k, port);
                    }
                    continue;
                }
                self.set_state(c, JobState::Blocked, port);
                port.set_blocked_by(c, job);
                stack.push((c, false));
            }
        }
    }

    /// Those of `jobs` still ready go back to the ready queue.
    pub(super) fn requeue_ready(&mut self, jobs: Vec<JobId>) {
        for job in jobs {
            if self.state[job] == JobState::Ready {
                self.ready.push(job);
            }
        }
    }
}

impl Placement {
    /// `job` is planned again at once (an input vanished, a site that can
    /// never fit it): the times it was, once more than `max`.
    pub(super) fn replanned(&mut self, job: JobId, max: u32) -> Option<u32> {
        self.replans[job] += 1;
        let n = self.replans[job];
        (n > max).then_some(n)
    }

    /// `job` waits for room (or for a site that can run it to come back)
    /// before it is planned again: the wait, doubling from `backoff` up
    /// to 64 times it; and, when it gives up, its waits in a row and the
    /// time since the first in which no job ended anywhere.
    ///
    /// No room now is nobody's fault and passes as jobs end and release
    /// their pins. But when no job anywhere has ended in this job's last
    /// [`MAX_STALLS`] waits, over twice the longest a job can take to run,
    /// the waiting jobs are only taking turns at failing for room (a
    /// deadlock on disk space): the job gives up rather than wait for
    /// ever. Once no job ended for as long as the longest runs, its site's
    /// room is not freeing up: its next attempt goes elsewhere if it can
    /// (a selector that follows the data would choose it again).
    pub(super) fn room_backoff(
        &mut self,
        job: JobId,
        now: Time,
        backoff: Time,
    ) -> (Time, Option<(u32, Time)>) {
        self.room_waits[job] += 1;
        let doubling = self.room_waits[job].min(7) - 1;
        let stall = &mut self.stall;
        if stall.progress_seen[job] == self.progress {
            stall.waits[job] += 1;
        } else {
            stall.waits[job] = 0;
            stall.since[job] = now;
        }
        stall.progress_seen[job] = self.progress;
        let stalled = now - stall.since[job];
        if stall.waits[job] > 0 && stalled >= stall.horizon / 2.0 {
            self.avoid_once[job] = Some(self.site_of[job]);
        }
        let gave_up = stall.waits[job] >= MAX_STALLS && stalled >= stall.horizon;
        let wait = backoff * f64::from(1u32 << doubling);
        (wait, gave_up.then_some((stall.waits[job] + 1, stalled)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::node_life::recorder::life_of;
    use super::*;

    /// A node whose output was lost runs again once it ended done, and
    /// only then: one still to end makes the output anyway.
    #[test]
    fn a_done_node_whose_output_was_lost_is_ready_to_run_again() {
        let (mut life, mut port) = life_of(&[vec![], vec![0]], Vec::new());
        assert!(!life.run_again(0, &mut port), "j0 has not ended");
        life.set_state(0, JobState::Done, &mut port);
        life.release_children(0, &mut port);
        while life.ready.pop().is_some() {}
        assert!(life.run_again(0, &mut port));
        assert_eq!(life.state[0], JobState::Ready);
        assert!(life.rerun[0]);
        assert_eq!(life.ready.pop(), Some(0));
        assert_eq!(port.moves.last(), Some(&(0, JobState::Done, JobState::Ready)));
    }

    /// `RETRY n`: a node may fail n times and run again each time; its
    /// (n+1)th failure spends them. A node with no `RETRY` gets the
    /// run's `max_retries`.
    #[test]
    fn retry_counts_a_nodes_failures_against_its_own_or_the_runs_allowance() {
        let mut life = NodeLife::new(vec![0; 2], vec![Vec::new(); 2], false, 0);
        life.nodes = NodeSettings::none(2);
        life.nodes.retry[0] = Some(1);
        assert!(life.retries_left(0, 5));
        assert_eq!(life.count_failure(0, 5), None);
        assert!(!life.retries_left(0, 5), "RETRY 1 is spent after one failure");
        assert_eq!(life.count_failure(0, 5), Some((2, 1)));
        for _ in 0..2 {
            assert!(life.retries_left(1, 2));
            assert_eq!(life.count_failure(1, 2), None);
        }
        assert_eq!(life.count_failure(1, 2), Some((3, 2)), "max_retries 2");
    }
}
