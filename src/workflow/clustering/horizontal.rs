//! Horizontal clustering (seed 004, §11.2.1.1.1): within each group of jobs
//! of one level and transformation, `clusters.size` makes clusters of N jobs
//! (the last one smaller), `clusters.num` makes N clusters, as even as can be
//! (4 jobs with num = 3: one of 2 and two of 1, as the paper's example).

/// Clusters of `size` jobs, in job order, per group.
pub fn by_size(groups: &[Vec<usize>], size: usize) -> Vec<Vec<usize>> {
    groups
        .iter()
        .flat_map(|g| g.chunks(size.max(1)).map(<[usize]>::to_vec))
        .collect()
}

/// `num` clusters per group (fewer when the group is smaller), the first
/// ones one job larger when the jobs do not divide evenly.
pub fn by_num(groups: &[Vec<usize>], num: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for g in groups {
        let k = num.max(1).min(g.len());
        let (base, extra) = (g.len() / k, g.len() % k);
        let mut at = 0;
        for i in 0..k {
            let n = base + usize::from(i < extra);
            out.push(g[at..at + n].to_vec());
            at += n;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_papers_examples() {
        // 4 jobs of B at one level, clusters.size 3: one of 3, one of 1... the
        // paper says "one composed of 3 jobs and another of 2" for 5 jobs.
        let five = vec![vec![0, 1, 2, 3, 4]];
        assert_eq!(by_size(&five, 3), [vec![0, 1, 2], vec![3, 4]]);
        // 4 jobs, clusters.num 3: "one composed of 2 jobs and others of a
        // single job each".
        let four = vec![vec![0, 1, 2, 3]];
        assert_eq!(by_num(&four, 3), [vec![0, 1], vec![2], vec![3]]);
        // More clusters asked than jobs: one each.
        assert_eq!(by_num(&[vec![7, 8]], 5), [vec![7], vec![8]]);
    }
}
