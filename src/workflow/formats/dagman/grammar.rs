//! The grammar of one `.dag` file (its `INCLUDE`s read inline): nodes with
//! their settings, and the edges, splices, pins and connections by name,
//! for [`super::compose`] to flatten.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{DagmanInfo, NodeInfo, Script};
use crate::workflow::formats::FormatError;

/// Every command of HTCondor's DAG language (`DAG::KEYWORD_MAP` of its
/// `dag_commands.cpp`), as its manual writes them; DAGMan reads `-` and `_`
/// in a keyword as one.
const KEYWORDS: [&str; 31] = [
    "JOB",
    "FINAL",
    "PROVISIONER",
    "SERVICE",
    "SUBDAG",
    "SPLICE",
    "INCLUDE",
    "SUBMIT-DESCRIPTION",
    "CATEGORY",
    "PARENT",
    "WEAK",
    "SCRIPT",
    "RETRY",
    "ABORT-DAG-ON",
    "VARS",
    "PRIORITY",
    "PRE_SKIP",
    "TOLERANCE",
    "DONE",
    "MAXJOBS",
    "CONFIG",
    "DOT",
    "NODE_STATUS_FILE",
    "JOBSTATE_LOG",
    "SAVE_POINT_FILE",
    "SET_JOB_ATTR",
    "ENV",
    "REJECT",
    "CONNECT",
    "PIN_IN",
    "PIN_OUT",
];

/// A keyword as DAGMan compares it: upper case, `-` read as `_`.
fn key(word: &str) -> String {
    word.to_ascii_uppercase().replace('-', "_")
}

/// Whether DAGMan reads a command on its first pass over a file: the
/// commands that make nodes and splices, and those that only name DAGMan's
/// own files. Every other command is read on the second pass, so it may
/// name a node written below it (HTCondor's `DagProcessor::process`).
fn first_pass(key: &str) -> bool {
    matches!(
        key,
        "JOB"
            | "FINAL"
            | "SERVICE"
            | "PROVISIONER"
            | "SUBDAG"
            | "SPLICE"
            | "SUBMIT_DESCRIPTION"
            | "REJECT"
            | "DOT"
            | "NODE_STATUS_FILE"
            | "JOBSTATE_LOG"
    )
}

/// A node command's target: one node, or `ALL_NODES` (every node but the
/// FINAL one among the first `n`: those defined when the command is read,
/// so an INCLUDE below it adds nodes it does not touch, as in DAGMan).
#[derive(Clone)]
enum Target {
    Node(usize),
    All(usize),
    /// A node of one of this file's splices, by its name in this DAG
    /// (`splice+node`), which DAGMan finds once the splice is joined; with
    /// the command's place and keyword.
    Spliced(At, String, String),
}

/// A command that sets a property of nodes; applied in file order once
/// every node is known, so that the last one to set a property wins, as in
/// DAGMan.
pub(super) enum NodeCmd {
    Script { post: bool, script: Script },
    Retry { n: u32, unless: Option<i32> },
    Vars(Vec<(String, String)>),
    Priority(i32),
    Category(String),
    AbortOn(i32, Option<i32>),
    PreSkip(i32),
    Tolerance(super::Tolerance),
    Done,
}

