//! The workflow management system's own costs: the serial stages of an
//! HTCondor pool driven by DAGMan, and per-job latencies drawn from
//! distributions, so that a run can take as long as a real Pegasus run does.
//!
//! A real makespan is set by the WMS as much as by the jobs: the Montage runs
//! of WfCommons' instances spend 1,603 s computing and 7,331 s in all. Per-job
//! latencies that overlap (the `*_overhead` of [`ManagerSettings`]) cannot
//! make a makespan grow with the number of jobs; serial stages can. This
//! module holds the stages' rules, each parameter named after the knob it
//! stands for (HTCondor's defaults in brackets, from its `param_info.in`):
//!
//! * **DAGMan's event loop** — every `DAGMAN_USER_LOG_SCAN_INTERVAL` [5 s]
//!   DAGMan reads the job log (a job's end is noticed only then) and submits
//!   at most `DAGMAN_MAX_SUBMITS_PER_INTERVAL` [100] ready nodes, one after
//!   another, each taking `DAGMAN_SUBMIT_DELAY` [0 s] plus `condor_submit`'s
//!   own time.
//! * **The negotiator** — an idle job is matched to a free slot of its site
//!   only at a negotiation cycle, every `NEGOTIATOR_INTERVAL` [60 s]; a slot
//!   stays claimed while the schedd has idle jobs for it, and a job ending on
//!   a claim hands it to the next idle job at once, until the claim is older
//!   than `CLAIM_WORKLIFE` [1200 s].
//! * **The schedd's shadows** — at most `JOB_START_COUNT` [1] jobs start
//!   every `JOB_START_DELAY` [0 s].
//!
//! Off (every interval 0) the manager runs as an ideal WMS, as before.
//!
//! [`ManagerSettings`]: super::ManagerSettings

use std::collections::VecDeque;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, LogNormal};

use super::{JobId, SiteId, Time};

/// A per-job latency: a constant or a distribution (nominal seconds).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(tag = "dist", rename_all = "lowercase")]
pub enum Latency {
    /// Always this long.
    Fixed {
        /// Seconds.
        value: f64,
    },
    /// Uniform between two bounds.
    Uniform {
        /// Least seconds.
        min: f64,
        /// Most seconds.
        max: f64,
    },
    /// Exponential with this mean.
    Exponential {
        /// Mean seconds.
        mean: f64,
    },
    /// Log-normal with this mean and standard deviation (of the latency
    /// itself, not of its logarithm).
    Lognormal {
        /// Mean seconds.
        mean: f64,
        /// Standard deviation in seconds.
        sd: f64,
    },
}

impl Default for Latency {
    fn default() -> Self {
        Latency::Fixed { value: 0.0 }
    }
}

impl Latency {
    /// A constant latency.
    pub fn fixed(value: f64) -> Self {
        Latency::Fixed { value }
    }

    /// The mean of the latency.
    pub fn mean(&self) -> f64 {
        match *self {
            Latency::Fixed { value } => value,
            Latency::Uniform { min, max } => (min + max) / 2.0,
            Latency::Exponential { mean } | Latency::Lognormal { mean, .. } => mean,
        }
    }

    /// Whether it is always zero.
    pub fn is_zero(&self) -> bool {
        matches!(self, Latency::Fixed { value } if *value == 0.0)
    }

