//! `<dag>.dagman.out`: the log each DAGMan writes as it runs (its
//! `debug_printf` lines at its default verbosity, `DAGMAN_VERBOSITY` 3),
//! in DAGMan's words, so that what reads DAGMan's log (HTCondor's own
//! tests, people) reads an emulated run's:
//!
//! * as it starts: DaemonCore's banner, the settings it runs with
//!   (`Dagman::Config`: the DAG's `CONFIG` or HTCondor's defaults), the
//!   DAG file it parses, the rescue DAG it runs from (`Found rescue DAG
//!   number N`, `Rescue DAG number N specified`, `Rescue DAG file
//!   specified`, `USING RESCUE DAG …`), its node count, each category's
//!   throttle (`CHECK CATEGORY`, a `D_TEST` line) and its DONE nodes;
//! * as nodes go (`Dag::PreScriptReaper`, `SubmitNodeJob`,
//!   `ProcessOneEvent`, `PostScriptReaper`, `RestartNode`): PRE and POST
//!   scripts run and their results, `PRE_SKIP`, submissions (a sub-DAG's
//!   by `Recursive submit command`), each job event read back from the
//!   node log (`Event: ULOG_… for HTCondor Node …`, a NOOP node's faked
//!   as DAGMan fakes them), each job's result, each retry;
//! * whenever a count of its nodes changed (`condor_event_timer`), the
//!   `DAG status` table of nodes per phase (`progress`);
//! * as it exits: the `DAG status` table, the metrics file written and
//!   `EXITING WITH STATUS n` (DaemonCore's `DC_Exit`).
//!
//! Each run of a DAGMan appends its lines, as DAGMan appends to its log
//! (a sub-DAG run again, a rescue run). Lines start with DAGMan's
//! `MM/DD/YY HH:MM:SS ` (UTC), then `(pid:N) ` under `DAGMAN_DEBUG`'s
//! `D_PID` and the line's kind (`(D_ALWAYS) `, `(D_TEST) `) under `D_CAT`.
//! What DAGMan logs about its own machinery (log files read, the
//! schedd, its submit cycles) has no counterpart here and is not
//! written.

use std::fmt::Write as _;
use std::time::SystemTime;

use super::super::rescue::Rescue;
use super::progress;
use super::view::*;
use crate::core::JobId;
use crate::core::nodes::SubmitTries;
use crate::core::records::{Attempt, Outcome};

/// The settings a DAGMan logs as it starts, and those that shape its log.
#[derive(Default)]
struct Knobs<'a> {
    max_idle: Option<usize>,
    max_submitted: Option<usize>,
    max_pre: Option<usize>,
    max_post: Option<usize>,
    depth_first: Option<bool>,
    always_run_post: Option<bool>,
    prohibit_multi: Option<bool>,
    debug: Option<&'a str>,
}

impl Knobs<'_> {
    /// Whether `DAGMAN_DEBUG` names the category `d` (`D_TEST`, …).
    fn has(&self, d: &str) -> bool {
        self.debug.is_some_and(|v| {
            v.split(|c: char| c.is_whitespace() || c == ',' || c == '|')
                .any(|w| w.eq_ignore_ascii_case(d) || w.eq_ignore_ascii_case("D_ALL"))
        })
    }
}

/// A log being written: each line with DAGMan's header.
struct Log<'a> {
    out: String,
    epoch: SystemTime,
    pid: Option<u32>,
    cat: bool,
    knobs: &'a Knobs<'a>,
}

impl Log<'_> {
    /// A line at the run's time `t`, of the dprintf kind `kind`.
    fn kind(&mut self, t: f64, kind: &str, msg: &str) {
        let _ = write!(self.out, "{} ", stamp(seconds(self.epoch, t)));
        if let Some(pid) = self.pid {
            let _ = write!(self.out, "(pid:{pid}) ");
        }
        if self.cat {
            let _ = write!(self.out, "({kind}) ");
        }
        self.out.push_str(msg);
        self.out.push('\n');
    }

    /// A `D_ALWAYS` line (every `debug_printf`).
    fn line(&mut self, t: f64, msg: &str) {
        self.kind(t, "D_ALWAYS", msg);
    }
}

