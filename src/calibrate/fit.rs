//! Least squares on makespan: the chosen knobs are fitted so that the sum of
//! squared relative makespan errors over the traces is least; a trace with
//! task times (an instance gridbed wrote, or any with `executedAt` per task)
//! adds the squared RMS of its task start/end differences, as a fraction of
//! its makespan. A makespan is a
//! step function of interval knobs (ticks), so the search takes no
//! derivatives: a log-spaced grid over each knob's range, then Nelder–Mead
//! in log space from the grid's best point.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::trace::{Prediction, Trace, TraceError, predict};
use crate::config::Scenario;
use crate::core::ManagerSettings;
use crate::core::wms::Latency;

/// A knob the fit may set, named after what it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Knob {
    /// `NEGOTIATOR_INTERVAL` (`[manager.wms] negotiator_interval`).
    NegotiatorInterval,
    /// `JOB_START_DELAY` with `JOB_START_COUNT = 1`.
    JobStartDelay,
    /// `DAGMAN_SUBMIT_DELAY` plus `condor_submit`'s own time.
    SubmitDelay,
    /// `DAGMAN_USER_LOG_SCAN_INTERVAL`.
    UserLogScanInterval,
    /// `[manager] postscript_overhead` (the POST script, `pegasus-exitcode`).
    PostscriptOverhead,
    /// `[manager] submit_overhead`.
    SubmitOverhead,
    /// `[manager] release_overhead`.
    ReleaseOverhead,
}

impl Knob {
    /// Every knob.
    pub const ALL: [Knob; 7] = [
        Knob::JobStartDelay,
        Knob::NegotiatorInterval,
        Knob::PostscriptOverhead,
        Knob::SubmitDelay,
        Knob::UserLogScanInterval,
        Knob::SubmitOverhead,
        Knob::ReleaseOverhead,
    ];

    /// Its name on the command line and in a testbed.
    pub fn name(self) -> &'static str {
        match self {
            Knob::NegotiatorInterval => "negotiator_interval",
            Knob::JobStartDelay => "job_start_delay",
            Knob::SubmitDelay => "dagman_submit_delay",
            Knob::UserLogScanInterval => "dagman_user_log_scan_interval",
            Knob::PostscriptOverhead => "postscript_overhead",
            Knob::SubmitOverhead => "submit_overhead",
            Knob::ReleaseOverhead => "release_overhead",
        }
    }

    /// The knob by name.
    pub fn from_name(name: &str) -> Option<Knob> {
        Knob::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The range searched (s).
    fn range(self) -> (f64, f64) {
        match self {
            Knob::NegotiatorInterval => (1.0, 900.0),
            Knob::UserLogScanInterval => (0.5, 60.0),
            Knob::JobStartDelay | Knob::SubmitDelay => (0.01, 60.0),
            Knob::PostscriptOverhead | Knob::SubmitOverhead | Knob::ReleaseOverhead => (0.1, 600.0),
        }
    }

    /// Its value in `m`.
    pub fn get(self, m: &ManagerSettings) -> f64 {
        match self {
            Knob::NegotiatorInterval => m.wms.negotiator_interval,
            Knob::JobStartDelay => m.wms.job_start_delay / m.wms.job_start_count as f64,
            Knob::SubmitDelay => m.wms.submit_delay,
            Knob::UserLogScanInterval => m.wms.user_log_scan_interval,
            Knob::PostscriptOverhead => m.postscript_overhead.mean(),
            Knob::SubmitOverhead => m.submit_overhead.mean(),
            Knob::ReleaseOverhead => m.release_overhead.mean(),
        }
    }

    /// Sets it in `m` (a latency becomes fixed at the value).
    pub fn set(self, m: &mut ManagerSettings, v: f64) {
        match self {
            Knob::NegotiatorInterval => m.wms.negotiator_interval = v,
            Knob::JobStartDelay => {
                m.wms.job_start_delay = v;
                m.wms.job_start_count = 1;
            }
            Knob::SubmitDelay => m.wms.submit_delay = v,
            Knob::UserLogScanInterval => m.wms.user_log_scan_interval = v,
            Knob::PostscriptOverhead => m.postscript_overhead = Latency::fixed(v),
            Knob::SubmitOverhead => m.submit_overhead = Latency::fixed(v),
            Knob::ReleaseOverhead => m.release_overhead = Latency::fixed(v),
        }
    }
}

