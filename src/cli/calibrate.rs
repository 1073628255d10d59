//! `gridbed calibrate` and `gridbed validate --trace`: real runs as the
//! yardstick (the work is in [`crate::calibrate`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::{CliError, write_json};
use crate::calibrate::{self, Candidate, Fit, Knob, Method, Prediction, Staging, Trace};

/// `gridbed calibrate`'s arguments.
#[derive(Args)]
pub(crate) struct CalibrateArgs {
    /// WfCommons traces (WfFormat instances with an execution section) of
    /// real runs on one platform, fitted on.
    #[arg(required = true, value_name = "TRACE")]
    traces: Vec<PathBuf>,
    /// The testbed describing the platform's WMS (`[manager]`,
    /// `[manager.wms]`), links and storage; its execution sites are replaced
    /// by each trace's machines.
    #[arg(long, value_name = "TESTBED")]
    testbed: PathBuf,
    /// Knobs to fit, comma-separated (default: those the traces can tell
    /// apart, printed with why). The WMS's: job_start_delay,
    /// negotiator_interval, postscript_overhead, dagman_submit_delay,
    /// dagman_user_log_scan_interval, submit_overhead, release_overhead; a
    /// site's rates: SITE.bandwidth, SITE.bandwidth_in, SITE.bandwidth_out,
    /// SITE.stream_cap, and its cost per file sent: SITE.latency
    /// (the execution-site template's stand for every machine); a shared
    /// link's: LINK.bandwidth; and `staging`: Pegasus's data configuration,
    /// each of condorio, nonsharedfs and sharedfs fitted and the best kept
    /// (or one of them: staging=sharedfs).
    #[arg(long, value_delimiter = ',')]
    fit: Vec<String>,
    /// Traces predicted with the fit but not fitted on.
    #[arg(long, value_name = "TRACE", num_args = 1..)]
    predict: Vec<PathBuf>,
    /// Write the fitted `[manager]` and `[manager.wms]` tables here.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Write the fit and every prediction (JSON) here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Draw predicted against recorded makespans here (SVG): the traces
    /// fitted on filled, those predicted hollow with their intervals as
    /// bars, the ±10% band shaded.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Seed of the runs' draws.
    #[arg(long)]
    seed: Option<u64>,
    /// The level of the predictions' intervals (from the fit's
    /// cross-validated errors, three traces or more).
    #[arg(long, default_value_t = calibrate::LEVEL, value_parser = level)]
    level: f64,
    /// With one or two traces (nothing to leave out): the model's error on
    /// runs it was not fitted to, as the standard deviation of
    /// ln(predicted / recorded) (0.10 ≈ 10%), that widens the intervals
    /// beyond the knob values that fit. The default is the spread of the
    /// left-out errors on the shared reference runs; give your platform's
    /// where you have measured it (e.g. by cross-validating three runs).
    #[arg(long, value_name = "SD", default_value_t = calibrate::MODEL_ERROR, value_parser = model_error)]
    model_error: f64,
    /// How the knobs are searched after the grid, and the left-out fits
    /// made: `simplex` (Nelder–Mead, on all traces and on each left-out
    /// set; the best fits, hundreds of simulations a simplex), `newton`
    /// (Levenberg–Marquardt, and each left-out fit one Gauss–Newton step
    /// from the fit on all; for many traces), or `auto`: simplex up to
    /// eight traces, newton beyond.
    #[arg(long, value_name = "HOW", default_value = "auto", value_parser = ["auto", "simplex", "newton"])]
    method: String,
}

/// A level strictly between 0 and 1.
fn level(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!("expected a level between 0 and 1 (0.8 for 80%), not `{s}`")),
    }
}

/// A model error: a standard deviation of log ratios, 0 to 2.
fn model_error(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=2.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "expected the model's error as a standard deviation of log ratios \
             between 0 and 2 (0.10 for about 10%), not `{s}`"
        )),
    }
}

fn load(
    testbed: &Path,
    paths: &[PathBuf],
    seed: Option<u64>,
) -> Result<Vec<(Trace, crate::config::Scenario)>, CliError> {
    paths
        .iter()
        .map(|p| {
            let t = Trace::read(p).map_err(CliError::input)?;
            let s = calibrate::testbed_for(testbed, &t, seed).map_err(CliError::input)?;
            Ok((t, s))
        })
        .collect()
}

