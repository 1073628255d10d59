//! HTCondor DAGMan `.dag` files: `JOB` (with `DIR`, `NOOP`, `DONE`),
//! `PARENT … CHILD …` (many on both sides), `SCRIPT [DEFER s t] PRE|POST`,
//! `RETRY [UNLESS-EXIT v]`, `VARS`, `PRIORITY`, `CATEGORY` + `MAXJOBS`,
//! `DONE`, `CONFIG` (`DAGMAN_MAX_PRE_SCRIPTS`, `DAGMAN_MAX_POST_SCRIPTS`,
//! `DAGMAN_MAX_JOBS_IDLE`), `#` comments and `\` line continuations.
//! Keywords are case-insensitive (HTCondor's own test files write `Job`,
//! `Script`). Commands that only shape DAGMan's own logs (`DOT`,
//! `NODE_STATUS_FILE`, `JOBSTATE_LOG`, …) are read and ignored with a
//! warning; commands that change the graph in ways gridbed does not model
//! (`SPLICE`, `INCLUDE`, `FINAL`, `SUBDAG`, …) are errors.
//!
//! A `.dag` gives the graph and the node settings, not what a job computes:
//! runtimes are [`super::Options::default_runtime`] and jobs have no files
//! unless a sidecar says otherwise.

use std::collections::{BTreeMap, HashMap};

use super::{FormatError, Options, Parsed};
use crate::core::JobSpec;

/// A PRE or POST script of a node.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// The executable, as written.
    pub executable: String,
    /// Its arguments, as written (macros such as `$JOB`, `$RETURN`, `$RETRY`
    /// unsubstituted).
    pub args: Vec<String>,
    /// `DEFER status time`: an exit with `status` runs it again after `time` s.
    pub defer: Option<(i32, u64)>,
}

/// What a `.dag` says of one node besides its edges.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeInfo {
    /// Node name.
    pub name: String,
    /// Its submit description file.
    pub submit: String,
    /// `DIR`: the directory it runs in.
    pub dir: Option<String>,
    /// `NOOP`: the node runs no job (its scripts still run).
    pub noop: bool,
    /// `DONE`: already completed; neither it nor its scripts run.
    pub done: bool,
    /// `SCRIPT PRE`.
    pub pre: Option<Script>,
    /// `SCRIPT POST`.
    pub post: Option<Script>,
    /// `RETRY N`: attempts after the first.
    pub retry: u32,
    /// `RETRY … UNLESS-EXIT v`: this exit status is not retried.
    pub retry_unless_exit: Option<i32>,
    /// `VARS`: macro name → value.
    pub vars: Vec<(String, String)>,
    /// `PRIORITY`: higher is released first among ready nodes.
    pub priority: i32,
    /// `CATEGORY`.
    pub category: Option<String>,
}

/// DAGMan's settings of a whole `.dag` file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DagmanInfo {
    /// Nodes in file order.
    pub nodes: Vec<NodeInfo>,
    /// `MAXJOBS category N`.
    pub max_jobs: BTreeMap<String, usize>,
    /// `DAGMAN_MAX_PRE_SCRIPTS` (from `CONFIG`).
    pub max_pre: Option<usize>,
    /// `DAGMAN_MAX_POST_SCRIPTS` (from `CONFIG`).
    pub max_post: Option<usize>,
    /// `DAGMAN_MAX_JOBS_IDLE` (from `CONFIG`).
    pub max_jobs_idle: Option<usize>,
    /// `CONFIG file`, as written (relative to the `.dag`).
    pub config: Option<String>,
}

/// A node's scripts ready to run: executables resolved against the `.dag`'s
/// folder.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeScripts {
    /// Node name (`$JOB`).
    pub node: String,
    /// `RETRY` (`$MAX_RETRIES`).
    pub max_retries: u32,
    /// PRE: executable and arguments.
    pub pre: Option<(std::path::PathBuf, Vec<String>)>,
    /// POST: executable and arguments.
    pub post: Option<(std::path::PathBuf, Vec<String>)>,
}

