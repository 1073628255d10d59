//! What one or two traces cannot pin down: each knob's range of values
//! that still fit them, and the predictions' spread over those values.
//!
//! With fewer than three traces nothing can be left out to measure how
//! well a fit predicts ([`super::cross`]). What the traces do say is how
//! far each knob may move, the others fitted again, before the fitted
//! runs' rms error exceeds [`TOLERANCE`] (or the fit's own, if larger). A
//! knob the runs cannot identify moves far: the submit host's limit above
//! the most any fitted run asked of it fits them all equally. That
//! includes the platform's rates the fit did not take (the origin's and
//! the machines' interfaces), left at the testbed's values: a run that
//! asks more of them than the fitted ones did may be much slower. A
//! predicted trace's interval spans its predictions at the ends of every
//! knob's range, widened by the model's own error on runs it was not
//! fitted to ([`MODEL_ERROR`], or the user's): a range that fits two runs
//! says how far they leave the knobs free, not how far the model is from
//! another application or input size.

use std::sync::atomic::AtomicUsize;

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal};

use super::cross::LEVEL;
use super::fit::{Candidate, predict_all, rms};
use super::knob::Knob;
use super::search::Space;
use super::trace::{Trace, TraceError};
use crate::config::Scenario;

/// The rms error of the fitted runs a knob's range allows at least: a
/// real run's makespan differs by a few percent from one run to the next,
/// which one or two traces cannot show (an assumption, not a measurement).
pub const TOLERANCE: f64 = 0.05;

/// The model's error on a run it was not fitted to, as the standard
/// deviation of `ln(predicted / recorded)`, by default: the left-out errors
/// of the shared reference runs' cross-validations pooled (the eight
/// 1000genome runs, 8.6%, and the six runs on `compute` machines, two
/// applications, 12.5%; 14 errors, 12 degrees of freedom: 10.4%). A
/// measurement on two platforms, not a law: `--model-error` gives one's own.
pub const MODEL_ERROR: f64 = 0.10;

/// The shortest step a range is walked in, each way (5%, in log space);
/// each step that still fits is followed by one half as long again, one
/// that does not by one a third as long, so a range's end is found to 5%
/// and the widest (10⁴ for a rate) is crossed in a dozen steps.
const STEP: f64 = 0.05;

/// A knob's values that fit the traces within the tolerance.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct KnobRange {
    /// The knob.
    pub knob: Knob,
    /// Whether the fit took it (else it is the testbed's value).
    pub fitted: bool,
    /// Its value in the fit (or the testbed).
    pub value: f64,
    /// The least value that fits.
    pub low: f64,
    /// The greatest value that fits.
    pub high: f64,
}

/// How sure an interval is to be, and of what.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Confidence {
    /// The level (0.8: an 80% interval).
    pub level: f64,
    /// The model's error on runs not fitted, as the standard deviation of
    /// `ln(predicted / recorded)` (with fewer than three traces, where
    /// the fit cannot measure its own).
    pub model_error: f64,
}

impl Default for Confidence {
    fn default() -> Confidence {
        Confidence {
            level: LEVEL,
            model_error: MODEL_ERROR,
        }
    }
}

impl Confidence {
    /// Half the widening the model's error gives at the level, in log
    /// ratio: the normal quantile `z` at `(1 + level) / 2` times the error.
    pub fn half_width(&self) -> f64 {
        let z = Normal::new(0.0, 1.0)
            .map(|n| n.inverse_cdf(0.5 + self.level / 2.0))
            .unwrap_or(f64::INFINITY);
        z * self.model_error
    }
}

/// The ranges of a fit of fewer than three traces.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Ranges {
    /// The rms error the fitted runs may reach within a range.
    pub tolerance: f64,
    /// Each knob's range.
    pub knobs: Vec<KnobRange>,
    /// The intervals' level, and the model's error they are widened by.
    pub confidence: Confidence,
    /// Knob values (every knob of `knobs`, in order) at the ends of the
    /// ranges: the predictions' spread is taken over them.
    #[serde(skip)]
    pub ends: Vec<Vec<f64>>,
}

