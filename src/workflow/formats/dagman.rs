//! HTCondor DAGMan `.dag` files (HTCondor manual, "DAGMan Quick
//! Reference"): `JOB` (with `DIR`, `NOOP`, `DONE`), `FINAL`, `PARENT …
//! CHILD …` (many on both sides), `SCRIPT [DEFER s t] [DEBUG file type]
//! PRE|POST`, `RETRY [UNLESS-EXIT v]`, `VARS [PREPEND|APPEND]` (spaces around
//! `=`, `+attr` and `My.attr` ClassAd attributes), `PRIORITY`, `CATEGORY` +
//! `MAXJOBS`, `ABORT-DAG-ON [RETURN v]`, `DONE`, `CONFIG`
//! (`DAGMAN_MAX_PRE_SCRIPTS`, `DAGMAN_MAX_POST_SCRIPTS`,
//! `DAGMAN_MAX_JOBS_IDLE`), `ALL_NODES` wherever DAGMan takes it (every
//! node but the FINAL one; node commands apply in file order, the last one
//! to set a property winning), `REJECT` (refused, as DAGMan does), `#`
//! comments and `\` line continuations. Keywords are case-insensitive
//! (HTCondor's own test files write `Job`, `Script`). Commands that only
//! shape DAGMan's own logs (`DOT`, `NODE_STATUS_FILE`, `JOBSTATE_LOG`, …) and
//! `SCRIPT HOLD` are read and ignored with a warning; commands that change
//! the graph in ways gridbed does not read yet (`SPLICE`, `INCLUDE`,
//! `SUBDAG`, …) are errors naming their line.
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
    /// `DEBUG file type`: the file its output goes to and which streams
    /// (`STDOUT`, `STDERR` or `ALL`).
    pub debug: Option<(String, String)>,
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
    /// `FINAL`: the node that runs last, whatever happened before.
    pub is_final: bool,
    /// `ABORT-DAG-ON`: exit values that abort the DAG, each with the DAG's
    /// return value if given.
    pub abort_on: Vec<(i32, Option<i32>)>,
    /// The exit status of the node's job on each attempt (a sidecar's
    /// `exit`; the last repeats; empty: 0).
    pub exits: Vec<i32>,
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

/// One script ready to run: its executable resolved against the `.dag`'s
/// folder, its arguments as written, where `DEBUG` sends its output.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptCall {
    /// The executable.
    pub executable: std::path::PathBuf,
    /// Its arguments, macros unsubstituted.
    pub args: Vec<String>,
    /// `DEBUG file type`: the file (resolved) and whether stdout and stderr
    /// go there.
    pub debug: Option<(std::path::PathBuf, bool, bool)>,
}

/// A run of a script: what to execute, with what, and where its output goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    /// The executable.
    pub executable: std::path::PathBuf,
    /// Its arguments, macros substituted.
    pub args: Vec<String>,
    /// `DEBUG`: the file its output is appended to, stdout, stderr.
    pub debug: Option<(std::path::PathBuf, bool, bool)>,
}

impl Invocation {
    /// Runs it to its end in `dir` (stdin empty; output to the DEBUG file
    /// or nowhere) and returns DAGMan's reading of its exit: its code, 128 +
    /// the signal that killed it, 127 when it cannot start.
    pub fn run_blocking(&self, dir: &std::path::Path) -> i32 {
        match self.command(dir).and_then(|mut c| c.status()) {
            Ok(st) => exit_status(st),
            Err(e) => {
                tracing::warn!("script {}: {e}", self.executable.display());
                127
            }
        }
    }

