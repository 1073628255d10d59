//! Real runs as the yardstick: traces predicted and the WMS model fitted to
//! them (`gridbed calibrate`, `gridbed validate --trace`), and the model's
//! serial stages in both engines.

use std::path::{Path, PathBuf};

use gridbed::calibrate::{self, Knob, Staging, Trace};

use crate::common::gridbed;

const TESTBED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/testbeds/traces/chameleon.toml"
);

/// A real Montage run of WfCommons' instances (in `../shared/reference`).
fn real(name: &str) -> PathBuf {
    run_of("montage", name)
}

/// A real run of `app` of WfCommons' instances (in `../shared/reference`).
fn run_of(app: &str, name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/reference/wfinstances")
        .join(format!("{app}-chameleon-{name}-001.json"));
    assert!(
        path.is_file(),
        "{} is missing: this test needs ../shared/reference beside the repository",
        path.display()
    );
    path
}

fn loaded(paths: &[PathBuf]) -> Vec<(Trace, gridbed::config::Scenario)> {
    paths
        .iter()
        .map(|p| {
            let t = Trace::read(p).unwrap();
            let s = calibrate::testbed_for(Path::new(TESTBED), &t, None).unwrap();
            (t, s)
        })
        .collect()
}

/// Calibrated on a platform's small run, the model predicts its large run
/// with the errors `docs/reproduction/traces.md` reports (a regression
/// bound: each may shrink, none may grow by more than 3 points).
#[test]
#[ignore = "needs ../shared/reference"]
fn a_small_run_calibrates_the_prediction_of_a_large_one() {
    for (small, large, reported) in [
        ("2mass-005d", "2mass-02d", 0.557_f64),
        ("2mass-025d", "2mass-04d", -0.084),
        ("dss-05d", "dss-15d", -0.788),
    ] {
        let fit = calibrate::calibrate(
            &loaded(&[real(small)]),
            &[Knob::JobStartDelay],
            &[],
            &loaded(&[real(large)]),
        )
        .unwrap();
        let (f, p) = (&fit.fitted[0], &fit.predicted[0]);
        // dss-05d's makespan is below what HTCondor's default 60-s cycle
        // gives even with no start delay: its fit is off by 12%.
        assert!(f.error.abs() <= 0.13, "{small} fitted: {f:?}");
        assert!(
            p.error.abs() <= reported.abs() + 0.03,
            "{small} → {large}: {:+.1}% where the docs report {:+.1}%",
            100.0 * p.error,
            100.0 * reported
        );
    }
}

/// Fitted on both runs of a platform, two knobs (a serial stage and a
/// per-job latency) explain both makespans within 7%.
#[test]
#[ignore = "needs ../shared/reference"]
fn both_runs_of_a_platform_fit_with_two_knobs() {
    for (small, large) in [
        ("2mass-005d", "2mass-02d"),
        ("2mass-025d", "2mass-04d"),
        ("dss-05d", "dss-15d"),
    ] {
        let fit = calibrate::calibrate(
            &loaded(&[real(small), real(large)]),
            &[Knob::JobStartDelay, Knob::PostscriptOverhead],
            &[],
            &[],
        )
        .unwrap();
        for p in &fit.fitted {
            assert!(p.error.abs() <= 0.075, "{small}+{large}: {p:?}");
        }
    }
}

