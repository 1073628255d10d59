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

use std::borrow::Cow;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use serde::Deserialize;

use super::{FormatError, Options, Parsed};
use crate::core::{File, FileId, Job, JobId};

/// A string of the text, borrowed where JSON needs no unescaping (nearly
/// always), so that a large instance's hundreds of thousands of names cost
/// no allocation until the few that the DAG keeps.
#[derive(Deserialize, Clone, PartialEq, Eq, Hash)]
#[serde(transparent)]
struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

impl Str<'_> {
    fn as_str(&self) -> &str {
        &self.0
    }
}

#[derive(Deserialize)]
struct Doc<'a> {
    #[serde(rename = "schemaVersion", borrow)]
    schema_version: Option<Str<'a>>,
    #[serde(rename = "runtimeSystem", borrow)]
    runtime_system: Option<RuntimeSystem<'a>>,
    #[serde(borrow)]
    workflow: Workflow<'a>,
}

#[derive(Deserialize)]
struct RuntimeSystem<'a> {
    #[serde(borrow)]
    name: Str<'a>,
}

#[derive(Deserialize)]
struct Workflow<'a> {
    #[serde(borrow)]
    jobs: Option<Vec<Task<'a>>>,
    #[serde(borrow)]
    tasks: Option<Vec<Task<'a>>>,
    #[serde(borrow)]
    specification: Option<Specification<'a>>,
    #[serde(borrow)]
    execution: Option<Execution<'a>>,
}

#[derive(Deserialize)]
struct Task<'a> {
    #[serde(borrow)]
    name: Str<'a>,
    #[serde(borrow)]
    id: Option<Str<'a>>,
    #[serde(rename = "type", borrow)]
    kind: Option<Str<'a>>,
    runtime: Option<f64>,
    #[serde(rename = "runtimeInSeconds")]
    runtime_in_seconds: Option<f64>,
    #[serde(default, borrow)]
    parents: Vec<Str<'a>>,
    #[serde(default, borrow)]
    children: Vec<Str<'a>>,
    #[serde(default, borrow)]
    files: Vec<FileUse<'a>>,
    #[serde(rename = "inputFiles", default, borrow)]
    input_files: Vec<Str<'a>>,
    #[serde(rename = "outputFiles", default, borrow)]
    output_files: Vec<Str<'a>>,
    #[serde(borrow)]
    category: Option<Str<'a>>,
    /// The machine it ran on (1.0–1.4 traces).
    #[serde(borrow)]
    machine: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct FileUse<'a> {
    #[serde(borrow)]
    link: Str<'a>,
    #[serde(borrow)]
    name: Option<Str<'a>>,
    #[serde(borrow)]
    id: Option<Str<'a>>,
    size: Option<f64>,
    #[serde(rename = "sizeInBytes")]
    size_in_bytes: Option<f64>,
}

#[derive(Deserialize)]
struct Specification<'a> {
    #[serde(borrow)]
    tasks: Vec<Task<'a>>,
    #[serde(default, borrow)]
    files: Vec<SpecFile<'a>>,
}

#[derive(Deserialize)]
struct SpecFile<'a> {
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(rename = "sizeInBytes")]
    size_in_bytes: Option<f64>,
    size: Option<f64>,
}

#[derive(Deserialize)]
struct Execution<'a> {
    #[serde(default, borrow)]
    tasks: Vec<ExecTask<'a>>,
}

#[derive(Deserialize)]
struct ExecTask<'a> {
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(rename = "runtimeInSeconds")]
    runtime_in_seconds: Option<f64>,
    runtime: Option<f64>,
    #[serde(default, borrow)]
    machines: Vec<Str<'a>>,
    #[serde(borrow)]
    command: Option<Program<'a>>,
}

#[derive(Deserialize)]
struct Program<'a> {
    #[serde(borrow)]
    program: Option<Str<'a>>,
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

/// The document in `text`; a malformed one is parsed again with its path
/// tracked, so that the error names where (`workflow.specification.tasks[3]
/// .runtimeInSeconds`) at no cost to the files that parse.
fn document<'a>(
    text: &'a str,
    err: &dyn Fn(String) -> FormatError,
) -> Result<Doc<'a>, FormatError> {
    if let Ok(doc) = serde_json::from_str(text) {
        return Ok(doc);
    }
    let de = &mut serde_json::Deserializer::from_str(text);
    match serde_path_to_error::deserialize::<_, Doc<'a>>(de) {
        Ok(doc) => Ok(doc),
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            Err(err(format!(
                "line {}, column {}, at `{path}`: {inner}",
                inner.line(),
                inner.column()
            )))
        }
    }
}

