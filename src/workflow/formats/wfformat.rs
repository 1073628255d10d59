//! WfCommons WfFormat JSON, schema versions 1.0 through 1.6 — the format of
//! the WfCommons instances and of what today's `wfcommons` package writes.
//!
//! Where fields moved between versions (WfFormat's own migration tool records
//! them): 1.0–1.2 list `workflow.jobs`, 1.3–1.4 `workflow.tasks`; up to 1.4 a
//! task's `parents`/`children` name tasks by `name`, from 1.5 by `id` (both
//! are accepted at every version); some 1.3/1.4 files have no `children`; 1.4
//! renamed `runtime` → `runtimeInSeconds` and `size` → `sizeInBytes`; 1.5
//! splits `workflow.specification` (tasks with `inputFiles`/`outputFiles`,
//! files with sizes) from `workflow.execution` (runtimes). Edges are the union
//! of every `parents` and `children` list.
//!
//! Parsing is typed and single-pass over the text (serde ignores every field
//! it does not need), so a 100,000-task instance costs its bytes once.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use serde::Deserialize;

use super::{FormatError, Options, Parsed};
use crate::core::{File, JobSpec};

#[derive(Deserialize)]
struct Doc {
    #[serde(rename = "schemaVersion")]
    schema_version: Option<String>,
    #[serde(rename = "runtimeSystem")]
    runtime_system: Option<RuntimeSystem>,
    workflow: Workflow,
}

#[derive(Deserialize)]
struct RuntimeSystem {
    name: String,
}

#[derive(Deserialize)]
struct Workflow {
    jobs: Option<Vec<Task>>,
    tasks: Option<Vec<Task>>,
    specification: Option<Specification>,
    execution: Option<Execution>,
}

#[derive(Deserialize)]
struct Task {
    name: String,
    id: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    runtime: Option<f64>,
    #[serde(rename = "runtimeInSeconds")]
    runtime_in_seconds: Option<f64>,
    #[serde(default)]
    parents: Vec<String>,
    #[serde(default)]
    children: Vec<String>,
    #[serde(default)]
    files: Vec<FileUse>,
    #[serde(rename = "inputFiles", default)]
    input_files: Vec<String>,
    #[serde(rename = "outputFiles", default)]
    output_files: Vec<String>,
    category: Option<String>,
    /// The machine it ran on (1.0–1.4 traces).
    machine: Option<String>,
}

#[derive(Deserialize)]
struct FileUse {
    link: String,
    name: Option<String>,
    id: Option<String>,
    size: Option<f64>,
    #[serde(rename = "sizeInBytes")]
    size_in_bytes: Option<f64>,
}

#[derive(Deserialize)]
struct Specification {
    tasks: Vec<Task>,
    #[serde(default)]
    files: Vec<SpecFile>,
}

#[derive(Deserialize)]
struct SpecFile {
    id: String,
    #[serde(rename = "sizeInBytes")]
    size_in_bytes: Option<f64>,
    size: Option<f64>,
}

#[derive(Deserialize)]
struct Execution {
    #[serde(default)]
    tasks: Vec<ExecTask>,
}

#[derive(Deserialize)]
struct ExecTask {
    id: String,
    #[serde(rename = "runtimeInSeconds")]
    runtime_in_seconds: Option<f64>,
    runtime: Option<f64>,
    #[serde(default)]
    machines: Vec<String>,
}

/// The program of a task without a `category`: its name less a trailing
/// `_ID0000012` or `_00000012` (how Pegasus and WfCommons name task instances).
fn transformation_of(name: &str) -> String {
    match name.rsplit_once('_') {
        Some((head, tail))
            if !head.is_empty()
                && tail
                    .trim_start_matches("ID")
                    .chars()
                    .all(|c| c.is_ascii_digit()) =>
        {
            head.to_string()
        }
        _ => name.to_string(),
    }
}

/// Task types of Pegasus traces that move data rather than compute.
const AUXILIARY: [&str; 2] = ["auxiliary", "transfer"];

