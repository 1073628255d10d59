//! `DOT`: the DAG for Graphviz as DAGMan's `Dag::DumpDotFile` draws it.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use super::super::DotFile;
use super::view::*;
use crate::core::JobId;
use crate::core::records::{Attempt, Outcome};
use crate::core::result::RunResult;

/// `inst`'s DAG for Graphviz as DAGMan's `Dag::DumpDotFile` draws it at
/// `now`, each node in `states` (by job), shaped and labelled by its
/// state; `header` (DOT's `INCLUDE`, read from `include`) goes first.
fn dot(
    dag: &Dag,
    inst: &Instance,
    states: &[State],
    include: Option<(&str, &str)>,
    now: u64,
) -> String {
    let mut out = String::from("digraph DAG {\n");
    let _ = writeln!(out, "    label=\"DAGMan Job status at {}\";\n", ctime(now));
    if let Some((file, header)) = include {
        let _ = writeln!(out, "// Beginning of commands included from {file}.");
        out.push_str(header);
        if !header.is_empty() && !header.ends_with('\n') {
            out.push('\n');
        }
        let _ = writeln!(out, "// End of commands included from {file}.\n");
    }
    let own = dag.drawn(inst);
    for &j in &own {
        let name = dag.local(inst, j);
        let look = match states[j] {
            State::Done => "shape=ellipse label=\"{} (Done)\" style=bold",
            State::Error => "shape=box label=\"{} (E)\"",
            _ => "shape=ellipse label=\"{} (I)\"",
        };
        let _ = writeln!(out, "    \"{name}\" [{}];", look.replace("{}", name));
    }
    out.push('\n');
    // Each parent's children, in the order of the nodes.
    let mut children: HashMap<JobId, Vec<JobId>> = HashMap::new();
    for &j in &own {
        for &p in dag.parents(j) {
            children.entry(p).or_default().push(j);
        }
    }
    for &p in &own {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or_default() {
            let (p, c) = (dag.local(inst, p), dag.local(inst, c));
            let _ = writeln!(out, "    \"{p}\" -> \"{c}\";");
        }
    }
    out.push_str("}\n");
    out
}

/// Each own node of `inst`'s state at `t`, as its DAGMan starts a run
/// then: those the DAG marks `DONE` (or its rescue does) or that ended
/// well by then (in `run`, once there is one) are done; those whose
/// parents in it are all done are ready; the others not yet.
pub(super) fn states_at(dag: &Dag, run: Option<&RunResult>, inst: &Instance, t: f64) -> Vec<State> {
    let wf = dag.workflow;
    let done = |j: JobId| {
        let name = wf.jobs[j].name.as_str();
        let ended_well =
            |a: &Attempt| a.outcome == Outcome::Ended && a.ended.is_some_and(|e| e <= t);
        dag.node_info.get(name).is_some_and(|n| n.done)
            || run.is_some_and(|r| r.records.jobs[j].attempts.iter().any(ended_well))
    };
    let own: std::collections::HashSet<JobId> = inst.nodes.iter().copied().collect();
    let mut states = vec![State::NotReady; wf.jobs.len()];
    for &j in &inst.nodes {
        states[j] = if done(j) {
            State::Done
        } else if dag.parents(j).iter().all(|&p| !own.contains(&p) || done(p)) {
            State::Ready
        } else {
            State::NotReady
        };
    }
    states
}

/// Draws `inst`'s DAG into its DOT file `d` (or, with `DONT-OVERWRITE`,
/// the next `file.N`, as DAGMan's `Dag::ChooseDotFileName` numbers them).
pub(super) fn draw(
    dag: &Dag,
    inst: &Instance,
    d: &DotFile,
    states: &[State],
    now: u64,
) -> std::io::Result<PathBuf> {
    let dir = &inst.dir;
    let header = match &d.include {
        Some(h) => Some((h.as_str(), std::fs::read_to_string(dir.join(h))?)),
        None => None,
    };
    let include = header.as_ref().map(|(f, t)| (*f, t.as_str()));
    let text = dot(dag, inst, states, include, now);
    let path = if d.overwrite {
        dir.join(&d.file)
    } else {
        (0..)
            .map(|n| dir.join(format!("{}.{n}", d.file)))
            .find(|p| !p.exists())
            .unwrap_or_else(|| dir.join(&d.file))
    };
    std::fs::write(&path, text)?;
    Ok(path)
}
