//! Least squares on makespan: the chosen knobs are fitted so that the sum of
//! squared relative makespan errors over the traces is least; a trace with
//! task times (an instance gridbed wrote, or any with `executedAt` per task)
//! adds the squared RMS of its task start/end differences, as a fraction of
//! its makespan. A makespan is a
//! step function of interval knobs (ticks) and of rates, so the search takes
//! no derivatives: a log-spaced grid over each knob's range (a Halton
//! sequence from three knobs on), then Nelder–Mead in log space from the
//! three best points, restarted while that still helps. Over more than
//! [`GRID_TRACES`] traces the grid and the first simplexes see a spread of
//! them, and only the last simplex all. Over more than
//! [`super::SIMPLEX_UP_TO`] traces the simplexes are Levenberg–Marquardt
//! steps instead ([`Method::Newton`], `src/calibrate/search.rs`): a few
//! steps of simulations where a simplex takes hundreds, at some cost in
//! how deep a basin the fit reaches. Each candidate knob set
//! ([`Candidate`]: knobs under one data configuration, [`Staging`]) is
//! fitted on its own; with three traces or more the one that predicts best
//! left-out traces wins ([`super::cross`]), else the least cost.

use std::borrow::Borrow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::cross::{self, CrossValidated, Interval};
use super::knob::{Knob, Unit};
use super::ranges::{Confidence, Ranges};
use super::search::{Method, Space};
use super::staging::Staging;
use super::trace::{Prediction, Trace, TraceError, predict, replay};
use crate::config::Scenario;
use crate::core::wms::Latency;

/// Traces the grid sees at most: a spread of them by makespan. A grid
/// point only ranks basins, and a few traces that span the runs rank them
/// as all of them do.
pub const GRID_TRACES: usize = 5;

/// A fitted knob, as the table and `--json` show it.
#[derive(Debug, Clone, Serialize)]
pub struct Fitted {
    /// The knob.
    pub knob: Knob,
    /// Its value, in `unit`.
    pub value: f64,
    /// What the value is measured in.
    pub unit: Unit,
    /// The value as people read it (`125 MB/s (1.0 Gbit/s)`).
    pub text: String,
    /// `"lower"` or `"upper"` when the search ended at that bound: the
    /// traces ask for more than the knob's range allows.
    pub at_bound: Option<&'static str>,
}

impl Fitted {
    fn new(knob: &Knob, value: f64) -> Fitted {
        Fitted {
            knob: knob.clone(),
            value,
            unit: knob.unit(),
            text: knob.show(value),
            at_bound: knob.at_bound(value),
        }
    }
}

/// A knob set the fit may take: knobs under one data configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// Its name in the table.
    pub name: String,
    /// The continuous knobs.
    pub knobs: Vec<Knob>,
    /// The data configuration; none: the testbed's own data path.
    pub staging: Option<Staging>,
}

impl Candidate {
    /// `knobs` under each of `staging` (none: the testbed's own path), as
    /// `--fit` names them.
    pub fn given(knobs: &[Knob], staging: &[Staging]) -> Vec<Candidate> {
        let names: Vec<String> = knobs.iter().map(Knob::name).collect();
        let name = |s: Option<Staging>| match s {
            Some(s) if names.is_empty() => s.name().to_string(),
            Some(s) => format!("{} ({})", names.join(", "), s.name()),
            None => names.join(", "),
        };
        let modes: Vec<Option<Staging>> = if staging.is_empty() {
            vec![None]
        } else {
            staging.iter().copied().map(Some).collect()
        };
        modes
            .into_iter()
            .map(|s| Candidate {
                name: name(s),
                knobs: knobs.to_vec(),
                staging: s,
            })
            .collect()
    }
}

/// One candidate's fit.
#[derive(Debug, Clone, Serialize)]
pub struct CandidateFit {
    /// The candidate's name.
    pub name: String,
    /// Its data configuration; none: the testbed's own data path.
    pub staging: Option<Staging>,
    /// Its data path on this testbed, in words.
    pub path: String,
    /// The knobs fitted under it.
    pub knobs: Vec<Fitted>,
    /// Root mean square of the fitted traces' relative errors (in-sample).
    pub rms_error: f64,
    /// Each fitted trace's relative makespan error.
    pub errors: Vec<f64>,
    /// What the fit minimised (see [`Prediction::cost`]).
    pub cost: f64,
    /// Simulations its fit on all traces ran.
    pub simulations: usize,
    /// Each trace predicted by the fit on the others.
    pub cross_validated: Option<CrossValidated>,
    /// Why it was not cross-validated, when it was not.
    pub not_cross_validated: Option<String>,
}