impl NodeCmd {
    /// Sets its property of `n`.
    pub(super) fn apply(&self, n: &mut NodeInfo) {
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
            NodeCmd::PreSkip(v) => n.pre_skip = Some(*v),
            NodeCmd::Tolerance(t) => n.tolerance = Some(*t),
            NodeCmd::Category(c) => n.category = Some(c.clone()),
            NodeCmd::AbortOn(v, r) => {
                n.abort_on.retain(|(x, _)| x != v);
                n.abort_on.push((*v, *r));
            }
            NodeCmd::Done => n.done = true,
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

/// The `key=value` pairs of an environment in HTCondor's V1 form
/// (`;`-separated) or V2 form (double-quoted, space-separated, a value with
/// spaces in single quotes, `''` a quote inside).
fn env_pairs(text: &str) -> Result<Vec<(String, String)>, String> {
    let items: Vec<String> = match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(v2) => {
            let (mut items, mut cur, mut quoted) = (Vec::new(), String::new(), false);
            let mut chars = v2.chars().peekable();
            while let Some(c) = chars.next() {
                match c {
                    '\'' if quoted && chars.peek() == Some(&'\'') => {
                        chars.next();
                        cur.push('\'');
                    }
                    '\'' => quoted = !quoted,
                    c if c.is_whitespace() && !quoted => {
                        if !cur.is_empty() {
                            items.push(std::mem::take(&mut cur));
                        }
                    }
                    c => cur.push(c),
                }
            }
            if quoted {
                return Err("an unclosed `'`".into());
            }
            items.extend((!cur.is_empty()).then_some(cur));
            items
        }
        None => text
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
    };
    items
        .iter()
        .map(|item| match item.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
            _ => Err(format!("`{item}` is no key=value pair")),
        })
        .collect()
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
        .is_some_and(|w| KEYWORDS.iter().any(|k| key(k) == key(w)))
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
    /// `PARENT … CHILD …` by name (nodes or splices), and whether the edge
    /// is weak (`WEAK PARENT …`).
    pub edges: Vec<(At, String, String, bool)>,
    pub splices: Vec<SpliceRef>,
    /// `CONNECT out-splice in-splice`.
    pub connects: Vec<(At, String, String)>,
    /// `PIN_IN node n` and `PIN_OUT node n`.
    pub pins_in: Vec<(At, String, usize)>,
    pub pins_out: Vec<(At, String, usize)>,
    pub warnings: Vec<String>,
    /// `SUBMIT-DESCRIPTION name { … }`: named inline descriptions (the last
    /// of a name in the file wins, as in DAGMan); nodes find them by their
    /// submit name once the splices are joined ([`super::compose`]).
    pub descriptions: HashMap<String, String>,
    /// Commands naming a spliced node (`splice+node`, as VARS may:
    /// HTCondor's gittrac #1780), with their place and keyword, in file
    /// order: applied once the splice is joined ([`super::compose`]).
    pub spliced_cmds: Vec<(At, String, String, NodeCmd)>,
}

/// INCLUDEs nested deeper than this are a cycle.
const MAX_DEPTH: usize = 32;

/// Whether a physical line is no command: blank, or a comment (`#`, and
/// `//` as DAGMan's parser also takes).
fn skipped(line: &str) -> bool {
    line.is_empty() || line.starts_with('#') || line.starts_with("//")
}

/// The token that closes an inline description a command's word opens:
/// `{` … `}`, or `@=TOKEN` … `@TOKEN` (DAGMan's `get_inline_desc_end`);
/// `Some("")` for a bare `@=`.
fn inline_end(word: &str) -> Option<String> {
    if word.starts_with('{') {
        Some("}".into())
    } else {
        word.strip_prefix("@=").map(|t| {
            if t.is_empty() {
                String::new()
            } else {
                format!("@{t}")
            }
        })
    }
}

/// The commands of a file as DAGMan reads it: blank and comment lines left
/// out, a trailing `\` continuing on the next line, and after a node or
/// `SUBMIT-DESCRIPTION` that opens an inline description, its raw lines up
/// to the closing token (what follows that token continues the command).
fn commands<'a>(path: &'a Path, text: &str) -> Result<Vec<Line<'a>>, FormatError> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().map(|(n, l)| (n + 1, l.trim()));
    while let Some((no, first)) = lines.next() {
        if skipped(first) {
            continue;
        }
        let mut logical = String::new();
        let mut cur = first;
        loop {
            match cur.strip_suffix('\\') {
                Some(head) => {
                    logical.push_str(head);
                    logical.push(' ');
                }
                None => {
                    logical.push_str(cur);
                    break;
                }
            }
            match lines.by_ref().find(|(_, l)| !skipped(l)) {
                Some((_, next)) => cur = next,
                None => break,
            }
        }
        let mut line = Line::new(path, no, logical.trim())?;
        let opens = match line.key.as_str() {
            "JOB" | "FINAL" | "SERVICE" | "PROVISIONER" | "SUBMIT_DESCRIPTION" => {
                line.w.get(2).and_then(|w| inline_end(w))
            }
            _ => None,
        };
        if let Some(end) = opens {
            if end.is_empty() {
                return Err(line.err(format!(
                    "{}: no closing token after `@=` (expected @=TOKEN)",
                    line.kw
                )));
            }
            let mut desc = String::new();
            let mut tail = None;
            for (_, raw) in lines.by_ref().filter(|(_, l)| !skipped(l)) {
                if raw == end || raw.starts_with(&format!("{end} ")) {
                    tail = Some(raw[end.len()..].to_string());
                    break;
                }
                desc.push_str(raw);
                desc.push('\n');
            }
            let Some(tail) = tail else {
                return Err(line.err(format!(
                    "{}: the inline description has no closing `{end}`",
                    line.kw
                )));
            };
            line.w.truncate(2);
            line.w.extend(words(&tail).map_err(|m| line.err(m))?);
            line.desc = Some(desc);
        }
        out.push(line);
    }
    Ok(out)
}

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
            descriptions: HashMap::new(),
            spliced_cmds: Vec::new(),
        },
        index: HashMap::new(),
        node_cmds: Vec::new(),
    };
    p.text(path, text, 0)?;
    for (target, cmd) in std::mem::take(&mut p.node_cmds) {
        match target {
            Target::Node(i) => cmd.apply(&mut p.file.info.nodes[i]),
            Target::Spliced(at, kw, name) => p.file.spliced_cmds.push((at, kw, name, cmd)),
            Target::All(n) => {
                // DAGMan's ALL_NODES reaches neither FINAL nor SERVICE nodes.
                let all = p.file.info.nodes[..n].iter_mut();
                for node in all.filter(|n| !n.is_final && !n.is_service) {
                    cmd.apply(node);
                }
            }
        }
    }
    Ok(p.file)
}

