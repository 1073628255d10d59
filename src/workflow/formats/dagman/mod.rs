//! HTCondor DAGMan `.dag` files (HTCondor manual, "DAGMan Quick
//! Reference"): `JOB` (with `DIR`, `NOOP`, `DONE`), `FINAL`, `PARENT …
//! CHILD …` (many on both sides), `SCRIPT [DEFER s t] [DEBUG file type]
//! PRE|POST`, `RETRY [UNLESS-EXIT v]`, `VARS [PREPEND|APPEND]` (spaces around
//! `=`, `+attr` and `My.attr` ClassAd attributes), `PRIORITY`, `CATEGORY` +
//! `MAXJOBS`, `ABORT-DAG-ON [RETURN v]`, `DONE`, `CONFIG`
//! (`DAGMAN_MAX_PRE_SCRIPTS`, `DAGMAN_MAX_POST_SCRIPTS`,
//! `DAGMAN_MAX_JOBS_IDLE`, `DAGMAN_MAX_JOBS_SUBMITTED`,
//! `DAGMAN_SUBMIT_DEPTH_FIRST`, `DAGMAN_NODE_JOB_FAILURE_TOLERANCE`),
//! `ALL_NODES` wherever DAGMan takes it (every
//! node but the FINAL one; node commands apply in file order, the last one
//! to set a property winning), `REJECT` (refused, as DAGMan does), `#`
//! comments and `\` line continuations. Keywords are case-insensitive
//! (HTCondor's own test files write `Job`, `Script`). `DOT`,
//! `NODE_STATUS_FILE` and `JOBSTATE_LOG` are read (a run writes them:
//! [`files`], each DAGMan its own); `PRE_SKIP` is honoured; `ENV GET`/`SET` make
//! the scripts' environment (DAGMan's own `getenv` list, [`DAGMAN_GETENV`]);
//! `SET_JOB_ATTR` is kept; `SAVE_POINT_FILE` names the save file a node
//! writes as it starts ([`rescue::write_save_points`]);
//! `SCRIPT HOLD` is ignored with a warning; inline submit descriptions
//! (`JOB name { … }`, `@=END` … `@END`, `SUBMIT-DESCRIPTION name { … }`)
//! are kept with their nodes; `INCLUDE` reads a file
//! inline; `SPLICE` (with `CONNECT`, `PIN_IN`, `PIN_OUT`) and `SUBDAG
//! EXTERNAL` are flattened into one DAG ([`compose`]), a sub-DAG recorded
//! to be run as its own DAGMan; `SERVICE`, `PROVISIONER`, `WEAK PARENT`
//! and `TOLERANCE` (with `DAGMAN_NODE_JOB_FAILURE_TOLERANCE`) are read and
//! honoured. Where HTCondor refuses a command, it is refused at its line.
//!
//! [`grammar`] reads one file; [`compose`] joins the files.
//!
//! A `.dag` gives the graph and the node settings, not what a job computes:
//! runtimes are [`super::Options::default_runtime`] and jobs have no files
//! unless a sidecar says otherwise.

mod compose;
mod deferred;
pub mod files;
mod grammar;
pub mod halt;
pub mod program;
mod queue;
pub mod rescue;

pub use deferred::{ReadSubDag, SidecarNode, SubDagReads};
pub use grammar::looks_like;

use std::collections::{BTreeMap, HashMap};

use super::{FormatError, Options, Parsed, SubDagReading};
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
    /// Its submit description file (or, for a description written inline,
    /// `name-InlineDesc`, as DAGMan names it).
    pub submit: String,
    /// Its submit description as the DAG writes it inline (`JOB name { … }`,
    /// or a `SUBMIT-DESCRIPTION` its submit name names), as written.
    pub submit_description: Option<String>,
    /// `SUBDAG EXTERNAL`: the node's own DAG file (flattened into the DAG;
    /// the node ends when its DAG ends).
    pub subdag: Option<String>,
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
    /// `SERVICE`: a node that runs beside the DAG from its start, with no
    /// edges, and is removed when the DAG ends; its outcome is not the
    /// DAG's.
    pub is_service: bool,
    /// `PROVISIONER`: the node that runs first; no other node starts
    /// before its job runs.
    pub is_provisioner: bool,
    /// On a cycle of the DAG's edges, or below one: never ready (DAGMan
    /// runs a DAG with a cycle, and the nodes of the cycle and below it
    /// never run). The edges between such nodes are left out of the
    /// workflow, which must be acyclic.
    pub in_cycle: bool,
    /// `PRE_SKIP v`: the PRE script exiting `v` skips the job and POST
    /// script, and the node succeeds.
    pub pre_skip: Option<i32>,
    /// `ABORT-DAG-ON`: exit values that abort the DAG, each with the DAG's
    /// return value if given.
    pub abort_on: Vec<(i32, Option<i32>)>,
    /// The exit status of the node's job on each attempt (a sidecar's
    /// `exit`; the last repeats; empty: 0).
    pub exits: Vec<i32>,
    /// `TOLERANCE`. A sub-DAG's node without one has its DAGMan's
    /// `DAGMAN_NODE_JOB_FAILURE_TOLERANCE` (or 0) here; a top DAG's node,
    /// the top DAG's [`DagmanInfo::node_job_failure_tolerance`].
    pub tolerance: Option<Tolerance>,
    /// `SAVE_POINT_FILE`: the save file the node writes as it first starts,
    /// as named (a bare name goes in `save_files/` beside its DAG, see
    /// [`rescue::save_file`]).
    pub save_point: Option<String>,
}

/// How many of a node's jobs may fail before its job list fails
/// (`TOLERANCE`; HTCondor's `Node::CheckBatchFailed`): more than `value`,
/// or than `value` percent of them. The `FAIL-FAST`/`WAIT` mode, what
/// becomes of the list's other jobs, has nothing to act on here: a gridbed
/// node has one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tolerance {
    /// The number, or percentage, of failures tolerated.
    pub value: u32,
    /// `value` is a percentage.
    pub percent: bool,
}

impl Tolerance {
    /// Whether a node's one job failing leaves its job list successful:
    /// DAGMan fails the list when its failures exceed the tolerance, a
    /// percentage of one job rounded down.
    pub fn tolerates_one_failure(self) -> bool {
        let check = if self.percent {
            self.value / 100
        } else {
            self.value
        };
        check >= 1
    }
}

/// A `SUBDAG EXTERNAL` node's DAG, flattened into the DAG (see
/// [`compose`]): the manager runs it as its own DAGMan.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SubDagInfo {
    /// The `SUBDAG EXTERNAL` node's name.
    pub node: String,
    /// Its `.dag` file, where its rescue DAGs go.
    pub file: std::path::PathBuf,
    /// The no-op that starts the node (`node+PRE`): runs its PRE script,
    /// writes its save point file, submits the sub-DAG.
    pub entry: String,
    /// Its DAG's nodes (`node+name`), nested sub-DAGs' included.
    pub members: Vec<String>,
    /// `DAGMAN_MAX_JOBS_SUBMITTED` of its own `CONFIG`.
    pub max_jobs_submitted: Option<usize>,
    /// `DAGMAN_MAX_JOBS_IDLE` of its own `CONFIG`.
    pub max_jobs_idle: Option<usize>,
    /// `DAGMAN_MAX_POST_SCRIPTS` of its own `CONFIG`.
    pub max_post: Option<usize>,
    /// `DAGMAN_MAX_PRE_SCRIPTS` of its own `CONFIG`.
    pub max_pre: Option<usize>,
    /// Its own FINAL node (`node+name`), which its DAGMan runs last.
    pub final_node: Option<String>,
    /// Its own PROVISIONER node (`node+name`), which its DAGMan runs first.
    pub provisioner: Option<String>,
    /// `DAGMAN_SUBMIT_DEPTH_FIRST` of its own `CONFIG` (None: the
    /// testbed's, as DAGMan's is the HTCondor configuration's).
    pub submit_depth_first: Option<bool>,
    /// `DAGMAN_ALWAYS_RUN_POST` of its own `CONFIG`.
    pub always_run_post: Option<bool>,
    /// `DAGMAN_PROHIBIT_MULTI_JOBS` of its own `CONFIG`.
    pub prohibit_multi_jobs: Option<bool>,
    /// `DAGMAN_DEBUG` of its own `CONFIG`.
    pub debug: Option<String>,
    /// `DAGMAN_DEFAULT_PRIORITY` of its own `CONFIG`
    /// ([`DagmanInfo::default_priority`]).
    pub default_priority: Option<i32>,
    /// Its file is read only once its node's PRE script has run (which may
    /// write it), as DAGMan reads it: until then it has no members
    /// ([`DagmanInfo::read_subdag`]).
    pub deferred: bool,
    /// Its own `DOT` (its DAGMan draws its own nodes).
    pub dot: Option<DotFile>,
    /// Its own `NODE_STATUS_FILE`.
    pub node_status_file: Option<String>,
    /// Its own `JOBSTATE_LOG`.
    pub jobstate_log: Option<String>,
    /// The number of the rescue DAG it started from (0: none).
    pub rescue_number: u32,
}