/// `secs` since the Unix epoch as DAGMan's `DEBUG_TIME_FORMAT`
/// (`%m/%d/%y %H:%M:%S`), in UTC.
fn stamp(secs: u64) -> String {
    let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    let iso = humantime::format_rfc3339_seconds(t).to_string();
    let at = |r: std::ops::Range<usize>| iso.get(r).unwrap_or("00");
    format!(
        "{}/{}/{} {}",
        at(5..7),
        at(8..10),
        at(2..4),
        iso.get(11..19).unwrap_or("00:00:00")
    )
}

/// `inst`'s DAGMan log, each of its runs in turn.
pub(super) fn dagman_out(cx: &Ctx, inst: &Instance, epoch: SystemTime) -> String {
    let info = cx.dag.info;
    let knobs = match inst.subdag {
        None => Knobs {
            max_idle: info.max_jobs_idle,
            max_submitted: info.max_jobs_submitted,
            max_pre: info.max_pre,
            max_post: info.max_post,
            depth_first: info.submit_depth_first,
            always_run_post: info.always_run_post,
            prohibit_multi: info.prohibit_multi_jobs,
            debug: info.debug.as_deref(),
        },
        Some(k) => {
            let d = &info.subdags[k];
            Knobs {
                max_idle: d.max_jobs_idle,
                max_submitted: d.max_jobs_submitted,
                max_pre: d.max_pre,
                max_post: d.max_post,
                depth_first: d.submit_depth_first,
                always_run_post: d.always_run_post,
                prohibit_multi: d.prohibit_multi_jobs,
                debug: d.debug.as_deref(),
            }
        }
    };
    let mut log = Log {
        out: String::new(),
        epoch,
        pid: knobs.has("D_PID").then(std::process::id),
        cat: knobs.has("D_CAT"),
        knobs: &knobs,
    };
    let mut events = node_lines(cx, inst, epoch).into_iter().peekable();
    let total = cx.dag.drawn(inst).len();
    for r in 0..inst.runs.len() {
        starting(cx, inst, r, &mut log);
        // Each table follows the events of its instant.
        let mut tables = progress::tables(cx, inst, r).into_iter().peekable();
        while let Some((_, t, _, msg)) = events.next_if(|e| e.0 == r) {
            while let Some(table) = tables.next_if(|s| s.t < t) {
                status_table(&table, total, &mut log);
            }
            log.line(t, &msg);
        }
        for table in tables {
            status_table(&table, total, &mut log);
        }
        exiting(cx, inst, r, &mut log);
    }
    log.out
}

/// The banner DaemonCore logs as a DAGMan starts.
fn banner(t: f64, log: &mut Log) {
    let stars = "******************************************************";
    log.line(t, stars);
    log.line(t, "** condor_dagman (CONDOR_DAGMAN) STARTING UP");
    let version = env!("CARGO_PKG_VERSION");
    let emulating = format!("** gridbed {version}, emulating HTCondor {HTCONDOR_VERSION}'s DAGMan");
    log.line(t, &emulating);
    log.line(t, &format!("** PID = {}", std::process::id()));
    log.line(t, stars);
}

/// The line a DAGMan logs as it exits with `exit`.
fn exit_line(t: f64, exit: i32, log: &mut Log) {
    let pid = std::process::id();
    let line = format!("**** condor_dagman (condor_DAGMAN) pid {pid} EXITING WITH STATUS {exit}");
    log.line(t, &line);
}

/// The log of a DAGMan that could not parse its DAG, the `.dag` at `dag`
/// (`error` says why, in `file`: the DAG or a file it reads), at `epoch`:
/// it exits 1 before running a node. Appended to `<dag>.dagman.out`, as
/// DAGMan appends; returns its path.
pub fn write_refused(
    dag: &std::path::Path,
    file: &std::path::Path,
    error: &str,
    epoch: SystemTime,
) -> std::io::Result<std::path::PathBuf> {
    let knobs = Knobs::default();
    let mut log = Log {
        out: String::new(),
        epoch,
        pid: None,
        cat: false,
        knobs: &knobs,
    };
    let name_of = |p: &std::path::Path| -> String {
        p.file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into())
    };
    let name = name_of(dag);
    banner(0.0, &mut log);
    log.line(0.0, &format!("DAG Input file is {name}"));
    log.line(0.0, "Parsing 1 dagfiles");
    log.line(0.0, &format!("Parsing {name} ..."));
    log.line(0.0, &format!("ERROR: {}: {error}", name_of(file)));
    log.line(0.0, &format!("Failed to parse {name}"));
    log.line(0.0, "Removing any/all submitted HTCondor jobs...");
    exit_line(0.0, 1, &mut log);
    append(dag, &log.out)
}