/// One command of a `.dag` file: where it is, its words, its keyword.
struct Line<'a> {
    path: &'a Path,
    no: usize,
    text: String,
    w: Vec<String>,
    /// The keyword as written, in upper case (for messages).
    kw: String,
    /// The keyword as DAGMan matches it ([`key`]).
    key: String,
    /// The inline submit description the command opens, as written.
    desc: Option<String>,
}

impl<'a> Line<'a> {
    /// Splits line `no` of `path`; refuses a keyword DAGMan does not know
    /// and one gridbed does not read.
    fn new(path: &'a Path, no: usize, text: &str) -> Result<Line<'a>, FormatError> {
        let mut line = Line {
            path,
            no,
            text: text.to_string(),
            w: Vec::new(),
            kw: String::new(),
            key: String::new(),
            desc: None,
        };
        line.w = words(text).map_err(|m| line.err(m))?;
        line.kw = line.w[0].to_ascii_uppercase();
        line.key = key(&line.w[0]);
        if !KEYWORDS.iter().any(|k| key(k) == line.key) {
            return Err(line.err(format!(
                "unknown command `{}`; expected one of {}",
                line.w[0],
                KEYWORDS.join(", ")
            )));
        }
        Ok(line)
    }

    /// An error at this line.
    fn err(&self, m: impl Into<String>) -> FormatError {
        FormatError {
            file: self.path.to_path_buf(),
            message: format!("line {}: {}", self.no, m.into()),
        }
    }

    /// A warning at this line.
    fn warning(&self, m: &str) -> String {
        format!("{} line {}: {m}", self.path.display(), self.no)
    }

    /// Where this line is.
    fn at(&self) -> At {
        (self.path.to_path_buf(), self.no)
    }

    /// Word `k`, or an error saying `what` was expected there.
    fn arg(&self, k: usize, what: &str) -> Result<String, FormatError> {
        self.w
            .get(k)
            .cloned()
            .ok_or_else(|| self.err(format!("{}: expected {what}", self.kw)))
    }

    /// Word `k` read as a number; `bad` is the error if it is none.
    fn number<T: std::str::FromStr>(
        &self,
        k: usize,
        what: &str,
        bad: &str,
    ) -> Result<T, FormatError> {
        self.arg(k, what)?.parse().map_err(|_| self.err(bad))
    }
}

struct Parser {
    file: DagFile,
    index: HashMap<String, usize>,
    node_cmds: Vec<(Target, NodeCmd)>,
}

impl Parser {
    /// Reads one file in DAGMan's two passes: first the commands that make
    /// nodes, then the rest in file order (an INCLUDE's file read whole, both
    /// passes, where the INCLUDE stands).
    fn text(&mut self, path: &Path, text: &str, depth: usize) -> Result<(), FormatError> {
        let lines = commands(path, text)?;
        for l in lines.iter().filter(|l| first_pass(&l.key)) {
            match l.key.as_str() {
                "JOB" | "FINAL" | "SERVICE" | "PROVISIONER" | "SUBDAG" => self.node(l)?,
                "SPLICE" => self.splice(l)?,
                "SUBMIT_DESCRIPTION" => {
                    let name = l.arg(1, "a name and an inline description")?;
                    let desc = l.desc.clone().ok_or_else(|| {
                        l.err(format!(
                            "{} {name}: expected an inline description (`{{` … `}}` or @=TOKEN … @TOKEN)",
                            l.kw
                        ))
                    })?;
                    if let Some(extra) = l.w.get(2) {
                        return Err(
                            l.err(format!("{} {name}: `{extra}` after the description", l.kw))
                        );
                    }
                    self.file.descriptions.insert(name, desc);
                }
                "REJECT" => {
                    return Err(l.err("REJECT: DAG marked as rejected; DAGMan refuses to run it"));
                }
                _ => self.output_file(l)?,
            }
        }
        for l in lines.iter().filter(|l| !first_pass(&l.key)) {
            match l.key.as_str() {
                "PARENT" => self.parent(l, 1)?,
                "WEAK" => {
                    if !l.w.get(1).is_some_and(|x| x.eq_ignore_ascii_case("PARENT")) {
                        return Err(l.err("WEAK dependency missing PARENT keyword"));
                    }
                    self.parent(l, 2)?
                }
                "SCRIPT" => self.script(l)?,
                "RETRY" => self.retry(l)?,
                "VARS" => self.vars(l)?,
                "PRIORITY" => {
                    let target = self.target(l, 1, false)?;
                    self.no_service(l, &target)?;
                    let p = l.number(2, "a priority", "PRIORITY: expected an integer")?;
                    self.node_cmds.push((target, NodeCmd::Priority(p)));
                }
                "CATEGORY" => {
                    let target = self.target(l, 1, false)?;
                    self.no_service(l, &target)?;
                    let c = l.arg(2, "a category name")?;
                    self.node_cmds.push((target, NodeCmd::Category(c)));
                }
                "ABORT_DAG_ON" => self.abort_dag_on(l)?,
                "PRE_SKIP" => {
                    // HTCondor's `Node::AddPreSkip` takes 0 to 255.
                    let target = self.target(l, 1, true)?;
                    let bad = format!("{}: expected an exit code from 0 to 255", l.kw);
                    let v: i32 = l.number(2, "an exit code", &bad)?;
                    if !(0..=255).contains(&v) {
                        return Err(l.err(bad));
                    }
                    self.node_cmds.push((target, NodeCmd::PreSkip(v)));
                }
                "MAXJOBS" => {
                    let cat = l.arg(1, "a category name")?;
                    let n = l.number(2, "a job limit", "MAXJOBS: expected a whole number")?;
                    self.file.info.max_jobs.insert(cat, n);
                }
                "DONE" => match self.target(l, 1, false)? {
                    Target::Node(i) => self.file.info.nodes[i].done = true,
                    Target::All(_) => {
                        return Err(l.err("DONE: expected a node name, not ALL_NODES"));
                    }
                    spliced => self.node_cmds.push((spliced, NodeCmd::Done)),
                },
                "CONFIG" => self.file.info.config = Some(l.arg(1, "a configuration file")?),
                "SET_JOB_ATTR" => {
                    let line = after_words(&l.text, 1).trim();
                    if !line.contains('=') {
                        return Err(l.err(format!("{}: expected key = value", l.kw)));
                    }
                    self.file.info.job_attrs.push(line.to_string());
                }
                "ENV" => self.env(l)?,
                "INCLUDE" => self.include(l, depth)?,
                "CONNECT" => {
                    let out = l.arg(1, "an output splice and an input splice")?;
                    let inp = l.arg(2, "an input splice after the output splice")?;
                    self.file.connects.push((l.at(), out, inp));
                }
                "PIN_IN" | "PIN_OUT" => self.pin(l)?,
                "SAVE_POINT_FILE" => self.save_point(l)?,
                "TOLERANCE" => self.tolerance(l)?,
                _ => return Err(l.err(format!("{} is not supported", l.kw))),
            }
        }
        Ok(())
    }