impl Ranges {
    /// The ranges of candidate `c` fitted to `fit_on` at `point`, and of
    /// `extra` (rates it did not fit, at their values in the first
    /// trace's testbed); its intervals at `confidence`.
    pub(super) fn of(
        fit_on: &[(Trace, Scenario)],
        c: &Candidate,
        point: &[f64],
        extra: &[Knob],
        confidence: Confidence,
        evaluations: &AtomicUsize,
    ) -> Result<Ranges, TraceError> {
        let Some((_, testbed)) = fit_on.first() else {
            return Ok(Ranges {
                tolerance: TOLERANCE,
                knobs: Vec::new(),
                confidence,
                ends: Vec::new(),
            });
        };
        // Every knob profiled: the fitted ones, then the extra ones that
        // the testbed has with a value inside the search range.
        let mut knobs = c.knobs.clone();
        let mut values = point.to_vec();
        for k in extra {
            let (lo, hi) = k.range();
            if let Some(v) = k.get(testbed).filter(|v| (lo..=hi).contains(v))
                && !knobs.contains(k)
            {
                knobs.push(k.clone());
                values.push(v);
            }
        }
        let y: Vec<f64> = values.iter().map(|v| v.ln()).collect();
        let fit_errors = |y: &[f64]| -> Result<f64, TraceError> {
            let ps = predict_all(fit_on, &knobs, y, c.staging, evaluations)?;
            Ok(rms(&ps.iter().map(|p| p.error).collect::<Vec<_>>()))
        };
        let tolerance = fit_errors(&y)?.max(TOLERANCE);
        let fitted = c.knobs.len();
        let mut ranges = Vec::new();
        let mut ends = Vec::new();
        for j in 0..knobs.len() {
            let (lo, hi) = knobs[j].range();
            let (lo, hi) = (lo.ln(), hi.ln());
            let mut end_of = [y.clone(), y.clone()];
            // `from` with knob `j` at `v` and the other fitted knobs fitted
            // again, from where `from` has them.
            let free: Vec<usize> = (0..fitted).filter(|&i| i != j).collect();
            let sub = Space::of(&free.iter().map(|&i| knobs[i].clone()).collect::<Vec<_>>());
            let refit = |from: &[f64], v: f64| -> Result<Vec<f64>, TraceError> {
                let mut next = from.to_vec();
                next[j] = v;
                if free.is_empty() {
                    return Ok(next);
                }
                let base = next.clone();
                let mut cost = |z: &[f64], _bound: f64| -> Result<f64, TraceError> {
                    let mut full = base.clone();
                    for (k, &i) in free.iter().enumerate() {
                        full[i] = z[k];
                    }
                    let ps = predict_all(fit_on, &knobs, &full, c.staging, evaluations)?;
                    Ok(ps.iter().map(|p| p.cost()).sum())
                };
                let z = sub.nudge(free.iter().map(|&i| next[i]).collect(), &mut cost)?;
                for (k, &i) in free.iter().enumerate() {
                    next[i] = z[k];
                }
                Ok(next)
            };
            for (side, dir) in [-1.0, 1.0].into_iter().enumerate() {
                // A knob the runs do not pin down fits at its bound: one
                // refit there saves the dozen steps of a walk to it.
                let bound = if dir < 0.0 { lo } else { hi };
                if bound != y[j] {
                    let far = refit(&y, bound)?;
                    if fit_errors(&far)? <= tolerance {
                        end_of[side] = far;
                        continue;
                    }
                }
                let mut at = y.clone();
                let mut step = STEP;
                for _ in 0..60 {
                    let v = (at[j] + dir * step).clamp(lo, hi);
                    if v == at[j] {
                        break;
                    }
                    let next = refit(&at, v)?;
                    if fit_errors(&next)? > tolerance {
                        // Past the end: shorter steps up to it.
                        if step > STEP {
                            step = (step / 3.0).max(STEP);
                            continue;
                        }
                        break;
                    }
                    at = next;
                    step *= 1.5;
                }
                end_of[side] = at;
            }
            ranges.push(KnobRange {
                knob: knobs[j].clone(),
                fitted: j < fitted,
                value: values[j],
                low: end_of[0][j].exp(),
                high: end_of[1][j].exp(),
            });
            ends.extend(
                end_of
                    .into_iter()
                    .map(|e| e.iter().map(|v| v.exp()).collect()),
            );
        }
        Ok(Ranges {
            tolerance,
            knobs: ranges,
            confidence,
            ends,
        })
    }

    /// The recorded makespans of `trace` these ranges allow: its
    /// predictions at every range's ends (and `predicted`, the fit's),
    /// widened by the model's error at the level. (The tolerance is not
    /// added: the model's error, measured on left-out runs, holds their
    /// run-to-run spread already.)
    pub(super) fn interval(
        &self,
        trace: &(Trace, Scenario),
        c: &Candidate,
        predicted: f64,
        evaluations: &AtomicUsize,
    ) -> Result<[f64; 2], TraceError> {
        let knobs: Vec<Knob> = self.knobs.iter().map(|r| r.knob.clone()).collect();
        let (mut lo, mut hi) = (predicted, predicted);
        for x in &self.ends {
            let y: Vec<f64> = x.iter().map(|v| v.ln()).collect();
            let p = predict_all(
                std::slice::from_ref(trace),
                &knobs,
                &y,
                c.staging,
                evaluations,
            )?;
            lo = lo.min(p[0].predicted);
            hi = hi.max(p[0].predicted);
        }
        let widen = self.confidence.half_width().exp();
        Ok([lo / widen, hi * widen])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The widening against the normal's quantiles from a table: 1.2816
    /// at 80%, 1.9600 at 95%; none without a model error.
    #[test]
    fn the_widening_is_the_normal_quantile_times_the_model_error() {
        let at = |level, model_error| Confidence { level, model_error }.half_width();
        assert!((at(0.8, 0.1) - 0.128_155).abs() < 1e-5);
        assert!((at(0.95, 0.2) - 0.391_993).abs() < 1e-5);
        assert_eq!(at(0.5, 0.0), 0.0);
        assert_eq!(Confidence::default().model_error, MODEL_ERROR);
    }
}