impl SubDagInfo {
    /// Its DAGMan's priority, its node's effective priority being `node`:
    /// that (`condor_submit_dag -priority`), or its own
    /// `DAGMAN_DEFAULT_PRIORITY` when it is 0 (none given).
    fn dagman_priority(&self, node: i32) -> i32 {
        match node {
            0 => self.default_priority.unwrap_or(0),
            p => p,
        }
    }
}

/// `DOT file [UPDATE|DONT-UPDATE] [OVERWRITE|DONT-OVERWRITE] [INCLUDE
/// header]`: DAGMan draws the DAG as it starts, and again as its nodes'
/// states change when `UPDATE` is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DotFile {
    /// The file, relative to the `.dag`.
    pub file: String,
    /// `UPDATE`: drawn again as the run goes (DAGMan's default: only at
    /// the start).
    pub update: bool,
    /// `OVERWRITE` (the default): each drawing replaces the file; with
    /// `DONT-OVERWRITE` each goes to `file.N`, `N` the first number free.
    pub overwrite: bool,
    /// `INCLUDE header`: a file whose text goes into the graph first.
    pub include: Option<String>,
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
    /// `DAGMAN_MAX_JOBS_SUBMITTED` (from `CONFIG`): its jobs in the queue at
    /// once.
    pub max_jobs_submitted: Option<usize>,
    /// `DAGMAN_SUBMIT_DEPTH_FIRST` (from `CONFIG`).
    pub submit_depth_first: Option<bool>,
    /// `DAGMAN_ALWAYS_RUN_POST` (from `CONFIG`, or `-AlwaysRunPost`): a
    /// node whose PRE script failed still runs its POST script.
    pub always_run_post: Option<bool>,
    /// `DAGMAN_PROHIBIT_MULTI_JOBS` (from `CONFIG`): a node's job that
    /// queues several procs cannot be submitted
    /// ([`NodeScripts::prohibit_multi_jobs`]).
    pub prohibit_multi_jobs: Option<bool>,
    /// `DAGMAN_DEBUG` (from `CONFIG`, or the environment's
    /// `_CONDOR_DAGMAN_DEBUG`): the extra kinds of line its DAGMan log has
    /// (`D_TEST`'s, and `D_CAT`'s and `D_PID`'s tags).
    pub debug: Option<String>,
    /// `DAGMAN_NODE_JOB_FAILURE_TOLERANCE` (from `CONFIG`): every node's
    /// `TOLERANCE` unless it has its own.
    pub node_job_failure_tolerance: Option<u32>,
    /// `DAGMAN_DEFAULT_PRIORITY` (from `CONFIG` or the environment): the
    /// priority of its DAGMan, added to each node's `PRIORITY` (a
    /// sub-DAG's: unless its node's priority is not 0, which its DAGMan
    /// gets instead, as `condor_submit_dag -priority`).
    pub default_priority: Option<i32>,
    /// `DAGMAN_USE_DIRECT_SUBMIT` (from `CONFIG` or the environment): a
    /// failed submission is for good at once when true (the default).
    pub use_direct_submit: Option<bool>,
    /// `DAGMAN_MAX_SUBMIT_ATTEMPTS` (from `CONFIG` or the environment): a
    /// node's submissions, when they go through `condor_submit`.
    pub max_submit_attempts: Option<u32>,
    /// `CONFIG file`, as written (relative to the `.dag`).
    pub config: Option<String>,
    /// `DOT file [UPDATE] [DONT-OVERWRITE] [INCLUDE header]`: the DAG drawn
    /// for Graphviz, with its nodes' states.
    pub dot: Option<DotFile>,
    /// `NODE_STATUS_FILE file`: the nodes' states at the end of the run.
    pub node_status_file: Option<String>,
    /// `JOBSTATE_LOG file`: the run's node events, as Pegasus reads them.
    pub jobstate_log: Option<String>,
    /// `SET_JOB_ATTR key = value`: lines of the DAGMan job's own ClassAd,
    /// as written (kept in the run's record; no schedd reads them here).
    pub job_attrs: Vec<String>,
    /// `ENV GET names…`: variables (`*` a wildcard) DAGMan takes from the
    /// submitter's environment besides its own list ([`DAGMAN_GETENV`]).
    pub env_get: Vec<String>,
    /// `ENV SET key=value;…`: variables set in DAGMan's environment.
    pub env_set: Vec<(String, String)>,
    /// Its sub-DAGs (`SUBDAG EXTERNAL`), nested ones included, inner ones
    /// first (those of a sub-DAG read as the run went follow it).
    pub subdags: Vec<SubDagInfo>,
    /// `WEAK PARENT p CHILD c` edges (parent, child), by node name.
    pub weak_edges: Vec<(String, String)>,
    /// How a deferred sub-DAG's file is read ([`SubDagInfo::deferred`]).
    pub subdag_reads: SubDagReads,
    /// The categories by id once a sub-DAG was read as the run went (none
    /// before: see [`DagmanInfo::categories`]).
    pub category_order: Option<Vec<String>>,
    /// The number of the rescue DAG the run started from (0: none), as
    /// DAGMan reports it ([`rescue::number`]).
    pub rescue_number: u32,
    /// How the run chose the rescue (or save file) it started from, as
    /// asked.
    pub started_from: rescue::Rescue,
    /// The rescue number after which the run renames the DAG's rescues to
    /// `.old` as it starts (DAGMan's `-DoRescueFrom` and `-RescueFile`; see
    /// [`DagmanInfo::rename_later_rescues`]).
    pub renames_after: Option<u32>,
    /// Each node's job runs its submit description's program, whose exit
    /// is the job's (`[workflow] jobs = "run"`; see [`program`]).
    pub run_jobs: bool,
}

/// The variables `condor_submit_dag` passes from the submitter's
/// environment to the DAGMan job (`getenv` of its `.condor.sub`, HTCondor's
/// `dagman_utils.cpp`); its PRE and POST scripts see these, `ENV GET`'s
/// and `ENV SET`'s, and nothing else.
pub const DAGMAN_GETENV: [&str; 15] = [
    "CONDOR_CONFIG",
    "_CONDOR_*",
    "PATH",
    "PYTHONPATH",
    "PERL*",
    "PEGASUS_*",
    "TZ",
    "HOME",
    "USER",
    "LANG",
    "LC_ALL",
    "ASAN_OPTIONS",
    "LSAN_OPTIONS",
    "BEARER_TOKEN",
    "BEARER_TOKEN_FILE",
];

/// Whether `name` matches a `getenv` pattern (`*` any run of characters,
/// names compared without case, as HTCondor's `getenv` does).
fn env_matches(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.to_ascii_uppercase(), name.to_ascii_uppercase());
    let parts: Vec<&str> = p.split('*').collect();
    if parts.len() == 1 {
        return p == n;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !n.starts_with(first) || n.len() < first.len() + last.len() || !n.ends_with(last) {
        return false;
    }
    let mut rest = &n[first.len()..n.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

impl DagmanInfo {
    /// The environment DAGMan's scripts run with: the variables of `from`
    /// (the submitter's) that [`DAGMAN_GETENV`] or `ENV GET` name, then
    /// `ENV SET`'s.
    pub fn script_env(
        &self,
        from: impl Iterator<Item = (String, String)>,
    ) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = from
            .filter(|(k, _)| {
                DAGMAN_GETENV
                    .iter()
                    .map(|p| p.to_string())
                    .chain(self.env_get.iter().cloned())
                    .any(|p| env_matches(&p, k))
            })
            .collect();
        for (k, v) in &self.env_set {
            env.retain(|(x, _)| x != k);
            env.push((k.clone(), v.clone()));
        }
        env.sort();
        env
    }
}

/// One script ready to run: its executable resolved against the `.dag`'s
/// folder, its arguments as written, where `DEBUG` sends its output.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// Its whole environment.
    pub env: Vec<(String, String)>,
    /// The folder it runs in: its node's `DIR`, relative to the DAG's
    /// folder (DAGMan runs a node's scripts where it runs its job).
    pub dir: std::path::PathBuf,
    /// What its `DEBUG` banner names it by: `Node=A Type=POST`.
    pub label: String,
    /// A job's `input`, `output` and `error` files (a script has none).
    pub streams: program::Streams,
}