    /// The node a command names in word `k`, or ALL_NODES; the FINAL node
    /// only where DAGMan allows it.
    fn target(&self, l: &Line, k: usize, final_ok: bool) -> Result<Target, FormatError> {
        let name = l.arg(k, "a node name (or ALL_NODES)")?;
        if name.eq_ignore_ascii_case("ALL_NODES") {
            return Ok(Target::All(self.file.info.nodes.len()));
        }
        let kw = &l.kw;
        let spliced = (name.split_once('+'))
            .is_some_and(|(s, _)| self.file.splices.iter().any(|x| x.name == s));
        if spliced && !self.index.contains_key(&name) {
            return Ok(Target::Spliced(l.at(), kw.clone(), name));
        }
        let i = self.index.get(&name).copied().ok_or_else(|| {
            l.err(format!(
                "{kw}: unknown node `{name}` (no JOB, FINAL or SUBDAG of this DAG has that name)"
            ))
        })?;
        if self.file.info.nodes[i].is_final && !final_ok {
            return Err(l.err(format!(
                "{kw}: `{name}` is the FINAL node, which {kw} may not name"
            )));
        }
        Ok(Target::Node(i))
    }

    /// HTCondor refuses RETRY, PRIORITY and CATEGORY of a SERVICE node
    /// (`parse.cpp`: "SERVICE node … cannot have … specification").
    fn no_service(&self, l: &Line, target: &Target) -> Result<(), FormatError> {
        match *target {
            Target::Node(i) if self.file.info.nodes[i].is_service => Err(l.err(format!(
                "{}: `{}` is a SERVICE node, which cannot have a {} specification",
                l.kw, self.file.info.nodes[i].name, l.kw
            ))),
            _ => Ok(()),
        }
    }