    /// The process to start, its streams set up.
    pub fn command(&self, dir: &std::path::Path) -> std::io::Result<std::process::Command> {
        use std::process::Stdio;
        let mut cmd = std::process::Command::new(&self.executable);
        cmd.args(&self.args).current_dir(dir).stdin(Stdio::null());
        let (mut out, mut err) = (Stdio::null(), Stdio::null());
        if let Some((file, stdout, stderr)) = &self.debug {
            // DAGMan appends to the DEBUG file, creating it if need be.
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)?;
            if *stdout {
                out = Stdio::from(f.try_clone()?);
            }
            if *stderr {
                err = Stdio::from(f);
            }
        }
        cmd.stdout(out).stderr(err);
        Ok(cmd)
    }
}

/// A node's scripts ready to run.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeScripts {
    /// Node name (`$JOB`).
    pub node: String,
    /// `RETRY` (`$MAX_RETRIES`).
    pub max_retries: u32,
    /// PRE.
    pub pre: Option<ScriptCall>,
    /// POST.
    pub post: Option<ScriptCall>,
}

impl NodeScripts {
    /// The PRE or POST script's run, DAGMan's macros substituted, if the
    /// node has that script.
    pub fn invocation(
        &self,
        kind: crate::core::ScriptKind,
        retry: u32,
        status: i32,
    ) -> Option<Invocation> {
        let call = match kind {
            crate::core::ScriptKind::Pre => self.pre.as_ref(),
            crate::core::ScriptKind::Post => self.post.as_ref(),
        }?;
        Some(Invocation {
            executable: call.executable.clone(),
            args: self.args(&call.args, retry, status),
            debug: call.debug.clone(),
        })
    }

    /// The arguments of a script with DAGMan's macros substituted: `$JOB`
    /// and `$NODE`, `$RETRY`, `$MAX_RETRIES`, `$RETURN` (each a whole
    /// argument, as DAGMan substitutes them).
    pub fn args(&self, args: &[String], retry: u32, status: i32) -> Vec<String> {
        args.iter()
            .map(|a| match a.as_str() {
                "$JOB" | "$NODE" => self.node.clone(),
                "$RETRY" => retry.to_string(),
                "$MAX_RETRIES" => self.max_retries.to_string(),
                "$RETURN" => status.to_string(),
                _ => a.clone(),
            })
            .collect()
    }
}

/// A script's exit as DAGMan reads it: its exit code, or 128 + the signal
/// that killed it.
pub fn exit_status(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
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
            s.as_ref().map(|s| ScriptCall {
                executable: dag_dir.join(&s.executable),
                args: s.args.clone(),
                debug: s
                    .debug
                    .as_ref()
                    .map(|(file, kind)| (dag_dir.join(file), kind != "STDERR", kind != "STDOUT")),
            })
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
            s.abort_on[j] = n.abort_on.clone();
            s.exits[j] = n.exits.clone();
            if n.is_final {
                s.final_node = Some(j);
            }
        }
        s
    }
}

/// Commands that only configure DAGMan's own output or the DAGMan job
/// itself: read, ignored.
const IGNORED: [&str; 7] = [
    "DOT",
    "NODE_STATUS_FILE",
    "JOBSTATE_LOG",
    "SET_JOB_ATTR",
    "PRE_SKIP",
    "ENV",
    "SAVE_POINT_FILE",
];

/// Commands that change the graph beyond what gridbed reads yet.
const UNSUPPORTED: [&str; 10] = [
    "SPLICE",
    "INCLUDE",
    "SUBDAG",
    "SERVICE",
    "PROVISIONER",
    "CONNECT",
    "PIN_IN",
    "PIN_OUT",
    "SUBMIT-DESCRIPTION",
    "TOLERANCE",
];

const KEYWORDS: [&str; 13] = [
    "JOB",
    "FINAL",
    "PARENT",
    "SCRIPT",
    "RETRY",
    "VARS",
    "PRIORITY",
    "CATEGORY",
    "MAXJOBS",
    "DONE",
    "CONFIG",
    "ABORT-DAG-ON",
    "REJECT",
];

/// A node command's target: one node, or `ALL_NODES` (every node of the
/// file but the FINAL one).
#[derive(Clone, Copy)]
enum Target {
    Node(usize),
    All,
}