/// A file's name as the document writes its id: gridbed escapes the bytes
/// WfFormat forbids (`#XX`, see `report::wfinstance`), so its own instances
/// (`ours`) read back to the names run.
fn named(id: Str<'_>, ours: bool) -> Cow<'_, str> {
    match ours {
        true => match unescape_id(id.as_str()) {
            Some(name) if name != id.as_str() => Cow::Owned(name),
            _ => id.0,
        },
        false => id.0,
    }
}

/// A file as the parse collects it: its size where the document gives one
/// (NaN where not), and its id once a kept task names it ([`NO_ID`] until
/// then). Without `Option`s a slot is half the size: a large instance's
/// table of them is part of the parse's peak memory.
struct Slot {
    size: f64,
    id: u32,
}

/// A [`Slot`] no kept task has named.
const NO_ID: u32 = u32::MAX;

/// Parses WfFormat text into jobs that refer to files and parents by index
/// (files sorted by name, jobs in document order less dropped auxiliary
/// tasks), so that a 100,000-task instance is never turned into names and
/// looked up again. The file table and the jobs with their edges are built
/// side by side on two threads once an instance is large.
pub fn parse(
    text: &str,
    opts: &Options,
    err: &dyn Fn(String) -> FormatError,
) -> Result<Parsed, FormatError> {
    let doc = document(text, err)?;
    let mut warnings = Vec::new();
    let ours = doc
        .runtime_system
        .is_some_and(|r| r.name.as_str() == RUNTIME_SYSTEM);
    let wf = doc.workflow;
    let (tasks, spec_files, executed) = match (wf.specification, wf.tasks.or(wf.jobs)) {
        (Some(spec), _) => (
            spec.tasks,
            Some(spec.files),
            wf.execution.map(|e| e.tasks).unwrap_or_default(),
        ),
        (None, Some(tasks)) => (tasks, None, Vec::new()),
        (None, None) => {
            return Err(err(format!(
                "at `workflow`: expected `jobs` (1.0–1.2), `tasks` (1.3–1.4) or `specification` (1.5+){}",
                doc.schema_version
                    .map(|v| format!(" for schemaVersion {}", v.as_str()))
                    .unwrap_or_default()
            )));
        }
    };

    let keep: Vec<bool> = tasks
        .iter()
        .map(|t| {
            opts.keep_auxiliary
                || !t
                    .kind
                    .as_ref()
                    .is_some_and(|k| AUXILIARY.contains(&k.as_str()))
        })
        .collect();
    let dropped = keep.iter().filter(|k| !**k).count();
    if dropped > 0 {
        warnings.push(format!(
            "{dropped} auxiliary/transfer tasks dropped (their parents now precede their children; keep them with `auxiliary = true`)"
        ));
    }
    // The files and the edges are independent: a large instance finds
    // them on two cores at once.
    let (files, jobs) = std::thread::scope(|scope| {
        let tasks = &tasks;
        let keep = &keep;
        let spec_files = spec_files.as_deref();
        // Copy: a thread that cannot be had leaves the work to this one.
        let table = move || FileTable::of(tasks, spec_files, keep, ours);
        let files = match tasks.len() >= PARALLEL_TASKS {
            true => std::thread::Builder::new()
                .spawn_scoped(scope, table)
                .map_err(|_| table),
            false => Err(table),
        };
        let jobs = jobs_of(tasks, &executed, keep, opts, &mut warnings);
        let files = match files {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|_| Err("the file table could not be built".into())),
            Err(table) => table(),
        };
        (files, jobs)
    });
    let (mut jobs, mut table) = (jobs.map_err(err)?, files.map_err(err)?);
    for (job, uses) in jobs
        .iter_mut()
        .zip(table.uses.iter_mut().filter(|u| u.kept))
    {
        job.inputs = std::mem::take(&mut uses.inputs);
        job.outputs = std::mem::take(&mut uses.outputs);
    }
    if table.missing_size > 0 {
        warnings.push(format!(
            "{} files have no size: {} bytes assumed",
            table.missing_size, opts.default_size
        ));
    }
    let default_size = opts.default_size;
    let files = table
        .files
        .into_iter()
        .map(|(name, size)| File {
            name,
            size: size.unwrap_or(default_size),
        })
        .collect();
    Ok(Parsed {
        files,
        indexed: Some(jobs),
        warnings,
        ..Parsed::default()
    })
}

