//! Least squares on makespan: the chosen knobs are fitted so that the sum of
//! squared relative makespan errors over the traces is least; a trace with
//! task times (an instance gridbed wrote, or any with `executedAt` per task)
//! adds the squared RMS of its task start/end differences, as a fraction of
//! its makespan. A makespan is a
//! step function of interval knobs (ticks) and of rates, so the search takes
//! no derivatives: a log-spaced grid over each knob's range (a Halton
//! sequence from three knobs on), then Nelder–Mead in log space from the
//! three best points, restarted while that still helps. Each data
//! configuration asked for ([`Staging`]) is fitted on its own and the least
//! cost kept.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::knob::{Knob, Unit};
use super::staging::Staging;
use super::trace::{Prediction, Trace, TraceError, predict, replay};
use crate::config::Scenario;
use crate::core::wms::Latency;

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

/// The fit under one data configuration.
#[derive(Debug, Clone, Serialize)]
pub struct ModeFit {
    /// The configuration; none: the testbed's own data path.
    pub staging: Option<Staging>,
    /// Its data path on this testbed, in words.
    pub path: String,
    /// The knobs fitted under it.
    pub knobs: Vec<Fitted>,
    /// Root mean square of the fitted traces' relative errors.
    pub rms_error: f64,
    /// Each fitted trace's relative makespan error.
    pub errors: Vec<f64>,
    /// What the fit minimised (see [`Prediction::cost`]).
    pub cost: f64,
}