impl NodeScripts {
    /// The arguments of a script with DAGMan's macros substituted: `$JOB`,
    /// `$RETRY`, `$MAX_RETRIES`, `$RETURN`.
    pub fn args(&self, args: &[String], retry: u32, status: i32) -> Vec<String> {
        args.iter()
            .map(|a| {
                a.replace("$JOB", &self.node)
                    .replace("$RETRY", &retry.to_string())
                    .replace("$MAX_RETRIES", &self.max_retries.to_string())
                    .replace("$RETURN", &status.to_string())
            })
            .collect()
    }
}

impl DagmanInfo {
    /// Every job's scripts (None for a job with none), by job id of `wf`;
    /// relative executables are taken from `dag_dir`.
    pub fn scripts(
        &self,
        wf: &crate::core::Workflow,
        dag_dir: &std::path::Path,
    ) -> Vec<Option<NodeScripts>> {
        let by_name: HashMap<&str, &NodeInfo> =
            self.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
        let resolve = |s: &Option<Script>| {
            s.as_ref()
                .map(|s| (dag_dir.join(&s.executable), s.args.clone()))
        };
        wf.jobs
            .iter()
            .map(|j| {
                let n = by_name.get(j.name.as_str())?;
                (n.pre.is_some() || n.post.is_some()).then(|| NodeScripts {
                    node: n.name.clone(),
                    max_retries: n.retry,
                    pre: resolve(&n.pre),
                    post: resolve(&n.post),
                })
            })
            .collect()
    }

    /// The node settings the manager honours, indexed by the job ids of `wf`
    /// (built from this file: every node is a job of the same name); with
    /// `run_scripts`, the nodes' PRE and POST scripts are run.
    pub fn node_settings(
        &self,
        wf: &crate::core::Workflow,
        run_scripts: bool,
    ) -> crate::core::nodes::NodeSettings {
        let mut s = crate::core::nodes::NodeSettings::none(wf.jobs.len());
        s.max_post = self.max_post.unwrap_or(0);
        s.max_jobs_idle = self.max_jobs_idle.unwrap_or(0);
        let categories: Vec<&String> = self
            .nodes
            .iter()
            .filter_map(|n| n.category.as_ref())
            .chain(self.max_jobs.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        s.category_limits = categories
            .iter()
            .map(|c| self.max_jobs.get(*c).copied().unwrap_or(usize::MAX))
            .collect();
        let by_name: HashMap<&str, &NodeInfo> =
            self.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
        for (j, job) in wf.jobs.iter().enumerate() {
            let Some(n) = by_name.get(job.name.as_str()) else {
                continue;
            };
            s.retry[j] = Some(n.retry);
            s.priority[j] = n.priority;
            s.category[j] = n
                .category
                .as_ref()
                .and_then(|c| categories.iter().position(|x| *x == c));
            s.noop[j] = n.noop;
            s.done[j] = n.done;
            s.pre[j] = run_scripts && n.pre.is_some();
            s.post[j] = run_scripts && n.post.is_some();
            s.retry_unless_exit[j] = n.retry_unless_exit;
            let defer = |sc: &Option<Script>| {
                sc.as_ref()
                    .and_then(|x| x.defer)
                    .map(|(st, t)| (st, t as f64))
            };
            s.pre_defer[j] = defer(&n.pre);
            s.post_defer[j] = defer(&n.post);
        }
        s
    }
}

/// Commands that only configure DAGMan's own output: read, ignored.
const IGNORED: [&str; 8] = [
    "DOT",
    "NODE_STATUS_FILE",
    "JOBSTATE_LOG",
    "SET_JOB_ATTR",
    "ABORT-DAG-ON",
    "PRE_SKIP",
    "ENV",
    "SAVE_POINT_FILE",
];

/// Commands that change the graph beyond what gridbed models.
const UNSUPPORTED: [&str; 8] = [
    "SPLICE",
    "INCLUDE",
    "FINAL",
    "SUBDAG",
    "SERVICE",
    "PROVISIONER",
    "CONNECT",
    "SUBMIT-DESCRIPTION",
];

const KEYWORDS: [&str; 10] = [
    "JOB", "PARENT", "SCRIPT", "RETRY", "VARS", "PRIORITY", "CATEGORY", "MAXJOBS", "DONE", "CONFIG",
];

/// Whether `text` starts (after comments) with a DAGMan command.
pub fn looks_like(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .and_then(|l| l.split_whitespace().next())
        .is_some_and(|w| KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(w)))
}

