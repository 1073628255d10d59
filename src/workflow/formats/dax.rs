//! Pegasus DAX XML, versions 2.1 and 3.x: `<job id name runtime?>` with
//! `<uses file|name link size>` (2.1 names the file in `file`, 3.x in
//! `name`), a runtime as the job's `runtime` attribute or a
//! `<profile namespace="pegasus" key="runtime">`, and dependencies as
//! `<child ref><parent ref/></child>`. Jobs are named by their `id`; `dax`
//! and `dag` sub-workflow nodes are jobs without files. Read as a stream of
//! events (quick-xml): no tree is built.

use std::collections::HashMap;

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use super::{FormatError, Options, Parsed};
use crate::core::JobSpec;

/// The line of byte `offset` in `text` (1-based).
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn attrs(e: &BytesStart) -> Result<HashMap<String, String>, String> {
    let mut out = HashMap::new();
    for a in e.attributes() {
        let a = a.map_err(|e| e.to_string())?;
        let key = a.key.as_ref().to_string();
        let value = a
            .normalized_value(quick_xml::XmlVersion::default())
            .map_err(|e| e.to_string())?
            .into_owned();
        out.insert(key, value);
    }
    Ok(out)
}

/// Parses DAX text.
pub fn parse(
    text: &str,
    opts: &Options,
    err: &dyn Fn(String) -> FormatError,
) -> Result<Parsed, FormatError> {
    let mut reader = Reader::from_str(text);
    reader.config_mut().trim_text(true);
    let mut jobs: Vec<JobSpec> = Vec::new();
    let mut runtime_given: Vec<bool> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut sizes: HashMap<String, Option<u64>> = HashMap::new();
    let mut current: Option<usize> = None;
    let mut child: Option<usize> = None;
    let mut in_adag = false;
    loop {
        let event = reader.read_event().map_err(|e| {
            let at = reader.error_position() as usize;
            err(format!(
                "line {}: not well-formed XML: {e}",
                line_of(text, at)
            ))
        })?;
        // Errors about an element name the line its tag ends on.
        let at = reader.buffer_position() as usize;
        let here = |m: String| err(format!("line {}: {m}", line_of(text, at.saturating_sub(1))));
        let (e, empty) = match &event {
            Event::Start(e) => (e, false),
            Event::Empty(e) => (e, true),
            Event::End(e) => {
                match e.local_name().as_ref() {
                    "job" | "dax" | "dag" => current = None,
                    "child" => child = None,
                    _ => {}
                }
                continue;
            }
            Event::Eof => break,
            _ => continue,
        };
        let a = attrs(e).map_err(|m| here(format!("bad attribute: {m}")))?;
        let need = |key: &str, what: &str| {
            a.get(key)
                .cloned()
                .ok_or_else(|| here(format!("<{what}> without `{key}`")))
        };
        match e.local_name().as_ref() {
            "adag" => in_adag = true,
            "job" | "dax" | "dag" => {
                let id = need("id", "job")?;
                if index.insert(id.clone(), jobs.len()).is_some() {
                    return Err(here(format!("a second job with id `{id}`")));
                }
                let runtime = match a.get("runtime") {
                    Some(r) => Some(r.trim().parse::<f64>().map_err(|_| {
                        here(format!("job `{id}`: runtime `{r}`; expected seconds"))
                    })?),
                    None => None,
                };
                runtime_given.push(runtime.is_some());
                let transformation = a.get("name").map(|n| {
                    let ns = a
                        .get("namespace")
                        .map(|s| format!("{s}::"))
                        .unwrap_or_default();
                    let v = a
                        .get("version")
                        .map(|s| format!(":{s}"))
                        .unwrap_or_default();
                    format!("{ns}{n}{v}")
                });
                jobs.push(JobSpec {
                    name: id,
                    runtime: runtime.unwrap_or(opts.default_runtime),
                    transformation,
                    ..Default::default()
                });
                current = (!empty).then_some(jobs.len() - 1);
            }
            "uses" => {
                let Some(j) = current else {
                    continue; // <uses> of an executable or a replica catalogue entry
                };
                let name = a
                    .get("name")
                    .or_else(|| a.get("file"))
                    .cloned()
                    .ok_or_else(|| here("<uses> without `name` (3.x) or `file` (2.1)".into()))?;
                if a.get("executable").is_some_and(|v| v == "true")
                    || a.get("type").is_some_and(|v| v == "executable")
                {
                    continue;
                }
                let size = match a.get("size") {
                    Some(s) => Some(
                        s.trim()
                            .parse::<f64>()
                            .ok()
                            .filter(|v| *v >= 0.0)
                            .ok_or_else(|| {
                                here(format!("file `{name}`: size `{s}`; expected bytes ≥ 0"))
                            })? as u64,
                    ),
                    None => None,
                };
                let entry = sizes.entry(name.clone()).or_insert(size);
                if entry.is_none() {
                    *entry = size;
                }
                let link = a.get("link").map(String::as_str).unwrap_or("");
                match link {
                    "input" => jobs[j].inputs.push(name),
                    "output" => jobs[j].outputs.push(name),
                    "inout" => {
                        return Err(here(format!(
                            "file `{name}`: link `inout` would make replicas mutable; expected `input` or `output`"
                        )));
                    }
                    other => {
                        return Err(here(format!(
                            "file `{name}`: link `{other}`; expected `input` or `output`"
                        )));
                    }
                }
            }
            "profile" => {
                let (Some(j), false) = (current, empty) else {
                    continue;
                };
                let pegasus = a.get("namespace").is_some_and(|n| n == "pegasus");
                let key = a.get("key").map(String::as_str);
                let is_runtime = pegasus && key == Some("runtime");
                let body = reader
                    .read_text(e.name())
                    .map_err(|e| here(format!("not well-formed XML: {e}")))?;
                if is_runtime {
                    let v = body.trim().parse::<f64>().map_err(|_| {
                        here(format!(
                            "job `{}`: runtime profile `{}`; expected seconds",
                            jobs[j].name,
                            body.trim()
                        ))
                    })?;
                    jobs[j].runtime = v;
                    runtime_given[j] = true;
                } else if pegasus && key == Some("label") {
                    jobs[j].label = Some(body.trim().to_string());
                }
            }
            "child" => {
                let r = need("ref", "child")?;
                child = Some(
                    *index
                        .get(&r)
                        .ok_or_else(|| here(format!("<child ref=\"{r}\">: no job has that id")))?,
                );
            }
            "parent" => {
                let r = need("ref", "parent")?;
                let Some(c) = child else {
                    return Err(here("<parent> outside a <child>".into()));
                };
                if !index.contains_key(&r) {
                    return Err(here(format!("<parent ref=\"{r}\">: no job has that id")));
                }
                if !jobs[c].parents.contains(&r) {
                    jobs[c].parents.push(r);
                }
            }
            _ => {}
        }
    }
    if !in_adag {
        return Err(err("no <adag> element: not a Pegasus DAX".into()));
    }
    let missing = runtime_given.iter().filter(|g| !**g).count();
    Ok(Parsed::with_defaults(jobs, missing, sizes, opts))
}
