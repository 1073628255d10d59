//! Pegasus job clustering (seed 004, §11.2.1), applied to a workflow before
//! planning: many small jobs become fewer clustered jobs, each run by
//! `seqexec` — its members one after another on one slot, each writing its
//! outputs as it ends and recorded on its own; the first member to fail
//! stops the cluster and fails it (Pegasus's default,
//! `pegasus.clusterer.job.aggregator.seqexec.firstjobfail = true`). The site
//! state machine runs the members (`core::site`).
//!
//! * `horizontal[size=N]` / `horizontal[num=N]` ([`horizontal`]): per level
//!   (the *longest* distance from a root) and transformation, clusters of N
//!   jobs, or N clusters as even as can be; `num` supersedes `size`.
//! * `runtime[maxruntime=S]` / `runtime[num=N]` ([`runtime`]): per level and
//!   transformation, jobs in decreasing runtime into bins of at most S seconds
//!   (first fit; a job longer than S alone is left unclustered), or into N
//!   bins, each job to the currently shortest.
//! * `label` ([`label`]): the jobs of one `label` profile form one cluster,
//!   run in topological order; unlabelled jobs stay as they are.
//! * A comma-separated list applies them one after the other (recursive
//!   clustering), e.g. `label,horizontal[size=2]`.
//!
//! The paper groups per execution site too, after Pegasus's site selection;
//! gridbed clusters before its manager chooses sites, so it groups per site
//! where the workflow file already records one (a trace's machines,
//! [`crate::core::Job::site`]), and otherwise a cluster's site is chosen for
//! the whole cluster. The
//! parameters apply to every transformation alike (the paper's profiles per
//! transformation and site are not modelled). A cluster of one job is the job.

pub mod horizontal;
pub mod label;
pub mod runtime;

use std::collections::HashMap;

use crate::core::{DagError, File, JobSpec, Workflow};

/// One clustering technique with its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Technique {
    /// `horizontal[size=N]`: clusters of N jobs per level and transformation.
    HorizontalSize(usize),
    /// `horizontal[num=N]`: N clusters per level and transformation.
    HorizontalNum(usize),
    /// `runtime[maxruntime=S]`: first-fit bins of at most S seconds.
    RuntimeMax(f64),
    /// `runtime[num=N]`: N bins of similar runtime.
    RuntimeNum(usize),
    /// `label`: one cluster per label.
    Label,
}

/// Parses `spec` (e.g. `label,horizontal[size=4]`) into techniques applied
/// in order; the error says what was expected.
pub fn parse(spec: &str) -> Result<Vec<Technique>, String> {
    let mut out = Vec::new();
    // Split on commas outside brackets.
    let mut depth = 0;
    let mut parts = vec![String::new()];
    for c in spec.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(p) = parts.last_mut() {
            p.push(c);
        }
    }
    for part in parts {
        let part = part.trim();
        let (name, params) = match part.split_once('[') {
            Some((n, rest)) => (
                n.trim(),
                rest.strip_suffix(']')
                    .ok_or_else(|| format!("`{part}`: expected `name[key=value, …]`"))?,
            ),
            None => (part, ""),
        };
        let mut kv = HashMap::new();
        for p in params.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = p
                .split_once('=')
                .ok_or_else(|| format!("`{p}` in `{part}`: expected key=value"))?;
            kv.insert(k.trim().to_string(), v.trim().to_string());
        }
        let whole = |k: &str| -> Result<Option<usize>, String> {
            kv.get(k)
                .map(|v| {
                    v.parse::<usize>().ok().filter(|&n| n >= 1).ok_or_else(|| {
                        format!("`{k}={v}` in `{part}`: expected a whole number ≥ 1")
                    })
                })
                .transpose()
        };
        let known = |keys: &[&str]| -> Result<(), String> {
            match kv.keys().find(|k| !keys.contains(&k.as_str())) {
                Some(k) => Err(format!(
                    "`{k}` in `{part}`: expected one of {}",
                    if keys.is_empty() {
                        "no parameters".to_string()
                    } else {
                        keys.join(", ")
                    }
                )),
                None => Ok(()),
            }
        };
        let t = match name {
            "horizontal" => {
                known(&["size", "num"])?;
                match (whole("num")?, whole("size")?) {
                    (Some(n), _) => Technique::HorizontalNum(n),
                    (None, Some(s)) => Technique::HorizontalSize(s),
                    (None, None) => return Err(format!("`{part}`: expected size=N or num=N")),
                }
            }
            "runtime" => {
                known(&["maxruntime", "num"])?;
                // The paper: with both given, clusters.num is ignored.
                match (kv.get("maxruntime"), whole("num")?) {
                    (Some(v), _) => Technique::RuntimeMax(
                        v.parse::<f64>()
                            .ok()
                            .filter(|s| s.is_finite() && *s > 0.0)
                            .ok_or_else(|| {
                                format!("`maxruntime={v}` in `{part}`: expected seconds > 0")
                            })?,
                    ),
                    (None, Some(n)) => Technique::RuntimeNum(n),
                    (None, None) => {
                        return Err(format!("`{part}`: expected maxruntime=S or num=N"));
                    }
                }
            }
            "label" => {
                known(&[])?;
                Technique::Label
            }
            "" => return Err("an empty clustering technique".into()),
            other => {
                return Err(format!(
                    "unknown clustering `{other}`; expected horizontal[size=N|num=N], runtime[maxruntime=S|num=N] or label"
                ));
            }
        };
        out.push(t);
    }
    Ok(out)
}

