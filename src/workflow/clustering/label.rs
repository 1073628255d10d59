//! Label clustering (seed 004, §11.2.1.1.3): the jobs sharing a `label`
//! profile form one cluster, run in topological order; unlabelled jobs are
//! left as they are. A labelling that would make the clustered workflow
//! cyclic (a path leaving the cluster and coming back) is refused when the
//! clusters are merged — the paper's "more rigorous checks" on labels.

use std::collections::HashMap;

use crate::core::Workflow;

/// One group per label and execution site where known (in order of first
/// appearance), and one per unlabelled job.
pub fn groups(wf: &Workflow) -> Vec<Vec<usize>> {
    let mut index: HashMap<(&str, Option<&str>), usize> = HashMap::new();
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (j, job) in wf.jobs.iter().enumerate() {
        match job.label.as_deref() {
            Some(l) => {
                let g = *index.entry((l, job.site.as_deref())).or_insert_with(|| {
                    out.push(Vec::new());
                    out.len() - 1
                });
                out[g].push(j);
            }
            None => out.push(vec![j]),
        }
    }
    out
}
