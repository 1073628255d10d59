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

use serde::Serialize;

use crate::config::Scenario;
use crate::core::Workflow;
use crate::core::records::{Outcome, Records};
use crate::workflow::formats::wfformat::{RUNTIME_SYSTEM, escape_id};

fn timestamp(epoch: SystemTime, t: f64) -> String {
    let at = epoch + Duration::from_secs_f64(t.max(0.0));
    humantime::format_rfc3339_micros(at).to_string()
}

/// A WfFormat 1.5 instance, serialised as it is built: names are borrowed
/// and every id escaped once.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Instance<'a> {
    name: &'a str,
    description: String,
    created_at: String,
    schema_version: &'static str,
    runtime_system: RuntimeSystem,
    workflow: WorkflowOut<'a>,
}

#[derive(Serialize)]
struct RuntimeSystem {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct WorkflowOut<'a> {
    specification: Specification<'a>,
    execution: Execution<'a>,
}

#[derive(Serialize)]
struct Specification<'a> {
    tasks: Vec<SpecTask<'a>>,
    files: Vec<SpecFile<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SpecTask<'a> {
    name: &'a str,
    id: &'a str,
    parents: Vec<&'a str>,
    children: Vec<&'a str>,
    input_files: Vec<&'a str>,
    output_files: Vec<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SpecFile<'a> {
    id: &'a str,
    size_in_bytes: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Execution<'a> {
    makespan_in_seconds: f64,
    executed_at: String,
    tasks: Vec<ExecTask<'a>>,
    machines: Vec<Machine<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ExecTask<'a> {
    id: &'a str,
    runtime_in_seconds: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    executed_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<Command<'a>>,
    core_count: u32,
    read_bytes: u64,
    written_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    machines: Option<[&'a str; 1]>,
}

impl<'a> ExecTask<'a> {
    /// Job `j` of `wf` run for `runtime` seconds, its program and bytes
    /// read and written; when and where it ran are the caller's.
    fn of(wf: &'a Workflow, ids: &'a [String], j: usize, runtime: f64) -> ExecTask<'a> {
        let job = &wf.jobs[j];
        let bytes = |fs: &[usize]| -> u64 { fs.iter().map(|&f| wf.files[f].size).sum() };
        ExecTask {
            id: &ids[j],
            runtime_in_seconds: runtime,
            executed_at: None,
            command: job
                .transformation
                .as_deref()
                .map(|program| Command { program }),
            core_count: 1,
            read_bytes: bytes(&job.inputs),
            written_bytes: bytes(&job.outputs),
            machines: None,
        }
    }
}

#[derive(Serialize)]
struct Command<'a> {
    program: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Machine<'a> {
    node_name: &'a str,
    cpu: Cpu,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Cpu {
    core_count: usize,
}

/// The run as a WfFormat 1.5 instance; `ids` and `file_ids` are the
/// escaped ids of [`ids`].
pub fn instance<'a>(
    scenario: &'a Scenario,
    records: &Records,
    engine: &str,
    makespan: f64,
    epoch: SystemTime,
    (ids, file_ids): &'a (Vec<String>, Vec<String>),
) -> Instance<'a> {
    let wf = &scenario.workflow;
    let executed = records
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
            Some(ExecTask {
                executed_at: Some(timestamp(epoch, start)),
                machines: Some([&scenario.sites[a.site].info.name]),
                ..ExecTask::of(wf, ids, j, end - start)
            })
        })
        .collect();
    let machines = scenario
        .sites
        .iter()
        .filter(|s| s.info.cpus > 0)
        .map(|s| Machine {
            node_name: &s.info.name,
            cpu: Cpu {
                core_count: s.info.cpus,
            },
        })
        .collect();
    let description = format!(
        "a gridbed {engine} run of testbed `{}` (site selector {}, seed {})",
        scenario.name, scenario.strategy, scenario.seed
    );
    Instance::new(
        &scenario.name,
        description,
        specification(wf, (ids, file_ids)),
        Execution {
            makespan_in_seconds: makespan,
            executed_at: timestamp(epoch, 0.0),
            tasks: executed,
            machines,
        },
    )
}

impl<'a> Instance<'a> {
    /// An instance that gridbed wrote, created now.
    fn new(
        name: &'a str,
        description: String,
        specification: Specification<'a>,
        execution: Execution<'a>,
    ) -> Instance<'a> {
        Instance {
            name,
            description,
            created_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            schema_version: "1.5",
            runtime_system: RuntimeSystem {
                name: RUNTIME_SYSTEM,
                version: env!("CARGO_PKG_VERSION"),
            },
            workflow: WorkflowOut {
                specification,
                execution,
            },
        }
    }
}

/// The tasks and files of `wf` as WfFormat's `specification`.
fn specification<'a>(
    wf: &'a Workflow,
    (ids, file_ids): (&'a [String], &'a [String]),
) -> Specification<'a> {
    let files =
        |fs: &[usize]| -> Vec<&'a str> { fs.iter().map(|&f| file_ids[f].as_str()).collect() };
    Specification {
        tasks: wf
            .jobs
            .iter()
            .enumerate()
            .map(|(j, job)| SpecTask {
                name: &job.name,
                id: &ids[j],
                parents: job.parents.iter().map(|&p| ids[p].as_str()).collect(),
                children: wf.children[j].iter().map(|&c| ids[c].as_str()).collect(),
                input_files: files(&job.inputs),
                output_files: files(&job.outputs),
            })
            .collect(),
        files: wf
            .files
            .iter()
            .zip(file_ids)
            .map(|(f, id)| SpecFile {
                id,
                size_in_bytes: f.size,
            })
            .collect(),
    }
}

/// A workflow (not a run) as a WfFormat 1.5 instance: its specification, and
/// an execution that gives each task its nominal runtime and program only,
/// so that any WfFormat reader (gridbed's, WfCommons', a simulator's) reads
/// the same DAG, runtimes and sizes; `ids` as [`ids`] makes them.
pub fn workflow_instance<'a>(
    name: &'a str,
    wf: &'a Workflow,
    (ids, file_ids): &'a (Vec<String>, Vec<String>),
) -> Instance<'a> {
    let tasks = (0..wf.jobs.len())
        .map(|j| ExecTask::of(wf, ids, j, wf.jobs[j].runtime))
        .collect();
    Instance::new(
        name,
        format!("workflow `{name}` written by gridbed (not a run)"),
        specification(wf, (ids, file_ids)),
        Execution {
            makespan_in_seconds: 0.0,
            executed_at: timestamp(SystemTime::now(), 0.0),
            tasks,
            machines: Vec::new(),
        },
    )
}

/// The WfFormat ids of a workflow's jobs and files (escaped where WfFormat
/// forbids a byte), for [`instance`] to borrow.
pub fn ids(wf: &Workflow) -> (Vec<String>, Vec<String>) {
    (
        wf.jobs.iter().map(|j| escape_id(&j.name, "")).collect(),
        wf.files.iter().map(|f| escape_id(&f.name, "/:")).collect(),
    )
}