/// Appends `text` to the log of the DAG at `dag`, `<dag>.dagman.out`, as
/// DAGMan appends to its log run after run; returns its path.
pub(super) fn append(dag: &std::path::Path, text: &str) -> std::io::Result<std::path::PathBuf> {
    let mut path = dag.as_os_str().to_owned();
    path.push(".dagman.out");
    let path = std::path::PathBuf::from(path);
    let mut out = (std::fs::OpenOptions::new().create(true).append(true)).open(&path)?;
    std::io::Write::write_all(&mut out, text.as_bytes())?;
    Ok(path)
}

/// What a DAGMan logs as its run `r` starts, before any node runs.
fn starting(cx: &Ctx, inst: &Instance, r: usize, log: &mut Log) {
    let run = &inst.runs[r];
    let t = run.start;
    banner(t, log);
    let k = log.knobs;
    let yes = |b: Option<bool>| if b.unwrap_or(false) { "True" } else { "False" };
    let tries = cx.dag.info.submit_tries();
    let settings = [
        ("DAGMAN_MAX_SUBMIT_ATTEMPTS", tries.max_attempts.to_string()),
        (
            "DAGMAN_MAX_JOBS_IDLE",
            k.max_idle.unwrap_or(1000).to_string(),
        ),
        (
            "DAGMAN_MAX_JOBS_SUBMITTED",
            k.max_submitted.unwrap_or(0).to_string(),
        ),
        (
            "DAGMAN_MAX_PRE_SCRIPTS",
            k.max_pre.unwrap_or(20).to_string(),
        ),
        (
            "DAGMAN_MAX_POST_SCRIPTS",
            k.max_post.unwrap_or(20).to_string(),
        ),
        ("DAGMAN_PROHIBIT_MULTI_JOBS", yes(k.prohibit_multi).into()),
        ("DAGMAN_SUBMIT_DEPTH_FIRST", yes(k.depth_first).into()),
        ("DAGMAN_ALWAYS_RUN_POST", yes(k.always_run_post).into()),
        ("DAGMAN_USE_DIRECT_SUBMIT", yes(Some(tries.direct)).into()),
    ];
    for (name, value) in settings {
        log.line(t, &format!("{name} setting: {value}"));
    }
    if let Some(d) = k.debug.filter(|d| !d.is_empty()) {
        log.line(t, &format!("DAGMAN_DEBUG setting: {d}"));
    }
    log.line(t, &format!("DAG Input file is {}", inst.file));
    log.line(t, "Parsing 1 dagfiles");
    log.line(t, &format!("Parsing {} ...", inst.file));
    rescue_lines(cx, inst, r, log);
    log.line(t, &format!("Dag contains {} total nodes", inst.nodes.len()));
    if k.has("D_TEST") {
        categories(cx, inst, t, log);
    }
    log.line(t, "Bootstrapping...");
    let done = (inst.nodes.iter())
        .filter(|&&j| done_by(cx, j, t, true))
        .count();
    log.line(t, &format!("Number of pre-completed nodes: {done}"));
    log.line(t, "Registering condor_event_timer...");
}

/// The rescue DAG (or save file) run `r` of `inst` starts from, as
/// DAGMan says it (`dagman_main.cpp`'s `rescueDagMsg`).
fn rescue_lines(cx: &Ctx, inst: &Instance, r: usize, log: &mut Log) {
    let run = &inst.runs[r];
    let info = cx.dag.info;
    let how = match inst.subdag {
        None if r == 0 => &info.started_from,
        _ => &info.subdag_reads.rescue,
    };
    if let (Rescue::SaveFile(p), None) = (how, inst.subdag) {
        let msg = format!("Loading saved progress from {} for DAG.", p.display());
        log.line(run.start, &msg);
        return;
    }
    let n = run.rescue;
    let (msg, file) = match how {
        // A file by name, whatever number its name carries (0: none).
        Rescue::File(p) if inst.subdag.is_none() => (
            "Rescue DAG file specified".to_string(),
            p.display().to_string(),
        ),
        _ if n == 0 => return,
        Rescue::From(_) if r == 0 => (
            format!("Rescue DAG number {n} specified"),
            format!("{}.rescue{n:03}", inst.file),
        ),
        _ => (
            format!("Found rescue DAG number {n}"),
            format!("{}.rescue{n:03}", inst.file),
        ),
    };
    let t = run.start;
    log.line(
        t,
        &format!("{msg}; running {file} in combination with normal DAG file"),
    );
    log.line(t, "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~");
    log.line(t, &format!("USING RESCUE DAG {file}"));
}