/// 1000genome's two 4-chromosome runs, fitted with the default knobs, set
/// the platform's data path (the machines' interface, condorio) and predict
/// the other six runs and Montage on the same machines with the errors
/// `docs/reproduction/traces.md` reports (each within 2 points), each
/// within its interval.
#[test]
#[ignore = "needs ../shared/reference"]
fn the_platforms_data_path_is_fitted_and_predicts_the_other_runs() {
    let genome = |n: &str| run_of("1000genome", n);
    let fit_on = loaded(&[genome("4ch-100k"), genome("4ch-250k")]);
    let choice = calibrate::choose(&fit_on);
    assert_eq!(
        choice.knobs,
        [Knob::JobStartDelay, Knob::Bandwidth("machine".into())],
        "{:?}",
        choice.reasons
    );
    assert_eq!(choice.staging, Staging::ALL);
    let others = [
        ("2ch-100k", 0.027),
        ("2ch-250k", 0.088),
        ("6ch-100k", 0.007),
        ("6ch-250k", -0.014),
        ("8ch-100k", -0.056),
        ("8ch-250k", -0.313),
    ];
    let mut predict: Vec<PathBuf> = others.iter().map(|(n, _)| genome(n)).collect();
    predict.extend([real("dss-05d"), real("dss-15d")]);
    let fit =
        calibrate::calibrate(&fit_on, &choice.knobs, &choice.staging, &loaded(&predict)).unwrap();
    assert_eq!(fit.staging, Some(Staging::Condorio), "{:?}", fit.candidates);
    let sharedfs = fit
        .candidates
        .iter()
        .find(|m| m.staging == Some(Staging::Sharedfs))
        .unwrap();
    assert!(sharedfs.rms_error > 0.04, "{sharedfs:?}");
    let reported = [0.001, -0.001]
        .into_iter()
        .chain(others.iter().map(|(_, e)| *e))
        .chain([0.123, 0.171]);
    for (p, r) in fit.fitted.iter().chain(&fit.predicted).zip(reported) {
        assert!(
            (p.error - r).abs() <= 0.02,
            "{}: {:+.1}% where the docs report {:+.1}%",
            p.trace,
            100.0 * p.error,
            100.0 * r
        );
    }
    let rate = fit.value(&Knob::Bandwidth("machine".into())).unwrap();
    assert!((rate / 50.4e6 - 1.0).abs() < 0.05, "{rate}");
    // Every run predicted within its 80% interval (the knob values that
    // fit the pair, widened by the model's error), as the page reports.
    for p in &fit.predicted {
        let [lo, hi] = p.interval.unwrap();
        assert!(
            lo <= p.recorded && p.recorded <= hi,
            "{}: recorded {:.0} s outside [{lo:.0}, {hi:.0}]",
            p.trace,
            p.recorded
        );
    }
}

/// Each application's default fit predicting the other's runs on the same
/// machines, as the cross-application table of
/// `docs/reproduction/traces.md` reports them (within 2 points).
#[test]
#[ignore = "needs ../shared/reference"]
fn one_application_predicts_another_on_the_same_machines() {
    // (application, run) fitted on; (application, run, reported error).
    type Fitted = &'static [(&'static str, &'static str)];
    type Reported = &'static [(&'static str, &'static str, f64)];
    let cases: [(Fitted, Reported); 3] = [
        (
            &[("montage", "dss-05d"), ("montage", "dss-15d")],
            &[
                ("1000genome", "2ch-100k", -0.218),
                ("1000genome", "4ch-250k", -0.373),
                ("1000genome", "8ch-250k", -0.533),
            ],
        ),
        (
            &[
                ("epigenomics", "ilmn-1seq-100k"),
                ("epigenomics", "ilmn-6seq-100k"),
            ],
            &[
                ("cycles", "10l-1c-9p", -0.253),
                ("cycles", "1l-1c-9p", -0.302),
            ],
        ),
        (
            &[("cycles", "1l-1c-9p"), ("cycles", "10l-1c-9p")],
            &[
                ("epigenomics", "hep-1seq-100k", 0.126),
                ("epigenomics", "hep-7seq-100k", -0.159),
                ("epigenomics", "ilmn-1seq-100k", 0.124),
                ("epigenomics", "ilmn-6seq-100k", 0.211),
            ],
        ),
    ];
    for (fitted, predicted) in cases {
        let fit_on = loaded(&fitted.iter().map(|(a, n)| run_of(a, n)).collect::<Vec<_>>());
        let others = loaded(
            &predicted
                .iter()
                .map(|(a, n, _)| run_of(a, n))
                .collect::<Vec<_>>(),
        );
        let choice = calibrate::choose(&fit_on);
        let fit = calibrate::calibrate(&fit_on, &choice.knobs, &choice.staging, &others).unwrap();
        for (p, (_, _, r)) in fit.predicted.iter().zip(predicted) {
            assert!(
                (p.error - r).abs() <= 0.02,
                "{}: {:+.1}% where the docs report {:+.1}%",
                p.trace,
                100.0 * p.error,
                100.0 * r
            );
        }
    }
}

/// A WfFormat 1.5 run of a `n`-job chain (10 s each) on one 2-core machine
/// that took `makespan` s.
fn chain_trace(dir: &Path, n: usize, makespan: f64) -> PathBuf {
    chain_trace_on(dir, n, makespan, "m1")
}

