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
//! knob's range, widened by the tolerance.

use std::sync::atomic::AtomicUsize;

use serde::Serialize;

use super::fit::{Candidate, predict_all, rms};
use super::knob::Knob;
use super::search::Space;
use super::trace::{Trace, TraceError};
use crate::config::Scenario;

/// The rms error of the fitted runs a knob's range allows at least: a
/// real run's makespan differs by a few percent from one run to the next,
/// which one or two traces cannot show (an assumption, not a measurement).
pub const TOLERANCE: f64 = 0.05;

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

/// The ranges of a fit of fewer than three traces.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Ranges {
    /// The rms error the fitted runs may reach within a range.
    pub tolerance: f64,
    /// Each knob's range.
    pub knobs: Vec<KnobRange>,
    /// Knob values (every knob of `knobs`, in order) at the ends of the
    /// ranges: the predictions' spread is taken over them.
    #[serde(skip)]
    pub ends: Vec<Vec<f64>>,
}

impl Ranges {
    /// The ranges of candidate `c` fitted to `fit_on` at `point`, and of
    /// `extra` (rates it did not fit, at their values in the first
    /// trace's testbed).
    pub(super) fn of(
        fit_on: &[(Trace, Scenario)],
        c: &Candidate,
        point: &[f64],
        extra: &[Knob],
        evaluations: &AtomicUsize,
    ) -> Result<Ranges, TraceError> {
        let Some((_, testbed)) = fit_on.first() else {
            return Ok(Ranges {
                tolerance: TOLERANCE,
                knobs: Vec::new(),
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
            for (side, dir) in [-1.0, 1.0].into_iter().enumerate() {
                let mut at = y.clone();
                let mut step = STEP;
                for _ in 0..60 {
                    let v = (at[j] + dir * step).clamp(lo, hi);
                    if v == at[j] {
                        break;
                    }
                    // The other fitted knobs fitted again with this one at
                    // `v`, from where the last step left them.
                    let mut next = at.clone();
                    next[j] = v;
                    let free: Vec<usize> = (0..fitted).filter(|&i| i != j).collect();
                    if !free.is_empty() {
                        let sub =
                            Space::of(&free.iter().map(|&i| knobs[i].clone()).collect::<Vec<_>>());
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
                    }
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
            ends,
        })
    }

    /// The recorded makespans of `trace` these ranges allow: its
    /// predictions at every range's ends (and `predicted`, the fit's),
    /// widened by the tolerance.
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
        Ok([lo / (1.0 + self.tolerance), hi / (1.0 - self.tolerance)])
    }
}
