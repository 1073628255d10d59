//! Which knob set predicts, and how sure a prediction is: leave-one-trace-out
//! cross-validation of each candidate ([`super::Candidate`]) and the
//! intervals made from its left-out errors.
//!
//! The knob set that fits the given runs best is not the one that predicts
//! best: more knobs always fit at least as well, and a knob the runs
//! cannot pin down lands anywhere in its range. So each candidate is fitted
//! on all traces but one, and predicts the one left out, over every trace;
//! the least root mean square of those errors wins. A left-out fit starts
//! from the candidate's fit on all traces and searches near it (one trace
//! fewer moves the least cost a little, not to another basin); the points
//! the left-out fits visit are simulated once for all of them. With
//! Newton's method (many traces) a left-out fit is one Gauss–Newton step
//! from the fit on all, and cross-validation costs a few simulations a
//! trace. For least squares a trace's left-out error is never less than
//! its in-sample one, so a candidate whose in-sample error already exceeds the best
//! cross-validated error found is not cross-validated: it cannot win.
//!
//! A prediction's interval is a Student-t prediction interval of the
//! left-out errors as log ratios, `ln(predicted / recorded)`: their mean
//! (the fit's bias on runs it has not seen) and spread, with `n − 1`
//! degrees of freedom, for a new run `√(1 + 1/n)` times the spread. Its
//! coverage is checked the same way: each trace's left-out prediction
//! against the interval made from the other traces' left-out errors.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::fit::{Candidate, CandidateFit, predict_all, predict_each, rms};
use super::search::{Method, Space, gauss_newton, normal};
use super::trace::{Prediction, Trace, TraceError};
use crate::config::Scenario;

/// Traces cross-validation needs: two to fit, one to leave out, and two
/// left-out errors besides each one to check its interval against.
pub const LEAST_TRACES: usize = 3;

/// The level of the intervals by default.
pub const LEVEL: f64 = 0.8;

/// A trace predicted by a fit on the others.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LeftOut {
    /// The trace's name.
    pub trace: String,
    /// Recorded makespan (s).
    pub recorded: f64,
    /// Predicted by the fit on the other traces (s).
    pub predicted: f64,
    /// `(predicted − recorded) / recorded`.
    pub error: f64,
    /// The interval made from the other traces' left-out errors (s).
    pub interval: Option<[f64; 2]>,
}

impl From<Prediction> for LeftOut {
    /// A trace's prediction by the fit on the others; its interval comes
    /// later, from the other traces' left-out errors.
    fn from(p: Prediction) -> LeftOut {
        LeftOut {
            trace: p.trace,
            recorded: p.recorded,
            predicted: p.predicted,
            error: p.error,
            interval: None,
        }
    }
}

impl LeftOut {
    /// Whether the recorded makespan is within its interval.
    pub fn covered(&self) -> Option<bool> {
        self.interval
            .map(|[lo, hi]| lo <= self.recorded && self.recorded <= hi)
    }
}

/// A candidate's leave-one-trace-out predictions.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CrossValidated {
    /// Each trace predicted by the fit on the others.
    pub left_out: Vec<LeftOut>,
    /// Root mean square of their relative errors.
    pub rms_error: f64,
    /// Mean of their absolute relative errors.
    pub mean_abs_error: f64,
    /// Simulations the left-out fits ran.
    pub simulations: usize,
    /// How the left-out fits were made.
    pub method: Method,
}

/// How predictions' intervals are made, and how often they held.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Interval {
    /// The level (0.8: an 80% interval).
    pub level: f64,
    /// Left-out errors it is made from.
    pub traces: usize,
    /// Mean of `ln(predicted / recorded)` over them: the fit's bias.
    pub bias: f64,
    /// Their standard deviation.
    pub spread: f64,
    /// Half its width in log ratio: `t · spread · √(1 + 1/n)`.
    pub half_width: f64,
    /// Traces whose recorded makespan fell within the interval made from
    /// the other traces' left-out errors.
    pub covered: usize,
}

impl Interval {
    /// The interval of `cv`'s left-out errors at `level`; fills in each
    /// left-out trace's own interval (from the others) to count coverage.
    pub fn of(cv: &mut CrossValidated, level: f64) -> Interval {
        let logs: Vec<f64> = cv.left_out.iter().map(|l| log_ratio(l.error)).collect();
        for (k, l) in cv.left_out.iter_mut().enumerate() {
            let others: Vec<f64> = logs
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != k)
                .map(|(_, v)| *v)
                .collect();
            l.interval = spread_of(&others, level).map(|(m, h)| around(l.predicted, m, h));
        }
        let (bias, half_width) = spread_of(&logs, level).unwrap_or((0.0, f64::INFINITY));
        Interval {
            level,
            traces: logs.len(),
            bias,
            spread: sd(&logs),
            half_width,
            covered: cv
                .left_out
                .iter()
                .filter(|l| l.covered() == Some(true))
                .count(),
        }
    }

    /// The interval of a recorded makespan for a prediction `predicted`.
    pub fn around(&self, predicted: f64) -> [f64; 2] {
        around(predicted, self.bias, self.half_width)
    }
}

