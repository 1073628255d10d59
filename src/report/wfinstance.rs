//! A run written back as a WfCommons instance (`gridbed run --wfformat`):
//! WfFormat 1.5, the format of the real Pegasus traces in WfInstances, so
//! that WfCommons' tools, WRENCH and other simulators read an emulated run
//! as they read a real one.
//!
//! `specification` is the workflow (tasks, edges, files with sizes);
//! `execution` is what this run did: the sites are the machines (`nodeName`,
//! `cpu.coreCount` = slots), and each task that ended has the start
//! (`executedAt`) and runtime (start to the site's report of its end, as
//! kickstart measures it: without DAGMan's notice or the postscript) of its
//! last attempt, the site it ran on and
//! the bytes it read and wrote. Times are nominal seconds after the run's
//! start, written as RFC 3339 timestamps from `epoch` (the wall-clock start
//! of the command).
//!
//! WfFormat allows only `[0-9a-zA-Z-_.#]` in task ids and also `/:` in file
//! ids; any other byte of a name (and `#` itself) is written `#XX` (hex),
//! which keeps ids unique. Task names are written as they are; file ids are
//! decoded again by the parser when the instance says gridbed wrote it
//! (`runtimeSystem.name`), so the file reads back to the same workflow.

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::config::Scenario;
use crate::core::records::{Outcome, Records};
use crate::workflow::formats::wfformat::{RUNTIME_SYSTEM, escape_id};

fn task_id(name: &str) -> String {
    escape_id(name, "")
}

fn file_id(name: &str) -> String {
    escape_id(name, "/:")
}

fn timestamp(epoch: SystemTime, t: f64) -> String {
    let at = epoch + Duration::from_secs_f64(t.max(0.0));
    humantime::format_rfc3339_micros(at).to_string()
}

/// The run as a WfFormat 1.5 instance.
pub fn instance(
    scenario: &Scenario,
    records: &Records,
    engine: &str,
    makespan: f64,
    epoch: SystemTime,
) -> Value {
    let wf = &scenario.workflow;
    let ids: Vec<String> = wf.jobs.iter().map(|j| task_id(&j.name)).collect();
    let files =
        |fs: &[usize]| -> Vec<String> { fs.iter().map(|&f| file_id(&wf.files[f].name)).collect() };
    let tasks: Vec<Value> = wf
        .jobs
        .iter()
        .enumerate()
        .map(|(j, job)| {
            json!({
                "name": job.name,
                "id": ids[j],
                "parents": job.parents.iter().map(|&p| &ids[p]).collect::<Vec<_>>(),
                "children": wf.children[j].iter().map(|&c| &ids[c]).collect::<Vec<_>>(),
                "inputFiles": files(&job.inputs),
                "outputFiles": files(&job.outputs),
            })
        })
        .collect();
    let spec_files: Vec<Value> = wf
        .files
        .iter()
        .map(|f| json!({"id": file_id(&f.name), "sizeInBytes": f.size}))
        .collect();
    let bytes = |fs: &[usize]| -> u64 { fs.iter().map(|&f| wf.files[f].size).sum() };
    let executed: Vec<Value> = records
        .jobs
        .iter()
        .enumerate()
        .filter_map(|(j, r)| {
            let a = r
                .attempts
                .iter()
                .rev()
                .find(|a| a.outcome == Outcome::Ended)?;
            let (start, end) = (a.started?, a.finished?);
            let job = &wf.jobs[j];
            let mut task = json!({
                "id": ids[j],
                "runtimeInSeconds": end - start,
                "executedAt": timestamp(epoch, start),
                "coreCount": 1,
                "readBytes": bytes(&job.inputs),
                "writtenBytes": bytes(&job.outputs),
                "machines": [scenario.sites[a.site].info.name],
            });
            if let Some(program) = &job.transformation {
                task["command"] = json!({ "program": program });
            }
            Some(task)
        })
        .collect();
    let machines: Vec<Value> = scenario
        .sites
        .iter()
        .filter(|s| s.info.cpus > 0)
        .map(|s| json!({"nodeName": s.info.name, "cpu": {"coreCount": s.info.cpus}}))
        .collect();
    json!({
        "name": scenario.name,
        "description": format!(
            "a gridbed {engine} run of testbed `{}` (site selector {}, seed {})",
            scenario.name, scenario.strategy, scenario.seed
        ),
        "createdAt": humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        "schemaVersion": "1.5",
        "runtimeSystem": {"name": RUNTIME_SYSTEM, "version": env!("CARGO_PKG_VERSION")},
        "workflow": {
            "specification": {"tasks": tasks, "files": spec_files},
            "execution": {
                "makespanInSeconds": makespan,
                "executedAt": timestamp(epoch, 0.0),
                "tasks": executed,
                "machines": machines,
            },
        },
    })
}
