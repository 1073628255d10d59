//! The knobs a set of traces can tell apart: what `gridbed calibrate` fits
//! when `--fit` does not say. A makespan is one number per trace, so the
//! fit takes a knob only where the traces differ along what it charges:
//!
//! - the schedd's serial start rate (`job_start_delay`) charges jobs, and
//!   every trace has them;
//! - a rate charges bytes: it is taken only where some trace moves enough
//!   bytes over its run to show in its makespan (at least [`SHOWS`] over
//!   the whole run, 8% of a 1 Gbit/s interface), and where the bytes it
//!   charges per job differ between the traces (else they grow with jobs
//!   and the start rate explains the same growth). Where the traces record
//!   the machine of every job, the replay keeps that placement and the
//!   first rate is the machines' interface (each is charged what its own
//!   jobs moved; HTCondor fills one machine before the next), the second,
//!   with a third trace, the origin's; else it is the origin's interface,
//!   which every job's bytes cross under `condorio` and `nonsharedfs`.
//!   Each data configuration ([`Staging`]) is fitted;
//! - per-level and per-job latencies (`negotiator_interval`,
//!   `postscript_overhead`) are taken with two or more traces when no rate
//!   is (WMS-bound runs, whose levels and jobs they separate), and where
//!   one is, while the knobs are fewer than the traces.
//!
//! With three traces or more that choice is only one of the candidates:
//! the start rate alone, with the per-level and per-job latencies, and,
//! where some trace moves enough bytes to show, with one or two rates and
//! the latencies under each data configuration; where the traces' files
//! per job differ 1.5×, with a cost per file the origin sends
//! (`SITE.latency`); cross-validation ([`super::cross`]) picks the one
//! that predicts left-out traces best.

use std::fmt::Write as _;

use super::cross::LEAST_TRACES;
use super::fit::Candidate;
use super::knob::{Knob, show_rate};
use super::staging::Staging;
use super::trace::{Trace, replay};
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
    /// The knob sets to fit and compare: with fewer than three traces,
    /// the knobs above under each data configuration; with more, a ladder
    /// of knob sets cross-validation chooses from.
    pub candidates: Vec<Candidate>,
}

/// What one trace shows of its data: every job's input and output bytes,
/// as HTCondor's file transfer moves them (a private copy per job), and,
/// when the trace records where each job ran, the most any one machine
/// received and sent.
struct Evidence<'a> {
    name: &'a str,
    makespan: f64,
    jobs: f64,
    bytes: f64,
    /// Files read and written, a copy per job.
    files: f64,
    busiest: Option<f64>,
}