/// The rest of a workflow, as a WfFormat 1.5 instance: the jobs not `done`,
/// with their runtimes, files and the edges among them. What the done jobs
/// wrote becomes the instance's input files, so that `gridbed run
/// --workflow` finishes the work from there (a rescue file: DAGMan's rescue
/// DAG marks its ended nodes DONE; this one leaves them out).
pub fn rest(wf: &crate::core::Workflow, done: &[bool], name: &str) -> serde_json::Value {
    use serde_json::json;
    let left: Vec<usize> = (0..wf.jobs.len()).filter(|&j| !done[j]).collect();
    let mut files = std::collections::BTreeSet::new();
    let tasks: Vec<serde_json::Value> = left
        .iter()
        .map(|&j| {
            let job = &wf.jobs[j];
            files.extend(job.inputs.iter().chain(&job.outputs).copied());
            let names = |ids: &mut dyn Iterator<Item = usize>| -> Vec<&str> {
                ids.filter(|&p| !done[p])
                    .map(|p| wf.jobs[p].name.as_str())
                    .collect()
            };
            json!({
                "name": job.name,
                "id": job.name,
                "parents": names(&mut job.parents.iter().copied()),
                "children": names(&mut wf.children[j].iter().copied()),
                "inputFiles": job.inputs.iter().map(|&f| &wf.files[f].name).collect::<Vec<_>>(),
                "outputFiles": job.outputs.iter().map(|&f| &wf.files[f].name).collect::<Vec<_>>(),
            })
        })
        .collect();
    let files: Vec<serde_json::Value> = files
        .into_iter()
        .map(|f| json!({"id": wf.files[f].name, "sizeInBytes": wf.files[f].size}))
        .collect();
    let runtimes: Vec<serde_json::Value> = left
        .iter()
        .map(|&j| json!({"id": wf.jobs[j].name, "runtimeInSeconds": wf.jobs[j].runtime}))
        .collect();
    json!({
        "name": name,
        "description": "the rest of an unfinished gridbed run (a rescue file)",
        "schemaVersion": "1.5",
        "workflow": {
            "specification": {"tasks": tasks, "files": files},
            "execution": {"makespanInSeconds": 0, "tasks": runtimes},
        },
    })
}

/// `runtimeSystem.name` of the instances gridbed writes (`gridbed run
/// --wfformat`, `report::wfinstance`).
pub const RUNTIME_SYSTEM: &str = "gridbed";

/// `name` escaped to a WfFormat id: bytes outside `[0-9a-zA-Z-_.]` and the
/// extra characters `also` become `#XX`.
pub fn escape_id(name: &str, also: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        let c = b as char;
        if c.is_ascii_alphanumeric() || "-_.".contains(c) || (c != '#' && also.contains(c)) {
            out.push(c);
        } else {
            out.push_str(&format!("#{b:02X}"));
        }
    }
    out
}