/// How a workflow was clustered.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Clustering {
    /// Per job of the clustered workflow, the names of the original jobs it
    /// runs, in the order seqexec runs them.
    pub members: Vec<Vec<String>>,
}

impl Clustering {
    /// Clustered jobs with more than one member.
    pub fn clusters(&self) -> usize {
        self.members.iter().filter(|m| m.len() > 1).count()
    }
}

/// The level of every job: its longest distance from a root (roots are 0).
pub fn levels(wf: &Workflow) -> Vec<usize> {
    let mut level = vec![0; wf.jobs.len()];
    // Jobs are in topological order.
    for (j, job) in wf.jobs.iter().enumerate() {
        level[j] = job.parents.iter().map(|&p| level[p] + 1).max().unwrap_or(0);
    }
    level
}

/// Jobs grouped per (level, transformation, execution site where known),
/// groups and members in job order.
fn level_groups(wf: &Workflow) -> Vec<Vec<usize>> {
    let level = levels(wf);
    let mut index: HashMap<(usize, &str, Option<&str>), usize> = HashMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (j, job) in wf.jobs.iter().enumerate() {
        let tx = job.transformation.as_deref().unwrap_or("");
        let g = *index
            .entry((level[j], tx, job.site.as_deref()))
            .or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
        groups[g].push(j);
    }
    groups
}

/// Applies `techniques` in order; returns the clustered workflow and, per
/// clustered job, the original jobs it runs.
pub fn apply(wf: &Workflow, techniques: &[Technique]) -> Result<(Workflow, Clustering), DagError> {
    let mut current = wf.clone();
    let mut members: Vec<Vec<String>> = wf.jobs.iter().map(|j| vec![j.name.clone()]).collect();
    for (step, &t) in techniques.iter().enumerate() {
        let groups: Vec<Vec<usize>> = match t {
            Technique::HorizontalSize(n) => horizontal::by_size(&level_groups(&current), n),
            Technique::HorizontalNum(n) => horizontal::by_num(&level_groups(&current), n),
            Technique::RuntimeMax(s) => runtime::by_max(&current, &level_groups(&current), s),
            Technique::RuntimeNum(n) => runtime::by_num(&current, &level_groups(&current), n),
            Technique::Label => label::groups(&current),
        };
        let (next, map) = merge(&current, &groups, step)?;
        members = map
            .iter()
            .map(|olds| {
                olds.iter()
                    .flat_map(|&o| members[o].iter().cloned())
                    .collect()
            })
            .collect();
        current = next;
    }
    Ok((current, Clustering { members }))
}