/// [`chain_trace`] on machine `machine`, written as `{machine}-{n}.json`.
fn chain_trace_on(dir: &Path, n: usize, makespan: f64, machine: &str) -> PathBuf {
    let tasks: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            serde_json::json!({
                "name": format!("t{i}"), "id": format!("t{i}"),
                "parents": if i > 0 { vec![format!("t{}", i - 1)] } else { vec![] },
                "children": if i + 1 < n { vec![format!("t{}", i + 1)] } else { vec![] },
                "inputFiles": [], "outputFiles": []
            })
        })
        .collect();
    let runs: Vec<serde_json::Value> = (0..n)
        .map(|i| serde_json::json!({"id": format!("t{i}"), "runtimeInSeconds": 10.0, "machines": [machine]}))
        .collect();
    let doc = serde_json::json!({
        "name": "chain", "schemaVersion": "1.5",
        "workflow": {
            "specification": {"tasks": tasks, "files": []},
            "execution": {
                "makespanInSeconds": makespan, "executedAt": "2026-01-01T00:00:00Z",
                "tasks": runs,
                // A `gpu` machine is other hardware: a platform of its own.
                "machines": [{"nodeName": machine,
                    "cpu": {"coreCount": if machine.starts_with("gpu") { 8 } else { 2 }}}]
            }
        }
    });
    let path = if machine == "m1" {
        dir.join("chain.json")
    } else {
        dir.join(format!("{machine}-{n}.json"))
    };
    std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
    path
}