    /// Why it cannot be drawn from, if it cannot (negative or empty bounds).
    pub fn check(&self) -> Result<(), String> {
        let ok = match *self {
            Latency::Fixed { value } => value >= 0.0 && value.is_finite(),
            Latency::Uniform { min, max } => min >= 0.0 && max >= min && max.is_finite(),
            Latency::Exponential { mean } => mean >= 0.0 && mean.is_finite(),
            Latency::Lognormal { mean, sd } => mean > 0.0 && sd >= 0.0 && (mean + sd).is_finite(),
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "expected a latency ≥ 0 s (uniform: 0 ≤ min ≤ max; lognormal: mean > 0, sd ≥ 0), got {self:?}"
            ))
        }
    }

    /// One draw.
    pub fn draw(&self, rng: &mut ChaCha8Rng) -> f64 {
        use rand::Rng;
        match *self {
            Latency::Fixed { value } => value,
            Latency::Uniform { min, max } if max > min => rng.random_range(min..max),
            Latency::Uniform { min, .. } => min,
            Latency::Exponential { mean } if mean > 0.0 => {
                Exp::new(1.0 / mean).map_or(mean, |d| d.sample(rng))
            }
            Latency::Exponential { .. } => 0.0,
            Latency::Lognormal { mean, sd } => {
                // The parameters of the logarithm that give this mean and sd.
                let s2 = (1.0 + (sd / mean).powi(2)).ln();
                let mu = mean.ln() - s2 / 2.0;
                LogNormal::new(mu, s2.sqrt()).map_or(mean, |d| d.sample(rng))
            }
        }
    }
}

/// The serial stages of the pool; all off by default.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WmsSettings {
    /// `DAGMAN_USER_LOG_SCAN_INTERVAL`: DAGMan's event loop period; a job's
    /// end is noticed, and ready nodes submitted, only at its ticks (0: at once).
    pub user_log_scan_interval: f64,
    /// `DAGMAN_MAX_SUBMITS_PER_INTERVAL`: most submissions per tick (0: no limit).
    pub max_submits_per_interval: usize,
    /// `DAGMAN_SUBMIT_DELAY` plus `condor_submit`'s own time: each submission
    /// takes this long, one after another.
    pub submit_delay: f64,
    /// `NEGOTIATOR_INTERVAL`: idle jobs are matched to slots only at the
    /// negotiator's cycles (0: at once, as if every slot were claimed).
    pub negotiator_interval: f64,
    /// `CLAIM_WORKLIFE`: how long a claim may be handed from a job that ended
    /// to the next idle job of its site without a new match.
    pub claim_worklife: f64,
    /// `JOB_START_DELAY`: the schedd starts `job_start_count` jobs every
    /// `job_start_delay` seconds (0: at once).
    pub job_start_delay: f64,
    /// `JOB_START_COUNT`.
    pub job_start_count: usize,
    /// Seeds the draws of the per-job latencies and of the clocks' phases.
    pub seed: u64,
    /// Whether DAGMan's and the negotiator's clocks start at a seeded random
    /// phase, as they do against a workflow's start in a real pool (else
    /// both tick at 0, which makes a run's start a tick of both).
    pub random_phase: bool,
}

impl Default for WmsSettings {
    fn default() -> Self {
        WmsSettings {
            user_log_scan_interval: 0.0,
            max_submits_per_interval: 0,
            submit_delay: 0.0,
            negotiator_interval: 0.0,
            claim_worklife: 1200.0,
            job_start_delay: 0.0,
            job_start_count: 1,
            seed: 1,
            random_phase: true,
        }
    }
}

impl WmsSettings {
    /// HTCondor's defaults for every stage.
    pub fn htcondor() -> Self {
        WmsSettings {
            user_log_scan_interval: 5.0,
            max_submits_per_interval: 100,
            submit_delay: 0.0,
            negotiator_interval: 60.0,
            claim_worklife: 1200.0,
            job_start_delay: 0.0,
            job_start_count: 1,
            seed: 1,
            random_phase: true,
        }
    }

    /// Whether DAGMan's event loop holds submissions.
    pub fn dagman_cycle(&self) -> bool {
        self.user_log_scan_interval > 0.0 || self.submit_delay > 0.0
    }
}

/// The first tick of a period-`p` clock (ticking at phase, phase + p, …)
/// at or after `now`; `now` itself when the clock is off.
pub fn next_tick(now: Time, p: f64, phase: f64) -> Time {
    if p <= 0.0 {
        return now;
    }
    let k = ((now - phase) / p).ceil().max(0.0);
    // Rounding may put the tick a hair below now.
    let t = phase + k * p;
    if t < now { t + p } else { t }
}

