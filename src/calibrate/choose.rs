//! The knobs a set of traces can tell apart: what `gridbed calibrate` fits
//! when `--fit` does not say. A makespan is one number per trace, so the
//! fit takes a knob only where the traces differ along what it charges:
//!
//! - the schedd's serial start rate (`job_start_delay`) charges jobs, and
//!   every trace has them;
//! - a rate charges bytes: it is taken only where some trace moves enough
//!   bytes over its run to show in its makespan (at least
//!   [`SHOWS`] over the whole run, 8% of a 1 Gbit/s interface), and where
//!   the traces' bytes per job differ (else bytes grow with jobs and the
//!   start rate explains the same growth). The rate is the origin's
//!   interface, which every job's bytes cross under `condorio` and
//!   `nonsharedfs`, fitted under each data configuration ([`Staging`]);
//! - per-level and per-job latencies (`negotiator_interval`,
//!   `postscript_overhead`) are taken with two or more traces when no rate
//!   is (WMS-bound runs, whose levels and jobs they separate), and one a
//!   trace beyond the first two when one is.

use std::fmt::Write as _;

use super::knob::{Knob, show_rate};
use super::staging::Staging;
use super::trace::Trace;
use crate::config::Scenario;

/// Bytes per second over a run that moving data must reach to show in its
/// makespan.
pub const SHOWS: f64 = 10e6;

/// Bytes per job must differ this much between two traces for a rate to
/// be told from the serial start rate.
const APART: f64 = 1.5;

/// The knobs chosen and why.
#[derive(Debug, Clone)]
pub struct Choice {
    /// The continuous knobs.
    pub knobs: Vec<Knob>,
    /// The data configurations to fit (empty: the testbed's own path).
    pub staging: Vec<Staging>,
    /// Why, a line each.
    pub reasons: Vec<String>,
}

/// Every job's input and output bytes, as HTCondor's file transfer moves
/// them (a private copy per job).
fn job_bytes(s: &Scenario) -> f64 {
    let wf = &s.workflow;
    wf.jobs
        .iter()
        .flat_map(|j| j.inputs.iter().chain(&j.outputs))
        .map(|&f| wf.files[f].size as f64)
        .sum()
}

/// The knobs `fit_on` (traces with their testbeds) can tell apart.
pub fn choose(fit_on: &[(Trace, Scenario)]) -> Choice {
    let mut reasons = vec![
        "job_start_delay: the schedd's serial start rate, charged per job; every trace has jobs"
            .to_string(),
    ];
    let mut knobs = vec![Knob::JobStartDelay];
    let evidence: Vec<(&str, f64, f64, usize)> = fit_on
        .iter()
        .map(|(t, s)| {
            (
                t.name.as_str(),
                job_bytes(s),
                t.makespan,
                s.workflow.jobs.len().max(1),
            )
        })
        .collect();
    let busiest = evidence
        .iter()
        .max_by(|a, b| (a.1 / a.2).total_cmp(&(b.1 / b.2)));
    let per_job: Vec<f64> = evidence.iter().map(|e| e.1 / e.3 as f64).collect();
    let lo = per_job.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = per_job.iter().copied().fold(0.0, f64::max);
    let mut staging = Vec::new();
    let data = match busiest {
        Some(&(name, bytes, makespan, _)) if bytes / makespan >= SHOWS => {
            let shown = format!(
                "{name} moves {:.1} GB in {makespan:.0} s ({} over the run)",
                bytes / 1e9,
                show_rate(bytes / makespan)
            );
            if fit_on.len() < 2 {
                reasons.push(format!(
                    "no rate: {shown}, but one makespan cannot tell bytes from jobs; \
                     give a second trace with other bytes per job"
                ));
                false
            } else if hi < APART * lo {
                reasons.push(format!(
                    "no rate: {shown}, but the traces' bytes per job differ only {:.2}× \
                     ({} to {}): bytes grow with jobs, and the start rate explains the same growth",
                    hi / lo.max(1.0),
                    crate::units::human_bytes(lo),
                    crate::units::human_bytes(hi)
                ));
                false
            } else {
                true
            }
            .then(|| {
                let origin = fit_on[0].1.sites[fit_on[0].1.origin].info.name.clone();
                reasons.push(format!(
                    "{origin}.bandwidth and staging: {shown}, and the traces' bytes per job \
                     differ {:.1}× ({} to {}); `{origin}` is the origin, whose interface every \
                     job's bytes cross unless the machines share a file system",
                    hi / lo.max(1.0),
                    crate::units::human_bytes(lo),
                    crate::units::human_bytes(hi)
                ));
                knobs.push(Knob::Bandwidth(origin));
                staging = Staging::ALL.to_vec();
            })
            .is_some()
        }
        Some(&(name, bytes, makespan, _)) => {
            reasons.push(format!(
                "no rate: the busiest trace, {name}, moves {} over its run, under {}: \
                 moving data cannot show in these makespans",
                show_rate(bytes / makespan),
                show_rate(SHOWS)
            ));
            false
        }
        None => false,
    };
    let wms_extra = [Knob::NegotiatorInterval, Knob::PostscriptOverhead];
    let extra = match (data, fit_on.len()) {
        (_, 0 | 1) => 0,
        (false, _) => 2,
        (true, n) => (n - 2).min(2),
    };
    if extra > 0 {
        let mut line = String::new();
        for k in &wms_extra[..extra] {
            let _ = write!(
                line,
                "{}{}",
                if line.is_empty() { "" } else { ", " },
                k.name()
            );
        }
        reasons.push(format!(
            "{line}: per-level and per-job latencies, with {} traces{}",
            fit_on.len(),
            if data {
                " (one a trace beyond the first two)"
            } else {
                ""
            }
        ));
        knobs.extend_from_slice(&wms_extra[..extra]);
    }
    Choice {
        knobs,
        staging,
        reasons,
    }
}