/// `ln(predicted / recorded)` of a relative error.
fn log_ratio(error: f64) -> f64 {
    (1.0 + error).max(1e-9).ln()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn sd(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
}

/// The bias and half-width (log ratio) of a prediction interval at
/// `level` from left-out log ratios `logs`; none from fewer than two.
fn spread_of(logs: &[f64], level: f64) -> Option<(f64, f64)> {
    let n = logs.len();
    if n < 2 {
        return None;
    }
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .ok()?
        .inverse_cdf(0.5 + level / 2.0);
    Some((mean(logs), t * sd(logs) * (1.0 + 1.0 / n as f64).sqrt()))
}

/// The recorded makespans a prediction allows: `predicted / e^{bias ± half}`.
fn around(predicted: f64, bias: f64, half: f64) -> [f64; 2] {
    [
        predicted * (-(bias + half)).exp(),
        predicted * (-(bias - half)).exp(),
    ]
}

/// Cross-validates `fits` (of `candidates`, fitted on all of `fit_on` at
/// `points`), the least in-sample error first, and returns the index of
/// the one with the least cross-validated rms error and why.
pub(super) fn validate(
    fit_on: &[(Trace, Scenario)],
    candidates: &[Candidate],
    points: &[Vec<f64>],
    fits: &mut [CandidateFit],
    method: Method,
    evaluations: &AtomicUsize,
) -> Result<(usize, String), TraceError> {
    let mut order: Vec<usize> = (0..fits.len()).collect();
    order.sort_by(|&a, &b| fits[a].rms_error.total_cmp(&fits[b].rms_error));
    let mut best: Option<(usize, f64)> = None;
    for i in order {
        if let Some((b, cv)) = best
            && fits[i].rms_error >= cv
        {
            fits[i].not_cross_validated = Some(format!(
                "in-sample {:.1}% already above {}'s cross-validated {:.1}%",
                100.0 * fits[i].rms_error,
                fits[b].name,
                100.0 * cv
            ));
            continue;
        }
        let c = &candidates[i];
        // The same knobs at the same values (a configuration that gives
        // another's data path here) predict alike.
        let twin = (0..fits.len()).find(|&j| {
            fits[j].cross_validated.is_some()
                && points[j] == points[i]
                && candidates[j].knobs == c.knobs
                && fits[j].errors == fits[i].errors
        });
        let cv = match twin {
            Some(j) => fits[j].cross_validated.clone(),
            None => Some(match method {
                Method::Simplex => leave_each_out(fit_on, c, &points[i], evaluations)?,
                Method::Newton => leave_each_out_linear(fit_on, c, &points[i], evaluations)?,
            }),
        };
        let rms = cv.as_ref().map_or(f64::INFINITY, |cv| cv.rms_error);
        fits[i].cross_validated = cv;
        if best.is_none_or(|(_, b)| rms < b) {
            best = Some((i, rms));
        }
    }
    let (b, cv) = best.unwrap_or((0, f64::NAN));
    let tried = fits.iter().filter(|f| f.cross_validated.is_some()).count();
    Ok((
        b,
        format!(
            "the least cross-validated rms error, {:.1}%, of {tried} candidate(s) \
             cross-validated (of {}), each of the {} traces left out in turn{}",
            100.0 * cv,
            fits.len(),
            fit_on.len(),
            match method {
                Method::Simplex => "",
                Method::Newton => " (left-out fits linearised at the fit on all)",
            }
        ),
    ))
}

/// Each trace of `fit_on` predicted by `c` fitted on the others, from
/// `point` (its fit on all). Every left-out fit starts from the same
/// point with the same first simplex, and most walk the same way for a
/// while, so each point visited is simulated once for every trace and its
/// predictions kept: a left-out fit's cost there is their sum without the
/// trace left out, and that trace's prediction at the end is already made.
fn leave_each_out(
    fit_on: &[(Trace, Scenario)],
    c: &Candidate,
    point: &[f64],
    evaluations: &AtomicUsize,
) -> Result<CrossValidated, TraceError> {
    let (before, started) = (evaluations.load(Ordering::Relaxed), Instant::now());
    let space = Space::of(&c.knobs);
    let start: Vec<f64> = point.iter().map(|v| v.ln()).collect();
    let key = |y: &[f64]| -> Vec<u64> { y.iter().map(|v| v.to_bits()).collect() };
    let mut seen: HashMap<Vec<u64>, Vec<Prediction>> = HashMap::new();
    let mut at = |y: &[f64]| -> Result<Vec<Prediction>, TraceError> {
        if let Some(ps) = seen.get(&key(y)) {
            return Ok(ps.clone());
        }
        let ps = predict_all(fit_on, &c.knobs, y, c.staging, evaluations)?;
        seen.insert(key(y), ps.clone());
        Ok(ps)
    };
    let mut left_out = Vec::with_capacity(fit_on.len());
    for k in 0..fit_on.len() {
        let y = if c.knobs.is_empty() {
            Vec::new()
        } else {
            let mut cost = |y: &[f64], _bound: f64| -> Result<f64, TraceError> {
                Ok(at(y)?
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| i != k)
                    .map(|(_, p)| p.cost())
                    .sum())
            };
            space.nudge(start.clone(), &mut cost)?
        };
        let p = at(&y)?.swap_remove(k);
        left_out.push(LeftOut::from(p));
    }
    tracing::info!(
        "left each out for {}: {} simulations at {} points in {:.1} s",
        c.name,
        evaluations.load(Ordering::Relaxed) - before,
        seen.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(CrossValidated::of(
        left_out,
        evaluations.load(Ordering::Relaxed) - before,
        Method::Simplex,
    ))
}

impl CrossValidated {
    fn of(left_out: Vec<LeftOut>, simulations: usize, method: Method) -> CrossValidated {
        let errors: Vec<f64> = left_out.iter().map(|l| l.error).collect();
        CrossValidated {
            rms_error: rms(&errors),
            mean_abs_error: mean(&errors.iter().map(|e| e.abs()).collect::<Vec<_>>()),
            left_out,
            simulations,
            method,
        }
    }
}

/// [`leave_each_out`] with each left-out fit linearised at `point`: every
/// trace's errors and their slopes along each knob ([`Space::slopes`]) make
/// the normal equations of the fit on all; a left-out fit is where
/// Gauss–Newton moves when one trace's share is taken out, less where it
/// moves with none taken out (the fit on all is the least cost found,
/// whatever the linear model says), at most two grid steps along a knob.
/// Each trace is then simulated once at its own left-out fit.
fn leave_each_out_linear(
    fit_on: &[(Trace, Scenario)],
    c: &Candidate,
    point: &[f64],
    evaluations: &AtomicUsize,
) -> Result<CrossValidated, TraceError> {
    let (before, started) = (evaluations.load(Ordering::Relaxed), Instant::now());
    let space = Space::of(&c.knobs);
    let y0: Vec<f64> = point.iter().map(|v| v.ln()).collect();
    let mut errors = |y: &[f64]| -> Result<Vec<[f64; 2]>, TraceError> {
        let ps = predict_all(fit_on, &c.knobs, y, c.staging, evaluations)?;
        Ok(ps.iter().map(Prediction::errors).collect())
    };
    let here = errors(&y0)?;
    let slopes = space.slopes(&y0, &mut errors)?;
    let damping = 1e-3;
    let (a, g) = normal(&slopes, &here, None);
    let full = gauss_newton(&a, &g, damping);
    let limit: Vec<f64> = space.steps().iter().map(|s| 2.0 * s).collect();
    let points: Vec<Vec<f64>> = (0..fit_on.len())
        .map(|k| {
            let (a, g) = normal(&slopes, &here, Some(k));
            let shift: Vec<f64> = gauss_newton(&a, &g, damping)
                .iter()
                .zip(&full)
                .map(|(s, f)| s - f)
                .collect();
            let over = shift
                .iter()
                .zip(&limit)
                .map(|(s, l)| s.abs() / l)
                .fold(1.0, f64::max);
            let mut y: Vec<f64> = y0.iter().zip(&shift).map(|(v, s)| v + s / over).collect();
            space.clamp(&mut y);
            y
        })
        .collect();
    let ps = predict_each(fit_on, &c.knobs, &|i| &points[i], c.staging, evaluations)?;
    let left_out = ps.into_iter().map(LeftOut::from).collect();
    tracing::info!(
        "left each out (linearised) for {}: {} simulations in {:.1} s",
        c.name,
        evaluations.load(Ordering::Relaxed) - before,
        started.elapsed().as_secs_f64()
    );
    Ok(CrossValidated::of(
        left_out,
        evaluations.load(Ordering::Relaxed) - before,
        Method::Newton,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn left(errors: &[f64]) -> CrossValidated {
        CrossValidated {
            left_out: errors
                .iter()
                .enumerate()
                .map(|(i, e)| LeftOut {
                    trace: format!("t{i}"),
                    recorded: 100.0,
                    predicted: 100.0 * (1.0 + e),
                    error: *e,
                    interval: None,
                })
                .collect(),
            rms_error: rms(errors),
            mean_abs_error: 0.0,
            simulations: 0,
            method: Method::Simplex,
        }
    }

    /// The t quantiles of a table (two-sided 80%: 1.886 at 2 degrees of
    /// freedom, 1.383 at 9) give the half-widths.
    #[test]
    fn an_interval_is_a_student_t_prediction_interval_of_the_log_ratios() {
        let logs = [0.1_f64, -0.1, 0.0];
        let errors: Vec<f64> = logs.iter().map(|l| l.exp() - 1.0).collect();
        let mut cv = left(&errors);
        let i = Interval::of(&mut cv, 0.8);
        assert!(i.bias.abs() < 1e-12);
        assert!((i.spread - 0.1).abs() < 1e-12);
        let expect = 1.886 * 0.1 * (1.0_f64 + 1.0 / 3.0).sqrt();
        assert!((i.half_width - expect).abs() < 1e-3, "{i:?}");
        let [lo, hi] = i.around(1000.0);
        assert!(
            (lo - 1000.0 * (-expect).exp()).abs() < 1.0 && (hi - 1000.0 * expect.exp()).abs() < 1.0
        );
        // Each trace's own interval is from the other two (1 degree of
        // freedom, t = 3.078): t0 (log 0.1) against the mean −0.05 and
        // spread 0.0707 of the others: 0.15 ≤ 3.078·0.0707·√1.5 = 0.266.
        assert_eq!(cv.left_out[0].covered(), Some(true));
        assert_eq!(i.covered, 3);
        let ten: Vec<f64> = (0..10).map(|k| (k as f64 - 4.5) / 45.0).collect();
        let i = Interval::of(&mut left(&ten), 0.8);
        let expect = 1.383 * sd(&ten.iter().map(|e| log_ratio(*e)).collect::<Vec<_>>());
        assert!(
            (i.half_width / (1.1_f64).sqrt() - expect).abs() < 1e-3,
            "{i:?}"
        );
    }

    /// Left-out log ratios drawn normal (any bias, any spread, 3 to 12
    /// of them): the interval holds a new run's at its level, 4,000 draws
    /// a level (the t prediction interval is exact there: a binomial
    /// spread of 0.6 points, checked to 2.5), and each trace's own
    /// interval from the others holds it as often.
    #[test]
    fn intervals_hold_at_their_level_on_normal_draws() {
        use rand::{Rng, SeedableRng};
        use rand_distr::{Distribution, Normal};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(63);
        for level in [0.5, 0.8, 0.95] {
            let trials = 4000;
            let (mut held, mut left_held, mut left_all) = (0, 0, 0);
            for _ in 0..trials {
                let n = rng.random_range(3..=12);
                let bias: f64 = rng.random_range(-0.3..0.3);
                let spread: f64 = rng.random_range(0.01..0.3);
                let normal = Normal::new(bias, spread).unwrap();
                let errors: Vec<f64> = (0..n)
                    .map(|_| normal.sample(&mut rng).exp() - 1.0)
                    .collect();
                let mut cv = left(&errors);
                let i = Interval::of(&mut cv, level);
                let predicted = 1000.0;
                let recorded = predicted / normal.sample(&mut rng).exp();
                let [lo, hi] = i.around(predicted);
                held += usize::from(lo <= recorded && recorded <= hi);
                left_held += i.covered;
                left_all += n;
            }
            let rate = held as f64 / trials as f64;
            assert!((rate - level).abs() < 0.025, "{level}: {rate}");
            let rate = left_held as f64 / left_all as f64;
            assert!(
                (rate - level).abs() < 0.025,
                "{level}: leave-one-out {rate}"
            );
        }
    }

    #[test]
    fn a_trace_far_from_the_others_is_not_covered() {
        let mut cv = left(&[0.01, -0.01, 0.02, 0.0, 0.5]);
        let i = Interval::of(&mut cv, 0.8);
        assert_eq!(cv.left_out[4].covered(), Some(false));
        assert_eq!(i.covered, 4, "{cv:?}");
        // With fewer than two errors beside it, a trace has no interval.
        let mut two = left(&[0.1, 0.2]);
        Interval::of(&mut two, 0.8);
        assert_eq!(two.left_out[0].interval, None);
    }
}