/// A command that sets a property of nodes; applied in file order once
/// every node is known, so that the last one to set a property wins, as in
/// DAGMan.
enum NodeCmd {
    Script { post: bool, script: Script },
    Retry { n: u32, unless: Option<i32> },
    Vars(Vec<(String, String)>),
    Priority(i32),
    Category(String),
    AbortOn(i32, Option<i32>),
}

impl NodeCmd {
    fn apply(&self, n: &mut NodeInfo) {
        match self {
            NodeCmd::Script {
                post: false,
                script,
            } => n.pre = Some(script.clone()),
            NodeCmd::Script { post: true, script } => n.post = Some(script.clone()),
            NodeCmd::Retry { n: r, unless } => {
                n.retry = *r;
                n.retry_unless_exit = *unless;
            }
            NodeCmd::Vars(pairs) => {
                for (k, v) in pairs {
                    n.vars.retain(|(x, _)| x != k);
                    n.vars.push((k.clone(), v.clone()));
                }
            }
            NodeCmd::Priority(p) => n.priority = *p,
            NodeCmd::Category(c) => n.category = Some(c.clone()),
            NodeCmd::AbortOn(v, r) => {
                n.abort_on.retain(|(x, _)| x != v);
                n.abort_on.push((*v, *r));
            }
        }
    }
}

/// The `name="value"` pairs of a `VARS` line after its node (and
/// `PREPEND`/`APPEND`): spaces may stand around `=`; values are quoted
/// (`\"` and `\\` inside) or, leniently, one word; names are macro names,
/// `+attr` or `My.attr` (ClassAd attributes).
fn vars_pairs(rest: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let mut name = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            name.push(c);
            chars.next();
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') {
            return Err(format!("`{name}` has no `=`; expected name=\"value\""));
        }
        let bare = name
            .strip_prefix('+')
            .or_else(|| name.strip_prefix("My."))
            .unwrap_or(&name);
        if bare.is_empty()
            || !bare
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            return Err(format!("`{name}` is not a macro name"));
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('\\') => match chars.next() {
                        Some(c) => value.push(c),
                        None => return Err(format!("`{name}`: a `\\` at the end")),
                    },
                    Some('"') => break,
                    Some(c) => value.push(c),
                    None => return Err(format!("`{name}`: an unclosed `\"`")),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                value.push(c);
                chars.next();
            }
        }
        out.push((name, value));
    }
    if out.is_empty() {
        return Err("expected name=\"value\" pairs".into());
    }
    Ok(out)
}