    /// `TOLERANCE node|ALL_NODES n[%] [FAIL-FAST|WAIT]` (HTCondor's
    /// `DagParser::ParseTolerance`): how many of the node's jobs may fail
    /// (a number, or a percentage of them) before its job list fails.
    fn tolerance(&mut self, l: &Line) -> Result<(), FormatError> {
        let kw = &l.kw;
        let target = self.target(l, 1, true)?;
        let mut k = 2;
        let mut value = l.arg(k, "a failure tolerance value")?;
        let mut percent = false;
        if let Some(v) = value.strip_suffix('%') {
            if v.is_empty() {
                return Err(l.err(format!(
                    "{kw}: Empty percentage specified for failure tolerance"
                )));
            }
            (value, percent) = (v.to_string(), true);
        } else if l.w.get(k + 1).is_some_and(|w| w == "%") {
            (percent, k) = (true, k + 1);
        }
        let value: u32 = value.parse().map_err(|_| {
            l.err(format!(
                "{kw}: Invalid tolerance value '{value}' (expected a whole number ≥ 0, or a percentage)"
            ))
        })?;
        k += 1;
        if l.w
            .get(k)
            .is_some_and(|w| key(w) == "FAIL_FAST" || key(w) == "WAIT")
        {
            k += 1;
        }
        if let Some(extra) = l.w.get(k) {
            return Err(l.err(format!("{kw}: Unexpected token '{extra}'")));
        }
        let t = super::Tolerance { value, percent };
        self.node_cmds.push((target, NodeCmd::Tolerance(t)));
        Ok(())
    }

    /// `SAVE_POINT_FILE node [file]` (HTCondor's `parse_save_point_file`
    /// and `ProcessSaveFile`): the node writes a save file as it starts;
    /// without a file name it is `node-dagfile.save`, the DAG file being the
    /// one the line is in. Only a JOB (or SUBDAG) node may have one.
    fn save_point(&mut self, l: &Line) -> Result<(), FormatError> {
        let kw = &l.kw;
        let i = match self.target(l, 1, false)? {
            Target::Node(i) => i,
            Target::All(_) => return Err(l.err(format!("{kw} does not allow ALL_NODES option"))),
            Target::Spliced(..) => {
                return Err(l.err(format!(
                    "{kw}: a spliced node's save point is set in its splice's file"
                )));
            }
        };
        if let Some(extra) = l.w.get(3) {
            return Err(l.err(format!(
                "Extra token ({extra}) found in {kw} declaration (expected {kw} node [file])"
            )));
        }
        let name = &l.w[1];
        let n = &mut self.file.info.nodes[i];
        if n.is_service || n.is_provisioner {
            return Err(l.err(format!(
                "{kw} can not be declared with neither SERVICE nor PROVISIONER nodes (`{name}` is one)"
            )));
        }
        let file = l.w.get(2).cloned().unwrap_or_else(|| {
            let dag = l.path.file_name().unwrap_or_default().to_string_lossy();
            format!("{name}-{dag}.save")
        });
        n.save_point = Some(file);
        Ok(())
    }

