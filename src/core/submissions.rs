//! Workflows submitted by users from their submit machines, arriving over
//! time: seed 003 §5.1–5.2 and §9 (two submit machines; "when new workflows
//! are submitted, it may be necessary to reassign some machines to the new
//! user in the interests of fairness").
//!
//! A scenario's jobs are split into submissions, each a set of whole DAGs
//! (weakly connected components) with the submit machine whose storage holds
//! its inputs and to which its outputs return, the time it is submitted,
//! and its weight in the pool's fair share. A job of a submission that has
//! not arrived is not released. The fair share is the pool's rule, here so
//! that every matchmaking selector applies one definition: a workflow's
//! slice of the slots is proportional to its share among the workflows that
//! want slots now (Condor's user priorities, without preemption).

use super::{FileId, JobId, SiteId, Time, Workflow};

/// One submitted workflow.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    /// Its name (the user's workflow name).
    pub name: String,
    /// Its submit machine: holds its inputs, receives what `return` sends home.
    pub origin: SiteId,
    /// When it is submitted (nominal s).
    pub arrival: Time,
    /// Its weight in the fair share (> 0).
    pub share: f64,
}

/// The submissions of a scenario and each job's (the default, empty,
/// stands for one workflow submitted at once).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Submissions {
    /// The submissions, in the order the scenario lists them.
    pub list: Vec<Submission>,
    /// Per job: its submission's index in `list`.
    pub of_job: Vec<usize>,
}

impl Submissions {
    /// The whole workflow as one submission from `origin` at time 0.
    pub fn single(jobs: usize, origin: SiteId) -> Submissions {
        Submissions {
            list: vec![Submission {
                name: "workflow".into(),
                origin,
                arrival: 0.0,
                share: 1.0,
            }],
            of_job: vec![0; jobs],
        }
    }

    /// Splits `wf` into the submissions of `list` by DAG: the first
    /// `dags[0]` DAGs (in the order of their first job) go to the first
    /// submission, the next `dags[1]` to the second, and so on; `None`
    /// takes every DAG left. Errors say which entry asks for too many.
    pub fn by_dags(
        wf: &Workflow,
        list: Vec<Submission>,
        dags: &[Option<usize>],
    ) -> Result<Submissions, (usize, String)> {
        let (dag_of, all) = wf.components();
        let mut owner = vec![0usize; all.len()];
        let mut next = 0usize;
        for (i, want) in dags.iter().enumerate() {
            let take = want.unwrap_or(all.len().saturating_sub(next));
            if next + take > all.len() {
                let left = all.len().saturating_sub(next);
                return Err((
                    i,
                    format!(
                        "asks for {take} DAGs but the workflow has {} DAGs and {left} are left",
                        all.len()
                    ),
                ));
            }
            owner[next..next + take].fill(i);
            next += take;
        }
        if next < all.len() {
            let last = dags.len().saturating_sub(1);
            return Err((
                last,
                format!(
                    "the submissions take {next} of the workflow's {} DAGs; leave `dags` out of the last one to give it the rest",
                    all.len()
                ),
            ));
        }
        Ok(Submissions {
            list,
            of_job: dag_of.iter().map(|&d| owner[d]).collect(),
        })
    }

    /// Where the inputs start: each input at the submit machine of every
    /// submission that reads it (a batch input shared by two users' DAGs
    /// is on both submit machines), in file order.
    pub fn placement(&self, wf: &Workflow) -> Vec<(FileId, SiteId)> {
        // Nearly every input has one submit machine: one slot a file, and
        // the rare second and later machines aside, in the order seen.
        let mut first: Vec<Option<SiteId>> = vec![None; wf.files.len()];
        let mut more: Vec<(FileId, SiteId)> = Vec::new();
        for (j, job) in wf.jobs.iter().enumerate() {
            let origin = self.list[self.of_job[j]].origin;
            for &f in &job.inputs {
                if wf.producer[f].is_some() {
                    continue;
                }
                match first[f] {
                    None => first[f] = Some(origin),
                    Some(s) if s == origin => {}
                    Some(_) => more.push((f, origin)),
                }
            }
        }
        more.sort_by_key(|&(f, _)| f);
        // An input no job reads stays at the first submit machine.
        let default = self.list.first().map_or(0, |s| s.origin);
        let mut out = Vec::with_capacity(first.len() + more.len());
        let mut rest = more.into_iter().peekable();
        for f in wf.inputs() {
            let at = out.len();
            out.push((f, first[f].unwrap_or(default)));
            while let Some(pair) = rest.next_if(|&(g, _)| g == f) {
                if !out[at..].contains(&pair) {
                    out.push(pair);
                }
            }
        }
        out
    }

    /// Jobs of `submission` without parents: released when it arrives.
    pub fn roots<'a>(
        &'a self,
        wf: &'a Workflow,
        submission: usize,
    ) -> impl Iterator<Item = JobId> + 'a {
        (0..wf.jobs.len())
            .filter(move |&j| self.of_job[j] == submission && wf.jobs[j].parents.is_empty())
    }
}