/// Builds the workflow whose jobs are `groups` of `wf`'s jobs (every job in
/// exactly one group; members in topological order run one after another).
fn merge(
    wf: &Workflow,
    groups: &[Vec<usize>],
    step: usize,
) -> Result<(Workflow, Vec<Vec<usize>>), DagError> {
    let mut group_of = vec![usize::MAX; wf.jobs.len()];
    let mut ordered: Vec<Vec<usize>> = Vec::with_capacity(groups.len());
    for (g, members) in groups.iter().enumerate() {
        let mut m = members.clone();
        m.sort_unstable(); // job ids are a topological order
        for &j in &m {
            group_of[j] = g;
        }
        ordered.push(m);
    }
    let name = |g: usize| -> String {
        let m = &ordered[g];
        if m.len() == 1 {
            wf.jobs[m[0]].name.clone()
        } else {
            let tx = wf.jobs[m[0]].transformation.as_deref().unwrap_or("job");
            format!("merge_{tx}_s{step}_{g}")
        }
    };
    let mut specs = Vec::with_capacity(ordered.len());
    for (g, m) in ordered.iter().enumerate() {
        let produced: std::collections::HashSet<usize> = m
            .iter()
            .flat_map(|&j| wf.jobs[j].outputs.iter().copied())
            .collect();
        let mut inputs: Vec<usize> = m
            .iter()
            .flat_map(|&j| wf.jobs[j].inputs.iter().copied())
            .filter(|f| !produced.contains(f))
            .collect();
        inputs.sort_unstable();
        inputs.dedup();
        let mut outputs: Vec<usize> = produced.into_iter().collect();
        outputs.sort_unstable();
        let mut parents: Vec<usize> = m
            .iter()
            .flat_map(|&j| wf.jobs[j].parents.iter().map(|&p| group_of[p]))
            .filter(|&p| p != g)
            .collect();
        parents.sort_unstable();
        parents.dedup();
        let first = &wf.jobs[m[0]];
        // seqexec's programs: each member, or the members of a member that
        // an earlier technique clustered.
        let programs: Vec<(String, f64, Vec<String>)> = m
            .iter()
            .flat_map(|&j| {
                let spec = wf.spec(j);
                if spec.members.is_empty() {
                    vec![(spec.name, spec.runtime, spec.outputs)]
                } else {
                    spec.members
                }
            })
            .collect();
        specs.push(JobSpec {
            name: name(g),
            runtime: m.iter().map(|&j| wf.jobs[j].runtime).sum(),
            inputs: inputs.iter().map(|&f| wf.files[f].name.clone()).collect(),
            outputs: outputs.iter().map(|&f| wf.files[f].name.clone()).collect(),
            parents: parents.into_iter().map(name).collect(),
            position: (m.len() == 1).then_some(first.position).flatten(),
            transformation: first.transformation.clone(),
            arguments: None,
            label: first.label.clone(),
            members: if programs.len() > 1 {
                programs
            } else {
                Vec::new()
            },
            site: first.site.clone(),
        });
    }
    let files: Vec<File> = wf.files.clone();
    let merged = Workflow::build(files, specs)?;
    // Map each new job back to its group (build sorted them topologically).
    let by_name: HashMap<String, usize> = (0..ordered.len()).map(|g| (name(g), g)).collect();
    let map = merged
        .jobs
        .iter()
        .map(|j| ordered[by_name[&j.name]].clone())
        .collect();
    Ok((merged, map))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_say_what_was_expected() {
        assert_eq!(
            parse("label, horizontal[size=4]").unwrap(),
            [Technique::Label, Technique::HorizontalSize(4)]
        );
        assert_eq!(
            parse("horizontal[size=3,num=2]").unwrap(),
            [Technique::HorizontalNum(2)]
        );
        assert_eq!(
            parse("runtime[maxruntime=300,num=2]").unwrap(),
            [Technique::RuntimeMax(300.0)]
        );
        for (bad, what) in [
            ("vertical", "unknown clustering `vertical`"),
            ("horizontal", "expected size=N or num=N"),
            ("horizontal[size=0]", "whole number ≥ 1"),
            ("runtime[maxruntime=-1]", "seconds > 0"),
            ("horizontal[width=2]", "`width`"),
            ("label[x=1]", "no parameters"),
            ("horizontal[size=2", "expected `name[key=value"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(what), "{bad}: {e}");
        }
    }
}
