//! The grammar of one `.dag` file (its `INCLUDE`s read inline): nodes with
//! their settings, and the edges, splices, pins and connections by name,
//! for [`super::compose`] to flatten.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{DagmanInfo, NodeInfo, Script};
use crate::workflow::formats::FormatError;

/// Commands that only configure DAGMan's own output or the DAGMan job
/// itself: read, ignored.
const IGNORED: [&str; 4] = ["SET_JOB_ATTR", "PRE_SKIP", "ENV", "SAVE_POINT_FILE"];

/// Commands that change the graph or the DAGMan job beyond what gridbed
/// reads yet.
const UNSUPPORTED: [&str; 4] = ["SERVICE", "PROVISIONER", "SUBMIT-DESCRIPTION", "TOLERANCE"];

const KEYWORDS: [&str; 22] = [
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
    "INCLUDE",
    "SPLICE",
    "SUBDAG",
    "CONNECT",
    "PIN_IN",
    "PIN_OUT",
    "DOT",
    "NODE_STATUS_FILE",
    "JOBSTATE_LOG",
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

/// Where a command was written: the file and its line.
pub(super) type At = (PathBuf, usize);

/// `SPLICE name file [DIR dir]`.
pub(super) struct SpliceRef {
    pub name: String,
    pub file: String,
    pub dir: Option<String>,
    pub at: At,
}

/// One `.dag` file as written, its INCLUDEs inline.
pub(super) struct DagFile {
    /// Its nodes (JOB, FINAL, SUBDAG EXTERNAL) with their settings, and
    /// its MAXJOBS and CONFIG.
    pub info: DagmanInfo,
    /// `PARENT … CHILD …` by name: nodes or splices.
    pub edges: Vec<(At, String, String)>,
    pub splices: Vec<SpliceRef>,
    /// `CONNECT out-splice in-splice`.
    pub connects: Vec<(At, String, String)>,
    /// `PIN_IN node n` and `PIN_OUT node n`.
    pub pins_in: Vec<(At, String, usize)>,
    pub pins_out: Vec<(At, String, usize)>,
    pub warnings: Vec<String>,
}

/// INCLUDEs nested deeper than this are a cycle.
const MAX_DEPTH: usize = 32;

/// Reads the `.dag` at `path` (its text `text`) and its INCLUDEs.
pub(super) fn read(path: &Path, text: &str) -> Result<DagFile, FormatError> {
    let mut p = Parser {
        file: DagFile {
            info: DagmanInfo::default(),
            edges: Vec::new(),
            splices: Vec::new(),
            connects: Vec::new(),
            pins_in: Vec::new(),
            pins_out: Vec::new(),
            warnings: Vec::new(),
        },
        index: HashMap::new(),
        node_cmds: Vec::new(),
    };
    p.text(path, text, 0)?;
    for (target, cmd) in &p.node_cmds {
        match *target {
            Target::Node(i) => cmd.apply(&mut p.file.info.nodes[i]),
            Target::All => {
                for n in p.file.info.nodes.iter_mut().filter(|n| !n.is_final) {
                    cmd.apply(n);
                }
            }
        }
    }
    Ok(p.file)
}

struct Parser {
    file: DagFile,
    index: HashMap<String, usize>,
    node_cmds: Vec<(Target, NodeCmd)>,
}

/// Logical lines: a trailing `\` continues on the next physical line.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
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
    logical.extend(pending);
    logical
}

impl Parser {
    fn text(&mut self, path: &Path, text: &str, depth: usize) -> Result<(), FormatError> {
        for (line, t) in logical_lines(text) {
            self.line(path, line, t.trim(), depth)?;
        }
        Ok(())
    }