/// The result of a calibration.
#[derive(Debug, Clone, Serialize)]
pub struct Fit {
    /// The fitted knobs and their values, under the chosen configuration.
    pub knobs: Vec<Fitted>,
    /// The data configuration chosen (the least cost), when it was fitted.
    pub staging: Option<Staging>,
    /// Every configuration tried, with its own fit.
    pub modes: Vec<ModeFit>,
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
fn predict_at(
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
/// of `staging` (none: the testbed's own), keeps the configuration that
/// fits best, and predicts `predict_only` with the result. Each scenario
/// keeps its testbed's other settings.
pub fn calibrate(
    fit_on: &[(Trace, Scenario)],
    knobs: &[Knob],
    staging: &[Staging],
    predict_only: &[(Trace, Scenario)],
) -> Result<Fit, TraceError> {
    let started = Instant::now();
    let evaluations = AtomicUsize::new(0);
    let candidates: Vec<Option<Staging>> = if staging.is_empty() {
        vec![None]
    } else {
        staging.iter().copied().map(Some).collect()
    };
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
    let mut distinct: Vec<Option<Staging>> = Vec::new();
    for &m in &candidates {
        if !distinct.contains(&same(m)) {
            distinct.push(same(m));
        }
    }
    let results = distinct
        .iter()
        .map(|&m| fit_mode(fit_on, knobs, m, &evaluations))
        .collect::<Result<Vec<_>, _>>()?;
    let mut modes = Vec::new();
    let mut best: Option<(f64, Vec<f64>, Option<Staging>)> = None;
    for mode in candidates {
        let (x, ps) = &results[distinct.iter().position(|&d| d == same(mode)).unwrap_or(0)];
        let c: f64 = ps.iter().map(Prediction::cost).sum();
        let errors: Vec<f64> = ps.iter().map(|p| p.error).collect();
        let path = match (mode, &base) {
            (Some(m), Some(b)) => m.path(b),
            _ => "the testbed's own".into(),
        };
        modes.push(ModeFit {
            staging: mode,
            path,
            knobs: knobs
                .iter()
                .zip(x)
                .map(|(k, v)| Fitted::new(k, *v))
                .collect(),
            rms_error: rms(&errors),
            errors,
            cost: c,
        });
        if best.as_ref().is_none_or(|b| c < b.0) {
            best = Some((c, x.clone(), mode));
        }
    }
    let (_, values, staging) = best.unwrap_or((0.0, Vec::new(), None));
    let run = |set: &[(Trace, Scenario)]| {
        set.iter()
            .map(|(t, s)| predict_at(t, s, knobs, &values, staging))
            .collect::<Result<Vec<_>, _>>()
    };
    let fitted = run(fit_on)?;
    let predicted = run(predict_only)?;
    let errors: Vec<f64> = fitted.iter().map(|p| p.error).collect();
    Ok(Fit {
        knobs: knobs
            .iter()
            .zip(&values)
            .map(|(k, v)| Fitted::new(k, *v))
            .collect(),
        staging,
        modes,
        rms_error: rms(&errors),
        fitted,
        predicted,
        evaluations: evaluations.into_inner() + fit_on.len() + predict_only.len(),
        wall: started.elapsed(),
        testbed: fit_on.first().map(|(_, s)| with_knobs(s, knobs, &values)),
    })
}

/// The knobs fitted under one data configuration, and the fit traces'
/// predictions there.
fn fit_mode(
    fit_on: &[(Trace, Scenario)],
    knobs: &[Knob],
    mode: Option<Staging>,
    evaluations: &AtomicUsize,
) -> Result<(Vec<f64>, Vec<Prediction>), TraceError> {
    // The traces are simulated on every core, trace i on thread i mod n.
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(fit_on.len())
        .max(1);
    // The cost at a point, or any sum above `bound` once it is certain to
    // end above it: a point that cannot be among the ones kept needs no
    // more simulations.
    let mut cost = |y: &[f64], bound: f64| -> Result<f64, TraceError> {
        let x: Vec<f64> = y.iter().map(|v| v.exp()).collect();
        let part = |r: usize| -> Result<f64, TraceError> {
            let mut sum = 0.0;
            for (t, s) in fit_on.iter().skip(r).step_by(threads) {
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
        search(knobs, &mut cost)?
    };
    let x: Vec<f64> = y.iter().map(|v| v.exp()).collect();
    let ps = fit_on
        .iter()
        .map(|(t, s)| predict_at(t, s, knobs, &x, mode))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((x, ps))
}

fn rms(errors: &[f64]) -> f64 {
    (errors.iter().map(|e| e.powi(2)).sum::<f64>() / errors.len().max(1) as f64).sqrt()
}

/// The grid, then Nelder–Mead, in log space; returns the best point.
fn search(
    knobs: &[Knob],
    cost: &mut impl FnMut(&[f64], f64) -> Result<f64, TraceError>,
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
        .map(|k: &Knob| {
            let (lo, hi) = k.range();
            (lo.ln(), hi.ln())
        })
        .collect();
    let step: Vec<f64> = ranges
        .iter()
        .map(|(lo, hi)| (hi - lo) / (per_axis - 1) as f64)
        .collect();
    let mut grid: Vec<(f64, Vec<f64>)> = Vec::new();
    if d <= 2 {
        let mut index = vec![0usize; d];
        loop {
            let y: Vec<f64> = (0..d)
                .map(|i| ranges[i].0 + step[i] * index[i] as f64)
                .collect();
            grid.push((cost(&y, third(&grid))?, y));
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
    } else {
        // A grid of three or more axes sees few values of each (7 for
        // 343 points): a Halton sequence of the same budget sees as many
        // values of each knob as it has points, so a narrow basin along
        // one axis (a rate whose makespans turn within a factor of two) is
        // not stepped over.
        for n in 1..=per_axis.pow(d as u32).max(400) {
            let y: Vec<f64> = (0..d)
                .map(|i| {
                    ranges[i].0 + (ranges[i].1 - ranges[i].0) * halton(n, PRIMES[i % PRIMES.len()])
                })
                .collect();
            grid.push((cost(&y, third(&grid))?, y));
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
        // A simplex shrunk onto one step of a makespan's staircase stops
        // there: start again from its end with a fresh one, while that
        // still takes a percent off the cost.
        let mut end = nelder_mead(start, &step, &clamp, cost)?;
        for _ in 0..4 {
            let again = nelder_mead(end.clone(), &step, &clamp, cost)?;
            if again.0 >= end.0 * (1.0 - 1e-2) {
                break;
            }
            end = again;
        }
        if end.0 < best.0 {
            best = end;
        }
    }
    Ok(best.1)
}

/// The third least cost of `points` (∞ while there are fewer): a point
/// above it is not among the three the simplex starts from.
fn third(points: &[(f64, Vec<f64>)]) -> f64 {
    let mut least = [f64::INFINITY; 3];
    for (c, _) in points {
        if *c < least[2] {
            least[2] = *c;
            least.sort_by(f64::total_cmp);
        }
    }
    least[2]
}

const PRIMES: [usize; 8] = [2, 3, 5, 7, 11, 13, 17, 19];

/// The `n`th term of the van der Corput sequence in `base`, in [0, 1).
fn halton(mut n: usize, base: usize) -> f64 {
    let (mut x, mut f) = (0.0, 1.0 / base as f64);
    while n > 0 {
        x += f * (n % base) as f64;
        n /= base;
        f /= base as f64;
    }
    x
}

/// Nelder–Mead from `best`, a first simplex of half a grid step per axis.
fn nelder_mead(
    best: (f64, Vec<f64>),
    step: &[f64],
    clamp: &impl Fn(&mut Vec<f64>),
    cost: &mut impl FnMut(&[f64], f64) -> Result<f64, TraceError>,
) -> Result<(f64, Vec<f64>), TraceError> {
    let d = step.len();
    let mut simplex: Vec<(f64, Vec<f64>)> = vec![best.clone()];
    for i in 0..d {
        let mut y = best.1.clone();
        y[i] += step[i] / 2.0;
        clamp(&mut y);
        let c = cost(&y, f64::INFINITY)?;
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
        // Above the worst, a point is only ever compared with the worst.
        let cr = cost(&r, worst.0)?;
        if cr < simplex[0].0 {
            let mut e = towards(2.0);
            clamp(&mut e);
            let ce = cost(&e, cr)?;
            simplex[d] = if ce < cr { (ce, e) } else { (cr, r) };
        } else if cr < simplex[d - 1].0 {
            simplex[d] = (cr, r);
        } else {
            let mut c = towards(-0.5);
            clamp(&mut c);
            let cc = cost(&c, worst.0)?;
            if cc < worst.0 {
                simplex[d] = (cc, c);
            } else {
                // Shrink towards the best.
                let b = simplex[0].1.clone();
                for p in simplex.iter_mut().skip(1) {
                    let y: Vec<f64> = p.1.iter().zip(&b).map(|(v, b)| b + (v - b) / 2.0).collect();
                    *p = (cost(&y, f64::INFINITY)?, y);
                }
            }
        }
        let spread = simplex
            .iter()
            .map(|p| p.0)
            .fold(f64::NEG_INFINITY, f64::max)
            - simplex.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
        // Converged: the vertices' costs agree to a thousandth of the best
        // (a tenth of a percent of a makespan's error, at most).
        if spread < (1e-3 * simplex[0].0).max(1e-9) {
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