/// Splits a line into words; double quotes group (with `\"` inside).
fn words(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\\') => match chars.next() {
                            Some(n) => cur.push(n),
                            None => return Err("a `\\` at the end of a quoted value".into()),
                        },
                        Some('"') => break,
                        Some(n) => cur.push(n),
                        None => return Err("an unclosed `\"`".into()),
                    }
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

/// Parses a DAGMan configuration file's `DAGMAN_MAX_*` settings into `info`.
pub fn apply_config(text: &str, info: &mut DagmanInfo) -> Result<(), (usize, String)> {
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err((n + 1, format!("expected `NAME = value`, found `{line}`")));
        };
        let key = key.trim().to_ascii_uppercase();
        let slot = match key.as_str() {
            "DAGMAN_MAX_PRE_SCRIPTS" => &mut info.max_pre,
            "DAGMAN_MAX_POST_SCRIPTS" => &mut info.max_post,
            "DAGMAN_MAX_JOBS_IDLE" => &mut info.max_jobs_idle,
            _ => continue,
        };
        *slot = Some(value.trim().parse().map_err(|_| {
            (
                n + 1,
                format!(
                    "{key}: expected a whole number ≥ 0, found `{}`",
                    value.trim()
                ),
            )
        })?);
    }
    Ok(())
}

/// A sidecar's job: what a `.dag` does not say.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SidecarJob {
    name: toml::Spanned<String>,
    runtime: Option<f64>,
    #[serde(default)]
    inputs: Vec<String>,
    #[serde(default)]
    outputs: Vec<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Sidecar {
    #[serde(default)]
    file: Vec<crate::workflow::generators::InlineFile>,
    #[serde(default)]
    job: Vec<SidecarJob>,
}