/// The knobs and data configurations `--fit` names.
fn parse_fit(
    names: &[String],
    testbed: &crate::config::Scenario,
) -> Result<(Vec<Knob>, Vec<Staging>), CliError> {
    let (mut knobs, mut staging) = (Vec::new(), Vec::new());
    for n in names.iter().map(|n| n.trim()) {
        match n.split_once('=') {
            _ if n == "staging" => staging = Staging::ALL.to_vec(),
            Some(("staging", mode)) => {
                let mode = Staging::from_name(mode.trim()).ok_or_else(|| {
                    CliError::Input(format!(
                        "--fit: unknown data configuration `{mode}`: expected condorio, nonsharedfs or sharedfs"
                    ))
                })?;
                staging = vec![mode];
            }
            _ => knobs
                .push(Knob::parse(n, testbed).map_err(|e| CliError::Input(format!("--fit: {e}")))?),
        }
    }
    Ok((knobs, staging))
}

fn print_predictions(title: &str, ps: &[Prediction]) {
    if ps.is_empty() {
        return;
    }
    say!("{title}");
    say!(
        "  {:<44} {:>6} {:>10} {:>10} {:>8}  {:>19}",
        "trace",
        "jobs",
        "recorded",
        "predicted",
        "error",
        if ps.iter().any(|p| p.interval.is_some()) {
            "interval"
        } else {
            ""
        }
    );
    for p in ps {
        say!(
            "  {:<44} {:>6} {:>9.0}s {:>9.0}s {:>+7.1}%  {:>19}{}",
            p.trace,
            p.jobs,
            p.recorded,
            p.predicted,
            100.0 * p.error,
            p.interval.map(show_interval).unwrap_or_default(),
            match p.interval {
                Some([lo, hi]) if p.recorded < lo || p.recorded > hi => "  outside",
                _ => "",
            }
        );
    }
}

/// The chosen candidate's left-out predictions and the intervals'
/// coverage, or why there are none.
fn print_left_out(fit: &Fit) {
    let cv = fit
        .candidates
        .iter()
        .find(|c| c.name == fit.chosen)
        .and_then(|c| c.cross_validated.as_ref());
    let (Some(cv), Some(i)) = (cv, &fit.interval) else {
        say!(
            "no cross-validation: {} trace(s) fitted, and leaving one out needs {}",
            fit.fitted.len(),
            calibrate::LEAST_TRACES
        );
        if let Some(r) = &fit.ranges {
            say!(
                "{:.0}% intervals from the knob values that fit them within {:.1}% rms \
                 (the others fitted again; unfitted rates at the testbed's), widened \
                 by the model's error on runs not fitted ({:.1}% sd, --model-error):",
                100.0 * r.confidence.level,
                100.0 * r.tolerance,
                100.0 * r.confidence.model_error
            );
            for k in &r.knobs {
                say!(
                    "  {:<32} {} to {}{}",
                    k.knob.name(),
                    k.knob.show(k.low),
                    k.knob.show(k.high),
                    if k.fitted {
                        format!(" (fitted {})", k.knob.show(k.value))
                    } else {
                        format!(" (not fitted: the testbed's {})", k.knob.show(k.value))
                    }
                );
            }
        }
        return;
    };
    say!("each trace left out, predicted by the fit on the others:");
    say!(
        "  {:<44} {:>10} {:>10} {:>8}  {:>19}",
        "trace",
        "recorded",
        "predicted",
        "error",
        format!("{:.0}% interval", 100.0 * i.level)
    );
    for l in &cv.left_out {
        say!(
            "  {:<44} {:>9.0}s {:>9.0}s {:>+7.1}%  {:>19}{}",
            l.trace,
            l.recorded,
            l.predicted,
            100.0 * l.error,
            l.interval.map(show_interval).unwrap_or_default(),
            if l.covered() == Some(false) {
                "  outside"
            } else {
                ""
            }
        );
    }
    say!(
        "intervals: {:.0}% from the {} left-out errors (bias {:+.1}%, spread {:.1}%); \
         coverage by leave-one-out: {} of {} traces within the interval made from \
         the others ({:.0}%)",
        100.0 * i.level,
        i.traces,
        100.0 * (i.bias.exp() - 1.0),
        100.0 * i.spread,
        i.covered,
        i.traces,
        100.0 * i.covered as f64 / i.traces.max(1) as f64
    );
}

