//! A node's job as the program its submit description names, for a run
//! whose jobs run (`[workflow] jobs = "run"`): its `executable` and
//! `arguments`, in its `initialdir`, its streams to and from its
//! `input`, `output` and `error` files. The description is read when the
//! job is submitted, with the macros DAGMan gives a node's job then (its
//! `VARS`, its name, `$(RETRY)`, `$(DAG_STATUS)`, `$(FAILED_COUNT)`,
//! `$(DAG_PARENT_NAMES)`) expanded as `condor_submit` expands a
//! description's macros (HTCondor manual, "Submitting a Job": macros,
//! `$CHOICE`, `$$()` job-ad references; the `arguments` command's new
//! syntax, in double quotes, and its old one). Its exit status is the
//! job's; how long it takes is still the job's modelled runtime.

use std::path::{Path, PathBuf};

use super::NodeInfo;

/// Says why `node`'s job has no program to run (its submit description
/// unreadable, or naming none): its submission fails, and DAGMan's POST
/// script sees [`SUBMIT_FAILED`](crate::core::nodes::SUBMIT_FAILED).
pub fn unsubmittable(node: &str, why: &str) -> String {
    tracing::warn!("node {node}: its job cannot be submitted: {why}");
    why.to_string()
}

/// The program a node's job runs, ready to start.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JobProgram {
    /// Its executable: as written when absolute or a bare name, else from
    /// its `initialdir`.
    pub executable: PathBuf,
    /// Its arguments, macros substituted.
    pub args: Vec<String>,
    /// Where it runs: its `initialdir`, else its node's `DIR`.
    pub dir: PathBuf,
    /// Its `input`, `output` and `error` files, from its `initialdir`.
    #[serde(default)]
    pub streams: Streams,
}

/// A job's standard streams as its description names them (`input`,
/// `output`, `error`): the files its stdin is read from and its stdout
/// and stderr written to (each made anew as the job starts, as
/// `condor_submit` truncates them), none when it names none (the stream
/// is dropped).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Streams {
    /// `input`.
    pub input: Option<PathBuf>,
    /// `output`.
    pub output: Option<PathBuf>,
    /// `error`.
    pub error: Option<PathBuf>,
}

/// A node's job as DAGMan hands it to `condor_submit`: its submit
/// description (a file from the node's `DIR`, read when the job is
/// submitted, so that a PRE script may write it; or written inline) and
/// the macros DAGMan sets for it (`dagman_submit.cpp`, `InitVars`):
/// `JOB` and `dag_node_name` its name, `RETRY`, `DAG_STATUS`,
/// `FAILED_COUNT` as they are at its submission, `DAG_PARENT_NAMES`, and
/// its `VARS`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JobDescription {
    /// The node's name in its own DAGMan.
    pub node: String,
    /// Its submit file, from the node's `DIR`.
    pub file: PathBuf,
    /// Its description as written inline, if it is.
    pub inline: Option<String>,
    /// The node's `DIR`, from the DAG's folder.
    pub dir: PathBuf,
    /// Its `VARS`, in the order written (the last of a name wins).
    pub vars: Vec<(String, String)>,
    /// Its parents' names in its own DAGMan (`DAG_PARENT_NAMES`).
    pub parents: Vec<String>,
    /// Its effective priority, its `PRIORITY` and its DAGMan's (the job
    /// ad's `JobPrio`; [`super::DagmanInfo::effective_priorities`]).
    pub priority: i32,
}

impl JobDescription {
    /// `node`'s job, whose name in its own DAGMan is `name`, its parents
    /// there `parents`; a relative `DIR` is taken from `dag_dir`.
    pub fn new(node: &NodeInfo, name: &str, dag_dir: &Path, parents: Vec<String>) -> Self {
        let dir = dag_dir.join(node.dir.as_deref().unwrap_or(""));
        JobDescription {
            node: name.to_string(),
            file: dir.join(&node.submit),
            inline: node.submit_description.clone(),
            dir,
            vars: node.vars.clone(),
            parents,
            priority: node.priority,
        }
    }