/// From this many tasks on, the files and the edges are found on two cores.
const PARALLEL_TASKS: usize = 5_000;

/// The kept tasks as jobs, without their files: parents resolved (through
/// dropped tasks), runtimes and machines from the execution records.
fn jobs_of(
    tasks: &[Task<'_>],
    executed: &[ExecTask<'_>],
    keep: &[bool],
    opts: &Options,
    warnings: &mut Vec<String>,
) -> Result<Vec<Job>, String> {
    // Task references resolve by id first, then by name (both styles occur).
    let mut index: HashMap<&str, usize> =
        HashMap::with_capacity_and_hasher(tasks.len() * 2, Default::default());
    let mut names_unique = true;
    for (i, t) in tasks.iter().enumerate() {
        names_unique &= index.insert(t.name.as_str(), i).is_none();
    }
    for (i, t) in tasks.iter().enumerate() {
        if let Some(id) = &t.id {
            index.insert(id.as_str(), i);
        }
    }
    let mut parents: Vec<Vec<usize>> = vec![Vec::new(); tasks.len()];
    // An edge may be named twice (as a parent and as a child, or twice in
    // a list) and is kept once, where it first came. A short list is
    // searched as it grows; a long one (a merge task of an epigenomics
    // instance has thousands of parents) takes repeats, removed below.
    const SEARCHED: usize = 16;
    let add = |list: &mut Vec<usize>, p: usize| {
        if list.len() > SEARCHED || !list.contains(&p) {
            list.push(p);
        }
    };
    for (i, t) in tasks.iter().enumerate() {
        let resolve = |r: &Str<'_>, field: &str| {
            index.get(r.as_str()).copied().ok_or_else(|| {
                format!(
                    "at `workflow.tasks[{i}].{field}`: task `{}` names `{}`, which is no task's id or name",
                    t.name.as_str(),
                    r.as_str()
                )
            })
        };
        for p in &t.parents {
            add(&mut parents[i], resolve(p, "parents")?);
        }
        for c in &t.children {
            add(&mut parents[resolve(c, "children")?], i);
        }
    }
    drop(index);
    // A long list's repeats removed, its entries marked, not searched for.
    let mut mark = vec![u32::MAX; tasks.len()];
    for (i, list) in (0u32..).zip(parents.iter_mut()) {
        if list.len() > SEARCHED {
            list.retain(|&p| std::mem::replace(&mut mark[p], i) != i);
        }
    }

    // Each executed task's runtime and machine (1.5+): WfCommons lists them
    // in the specification's order, so a task finds its own by position
    // and only the others by id.
    let by_id: HashMap<&str, usize> = match executed
        .iter()
        .zip(tasks)
        .all(|(e, t)| t.id.as_ref().is_some_and(|id| id == &e.id))
    {
        true => HashMap::default(),
        false => executed
            .iter()
            .enumerate()
            .map(|(k, e)| (e.id.as_str(), k))
            .collect(),
    };
    let execution_of = |i: usize, t: &Task<'_>| -> Option<&ExecTask<'_>> {
        if by_id.is_empty() {
            return executed.get(i);
        }
        let k =
            t.id.as_ref()
                .and_then(|id| by_id.get(id.as_str()))
                .or_else(|| by_id.get(t.name.as_str()))?;
        executed.get(*k)
    };

    // A dropped task's children inherit its (kept) ancestors.
    let dropped = keep.iter().any(|k| !k);
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
    // Kept task → job id.
    let mut job_of = vec![JobId::MAX; tasks.len()];
    for (n, i) in (0..tasks.len()).filter(|&i| keep[i]).enumerate() {
        job_of[i] = n;
    }

    let mut missing_runtime = 0;
    let mut jobs: Vec<Job> = Vec::with_capacity(job_of.len());
    let mut seen: HashSet<&str> = HashSet::default();
    for i in 0..tasks.len() {
        if !keep[i] {
            continue;
        }
        let t = &tasks[i];
        let executed = execution_of(i, t);
        let runtime = t
            .runtime_in_seconds
            .or(t.runtime)
            .or_else(|| executed.and_then(|e| e.runtime_in_seconds.or(e.runtime)));
        let site = t
            .machine
            .as_ref()
            .or_else(|| executed.and_then(|e| e.machines.first()))
            .map(|m| m.as_str().to_string());
        let runtime = runtime.unwrap_or_else(|| {
            missing_runtime += 1;
            opts.default_runtime
        });
        let ps = if dropped {
            kept_ancestors(i, &parents, keep, &mut kept_parents)
        } else {
            std::mem::take(&mut parents[i])
        };
        let name = match (&t.id, names_unique) {
            (_, true) | (None, false) => t.name.as_str(),
            (Some(id), false) => id.as_str(),
        };
        // Unique names are unique job names; ids are checked.
        if !names_unique && !seen.insert(name) {
            return Err(format!(
                "not a valid workflow: job `{name}` is defined twice"
            ));
        }
        jobs.push(Job {
            name: name.to_string(),
            runtime,
            inputs: Vec::new(),
            outputs: Vec::new(),
            parents: ps.into_iter().map(|p| job_of[p]).collect(),
            position: None,
            // The program a trace recorded, else the one its name says.
            transformation: Some(
                match t
                    .category
                    .as_ref()
                    .or_else(|| executed.and_then(|e| e.command.as_ref()?.program.as_ref()))
                {
                    Some(p) => p.as_str().to_string(),
                    None => transformation_of(t.name.as_str()),
                },
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
    Ok(jobs)
}

/// A task's files by id, in the document's order.
#[derive(Default)]
struct Uses {
    kept: bool,
    inputs: Vec<FileId>,
    outputs: Vec<FileId>,
}

/// The files kept tasks name, sorted by name (one order whatever the
/// document's), with their sizes where the document gives one, and every
/// task's uses of them.
struct FileTable {
    files: Vec<(String, Option<u64>)>,
    uses: Vec<Uses>,
    missing_size: usize,
}

impl FileTable {
    /// Sizes come from the specification (1.5+) or every task's uses (≤ 1.4,
    /// dropped tasks included); ids go to the files kept tasks name, in the
    /// order first named, then to the sorted order.
    fn of<'a>(
        tasks: &[Task<'a>],
        spec_files: Option<&[SpecFile<'a>]>,
        keep: &[bool],
        ours: bool,
    ) -> Result<FileTable, String> {
        let mut slots: HashMap<Cow<'a, str>, Slot> = HashMap::default();
        if let Some(files) = spec_files {
            slots.reserve(files.len());
            for f in files {
                let size = f.size_in_bytes.or(f.size);
                let slot = Slot {
                    size: size.unwrap_or(f64::NAN),
                    id: NO_ID,
                };
                slots.insert(named(f.id.clone(), ours), slot);
            }
        }
        let mut count = 0;
        let mut id_of = |slot: &mut Slot| {
            if slot.id == NO_ID {
                slot.id = count;
                count += 1;
            }
            slot.id as FileId
        };
        let mut uses = Vec::with_capacity(tasks.len());
        for (t, &kept) in tasks.iter().zip(keep) {
            let mut used = Uses {
                kept,
                ..Uses::default()
            };
            if kept {
                for (names, ids) in [
                    (&t.input_files, &mut used.inputs),
                    (&t.output_files, &mut used.outputs),
                ] {
                    ids.reserve_exact(names.len());
                    for name in names {
                        let slot = slots.entry(named(name.clone(), ours)).or_insert(Slot {
                            size: f64::NAN,
                            id: NO_ID,
                        });
                        ids.push(id_of(slot));
                    }
                }
            }
            for u in &t.files {
                let Some(name) = u.name.as_ref().or(u.id.as_ref()) else {
                    return Err(format!(
                        "at `workflow.tasks` (task `{}`): a file without `name` or `id`",
                        t.name.as_str()
                    ));
                };
                let name = named(name.clone(), ours);
                let ids = match u.link.as_str() {
                    "input" => &mut used.inputs,
                    "output" => &mut used.outputs,
                    other => {
                        return Err(format!(
                            "at `workflow.tasks` (task `{}`, file `{name}`): link `{other}`; expected `input` or `output`",
                            t.name.as_str()
                        ));
                    }
                };
                let size = u.size_in_bytes.or(u.size);
                let size = size.unwrap_or(f64::NAN);
                let slot = slots.entry(name).or_insert(Slot { size, id: NO_ID });
                if slot.size.is_nan() {
                    slot.size = size;
                }
                if kept {
                    ids.push(id_of(slot));
                }
            }
            uses.push(used);
        }
        // A name's first eight bytes, big-endian, order names as the bytes
        // do (ties fall back to the whole name): most comparisons of a sort
        // over hundreds of thousands of names are then one integer
        // comparison.
        let prefix = |name: &str| {
            let mut head = [0u8; 8];
            let n = name.len().min(8);
            head[..n].copy_from_slice(&name.as_bytes()[..n]);
            u64::from_be_bytes(head)
        };
        let mut sized: Vec<(u64, Cow<'_, str>, f64, u32)> = slots
            .into_iter()
            .filter(|(_, slot)| slot.id != NO_ID)
            .map(|(name, slot)| (prefix(&name), name, slot.size, slot.id))
            .collect();
        sized.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        let mut renumber = vec![0; sized.len()];
        for (new, (_, _, _, old)) in sized.iter().enumerate() {
            renumber[*old as usize] = new;
        }
        for used in &mut uses {
            for f in used.inputs.iter_mut().chain(&mut used.outputs) {
                *f = renumber[*f];
            }
        }
        let mut missing_size = 0;
        let files = sized
            .into_iter()
            .map(|(_, name, size, _)| {
                let size = Some(size)
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .map(|s| s as u64);
                missing_size += usize::from(size.is_none());
                (name.into_owned(), size)
            })
            .collect();
        Ok(FileTable {
            files,
            uses,
            missing_size,
        })
    }
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

    proptest::proptest! {
        /// Each task's parents are every task naming it a child or named
        /// its parent, once each, in the order first named (tasks in
        /// document order, each task's parents before its children).
        /// Checked against a plain list search; edges come both ways and
        /// twice often, and half go to one merge task, whose list grows
        /// long.
        #[test]
        fn each_parent_is_kept_once_where_first_named(
            edges in proptest::collection::vec(
                (0usize..24, 0usize..24, 0u8..4, proptest::bool::ANY),
                0..120,
            ),
        ) {
            let n = 24;
            let mut parents = vec![Vec::new(); n];
            let mut children = vec![Vec::new(); n];
            for (a, b, how, merge) in edges {
                let (p, c) = match a.cmp(&b) {
                    _ if merge => (a.min(n - 2), n - 1),
                    std::cmp::Ordering::Less => (a, b),
                    std::cmp::Ordering::Greater => (b, a),
                    std::cmp::Ordering::Equal => continue,
                };
                let twice = 1 + usize::from(how == 3);
                for _ in 0..twice {
                    if how != 1 {
                        parents[c].push(p);
                    }
                    if how != 0 {
                        children[p].push(c);
                    }
                }
            }
            let name = |t: &usize| format!("t{t}");
            let tasks: Vec<_> = (0..n)
                .map(|t| {
                    serde_json::json!({
                        "name": name(&t), "id": name(&t),
                        "parents": parents[t].iter().map(name).collect::<Vec<_>>(),
                        "children": children[t].iter().map(name).collect::<Vec<_>>(),
                        "inputFiles": [], "outputFiles": [],
                    })
                })
                .collect();
            let doc = serde_json::json!({
                "name": "edges", "schemaVersion": "1.5",
                "workflow": {"specification": {"tasks": tasks, "files": []},
                             "execution": {"makespanInSeconds": 1, "tasks": []}},
            });
            let opts = crate::workflow::formats::Options::default();
            let text = doc.to_string();
            let loaded = crate::workflow::formats::load_text(
                std::path::Path::new("edges.json"), &text, &opts,
            ).unwrap();
            let mut expected = vec![Vec::new(); n];
            let mut add = |c: usize, p: usize| {
                if !expected[c].contains(&p) {
                    expected[c].push(p);
                }
            };
            for t in 0..n {
                parents[t].iter().for_each(|&p| add(t, p));
                children[t].iter().for_each(|&c| add(c, t));
            }
            for (t, job) in loaded.workflow.jobs.iter().enumerate() {
                proptest::prop_assert_eq!(&job.name, &name(&t));
                proptest::prop_assert_eq!(&job.parents, &expected[t], "{}", t);
            }
        }
    }
}