    /// `JOB name file [DIR dir] [NOOP] [DONE]`, `FINAL …`, `SERVICE …`,
    /// `PROVISIONER …` and `SUBDAG EXTERNAL name file …`.
    fn node(&mut self, l: &Line) -> Result<(), FormatError> {
        let kw = &l.kw;
        let is_sub = kw == "SUBDAG";
        if is_sub {
            let ext = l.arg(1, "EXTERNAL")?;
            if !ext.eq_ignore_ascii_case("EXTERNAL") {
                return Err(l.err(format!(
                    "SUBDAG: `{ext}`; expected SUBDAG EXTERNAL name file"
                )));
            }
        }
        let k0 = if is_sub { 2 } else { 1 };
        let name = l.arg(k0, "a node name and a submit file")?;
        let submit = match l.desc {
            Some(_) => String::new(),
            None => l.arg(k0 + 1, "a file after the node name")?,
        };
        if self.index.contains_key(&name) {
            return Err(l.err(format!("{kw}: a second node named `{name}`")));
        }
        if name.eq_ignore_ascii_case("ALL_NODES") {
            return Err(l.err(format!("{kw}: ALL_NODES is a keyword, not a node name")));
        }
        if name.contains('+') {
            // DAGMan's words (its old parser's), which its tests look for.
            return Err(l.err(format!(
                "{kw}: node name `{name}` contains one or more illegal characters (`+` joins splice names)"
            )));
        }
        let is_final = kw == "FINAL";
        if is_final && let Some(f) = self.file.info.nodes.iter().find(|n| n.is_final) {
            return Err(l.err(format!(
                "FINAL: a second FINAL node (`{}` is one already); a DAG has at most one",
                f.name
            )));
        }
        let is_provisioner = kw == "PROVISIONER";
        if is_provisioner && let Some(p) = self.file.info.nodes.iter().find(|n| n.is_provisioner) {
            return Err(l.err(format!(
                "PROVISIONER: a second PROVISIONER node (`{}` is one already); a DAG has at most one",
                p.name
            )));
        }
        let mut n = NodeInfo {
            name: name.clone(),
            is_final,
            is_service: kw == "SERVICE",
            is_provisioner,
            ..Default::default()
        };
        if is_sub {
            n.subdag = Some(submit);
        } else if let Some(desc) = &l.desc {
            n.submit = format!("{name}-InlineDesc");
            n.submit_description = Some(desc.clone());
        } else {
            n.submit = submit;
        }
        // An inline description's closing line carries on the options.
        let mut k = if l.desc.is_some() { k0 + 1 } else { k0 + 2 };
        while k < l.w.len() {
            match l.w[k].to_ascii_uppercase().as_str() {
                "NOOP" => n.noop = true,
                "DONE" if n.is_service => {
                    let m = format!("SERVICE node {name} cannot be set to DONE");
                    self.file.warnings.push(l.warning(&m));
                }
                "DONE" if !is_final => n.done = true,
                "DIR" => {
                    k += 1;
                    n.dir = Some(l.arg(k, "a directory after DIR")?);
                }
                other => {
                    let expected = if is_final {
                        "DIR dir or NOOP"
                    } else {
                        "DIR dir, NOOP or DONE"
                    };
                    return Err(l.err(format!("{kw} {name}: `{other}`; expected {expected}")));
                }
            }
            k += 1;
        }
        self.index.insert(name, self.file.info.nodes.len());
        self.file.info.nodes.push(n);
        Ok(())
    }

    /// `SPLICE name file [DIR dir]`.
    fn splice(&mut self, l: &Line) -> Result<(), FormatError> {
        let name = l.arg(1, "a splice name and a file")?;
        let file = l.arg(2, "a .dag file after the splice name")?;
        let dir = match l.w.get(3) {
            None => None,
            Some(d) if d.eq_ignore_ascii_case("DIR") => Some(l.arg(4, "a directory after DIR")?),
            Some(d) => return Err(l.err(format!("SPLICE {name}: `{d}`; expected DIR dir"))),
        };
        if self.index.contains_key(&name) || self.file.splices.iter().any(|s| s.name == name) {
            return Err(l.err(format!("SPLICE: a second node or splice named `{name}`")));
        }
        self.file.splices.push(SpliceRef {
            name,
            file,
            dir,
            at: l.at(),
        });
        Ok(())
    }

    /// `DOT file [options]`, `NODE_STATUS_FILE file [seconds] [ALWAYS-UPDATE]`
    /// and `JOBSTATE_LOG file`: the files DAGMan writes about its run.
    fn output_file(&mut self, l: &Line) -> Result<(), FormatError> {
        let kw = &l.kw;
        let file = l.arg(1, "a file name")?;
        let mut dot = super::DotFile {
            file: file.clone(),
            update: false,
            overwrite: true,
            include: None,
        };
        let mut k = 2;
        while let Some(opt) = l.w.get(k) {
            let opt = opt.to_ascii_uppercase();
            match (l.key.as_str(), opt.as_str()) {
                ("DOT", "UPDATE" | "DONT-UPDATE") => dot.update = opt == "UPDATE",
                ("DOT", "OVERWRITE" | "DONT-OVERWRITE") => dot.overwrite = opt == "OVERWRITE",
                ("DOT", "INCLUDE") => {
                    k += 1;
                    dot.include = Some(l.arg(k, "a header file after INCLUDE")?);
                }
                ("NODE_STATUS_FILE", "ALWAYS-UPDATE") => {}
                ("NODE_STATUS_FILE", n) if k == 2 && n.parse::<u64>().is_ok() => {}
                _ => return Err(l.err(format!("{kw} {file}: `{opt}` is no option of {kw}"))),
            }
            k += 1;
        }
        let info = &mut self.file.info;
        let slot_taken = match l.key.as_str() {
            "DOT" => info.dot.replace(dot).is_some(),
            "NODE_STATUS_FILE" => info.node_status_file.replace(file).is_some(),
            _ => info.jobstate_log.replace(file).is_some(),
        };
        if slot_taken {
            let m = format!("a second {kw}: this one is used");
            self.file.warnings.push(l.warning(&m));
        }
        Ok(())
    }

