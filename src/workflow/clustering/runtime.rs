//! Runtime clustering (seed 004, §11.2.1.1.2): within each group of one
//! level and transformation, jobs sorted by decreasing runtime go
//!
//! * with `clusters.maxruntime` S: into the first bin they fit (the bin's
//!   runtime plus theirs at most S), else a new bin; a job longer than S is
//!   "ignored" — left alone, unclustered;
//! * with `clusters.num` N: each to the bin with the shortest runtime so far
//!   (a heap of N bins; ties to the lowest bin).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::core::Workflow;

/// Jobs of `g` in decreasing runtime (ties in job order).
fn by_runtime(wf: &Workflow, g: &[usize]) -> Vec<usize> {
    let mut v = g.to_vec();
    v.sort_by(|&a, &b| {
        wf.jobs[b]
            .runtime
            .total_cmp(&wf.jobs[a].runtime)
            .then(a.cmp(&b))
    });
    v
}

/// First-fit bins of at most `max` seconds per group.
pub fn by_max(wf: &Workflow, groups: &[Vec<usize>], max: f64) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for g in groups {
        let mut bins: Vec<(f64, Vec<usize>)> = Vec::new();
        for j in by_runtime(wf, g) {
            let r = wf.jobs[j].runtime;
            if r > max {
                out.push(vec![j]);
                continue;
            }
            match bins.iter_mut().find(|(sum, _)| sum + r <= max) {
                Some((sum, members)) => {
                    *sum += r;
                    members.push(j);
                }
                None => bins.push((r, vec![j])),
            }
        }
        out.extend(bins.into_iter().map(|(_, m)| m));
    }
    out
}

/// `num` bins of similar runtime per group (fewer when the group is smaller).
pub fn by_num(wf: &Workflow, groups: &[Vec<usize>], num: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for g in groups {
        let k = num.max(1).min(g.len());
        let mut bins: Vec<Vec<usize>> = vec![Vec::new(); k];
        // (runtime so far in ns, bin): the shortest, then the lowest bin.
        let mut heap: BinaryHeap<Reverse<(u64, usize)>> = (0..k).map(|b| Reverse((0, b))).collect();
        for j in by_runtime(wf, g) {
            if let Some(Reverse((sum, b))) = heap.pop() {
                bins[b].push(j);
                let add = (wf.jobs[j].runtime * 1e9).round() as u64;
                heap.push(Reverse((sum + add, b)));
            }
        }
        // Jobs of no runtime all go to the first bin: others may stay empty.
        out.extend(bins.into_iter().filter(|b| !b.is_empty()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::JobSpec;

    fn wf(runtimes: &[f64]) -> Workflow {
        let specs = runtimes
            .iter()
            .enumerate()
            .map(|(i, &r)| JobSpec {
                name: format!("j{i}"),
                runtime: r,
                ..Default::default()
            })
            .collect();
        Workflow::build(Vec::new(), specs).unwrap()
    }

    #[test]
    fn maxruntime_packs_first_fit_in_decreasing_order_and_leaves_long_jobs_alone() {
        let w = wf(&[100.0, 100.0, 100.0, 100.0, 350.0, 250.0]);
        let all = vec![(0..6).collect::<Vec<_>>()];
        // Decreasing: 350 (> 300: left alone), 250 → bin A; each 100 does
        // not fit A (350) → bin B takes three (300), the fourth opens C.
        assert_eq!(
            by_max(&w, &all, 300.0),
            [vec![4], vec![5], vec![0, 1, 2], vec![3]]
        );
    }

    #[test]
    fn num_balances_runtimes_over_the_bins() {
        let w = wf(&[10.0, 50.0, 20.0, 40.0, 30.0]);
        let all = vec![(0..5).collect::<Vec<_>>()];
        // Decreasing: 50, 40, 30 open the three bins; 20 goes to the
        // shortest (30), 10 to the next shortest (40): 50, 50, 50.
        assert_eq!(by_num(&w, &all, 3), [vec![1], vec![3, 0], vec![4, 2]]);
        // Jobs of no runtime leave bins empty: those are not clusters.
        let w = wf(&[0.0, 0.0, 0.0]);
        let all = vec![(0..3).collect::<Vec<_>>()];
        assert_eq!(by_num(&w, &all, 2), [vec![0, 1, 2]]);
    }
}