impl Invocation {
    /// Runs it to its end (stdin empty; output to the DEBUG file or
    /// nowhere) and returns DAGMan's reading of its exit: its code, 128 +
    /// the signal that killed it, 127 when it cannot start.
    pub fn run_blocking(&self) -> i32 {
        self.clone().start().finish()
    }

    /// Starts it (as [`Self::run_blocking`] does), to be waited for later:
    /// [`Running::finish`].
    pub fn start(self) -> Running {
        let child = self.command().and_then(|mut c| c.spawn()).map(|c| {
            // Registered while it runs, so that a signal's stop ends it
            // ([`crate::interrupt`]).
            let guard = crate::interrupt::Child::work(c.id());
            (c, guard)
        });
        Running { call: self, child }
    }

    /// DAGMan's reading of the end of its run (`output`, its streams as
    /// [`Self::command`] piped them), its `DEBUG` output written.
    pub fn ended(&self, output: std::io::Result<std::process::Output>) -> i32 {
        match output {
            Ok(out) => {
                if let Err(e) = self.write_debug(out.status, &out.stdout, &out.stderr) {
                    tracing::warn!("DEBUG file of {}: {e}", self.label);
                }
                exit_status(out.status)
            }
            Err(e) => {
                tracing::warn!("script {}: {e}", self.executable.display());
                127
            }
        }
    }

    /// The process to start: a job's streams to and from its files, a
    /// script's `DEBUG` streams piped (see [`Self::ended`]), the others to
    /// nowhere. `Err` when a job's file cannot be opened (it cannot
    /// start).
    pub fn command(&self) -> std::io::Result<std::process::Command> {
        use std::process::Stdio;
        let mut cmd = std::process::Command::new(&self.executable);
        let dir = match self.dir.as_os_str().is_empty() {
            true => std::path::Path::new("."),
            false => self.dir.as_path(),
        };
        cmd.args(&self.args)
            .current_dir(dir)
            .env_clear()
            .envs(self.env.iter().cloned());
        let (stdout, stderr) = self.debug.as_ref().map_or((false, false), |d| (d.1, d.2));
        let stream = |kept: bool| if kept { Stdio::piped() } else { Stdio::null() };
        let s = &self.streams;
        cmd.stdin(match &s.input {
            Some(f) => Stdio::from(std::fs::File::open(f)?),
            None => Stdio::null(),
        });
        let out = s.output.as_ref().map(std::fs::File::create).transpose()?;
        let err = match (&s.error, &out) {
            // One file for both: one handle, as the shell's `>f 2>&1`.
            (Some(e), Some(o)) if Some(e) == s.output.as_ref() => Some(o.try_clone()?),
            (Some(e), _) => Some(std::fs::File::create(e)?),
            (None, _) => None,
        };
        cmd.stdout(out.map_or_else(|| stream(stdout), Stdio::from));
        cmd.stderr(err.map_or_else(|| stream(stderr), Stdio::from));
        Ok(cmd)
    }

    /// Appends to the `DEBUG` file, as DAGMan's `Script::WriteDebug` does
    /// once the script ended (creating the file if need be): a banner line
    /// (`*** Node=A Type=POST ExitCode=1 Completion=<epoch s> Cmd='…'`,
    /// `Signal=<wait status>` for a script a signal ended), then the
    /// streams it keeps, stdout first.
    fn write_debug(
        &self,
        status: std::process::ExitStatus,
        stdout: &[u8],
        stderr: &[u8],
    ) -> std::io::Result<()> {
        use std::io::Write as _;
        use std::os::unix::process::ExitStatusExt;
        let Some((file, _, _)) = &self.debug else {
            return Ok(());
        };
        let (kind, value) = match status.code() {
            Some(code) => ("ExitCode", code),
            None => ("Signal", status.into_raw()),
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let cmd = std::iter::once(self.executable.display().to_string())
            .chain(self.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        let mut text = format!(
            "*** {} {kind}={value} Completion={now} Cmd='{cmd}'\n",
            self.label
        )
        .into_bytes();
        text.extend_from_slice(stdout);
        text.extend_from_slice(stderr);
        // One write, as DAGMan's: scripts sharing a file do not interleave.
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)?
            .write_all(&text)
    }
}

/// A script or program started and not yet waited for
/// ([`Invocation::start`]).
pub struct Running {
    call: Invocation,
    child: std::io::Result<(std::process::Child, crate::interrupt::Child)>,
}

impl Running {
    /// Waits for its end and returns DAGMan's reading of its exit, as
    /// [`Invocation::run_blocking`] does.
    pub fn finish(self) -> i32 {
        let output = self.child.and_then(|(c, _guard)| c.wait_with_output());
        self.call.ended(output)
    }
}

/// A node's scripts ready to run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NodeScripts {
    /// Node name (`$JOB`).
    pub node: String,
    /// `RETRY` (`$MAX_RETRIES`).
    pub max_retries: u32,
    /// PRE.
    pub pre: Option<ScriptCall>,
    /// POST.
    pub post: Option<ScriptCall>,
    /// The environment its scripts run with ([`DagmanInfo::script_env`]).
    #[serde(default)]
    pub env: Vec<(String, String)>,
    /// The folder its scripts run in: its `DIR` in the DAG's folder.
    #[serde(default)]
    pub dir: std::path::PathBuf,
    /// Its job, when the DAG's jobs run.
    #[serde(default)]
    pub job: Option<program::JobDescription>,
    /// Its DAGMan's `DAGMAN_PROHIBIT_MULTI_JOBS`: a job that queues
    /// several procs cannot be submitted.
    #[serde(default)]
    pub prohibit_multi_jobs: bool,
}

impl NodeScripts {
    /// The PRE or POST script's run, DAGMan's macros substituted, if the
    /// node has that script.
    pub fn invocation(
        &self,
        kind: crate::core::ScriptKind,
        macros: &crate::core::ScriptMacros,
    ) -> Option<Invocation> {
        let call = match kind {
            crate::core::ScriptKind::Pre => self.pre.as_ref(),
            crate::core::ScriptKind::Post => self.post.as_ref(),
        }?;
        let post = kind == crate::core::ScriptKind::Post;
        let label = format!(
            "Node={} Type={}",
            self.node,
            if post { "POST" } else { "PRE" }
        );
        Some(Invocation {
            label,
            executable: call.executable.clone(),
            args: self.args(&call.args, macros, post),
            debug: call.debug.clone(),
            env: self.env.clone(),
            dir: self.dir.clone(),
            streams: Default::default(),
        })
    }

    /// The runs of its job's programs, one a proc of its cluster
    /// ([`program::JobDescription::procs`]), when the DAG's jobs run,
    /// submitted with `at`'s counts: `Err` says why it has none.
    pub fn job_invocation(
        &self,
        at: &crate::core::ScriptMacros,
    ) -> Option<Result<Vec<Invocation>, String>> {
        let job = self.job.as_ref()?;
        let procs = match job.procs(at) {
            Ok(procs) => procs,
            Err(why) => return Some(Err(why)),
        };
        if self.prohibit_multi_jobs && procs.len() > 1 {
            // DAGMan's words (`direct_condor_submit`).
            return Some(Err(format!(
                "Submit generated multiple job procs; disallowed by \
                 DAGMAN_PROHIBIT_MULTI_JOBS setting (TotalProcs = {})",
                procs.len()
            )));
        }
        let call = |p: program::JobProgram| Invocation {
            label: format!("Node={}", self.node),
            executable: p.executable,
            args: p.args,
            debug: None,
            env: self.env.clone(),
            dir: p.dir,
            streams: p.streams,
        };
        Some(Ok(procs.into_iter().map(call).collect()))
    }