    /// `PARENT p… CHILD c…`: nodes or splices, which may be written below.
    /// `PARENT p… CHILD c…`, or `WEAK PARENT …` (its parents from word
    /// `first` on): a weak child runs once its parent is over, even failed.
    fn parent(&mut self, l: &Line, first: usize) -> Result<(), FormatError> {
        let child_at =
            l.w.iter()
                .position(|x| x.eq_ignore_ascii_case("CHILD"))
                .ok_or_else(|| l.err("PARENT: expected `PARENT p… CHILD c…`"))?;
        let (ps, cs) = (&l.w[first..child_at], &l.w[child_at + 1..]);
        if ps.is_empty() || cs.is_empty() {
            return Err(l.err("PARENT: expected at least one parent and one child"));
        }
        for p in ps {
            for c in cs {
                self.file
                    .edges
                    .push((l.at(), p.clone(), c.clone(), first > 1));
            }
        }
        Ok(())
    }

    /// `SCRIPT [DEFER status time] [DEBUG file STDOUT|STDERR|ALL]
    /// PRE|POST|HOLD node executable args…`.
    fn script(&mut self, l: &Line) -> Result<(), FormatError> {
        let mut k = 1;
        let mut defer = None;
        let mut debug = None;
        if l.w.get(k).is_some_and(|x| x.eq_ignore_ascii_case("DEFER")) {
            let status = l.number(
                k + 1,
                "a status after DEFER",
                "SCRIPT DEFER: expected an exit status",
            )?;
            let time = l.number(
                k + 2,
                "a time after DEFER status",
                "SCRIPT DEFER: expected seconds",
            )?;
            defer = Some((status, time));
            k += 3;
        }
        if l.w.get(k).is_some_and(|x| x.eq_ignore_ascii_case("DEBUG")) {
            let file = l.arg(k + 1, "a file after DEBUG")?;
            let kind = l
                .arg(k + 2, "STDOUT, STDERR or ALL after DEBUG file")?
                .to_ascii_uppercase();
            if !["STDOUT", "STDERR", "ALL"].contains(&kind.as_str()) {
                return Err(l.err(format!(
                    "SCRIPT DEBUG: `{kind}`; expected STDOUT, STDERR or ALL"
                )));
            }
            debug = Some((file, kind));
            k += 3;
        }
        let when = l.arg(k, "PRE, POST or HOLD")?.to_ascii_uppercase();
        let target = self.target(l, k + 1, true)?;
        // DAGMan splits a script's arguments at blanks and keeps their
        // quotes and backslashes (`Script::BackgroundRun`), where the
        // words of the rest of the line lose them.
        let executable = l.arg(k + 2, "an executable")?;
        let raw: Vec<&str> = l.text.split_whitespace().collect();
        let args = match raw.split_at_checked(k + 3) {
            Some((head, rest)) if !head.iter().any(|w| w.contains('"')) => {
                rest.iter().map(|a| a.to_string()).collect()
            }
            _ => l.w.get(k + 3..).unwrap_or_default().to_vec(),
        };
        let script = Script {
            executable,
            args,
            defer,
            debug,
        };
        match when.as_str() {
            "PRE" | "POST" => {
                let post = when == "POST";
                self.node_cmds
                    .push((target, NodeCmd::Script { post, script }));
            }
            "HOLD" => {
                let m = "SCRIPT HOLD ignored (gridbed's jobs are never held)";
                self.file.warnings.push(l.warning(m));
            }
            other => {
                return Err(l.err(format!("SCRIPT: `{other}`; expected PRE, POST or HOLD")));
            }
        }
        Ok(())
    }