    /// The programs of the procs of the one cluster its description
    /// submits, when submitted with `at`'s counts (`$RETRY`,
    /// `$DAG_STATUS`, `$FAILED_COUNT`), read now; or why it has none. Each
    /// `queue` statement ([`super::queue`]) queues its procs with the
    /// commands set before it and its item's variables, numbered on from
    /// the last statement's (`$(Process)`), `$(Step)` counting within an
    /// item and `$(Row)` (`$(ItemIndex)`) the items. A description without
    /// a `queue` statement is taken to queue one proc.
    pub fn procs(&self, at: &crate::core::ScriptMacros) -> Result<Vec<JobProgram>, String> {
        let text = match &self.inline {
            Some(inline) => inline.clone(),
            None => std::fs::read_to_string(&self.file)
                .map_err(|e| format!("cannot read its submit file {}: {e}", self.file.display()))?,
        };
        let statements = super::queue::statements(&text, &self.dir)?;
        if statements.is_empty() {
            return Ok(vec![self.proc_program(&text, at, &Iteration::default())?]);
        }
        let mut procs = Vec::new();
        for q in statements {
            let items: Vec<Option<&String>> = match &q.items {
                Some(items) => items.iter().map(Some).collect(),
                None => vec![None],
            };
            for (row, item) in items.into_iter().enumerate() {
                let live = item.map(|i| q.values(i)).unwrap_or_default();
                for step in 0..q.count {
                    let it = Iteration {
                        proc: procs.len() as u32,
                        step,
                        row: row as u32,
                        live: live.clone(),
                    };
                    procs.push(self.proc_program(&text[..q.at], at, &it)?);
                }
            }
        }
        match procs.is_empty() {
            // condor_submit queues nothing, and says so.
            true => Err("its submit description queues no job".into()),
            false => Ok(procs),
        }
    }

    /// The program of the proc `it` from `text`, the description up to
    /// its `queue` statement.
    fn proc_program(
        &self,
        text: &str,
        at: &crate::core::ScriptMacros,
        it: &Iteration,
    ) -> Result<JobProgram, String> {
        let parents = self.parents.join(",");
        let mut set = vec![
            // DAGMan names the node to condor_submit both ways.
            ("JOB", self.node.clone()),
            ("dag_node_name", self.node.clone()),
            ("RETRY", at.retry.to_string()),
            ("DAG_STATUS", at.dag_status.to_string()),
            ("FAILED_COUNT", at.failed.to_string()),
        ];
        if !parents.is_empty() {
            set.push(("DAG_PARENT_NAMES", parents.clone()));
        }
        let set = assign(
            set.into_iter()
                .chain(self.vars.iter().map(|(k, v)| (k.as_str(), v.clone()))),
        );
        // An item's variables come first, as condor_submit's live ones.
        let written = |key: &str| it.live(key).or_else(|| submit_value(text, key));
        let macros = |key: &str| -> Option<String> {
            (it.live(key))
                .or_else(|| {
                    (set.iter().rev())
                        .find(|(k, _)| k.eq_ignore_ascii_case(key))
                        .map(|(_, v)| v.clone())
                })
                .or_else(|| submit_value(text, key))
                .or_else(|| config_macro(key))
                .or_else(|| match key.to_ascii_lowercase().as_str() {
                    "process" | "procid" => Some(it.proc.to_string()),
                    "step" => Some(it.step.to_string()),
                    "row" | "itemindex" => Some(it.row.to_string()),
                    _ => None,
                })
        };
        let ad = |attr: &str| -> Option<String> {
            let known = match attr.to_ascii_lowercase().as_str() {
                "dagnodename" => Some(self.node.clone()),
                "dagparentnodenames" => Some(parents.clone()),
                "jobprio" => Some(self.priority.to_string()),
                "procid" => Some(it.proc.to_string()),
                _ => None,
            };
            // One the node's VARS or its description set (`+A`, `MY.A`).
            let names = |k: &str| {
                let k = k.trim();
                let a = k.strip_prefix('+').or_else(|| {
                    (k.get(..3))
                        .filter(|p| p.eq_ignore_ascii_case("MY."))
                        .map(|_| &k[3..])
                });
                a.is_some_and(|a| a.eq_ignore_ascii_case(attr))
            };
            let set = || {
                let var = set
                    .iter()
                    .rev()
                    .find(|(k, _)| names(k))
                    .map(|(_, v)| v.clone());
                var.or_else(|| submit_value_where(text, names))
            };
            known.or_else(|| Some(classad_value(&expand(&set()?, &macros, &|_| None, 0))))
        };
        let value = |key: &str| written(key).map(|v| expand(&v, &macros, &ad, 0));
        let executable = value("executable").ok_or("its submit description has no executable")?;
        let dir = match value("initialdir") {
            Some(d) => self.dir.join(d),
            None => self.dir.clone(),
        };
        let args = match value("arguments").or_else(|| value("args")) {
            Some(a) => split_arguments(&a)?,
            None => Vec::new(),
        };
        let executable = PathBuf::from(executable);
        let bare = executable.components().count() == 1 && !executable.is_absolute();
        let executable = match bare && !dir.join(&executable).exists() {
            // A bare name is looked for on PATH, as condor_submit's local
            // universe finds it.
            true => on_path(&executable).map(|_| executable.clone()),
            false => Some(dir.join(&executable)).filter(|e| e.exists()),
        }
        // condor_submit refuses a job whose program is not there.
        .ok_or(format!(
            "its executable {} does not exist",
            executable.display()
        ))?;
        let stream = |key: &str| value(key).filter(|v| !v.is_empty()).map(|v| dir.join(v));
        let streams = Streams {
            input: stream("input"),
            output: stream("output"),
            error: stream("error"),
        };
        Ok(JobProgram {
            executable,
            args,
            dir,
            streams,
        })
    }
}