/// The state of the pool's serial stages, driven by the manager.
#[derive(Debug)]
pub struct Wms {
    /// The settings.
    pub settings: WmsSettings,
    rng: ChaCha8Rng,
    /// Phases of DAGMan's and the negotiator's clocks.
    scan_phase: f64,
    negotiator_phase: f64,
    /// Staged jobs waiting for DAGMan to submit them: (job, attempt).
    submits: VecDeque<(JobId, usize)>,
    /// A DAGMan tick is scheduled.
    pub cycle_pending: bool,
    /// When the submission in progress ends.
    submit_free: Time,
    /// Idle jobs per site, in submission order: (job, attempt).
    idle: Vec<VecDeque<(JobId, usize)>>,
    /// Claimed slots per site.
    claimed: Vec<usize>,
    /// Slots per site.
    cpus: Vec<usize>,
    /// A negotiation cycle is scheduled.
    pub negotiation_pending: bool,
    /// The schedd's current start window and the jobs started in it.
    start_window: Time,
    started_in_window: usize,
    /// Per job: when the claim it runs on was made, if it holds one.
    claim_since: Vec<Option<Time>>,
}

impl Wms {
    /// The stages for `jobs` jobs on sites with these slots.
    pub fn new(settings: WmsSettings, cpus: Vec<usize>, jobs: usize) -> Self {
        use rand::Rng;
        let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
        let (scan_phase, negotiator_phase) = if settings.random_phase {
            (
                rng.random::<f64>() * settings.user_log_scan_interval,
                rng.random::<f64>() * settings.negotiator_interval,
            )
        } else {
            (0.0, 0.0)
        };
        Wms {
            rng,
            scan_phase,
            negotiator_phase,
            settings,
            submits: VecDeque::new(),
            cycle_pending: false,
            submit_free: 0.0,
            idle: vec![VecDeque::new(); cpus.len()],
            claimed: vec![0; cpus.len()],
            cpus,
            negotiation_pending: false,
            start_window: f64::NEG_INFINITY,
            started_in_window: 0,
            claim_since: vec![None; jobs],
        }
    }

    /// The stages follow `jobs` jobs (a sub-DAG's were added).
    pub fn grow(&mut self, jobs: usize) {
        self.claim_since.resize(jobs, None);
    }

    /// One draw of `latency`.
    pub fn draw(&mut self, latency: &Latency) -> f64 {
        latency.draw(&mut self.rng)
    }

    /// When DAGMan notices an event that happened at `now`.
    pub fn noticed(&self, now: Time) -> Time {
        next_tick(now, self.settings.user_log_scan_interval, self.scan_phase)
    }

    /// A staged job waits for DAGMan's next tick to be submitted; returns
    /// the tick's time if one must be scheduled.
    pub fn queue_submit(&mut self, job: JobId, attempt: usize, now: Time) -> Option<Time> {
        self.submits.push_back((job, attempt));
        if self.cycle_pending {
            return None;
        }
        self.cycle_pending = true;
        Some(next_tick(
            now,
            self.settings.user_log_scan_interval,
            self.scan_phase,
        ))
    }

    /// DAGMan's tick: the submissions it makes, each with the time its
    /// `condor_submit` ends, and the next tick if jobs are left. `current`
    /// says whether a queued (job, attempt) still waits.
    pub fn dagman_tick(
        &mut self,
        now: Time,
        mut current: impl FnMut(JobId, usize) -> bool,
    ) -> (Vec<(JobId, usize, Time)>, Option<Time>) {
        self.cycle_pending = false;
        let limit = match self.settings.max_submits_per_interval {
            0 => usize::MAX,
            n => n,
        };
        let mut made = Vec::new();
        while made.len() < limit {
            let Some((job, attempt)) = self.submits.pop_front() else {
                break;
            };
            if !current(job, attempt) {
                continue;
            }
            let at = self.submit_free.max(now) + self.settings.submit_delay;
            self.submit_free = at;
            made.push((job, attempt, at));
        }
        let next = (!self.submits.is_empty()).then(|| {
            self.cycle_pending = true;
            now + self.settings.user_log_scan_interval.max(f64::MIN_POSITIVE)
        });
        (made, next)
    }

