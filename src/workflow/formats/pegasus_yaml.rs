//! Pegasus 5 YAML workflows: `jobs[]` with `id`, `uses[]` (`lfn`, `type`
//! input/output/checkpoint, a size in `metadata.size` or `size`) and a
//! runtime in `profiles.pegasus.runtime` (or `metadata.runtime`);
//! `jobDependencies[]` of `id` → `children`. Jobs are named by their `id`.
//! The catalogues (site, replica, transformation) are not needed to run the
//! DAG and are ignored.

use std::collections::HashMap;

use serde::Deserialize;

use super::{FormatError, Options, Parsed};
use crate::core::JobSpec;

#[derive(Deserialize)]
struct Doc {
    #[serde(default)]
    jobs: Vec<Job>,
    #[serde(rename = "jobDependencies", default)]
    job_dependencies: Vec<Dependency>,
}

#[derive(Deserialize)]
struct Job {
    id: String,
    name: Option<String>,
    namespace: Option<String>,
    #[serde(default)]
    uses: Vec<Use>,
    #[serde(default)]
    profiles: Option<Profiles>,
    #[serde(default)]
    metadata: Option<HashMap<String, yaml_serde::Value>>,
}

#[derive(Deserialize)]
struct Profiles {
    pegasus: Option<HashMap<String, yaml_serde::Value>>,
}

#[derive(Deserialize)]
struct Use {
    lfn: String,
    #[serde(rename = "type")]
    kind: String,
    size: Option<yaml_serde::Value>,
    metadata: Option<HashMap<String, yaml_serde::Value>>,
}

#[derive(Deserialize)]
struct Dependency {
    id: String,
    #[serde(default)]
    children: Vec<String>,
}

/// A number written as a number or a string (`size: "2048"` is common).
fn number(v: &yaml_serde::Value) -> Option<f64> {
    match v {
        yaml_serde::Value::Number(n) => n.as_f64(),
        yaml_serde::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Parses Pegasus 5 YAML text.
pub fn parse(
    text: &str,
    opts: &Options,
    err: &dyn Fn(String) -> FormatError,
) -> Result<Parsed, FormatError> {
    let doc: Doc = yaml_serde::from_str(text).map_err(|e| {
        let at = e
            .location()
            .map(|l| format!("line {}, column {}: ", l.line(), l.column()))
            .unwrap_or_default();
        err(format!("{at}not a Pegasus 5 workflow: {e}"))
    })?;
    if doc.jobs.is_empty() {
        return Err(err("at `jobs`: expected at least one job".into()));
    }
    let mut index = HashMap::new();
    let mut sizes: HashMap<String, Option<f64>> = HashMap::new();
    let mut specs = Vec::with_capacity(doc.jobs.len());
    let mut missing_runtime = 0;
    for (i, j) in doc.jobs.iter().enumerate() {
        if index.insert(j.id.clone(), i).is_some() {
            return Err(err(format!(
                "at `jobs[{i}].id`: a second job with id `{}`",
                j.id
            )));
        }
        let runtime = j
            .profiles
            .as_ref()
            .and_then(|p| p.pegasus.as_ref())
            .and_then(|p| p.get("runtime"))
            .or_else(|| j.metadata.as_ref().and_then(|m| m.get("runtime")))
            .and_then(number);
        let label = j
            .profiles
            .as_ref()
            .and_then(|p| p.pegasus.as_ref())
            .and_then(|p| p.get("label"))
            .and_then(|v| v.as_str().map(str::to_string));
        let transformation = j.name.as_ref().map(|n| match &j.namespace {
            Some(ns) => format!("{ns}::{n}"),
            None => n.clone(),
        });
        let mut spec = JobSpec {
            name: j.id.clone(),
            transformation,
            label,
            runtime: runtime.unwrap_or_else(|| {
                missing_runtime += 1;
                opts.default_runtime
            }),
            ..Default::default()
        };
        for (k, u) in j.uses.iter().enumerate() {
            let size = u
                .size
                .as_ref()
                .or_else(|| u.metadata.as_ref().and_then(|m| m.get("size")))
                .and_then(number);
            let entry = sizes.entry(u.lfn.clone()).or_insert(size);
            if entry.is_none() {
                *entry = size;
            }
            match u.kind.as_str() {
                "input" => spec.inputs.push(u.lfn.clone()),
                "output" | "checkpoint" => spec.outputs.push(u.lfn.clone()),
                other => {
                    return Err(err(format!(
                        "at `jobs[{i}].uses[{k}].type`: `{other}`; expected input, output or checkpoint"
                    )));
                }
            }
        }
        specs.push(spec);
    }
    for (k, d) in doc.job_dependencies.iter().enumerate() {
        if !index.contains_key(&d.id) {
            return Err(err(format!(
                "at `jobDependencies[{k}].id`: `{}` is no job's id",
                d.id
            )));
        }
        for c in &d.children {
            let Some(&ci) = index.get(c) else {
                return Err(err(format!(
                    "at `jobDependencies[{k}].children`: `{c}` is no job's id"
                )));
            };
            if !specs[ci].parents.contains(&d.id) {
                specs[ci].parents.push(d.id.clone());
            }
        }
    }
    let sizes = sizes
        .into_iter()
        .map(|(name, size)| {
            let bytes = size
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(|s| s as u64);
            (name, bytes)
        })
        .collect();
    Ok(Parsed::with_defaults(specs, missing_runtime, sizes, opts))
}
