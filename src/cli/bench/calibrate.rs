//! `gridbed bench calibrate`: `gridbed calibrate` over 20 traces of one
//! platform with the default knob choice, as a user runs it: a ladder of
//! knob sets under each data configuration, each cross-validated (leave
//! one trace out), Newton's method beyond eight traces (issue 63; the
//! speed goal of issues 42 and 63: ≤ 60 s on a 2-core machine). The traces are gridbed's own: epigenomics runs of 40 to 900
//! tasks on a known platform (two 16-core machines that receive at
//! 25 MB/s, a submit host that sends at 60 MB/s, condorio), each written
//! with `gridbed run --wfformat`; the fit starts from 1 GB/s everywhere and
//! must find the machines' rate again, the one the runs were bound by.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use super::{Failure, Figure};

/// The platform the traces ran on; `RATES` are filled in per file.
const PLATFORM: &str = r#"
strategy = "round-robin"
replica_policy = "REPLICA"
origin = "submit"
[emulation]
time_scale = 100
byte_scale = 1000
[manager]
maxpre = 0
prescript_interval = 0
postscript_overhead = 5
[manager.wms]
model = "htcondor"
job_start_delay = 2
job_start_count = 1
[[site]]
name = "submit"
new = true
storage = true
cpus = 0
disk = "10 TB"
SUBMIT
stream_cap = "unlimited"
max_connections = 1000
MACHINES
[workflow]
generator = "epigenomics"
tasks = TASKS
chunks = 8
"#;

/// One execution site of the platform.
fn machine(name: &str, rates: &str) -> String {
    format!(
        "[[site]]\nname = \"{name}\"\nnew = true\ncpus = 16\ndisk = \"1 TB\"\n{rates}\n\
         stream_cap = \"unlimited\"\nmax_connections = 1000\n"
    )
}

/// The truth's machines receive at this rate (B/s).
const MACHINE_IN: f64 = 25e6;

fn write(path: &Path, seed: usize, tasks: usize, truth: bool) -> Result<(), Failure> {
    let (replica, submit, machines) = if truth {
        (
            "return",
            "bandwidth_out = \"60 MB/s\"\nbandwidth_in = \"200 MB/s\"",
            ["node-1", "node-2"]
                .map(|n| machine(n, "bandwidth_in = \"25 MB/s\"\nbandwidth_out = \"40 MB/s\""))
                .concat(),
        )
    } else {
        (
            "caching",
            "bandwidth = \"1 GB/s\"",
            machine("machine", "bandwidth = \"1 GB/s\""),
        )
    };
    let text = format!("name = \"platform\"\nseed = {seed}\n{PLATFORM}")
        .replace("REPLICA", replica)
        .replace("SUBMIT", submit)
        .replace("MACHINES", &machines)
        .replace("TASKS", &tasks.to_string());
    std::fs::write(path, text)?;
    Ok(())
}

/// The figures for `traces` traces.
pub(super) fn calibrate(traces: usize) -> Result<Vec<Figure>, Failure> {
    let exe = std::env::current_exe()?;
    let dir = tempfile::tempdir()?;
    let mut paths = Vec::new();
    for i in 0..traces {
        let (testbed, trace) = (
            dir.path().join(format!("truth-{i}.toml")),
            dir.path().join(format!("run-{i:02}.json")),
        );
        write(&testbed, i + 1, 40 + i * 45, true)?;
        let status = Command::new(&exe)
            .args(["run", "--engine", "sim", "-q"])
            .arg(&testbed)
            .arg("--wfformat")
            .arg(&trace)
            .stdout(Stdio::null())
            .status()?;
        if !status.success() {
            return Err(format!("`gridbed run {}` failed: {status}", testbed.display()).into());
        }
        paths.push(trace);
    }
    let fit_testbed = dir.path().join("platform.toml");
    write(&fit_testbed, 1, 10, false)?;
    let json = dir.path().join("fit.json");
    let t = Instant::now();
    let status = Command::new(&exe)
        .arg("calibrate")
        .args(&paths)
        .arg("--testbed")
        .arg(&fit_testbed)
        .arg("--out")
        .arg(dir.path().join("fit.toml"))
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::null())
        .status()?;
    let wall = t.elapsed().as_secs_f64();
    if !status.success() {
        return Err(format!("`gridbed calibrate` failed: {status}").into());
    }
    let fit: serde_json::Value = serde_json::from_slice(&std::fs::read(&json)?)?;
    // The machines' rate the chosen knob set fitted (their interface, or
    // its receiving side), if it fitted one.
    let found = fit["knobs"]
        .as_array()
        .and_then(|ks| {
            ks.iter().find(|k| {
                k["knob"] == "machine.bandwidth" || k["knob"] == "machine.bandwidth_in"
            })
        })
        .and_then(|k| k["value"].as_f64())
        .unwrap_or(f64::NAN);
    let chosen = fit["chosen"].as_str().unwrap_or("?").to_string();
    let rms = fit["rms_error"].as_f64().unwrap_or(f64::NAN);
    Ok(vec![
        Figure {
            name: format!(
                "calibrate: {traces} traces, the default knob choice, cross-validated (whole command; chose {chosen}, fit rms {:.1}%)",
                100.0 * rms
            ),
            value: wall,
            unit: "s".into(),
            goal: Some("≤ 60".into()),
            met: wall <= 60.0,
        },
        Figure {
            name: format!(
                "calibrate: the machines' rate found / the runs' ({:.1} / {:.1} MB/s)",
                found / 1e6,
                MACHINE_IN / 1e6
            ),
            value: found / MACHINE_IN,
            unit: "×".into(),
            goal: Some("0.95–1.05".into()),
            met: (found / MACHINE_IN - 1.0).abs() <= 0.05,
        },
    ])
}