impl<'a> Evidence<'a> {
    fn of(trace: &'a Trace, s: &Scenario) -> Evidence<'a> {
        let wf = &s.workflow;
        let mut per_machine = vec![0.0; trace.machines.len()];
        let mut bytes = 0.0;
        let mut files = 0.0;
        for j in &wf.jobs {
            files += (j.inputs.len() + j.outputs.len()) as f64;
            let b: f64 = j
                .inputs
                .iter()
                .chain(&j.outputs)
                .map(|&f| wf.files[f].size as f64)
                .sum();
            bytes += b;
            if let Some(m) = j
                .site
                .as_deref()
                .and_then(|n| trace.machines.iter().position(|m| m.name == n))
            {
                per_machine[m] += b;
            }
        }
        let all_placed = super::trace::placed(s, trace) == wf.jobs.len();
        Evidence {
            name: &trace.name,
            makespan: trace.makespan,
            jobs: wf.jobs.len().max(1) as f64,
            bytes,
            files,
            busiest: all_placed.then(|| per_machine.iter().copied().fold(0.0, f64::max)),
        }
    }
}

/// The knobs `fit_on` (traces with their testbeds) can tell apart.
pub fn choose(fit_on: &[(Trace, Scenario)]) -> Choice {
    let mut reasons = vec![
        "job_start_delay: the schedd's serial start rate, charged per job; every trace has jobs"
            .to_string(),
    ];
    let mut knobs = vec![Knob::JobStartDelay];
    let mut staging = Vec::new();
    let evidence: Vec<Evidence> = fit_on.iter().map(|(t, s)| Evidence::of(t, s)).collect();
    let placed = !evidence.is_empty() && evidence.iter().all(|e| e.busiest.is_some());
    // The end whose bytes the rate charges: the busiest machine's interface
    // where the traces say where every job ran, else the origin's.
    let charged = |e: &Evidence| {
        if placed {
            e.busiest.unwrap_or(0.0)
        } else {
            e.bytes
        }
    };
    let busiest = evidence
        .iter()
        .max_by(|a, b| (a.bytes / a.makespan).total_cmp(&(b.bytes / b.makespan)));
    let per_job: Vec<f64> = evidence.iter().map(|e| charged(e) / e.jobs).collect();
    let lo = per_job.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = per_job.iter().copied().fold(0.0, f64::max);
    let bytes = crate::units::human_bytes;
    let shows = busiest.is_some_and(|e| e.bytes / e.makespan >= SHOWS);
    let rates: Vec<Knob> = match fit_on.first() {
        Some((_, testbed)) => {
            let origin = testbed.sites[testbed.origin].info.name.clone();
            let machine = testbed
                .sites
                .iter()
                .find(|s| !s.storage)
                .map(|s| s.info.name.clone());
            match machine {
                Some(m) if placed => vec![Knob::Bandwidth(m), Knob::Bandwidth(origin)],
                _ => vec![Knob::Bandwidth(origin)],
            }
        }
        None => Vec::new(),
    };
    let data = match busiest {
        Some(e) if shows => {
            let shown = format!(
                "{} moves {:.1} GB in {:.0} s ({} over the run)",
                e.name,
                e.bytes / 1e9,
                e.makespan,
                show_rate(e.bytes / e.makespan)
            );
            let what = if placed {
                "the busiest machine's bytes"
            } else {
                "bytes"
            };
            if fit_on.len() < 2 {
                reasons.push(format!(
                    "no rate: {shown}, but one makespan cannot tell bytes from jobs; \
                     give a second trace with other bytes per job"
                ));
                false
            } else if hi < APART * lo {
                reasons.push(format!(
                    "no rate: {shown}, but {what} per job differ only {:.2}× between the \
                     traces ({} to {}): they grow with jobs, and the start rate explains the same growth",
                    hi / lo.max(1.0),
                    bytes(lo),
                    bytes(hi)
                ));
                false
            } else {
                let testbed = &fit_on[0].1;
                let origin = testbed.sites[testbed.origin].info.name.clone();
                let take = rates.len().min(fit_on.len() - 1);
                let names: Vec<String> = rates[..take].iter().map(Knob::name).collect();
                reasons.push(format!(
                    "{} and staging: {shown}, and {what} per job differ {:.1}× between the \
                     traces ({} to {}). {}",
                    names.join(", "),
                    hi / lo.max(1.0),
                    bytes(lo),
                    bytes(hi),
                    if placed {
                        format!(
                            "The traces record where every job ran, so each machine is charged \
                             what its own jobs moved, through its interface (the template \
                             `{}` stands for every machine){}",
                            rates[0].name().trim_end_matches(".bandwidth"),
                            if take > 1 {
                                format!("; `{origin}` is the origin, whose interface they all cross")
                            } else {
                                format!("; `{origin}`'s (the origin's) too with a third trace")
                            }
                        )
                    } else {
                        format!("`{origin}` is the origin, whose interface every job's bytes cross unless the machines share a file system")
                    }
                ));
                knobs.extend(rates.iter().take(take).cloned());
                staging = Staging::ALL.to_vec();
                true
            }
        }
        Some(e) => {
            reasons.push(format!(
                "no rate: the busiest trace, {}, moves {} over its run, under {}: \
                 moving data cannot show in these makespans",
                e.name,
                show_rate(e.bytes / e.makespan),
                show_rate(SHOWS)
            ));
            false
        }
        None => false,
    };
    let wms_extra = [Knob::NegotiatorInterval, Knob::PostscriptOverhead];
    let extra = if data {
        fit_on.len().saturating_sub(knobs.len()).min(2)
    } else if fit_on.len() >= 2 {
        2
    } else {
        0
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
                " (no more knobs than traces)"
            } else {
                ""
            }
        ));
        knobs.extend_from_slice(&wms_extra[..extra]);
    }
    let candidates = if fit_on.len() < LEAST_TRACES {
        Candidate::given(&knobs, &staging)
    } else {
        // A cost per file is told from one per job where the files per
        // job differ between the traces (many small files against few
        // large ones).
        let per_job: Vec<f64> = evidence.iter().map(|e| e.files / e.jobs).collect();
        let (flo, fhi) = per_job
            .iter()
            .fold((f64::INFINITY, 0.0_f64), |(l, h), v| (l.min(*v), h.max(*v)));
        let per_file = (fhi >= APART * flo.max(1e-9)).then(|| {
            let t = &fit_on[0].1;
            Knob::Latency(t.sites[t.origin].info.name.clone())
        });
        if per_file.is_some() {
            reasons.push(format!(
                "{}.latency: a cost per file the origin sends, as its files per job \
                 differ {:.1}× between the traces ({flo:.1} to {fhi:.1})",
                fit_on[0].1.sites[fit_on[0].1.origin].info.name,
                fhi / flo.max(1e-9)
            ));
        }
        let ladder = ladder(fit_on, if shows { &rates } else { &[] }, per_file);
        reasons.push(format!(
            "{} traces: {} candidate knob sets are cross-validated, each trace left out in \
             turn; the least left-out error wins{}",
            fit_on.len(),
            ladder.len(),
            if shows {
                ""
            } else {
                " (no rate: no trace moves enough bytes to show)"
            }
        ));
        ladder
    };
    Choice {
        knobs,
        staging,
        reasons,
        candidates,
    }
}