/// The result of a calibration.
#[derive(Debug, Clone, Serialize)]
pub struct Fit {
    /// The fitted knobs and their values, under the chosen candidate.
    pub knobs: Vec<Fitted>,
    /// The data configuration chosen, when it was fitted.
    pub staging: Option<Staging>,
    /// The chosen candidate's name.
    pub chosen: String,
    /// Why it was chosen, in a sentence.
    pub chosen_by: String,
    /// Every candidate tried, with its own fit.
    pub candidates: Vec<CandidateFit>,
    /// The traces fitted on, with the fit's predictions.
    pub fitted: Vec<Prediction>,
    /// The traces predicted (not fitted on), each with its interval.
    pub predicted: Vec<Prediction>,
    /// Root mean square of the fitted traces' relative errors.
    pub rms_error: f64,
    /// How the intervals are made, and how often they held (three
    /// traces or more).
    pub interval: Option<Interval>,
    /// The knob values that fit one or two traces, the intervals' source
    /// there.
    pub ranges: Option<Ranges>,
    /// Simulations run.
    pub evaluations: usize,
    /// Wall time of the fit.
    #[serde(skip)]
    pub wall: Duration,
    /// The first fitted trace's testbed with the fitted values (its
    /// template execution site not yet replaced by machines).
    #[serde(skip)]
    pub testbed: Option<Scenario>,
}

impl Fit {
    /// A fitted knob's value.
    pub fn value(&self, knob: &Knob) -> Option<f64> {
        self.knobs.iter().find(|f| &f.knob == knob).map(|f| f.value)
    }
}

/// `base` with the knobs set to `x`.
fn with_knobs(base: &Scenario, knobs: &[Knob], x: &[f64]) -> Scenario {
    let mut s = base.clone();
    for (k, v) in knobs.iter().zip(x) {
        k.set(&mut s, *v);
    }
    s
}

/// `trace` predicted on `base` with the knobs set to `x` under `staging`.
pub(super) fn predict_at(
    trace: &Trace,
    base: &Scenario,
    knobs: &[Knob],
    x: &[f64],
    staging: Option<Staging>,
) -> Result<Prediction, TraceError> {
    predict(trace, &replay(with_knobs(base, knobs, x), trace, staging)?)
}

/// Fits `knobs` to the makespans of `fit_on` (each trace with its testbed
/// from [`testbed_for`](super::testbed_for)) under each data configuration
/// of `staging` (none: the testbed's own) and predicts `predict_only` with
/// the one chosen ([`select`]). Each scenario keeps its testbed's other
/// settings.
pub fn calibrate(
    fit_on: &[(Trace, Scenario)],
    knobs: &[Knob],
    staging: &[Staging],
    predict_only: &[(Trace, Scenario)],
) -> Result<Fit, TraceError> {
    select(
        fit_on,
        &Candidate::given(knobs, staging),
        predict_only,
        Confidence::default(),
        Method::auto(fit_on.len()),
    )
}