/// The inverse of [`escape_id`]; `None` if `id` is not one it wrote.
pub fn unescape_id(id: &str) -> Option<String> {
    let bytes = id.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'#' {
            let hex = id.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Parses WfFormat text.
pub fn parse(
    text: &str,
    opts: &Options,
    err: &dyn Fn(String) -> FormatError,
) -> Result<Parsed, FormatError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let doc: Doc = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        err(format!(
            "line {}, column {}, at `{path}`: {inner}",
            inner.line(),
            inner.column()
        ))
    })?;
    let mut warnings = Vec::new();
    // gridbed escapes the bytes WfFormat forbids in file ids (`#XX`, see
    // `report::wfinstance`); its own instances read back to the names run.
    let ours = doc.runtime_system.is_some_and(|r| r.name == RUNTIME_SYSTEM);
    let file_name = |id: String| -> String {
        match ours {
            true => unescape_id(&id).unwrap_or(id),
            false => id,
        }
    };
    let wf = doc.workflow;
    let (mut tasks, spec_files, runtimes) = match (wf.specification, wf.tasks.or(wf.jobs)) {
        (Some(spec), _) => {
            // Each executed task's runtime and the machine it ran on.
            let runtimes: HashMap<String, (Option<f64>, Option<String>)> = wf
                .execution
                .map(|e| e.tasks)
                .unwrap_or_default()
                .into_iter()
                .map(|t| {
                    let machine = t.machines.into_iter().next();
                    (t.id, (t.runtime_in_seconds.or(t.runtime), machine))
                })
                .collect();
            (spec.tasks, Some(spec.files), runtimes)
        }
        (None, Some(tasks)) => (tasks, None, HashMap::default()),
        (None, None) => {
            return Err(err(format!(
                "at `workflow`: expected `jobs` (1.0–1.2), `tasks` (1.3–1.4) or `specification` (1.5+){}",
                doc.schema_version
                    .map(|v| format!(" for schemaVersion {v}"))
                    .unwrap_or_default()
            )));
        }
    };

    // Task references resolve by id first, then by name (both styles occur).
    let mut index: HashMap<&str, usize> =
        HashMap::with_capacity_and_hasher(tasks.len() * 2, Default::default());
    for (i, t) in tasks.iter().enumerate() {
        index.insert(t.name.as_str(), i);
    }
    for (i, t) in tasks.iter().enumerate() {
        if let Some(id) = &t.id {
            index.insert(id.as_str(), i);
        }
    }
    let names_unique = {
        let mut seen = HashSet::with_capacity_and_hasher(tasks.len(), Default::default());
        tasks.iter().all(|t| seen.insert(t.name.as_str()))
    };
    let mut parents: Vec<Vec<usize>> = vec![Vec::new(); tasks.len()];
    for (i, t) in tasks.iter().enumerate() {
        let resolve = |r: &String, field: &str| {
            index.get(r.as_str()).copied().ok_or_else(|| {
                err(format!(
                    "at `workflow.tasks[{i}].{field}`: task `{}` names `{r}`, which is no task's id or name",
                    t.name
                ))
            })
        };
        for p in &t.parents {
            let p = resolve(p, "parents")?;
            if !parents[i].contains(&p) {
                parents[i].push(p);
            }
        }
        for c in &t.children {
            let c = resolve(c, "children")?;
            if !parents[c].contains(&i) {
                parents[c].push(i);
            }
        }
    }
    drop(index);

    // Files: sizes from the task uses (≤ 1.4) or the specification (1.5+).
    let mut sizes: HashMap<String, Option<f64>> = HashMap::default();
    if let Some(files) = spec_files {
        for f in files {
            sizes.insert(file_name(f.id), f.size_in_bytes.or(f.size));
        }
    }
    let mut io: Vec<(Vec<String>, Vec<String>)> = Vec::with_capacity(tasks.len());
    for t in &mut tasks {
        let mut inputs: Vec<String> = std::mem::take(&mut t.input_files)
            .into_iter()
            .map(file_name)
            .collect();
        let mut outputs: Vec<String> = std::mem::take(&mut t.output_files)
            .into_iter()
            .map(file_name)
            .collect();
        for u in std::mem::take(&mut t.files) {
            let Some(name) = u.name.or(u.id) else {
                return Err(err(format!(
                    "at `workflow.tasks` (task `{}`): a file without `name` or `id`",
                    t.name
                )));
            };
            let size = u.size_in_bytes.or(u.size);
            let entry = sizes.entry(name.clone()).or_insert(size);
            if entry.is_none() {
                *entry = size;
            }
            match u.link.as_str() {
                "input" => inputs.push(name),
                "output" => outputs.push(name),
                other => {
                    return Err(err(format!(
                        "at `workflow.tasks` (task `{}`, file `{name}`): link `{other}`; expected `input` or `output`",
                        t.name
                    )));
                }
            }
        }
        io.push((inputs, outputs));
    }

    let job_name = |i: usize| -> String {
        let t = &tasks[i];
        match (&t.id, names_unique) {
            (_, true) | (None, false) => t.name.clone(),
            (Some(id), false) => id.clone(),
        }
    };
    let keep: Vec<bool> = tasks
        .iter()
        .map(|t| opts.keep_auxiliary || !t.kind.as_deref().is_some_and(|k| AUXILIARY.contains(&k)))
        .collect();
    let dropped = keep.iter().filter(|k| !**k).count();
    if dropped > 0 {
        warnings.push(format!(
            "{dropped} auxiliary/transfer tasks dropped (their parents now precede their children; keep them with `auxiliary = true`)"
        ));
    }
    // A dropped task's children inherit its (kept) ancestors.
    let mut kept_parents: Vec<Option<Vec<usize>>> = vec![None; tasks.len()];
    fn kept_ancestors(
        i: usize,
        parents: &[Vec<usize>],
        keep: &[bool],
        memo: &mut Vec<Option<Vec<usize>>>,
    ) -> Vec<usize> {
        if let Some(v) = &memo[i] {
            return v.clone();
        }
        let mut out = Vec::new();
        for &p in &parents[i] {
            if keep[p] {
                out.push(p);
            } else {
                out.extend(kept_ancestors(p, parents, keep, memo));
            }
        }
        out.sort_unstable();
        out.dedup();
        memo[i] = Some(out.clone());
        out
    }

    let mut missing_runtime = 0;
    let mut specs = Vec::with_capacity(tasks.len() - dropped);
    for i in 0..tasks.len() {
        if !keep[i] {
            continue;
        }
        let t = &tasks[i];
        let executed =
            t.id.as_ref()
                .and_then(|id| runtimes.get(id))
                .or_else(|| runtimes.get(&t.name));
        let runtime = t
            .runtime_in_seconds
            .or(t.runtime)
            .or_else(|| executed.and_then(|e| e.0));
        let site = t
            .machine
            .clone()
            .or_else(|| executed.and_then(|e| e.1.clone()));
        let runtime = runtime.unwrap_or_else(|| {
            missing_runtime += 1;
            opts.default_runtime
        });
        let ps = if dropped > 0 {
            kept_ancestors(i, &parents, &keep, &mut kept_parents)
        } else {
            parents[i].clone()
        };
        let (inputs, outputs) = std::mem::take(&mut io[i]);
        specs.push(JobSpec {
            name: job_name(i),
            runtime,
            inputs,
            outputs,
            parents: ps.into_iter().map(&job_name).collect(),
            position: None,
            transformation: Some(
                t.category
                    .clone()
                    .unwrap_or_else(|| transformation_of(&t.name)),
            ),
            arguments: None,
            label: None,
            members: Vec::new(),
            site,
        });
    }
    if missing_runtime > 0 {
        warnings.push(format!(
            "{missing_runtime} tasks have no runtime: {} s assumed",
            opts.default_runtime
        ));
    }
    let used: HashSet<&str> = specs
        .iter()
        .flat_map(|s| s.inputs.iter().chain(&s.outputs))
        .map(String::as_str)
        .collect();
    let mut missing_size = 0;
    let mut files: Vec<File> = sizes
        .iter()
        .filter(|(name, _)| used.contains(name.as_str()))
        .map(|(name, size)| File {
            name: name.clone(),
            size: match size {
                Some(s) if s.is_finite() && *s >= 0.0 => *s as u64,
                _ => {
                    missing_size += 1;
                    opts.default_size
                }
            },
        })
        .collect();
    files.sort_by(|a, b| a.name.cmp(&b.name));
    if missing_size > 0 {
        warnings.push(format!(
            "{missing_size} files have no size: {} bytes assumed",
            opts.default_size
        ));
    }
    Ok(Parsed {
        files,
        jobs: specs,
        warnings,
        dagman: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tid(n: &str) -> String {
        escape_id(n, "")
    }

    fn fid(n: &str) -> String {
        escape_id(n, "/:")
    }

    #[test]
    fn ids_escape_what_wfformat_forbids_and_decode_back() {
        assert_eq!(tid("mProject_ID0001"), "mProject_ID0001");
        assert_eq!(tid("S1+A"), "S1#2BA");
        assert_eq!(tid("a#b"), "a#23b");
        assert_eq!(fid("dir/f:1 x"), "dir/f:1#20x");
        for name in ["S1+A", "a#b", "dir/f:1 x", "ä b", "plain"] {
            assert_eq!(unescape_id(&fid(name)).as_deref(), Some(name));
            assert_eq!(unescape_id(&tid(name)).as_deref(), Some(name));
        }
        assert_eq!(unescape_id("bad#Z"), None);
        // Distinct names stay distinct ids.
        assert_ne!(tid("a+b"), tid("a#2Bb"));
    }
}