/// The candidates of three traces or more: the start rate, the WMS's three
/// knobs, and with `rates` (the machines' interface, then the origin's)
/// one or both of them with the start rate, and with the WMS's knobs too,
/// under each data configuration with a path of its own here; with
/// `per_file`, the start rate and every rate with it; never more knobs
/// than a left-out fit has traces.
fn ladder(fit_on: &[(Trace, Scenario)], rates: &[Knob], per_file: Option<Knob>) -> Vec<Candidate> {
    let wms = [Knob::NegotiatorInterval, Knob::PostscriptOverhead];
    let mut out = vec![
        Candidate {
            name: "start".into(),
            knobs: vec![Knob::JobStartDelay],
            staging: None,
        },
        Candidate {
            name: "start, wms".into(),
            knobs: [Knob::JobStartDelay]
                .into_iter()
                .chain(wms.clone())
                .collect(),
            staging: None,
        },
    ];
    let base = fit_on
        .first()
        .and_then(|(t, s)| replay(s.clone(), t, None).ok());
    let mut modes: Vec<Staging> = Vec::new();
    for m in Staging::ALL {
        let m = base.as_ref().map_or(m, |b| m.effective(b));
        if !modes.contains(&m) {
            modes.push(m);
        }
    }
    let short = |k: &Knob| k.name().trim_end_matches(".bandwidth").to_string();
    for mode in modes.iter().filter(|_| !rates.is_empty()) {
        for n in 1..=rates.len() {
            let taken: Vec<Knob> = rates[..n].to_vec();
            let names: Vec<String> = taken.iter().map(short).collect();
            out.push(Candidate {
                name: format!("start, {} ({})", names.join(", "), mode.name()),
                knobs: [Knob::JobStartDelay]
                    .into_iter()
                    .chain(taken.clone())
                    .collect(),
                staging: Some(*mode),
            });
            out.push(Candidate {
                name: format!("start, {}, wms ({})", names.join(", "), mode.name()),
                knobs: [Knob::JobStartDelay]
                    .into_iter()
                    .chain(taken)
                    .chain(wms.clone())
                    .collect(),
                staging: Some(*mode),
            });
        }
    }
    if let Some(f) = per_file {
        let name = f.name();
        out.push(Candidate {
            name: format!("start, {name}"),
            knobs: vec![Knob::JobStartDelay, f.clone()],
            staging: None,
        });
        for mode in modes.iter().filter(|_| !rates.is_empty()) {
            let names: Vec<String> = rates.iter().map(short).collect();
            out.push(Candidate {
                name: format!("start, {}, {name} ({})", names.join(", "), mode.name()),
                knobs: [Knob::JobStartDelay]
                    .into_iter()
                    .chain(rates.iter().cloned())
                    .chain([f.clone()])
                    .collect(),
                staging: Some(*mode),
            });
        }
    }
    out.retain(|c| c.knobs.len() < fit_on.len());
    out
}