/// The result of a calibration.
#[derive(Debug, Clone, Serialize)]
pub struct Fit {
    /// The fitted knobs and their values.
    pub knobs: Vec<(Knob, f64)>,
    /// The traces fitted on, with the fit's predictions.
    pub fitted: Vec<Prediction>,
    /// The traces predicted (not fitted on).
    pub predicted: Vec<Prediction>,
    /// Root mean square of the fitted traces' relative errors.
    pub rms_error: f64,
    /// Simulations run.
    pub evaluations: usize,
    /// Wall time of the fit.
    #[serde(skip)]
    pub wall: Duration,
    /// The settings with the fitted values.
    #[serde(skip)]
    pub settings: ManagerSettings,
}

/// One trace's scenario with the knobs set to `x`; its cost.
fn cost_at(
    trace: &Trace,
    scenario: &Scenario,
    knobs: &[Knob],
    x: &[f64],
) -> Result<f64, TraceError> {
    let mut s = scenario.clone();
    for (k, v) in knobs.iter().zip(x) {
        k.set(&mut s.manager, *v);
    }
    Ok(predict(trace, &s)?.cost())
}

/// Fits `knobs` to the makespans of `fit_on`, then predicts `predict_only`
/// with the result. Each scenario keeps its testbed's other settings.
pub fn calibrate(
    fit_on: &[(Trace, Scenario)],
    knobs: &[Knob],
    predict_only: &[(Trace, Scenario)],
) -> Result<Fit, TraceError> {
    let started = Instant::now();
    let mut evaluations = 0usize;
    let mut cost = |y: &[f64]| -> Result<f64, TraceError> {
        let x: Vec<f64> = y.iter().map(|v| v.exp()).collect();
        let mut sum = 0.0;
        for (t, s) in fit_on {
            evaluations += 1;
            sum += cost_at(t, s, knobs, &x)?;
        }
        Ok(sum)
    };
    let y = if knobs.is_empty() {
        Vec::new()
    } else {
        search(knobs, &mut cost)?
    };
    let values: Vec<f64> = y.iter().map(|v| v.exp()).collect();
    let apply = |s: &Scenario| {
        let mut s = s.clone();
        for (k, v) in knobs.iter().zip(&values) {
            k.set(&mut s.manager, *v);
        }
        s
    };
    let fitted = fit_on
        .iter()
        .map(|(t, s)| predict(t, &apply(s)))
        .collect::<Result<Vec<_>, _>>()?;
    let predicted = predict_only
        .iter()
        .map(|(t, s)| predict(t, &apply(s)))
        .collect::<Result<Vec<_>, _>>()?;
    let rms_error =
        (fitted.iter().map(|p| p.error.powi(2)).sum::<f64>() / fitted.len().max(1) as f64).sqrt();
    let settings = fit_on
        .first()
        .map(|(_, s)| apply(s).manager)
        .unwrap_or_default();
    Ok(Fit {
        knobs: knobs.iter().copied().zip(values).collect(),
        fitted,
        predicted,
        rms_error,
        evaluations: evaluations + fit_on.len() + predict_only.len(),
        wall: started.elapsed(),
        settings,
    })
}