/// Fits each of `candidates` to `fit_on`, chooses one, and predicts
/// `predict_only` with it, each prediction with its interval at
/// `confidence`'s level (e.g. 0.8). With three traces or more each
/// candidate is cross-validated (leave one trace out), the least
/// cross-validated error wins and the intervals come from the left-out
/// errors; with fewer the least cost wins and the intervals come from the
/// knob values that fit, widened by `confidence`'s model error. `method`
/// is how the knobs are searched and the left-out fits made.
pub fn select(
    fit_on: &[(Trace, Scenario)],
    candidates: &[Candidate],
    predict_only: &[(Trace, Scenario)],
    confidence: Confidence,
    method: Method,
) -> Result<Fit, TraceError> {
    let started = Instant::now();
    let evaluations = AtomicUsize::new(0);
    // A configuration that gives another's data path on this testbed
    // (nonsharedfs with no staging site) is that one's fit.
    let base = fit_on
        .first()
        .map(|(t, s)| replay(s.clone(), t, None))
        .transpose()?;
    let same = |m: Option<Staging>| match (m, &base) {
        (Some(m), Some(b)) => Some(m.effective(b)),
        _ => m,
    };
    let all: Vec<&(Trace, Scenario)> = fit_on.iter().collect();
    // Each knob set fitted so far under its effective configuration.
    struct Done {
        knobs: Vec<Knob>,
        mode: Option<Staging>,
        x: Vec<f64>,
        ps: Vec<Prediction>,
    }
    let mut done: Vec<Done> = Vec::new();
    let mut fits = Vec::new();
    let mut points = Vec::new();
    for c in candidates {
        let mode = same(c.staging);
        let before = evaluations.load(Ordering::Relaxed);
        let (x, ps) = match done.iter().find(|d| d.knobs == c.knobs && d.mode == mode) {
            Some(d) => (d.x.clone(), d.ps.clone()),
            None => {
                // The fit of the most knobs of these (and no others), under
                // the same configuration, is where the search starts.
                let parent = done
                    .iter()
                    .filter(|d| {
                        d.mode == mode
                            && d.knobs.len() < c.knobs.len()
                            && d.knobs.iter().all(|k| c.knobs.contains(k))
                    })
                    .max_by_key(|d| d.knobs.len());
                let fixed: Vec<Option<f64>> = c
                    .knobs
                    .iter()
                    .map(|k| {
                        let p = parent?;
                        p.knobs.iter().position(|q| q == k).map(|i| p.x[i])
                    })
                    .collect();
                let start = if parent.is_some() {
                    Start::Extend(&fixed)
                } else {
                    Start::Grid
                };
                let (x, ps) = fit_mode(&all, &c.knobs, mode, &evaluations, start, method)?;
                done.push(Done {
                    knobs: c.knobs.clone(),
                    mode,
                    x: x.clone(),
                    ps: ps.clone(),
                });
                (x, ps)
            }
        };
        let errors: Vec<f64> = ps.iter().map(|p| p.error).collect();
        fits.push(CandidateFit {
            name: c.name.clone(),
            staging: c.staging,
            path: match (c.staging, &base) {
                (Some(m), Some(b)) => m.path(b),
                _ => "the testbed's own".into(),
            },
            knobs: c
                .knobs
                .iter()
                .zip(&x)
                .map(|(k, v)| Fitted::new(k, *v))
                .collect(),
            rms_error: rms(&errors),
            errors,
            cost: ps.iter().map(Prediction::cost).sum(),
            simulations: evaluations.load(Ordering::Relaxed) - before,
            cross_validated: None,
            not_cross_validated: None,
        });
        points.push(x);
    }
    let (best, chosen_by) = if fit_on.len() >= cross::LEAST_TRACES {
        cross::validate(fit_on, candidates, &points, &mut fits, method, &evaluations)?
    } else {
        let best = (0..fits.len())
            .min_by(|&a, &b| fits[a].cost.total_cmp(&fits[b].cost))
            .unwrap_or(0);
        (
            best,
            format!(
                "the least cost on the {} trace(s) fitted (no trace to leave out: \
                 cross-validation needs {})",
                fit_on.len(),
                cross::LEAST_TRACES
            ),
        )
    };
    let chosen = candidates.get(best);
    let knobs = chosen.map_or(&[][..], |c| &c.knobs[..]);
    let staging = chosen.and_then(|c| c.staging);
    let values = points.get(best).cloned().unwrap_or_default();
    let run = |set: &[(Trace, Scenario)]| {
        set.iter()
            .map(|(t, s)| predict_at(t, s, knobs, &values, staging))
            .collect::<Result<Vec<_>, _>>()
    };
    let fitted = run(fit_on)?;
    let mut predicted = run(predict_only)?;
    let interval = fits
        .get_mut(best)
        .and_then(|f| f.cross_validated.as_mut())
        .map(|cv| Interval::of(cv, confidence.level));
    if let Some(i) = &interval {
        for p in &mut predicted {
            p.interval = Some(i.around(p.predicted));
        }
    }
    // Fewer traces: the knob values that fit them, and the platform's
    // rates the fit left at the testbed's.
    let ranges = match (chosen, fit_on.first()) {
        (Some(c), Some((_, testbed))) if interval.is_none() => {
            let origin = &testbed.sites[testbed.origin].info.name;
            let mut extra = vec![Knob::Bandwidth(origin.clone())];
            if let Some(m) = testbed.sites.iter().find(|s| !s.storage) {
                extra.push(Knob::Bandwidth(m.info.name.clone()));
            }
            let r = Ranges::of(fit_on, c, &values, &extra, confidence, &evaluations)?;
            for (p, t) in predicted.iter_mut().zip(predict_only) {
                p.interval = Some(r.interval(t, c, p.predicted, &evaluations)?);
            }
            Some(r)
        }
        _ => None,
    };
    let errors: Vec<f64> = fitted.iter().map(|p| p.error).collect();
    Ok(Fit {
        knobs: knobs
            .iter()
            .zip(&values)
            .map(|(k, v)| Fitted::new(k, *v))
            .collect(),
        staging,
        chosen: chosen.map(|c| c.name.clone()).unwrap_or_default(),
        chosen_by,
        candidates: fits,
        rms_error: rms(&errors),
        fitted,
        predicted,
        interval,
        ranges,
        evaluations: evaluations.into_inner() + fit_on.len() + predict_only.len(),
        wall: started.elapsed(),
        testbed: fit_on.first().map(|(_, s)| with_knobs(s, knobs, &values)),
    })
}