    fn line(&mut self, path: &Path, line: usize, t: &str, depth: usize) -> Result<(), FormatError> {
        let at = |m: String| FormatError {
            file: path.to_path_buf(),
            message: format!("line {line}: {m}"),
        };
        if t.is_empty() || t.starts_with('#') {
            return Ok(());
        }
        let w = words(t).map_err(at)?;
        let kw = w[0].to_ascii_uppercase();
        let arg = |k: usize, what: &str| {
            w.get(k)
                .cloned()
                .ok_or_else(|| at(format!("{kw}: expected {what}")))
        };
        let here = || (path.to_path_buf(), line);
        let info = &mut self.file.info;
        let index = &self.index;
        // A node a command names (defined above this line), or ALL_NODES;
        // the FINAL node only where DAGMan allows it.
        let target = |k: usize, final_ok: bool, info: &DagmanInfo| -> Result<Target, FormatError> {
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
            "JOB" | "FINAL" | "SUBDAG" => {
                let (k0, is_sub) = if kw == "SUBDAG" {
                    let ext = arg(1, "EXTERNAL")?;
                    if !ext.eq_ignore_ascii_case("EXTERNAL") {
                        return Err(at(format!(
                            "SUBDAG: `{ext}`; expected SUBDAG EXTERNAL name file"
                        )));
                    }
                    (2, true)
                } else {
                    (1, false)
                };
                let name = arg(k0, "a node name and a submit file")?;
                let submit = arg(k0 + 1, "a file after the node name")?;
                if self.index.contains_key(&name) {
                    return Err(at(format!("{kw}: a second node named `{name}`")));
                }
                if name.eq_ignore_ascii_case("ALL_NODES") || name.contains('+') {
                    return Err(at(format!(
                        "{kw}: `{name}` cannot name a node (ALL_NODES is a keyword, `+` joins splice names)"
                    )));
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
                    is_final,
                    ..Default::default()
                };
                if is_sub {
                    n.subdag = Some(submit);
                } else {
                    n.submit = submit;
                }
                let mut k = k0 + 2;
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
                self.index.insert(name, info.nodes.len());
                info.nodes.push(n);
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
                // Nodes and splices may be declared after the edge.
                for p in ps {
                    for c in cs {
                        self.file.edges.push((here(), p.clone(), c.clone()));
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
                let target = target(k + 1, true, info)?;
                let script = Script {
                    executable: arg(k + 2, "an executable")?,
                    args: w[k + 3..].to_vec(),
                    defer,
                    debug,
                };
                match when.as_str() {
                    "PRE" | "POST" => self.node_cmds.push((
                        target,
                        NodeCmd::Script {
                            post: when == "POST",
                            script,
                        },
                    )),
                    "HOLD" => self.file.warnings.push(format!(
                        "{} line {line}: SCRIPT HOLD ignored (gridbed's jobs are never held)",
                        path.display()
                    )),
                    other => {
                        return Err(at(format!("SCRIPT: `{other}`; expected PRE, POST or HOLD")));
                    }
                }
            }
            "RETRY" => {
                let target = target(1, false, info)?;
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
                self.node_cmds.push((target, NodeCmd::Retry { n, unless }));
            }
            "VARS" => {
                let target = target(1, true, info)?;
                let edit = w.get(2).is_some_and(|x| {
                    x.eq_ignore_ascii_case("PREPEND") || x.eq_ignore_ascii_case("APPEND")
                });
                let rest = after_words(t, if edit { 3 } else { 2 });
                let pairs = vars_pairs(rest).map_err(|m| at(format!("VARS: {m}")))?;
                self.node_cmds.push((target, NodeCmd::Vars(pairs)));
            }
            "PRIORITY" => {
                let target = target(1, false, info)?;
                let p = arg(2, "a priority")?
                    .parse()
                    .map_err(|_| at("PRIORITY: expected an integer".into()))?;
                self.node_cmds.push((target, NodeCmd::Priority(p)));
            }
            "CATEGORY" => {
                let target = target(1, false, info)?;
                let c = arg(2, "a category name")?;
                self.node_cmds.push((target, NodeCmd::Category(c)));
            }
            "ABORT-DAG-ON" => {
                let target = target(1, false, info)?;
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
                self.node_cmds.push((target, NodeCmd::AbortOn(value, ret)));
            }
            "MAXJOBS" => {
                let cat = arg(1, "a category name")?;
                let n = arg(2, "a job limit")?
                    .parse()
                    .map_err(|_| at("MAXJOBS: expected a whole number".into()))?;
                info.max_jobs.insert(cat, n);
            }
            "DONE" => {
                let Target::Node(i) = target(1, false, info)? else {
                    return Err(at("DONE: expected a node name, not ALL_NODES".into()));
                };
                info.nodes[i].done = true;
            }
            "CONFIG" => info.config = Some(arg(1, "a configuration file")?),
            "DOT" | "NODE_STATUS_FILE" | "JOBSTATE_LOG" => {
                let file = arg(1, "a file name")?;
                let mut include = None;
                let mut k = 2;
                while let Some(opt) = w.get(k) {
                    let opt = opt.to_ascii_uppercase();
                    match (kw.as_str(), opt.as_str()) {
                        ("DOT", "UPDATE" | "DONT-UPDATE" | "OVERWRITE" | "DONT-OVERWRITE") => {}
                        ("DOT", "INCLUDE") => {
                            k += 1;
                            include = Some(arg(k, "a header file after INCLUDE")?);
                        }
                        ("NODE_STATUS_FILE", "ALWAYS-UPDATE") => {}
                        ("NODE_STATUS_FILE", n) if k == 2 && n.parse::<u64>().is_ok() => {}
                        _ => return Err(at(format!("{kw} {file}: `{opt}` is no option of {kw}"))),
                    }
                    k += 1;
                }
                let slot_taken = match kw.as_str() {
                    "DOT" => info.dot.replace((file, include)).is_some(),
                    "NODE_STATUS_FILE" => info.node_status_file.replace(file).is_some(),
                    _ => info.jobstate_log.replace(file).is_some(),
                };
                if slot_taken {
                    self.file.warnings.push(format!(
                        "{} line {line}: a second {kw}: this one is used",
                        path.display()
                    ));
                }
            }
            "REJECT" => {
                return Err(at(
                    "REJECT: this DAG file is marked rejected; DAGMan refuses to run it".into(),
                ));
            }
            "INCLUDE" => {
                let file = arg(1, "a file to include")?;
                if depth >= MAX_DEPTH {
                    return Err(at(format!(
                        "INCLUDE {file}: nested more than {MAX_DEPTH} deep (a file that includes itself?)"
                    )));
                }
                let inc = path.parent().unwrap_or(Path::new(".")).join(&file);
                let text = std::fs::read_to_string(&inc).map_err(|e| {
                    at(format!(
                        "INCLUDE {file}: cannot read {}: {e}",
                        inc.display()
                    ))
                })?;
                self.text(&inc, &text, depth + 1)?;
            }
            "SPLICE" => {
                let name = arg(1, "a splice name and a file")?;
                let file = arg(2, "a .dag file after the splice name")?;
                let dir = match w.get(3) {
                    None => None,
                    Some(d) if d.eq_ignore_ascii_case("DIR") => {
                        Some(arg(4, "a directory after DIR")?)
                    }
                    Some(d) => return Err(at(format!("SPLICE {name}: `{d}`; expected DIR dir"))),
                };
                if self.index.contains_key(&name)
                    || self.file.splices.iter().any(|s| s.name == name)
                {
                    return Err(at(format!(
                        "SPLICE: a second node or splice named `{name}`"
                    )));
                }
                self.file.splices.push(SpliceRef {
                    name,
                    file,
                    dir,
                    at: here(),
                });
            }
            "CONNECT" => {
                let out = arg(1, "an output splice and an input splice")?;
                let inp = arg(2, "an input splice after the output splice")?;
                self.file.connects.push((here(), out, inp));
            }
            "PIN_IN" | "PIN_OUT" => {
                let node = arg(1, "a node name and a pin number")?;
                let n: usize = arg(2, "a pin number")?
                    .parse()
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| at(format!("{kw}: expected a pin number ≥ 1")))?;
                let pins = if kw == "PIN_IN" {
                    &mut self.file.pins_in
                } else {
                    &mut self.file.pins_out
                };
                pins.push((here(), node, n));
            }
            k if IGNORED.contains(&k) => {
                self.file.warnings.push(format!(
                    "{} line {line}: {k} ignored (it only shapes DAGMan's own output)",
                    path.display()
                ));
            }
            k if UNSUPPORTED.contains(&k) => {
                return Err(at(format!("{k} is not supported")));
            }
            _ => {
                return Err(at(format!(
                    "unknown command `{}`; expected one of {}",
                    w[0],
                    KEYWORDS.join(", ")
                )));
            }
        }
        Ok(())
    }
}
