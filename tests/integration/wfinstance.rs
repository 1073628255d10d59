//! Runs written back as WfCommons instances (`gridbed run --wfformat`): they
//! read back to the same workflow, their task times are the run record's,
//! WfCommons' own validator accepts them, and `gridbed calibrate` fits a
//! knob from their task times.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use gridbed::calibrate::{self, Knob, Trace};
use gridbed::core::Workflow;
use gridbed::workflow::formats::{self, Options};
use serde_json::Value;

use crate::common::{gridbed, record_with_detail, run_testbed, write_testbed};

/// A WfFormat 1.5 workflow whose names hold bytes WfFormat ids may not.
const NAMED: &str = r#"{
  "name": "odd-names", "schemaVersion": "1.5",
  "workflow": {
    "specification": {
      "tasks": [
        {"name": "S1+split", "id": "a", "parents": [], "children": ["b", "c"],
         "inputFiles": ["in put.dat"], "outputFiles": ["out/1 of 2", "out/2#2"]},
        {"name": "left job", "id": "b", "parents": ["a"], "children": ["d"],
         "inputFiles": ["out/1 of 2"], "outputFiles": ["l.dat"]},
        {"name": "right", "id": "c", "parents": ["a"], "children": ["d"],
         "inputFiles": ["out/2#2"], "outputFiles": ["r.dat"]},
        {"name": "join", "id": "d", "parents": ["b", "c"], "children": [],
         "inputFiles": ["l.dat", "r.dat"], "outputFiles": ["final result"]}
      ],
      "files": [
        {"id": "in put.dat", "sizeInBytes": 3000000},
        {"id": "out/1 of 2", "sizeInBytes": 1000000},
        {"id": "out/2#2", "sizeInBytes": 2000000},
        {"id": "l.dat", "sizeInBytes": 500000},
        {"id": "r.dat", "sizeInBytes": 700000},
        {"id": "final result", "sizeInBytes": 100}
      ]
    },
    "execution": {"makespanInSeconds": 1, "executedAt": "2026-01-01T00:00:00Z",
      "tasks": [{"id": "a", "runtimeInSeconds": 30}, {"id": "b", "runtimeInSeconds": 60},
                {"id": "c", "runtimeInSeconds": 45}, {"id": "d", "runtimeInSeconds": 20}]}
  }
}"#;

const TESTBED: &str = r#"
strategy = "round-robin"
replica_policy = "caching"
origin = "submit-host"
[emulation]
time_scale = 200
byte_scale = 1000
[manager]
postscript_overhead = 5
[workflow]
file = "odd.json"
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 2
[[site]]
name = "grid3-02"
cpus = 2
"#;

/// Jobs (name, inputs, outputs), edges and files (name, size) of a workflow.
type Shape = (
    BTreeSet<(String, Vec<String>, Vec<String>)>,
    BTreeSet<(String, String)>,
    BTreeSet<(String, u64)>,
);

