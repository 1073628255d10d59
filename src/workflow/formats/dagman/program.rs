//! A node's job as the program its submit description names, for a run
//! whose jobs run (`[workflow] jobs = "run"`): its `executable` and
//! `arguments`, in its `initialdir`, its streams to and from its
//! `input`, `output` and `error` files, with the submit macros DAGMan gives
//! a node's job (its `VARS`, and `$(JOB)` and `$(dag_node_name)` its
//! name) substituted, as
//! `condor_submit` reads a description (HTCondor manual, "Submitting a
//! Job": the `arguments` command's new syntax, in double quotes, and its
//! old one). Its exit status is the job's; how long it takes is still
//! the job's modelled runtime.

use std::path::{Path, PathBuf};

use super::NodeInfo;

/// The exit of a job that has no program to run (its submit description
/// unreadable, or naming none): DAGMan's `DAG_ERROR_CONDOR_SUBMIT_FAILED`,
/// the `$RETURN` a POST script sees after a failed submission.
pub const SUBMIT_FAILED: i32 = -1001;

/// Says why `node`'s job has no program, and returns [`SUBMIT_FAILED`].
pub fn unsubmittable(node: &str, why: &str) -> i32 {
    tracing::warn!("node {node}: its job cannot run: {why}");
    SUBMIT_FAILED
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

/// `node`'s job program, its submit description read from the node's
/// `DIR` in `dag_dir` (or written inline); or why it has none. `name` is
/// the node's name in its own DAGMan.
pub fn program(node: &NodeInfo, name: &str, dag_dir: &Path) -> Result<JobProgram, String> {
    let dir = dag_dir.join(node.dir.as_deref().unwrap_or(""));
    let text = match &node.submit_description {
        Some(inline) => inline.clone(),
        None => std::fs::read_to_string(dir.join(&node.submit))
            .map_err(|e| format!("cannot read its submit file {}: {e}", node.submit))?,
    };
    let macros = |key: &str| -> Option<String> {
        // DAGMan names the node to condor_submit both ways.
        if key.eq_ignore_ascii_case("JOB") || key.eq_ignore_ascii_case("dag_node_name") {
            return Some(name.to_string());
        }
        (node.vars.iter().rev())
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.clone())
    };
    let value = |key: &str| submit_value(&text, key).map(|v| substitute(&v, &macros, &text));
    let executable = value("executable").ok_or("its submit description has no executable")?;
    let dir = match value("initialdir") {
        Some(d) => dir.join(d),
        None => dir,
    };
    let args = match value("arguments").or_else(|| value("args")) {
        Some(a) => split_arguments(&a)?,
        None => Vec::new(),
    };
    let executable = PathBuf::from(executable);
    let executable = match executable.components().count() {
        // A bare name is looked for on PATH, as condor_submit's local
        // universe finds it.
        1 if !executable.is_absolute() && !dir.join(&executable).exists() => executable,
        _ => dir.join(executable),
    };
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

/// The last value of `key` in a submit description: logical lines (a
/// trailing `\` continues one), `key = value`, the key in any case.
fn submit_value(text: &str, key: &str) -> Option<String> {
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
            && k.trim().eq_ignore_ascii_case(key)
        {
            value = Some(v.trim().to_string());
        }
    }
    value
}

/// `v` with each `$(name)` replaced: by the node's macro, else by the
/// description's own `name = …` (once), else left as written.
fn substitute(v: &str, macros: &dyn Fn(&str) -> Option<String>, text: &str) -> String {
    let mut out = String::new();
    let mut rest = v;
    while let Some(start) = rest.find("$(") {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start + 2..].find(')') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let name = &rest[start + 2..start + 2 + len];
        match macros(name).or_else(|| submit_value(text, name)) {
            Some(value) => out.push_str(&value),
            None => out.push_str(&rest[start..start + 3 + len]),
        }
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    out
}

/// The words of an `arguments` value. New syntax (the value in double
/// quotes): words split at spaces, a single-quoted span one word with `''`
/// a quote in it, `""` a double quote. Old syntax: split at whitespace,
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
                "executable = x\ninitialdir = run\noutput = $(JOB).out\nerror = /tmp/e\n".into(),
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
}