/// Completes `parsed` (a `.dag`) with the runtimes, inputs, outputs and file
/// sizes of a TOML sidecar: `[[file]]` (`name`, `size`) and `[[job]]`
/// (`name`, `runtime`, `inputs`, `outputs`).
pub fn apply_sidecar(path: &std::path::Path, parsed: &mut Parsed) -> Result<(), FormatError> {
    let err = |message: String| FormatError {
        file: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?;
    let line = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let sidecar: Sidecar = toml::from_str(&text).map_err(|e| {
        let at = e
            .span()
            .map(|s| format!("line {}: ", line(s.start)))
            .unwrap_or_default();
        err(format!("{at}{}", e.message()))
    })?;
    let index: HashMap<String, usize> = parsed
        .jobs
        .iter()
        .enumerate()
        .map(|(i, j)| (j.name.clone(), i))
        .collect();
    for j in sidecar.job {
        let Some(&i) = index.get(j.name.get_ref()) else {
            return Err(err(format!(
                "line {}: job `{}` is no JOB of the DAG",
                line(j.name.span().start),
                j.name.get_ref()
            )));
        };
        let spec = &mut parsed.jobs[i];
        if let Some(r) = j.runtime {
            if !(r.is_finite() && r >= 0.0) {
                return Err(err(format!(
                    "line {}: job `{}`: runtime {r}; expected seconds ≥ 0",
                    line(j.name.span().start),
                    spec.name
                )));
            }
            spec.runtime = r;
        }
        spec.inputs = j.inputs;
        spec.outputs = j.outputs;
    }
    parsed.files = sidecar
        .file
        .into_iter()
        .map(|f| crate::core::File {
            name: f.name,
            size: f.size.0,
        })
        .collect();
    parsed
        .warnings
        .retain(|w| !w.starts_with("a .dag gives no runtimes or files"));
    Ok(())
}

/// Parses `.dag` text.
pub fn parse(
    text: &str,
    opts: &Options,
    err: &dyn Fn(String) -> FormatError,
) -> Result<Parsed, FormatError> {
    let mut info = DagmanInfo::default();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut parents: Vec<Vec<String>> = Vec::new();
    let mut warnings = Vec::new();
    // Logical lines: a trailing `\` continues on the next physical line.
    let mut logical: Vec<(usize, String)> = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (n, raw) in text.lines().enumerate() {
        let (start, mut acc) = pending.take().unwrap_or((n + 1, String::new()));
        let trimmed = raw.trim_end();
        match trimmed.strip_suffix('\\') {
            Some(head) => {
                acc.push_str(head);
                acc.push(' ');
                pending = Some((start, acc));
            }
            None => {
                acc.push_str(trimmed);
                logical.push((start, acc));
            }
        }
    }
    if let Some(p) = pending {
        logical.push(p);
    }
    let mut deferred_refs: Vec<(usize, String, String)> = Vec::new();
    for (line, text) in &logical {
        let at = |m: String| err(format!("line {line}: {m}"));
        let t = text.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let w = words(t).map_err(at)?;
        let kw = w[0].to_ascii_uppercase();
        let node = |name: &String, index: &HashMap<String, usize>| {
            index.get(name).copied().ok_or_else(|| {
                at(format!(
                    "{kw}: no JOB named `{name}` (defined above this line)"
                ))
            })
        };
        let arg = |k: usize, what: &str| {
            w.get(k)
                .cloned()
                .ok_or_else(|| at(format!("{kw}: expected {what}")))
        };
        match kw.as_str() {
            "JOB" => {
                let name = arg(1, "a node name and a submit file")?;
                let submit = arg(2, "a submit file after the node name")?;
                if index.contains_key(&name) {
                    return Err(at(format!("JOB: a second node named `{name}`")));
                }
                let mut n = NodeInfo {
                    name: name.clone(),
                    submit,
                    ..Default::default()
                };
                let mut k = 3;
                while k < w.len() {
                    match w[k].to_ascii_uppercase().as_str() {
                        "NOOP" => n.noop = true,
                        "DONE" => n.done = true,
                        "DIR" => {
                            k += 1;
                            n.dir = Some(arg(k, "a directory after DIR")?);
                        }
                        other => {
                            return Err(at(format!(
                                "JOB {name}: `{other}`; expected DIR dir, NOOP or DONE"
                            )));
                        }
                    }
                    k += 1;
                }
                index.insert(name, info.nodes.len());
                info.nodes.push(n);
                parents.push(Vec::new());
            }
            "PARENT" => {
                let child_at = w
                    .iter()
                    .position(|x| x.eq_ignore_ascii_case("CHILD"))
                    .ok_or_else(|| at("PARENT: expected `PARENT p… CHILD c…`".into()))?;
                let (ps, cs) = (&w[1..child_at], &w[child_at + 1..]);
                if ps.is_empty() || cs.is_empty() {
                    return Err(at(
                        "PARENT: expected at least one parent and one child".into()
                    ));
                }
                // Nodes may be declared after the edge that names them.
                for p in ps {
                    for c in cs {
                        deferred_refs.push((*line, p.clone(), c.clone()));
                    }
                }
            }
            "SCRIPT" => {
                let mut k = 1;
                let mut defer = None;
                if w.get(1).is_some_and(|x| x.eq_ignore_ascii_case("DEFER")) {
                    let status = arg(2, "a status after DEFER")?
                        .parse()
                        .map_err(|_| at("SCRIPT DEFER: expected an exit status".into()))?;
                    let time = arg(3, "a time after DEFER status")?
                        .parse()
                        .map_err(|_| at("SCRIPT DEFER: expected seconds".into()))?;
                    defer = Some((status, time));
                    k = 4;
                }
                let when = arg(k, "PRE or POST")?.to_ascii_uppercase();
                let name = arg(k + 1, "a node name")?;
                let executable = arg(k + 2, "an executable")?;
                let script = Script {
                    executable,
                    args: w[k + 3..].to_vec(),
                    defer,
                };
                let i = node(&name, &index)?;
                match when.as_str() {
                    "PRE" => info.nodes[i].pre = Some(script),
                    "POST" => info.nodes[i].post = Some(script),
                    other => return Err(at(format!("SCRIPT: `{other}`; expected PRE or POST"))),
                }
            }
            "RETRY" => {
                let i = node(&arg(1, "a node name")?, &index)?;
                info.nodes[i].retry = arg(2, "a retry count")?
                    .parse()
                    .map_err(|_| at("RETRY: expected a whole number of retries".into()))?;
                if let Some(u) = w.get(3) {
                    if !u.eq_ignore_ascii_case("UNLESS-EXIT") {
                        return Err(at(format!("RETRY: `{u}`; expected UNLESS-EXIT value")));
                    }
                    info.nodes[i].retry_unless_exit = Some(
                        arg(4, "an exit value after UNLESS-EXIT")?
                            .parse()
                            .map_err(|_| at("RETRY UNLESS-EXIT: expected an integer".into()))?,
                    );
                }
            }
            "VARS" => {
                let i = node(&arg(1, "a node name")?, &index)?;
                // `name="value"` pairs; words() already removed the quotes.
                for pair in &w[2..] {
                    let Some((k, v)) = pair.split_once('=') else {
                        return Err(at(format!("VARS: `{pair}`; expected name=\"value\"")));
                    };
                    if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                        return Err(at(format!("VARS: `{k}` is not a macro name")));
                    }
                    info.nodes[i].vars.push((k.to_string(), v.to_string()));
                }
            }
            "PRIORITY" => {
                let i = node(&arg(1, "a node name")?, &index)?;
                info.nodes[i].priority = arg(2, "a priority")?
                    .parse()
                    .map_err(|_| at("PRIORITY: expected an integer".into()))?;
            }
            "CATEGORY" => {
                let i = node(&arg(1, "a node name")?, &index)?;
                info.nodes[i].category = Some(arg(2, "a category name")?);
            }
            "MAXJOBS" => {
                let cat = arg(1, "a category name")?;
                let n = arg(2, "a job limit")?
                    .parse()
                    .map_err(|_| at("MAXJOBS: expected a whole number".into()))?;
                info.max_jobs.insert(cat, n);
            }
            "DONE" => {
                let i = node(&arg(1, "a node name")?, &index)?;
                info.nodes[i].done = true;
            }
            "CONFIG" => info.config = Some(arg(1, "a configuration file")?),
            k if IGNORED.contains(&k) => {
                warnings.push(format!(
                    "line {line}: {k} ignored (it only shapes DAGMan's own output)"
                ));
            }
            k if UNSUPPORTED.contains(&k) => {
                return Err(at(format!("{k} is not supported: flatten the DAG first")));
            }
            _ => {
                return Err(at(format!(
                    "unknown command `{}`; expected one of {}",
                    w[0],
                    KEYWORDS.join(", ")
                )));
            }
        }
    }
    for (line, p, c) in deferred_refs {
        let find = |n: &String| {
            index
                .get(n)
                .copied()
                .ok_or_else(|| err(format!("line {line}: PARENT/CHILD: no JOB named `{n}`")))
        };
        let (_, ci) = (find(&p)?, find(&c)?);
        if !parents[ci].contains(&p) {
            parents[ci].push(p);
        }
    }
    if info.nodes.is_empty() {
        return Err(err("no JOB line: not a DAGMan file".into()));
    }
    let jobs = info
        .nodes
        .iter()
        .zip(parents)
        .map(|(n, ps)| JobSpec {
            name: n.name.clone(),
            runtime: if n.noop { 0.0 } else { opts.default_runtime },
            parents: ps,
            transformation: Some(n.submit.clone()),
            ..Default::default()
        })
        .collect();
    warnings.push(format!(
        "a .dag gives no runtimes or files: every job runs {} s and moves no data",
        opts.default_runtime
    ));
    Ok(Parsed {
        files: Vec::new(),
        jobs,
        warnings,
        dagman: Some(info),
    })
}
