//! The HTCondor cluster number of each submission of a run, as one schedd
//! numbers the clusters submitted to it (1, 2, … in the order they were
//! submitted) for every DAGMan of the run: a node's job attempt, or a
//! sub-DAG's DAGMan job. DAGMan's files name them (`12.0`), and so does a
//! POST script's `$JOBID`. Submissions of one instant of the emulated clock
//! go in the order they started (a site's queue takes its jobs first
//! come, first served; a sub-DAG's DAGMan starts as it is submitted,
//! before the jobs it submits).
//!
//! A submission's number depends only on those before it, all known once
//! it started: so a POST script, which runs after its job, can be given
//! its job's number while the run goes ([`number_of`]).

use std::collections::HashMap;

use super::records::Records;
use super::{JobId, Time};

/// Something a schedd gave a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Submission {
    /// A sub-DAG's DAGMan: the index of its run among the runs' starts.
    Dagman(usize),
    /// A node's job: `(job, attempt)`.
    Job(JobId, usize),
}

/// What a submission is numbered by: when it was submitted, when it
/// started (never: last), then the submission itself.
type Key = (Time, Time, Submission);

fn before(a: &Key, b: &Key) -> std::cmp::Ordering {
    (a.0.total_cmp(&b.0))
        .then(a.1.total_cmp(&b.1))
        .then(a.2.cmp(&b.2))
}

/// Every submission of `records` and of the sub-DAG DAGMans started at
/// `dagmans`, with its key.
fn keys<'a>(records: &'a Records, dagmans: &'a [Time]) -> impl Iterator<Item = Key> + 'a {
    let jobs = records.jobs.iter().enumerate().flat_map(|(j, r)| {
        (r.attempts.iter().enumerate()).filter_map(move |(k, a)| {
            let started = a.started.unwrap_or(f64::INFINITY);
            Some((a.submitted?, started, Submission::Job(j, k)))
        })
    });
    let dagmans = (dagmans.iter().enumerate()).map(|(i, &t)| (t, t, Submission::Dagman(i)));
    jobs.chain(dagmans)
}

/// The cluster number of every submission.
pub fn numbers(records: &Records, dagmans: &[Time]) -> HashMap<Submission, u64> {
    let mut all: Vec<Key> = keys(records, dagmans).collect();
    all.sort_by(before);
    (all.into_iter().enumerate())
        .map(|(n, (_, _, s))| (s, n as u64 + 1))
        .collect()
}

/// The cluster number of `s`, as [`numbers`] gives it, counted without
/// numbering the others; none when it was not submitted.
pub fn number_of(records: &Records, dagmans: &[Time], s: Submission) -> Option<u64> {
    let all = || keys(records, dagmans);
    let key = all().find(|k| k.2 == s)?;
    let earlier = all().filter(|k| before(k, &key).is_lt()).count();
    Some(earlier as u64 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::records::{Attempt, JobRecord};

    /// Jobs of attempts `(submitted, started)`.
    fn records(jobs: &[Vec<(Option<u8>, Option<u8>)>]) -> Records {
        let mut r = Records::default();
        for attempts in jobs {
            let mut job = JobRecord::default();
            for &(sub, start) in attempts {
                job.attempts.push(Attempt {
                    submitted: sub.map(f64::from),
                    started: start.map(f64::from),
                    ..Attempt::begun(0, 0.0)
                });
            }
            r.jobs.push(job);
        }
        r
    }

    #[test]
    fn clusters_go_by_submission_then_start() {
        let r = records(&[
            vec![(Some(5), Some(7))],
            vec![(Some(5), Some(6)), (Some(9), None)],
            vec![(None, None)],
        ]);
        let n = numbers(&r, &[5.0]);
        // At 5: the DAGMan (started at 5), job 1 (started at 6), job 0.
        assert_eq!(n[&Submission::Dagman(0)], 1);
        assert_eq!(n[&Submission::Job(1, 0)], 2);
        assert_eq!(n[&Submission::Job(0, 0)], 3);
        assert_eq!(n[&Submission::Job(1, 1)], 4);
        assert_eq!(n.len(), 4, "job 2 was never submitted");
        assert_eq!(number_of(&r, &[5.0], Submission::Job(2, 0)), None);
    }

    proptest::proptest! {
        /// One submission's number, counted alone, is the one numbering
        /// them all gives it; times in a short range make ties common.
        #[test]
        fn a_number_counted_alone_is_the_number_of_all(
            jobs in proptest::collection::vec(
                proptest::collection::vec(
                    (proptest::option::of(0u8..4), proptest::option::of(0u8..4)),
                    0..3,
                ),
                0..6,
            ),
            dagmans in proptest::collection::vec(0u8..4, 0..3),
        ) {
            let r = records(&jobs);
            let dagmans: Vec<Time> = dagmans.into_iter().map(f64::from).collect();
            let all = numbers(&r, &dagmans);
            for (&s, &n) in &all {
                proptest::prop_assert_eq!(number_of(&r, &dagmans, s), Some(n));
            }
            let mut seen: Vec<u64> = all.values().copied().collect();
            seen.sort_unstable();
            proptest::prop_assert_eq!(seen, (1..=all.len() as u64).collect::<Vec<_>>());
        }
    }
}