    /// Whether idle jobs wait for the negotiator.
    pub fn negotiates(&self) -> bool {
        self.settings.negotiator_interval > 0.0
    }

    /// A submitted job is idle in the schedd; returns the next negotiation
    /// cycle's time if one must be scheduled.
    pub fn idle(&mut self, job: JobId, attempt: usize, site: SiteId, now: Time) -> Option<Time> {
        self.idle[site].push_back((job, attempt));
        if self.negotiation_pending {
            return None;
        }
        self.negotiation_pending = true;
        Some(next_tick(
            now,
            self.settings.negotiator_interval,
            self.negotiator_phase,
        ))
    }

    /// A negotiation cycle: the idle jobs matched to a free slot of their
    /// site (each now holds a claim), and the next cycle if jobs are left
    /// idle. `current` says whether an idle (job, attempt) still waits.
    pub fn negotiate(
        &mut self,
        now: Time,
        mut current: impl FnMut(JobId, usize) -> bool,
    ) -> (Vec<(JobId, usize)>, Option<Time>) {
        self.negotiation_pending = false;
        let mut matched = Vec::new();
        let mut left = false;
        for site in 0..self.idle.len() {
            while self.claimed[site] < self.cpus[site] {
                let Some((job, attempt)) = self.idle[site].pop_front() else {
                    break;
                };
                if current(job, attempt) {
                    self.claimed[site] += 1;
                    self.claim_since[job] = Some(now);
                    matched.push((job, attempt));
                }
            }
            self.idle[site].retain(|&(j, a)| current(j, a));
            left |= !self.idle[site].is_empty();
        }
        let next = left.then(|| {
            self.negotiation_pending = true;
            now + self.settings.negotiator_interval
        });
        (matched, next)
    }

    /// `job` left its slot at `site` (ended, failed or killed): its claim goes
    /// to the next idle job of the site, returned, if the claim is young
    /// enough; otherwise it is released.
    pub fn release_claim(
        &mut self,
        job: JobId,
        site: SiteId,
        now: Time,
        mut current: impl FnMut(JobId, usize) -> bool,
    ) -> Option<(JobId, usize)> {
        let since = self.claim_since.get_mut(job)?.take()?;
        if now - since < self.settings.claim_worklife {
            while let Some((next, attempt)) = self.idle[site].pop_front() {
                if current(next, attempt) {
                    self.claim_since[next] = Some(since);
                    return Some((next, attempt));
                }
            }
        }
        self.claimed[site] = self.claimed[site].saturating_sub(1);
        None
    }

    /// Whether `job` holds a claim (it was matched and sent to its site).
    pub fn holds_claim(&self, job: JobId) -> bool {
        self.claim_since.get(job).is_some_and(|c| c.is_some())
    }

    /// When the schedd starts a job matched at `now` (its shadow): in
    /// windows of `JOB_START_DELAY` seconds, `JOB_START_COUNT` jobs each.
    pub fn start_at(&mut self, now: Time) -> Time {
        let delay = self.settings.job_start_delay;
        if delay <= 0.0 {
            return now;
        }
        if now >= self.start_window + delay {
            self.start_window = now;
            self.started_in_window = 0;
        }
        if self.started_in_window >= self.settings.job_start_count.max(1) {
            self.start_window += delay;
            self.started_in_window = 0;
        }
        self.started_in_window += 1;
        self.start_window.max(now)
    }