    /// `RETRY node n [UNLESS-EXIT value]`.
    fn retry(&mut self, l: &Line) -> Result<(), FormatError> {
        let target = self.target(l, 1, false)?;
        self.no_service(l, &target)?;
        let n: u32 = l.number(
            2,
            "a retry count",
            "RETRY: expected a whole number of retries",
        )?;
        if n > crate::core::manager::MAX_RETRIES {
            return Err(l.err(format!(
                "RETRY: at most {} retries, found {n}",
                crate::core::manager::MAX_RETRIES
            )));
        }
        let mut unless = None;
        if let Some(u) = l.w.get(3) {
            if !u.eq_ignore_ascii_case("UNLESS-EXIT") {
                return Err(l.err(format!("RETRY: `{u}`; expected UNLESS-EXIT value")));
            }
            unless = Some(l.number(
                4,
                "an exit value after UNLESS-EXIT",
                "RETRY UNLESS-EXIT: expected an integer",
            )?);
        }
        self.node_cmds.push((target, NodeCmd::Retry { n, unless }));
        Ok(())
    }

    /// `VARS node [PREPEND|APPEND] name="value"…`.
    fn vars(&mut self, l: &Line) -> Result<(), FormatError> {
        let target = self.target(l, 1, true)?;
        let edit = l
            .w
            .get(2)
            .is_some_and(|x| x.eq_ignore_ascii_case("PREPEND") || x.eq_ignore_ascii_case("APPEND"));
        let rest = after_words(&l.text, if edit { 3 } else { 2 });
        let pairs = vars_pairs(rest).map_err(|m| l.err(format!("VARS: {m}")))?;
        self.node_cmds.push((target, NodeCmd::Vars(pairs)));
        Ok(())
    }

    /// `ABORT-DAG-ON node value [RETURN status]`.
    fn abort_dag_on(&mut self, l: &Line) -> Result<(), FormatError> {
        let kw = &l.kw;
        let target = self.target(l, 1, false)?;
        let value = l.number(
            2,
            "an exit value",
            &format!("{kw}: expected an integer exit value"),
        )?;
        let ret = match l.w.get(3) {
            None => None,
            Some(r) if r.eq_ignore_ascii_case("RETURN") => Some(l.number(
                4,
                "a DAG return value after RETURN",
                &format!("{kw} RETURN: expected an integer"),
            )?),
            Some(r) => return Err(l.err(format!("{kw}: `{r}`; expected RETURN value"))),
        };
        self.node_cmds.push((target, NodeCmd::AbortOn(value, ret)));
        Ok(())
    }

    /// `ENV GET names…` (space or comma separated) and `ENV SET pairs`: the
    /// pairs in HTCondor's V1 form (`k=v;k2=v2`) or V2 (`"k=v k2='v w'"`).
    fn env(&mut self, l: &Line) -> Result<(), FormatError> {
        let kw = &l.kw;
        let action = l.arg(1, "SET or GET and variables")?.to_ascii_uppercase();
        let rest = after_words(&l.text, 2).trim();
        if rest.is_empty() {
            return Err(l.err(format!("{kw} {action}: expected variables")));
        }
        let info = &mut self.file.info;
        match action.as_str() {
            "GET" => info.env_get.extend(
                rest.split([',', ' ', '\t'])
                    .filter(|s| !s.is_empty())
                    .map(String::from),
            ),
            "SET" => {
                let pairs = env_pairs(rest).map_err(|m| l.err(format!("{kw} SET: {m}")))?;
                info.env_set.extend(pairs);
            }
            other => return Err(l.err(format!("{kw}: `{other}`; expected SET or GET"))),
        }
        Ok(())
    }

    /// `INCLUDE file`: read whole where it stands, relative to this file.
    fn include(&mut self, l: &Line, depth: usize) -> Result<(), FormatError> {
        let file = l.arg(1, "a file to include")?;
        if depth >= MAX_DEPTH {
            return Err(l.err(format!(
                "INCLUDE {file}: nested more than {MAX_DEPTH} deep (a file that includes itself?)"
            )));
        }
        let inc = l.path.parent().unwrap_or(Path::new(".")).join(&file);
        let text = std::fs::read_to_string(&inc).map_err(|e| {
            l.err(format!(
                "INCLUDE {file}: cannot read {}: {e}",
                inc.display()
            ))
        })?;
        self.text(&inc, &text, depth + 1)
    }

    /// `PIN_IN node n` and `PIN_OUT node n`.
    fn pin(&mut self, l: &Line) -> Result<(), FormatError> {
        let node = l.arg(1, "a node name and a pin number")?;
        let n: usize = l
            .arg(2, "a pin number")?
            .parse()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| l.err(format!("{}: expected a pin number ≥ 1", l.kw)))?;
        let pins = if l.key == "PIN_IN" {
            &mut self.file.pins_in
        } else {
            &mut self.file.pins_out
        };
        pins.push((l.at(), node, n));
        Ok(())
    }
}