/// `[lo, hi] s`.
fn show_interval([lo, hi]: [f64; 2]) -> String {
    format!("[{lo:.0}, {hi:.0}] s")
}

/// Each candidate's in-sample and cross-validated error, its knobs, and
/// the chosen one's left-out predictions.
fn print_candidates(fit: &Fit) {
    if fit.candidates.len() > 1 || fit.candidates.iter().any(|c| c.cross_validated.is_some()) {
        let w = fit
            .candidates
            .iter()
            .map(|c| c.name.len())
            .max()
            .unwrap_or(0)
            .max(9);
        say!("candidates (rms error in-sample, and of each trace left out in turn and predicted by the fit on the others):");
        say!(
            "    {:<w$} {:>9} {:>9} {:>12}  knobs",
            "candidate",
            "in-sample",
            "left out",
            "simulations"
        );
        for c in &fit.candidates {
            let knobs: Vec<String> = c
                .knobs
                .iter()
                .map(|f| format!("{} {}", f.knob.name(), f.text))
                .collect();
            let cv = match (&c.cross_validated, &c.not_cross_validated) {
                (Some(cv), _) => format!("{:.1}%", 100.0 * cv.rms_error),
                _ => "-".into(),
            };
            say!(
                "  {} {:<w$} {:>8.1}% {:>9} {:>12}  {}{}",
                if c.name == fit.chosen { "*" } else { " " },
                c.name,
                100.0 * c.rms_error,
                cv,
                c.simulations + c.cross_validated.as_ref().map_or(0, |cv| cv.simulations),
                knobs.join(", "),
                c.not_cross_validated
                    .as_ref()
                    .map(|why| format!("  (not cross-validated: {why})"))
                    .unwrap_or_default()
            );
        }
    }
    say!("chosen: {} by {}", fit.chosen, fit.chosen_by);
}