/// Each category of `inst`'s nodes, its node count and throttle
/// (`Dag::CheckThrottleCats`, by name; -1: none).
fn categories(cx: &Ctx, inst: &Instance, t: f64, log: &mut Log) {
    let mut count: std::collections::BTreeMap<&str, usize> = Default::default();
    for &j in &inst.nodes {
        let name = cx.dag.workflow.jobs[j].name.as_str();
        if let Some(c) = cx
            .dag
            .node_info
            .get(name)
            .and_then(|n| n.category.as_deref())
        {
            *count.entry(c).or_default() += 1;
        }
    }
    for (c, n) in count {
        let limit = cx.dag.info.max_jobs.get(c);
        let shown = limit.map_or(-1, |&l| l as i64);
        log.kind(t, "D_TEST", &format!("CHECK CATEGORY {c} {n} {shown}"));
        if limit.is_none() {
            log.line(
                t,
                &format!("Warning: category {c} has no throttle value set"),
            );
        }
    }
}

/// What a DAGMan logs as its run `r` exits: its result, the status
/// table (`print_status`), its metrics file, its exit.
fn exiting(cx: &Ctx, inst: &Instance, r: usize, log: &mut Log) {
    let run = &inst.runs[r];
    let t = run.end;
    if run.exit == 0 {
        log.line(t, "All jobs Completed!");
    } else {
        log.line(t, "Aborting DAG...");
        log.line(t, "Removing any/all submitted HTCondor jobs...");
    }
    let last = r + 1 == inst.runs.len();
    let (mut done, mut failed, mut futile, mut unready) = (0, 0, 0, 0);
    let drawn = cx.dag.drawn(inst);
    for &j in &drawn {
        let state = match last {
            true => cx.ends[j],
            false if done_by(cx, j, t, false) => State::Done,
            false => {
                let tried = |a: &Attempt| a.prescript >= run.start && a.prescript <= t;
                match cx.run.records.jobs[j].attempts.iter().any(tried) {
                    true => State::Error,
                    false => State::NotReady,
                }
            }
        };
        match state {
            State::Done => done += 1,
            State::Error => failed += 1,
            State::Futile => futile += 1,
            State::NotReady | State::Ready => unready += 1,
        }
    }
    let table = progress::Table {
        t,
        dag_status: run.dag_status,
        counts: [done, 0, 0, 0, 0, unready, failed, futile],
    };
    status_table(&table, drawn.len(), log);
    log.line(t, &format!("Wrote metrics file {}.metrics.", inst.file));
    exit_line(t, run.exit, log);
}

/// `print_status`'s table: the DAG's status and its `total` nodes per
/// phase.
fn status_table(table: &progress::Table, total: usize, log: &mut Log) {
    const NAMES: [&str; 7] = [
        "DAG_STATUS_OK",
        "DAG_STATUS_ERROR",
        "DAG_STATUS_NODE_FAILED",
        "DAG_STATUS_ABORT",
        "DAG_STATUS_RM",
        "DAG_STATUS_CYCLE",
        "DAG_STATUS_HALTED",
    ];
    let (t, s) = (table.t, table.dag_status);
    let name = NAMES.get(usize::from(s)).unwrap_or(&"DAG_STATUS_ERROR");
    log.line(t, &format!("DAG status: {s} ({name})"));
    log.line(t, &format!("Of {total} nodes total:"));
    log.line(
        t,
        " Done     Pre   Queued    Post   Ready   Un-Ready   Failed   Futile",
    );
    log.line(
        t,
        "  ===     ===      ===     ===     ===        ===      ===      ===",
    );
    let [done, pre, queued, post, ready, unready, failed, futile] = table.counts;
    let row = format!(
        "{done:5}   {pre:5}    {queued:5}   {post:5}   {ready:5}      {unready:5}    {failed:5}    {futile:5}"
    );
    log.line(t, &row);
    log.line(t, "0 job proc(s) currently held");
}