    /// The idle jobs of `site`, taken out (the site crashed).
    pub fn drain_idle(&mut self, site: SiteId) -> Vec<(JobId, usize)> {
        self.idle[site].drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_phase_locked() {
        assert_eq!(next_tick(0.0, 5.0, 0.0), 0.0);
        assert_eq!(next_tick(0.1, 5.0, 0.0), 5.0);
        assert_eq!(next_tick(5.0, 5.0, 0.0), 5.0);
        assert_eq!(next_tick(7.3, 0.0, 0.0), 7.3);
        assert_eq!(next_tick(0.0, 5.0, 2.0), 2.0);
        assert_eq!(next_tick(7.5, 5.0, 2.0), 12.0);
    }

    #[test]
    fn dagman_submits_at_most_its_limit_per_tick_one_after_another() {
        let s = WmsSettings {
            user_log_scan_interval: 5.0,
            max_submits_per_interval: 2,
            submit_delay: 1.0,
            random_phase: false,
            ..WmsSettings::default()
        };
        let mut w = Wms::new(s, vec![4], 5);
        assert_eq!(w.queue_submit(0, 0, 1.0), Some(5.0));
        for j in 1..5 {
            assert_eq!(w.queue_submit(j, 0, 1.0), None);
        }
        let (made, next) = w.dagman_tick(5.0, |_, _| true);
        assert_eq!(made, vec![(0, 0, 6.0), (1, 0, 7.0)]);
        assert_eq!(next, Some(10.0));
        // A job no longer waiting is skipped, not counted.
        let (made, next) = w.dagman_tick(10.0, |j, _| j != 2);
        assert_eq!(made, vec![(3, 0, 11.0), (4, 0, 12.0)]);
        assert_eq!(next, None);
    }

    #[test]
    fn the_negotiator_matches_free_slots_and_claims_pass_to_idle_jobs() {
        let s = WmsSettings {
            negotiator_interval: 60.0,
            claim_worklife: 100.0,
            random_phase: false,
            ..WmsSettings::default()
        };
        let mut w = Wms::new(s, vec![2], 5);
        assert_eq!(w.idle(0, 0, 0, 3.0), Some(60.0));
        for j in 1..4 {
            assert_eq!(w.idle(j, 0, 0, 3.0), None);
        }
        let (m, next) = w.negotiate(60.0, |_, _| true);
        assert_eq!(m, vec![(0, 0), (1, 0)]);
        assert_eq!(next, Some(120.0));
        // Job 0 ends: its claim goes to job 2 without a cycle.
        assert_eq!(w.release_claim(0, 0, 70.0, |_, _| true), Some((2, 0)));
        // Job 1 ends after its claim's worklife: the claim is released.
        assert_eq!(w.release_claim(1, 0, 161.0, |_, _| true), None);
        let (m, next) = w.negotiate(180.0, |_, _| true);
        assert_eq!(m, vec![(3, 0)]);
        assert_eq!(next, None);
        assert!(!w.holds_claim(1) && w.holds_claim(3));
    }

    #[test]
    fn the_schedd_starts_count_jobs_per_delay() {
        let s = WmsSettings {
            job_start_delay: 2.0,
            job_start_count: 2,
            ..WmsSettings::default()
        };
        let mut w = Wms::new(s, vec![8], 4);
        let starts: Vec<f64> = (0..4).map(|_| w.start_at(10.0)).collect();
        assert_eq!(starts, vec![10.0, 10.0, 12.0, 12.0]);
        assert_eq!(w.start_at(20.0), 20.0);
    }

    #[test]
    fn latencies_draw_around_their_mean() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for l in [
            Latency::fixed(4.0),
            Latency::Uniform { min: 2.0, max: 6.0 },
            Latency::Exponential { mean: 4.0 },
            Latency::Lognormal { mean: 4.0, sd: 2.0 },
        ] {
            l.check().unwrap();
            let n = 20_000;
            let mean = (0..n).map(|_| l.draw(&mut rng)).sum::<f64>() / n as f64;
            assert!((mean - 4.0).abs() < 0.15, "{l:?}: {mean}");
        }
        assert!(Latency::Uniform { min: 3.0, max: 1.0 }.check().is_err());
        assert!(Latency::fixed(-1.0).check().is_err());
    }
}