/// The grid, then Nelder–Mead, in log space; returns the best point.
fn search(
    knobs: &[Knob],
    cost: &mut impl FnMut(&[f64]) -> Result<f64, TraceError>,
) -> Result<Vec<f64>, TraceError> {
    let d = knobs.len();
    let per_axis = match d {
        1 => 32,
        2 => 16,
        3 => 7,
        _ => 4,
    };
    let ranges: Vec<(f64, f64)> = knobs
        .iter()
        .map(|k| {
            let (lo, hi) = k.range();
            (lo.ln(), hi.ln())
        })
        .collect();
    let step: Vec<f64> = ranges
        .iter()
        .map(|(lo, hi)| (hi - lo) / (per_axis - 1) as f64)
        .collect();
    let mut grid: Vec<(f64, Vec<f64>)> = Vec::new();
    let mut index = vec![0usize; d];
    loop {
        let y: Vec<f64> = (0..d)
            .map(|i| ranges[i].0 + step[i] * index[i] as f64)
            .collect();
        grid.push((cost(&y)?, y));
        // Next grid point (odometer order).
        let mut i = 0;
        while i < d {
            index[i] += 1;
            if index[i] < per_axis {
                break;
            }
            index[i] = 0;
            i += 1;
        }
        if i == d {
            break;
        }
    }
    let clamp = |y: &mut Vec<f64>| {
        for (v, (lo, hi)) in y.iter_mut().zip(&ranges) {
            *v = v.clamp(*lo, *hi);
        }
    };
    // Nelder–Mead from each of the grid's three best points (a makespan's
    // landscape has many shallow basins); the best end wins.
    grid.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut best = grid[0].clone();
    for start in grid.into_iter().take(3) {
        let end = nelder_mead(start, &step, &clamp, cost)?;
        if end.0 < best.0 {
            best = end;
        }
    }
    Ok(best.1)
}

/// Nelder–Mead from `best`, a first simplex of half a grid step per axis.
fn nelder_mead(
    best: (f64, Vec<f64>),
    step: &[f64],
    clamp: &impl Fn(&mut Vec<f64>),
    cost: &mut impl FnMut(&[f64]) -> Result<f64, TraceError>,
) -> Result<(f64, Vec<f64>), TraceError> {
    let d = step.len();
    let mut simplex: Vec<(f64, Vec<f64>)> = vec![best.clone()];
    for i in 0..d {
        let mut y = best.1.clone();
        y[i] += step[i] / 2.0;
        clamp(&mut y);
        let c = cost(&y)?;
        simplex.push((c, y));
    }
    for _ in 0..40 * d {
        simplex.sort_by(|a, b| a.0.total_cmp(&b.0));
        let worst = simplex[d].clone();
        let centroid: Vec<f64> = (0..d)
            .map(|i| simplex[..d].iter().map(|p| p.1[i]).sum::<f64>() / d as f64)
            .collect();
        let towards = |t: f64| -> Vec<f64> {
            centroid
                .iter()
                .zip(&worst.1)
                .map(|(c, w)| c + t * (c - w))
                .collect()
        };
        let mut r = towards(1.0);
        clamp(&mut r);
        let cr = cost(&r)?;
        if cr < simplex[0].0 {
            let mut e = towards(2.0);
            clamp(&mut e);
            let ce = cost(&e)?;
            simplex[d] = if ce < cr { (ce, e) } else { (cr, r) };
        } else if cr < simplex[d - 1].0 {
            simplex[d] = (cr, r);
        } else {
            let mut c = towards(-0.5);
            clamp(&mut c);
            let cc = cost(&c)?;
            if cc < worst.0 {
                simplex[d] = (cc, c);
            } else {
                // Shrink towards the best.
                let b = simplex[0].1.clone();
                for p in simplex.iter_mut().skip(1) {
                    let y: Vec<f64> = p.1.iter().zip(&b).map(|(v, b)| b + (v - b) / 2.0).collect();
                    *p = (cost(&y)?, y);
                }
            }
        }
        let spread = simplex
            .iter()
            .map(|p| p.0)
            .fold(f64::NEG_INFINITY, f64::max)
            - simplex.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
        if spread < 1e-9 {
            break;
        }
    }
    simplex.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(simplex.swap_remove(0))
}