/// Where a fit's search starts.
#[derive(Debug, Clone, Copy)]
pub(super) enum Start<'a> {
    /// The grid over every knob.
    Grid,
    /// The fit of a knob set with fewer knobs: the grid over the knobs it
    /// lacks (none), those it has at its values.
    Extend(&'a [Option<f64>]),
}

/// The knobs fitted to `fit_on` under one data configuration from
/// `start`, and the traces' predictions there.
pub(super) fn fit_mode(
    fit_on: &[&(Trace, Scenario)],
    knobs: &[Knob],
    mode: Option<Staging>,
    evaluations: &AtomicUsize,
    start: Start,
    method: Method,
) -> Result<(Vec<f64>, Vec<Prediction>), TraceError> {
    // The grid sees a spread of the traces by makespan.
    let mut by_makespan: Vec<usize> = (0..fit_on.len()).collect();
    by_makespan.sort_by(|&a, &b| fit_on[a].0.makespan.total_cmp(&fit_on[b].0.makespan));
    let spread: Vec<usize> = if fit_on.len() <= GRID_TRACES {
        by_makespan
    } else {
        let mut s: Vec<usize> = (0..GRID_TRACES)
            .map(|k| by_makespan[k * (fit_on.len() - 1) / (GRID_TRACES - 1)])
            .collect();
        s.dedup();
        s
    };
    let every: Vec<usize> = (0..fit_on.len()).collect();
    // The cost at a point over the traces `which`, or any sum above `bound`
    // once it is certain to end above it: a point that cannot be among the
    // ones kept needs no more simulations. The traces are simulated on
    // every core, the k-th on thread k mod n.
    let cost = |y: &[f64], bound: f64, which: &[usize]| -> Result<f64, TraceError> {
        let x: Vec<f64> = y.iter().map(|v| v.exp()).collect();
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(which.len())
            .max(1);
        let part = |r: usize| -> Result<f64, TraceError> {
            let mut sum = 0.0;
            for &i in which.iter().skip(r).step_by(threads) {
                let (t, s) = fit_on[i];
                evaluations.fetch_add(1, Ordering::Relaxed);
                sum += predict_at(t, s, knobs, &x, mode)?.cost();
                if sum > bound {
                    break;
                }
            }
            Ok(sum)
        };
        if threads == 1 {
            return part(0);
        }
        std::thread::scope(|sc| {
            let others: Vec<_> = (1..threads).map(|r| sc.spawn(move || part(r))).collect();
            let mut sum = part(0)?;
            for h in others {
                sum += h
                    .join()
                    .unwrap_or_else(|_| Err(TraceError::Policy("a simulation panicked".into())))?;
            }
            Ok(sum)
        })
    };
    let y = if knobs.is_empty() {
        Vec::new()
    } else {
        let space = Space::of(knobs);
        let fixed: Vec<Option<f64>> = match start {
            Start::Grid => vec![None; knobs.len()],
            Start::Extend(f) => f.iter().map(|v| v.map(f64::ln)).collect(),
        };
        let (t, n) = (Instant::now(), evaluations.load(Ordering::Relaxed));
        let errors =
            |which: &[&(Trace, Scenario)], y: &[f64]| -> Result<Vec<[f64; 2]>, TraceError> {
                let ps = predict_each(which, knobs, &|_| y, mode, evaluations)?;
                Ok(ps.iter().map(Prediction::errors).collect())
            };
        let few: Vec<&(Trace, Scenario)> = spread.iter().map(|&i| fit_on[i]).collect();
        let newton = method == Method::Newton;
        let y = space.search(
            &fixed,
            &mut |y: &[f64], b| cost(y, b, &spread),
            newton.then_some(&mut |y: &[f64]| errors(&few, y) as _),
        )?;
        let searched = (t.elapsed(), evaluations.load(Ordering::Relaxed) - n);
        let (t, n) = (Instant::now(), evaluations.load(Ordering::Relaxed));
        let y = if spread.len() == every.len() {
            y
        } else if newton {
            space.polish(y, &mut |y: &[f64]| errors(fit_on, y))?.1
        } else {
            space.refine(y, &mut |y: &[f64], b| cost(y, b, &every))?
        };
        tracing::info!(
            "fitted {} ({mode:?}): search on {} traces {} simulations in {:.1} s, \
             refined on {} in {} simulations, {:.1} s",
            knobs.iter().map(Knob::name).collect::<Vec<_>>().join(","),
            spread.len(),
            searched.1,
            searched.0.as_secs_f64(),
            every.len(),
            evaluations.load(Ordering::Relaxed) - n,
            t.elapsed().as_secs_f64()
        );
        y
    };
    let x: Vec<f64> = y.iter().map(|v| v.exp()).collect();
    let ps = fit_on
        .iter()
        .map(|(t, s)| predict_at(t, s, knobs, &x, mode))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((x, ps))
}