/// The text of `line` after its first `n` words.
fn after_words(line: &str, n: usize) -> &str {
    let mut rest = line.trim_start();
    for _ in 0..n {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        rest = rest[end..].trim_start();
    }
    rest
}

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
    /// The job's exit status on each attempt (the last repeats).
    #[serde(default)]
    exit: Vec<i32>,
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
/// (`name`, `runtime`, `inputs`, `outputs`, and `exit`: the status its
/// program exits with on each attempt, the last repeating).
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
        if let Some(node) = parsed.dagman.as_mut().and_then(|d| d.nodes.get_mut(i)) {
            node.exits = j.exit;
        }
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
    let mut node_cmds: Vec<(Target, NodeCmd)> = Vec::new();
    for (line, text) in &logical {
        let at = |m: String| err(format!("line {line}: {m}"));
        let t = text.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let w = words(t).map_err(at)?;
        let kw = w[0].to_ascii_uppercase();
        let arg = |k: usize, what: &str| {
            w.get(k)
                .cloned()
                .ok_or_else(|| at(format!("{kw}: expected {what}")))
        };
        // A node a command names (defined above this line), or ALL_NODES;
        // the FINAL node only where DAGMan allows it.
        let target = |k: usize, final_ok: bool| -> Result<Target, FormatError> {
            let name = arg(k, "a node name (or ALL_NODES)")?;
            if name.eq_ignore_ascii_case("ALL_NODES") {
                return Ok(Target::All);
            }
            let i = index.get(&name).copied().ok_or_else(|| {
                at(format!(
                    "{kw}: no JOB named `{name}` (defined above this line)"
                ))
            })?;
            if info.nodes[i].is_final && !final_ok {
                return Err(at(format!(
                    "{kw}: `{name}` is the FINAL node, which {kw} may not name"
                )));
            }
            Ok(Target::Node(i))
        };
        match kw.as_str() {
            "JOB" | "FINAL" => {
                let name = arg(1, "a node name and a submit file")?;
                let submit = arg(2, "a submit file after the node name")?;
                if index.contains_key(&name) {
                    return Err(at(format!("{kw}: a second node named `{name}`")));
                }
                if name.eq_ignore_ascii_case("ALL_NODES") {
                    return Err(at(format!("{kw}: ALL_NODES is a keyword, not a node name")));
                }
                let is_final = kw == "FINAL";
                if is_final && let Some(f) = info.nodes.iter().find(|n| n.is_final) {
                    return Err(at(format!(
                        "FINAL: a second FINAL node (`{}` is one already); a DAG has at most one",
                        f.name
                    )));
                }
                let mut n = NodeInfo {
                    name: name.clone(),
                    submit,
                    is_final,
                    ..Default::default()
                };
                let mut k = 3;
                while k < w.len() {
                    match w[k].to_ascii_uppercase().as_str() {
                        "NOOP" => n.noop = true,
                        "DONE" if !is_final => n.done = true,
                        "DIR" => {
                            k += 1;
                            n.dir = Some(arg(k, "a directory after DIR")?);
                        }
                        other => {
                            let expected = if is_final {
                                "DIR dir or NOOP"
                            } else {
                                "DIR dir, NOOP or DONE"
                            };
                            return Err(at(format!("{kw} {name}: `{other}`; expected {expected}")));
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
                let mut debug = None;
                if w.get(k).is_some_and(|x| x.eq_ignore_ascii_case("DEFER")) {
                    let status = arg(k + 1, "a status after DEFER")?
                        .parse()
                        .map_err(|_| at("SCRIPT DEFER: expected an exit status".into()))?;
                    let time = arg(k + 2, "a time after DEFER status")?
                        .parse()
                        .map_err(|_| at("SCRIPT DEFER: expected seconds".into()))?;
                    defer = Some((status, time));
                    k += 3;
                }
                if w.get(k).is_some_and(|x| x.eq_ignore_ascii_case("DEBUG")) {
                    let file = arg(k + 1, "a file after DEBUG")?;
                    let kind =
                        arg(k + 2, "STDOUT, STDERR or ALL after DEBUG file")?.to_ascii_uppercase();
                    if !["STDOUT", "STDERR", "ALL"].contains(&kind.as_str()) {
                        return Err(at(format!(
                            "SCRIPT DEBUG: `{kind}`; expected STDOUT, STDERR or ALL"
                        )));
                    }
                    debug = Some((file, kind));
                    k += 3;
                }
                let when = arg(k, "PRE, POST or HOLD")?.to_ascii_uppercase();
                let target = target(k + 1, true)?;
                let script = Script {
                    executable: arg(k + 2, "an executable")?,
                    args: w[k + 3..].to_vec(),
                    defer,
                    debug,
                };
                match when.as_str() {
                    "PRE" | "POST" => node_cmds.push((
                        target,
                        NodeCmd::Script {
                            post: when == "POST",
                            script,
                        },
                    )),
                    "HOLD" => warnings.push(format!(
                        "line {line}: SCRIPT HOLD ignored (gridbed's jobs are never held)"
                    )),
                    other => {
                        return Err(at(format!("SCRIPT: `{other}`; expected PRE, POST or HOLD")));
                    }
                }
            }
            "RETRY" => {
                let target = target(1, false)?;
                let n = arg(2, "a retry count")?
                    .parse()
                    .map_err(|_| at("RETRY: expected a whole number of retries".into()))?;
                let mut unless = None;
                if let Some(u) = w.get(3) {
                    if !u.eq_ignore_ascii_case("UNLESS-EXIT") {
                        return Err(at(format!("RETRY: `{u}`; expected UNLESS-EXIT value")));
                    }
                    unless = Some(
                        arg(4, "an exit value after UNLESS-EXIT")?
                            .parse()
                            .map_err(|_| at("RETRY UNLESS-EXIT: expected an integer".into()))?,
                    );
                }
                node_cmds.push((target, NodeCmd::Retry { n, unless }));
            }
            "VARS" => {
                let target = target(1, true)?;
                let edit = w.get(2).is_some_and(|x| {
                    x.eq_ignore_ascii_case("PREPEND") || x.eq_ignore_ascii_case("APPEND")
                });
                let rest = after_words(t, if edit { 3 } else { 2 });
                let pairs = vars_pairs(rest).map_err(|m| at(format!("VARS: {m}")))?;
                node_cmds.push((target, NodeCmd::Vars(pairs)));
            }
            "PRIORITY" => {
                let target = target(1, false)?;
                let p = arg(2, "a priority")?
                    .parse()
                    .map_err(|_| at("PRIORITY: expected an integer".into()))?;
                node_cmds.push((target, NodeCmd::Priority(p)));
            }
            "CATEGORY" => {
                let target = target(1, false)?;
                node_cmds.push((target, NodeCmd::Category(arg(2, "a category name")?)));
            }
            "ABORT-DAG-ON" => {
                let target = target(1, false)?;
                let value = arg(2, "an exit value")?
                    .parse()
                    .map_err(|_| at("ABORT-DAG-ON: expected an integer exit value".into()))?;
                let ret = match w.get(3) {
                    None => None,
                    Some(r) if r.eq_ignore_ascii_case("RETURN") => Some(
                        arg(4, "a DAG return value after RETURN")?
                            .parse()
                            .map_err(|_| at("ABORT-DAG-ON RETURN: expected an integer".into()))?,
                    ),
                    Some(r) => {
                        return Err(at(format!("ABORT-DAG-ON: `{r}`; expected RETURN value")));
                    }
                };
                node_cmds.push((target, NodeCmd::AbortOn(value, ret)));
            }
            "MAXJOBS" => {
                let cat = arg(1, "a category name")?;
                let n = arg(2, "a job limit")?
                    .parse()
                    .map_err(|_| at("MAXJOBS: expected a whole number".into()))?;
                info.max_jobs.insert(cat, n);
            }
            "DONE" => {
                let Target::Node(i) = target(1, false)? else {
                    return Err(at("DONE: expected a node name, not ALL_NODES".into()));
                };
                info.nodes[i].done = true;
            }
            "CONFIG" => info.config = Some(arg(1, "a configuration file")?),
            "REJECT" => {
                return Err(at(
                    "REJECT: this DAG file is marked rejected; DAGMan refuses to run it".into(),
                ));
            }
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
    for (target, cmd) in &node_cmds {
        match *target {
            Target::Node(i) => cmd.apply(&mut info.nodes[i]),
            Target::All => {
                for n in info.nodes.iter_mut().filter(|n| !n.is_final) {
                    cmd.apply(n);
                }
            }
        }
    }
    for (line, p, c) in deferred_refs {
        let find = |n: &String| {
            let i = index
                .get(n)
                .copied()
                .ok_or_else(|| err(format!("line {line}: PARENT/CHILD: no JOB named `{n}`")))?;
            if info.nodes[i].is_final {
                return Err(err(format!(
                    "line {line}: PARENT/CHILD: `{n}` is the FINAL node, which runs after every other and has no edges"
                )));
            }
            Ok(i)
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