/// The lines of `inst`'s nodes' events, `(run, time, order, line)`, in
/// the order DAGMan logs them.
fn node_lines(cx: &Ctx, inst: &Instance, epoch: SystemTime) -> Vec<(usize, f64, usize, String)> {
    let mut lines = Vec::new();
    let mut fake = 0;
    let submit_tries = cx.dag.info.submit_tries();
    for &j in &inst.nodes {
        let name = cx.dag.local(inst, j);
        let node = cx.dag.node_info.get(cx.dag.workflow.jobs[j].name.as_str());
        let noop = node.is_some_and(|n| n.noop) && !cx.dag.subdag_of.contains_key(&j);
        let mut events = node_events(cx, j);
        if noop {
            events = with_noop_jobs(cx, j, events, &mut fake);
        }
        let retry_max = node.map_or(0, |n| n.retry);
        let pre_skip = node.and_then(|n| n.pre_skip);
        let submit = match cx.dag.subdag_of.get(&j) {
            Some(&k) => {
                let file = cx.dag.info.subdags[k].file.file_name();
                SubmitFrom::SubDag(file.map_or(String::new(), |f| f.to_string_lossy().into()))
            }
            None if node.is_some_and(|n| n.submit_description.is_some()) => SubmitFrom::Inline,
            None => SubmitFrom::File(node.map_or("", |n| n.submit.as_str())),
        };
        let mut at = 0;
        while at < events.len() {
            let (t, k, start, _) = events[at];
            let r = (inst.runs.iter())
                .rposition(|r| r.start <= start)
                .unwrap_or(0);
            let when = stamp(seconds(epoch, t));
            let event = &events[at].3;
            for msg in words(event, name, pre_skip, &submit, &when, noop, submit_tries) {
                lines.push((r, t, lines.len(), msg));
            }
            at += 1;
            // The attempt over, the next is a retry.
            let next = events.get(at).map(|e| e.1);
            if next.is_some_and(|n| n > k) && k < retry_max as usize {
                let msg = format!("Retrying node {name} (retry #{} of {retry_max})...", k + 1);
                lines.push((r, t, lines.len(), msg));
            }
        }
    }
    lines.sort_by(|a, b| {
        (a.0.cmp(&b.0))
            .then(a.1.total_cmp(&b.1))
            .then(a.2.cmp(&b.2))
    });
    lines
}

/// A NOOP node's events with the job DAGMan fakes for it (`Node::
/// NOOP_NODE_PROCID`: its submit and termination written to the node log
/// as it is submitted, with a made-up id): each attempt whose PRE script
/// went well has one, before its POST script.
fn with_noop_jobs(cx: &Ctx, j: JobId, events: NodeEvents, fake: &mut u32) -> NodeEvents {
    let mut out = NodeEvents::new();
    let attempts = &cx.run.records.jobs[j].attempts;
    let mut events = events.into_iter().peekable();
    for (k, a) in attempts.iter().enumerate() {
        let mut mine: NodeEvents = Vec::new();
        while let Some(e) = events.next_if(|e| e.1 == k) {
            mine.push(e);
        }
        let pre_failed = (mine.iter()).any(|e| matches!(e.3, NodeEvent::PreEnded(st) if st != 0));
        let post = mine
            .iter()
            .position(|e| matches!(e.3, NodeEvent::PostStarted(_)));
        let ran = a.outcome == Outcome::Ended || post.is_some();
        if !pre_failed && ran {
            let at = post.unwrap_or(mine.len());
            let t = post.map(|p| mine[p].0).or(a.ended).unwrap_or(a.prescript);
            *fake += 1;
            let id = format!("0.2147483647.{fake}");
            let job = [
                (t, k, a.prescript, NodeEvent::Submitted(id.clone())),
                (t, k, a.prescript, NodeEvent::Terminated(id, 0)),
            ];
            mine.splice(at..at, job);
        }
        out.extend(mine);
    }
    out.extend(events);
    out
}

/// Where a node's job is submitted from.
enum SubmitFrom<'a> {
    File(&'a str),
    Inline,
    /// A sub-DAG's DAGMan (its `.dag`'s name), from its `.condor.sub`.
    SubDag(String),
}