pub(super) fn calibrate(args: CalibrateArgs) -> Result<ExitCode, CliError> {
    // Outputs before the fit, each error naming its flag.
    super::check_output("--out", args.out.as_deref())?;
    super::check_output("--json", args.json.as_deref())?;
    super::check_output("--svg", args.svg.as_deref())?;
    let fit_on = load(&args.testbed, &args.traces, args.seed)?;
    let others = load(&args.testbed, &args.predict, args.seed)?;
    for w in calibrate::one_platform(fit_on.iter().chain(&others).map(|(t, _)| t))
        .map_err(CliError::input)?
    {
        eprintln!("warning: {w}");
    }
    say!("what the traces record:");
    for (t, s) in fit_on.iter().chain(&others) {
        say!("  {}: {}", t.name, calibrate::evidence(t, s));
    }
    let candidates = if args.fit.is_empty() {
        let choice = calibrate::choose(&fit_on);
        say!("knobs chosen (the traces can tell these apart):");
        for r in &choice.reasons {
            say!("  {r}");
        }
        choice.candidates
    } else {
        let (knobs, staging) = parse_fit(&args.fit, &fit_on[0].1)?;
        Candidate::given(&knobs, &staging)
    };
    let fit: Fit = calibrate::select(
        &fit_on,
        &candidates,
        &others,
        calibrate::Confidence {
            level: args.level,
            model_error: args.model_error,
        },
        match args.method.as_str() {
            "simplex" => Method::Simplex,
            "newton" => Method::Newton,
            _ => Method::auto(fit_on.len()),
        },
    )
        .map_err(CliError::input)?;
    say!(
        "calibrated {} candidate(s) on {} trace(s) in {:.2} s ({} simulations)",
        candidates.len(),
        fit_on.len(),
        fit.wall.as_secs_f64(),
        fit.evaluations
    );
    print_candidates(&fit);
    for f in &fit.knobs {
        let bound = f
            .at_bound
            .map(|b| format!("   (at its {b} bound)"))
            .unwrap_or_default();
        say!("  {:<32} = {}{bound}", f.knob.name(), f.text);
    }
    if let Some(st) = fit.staging {
        say!("  {:<32} = {}", "staging", st.name());
    }
    print_predictions("fitted on:", &fit.fitted);
    print_predictions("predicted:", &fit.predicted);
    print_left_out(&fit);
    let table = calibrate::fitted_table(&fit);
    match &args.out {
        Some(path) => {
            std::fs::write(path, &table)
                .map_err(|e| CliError::failed(format!("{}: {e}", path.display())))?;
            say!("wrote {}", path.display());
        }
        None => say!("\n{table}"),
    }
    if let Some(path) = &args.json {
        write_json(path, &fit)?;
    }
    if let Some(path) = &args.svg {
        draw(path, &fit)?;
        say!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Predicted against recorded, fitted and predicted traces apart.
fn draw(path: &Path, fit: &Fit) -> Result<(), CliError> {
    use crate::report::plot::{Marked, parity_chart};
    // Labels without what every trace's name shares (`1000genome-chameleon-`).
    let names: Vec<&str> = fit
        .fitted
        .iter()
        .chain(&fit.predicted)
        .map(|p| p.trace.as_str())
        .collect();
    let mut common = names.first().map_or(0, |n| n.len());
    for n in &names {
        common = common.min(
            n.bytes()
                .zip(names[0].bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    let cut = names
        .first()
        .map_or(0, |n| n[..common].rfind('-').map_or(0, |i| i + 1));
    let group = |name: &str, ps: &[Prediction]| Marked {
        name: format!("{name} ({})", ps.len()),
        points: ps
            .iter()
            .map(|p| {
                let label = p.trace.get(cut..).unwrap_or(&p.trace);
                (
                    label.trim_end_matches("-001").to_string(),
                    p.recorded,
                    p.predicted,
                )
            })
            .collect(),
        intervals: ps.iter().map(|p| p.interval).collect(),
    };
    let mut knobs: Vec<String> = fit
        .knobs
        .iter()
        .map(|f| format!("{} {}", f.knob.name(), f.text))
        .collect();
    if let Some(st) = fit.staging {
        knobs.push(st.name().into());
    }
    let groups = [
        group("fitted", &fit.fitted),
        group("predicted", &fit.predicted),
    ];
    parity_chart(
        path,
        &format!("makespans: {}", knobs.join(", ")),
        "s",
        &groups,
        0.10,
    )
    .map_err(|e| CliError::failed(e.to_string()))
}

/// `gridbed validate TESTBED --trace FILE`: the trace predicted beside its
/// record, with the predicted finish of each level.
pub(super) fn validate_trace(
    testbed: &Path,
    trace: &Path,
    seed: Option<u64>,
    json: Option<&Path>,
) -> Result<ExitCode, CliError> {
    let t = Trace::read(trace).map_err(CliError::input)?;
    let s = calibrate::scenario_for(testbed, &t, seed).map_err(CliError::input)?;
    let p = calibrate::predict(&t, &s).map_err(CliError::input)?;
    print_predictions(
        &format!("{} on {}:", t.name, testbed.display()),
        std::slice::from_ref(&p),
    );
    match p.task_error {
        Some(e) => say!(
            "  task starts and ends: {} tasks, rms difference {:.1}% of the makespan",
            p.tasks_compared,
            100.0 * e
        ),
        None => say!("  per level (the trace records no task times; predicted only):"),
    }
    say!(
        "  {:>5} {:>6} {:>10} {:>10}",
        "level",
        "jobs",
        "finish",
        "recorded"
    );
    for l in &p.levels {
        let recorded = l.recorded.map(|r| format!("{r:.0}s")).unwrap_or_default();
        say!(
            "  {:>5} {:>6} {:>9.0}s {recorded:>10}",
            l.level,
            l.jobs,
            l.predicted
        );
    }
    if let Some(path) = json {
        write_json(path, &p)?;
    }
    Ok(ExitCode::SUCCESS)
}