    /// Runs its job's programs to their end, when the DAG's jobs run, and
    /// returns each proc's exit in proc order (none: never run); or why
    /// the job could not be submitted, when it has no program to run. The
    /// procs run one after another and none runs after one that fails,
    /// as DAGMan removes a cluster's other procs when one fails
    /// ([`crate::core::site::Site::submit_procs`]).
    pub fn run_job_blocking(
        &self,
        at: &crate::core::ScriptMacros,
    ) -> Option<Result<Vec<Option<i32>>, String>> {
        Some(match self.job_invocation(at)? {
            Ok(calls) => {
                let mut failed = false;
                Ok((calls.iter())
                    .map(|call| {
                        let exit = (!failed).then(|| call.run_blocking());
                        failed |= exit.is_some_and(|e| e != 0);
                        exit
                    })
                    .collect())
            }
            Err(why) => Err(program::unsubmittable(&self.node, &why)),
        })
    }

    /// The arguments of a script with DAGMan's macros substituted, each a
    /// whole argument and in any case, as HTCondor's `Script::BackgroundRun`
    /// substitutes them: `$JOB` and `$NODE`, `$RETRY`, `$MAX_RETRIES`,
    /// `$DAG_STATUS`, `$FAILED_COUNT`, `$FUTILE_COUNT`, `$DONE_COUNT`,
    /// `$QUEUED_COUNT`, `$NODE_COUNT`; and for a `post` script `$RETURN`,
    /// `$PRE_SCRIPT_RETURN`, `$SUCCESS` and `$JOBID` (its job's HTCondor
    /// id, `cluster.0`, when it was submitted; a PRE script gets them as
    /// written). Any other `$WORD` is left as written.
    pub fn args(&self, args: &[String], m: &crate::core::ScriptMacros, post: bool) -> Vec<String> {
        args.iter()
            .map(|a| match a.to_ascii_uppercase().as_str() {
                "$JOB" | "$NODE" => self.node.clone(),
                "$RETRY" => m.retry.to_string(),
                "$MAX_RETRIES" => self.max_retries.to_string(),
                "$DAG_STATUS" => m.dag_status.to_string(),
                "$FAILED_COUNT" => m.failed.to_string(),
                "$FUTILE_COUNT" => m.futile.to_string(),
                "$DONE_COUNT" => m.done.to_string(),
                "$QUEUED_COUNT" => m.queued.to_string(),
                "$NODE_COUNT" => m.nodes.to_string(),
                "$RETURN" if post => m.status.to_string(),
                "$PRE_SCRIPT_RETURN" if post => m.pre_status.to_string(),
                "$SUCCESS" if post => if m.status == 0 { "True" } else { "False" }.into(),
                "$JOBID" if post && m.job_id > 0 => format!("{}.0", m.job_id),
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

/// `name`'s name in its own DAGMan, as its scripts and job see it
/// (`$JOB`, `$(dag_node_name)`): a sub-DAG's nodes are flattened as
/// `D+A`, where the DAGMan running `D` calls its node `A`. The innermost
/// sub-DAG node among `subdag_nodes` that prefixes `name` is dropped; the
/// prefixes of splices inside it stay, as DAGMan names spliced nodes.
fn local_name<'a>(name: &'a str, subdag_nodes: &std::collections::HashSet<&str>) -> &'a str {
    (name.char_indices().rev())
        .filter(|&(_, c)| c == '+')
        .find(|&(i, _)| subdag_nodes.contains(&name[..i]))
        .map_or(name, |(i, _)| &name[i + 1..])
}

impl DagmanInfo {
    /// Every job's scripts (None for a job with none), by job id of `wf`;
    /// relative executables are taken from `dag_dir`. `within` names the
    /// sub-DAG node whose DAG these nodes are, when they are one sub-DAG
    /// read as the run goes.
    pub fn scripts(
        &self,
        wf: &crate::core::Workflow,
        dag_dir: &std::path::Path,
        within: Option<&str>,
    ) -> Vec<Option<NodeScripts>> {
        let by_name: HashMap<&str, &NodeInfo> =
            self.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
        let subdag_nodes: std::collections::HashSet<&str> = (self.subdags.iter())
            .map(|d| d.node.as_str())
            .chain(within)
            .collect();
        // A node's scripts run in its DIR, as its job does.
        let resolve = |n: &NodeInfo, s: &Option<Script>| {
            let dir = dag_dir.join(n.dir.as_deref().unwrap_or(""));
            s.as_ref().map(|s| ScriptCall {
                executable: dir.join(&s.executable),
                args: s.args.clone(),
                debug: s
                    .debug
                    .as_ref()
                    .map(|(file, kind)| (dir.join(file), kind != "STDERR", kind != "STDOUT")),
            })
        };
        let env = self.script_env(std::env::vars());
        let priority = self.effective_priorities();
        wf.jobs
            .iter()
            .map(|j| {
                let n = by_name.get(j.name.as_str())?;
                // A sub-DAG node's PRE script runs in its entry no-op:
                // `$JOB` is the node's name.
                let node = || {
                    let node = (self.subdags.iter())
                        .find(|d| d.entry == n.name)
                        .map_or(&n.name, |d| &d.node);
                    local_name(node, &subdag_nodes)
                };
                // Its parents in its own DAGMan: a sub-DAG's entry no-op is
                // none of DAGMan's.
                let parents = || {
                    let mut ids = j.parents.clone();
                    ids.sort_unstable();
                    (ids.iter().map(|&p| wf.jobs[p].name.as_str()))
                        .filter(|p| !self.subdags.iter().any(|d| d.entry == *p))
                        .map(|p| local_name(p, &subdag_nodes).to_string())
                        .collect()
                };
                let job = (self.run_jobs && !n.noop && n.subdag.is_none()).then(|| {
                    let mut job = program::JobDescription::new(n, node(), dag_dir, parents());
                    job.priority = priority[n.name.as_str()];
                    job
                });
                (n.pre.is_some() || n.post.is_some() || job.is_some()).then(|| NodeScripts {
                    node: node().to_string(),
                    max_retries: n.retry,
                    pre: resolve(n, &n.pre),
                    post: resolve(n, &n.post),
                    env: env.clone(),
                    dir: dag_dir.join(n.dir.as_deref().unwrap_or("")),
                    job,
                    prohibit_multi_jobs: self.prohibits_multi_jobs(&n.name),
                })
            })
            .collect()
    }

    /// `DAGMAN_PROHIBIT_MULTI_JOBS` of the DAGMan whose node `name` is:
    /// its innermost sub-DAG's own `CONFIG`'s, else the top DAG's (off
    /// unless set, as in HTCondor's configuration).
    fn prohibits_multi_jobs(&self, name: &str) -> bool {
        let innermost = (name.char_indices().rev())
            .filter(|&(_, c)| c == '+')
            .find_map(|(i, _)| self.subdags.iter().find(|d| d.node == name[..i]));
        (innermost.map_or(self.prohibit_multi_jobs, |d| d.prohibit_multi_jobs)).unwrap_or(false)
    }

    /// Each node's effective priority, by name (HTCondor's
    /// `Node::GetEffectivePrio`): its `PRIORITY` plus its DAGMan's
    /// priority. The top DAG's is its `DAGMAN_DEFAULT_PRIORITY`; a
    /// sub-DAG's its node's effective priority, or, when that is 0 (no
    /// `-priority` given to its DAGMan), its own `DAGMAN_DEFAULT_PRIORITY`.
    /// A sub-DAG's entry no-op (its node's PRE script) is its node's
    /// DAGMan's, with no priority of its own.
    pub fn effective_priorities(&self) -> HashMap<&str, i32> {
        let subdag: HashMap<&str, usize> = (self.subdags.iter().enumerate())
            .map(|(k, d)| (d.node.as_str(), k))
            .collect();
        let entries: std::collections::HashSet<&str> =
            self.subdags.iter().map(|d| d.entry.as_str()).collect();
        let own: HashMap<&str, i32> = (self.nodes.iter())
            .map(|n| (n.name.as_str(), n.priority))
            .collect();
        // The sub-DAG whose DAGMan `name` is a node of: the longest prefix
        // before a `+` that names one (an entry's prefix is its own node).
        let innermost = |name: &str| {
            let name = match entries.contains(name) {
                true => name.rsplit_once('+').map_or("", |(node, _)| node),
                false => name,
            };
            (name.char_indices().rev())
                .filter(|&(_, c)| c == '+')
                .find_map(|(i, _)| subdag.get(&name[..i]).copied())
        };
        // Sub-DAGs outer first: a sub-DAG's node name is longer than its
        // parent's.
        let mut order: Vec<usize> = (0..self.subdags.len()).collect();
        order.sort_by_key(|&k| self.subdags[k].node.len());
        let top = self.default_priority.unwrap_or(0);
        let mut dag = vec![top; self.subdags.len()];
        for k in order {
            let d = &self.subdags[k];
            let outer = innermost(&d.node).map_or(top, |o| dag[o]);
            let node = own.get(d.node.as_str()).copied().unwrap_or(0) + outer;
            dag[k] = d.dagman_priority(node);
        }
        (self.nodes.iter())
            .map(|n| {
                let outer = innermost(&n.name).map_or(top, |k| dag[k]);
                (n.name.as_str(), n.priority + outer)
            })
            .collect()
    }

    /// The effective priority of the node `name` alone (as
    /// [`DagmanInfo::effective_priorities`] gives it), walking up its
    /// chain of sub-DAGs: a sub-DAG read as the run goes needs only its
    /// node's, and a DAG may have thousands of nodes.
    pub fn effective_priority(&self, name: &str) -> Option<i32> {
        let own = self.nodes.iter().find(|n| n.name == name)?.priority;
        let name = match self.subdags.iter().any(|d| d.entry == name) {
            true => name.rsplit_once('+').map_or("", |(node, _)| node),
            false => name,
        };
        let innermost = (name.char_indices().rev())
            .filter(|&(_, c)| c == '+')
            .find_map(|(i, _)| self.subdags.iter().find(|d| d.node == name[..i]));
        let dagman = match innermost {
            Some(d) => d.dagman_priority(self.effective_priority(&d.node).unwrap_or(0)),
            None => self.default_priority.unwrap_or(0),
        };
        Some(own + dagman)
    }

    /// How its DAGMan submits the jobs: its settings, HTCondor's defaults
    /// where it has none.
    pub fn submit_tries(&self) -> crate::core::nodes::SubmitTries {
        let tries = crate::core::nodes::SubmitTries::default();
        crate::core::nodes::SubmitTries {
            direct: self.use_direct_submit.unwrap_or(tries.direct),
            max_attempts: self.max_submit_attempts.unwrap_or(tries.max_attempts),
        }
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
        s.job_programs = self.run_jobs;
        s.submit = self.submit_tries();
        s.always_run_post = self.always_run_post.unwrap_or(false);
        s.max_jobs_idle = self.max_jobs_idle.unwrap_or(0);
        s.max_jobs_submitted = self.max_jobs_submitted.unwrap_or(0);
        let categories = self.categories();
        s.category_limits = categories
            .iter()
            .map(|c| self.max_jobs.get(c).copied().unwrap_or(usize::MAX))
            .collect();
        let by_name: HashMap<&str, &NodeInfo> =
            self.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
        let priority = self.effective_priorities();
        for (j, job) in wf.jobs.iter().enumerate() {
            let Some(n) = by_name.get(job.name.as_str()) else {
                continue;
            };
            s.retry[j] = Some(n.retry);
            s.priority[j] = priority[n.name.as_str()];
            s.category[j] = n
                .category
                .as_ref()
                .and_then(|c| categories.iter().position(|x| x == c));
            s.noop[j] = n.noop;
            s.done[j] = n.done;
            if n.in_cycle {
                s.in_cycle.insert(j);
            }
            s.pre[j] = run_scripts && n.pre.is_some();
            s.post[j] = run_scripts && n.post.is_some();
            let names_job_id =
                |sc: &Script| sc.args.iter().any(|a| a.eq_ignore_ascii_case("$JOBID"));
            if s.post[j] && n.post.as_ref().is_some_and(names_job_id) {
                s.post_job_id.insert(j);
            }
            s.retry_unless_exit.set(j, n.retry_unless_exit);
            let defer = |sc: &Option<Script>| {
                sc.as_ref()
                    .and_then(|x| x.defer)
                    .map(|(st, t)| (st, t as f64))
            };
            s.pre_defer.set(j, defer(&n.pre));
            s.post_defer.set(j, defer(&n.post));
            s.pre_skip.set(j, n.pre_skip);
            s.abort_on.set(j, n.abort_on.clone());
            s.exits.set(j, n.exits.clone());
            // A sub-DAG's FINAL node is its own ([`SubDagInfo::final_node`]).
            if n.is_final
                && !self
                    .subdags
                    .iter()
                    .any(|d| d.final_node.as_ref() == Some(&n.name))
            {
                s.final_node = Some(j);
            }
            s.service[j] = n.is_service;
            if n.save_point.is_some() {
                s.save_points.insert(j);
            }
            let tolerance =
                n.tolerance
                    .or(self.node_job_failure_tolerance.map(|value| Tolerance {
                        value,
                        percent: false,
                    }));
            if tolerance.is_some_and(Tolerance::tolerates_one_failure) {
                s.tolerant.insert(j);
            }
            // A sub-DAG's PROVISIONER is its own ([`SubDagInfo::provisioner`]).
            if n.is_provisioner
                && !self
                    .subdags
                    .iter()
                    .any(|d| d.provisioner.as_ref() == Some(&n.name))
            {
                s.provisioner = Some(j);
            }
        }
        let job_of: HashMap<&str, usize> = wf
            .jobs
            .iter()
            .enumerate()
            .map(|(j, job)| (job.name.as_str(), j))
            .collect();
        let id = |n: &String| job_of.get(n.as_str()).copied();
        s.weak = self
            .weak_edges
            .iter()
            .filter_map(|(p, c)| Some((id(p)?, id(c)?)))
            .collect();
        s.subdags = self
            .subdags
            .iter()
            .filter_map(|d| {
                Some(crate::core::nodes::SubDag {
                    node: id(&d.node)?,
                    entry: id(&d.entry),
                    members: d.members.iter().filter_map(id).collect(),
                    max_jobs_submitted: d.max_jobs_submitted.unwrap_or(0),
                    max_jobs_idle: d.max_jobs_idle.unwrap_or(0),
                    max_post: d.max_post.unwrap_or(0),
                    always_run_post: d.always_run_post.unwrap_or(false),
                    max_pre: d.max_pre.unwrap_or(0),
                    final_node: d.final_node.as_ref().and_then(id),
                    provisioner: d.provisioner.as_ref().and_then(id),
                    depth_first: d.submit_depth_first.unwrap_or(false),
                    deferred: d.deferred,
                })
            })
            .collect();
        s
    }

    /// The nodes of the top DAG: those of no sub-DAG (whose nodes, and
    /// the no-ops of their PRE scripts, belong to its own DAGMan and its
    /// own rescue DAG), and no SERVICE node (DAGMan keeps those apart).
    pub fn top_level(&self) -> impl Iterator<Item = &NodeInfo> {
        let inner: std::collections::HashSet<&str> = self
            .subdags
            .iter()
            .flat_map(|d| d.members.iter().chain(std::iter::once(&d.entry)))
            .map(String::as_str)
            .collect();
        self.nodes
            .iter()
            .filter(move |n| !inner.contains(n.name.as_str()) && !n.is_service)
    }
}

/// The DAGMan settings HTCondor takes from the environment before its
/// configuration files (`_CONDOR_<NAME>`), as a DAGMan started in it
/// would: `DAGMAN_DEBUG`, `DAGMAN_DEFAULT_PRIORITY`,
/// `DAGMAN_USE_DIRECT_SUBMIT` and `DAGMAN_MAX_SUBMIT_ATTEMPTS` (a value
/// that is not one is ignored).
pub fn apply_environment(info: &mut DagmanInfo) {
    if let Ok(v) = std::env::var("_CONDOR_DAGMAN_DEBUG") {
        info.debug = Some(v);
    }
    if let Ok(v) = std::env::var("_CONDOR_DAGMAN_USE_DIRECT_SUBMIT") {
        match v.trim().to_ascii_lowercase().as_str() {
            "true" | "t" => info.use_direct_submit = Some(true),
            "false" | "f" => info.use_direct_submit = Some(false),
            _ => {}
        }
    }
    if let Ok(v) = std::env::var("_CONDOR_DAGMAN_DEFAULT_PRIORITY")
        && let Ok(p) = v.trim().parse()
    {
        info.default_priority = Some(p);
    }
    if let Ok(v) = std::env::var("_CONDOR_DAGMAN_MAX_SUBMIT_ATTEMPTS")
        && let Some(n) = v.trim().parse().ok().filter(|&n| n >= 1)
    {
        info.max_submit_attempts = Some(n);
    }
}

/// Parses a DAGMan configuration file's `DAGMAN_MAX_*` settings,
/// `DAGMAN_DEFAULT_PRIORITY`, `DAGMAN_USE_DIRECT_SUBMIT`, `DAGMAN_SUBMIT_DEPTH_FIRST`, `DAGMAN_ALWAYS_RUN_POST`,
/// `DAGMAN_PROHIBIT_MULTI_JOBS`, `DAGMAN_DEBUG` and
/// `DAGMAN_NODE_JOB_FAILURE_TOLERANCE` into
/// `info`. Returns the other `DAGMAN_*` settings it names, with their
/// lines: gridbed does not read them, and the caller says so.
pub fn apply_config(
    text: &str,
    info: &mut DagmanInfo,
) -> Result<Vec<(usize, String)>, (usize, String)> {
    let mut unread = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err((n + 1, format!("expected `NAME = value`, found `{line}`")));
        };
        let key = key.trim().to_ascii_uppercase();
        let flag = match key.as_str() {
            "DAGMAN_SUBMIT_DEPTH_FIRST" => Some(&mut info.submit_depth_first),
            "DAGMAN_ALWAYS_RUN_POST" => Some(&mut info.always_run_post),
            "DAGMAN_PROHIBIT_MULTI_JOBS" => Some(&mut info.prohibit_multi_jobs),
            "DAGMAN_USE_DIRECT_SUBMIT" => Some(&mut info.use_direct_submit),
            _ => None,
        };
        if key == "DAGMAN_DEBUG" {
            info.debug = Some(value.trim().to_string());
            continue;
        }
        if let Some(flag) = flag {
            // HTCondor's booleans: true/false, in any case, or t/f.
            let v = value.trim().to_ascii_lowercase();
            *flag = Some(match v.as_str() {
                "true" | "t" => true,
                "false" | "f" => false,
                _ => {
                    let msg = format!("{key}: expected True or False, found `{}`", value.trim());
                    return Err((n + 1, msg));
                }
            });
            continue;
        }
        let slot = match key.as_str() {
            "DAGMAN_MAX_PRE_SCRIPTS" => &mut info.max_pre,
            "DAGMAN_MAX_POST_SCRIPTS" => &mut info.max_post,
            "DAGMAN_MAX_JOBS_IDLE" => &mut info.max_jobs_idle,
            "DAGMAN_MAX_JOBS_SUBMITTED" => &mut info.max_jobs_submitted,
            "DAGMAN_DEFAULT_PRIORITY" => {
                let v = value.trim();
                let why = format!("{key}: expected an integer, found `{v}`");
                info.default_priority = Some(v.parse().map_err(|_| (n + 1, why))?);
                continue;
            }
            "DAGMAN_MAX_SUBMIT_ATTEMPTS" => {
                let v = value.trim();
                let tries = v.parse().ok().filter(|&n: &u32| n >= 1);
                let why = format!("{key}: expected a whole number ≥ 1, found `{v}`");
                info.max_submit_attempts = Some(tries.ok_or((n + 1, why))?);
                continue;
            }
            "DAGMAN_NODE_JOB_FAILURE_TOLERANCE" => {
                let v = value.trim();
                info.node_job_failure_tolerance = Some(v.parse().map_err(|_| {
                    (
                        n + 1,
                        format!("{key}: expected a whole number ≥ 0, found `{v}`"),
                    )
                })?);
                continue;
            }
            _ => {
                if key.starts_with("DAGMAN_") {
                    unread.push((n + 1, key));
                }
                continue;
            }
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
    Ok(unread)
}

/// The warning for the `unread` settings of the configuration file at
/// `path`, if there are any.
pub fn unread_config_warning(path: &std::path::Path, unread: &[(usize, String)]) -> Option<String> {
    if unread.is_empty() {
        return None;
    }
    let list: Vec<String> = unread
        .iter()
        .map(|(l, k)| format!("{k} (line {l})"))
        .collect();
    Some(format!(
        "{}: not read by gridbed, so without effect here: {} (docs/dagman.md, CONFIG, lists what is read)",
        path.display(),
        list.join(", ")
    ))
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

/// The nodes `sidecar` gives inputs or outputs.
fn moving_data(sidecar: &Sidecar) -> std::collections::BTreeSet<String> {
    (sidecar.job.iter())
        .filter(|j| !j.inputs.is_empty() || !j.outputs.is_empty())
        .map(|j| j.name.get_ref().clone())
        .collect()
}

/// A sidecar's text and what it says, read once per DAG.
struct SidecarRead {
    text: String,
    sidecar: Sidecar,
}

/// Reads and parses the sidecar at `path`.
fn read_sidecar(path: &std::path::Path) -> Result<SidecarRead, FormatError> {
    let err = |message: String| FormatError {
        file: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?;
    let sidecar = toml::from_str(&text).map_err(|e| {
        let at = e
            .span()
            .map(|s| format!("line {}: ", line_at(&text, s.start)))
            .unwrap_or_default();
        err(format!("{at}{}", e.message()))
    })?;
    Ok(SidecarRead { text, sidecar })
}

/// The line of `text` at byte `offset`.
fn line_at(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Completes `parsed` (a `.dag`) with the runtimes, inputs, outputs and file
/// sizes of a TOML sidecar: `[[file]]` (`name`, `size`) and `[[job]]`
/// (`name`, `runtime`, `inputs`, `outputs`, and `exit`: the status its
/// program exits with on each attempt, the last repeating).
fn apply_sidecar(
    path: &std::path::Path,
    read: SidecarRead,
    parsed: &mut Parsed,
) -> Result<(), FormatError> {
    let err = |message: String| FormatError {
        file: path.to_path_buf(),
        message,
    };
    let SidecarRead { text, sidecar } = read;
    let line = |offset: usize| line_at(&text, offset);
    let index: HashMap<String, usize> = parsed
        .jobs
        .iter()
        .enumerate()
        .map(|(i, j)| (j.name.clone(), i))
        .collect();
    // The nodes of a sub-DAG read as the run goes are not jobs yet: what
    // the sidecar says of them waits for their reading.
    let deferred: Vec<String> = (parsed.dagman.iter())
        .flat_map(|d| d.subdags.iter().filter(|s| s.deferred))
        .map(|s| format!("{}+", s.node))
        .collect();
    for j in sidecar.job {
        let at = line(j.name.span().start);
        let name = j.name.get_ref();
        if let Some(r) = j.runtime
            && !(r.is_finite() && r >= 0.0)
        {
            return Err(err(format!(
                "line {at}: job `{name}`: runtime {r}; expected seconds ≥ 0"
            )));
        }
        let Some(&i) = index.get(name) else {
            let later = deferred.iter().find(|p| name.starts_with(p.as_str()));
            let (Some(prefix), Some(info)) = (later, parsed.dagman.as_mut()) else {
                return Err(err(format!("line {at}: job `{name}` is no JOB of the DAG")));
            };
            if !j.inputs.is_empty() || !j.outputs.is_empty() {
                return Err(err(format!(
                    "line {at}: job `{name}`: a node of sub-DAG {}, which is read as the run \
                     goes (after its node's PRE script), reads and writes no file; expected \
                     no inputs or outputs",
                    prefix.trim_end_matches('+')
                )));
            }
            let said = deferred::SidecarNode {
                runtime: j.runtime,
                exit: j.exit,
            };
            info.subdag_reads.sidecar.insert(name.clone(), said);
            continue;
        };
        let spec = &mut parsed.jobs[i];
        if let Some(r) = j.runtime {
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

/// Parses the `.dag` at `path` (its text `text`): its INCLUDEs inline, its
/// splices and sub-DAGs flattened (see [`compose`]).
pub fn parse(path: &std::path::Path, text: &str, opts: &Options) -> Result<Parsed, FormatError> {
    let top = grammar::read(path, text)?;
    let settings = DagmanInfo {
        nodes: Vec::new(),
        max_jobs: BTreeMap::new(),
        ..top.info.clone()
    };
    // Read once: which sub-DAGs move data decides how they are read, and
    // what it says completes the nodes once they are. A sidecar that
    // cannot be read is said so after the DAG's own errors.
    let sidecar = (opts.sidecar.as_deref()).map(|p| (p, read_sidecar(p)));
    let mut flat = compose::Flat {
        defer: opts.subdag_reading,
        move_data: match (opts.subdag_reading, &sidecar) {
            (SubDagReading::AtSubmission, Some((_, Ok(read)))) => moving_data(&read.sidecar),
            _ => Default::default(),
        },
        ..Default::default()
    };
    compose::flatten(top, path, &opts.rescue, &mut flat)?;
    if flat.nodes.is_empty() {
        return Err(FormatError {
            file: path.to_path_buf(),
            message: "no JOB line: not a DAGMan file".into(),
        });
    }
    // Splices are lifted into the DAG: one PROVISIONER among them all (a
    // sub-DAG's is its own DAGMan's, checked with its file).
    let provisioners: Vec<&str> = flat
        .nodes
        .iter()
        .filter(|n| n.is_provisioner)
        .map(|n| n.name.as_str())
        .filter(|&n| {
            !flat
                .subdags
                .iter()
                .any(|d| d.provisioner.as_deref() == Some(n))
        })
        .collect();
    if let [first, second, ..] = provisioners[..] {
        return Err(FormatError {
            file: path.to_path_buf(),
            message: format!(
                "PROVISIONER {second}: the DAG already has a PROVISIONER node ({first}); a DAG may have only one"
            ),
        });
    }
    let mut warnings = std::mem::take(&mut flat.warnings);
    if let Some(file) = rescue::chosen(path, &opts.rescue)? {
        let marked = rescue::apply(&file, &mut flat.nodes)?;
        warnings.push(match opts.rescue {
            rescue::Rescue::SaveFile(_) => format!(
                "loading saved progress from {}: {marked} nodes pre-completed",
                file.display()
            ),
            _ => format!(
                "running from the rescue DAG {}: {marked} nodes already DONE",
                file.display()
            ),
        });
    }
    let cyclic = break_cycles(&mut flat.nodes, &mut flat.parents);
    if let Some(first) = cyclic {
        warnings.push(format!(
            "the DAG has a cycle through node `{first}`: DAGMan runs it, and the nodes on the cycle and below it never run (the DAG fails, \"cycle\")"
        ));
    }
    let jobs = flat
        .nodes
        .iter()
        .zip(flat.parents)
        .map(|(n, ps)| JobSpec {
            name: n.name.clone(),
            runtime: if n.noop { 0.0 } else { opts.default_runtime },
            parents: ps,
            transformation: Some(n.submit.clone()).filter(|s| !s.is_empty()),
            ..Default::default()
        })
        .collect();
    warnings.push(format!(
        "a .dag gives no runtimes or files: every job runs {} s and moves no data",
        opts.default_runtime
    ));
    let mut parsed = Parsed {
        files: Vec::new(),
        jobs,
        indexed: None,
        warnings,
        dagman: Some(DagmanInfo {
            nodes: flat.nodes,
            max_jobs: flat.max_jobs,
            subdags: flat.subdags,
            weak_edges: flat.weak.into_iter().collect(),
            subdag_reads: SubDagReads {
                default_runtime: opts.default_runtime,
                rescue: opts.rescue.for_subdags(path),
                reading: opts.subdag_reading,
                ..Default::default()
            },
            rescue_number: rescue::number(path, &opts.rescue),
            started_from: opts.rescue.clone(),
            renames_after: match opts.rescue {
                rescue::Rescue::From(_) | rescue::Rescue::File(_) => {
                    Some(rescue::number(path, &opts.rescue))
                }
                _ => None,
            },
            ..settings
        }),
    };
    if let Some((path, read)) = sidecar {
        apply_sidecar(path, read?, &mut parsed)?;
    }
    Ok(parsed)
}

/// Marks the nodes DAGMan would never find ready because of a cycle (those
/// Kahn's algorithm cannot take: on a cycle, or below one) and drops the
/// edges between them, so that the workflow is acyclic and they stay
/// unrun, as under DAGMan, which does not look for cycles before it runs
/// (`DAGMAN_STARTUP_CYCLE_DETECT` is off by default). Returns the first
/// such node, if any.
fn break_cycles(nodes: &mut [NodeInfo], parents: &mut [Vec<String>]) -> Option<String> {
    let index: HashMap<&str, usize> = (nodes.iter().enumerate())
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let n = nodes.len();
    let mut children = vec![Vec::new(); n];
    let mut missing = vec![0usize; n];
    for (c, ps) in parents.iter().enumerate() {
        for p in ps.iter().filter_map(|p| index.get(p.as_str())) {
            children[*p].push(c);
            missing[c] += 1;
        }
    }
    let mut free: Vec<usize> = (0..n).filter(|&i| missing[i] == 0).collect();
    let mut taken = vec![false; n];
    while let Some(i) = free.pop() {
        taken[i] = true;
        for &c in &children[i] {
            missing[c] -= 1;
            if missing[c] == 0 {
                free.push(c);
            }
        }
    }
    let first = (0..n).find(|&i| !taken[i])?;
    let stuck: std::collections::HashSet<String> = (0..n)
        .filter(|&i| !taken[i])
        .map(|i| nodes[i].name.clone())
        .collect();
    for (i, ps) in parents.iter_mut().enumerate() {
        if !taken[i] {
            nodes[i].in_cycle = true;
            ps.retain(|p| !stuck.contains(p));
        }
    }
    Some(nodes[first].name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_is_named_in_its_own_dagman_with_its_splices() {
        let subdags = ["D", "D+S+E", "X"].into_iter().collect();
        let names = [
            ("A", "A"),
            ("S+A", "S+A"),
            ("D+A", "A"),
            ("D+S+A", "S+A"),
            ("D+S+E+B", "B"),
            ("D+S+E+T+B", "T+B"),
            ("DD+A", "DD+A"),
            ("D", "D"),
            ("D+S+E", "S+E"),
        ];
        for (flat, local) in names {
            assert_eq!(local_name(flat, &subdags), local, "{flat}");
        }
    }

    #[test]
    fn a_post_script_gets_the_job_and_pre_script_returns_a_pre_script_its_words() {
        let node = NodeScripts {
            node: "A".into(),
            max_retries: 2,
            pre: None,
            post: None,
            env: Vec::new(),
            dir: Default::default(),
            job: None,
            prohibit_multi_jobs: false,
        };
        let m = crate::core::ScriptMacros {
            status: -1004,
            pre_status: 3,
            retry: 1,
            ..Default::default()
        };
        let words = [
            "$JOB",
            "$RETURN",
            "$PRE_SCRIPT_RETURN",
            "$SUCCESS",
            "$retry",
            "$MAX_RETRIES",
        ];
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        assert_eq!(
            node.args(&words, &m, true),
            ["A", "-1004", "3", "False", "1", "2"]
        );
        let pre = node.args(&words, &m, false);
        assert_eq!(pre[1..4], words[1..4], "a PRE script gets them as written");
    }

    #[test]
    fn nodes_on_and_below_a_cycle_are_marked_and_their_edges_dropped() {
        let mut nodes: Vec<NodeInfo> = ["A", "B", "C", "D", "E"]
            .iter()
            .map(|n| NodeInfo {
                name: n.to_string(),
                ..Default::default()
            })
            .collect();
        // A -> B -> C -> B, C -> D; E alone.
        let mut parents: Vec<Vec<String>> = [&[][..], &["A", "C"], &["B"], &["C"], &[]]
            .iter()
            .map(|ps| ps.iter().map(|p| p.to_string()).collect())
            .collect();
        assert_eq!(break_cycles(&mut nodes, &mut parents).as_deref(), Some("B"));
        let marked: Vec<bool> = nodes.iter().map(|n| n.in_cycle).collect();
        assert_eq!(marked, [false, true, true, true, false]);
        assert_eq!(parents[1], ["A"], "the edge from A stays");
        assert!(parents[2].is_empty() && parents[3].is_empty());
        let mut acyclic = parents.clone();
        assert_eq!(break_cycles(&mut nodes, &mut acyclic), None);
    }

    #[test]
    fn a_config_sets_depth_first_release_and_refuses_what_is_no_boolean() {
        let mut info = DagmanInfo::default();
        apply_config("dagman_submit_depth_first = t\n", &mut info).unwrap();
        assert_eq!(info.submit_depth_first, Some(true));
        apply_config("DAGMAN_ALWAYS_RUN_POST = True\n", &mut info).unwrap();
        assert_eq!(info.always_run_post, Some(true));
        assert!(apply_config("DAGMAN_ALWAYS_RUN_POST = yes\n", &mut info).is_err());
        apply_config("DAGMAN_SUBMIT_DEPTH_FIRST = FALSE", &mut info).unwrap();
        assert_eq!(info.submit_depth_first, Some(false));
        let err = apply_config("# x\nDAGMAN_SUBMIT_DEPTH_FIRST = often", &mut info).unwrap_err();
        assert_eq!(err.0, 2);
        assert!(err.1.contains("expected True or False"), "{}", err.1);
    }

    #[test]
    fn a_config_says_how_dagman_submits_and_how_often_it_tries() {
        let mut info = DagmanInfo::default();
        assert_eq!(
            info.submit_tries(),
            crate::core::nodes::SubmitTries::default()
        );
        let text = "DAGMAN_USE_DIRECT_SUBMIT = False\nDAGMAN_MAX_SUBMIT_ATTEMPTS = 3\n";
        apply_config(text, &mut info).unwrap();
        let tries = info.submit_tries();
        assert_eq!((tries.direct, tries.max_attempts), (false, 3));
        let err = apply_config("DAGMAN_MAX_SUBMIT_ATTEMPTS = 0\n", &mut info).unwrap_err();
        assert_eq!(err.0, 1);
        assert!(err.1.contains("a whole number ≥ 1, found `0`"), "{}", err.1);
    }

    #[test]
    fn a_nodes_priority_adds_its_dagmans_which_a_subdag_takes_from_its_node() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let write = |name: &str, text: &str| std::fs::write(d.join(name), text).unwrap();
        write("top.cfg", "DAGMAN_DEFAULT_PRIORITY = 7\n");
        write("low.cfg", "DAGMAN_DEFAULT_PRIORITY = 3\n");
        write(
            "w.dag",
            "CONFIG top.cfg\nJOB a x.sub\nPRIORITY a 60\nJOB b x.sub\n\
             SUBDAG EXTERNAL up one.dag\nPRIORITY up 100\n\
             SUBDAG EXTERNAL zero one.dag\nPRIORITY zero -7\n\
             SUBDAG EXTERNAL plain two.dag\n",
        );
        // `one.dag`'s own default (3) counts only where its node gives its
        // DAGMan no priority (`zero`: -7 + 7).
        write(
            "one.dag",
            "CONFIG low.cfg\nJOB c x.sub\nPRIORITY c 10\nJOB d x.sub\n",
        );
        write(
            "two.dag",
            "JOB e x.sub\nPRIORITY e -30\nSUBDAG EXTERNAL in one.dag\n",
        );
        let loaded = crate::workflow::formats::load(&d.join("w.dag"), &Default::default()).unwrap();
        let info = loaded.dagman.unwrap();
        let p = info.effective_priorities();
        let want = [
            ("a", 67),
            ("b", 7),
            ("up", 107),
            ("up+c", 117),
            ("up+d", 107),
            ("zero", 0),
            ("zero+c", 13),
            ("zero+d", 3),
            ("plain", 7),
            ("plain+e", -23),
            ("plain+in", 7),
            ("plain+in+c", 17),
        ];
        for (node, prio) in want {
            assert_eq!(p.get(node), Some(&prio), "{node}: {p:?}");
        }
        // A sub-DAG's entry no-op is its node's DAGMan's, with no priority
        // of its own.
        assert_eq!(
            (p.get("up+PRE"), p.get("plain+in+PRE")),
            (Some(&7), Some(&7))
        );
        let s = info.node_settings(&loaded.workflow, false);
        let j = loaded
            .workflow
            .jobs
            .iter()
            .position(|j| j.name == "up+c")
            .unwrap();
        assert_eq!(s.priority[j], 117, "the ready queues see them too");
    }

    proptest::proptest! {
        /// Against a reference recursion over random trees of `.dag`
        /// files (each may run later files as sub-DAGs, several times):
        /// a node's priority plus its DAGMan's, which a sub-DAG takes from
        /// its node, or from its own default when that is 0. Priorities
        /// are drawn so that sums of 0 come often. Both the whole map and
        /// the walk up one node's chain.
        #[test]
        fn effective_priorities_are_the_tree_recursion(
            files in proptest::collection::vec(
                (0..4usize, proptest::collection::vec((0..5usize, 0..5usize), 1..4)),
                1..5,
            ),
        ) {
            const PRIO: [i32; 5] = [0, 0, 3, -3, 6];
            const DEFAULT: [Option<i32>; 4] = [None, Some(0), Some(3), Some(-6)];
            let dir = tempfile::tempdir().unwrap();
            let sub = |i: usize, t: usize| (t > i && t < files.len()).then_some(t);
            for (i, (default, nodes)) in files.iter().enumerate() {
                let mut text = String::new();
                if let Some(p) = DEFAULT[*default] {
                    let cfg = format!("c{i}.cfg");
                    std::fs::write(dir.path().join(&cfg), format!("DAGMAN_DEFAULT_PRIORITY = {p}\n")).unwrap();
                    text += &format!("CONFIG {cfg}\n");
                }
                for (k, &(p, t)) in nodes.iter().enumerate() {
                    text += &match sub(i, t) {
                        Some(t) => format!("SUBDAG EXTERNAL n{k} f{t}.dag\n"),
                        None => format!("JOB n{k} x.sub\n"),
                    };
                    text += &format!("PRIORITY n{k} {}\n", PRIO[p]);
                }
                std::fs::write(dir.path().join(format!("f{i}.dag")), text).unwrap();
            }
            fn expect(
                files: &[(usize, Vec<(usize, usize)>)],
                i: usize,
                prefix: &str,
                dagman: i32,
                out: &mut Vec<(String, i32)>,
            ) {
                for (k, &(p, t)) in files[i].1.iter().enumerate() {
                    let name = format!("{prefix}n{k}");
                    let own = PRIO[p] + dagman;
                    out.push((name.clone(), own));
                    if t > i && t < files.len() {
                        out.push((format!("{name}+PRE"), dagman));
                        let inner = match own {
                            0 => DEFAULT[files[t].0].unwrap_or(0),
                            p => p,
                        };
                        expect(files, t, &format!("{name}+"), inner, out);
                    }
                }
            }
            let mut want = Vec::new();
            expect(&files, 0, "", DEFAULT[files[0].0].unwrap_or(0), &mut want);
            let loaded =
                crate::workflow::formats::load(&dir.path().join("f0.dag"), &Default::default())
                    .unwrap();
            let info = loaded.dagman.unwrap();
            let all = info.effective_priorities();
            proptest::prop_assert_eq!(all.len(), want.len());
            for (name, p) in &want {
                proptest::prop_assert_eq!(all.get(name.as_str()), Some(p), "{}", name);
                proptest::prop_assert_eq!(info.effective_priority(name), Some(*p), "{}", name);
            }
        }
    }

    #[test]
    fn a_config_names_the_dagman_settings_it_does_not_read() {
        let mut info = DagmanInfo::default();
        let text = "DAGMAN_MAX_JOBS_IDLE = 3\nALL_DEBUG = D_FULLDEBUG\n\
                    dagman_retry_node_first = True\nDAGMAN_MAX_SUBMITS_PER_INTERVAL = 5\n";
        let unread = apply_config(text, &mut info).unwrap();
        assert_eq!(info.max_jobs_idle, Some(3));
        let keys = [
            (3, "DAGMAN_RETRY_NODE_FIRST".to_string()),
            (4, "DAGMAN_MAX_SUBMITS_PER_INTERVAL".to_string()),
        ];
        assert_eq!(unread, keys);
        let w = unread_config_warning(std::path::Path::new("d/x.cfg"), &unread).unwrap();
        assert!(
            w.starts_with("d/x.cfg: not read by gridbed")
                && w.contains(
                    "DAGMAN_RETRY_NODE_FIRST (line 3), DAGMAN_MAX_SUBMITS_PER_INTERVAL (line 4)"
                ),
            "{w}"
        );
        assert_eq!(unread_config_warning(std::path::Path::new("x"), &[]), None);
    }
}