/// `event` of node `name` at `when` (DAGMan's time format) in DAGMan's
/// log's words.
fn words(
    event: &NodeEvent,
    name: &str,
    pre_skip: Option<i32>,
    submit: &SubmitFrom,
    when: &str,
    noop: bool,
    submit_tries: SubmitTries,
) -> Vec<String> {
    let proc = |id: &str| match id {
        "-" => "-1.0.0".to_string(),
        id if id.matches('.').count() == 1 => format!("{id}.0"),
        id => id.to_string(),
    };
    let ev = |kind: &str, id: &str| {
        format!(
            "Event: {kind} for HTCondor Node {name} ({}) {{{when}}}",
            proc(id)
        )
    };
    match event {
        NodeEvent::PreStarted => vec![format!("Running PRE script of Node {name}...")],
        NodeEvent::PreEnded(0) => {
            vec![format!("PRE Script of node {name} completed successfully.")]
        }
        NodeEvent::PreEnded(st) => {
            let mut v = vec![format!("PRE Script of Node {name} failed with status {st}")];
            if pre_skip == Some(*st) {
                v.push(format!(
                    "PRE_SKIP return value {st} indicates we are done (successfully) with node {name}"
                ));
            }
            v
        }
        NodeEvent::Submitted(id) => {
            let mut v = Vec::new();
            if let SubmitFrom::SubDag(file) = submit {
                v.push(format!(
                    "Recursive submit command: <condor_submit_dag -no_submit -update_submit {file}>"
                ));
            }
            v.push(format!("Submitting HTCondor Node {name} job(s)..."));
            if !noop {
                v.push(match submit {
                    SubmitFrom::File(f) => {
                        format!("Submitting node {name} from file {f} using direct job submission")
                    }
                    SubmitFrom::Inline => format!(
                        "Submitting node {name} from inline description using direct job submission"
                    ),
                    SubmitFrom::SubDag(file) => format!(
                        "Submitting node {name} from file {file}.condor.sub using direct job submission"
                    ),
                });
                v.push(format!("\tassigned HTCondor ID ({})", proc(id)));
            }
            v.push(ev("ULOG_SUBMIT", id));
            v
        }
        NodeEvent::ProcSubmitted(id) => vec![ev("ULOG_SUBMIT", id)],
        NodeEvent::SubmitFailed { tries, in_row, why } => {
            // Why the last try failed, as DAGMan logs it before the event.
            let mut v: Vec<String> = why.iter().cloned().collect();
            v.push(format!(
                "Event: ULOG_SUBMIT_FAILURE for HTCondor Node {name} (-1.-1.-1) {{{when}}} Job submit failed"
            ));
            // (Staging that failed before a submission: no try counted.)
            let allowed = match submit_tries.direct {
                true => 0,
                false => submit_tries.max_attempts as usize,
            };
            if *tries == 0 {
                return v;
            }
            if *tries < allowed {
                let wait = 1u64 << (in_row - 1).min(62);
                let s = if wait == 1 { "" } else { "s" };
                v.push(format!(
                    "Job submit try {tries}/{allowed} failed, will try again in >= {wait} second{s}."
                ));
            } else {
                let s = if *tries == 1 { "y" } else { "ies" };
                v.push(format!("Node submit failed after {tries} tr{s}."));
                v.push(format!(
                    "Shortcutting node {name} retries because of submit failure(s)"
                ));
            }
            v
        }
        NodeEvent::Executing(id) => vec![ev("ULOG_EXECUTE", id)],
        NodeEvent::Terminated(id, exit) => {
            let result = match *exit {
                0 => "completed successfully.".to_string(),
                e if (-64..0).contains(&e) => format!("failed with signal {}.", -e),
                e => format!("failed with status {e}."),
            };
            vec![
                ev("ULOG_JOB_TERMINATED", id),
                format!("Node {name} job proc ({}) {result}", proc(id)),
            ]
        }
        NodeEvent::Aborted(id) => vec![ev("ULOG_JOB_ABORTED", id)],
        NodeEvent::ProcEnded(id, exit) => {
            let id = id.clone();
            let event = match *exit {
                Some(exit) => NodeEvent::Terminated(id, exit),
                None => NodeEvent::Aborted(id),
            };
            words(&event, name, pre_skip, submit, when, noop, submit_tries)
        }
        NodeEvent::ClusterEnded(_) => Vec::new(),
        NodeEvent::PostStarted(_) => vec![format!("Running POST script of Node {name}...")],
        NodeEvent::PostEnded(id, st) => {
            let mut v = vec![ev("ULOG_POST_SCRIPT_TERMINATED", id)];
            match st {
                0 => v.push(format!(
                    "POST Script of node {name} completed successfully."
                )),
                st => {
                    v.push(format!(
                        "POST Script of node {name} failed with status {st}"
                    ));
                    v.push(format!("POST for Node {name} returned {st}"));
                }
            }
            v
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_dagmans_debug_time_format() {
        // 2026-11-28T17:44:36Z
        assert_eq!(stamp(1_795_887_876), "11/28/26 17:44:36");
        assert_eq!(stamp(0), "01/01/70 00:00:00");
    }
}