/// Every trace of `fit_on` predicted at `y` (knob values in log space).
pub(super) fn predict_all(
    fit_on: &[(Trace, Scenario)],
    knobs: &[Knob],
    y: &[f64],
    mode: Option<Staging>,
    evaluations: &AtomicUsize,
) -> Result<Vec<Prediction>, TraceError> {
    predict_each(fit_on, knobs, &|_| y, mode, evaluations)
}

/// Each trace `i` of `fit_on` predicted at `y(i)` (knob values in log
/// space), the i-th on thread i mod n.
pub(super) fn predict_each<'a, T: Borrow<(Trace, Scenario)> + Sync>(
    fit_on: &[T],
    knobs: &[Knob],
    y: &(dyn Fn(usize) -> &'a [f64] + Sync),
    mode: Option<Staging>,
    evaluations: &AtomicUsize,
) -> Result<Vec<Prediction>, TraceError> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(fit_on.len())
        .max(1);
    let part = |r: usize| -> Result<Vec<(usize, Prediction)>, TraceError> {
        (r..fit_on.len())
            .step_by(threads)
            .map(|i| {
                evaluations.fetch_add(1, Ordering::Relaxed);
                let (t, s) = fit_on[i].borrow();
                let x: Vec<f64> = y(i).iter().map(|v| v.exp()).collect();
                Ok((i, predict_at(t, s, knobs, &x, mode)?))
            })
            .collect()
    };
    let mut all = std::thread::scope(|sc| {
        let others: Vec<_> = (1..threads).map(|r| sc.spawn(move || part(r))).collect();
        let mut all = part(0)?;
        for h in others {
            all.extend(
                h.join()
                    .unwrap_or_else(|_| Err(TraceError::Policy("a simulation panicked".into())))?,
            );
        }
        Ok::<_, TraceError>(all)
    })?;
    all.sort_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, p)| p).collect())
}

pub(super) fn rms(errors: &[f64]) -> f64 {
    (errors.iter().map(|e| e.powi(2)).sum::<f64>() / errors.len().max(1) as f64).sqrt()
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
    let Some(testbed) = &fit.testbed else {
        return String::new();
    };
    let m = &testbed.manager;
    let mut out = String::from("# Fitted by gridbed calibrate on ");
    let names: Vec<&str> = fit.fitted.iter().map(|p| p.trace.as_str()).collect();
    let _ = writeln!(
        out,
        "{} (rms error {:.1}%)",
        names.join(", "),
        100.0 * fit.rms_error
    );
    let fitted: Vec<String> = fit.knobs.iter().map(|f| f.knob.name()).collect();
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
    let rates: Vec<&Fitted> = fit.knobs.iter().filter(|f| f.knob.is_rate()).collect();
    if !rates.is_empty() || fit.staging.is_some() {
        out.push_str("\n# The platform's data path, to set in the testbed's own tables:\n");
    }
    for f in rates {
        let (table, key) = f
            .knob
            .name()
            .split_once('.')
            .map_or((String::new(), String::new()), |(a, b)| {
                (a.to_string(), b.to_string())
            });
        let _ = writeln!(
            out,
            "#   {table}: {key} = \"{:.0} MB/s\"   # {}",
            f.value / 1e6,
            f.text
        );
    }
    if let Some(st) = fit.staging {
        let policy = match st {
            Staging::Sharedfs => "caching, the machines as one site",
            _ => "return",
        };
        let _ = writeln!(
            out,
            "#   staging = {} (replica_policy = {policy})",
            st.name()
        );
    }
    out
}