/// What the manager knows of a submission as the run goes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Workload {
    /// It has been submitted.
    pub arrived: bool,
    /// Its jobs holding a slot (staging, queued, running).
    pub claimed: usize,
    /// Its jobs ready and not yet placed (held ones included).
    pub ready: usize,
    /// Its jobs not over (not done, failed or blocked).
    pub open: usize,
}

impl Workload {
    /// It has arrived and has jobs left.
    pub fn active(&self) -> bool {
        self.arrived && self.open > 0
    }

    /// It wants slots now: jobs waiting for one or holding one.
    pub fn wants_slots(&self) -> bool {
        self.arrived && (self.ready > 0 || self.claimed > 0)
    }
}

/// Fair share: whether `submission` is at or above its slice of `slots`
/// while another workflow that waits for a slot is below its own, so the
/// next free slot should go to the other one. The slices are proportional
/// to the shares of the workflows that want slots now.
pub fn over_fair_share(
    list: &[Submission],
    workload: &[Workload],
    slots: usize,
    submission: usize,
) -> bool {
    if list.len() < 2 {
        return false;
    }
    let wanting: f64 = list
        .iter()
        .zip(workload)
        .filter(|(_, w)| w.wants_slots())
        .map(|(s, _)| s.share)
        .sum();
    if wanting <= 0.0 {
        return false;
    }
    let slice = |i: usize| slots as f64 * list[i].share / wanting;
    if (workload[submission].claimed as f64) < slice(submission) {
        return false;
    }
    (0..list.len()).any(|i| {
        i != submission && workload[i].ready > 0 && (workload[i].claimed as f64) < slice(i)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{File, JobSpec};

    fn sub(name: &str, origin: SiteId, arrival: Time) -> Submission {
        Submission {
            name: name.into(),
            origin,
            arrival,
            share: 1.0,
        }
    }

    /// Three V-less pairs a→b reading one batch file.
    fn pairs(n: usize) -> Workflow {
        let mut files = vec![File {
            name: "batch".into(),
            size: 10,
        }];
        let mut jobs = Vec::new();
        for d in 0..n {
            files.push(File {
                name: format!("p{d}"),
                size: 1,
            });
            jobs.push(JobSpec {
                name: format!("a{d}"),
                runtime: 1.0,
                inputs: vec!["batch".into()],
                outputs: vec![format!("p{d}")],
                ..Default::default()
            });
            jobs.push(JobSpec {
                name: format!("b{d}"),
                runtime: 1.0,
                inputs: vec![format!("p{d}")],
                parents: vec![format!("a{d}")],
                ..Default::default()
            });
        }
        Workflow::build(files, jobs).unwrap()
    }

    #[test]
    fn dags_are_split_in_order_and_a_shared_input_starts_on_both_submit_machines() {
        let wf = pairs(3);
        let s = Submissions::by_dags(
            &wf,
            vec![sub("u1", 0, 0.0), sub("u2", 1, 60.0)],
            &[Some(1), None],
        )
        .unwrap();
        assert_eq!(s.of_job, vec![0, 0, 1, 1, 1, 1]);
        assert_eq!(s.roots(&wf, 1).collect::<Vec<_>>(), vec![2, 4]);
        let batch = 0;
        assert_eq!(s.placement(&wf), vec![(batch, 0), (batch, 1)]);
    }

    #[test]
    fn asking_for_more_dags_than_there_are_or_leaving_some_is_an_error() {
        let wf = pairs(3);
        let two = || vec![sub("u1", 0, 0.0), sub("u2", 1, 0.0)];
        let (i, msg) = Submissions::by_dags(&wf, two(), &[Some(2), Some(2)]).unwrap_err();
        assert_eq!(i, 1);
        assert!(msg.contains("1 are left"), "{msg}");
        let (i, msg) = Submissions::by_dags(&wf, two(), &[Some(1), Some(1)]).unwrap_err();
        assert_eq!(i, 1);
        assert!(msg.contains("take 2 of the workflow's 3"), "{msg}");
    }

    #[test]
    fn the_fair_share_gives_the_next_slot_to_the_workflow_below_its_slice() {
        let list = vec![sub("u1", 0, 0.0), sub("u2", 0, 0.0)];
        let w = |claimed, ready| Workload {
            arrived: true,
            claimed,
            ready,
            open: claimed + ready,
        };
        // 10 slots, u1 holds 6, u2 holds 3 and waits: u1 yields.
        assert!(over_fair_share(&list, &[w(6, 4), w(3, 2)], 10, 0));
        assert!(!over_fair_share(&list, &[w(6, 4), w(3, 2)], 10, 1));
        // u2 waits for nothing: u1 may take every slot.
        assert!(!over_fair_share(&list, &[w(9, 4), w(1, 0)], 10, 0));
        // A weight of 3 gives u1 three quarters.
        let weighted = vec![
            Submission {
                share: 3.0,
                ..sub("u1", 0, 0.0)
            },
            sub("u2", 0, 0.0),
        ];
        assert!(!over_fair_share(&weighted, &[w(7, 4), w(2, 2)], 12, 0));
        assert!(over_fair_share(&weighted, &[w(9, 4), w(2, 2)], 12, 0));
        // One workflow alone is never over its share.
        assert!(!over_fair_share(&list[..1], &[w(10, 4)], 10, 0));
    }
}