/// A latency as a testbed writes it.
fn latency_toml(l: &Latency) -> String {
    match *l {
        Latency::Fixed { value } => format!("{value}"),
        Latency::Uniform { min, max } => {
            format!("{{ dist = \"uniform\", min = {min}, max = {max} }}")
        }
        Latency::Exponential { mean } => format!("{{ dist = \"exponential\", mean = {mean} }}"),
        Latency::Lognormal { mean, sd } => {
            format!("{{ dist = \"lognormal\", mean = {mean}, sd = {sd} }}")
        }
    }
}

/// The fitted settings as the testbed tables that set them: the whole
/// `[manager]` table (the testbed's values, the fitted ones in place) and
/// `[manager.wms]` with every stage's knob, to replace the testbed's own.
pub fn fitted_table(fit: &Fit) -> String {
    use std::fmt::Write as _;
    let m = &fit.settings;
    let mut out = String::from("# Fitted by gridbed calibrate on ");
    let names: Vec<&str> = fit.fitted.iter().map(|p| p.trace.as_str()).collect();
    let _ = writeln!(
        out,
        "{} (rms error {:.1}%)",
        names.join(", "),
        100.0 * fit.rms_error
    );
    let fitted: Vec<&str> = fit.knobs.iter().map(|(k, _)| k.name()).collect();
    let _ = writeln!(out, "# fitted: {}", fitted.join(", "));
    out.push_str("[manager]\n");
    let _ = writeln!(out, "maxpre = {}", m.maxpre);
    let _ = writeln!(out, "prescript_interval = {}", m.prescript_interval);
    let _ = writeln!(out, "prescript_streams = {}", m.prescript_streams);
    let _ = writeln!(out, "max_retries = {}", m.max_retries);
    let _ = writeln!(out, "transfer_retries = {}", m.transfer_retries);
    let _ = writeln!(out, "transfer_backoff = {}", m.transfer_backoff);
    let _ = writeln!(out, "replan_backoff = {}", m.replan_backoff);
    let _ = writeln!(out, "max_replans = {}", m.max_replans);
    if m.monit_interval > 0.0 {
        let _ = writeln!(out, "monit_interval = {}", m.monit_interval);
        let _ = writeln!(out, "max_idle = {}", m.max_idle);
    }
    let _ = writeln!(
        out,
        "release_overhead = {}",
        latency_toml(&m.release_overhead)
    );
    let _ = writeln!(
        out,
        "submit_overhead = {}",
        latency_toml(&m.submit_overhead)
    );
    for (name, l) in [
        ("postscript_overhead", &m.postscript_overhead),
        ("script_time", &m.script_time),
    ] {
        let _ = writeln!(out, "{name} = {}", latency_toml(l));
    }
    let _ = writeln!(out, "cleanup = {}", m.cleanup);
    let _ = writeln!(out, "reproduce_lost = {}", m.reproduce_lost);
    out.push_str("\n[manager.wms]\nmodel = \"ideal\"            # every stage below, as fitted\n");
    let w = &m.wms;
    let _ = writeln!(
        out,
        "dagman_user_log_scan_interval = {}",
        w.user_log_scan_interval
    );
    let _ = writeln!(
        out,
        "dagman_max_submits_per_interval = {}",
        w.max_submits_per_interval
    );
    let _ = writeln!(out, "dagman_submit_delay = {}", w.submit_delay);
    let _ = writeln!(out, "negotiator_interval = {}", w.negotiator_interval);
    let _ = writeln!(out, "claim_worklife = {}", w.claim_worklife);
    let _ = writeln!(out, "job_start_delay = {}", w.job_start_delay);
    let _ = writeln!(out, "job_start_count = {}", w.job_start_count);
    out
}