fn shape(wf: &Workflow) -> Shape {
    let names = |fs: &[usize]| -> Vec<String> {
        let mut v: Vec<String> = fs.iter().map(|&f| wf.files[f].name.clone()).collect();
        v.sort();
        v
    };
    let jobs = wf
        .jobs
        .iter()
        .map(|j| (j.name.clone(), names(&j.inputs), names(&j.outputs)))
        .collect();
    let edges = crate::common::edges(wf);
    let files = wf.files.iter().map(|f| (f.name.clone(), f.size)).collect();
    (jobs, edges, files)
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Seconds since the Unix epoch of an RFC 3339 timestamp.
fn seconds(v: &Value) -> f64 {
    humantime::parse_rfc3339_weak(v.as_str().unwrap())
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Runs the odd-names testbed on `engine` with `--wfformat` and `--json`;
/// returns (the workflow as the testbed read it, the instance, the record).
fn run_written(dir: &Path, engine: &str) -> (Workflow, PathBuf, Value) {
    std::fs::write(dir.join("odd.json"), NAMED).unwrap();
    let tb = write_testbed(dir, "t.toml", TESTBED);
    let (inst, rec) = (dir.join("run.wf.json"), dir.join("run.json"));
    let (code, out, err) = run_testbed(
        &tb,
        &[
            "--engine",
            engine,
            "--wfformat",
            inst.to_str().unwrap(),
            "--json",
            rec.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    let original = formats::load(&dir.join("odd.json"), &Options::default())
        .unwrap()
        .workflow;
    (original, inst, record_with_detail(&rec))
}

fn assert_reads_back_with_the_records_times(engine: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (original, inst, record) = run_written(dir.path(), engine);
    let back = formats::load(&inst, &Options::default()).unwrap();
    assert!(back.warnings.is_empty(), "{:?}", back.warnings);
    assert_eq!(shape(&back.workflow), shape(&original));

    let doc = read(&inst);
    let ex = &doc["workflow"]["execution"];
    let t0 = seconds(&ex["executedAt"]);
    let sites: BTreeSet<&str> = ex["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["nodeName"].as_str().unwrap())
        .collect();
    assert_eq!(sites, BTreeSet::from(["grid3-01", "grid3-02"]));
    let tasks = ex["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), original.jobs.len());
    let spec = doc["workflow"]["specification"]["tasks"]
        .as_array()
        .unwrap();
    for job in record["jobs"].as_array().unwrap() {
        let name = job["name"].as_str().unwrap();
        let id = spec.iter().find(|t| t["name"] == name).unwrap()["id"].clone();
        let task = tasks.iter().find(|t| t["id"] == id).unwrap();
        let last = job["attempts"].as_array().unwrap().last().unwrap();
        let (started, finished) = (
            last["started"].as_f64().unwrap(),
            last["finished"].as_f64().unwrap(),
        );
        let start = seconds(&task["executedAt"]) - t0;
        let end = start + task["runtimeInSeconds"].as_f64().unwrap();
        assert!(
            (start - started).abs() < 1e-5,
            "{name}: {start} vs {started}"
        );
        assert!((end - finished).abs() < 1e-5, "{name}: {end} vs {finished}");
        assert_eq!(task["machines"][0], last["site"], "{name}");
        // The postscript comes after the program's end.
        assert!(last["ended"].as_f64().unwrap() >= finished + 5.0 - 1e-9);
    }
}

#[test]
fn a_simulated_run_reads_back_to_its_workflow_with_the_records_times() {
    assert_reads_back_with_the_records_times("sim");
}

#[test]
fn a_live_run_reads_back_to_its_workflow_with_the_records_times() {
    assert_reads_back_with_the_records_times("live");
}

/// A Python with WfCommons (`.ci/run` makes `target/wfcommons-venv`), or the
/// one `GRIDBED_WFCOMMONS_PYTHON` names.
fn wfcommons_python() -> PathBuf {
    let python = std::env::var_os("GRIDBED_WFCOMMONS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/wfcommons-venv/bin/python")
        });
    assert!(
        python.is_file(),
        "{} is missing: this test needs a Python with wfcommons (bash .ci/run makes it)",
        python.display()
    );
    python
}

#[test]
#[ignore = "needs ../shared/reference and a Python with wfcommons (.ci/run)"]
fn wfcommons_own_validator_accepts_a_written_run() {
    let schema =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference/wfcommons-schema.json");
    assert!(schema.is_file(), "{} is missing", schema.display());
    let dir = tempfile::tempdir().unwrap();
    let (_, inst, _) = run_written(dir.path(), "sim");
    let check = r#"
import json, logging, sys
logging.disable(logging.CRITICAL)
from wfcommons.wfinstances.schema import SchemaValidator
v = SchemaValidator(sys.argv[1])
try:
    v.validate_instance(json.load(open(sys.argv[2])))
except RuntimeError as e:
    print(e)
print(json.dumps({"errors": v.errors, "warnings": v.warnings}))
"#;
    let out = std::process::Command::new(wfcommons_python())
        .args(["-c", check])
        .arg(&schema)
        .arg(&inst)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    let verdict: Value = serde_json::from_str(last).unwrap();
    assert_eq!(verdict["errors"], serde_json::json!([]), "{stdout}");
    assert_eq!(verdict["warnings"], serde_json::json!([]), "{stdout}");
}

/// A run written with `job_start_delay = 7` is a trace with task times:
/// calibrated on the same platform with HTCondor's defaults, the fit finds
/// the 7 s again, and replays every task's start and end.
#[test]
fn calibrate_recovers_a_knob_from_a_written_runs_task_times() {
    let dir = tempfile::tempdir().unwrap();
    let testbed = Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/traces/chameleon.toml");
    let text = std::fs::read_to_string(&testbed).unwrap().replace(
        "model = \"htcondor\"",
        "model = \"htcondor\"\njob_start_delay = 7",
    );
    let slow = dir.path().join("slow.toml");
    std::fs::write(&slow, text).unwrap();
    let inst = dir.path().join("run.wf.json");
    let workflow = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/workflows/epigenomics-wfcommons-1.6.json");
    let (code, out, err) = gridbed(&[
        "run",
        slow.to_str().unwrap(),
        "--engine",
        "sim",
        "-q",
        "--workflow",
        workflow.to_str().unwrap(),
        "--wfformat",
        inst.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let trace = Trace::read(&inst).unwrap();
    assert_eq!(trace.times.len(), 57);
    // Replayed on the testbed it was written from, every time matches.
    let same = calibrate::scenario_for(&slow, &trace, None).unwrap();
    let p = calibrate::predict(&trace, &same).unwrap();
    assert_eq!(p.tasks_compared, 57);
    assert!(
        p.error.abs() < 1e-6 && p.task_error.unwrap() < 1e-6,
        "{p:?}"
    );
    // (Timestamps keep microseconds.)
    for l in &p.levels {
        assert!((l.recorded.unwrap() - l.predicted).abs() < 1e-5, "{l:?}");
    }
    // With HTCondor's defaults it is off, and the fit brings it back.
    let default = calibrate::testbed_for(&testbed, &trace, None).unwrap();
    let off = calibrate::predict(
        &trace,
        &calibrate::replay(default.clone(), &trace, None).unwrap(),
    )
    .unwrap();
    assert!(off.task_error.unwrap() > 0.05, "{off:?}");
    let fit = calibrate::calibrate(&[(trace, default)], &[Knob::JobStartDelay], &[], &[]).unwrap();
    let delay = fit.knobs[0].value;
    assert!((delay - 7.0).abs() < 0.1, "fitted {delay}");
    assert!(
        fit.fitted[0].task_error.unwrap() < 0.005,
        "{:?}",
        fit.fitted[0]
    );
}