/// Which proc of its cluster a program is: its number, its step within
/// its item, its item's row and the values the item gives its `queue`
/// statement's variables.
#[derive(Debug, Default)]
struct Iteration {
    proc: u32,
    step: u32,
    row: u32,
    live: Vec<(String, String)>,
}

impl Iteration {
    /// The value its item gives the variable `key`, if any.
    fn live(&self, key: &str) -> Option<String> {
        (self.live.iter())
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.clone())
    }
}

/// Macros set in turn (DAGMan's own, then the node's `VARS`), as
/// `condor_submit` inserts them: a name in any case is one macro, and a
/// value naming its own macro (`VARS A job="$(JOB)"`) names the value it
/// replaces (none: empty), which is put in as it is set.
fn assign<'a>(set: impl Iterator<Item = (&'a str, String)>) -> Vec<(&'a str, String)> {
    let mut done: Vec<(&str, String)> = Vec::new();
    for (key, value) in set {
        let earlier = (done.iter().rev()).find(|(k, _)| k.eq_ignore_ascii_case(key));
        let value = replace_macro(&value, key, earlier.map_or("", |(_, v)| v));
        done.push((key, value));
    }
    done
}

/// `v` with each `$(key)` (`key` in any case) made `by`.
fn replace_macro(v: &str, key: &str, by: &str) -> String {
    let mut out = String::new();
    let mut rest = v;
    while let Some(at) = rest.find("$(") {
        let name = &rest[at + 2..];
        match name.get(..key.len()) {
            Some(n) if n.eq_ignore_ascii_case(key) && name[key.len()..].starts_with(')') => {
                out.push_str(&rest[..at]);
                out.push_str(by);
                rest = &name[key.len() + 1..];
            }
            _ => {
                out.push_str(&rest[..at + 2]);
                rest = name;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Where `name` is found on `PATH`, if it is.
fn on_path(name: &Path) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The configuration macros a submit description may name that an
/// HTCondor pool on this machine defines for itself (`IsWindows`,
/// `IsLinux`, as `param` gives them).
fn config_macro(key: &str) -> Option<String> {
    match key.to_ascii_lowercase().as_str() {
        "iswindows" | "ismacosx" => Some("false".into()),
        "islinux" => Some("true".into()),
        _ => None,
    }
}

/// The value of an attribute in a job ad, as `$$()` puts it in: a
/// string literal's text, any other expression as written.
fn classad_value(v: &str) -> String {
    let v = v.trim();
    match v.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        Some(s) => s.replace("\\\"", "\"").replace("\\\\", "\\"),
        None => v.to_string(),
    }
}

/// The last value of `key` in a submit description: logical lines (a
/// trailing `\` continues one), `key = value`, the key in any case.
fn submit_value(text: &str, key: &str) -> Option<String> {
    submit_value_where(text, |k| k.trim().eq_ignore_ascii_case(key))
}

/// The last value in a submit description of a key `key` accepts.
fn submit_value_where(text: &str, key: impl Fn(&str) -> bool) -> Option<String> {
    let mut value = None;
    let mut line = String::new();
    for raw in text.lines() {
        match raw.strip_suffix('\\') {
            Some(part) => {
                line.push_str(part);
                continue;
            }
            None => line.push_str(raw),
        }
        let whole = std::mem::take(&mut line);
        if let Some((k, v)) = whole.split_once('=')
            && key(k)
        {
            value = Some(v.trim().to_string());
        }
    }
    value
}

/// `v` with its macros expanded as `condor_submit` expands them, the
/// values expanded in turn (to a depth of 32, past which a macro naming
/// itself stays as written): `$(name)` by `macros`, `$(name:default)`
/// falling back to its default; `$CHOICE(index, a, b, …)` the item at
/// `index` (a number, or a macro whose value is one or a boolean);
/// `$$(attr)` and `$$([attr])`, which the job's match fills in from its
/// job ad, by `ad`. An undefined macro is empty (but those [`unfilled`]
/// names), an unknown attribute or function left as written.
fn expand(
    v: &str,
    macros: &dyn Fn(&str) -> Option<String>,
    ad: &dyn Fn(&str) -> Option<String>,
    depth: usize,
) -> String {
    if depth > 32 {
        return v.to_string();
    }
    let again = |s: &str| expand(s, macros, ad, depth + 1);
    let mut out = String::new();
    let mut rest = v;
    while let Some(start) = rest.find('$') {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let (head, inner) = if let Some(r) = after.strip_prefix("$$(") {
            ("$$(", r)
        } else if let Some(r) = after.strip_prefix("$(") {
            ("$(", r)
        } else if (after.get(..8)).is_some_and(|h| h.eq_ignore_ascii_case("$CHOICE(")) {
            ("$CHOICE(", &after[8..])
        } else {
            out.push('$');
            rest = &after[1..];
            continue;
        };
        let Some(len) = inner.find(')') else {
            out.push_str(after);
            return out;
        };
        // `$$([attr])` closes at `])`.
        let len = match head == "$$(" && inner.starts_with('[') {
            true => match inner.find("])") {
                Some(l) => l + 1,
                None => len,
            },
            false => len,
        };
        let body = &inner[..len];
        let whole = &after[..head.len() + len + 1];
        let got = match head {
            "$$(" => {
                let attr = body.strip_prefix('[').and_then(|b| b.strip_suffix(']'));
                ad(attr.unwrap_or(body).trim())
            }
            "$(" => {
                let (name, default) = match body.split_once(':') {
                    Some((n, d)) => (n, Some(d)),
                    None => (body, None),
                };
                macros(name)
                    .map(|v| again(&v))
                    .or_else(|| default.map(again))
                    // Undefined, it is empty, but for the schedd's numbers,
                    // which a job's program has none of here.
                    .or_else(|| (!unfilled(name)).then(String::new))
            }
            _ => choice(&again(body), macros),
        };
        out.push_str(got.as_deref().unwrap_or(whole));
        rest = &after[whole.len()..];
    }
    out.push_str(rest);
    out
}

/// A macro `condor_submit` sets from the schedd's numbering (the job's
/// cluster, its DAGMan's), which gridbed does not know as a job is
/// submitted: left as written.
fn unfilled(name: &str) -> bool {
    ["Cluster", "ClusterId", "DAGManJobId"]
        .iter()
        .any(|n| n.eq_ignore_ascii_case(name.trim()))
}

/// `$CHOICE(index, a, b, …)`'s item (its arguments already expanded).
fn choice(args: &str, macros: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let mut items = args.split(',').map(str::trim);
    let index = items.next()?;
    let index = macros(index).unwrap_or_else(|| index.to_string());
    let i = match index.to_ascii_lowercase().as_str() {
        "false" => 0,
        "true" => 1,
        n => n.parse::<usize>().ok()?,
    };
    items.nth(i).map(String::from)
}

/// The words of an `arguments` value. New syntax (the value in double
/// quotes): words split at spaces, a single-quoted span one word with `''`
/// a quote in it, `""` a double quote (in a single-quoted span too). Old syntax: split at whitespace,
/// `\"` a double quote.
pub fn split_arguments(v: &str) -> Result<Vec<String>, String> {
    let Some(inner) = v.strip_prefix('"') else {
        return Ok(v
            .replace("\\\"", "\"")
            .split_whitespace()
            .map(String::from)
            .collect());
    };
    let inner = inner
        .strip_suffix('"')
        .ok_or(format!("arguments {v}: no closing double quote"))?;
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                words.extend(word.take());
            }
            '"' if chars.peek() == Some(&'"') => {
                chars.next();
                word.get_or_insert_default().push('"');
            }
            '\'' => {
                let w = word.get_or_insert_default();
                loop {
                    match chars.next() {
                        Some('\'') if chars.peek() == Some(&'\'') => {
                            chars.next();
                            w.push('\'');
                        }
                        Some('\'') => break,
                        // The value's doubled quotes are undone first.
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            w.push('"');
                        }
                        Some(c) => w.push(c),
                        None => return Err(format!("arguments {v}: no closing single quote")),
                    }
                }
            }
            c => word.get_or_insert_default().push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_split_as_condor_submit_splits_them() {
        let cases: &[(&str, &[&str])] = &[
            ("0", &["0"]),
            ("exit.py 1", &["exit.py", "1"]),
            ("  a   b ", &["a", "b"]),
            (r#""a 'b c' d""#, &["a", "b c", "d"]),
            (r#""'it''s' x""#, &["it's", "x"]),
            (r#""'a ""b""' c""#, &["a \"b\"", "c"]),
            (r#""say ""hi""""#, &["say", "\"hi\""]),
            (r#""''""#, &[""]),
            (r#""""#, &[]),
            (r#"one \"two\""#, &["one", "\"two\""]),
        ];
        for (v, want) in cases {
            assert_eq!(split_arguments(v).unwrap(), *want, "{v}");
        }
        assert!(split_arguments(r#""a 'b""#).is_err());
        assert!(split_arguments(r#""a"#).is_err());
    }

    /// The counts of a first attempt in a DAG going well.
    fn first() -> crate::core::ScriptMacros {
        Default::default()
    }

    /// `node`'s program, its name in its DAGMan `name`, no parents.
    fn program(node: &NodeInfo, name: &str, dir: &Path) -> Result<JobProgram, String> {
        let job = JobDescription::new(node, name, dir, Vec::new());
        job.procs(&first()).map(|mut procs| procs.swap_remove(0))
    }

    /// The arguments of each proc `text` queues, or why it queues none.
    fn proc_args(text: &str) -> Result<Vec<Vec<String>>, String> {
        let node = NodeInfo {
            name: "A".into(),
            submit_description: Some(format!("executable = python3\n{text}")),
            ..Default::default()
        };
        let job = JobDescription::new(&node, "A", Path::new("."), Vec::new());
        let procs = job.procs(&first())?;
        Ok(procs.into_iter().map(|p| p.args).collect())
    }

    #[test]
    fn each_queue_statement_queues_its_procs_with_the_commands_set_before_it() {
        let args = |t: &str| proc_args(t).unwrap();
        assert_eq!(
            args(
                "arguments = $(Process) $(ProcId) $(Step) $$([ProcId])\nqueue 3\narguments = no\n"
            ),
            [
                ["0", "0", "0", "0"],
                ["1", "1", "1", "1"],
                ["2", "2", "2", "2"]
            ],
            "what follows the last statement queues nothing"
        );
        // final-M's FINAL node: one proc exiting 1, then two exiting 0.
        assert_eq!(
            args("arguments = 1\nqueue\narguments = 0 $(Process).$(Step)\nQueue 2\n"),
            [vec!["1"], vec!["0", "1.0"], vec!["0", "2.1"]]
        );
        assert_eq!(args("arguments = a\n"), [["a"]], "no statement: one proc");
        assert_eq!(
            args("arguments = x \\\nqueue 2\nqueue 1\n"),
            [["x", "queue", "2"]]
        );
        assert_eq!(args("queue = 4\narguments = $(queue)\nqueue\n"), [["4"]]);
        // Over a list: each item its procs, its variables set first.
        assert_eq!(
            args("arguments = $(Item) $(Row) $(Step) $(Process)\nqueue 2 in (a b)\n"),
            [
                ["a", "0", "0", "0"],
                ["a", "0", "1", "1"],
                ["b", "1", "0", "2"],
                ["b", "1", "1", "3"]
            ]
        );
        assert_eq!(
            args("arguments = no\nqueue arguments from (\n  x y\n  z\n)\n"),
            [vec!["x", "y"], vec!["z"]],
            "an item's variable is a command too"
        );
        let why = |t: &str| proc_args(t).unwrap_err();
        assert!(why("queue 0\n").contains("queues no job"));
        assert!(why("queue -5\n").contains("count"));
    }

    #[test]
    fn a_program_is_read_from_its_description_with_the_nodes_macros() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("n.sub"),
            "executable = exit.py\narguments = \"$(code) $(JOB) $(other) $(dag_node_name)\"\n\
             other = x\\\n  y\nqueue\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("exit.py"), "").unwrap();
        let node = NodeInfo {
            name: "D+A".into(),
            submit: "n.sub".into(),
            vars: vec![("code".into(), "3".into())],
            ..Default::default()
        };
        // A node of sub-DAG D: its DAGMan calls it A.
        let p = program(&node, "A", dir.path()).unwrap();
        assert_eq!(p.executable, dir.path().join("exit.py"));
        assert_eq!(p.args, ["3", "A", "x", "y", "A"]);
        assert_eq!(p.dir, dir.path());
        assert_eq!(p.streams, Streams::default(), "none named");
        // Inline, in a DIR, a bare name found on PATH.
        let inline = NodeInfo {
            name: "B".into(),
            submit_description: Some("executable = python3\narguments = -c 'exit(2)'\n".into()),
            dir: Some("sub".into()),
            ..Default::default()
        };
        let p = program(&inline, "B", dir.path()).unwrap();
        assert_eq!(p.executable, PathBuf::from("python3"));
        let with_streams = NodeInfo {
            submit_description: Some(
                "executable = /bin/sh\ninitialdir = run\noutput = $(JOB).out\nerror = /tmp/e\n"
                    .into(),
            ),
            ..inline.clone()
        };
        let streams = program(&with_streams, "B", dir.path()).unwrap().streams;
        let run = dir.path().join("sub").join("run");
        assert_eq!(
            streams.output,
            Some(run.join("B.out")),
            "from its initialdir"
        );
        assert_eq!(streams.error, Some(PathBuf::from("/tmp/e")));
        assert_eq!(streams.input, None);
        assert_eq!(p.args, ["-c", "'exit(2)'"]);
        assert_eq!(p.dir, dir.path().join("sub"));
        // No file, no executable: why.
        let missing = NodeInfo {
            submit: "DNE.sub".into(),
            ..Default::default()
        };
        assert!(
            program(&missing, "C", dir.path())
                .unwrap_err()
                .contains("DNE.sub")
        );
        // condor_submit refuses a program that is not there.
        for gone in [
            "/this_should_make_submit_fail",
            "no-such-program-on-path",
            "sub/x",
        ] {
            let node = NodeInfo {
                submit_description: Some(format!("executable = {gone}\n")),
                ..Default::default()
            };
            let why = program(&node, "G", dir.path()).unwrap_err();
            assert!(why.contains("does not exist"), "{gone}: {why}");
        }
        let bare = NodeInfo {
            submit_description: Some("arguments = 1\n".into()),
            ..Default::default()
        };
        assert!(
            program(&bare, "D", dir.path())
                .unwrap_err()
                .contains("no executable")
        );
    }

    #[test]
    fn the_description_is_read_when_submitted_with_dagmans_counts_then() {
        let dir = tempfile::tempdir().unwrap();
        let node = NodeInfo {
            name: "F".into(),
            submit: "late.sub".into(),
            priority: 7,
            vars: vec![
                ("+A".into(), "\"b\\\"ob\"".into()),
                ("+DagNodeRetry".into(), "$(RETRY)".into()),
            ],
            ..Default::default()
        };
        let job = JobDescription::new(&node, "F", dir.path(), vec!["A".into(), "B".into()]);
        assert!(job.procs(&first()).is_err(), "not written yet");
        std::fs::write(
            dir.path().join("late.sub"),
            "executable = /bin/echo\narguments = \"$(RETRY) $(DAG_STATUS) $(FAILED_COUNT) \
             $(DAG_PARENT_NAMES) $$([DAGParentNodeNames]) $$(JobPrio) $$([Other]) \
             $$([a]) $$([DagNodeRetry]) $$([C]) $(undefined)\"\nMY.C = 3 + 4\n",
        )
        .unwrap();
        let later = crate::core::ScriptMacros {
            retry: 2,
            dag_status: 2,
            failed: 1,
            ..first()
        };
        assert_eq!(
            job.procs(&later).unwrap()[0].args,
            [
                "2",
                "2",
                "1",
                "A,B",
                "A,B",
                "7",
                "$$([Other])",
                "b\"ob",
                "2",
                "3",
                "+",
                "4"
            ]
        );
    }

    #[test]
    fn a_vars_value_naming_its_own_macro_names_the_one_it_replaces() {
        let node = NodeInfo {
            submit_description: Some("executable = /bin/echo\narguments = $(job) $(x)\n".into()),
            vars: vec![
                ("job".into(), "$(JOB)".into()),
                ("x".into(), "a".into()),
                ("X".into(), "$(x)b$(job)".into()),
            ],
            ..Default::default()
        };
        let dir = Path::new("/");
        assert_eq!(
            program(&node, "S1+A", dir).unwrap().args,
            ["S1+A", "abS1+A"]
        );
        assert_eq!(
            assign([("k", "$(K)a".into())].into_iter()),
            [("k", "a".into())]
        );
        assert_eq!(replace_macro("$(a)$(ab)$(A)$(", "a", "1"), "1$(ab)1$(");
    }

    #[test]
    fn macros_expand_as_condor_submit_expands_them() {
        let macros = |k: &str| -> Option<String> {
            match k {
                "job" => Some("$(JOB)".into()),
                "JOB" => Some("S1+A".into()),
                "loop" => Some("$(loop)".into()),
                "two" => Some("2".into()),
                _ => config_macro(k),
            }
        };
        let ad = |a: &str| (a == "JobPrio").then(|| "5".to_string());
        let e = |v: &str| expand(v, &macros, &ad, 0);
        assert_eq!(e("$(job).out"), "S1+A.out", "a value's macros expand too");
        assert_eq!(e("$(none) $(none:dflt) $"), " dflt $");
        assert_eq!(e("$(Cluster).$(process)"), "$(Cluster).", "the schedd's");
        assert_eq!(e("$CHOICE(IsWindows,/bin/echo,appendmsg)"), "/bin/echo");
        assert_eq!(e("$choice(two, a, b, c)"), "c");
        assert_eq!(e("$CHOICE(9,a)"), "$CHOICE(9,a)", "no such item");
        assert_eq!(e("$$([JobPrio]) $$(JobPrio) $$([x])"), "5 5 $$([x])");
        assert_eq!(e("$(unclosed"), "$(unclosed");
        assert!(e("$(loop)").len() < 100, "stops");
        assert_eq!(e("$ENV(HOME) é$(two)"), "$ENV(HOME) é2");
    }
}