#[test]
fn validate_trace_sets_the_prediction_beside_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let trace = chain_trace(dir.path(), 3, 400.0);
    let json = dir.path().join("p.json");
    let (code, out, err) = gridbed(&[
        "validate",
        TESTBED,
        "--trace",
        trace.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let p: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(p["recorded"], 400.0);
    assert_eq!(p["jobs"], 3);
    // Three 10-s jobs in a chain: each waits for a negotiation cycle (every
    // 60 s) after its parent's end is noticed (every 5 s) and its
    // postscript (5 s) ran.
    let predicted = p["predicted"].as_f64().unwrap();
    assert!(
        predicted > 2.0 * 60.0 && predicted < 3.0 * 80.0,
        "{predicted}"
    );
    let levels = p["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 3);
    // The last level's program ends before the run: DAGMan notices it
    // (≤ 5 s) and its postscript runs (5 s).
    let last = levels[2]["predicted"].as_f64().unwrap();
    assert!(
        last <= predicted && last >= predicted - 10.0 - 1e-9,
        "{last} vs {predicted}"
    );
    assert!(out.contains("recorded") && out.contains("400s"), "{out}");
}

#[test]
fn calibrate_fits_a_knob_and_its_table_reproduces_the_fit() {
    let dir = tempfile::tempdir().unwrap();
    let trace = chain_trace(dir.path(), 3, 400.0);
    let table = dir.path().join("fit.toml");
    let (code, out, err) = gridbed(&[
        "calibrate",
        trace.to_str().unwrap(),
        "--testbed",
        TESTBED,
        "--fit",
        "negotiator_interval",
        "--out",
        table.to_str().unwrap(),
        "--json",
        dir.path().join("fit.json").to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let fit: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("fit.json")).unwrap()).unwrap();
    let fit_error = fit["fitted"][0]["error"].as_f64().unwrap();
    assert!(fit_error.abs() < 0.02, "{out}");
    let fitted = std::fs::read_to_string(&table).unwrap();
    assert!(
        fitted.contains("[manager]") && fitted.contains("[manager.wms]"),
        "{fitted}"
    );
    // The testbed with the fitted tables in place of its own predicts the
    // trace as the fit did.
    let base = std::fs::read_to_string(TESTBED).unwrap();
    let start = base.find("[manager]").unwrap();
    let end = base.find("[[site]]").unwrap();
    let body = format!("{}{fitted}\n{}", &base[..start], &base[end..]).replace(
        "../../tests/fixtures",
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"),
    );
    let testbed = dir.path().join("fitted.toml");
    std::fs::write(&testbed, &body).unwrap();
    let t = Trace::read(&trace).unwrap();
    let s = calibrate::scenario_for(&testbed, &t, None).unwrap();
    let p = calibrate::predict(&t, &s).unwrap();
    assert!((p.error - fit_error).abs() < 1e-9, "{p:?}\n{body}");
    assert!(out.contains("negotiator_interval"), "{out}");
}

#[test]
fn a_specification_without_a_run_is_no_trace() {
    let (code, _, err) = gridbed(&[
        "validate",
        TESTBED,
        "--trace",
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/workflows/diamond-1.3.json"
        ),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("diamond-1.3.json: workflow.execution"),
        "{err}"
    );
}

#[test]
fn calibrate_refuses_what_it_cannot_fit() {
    let dir = tempfile::tempdir().unwrap();
    let a = chain_trace_on(dir.path(), 3, 400.0, "node-1");
    let b = chain_trace_on(dir.path(), 4, 500.0, "gpu-1");
    let calibrate = |args: &[&str]| {
        let mut all = vec!["calibrate", "--testbed", TESTBED];
        all.extend_from_slice(args);
        gridbed(&all)
    };
    // Traces of two platforms (other cores), fitted or predicted.
    let (code, _, err) = calibrate(&[a.to_str().unwrap(), "--predict", b.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("two platforms") && err.contains("node-1") && err.contains("gpu-1"),
        "{err}"
    );
    // Another name on the same hardware: one platform, a warning.
    let c = chain_trace_on(dir.path(), 4, 500.0, "cc-worker-1");
    let (code, _, err) = calibrate(&[
        a.to_str().unwrap(),
        "--fit",
        "job_start_delay",
        "--predict",
        c.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("warning: node-1 (node-1-3) and cc-worker-1 (cc-worker-1-4) have other names but the same hardware (2 cores)"),
        "{err}"
    );
    // A workflow that records no run.
    let spec = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/workflows/diamond-1.3.json"
    );
    let (code, _, err) = calibrate(&[spec]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("workflow.execution"), "{err}");
    // A knob the testbed lacks: the error lists those it has.
    let (code, _, err) = calibrate(&[a.to_str().unwrap(), "--fit", "wan.bandwidth"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("`wan.bandwidth`")
            && err.contains("submit.bandwidth")
            && err.contains("machine.bandwidth_in")
            && err.contains("staging"),
        "{err}"
    );
    let (code, _, err) = calibrate(&[a.to_str().unwrap(), "--fit", "staging=nfs"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("condorio, nonsharedfs or sharedfs"), "{err}");
}

/// Four chains whose makespans grow by 100 s a job (one left 50 s
/// slower): the candidates are cross-validated, each trace's left-out
/// prediction and interval printed with the coverage, a predicted trace
/// gets its interval in the table, the JSON and the chart; `--level`
/// outside (0, 1) is refused; `--method newton` linearises the left-out
/// fits.
#[test]
fn calibrate_cross_validates_and_gives_intervals_with_their_coverage() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fit_on: Vec<PathBuf> = [(3, 400.0), (4, 500.0), (6, 750.0), (8, 900.0)]
        .iter()
        .map(|(n, m)| chain_trace_on(d, *n, *m, "node-1"))
        .collect();
    let predict = chain_trace_on(d, 5, 600.0, "node-2");
    let json = d.join("fit.json");
    let svg = d.join("fit.svg");
    let mut args: Vec<&str> = vec!["calibrate"];
    args.extend(fit_on.iter().map(|p| p.to_str().unwrap()));
    args.extend([
        "--testbed",
        TESTBED,
        "--level",
        "0.9",
        "--predict",
        predict.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    let (code, out, err) = gridbed(&args);
    assert_eq!(code, Some(0), "{out}{err}");
    for line in [
        "4 traces: 2 candidate knob sets are cross-validated",
        "each trace left out, predicted by the fit on the others:",
        "90% interval",
        "coverage by leave-one-out:",
        "chosen: ",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
    let fit: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let chosen = fit["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == fit["chosen"])
        .unwrap();
    let left_out = chosen["cross_validated"]["left_out"].as_array().unwrap();
    assert_eq!(left_out.len(), 4, "{chosen}");
    assert_eq!(fit["interval"]["level"], 0.9);
    assert_eq!(fit["interval"]["traces"], 4);
    let [lo, hi] = [0, 1].map(|i| fit["predicted"][0]["interval"][i].as_f64().unwrap());
    let p = fit["predicted"][0]["predicted"].as_f64().unwrap();
    assert!(lo < p && p < hi, "{}", fit["predicted"][0]);
    assert!(
        std::fs::read_to_string(&svg)
            .unwrap()
            .contains("predicted (1)")
    );
    let mut bad = args.clone();
    let level = bad.iter().position(|a| *a == "0.9").unwrap();
    bad[level] = "80";
    let (code, _, err) = gridbed(&bad);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("expected a level between 0 and 1"), "{err}");
    // Newton's method: the left-out fits linearised, said in the output
    // and the JSON; a method it does not know is refused.
    let mut newton = args.clone();
    newton.extend(["--method", "newton"]);
    let (code, out, err) = gridbed(&newton);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("left-out fits linearised"), "{out}");
    let fit: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let methods: Vec<&serde_json::Value> = fit["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["cross_validated"].get("method"))
        .collect();
    assert!(
        !methods.is_empty() && methods.iter().all(|m| *m == "newton"),
        "{fit}"
    );
    newton.pop();
    newton.push("gradient");
    let (code, _, err) = gridbed(&newton);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("simplex") && err.contains("newton"), "{err}");
}

#[test]
fn calibrate_fits_each_data_configuration_and_writes_units() {
    let dir = tempfile::tempdir().unwrap();
    let a = chain_trace_on(dir.path(), 3, 400.0, "node-1");
    let b = chain_trace_on(dir.path(), 6, 700.0, "node-1");
    let json = dir.path().join("fit.json");
    let (code, out, err) = gridbed(&[
        "calibrate",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--testbed",
        TESTBED,
        "--fit",
        "job_start_delay,submit.bandwidth,staging",
        "--json",
        json.to_str().unwrap(),
        "--svg",
        dir.path().join("fit.svg").to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let fit: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let modes: Vec<&str> = fit["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["staging"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["condorio", "nonsharedfs", "sharedfs"]);
    let rate = &fit["knobs"][1];
    assert_eq!(rate["knob"], "submit.bandwidth");
    assert_eq!(rate["unit"], "bytes_per_second");
    assert!(rate["text"].as_str().unwrap().contains("bit/s)"), "{rate}");
    // Searched within an interface's physical bounds.
    let v = rate["value"].as_f64().unwrap();
    assert!((1.25e6..=12.5e9).contains(&v), "{rate}");
    assert!(fit["staging"].is_string(), "{fit}");
    assert!(out.contains("candidates (rms error in-sample"), "{out}");
    assert!(
        out.contains("no cross-validation: 2 trace(s) fitted"),
        "{out}"
    );
    let svg = std::fs::read_to_string(dir.path().join("fit.svg")).unwrap();
    assert!(svg.contains("fitted (2)") && svg.contains("±10%"), "{svg}");
    // Without --fit the choice is printed with its reasons: chains move no
    // bytes, so no rate.
    // With two traces the intervals are widened by the model's error,
    // the user's if given, and it is said how.
    let mut args = vec![
        "calibrate",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--testbed",
        TESTBED,
        "--json",
        json.to_str().unwrap(),
        "--model-error",
        "0.25",
    ];
    let (code, out, err) = gridbed(&args);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("knobs chosen") && out.contains("no rate"),
        "{out}"
    );
    assert!(
        out.contains("widened by the model's error on runs not fitted (25.0% sd"),
        "{out}"
    );
    let fit: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(fit["ranges"]["confidence"]["model_error"], 0.25, "{fit}");
    assert_eq!(fit["ranges"]["confidence"]["level"], 0.8, "{fit}");
    *args.last_mut().unwrap() = "3";
    let (code, _, err) = gridbed(&args);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("expected the model's error"), "{err}");
}

/// The serial stages are the manager's: the live engine carries them out
/// on its real clock as the simulator does on its counted one.
#[test]
fn live_and_sim_agree_with_the_wms_stages_on() {
    let dir = tempfile::tempdir().unwrap();
    let trace = chain_trace(dir.path(), 4, 400.0);
    let (code, out, err) = gridbed(&[
        "validate",
        TESTBED,
        "--workflow",
        trace.to_str().unwrap(),
        "--tolerance",
        "0.05",
        "-q",
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
}
