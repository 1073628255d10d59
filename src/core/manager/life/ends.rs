//! What the end of a node's job or of one of its scripts means for the
//! node, by DAGMan's rules (HTCondor's `Dag::ProcessJobProcEnd`,
//! `Dag::PreScriptReaper` and `Dag::PostScriptReaper`; seed 000 §4's
//! prescript and postscript): the node life cycle decides, the manager
//! carries the decision out on the grid, the records and the timers.
//!
//! - A job's end: its POST script decides the node, `$RETURN` its exit;
//!   without one, exit 0 or an exit its `TOLERANCE` allows ends the node
//!   done, and any other fails the attempt (`RETRY … UNLESS-EXIT` may make
//!   that final).
//! - A PRE script's end: `PRE_SKIP`'s value ends the node done unrun; a
//!   failure runs the POST script anyway under `DAGMAN_ALWAYS_RUN_POST`;
//!   exit 0 submits the job, unless the DAG stopped meanwhile.
//! - A POST script's end: exit 0 ends the node done (rescuing a failed
//!   job); any other fails the attempt.
//! - `SCRIPT DEFER status time`: a script exiting `status` runs again
//!   after `time`, deciding nothing.

use super::node_life::NodeLife;
use super::Retry;
use crate::core::{JobId, RunDag, ScriptKind, Time};

/// What a node's job's end means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobEnd {
    /// Its POST script runs, and decides.
    Post,
    /// The node ends done.
    Done,
    /// The attempt failed: the node goes back as `Retry` says.
    Failed(Retry),
}

/// What a node's PRE script's end means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PreEnd {
    /// `PRE_SKIP`: the node is done, its job and POST script not run.
    Skip,
    /// `DAGMAN_ALWAYS_RUN_POST`: the job is skipped, the POST script runs.
    PostAnyway,
    /// The job is submitted.
    Submit,
    /// The attempt ends, saying why; the node goes back as `Retry` says.
    Failed(String, Retry),
}

/// What a node's POST script's end means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PostEnd {
    /// The node ends done.
    Done,
    /// The attempt failed; `wrote` when its job ended well, so its
    /// outputs exist where it ran.
    Failed { wrote: bool, retry: Retry },
}

impl NodeLife {
    /// `SCRIPT DEFER`: the wait before `job`'s `kind` script runs again,
    /// when it exited its deferral value.
    pub(crate) fn deferral(&self, job: JobId, kind: ScriptKind, status: i32) -> Option<Time> {
        let defer = match kind {
            ScriptKind::Pre => self.nodes.pre_defer[job],
            ScriptKind::Post => self.nodes.post_defer[job],
        };
        defer.filter(|&(value, _)| value == status).map(|(_, wait)| wait)
    }

    /// `job`'s job ended, having exited `exit` (`None`: it ended well).
    /// A non-zero exit the POST script or TOLERANCE takes is kept: the
    /// job wrote no outputs.
    pub(crate) fn job_end(&mut self, job: JobId, exit: Option<i32>) -> JobEnd {
        let post = self.nodes.post[job];
        match exit {
            None if post => JobEnd::Post,
            None => JobEnd::Done,
            Some(status) if post || self.nodes.tolerant.contains(&job) => {
                self.exited[job] = Some(status);
                if post { JobEnd::Post } else { JobEnd::Done }
            }
            Some(status) => JobEnd::Failed(self.unless_exit(job, status)),
        }
    }

    /// `job`'s PRE script exited `status`: DAGMan's `$PRE_SCRIPT_RETURN`
    /// for the node (a sub-DAG's, whose PRE script runs in its entry).
    pub(crate) fn pre_returned(&mut self, job: JobId, status: i32) {
        let owner = self.node_of_entry(job).unwrap_or(job);
        self.pre_return.insert(owner, status);
    }

    /// What `job`'s PRE script exiting `status` means, its DAG's stop (if
    /// any) taken into account.
    pub(crate) fn pre_end(&self, wf: &RunDag, job: JobId, status: i32) -> PreEnd {
        let stopped = self.stopped_for(job);
        if status == 0 {
            return match stopped {
                false => PreEnd::Submit,
                true => PreEnd::Failed(self.stop_reason(wf, job), Retry::Never),
            };
        }
        if self.nodes.pre_skip[job] == Some(status) {
            PreEnd::Skip
        } else if self.nodes.post[job] && self.always_runs_post(job) && !stopped {
            PreEnd::PostAnyway
        } else {
            let why = format!("PRE script exited {status}");
            PreEnd::Failed(why, self.unless_exit(job, status))
        }
    }

    /// What `job`'s POST script exiting `status` means.
    pub(crate) fn post_end(&self, job: JobId, status: i32) -> PostEnd {
        match status {
            0 => PostEnd::Done,
            _ => PostEnd::Failed {
                wrote: self.exited[job].is_none(),
                retry: self.unless_exit(job, status),
            },
        }
    }

    /// `RETRY … UNLESS-EXIT`: a node exiting that value is not retried.
    fn unless_exit(&self, job: JobId, status: i32) -> Retry {
        match self.nodes.retry_unless_exit[job] == Some(status) {
            true => Retry::Never,
            false => Retry::Counted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::nodes::NodeSettings;
    use proptest::prelude::*;

    /// One node, its settings drawn: POST script or not, TOLERANCE,
    /// UNLESS-EXIT, PRE_SKIP, ALWAYS_RUN_POST and DEFER values among the
    /// few statuses the tests draw, so they meet often.
    #[derive(Debug, Clone)]
    struct Node {
        post: bool,
        tolerant: bool,
        unless_exit: Option<i32>,
        pre_skip: Option<i32>,
        always_run_post: bool,
        defer: Option<(i32, f64)>,
    }

    fn status() -> impl Strategy<Value = i32> {
        prop_oneof![Just(0), Just(1), Just(2), -2..3]
    }

    fn node() -> impl Strategy<Value = Node> {
        (
            any::<bool>(),
            any::<bool>(),
            proptest::option::of(status()),
            proptest::option::of(status()),
            any::<bool>(),
            proptest::option::of((status(), 0.0..100.0f64)),
        )
            .prop_map(|(post, tolerant, unless_exit, pre_skip, always, defer)| Node {
                post,
                tolerant,
                unless_exit,
                pre_skip,
                always_run_post: always,
                defer,
            })
    }

    fn life(n: &Node) -> NodeLife {
        let mut life = NodeLife::new(vec![0], vec![Vec::new()], false, 0);
        let mut nodes = NodeSettings::none(1);
        nodes.post[0] = n.post;
        if n.tolerant {
            nodes.tolerant.insert(0);
        }
        nodes.retry_unless_exit[0] = n.unless_exit;
        nodes.pre_skip[0] = n.pre_skip;
        nodes.always_run_post = n.always_run_post;
        nodes.pre_defer[0] = n.defer;
        nodes.post_defer[0] = n.defer.map(|(v, t)| (v, t + 1.0));
        life.nodes = nodes;
        life
    }

    fn wf() -> RunDag {
        let job = crate::core::JobSpec {
            name: "a".into(),
            ..Default::default()
        };
        RunDag::from(crate::core::Workflow::build(Vec::new(), vec![job]).unwrap())
    }

    /// The retry a failure exiting `status` gets, as the manual says.
    fn retry(n: &Node, status: i32) -> Retry {
        if n.unless_exit == Some(status) {
            Retry::Never
        } else {
            Retry::Counted
        }
    }

    proptest! {
        /// DAGMan's rules for a job's end, written out from its manual
        /// case by case: the POST script decides when there is one; else
        /// 0 or a tolerated exit is done; else a failure, final when it
        /// is the UNLESS-EXIT value. The exit is kept exactly when the
        /// node ends by a non-zero exit without failing.
        #[test]
        fn a_jobs_end_is_decided_as_dagmans_manual_says(
            n in node(),
            exit in proptest::option::of(status()),
        ) {
            let mut life = life(&n);
            let end = life.job_end(0, exit);
            let want = match exit {
                _ if n.post => JobEnd::Post,
                None => JobEnd::Done,
                Some(_) if n.tolerant => JobEnd::Done,
                Some(s) => JobEnd::Failed(retry(&n, s)),
            };
            prop_assert_eq!(end, want);
            let kept = exit.filter(|_| n.post || n.tolerant);
            prop_assert_eq!(life.exited[0], kept);
        }

        /// A PRE script's end: exit 0 submits (unless the DAG stopped);
        /// PRE_SKIP's value skips; a failure with a POST script and
        /// ALWAYS_RUN_POST runs the POST script; any other fails, final
        /// for UNLESS-EXIT's value or once the DAG stopped.
        #[test]
        fn a_pre_scripts_end_is_decided_as_dagmans_manual_says(
            n in node(),
            status in status(),
            stopped in any::<bool>(),
        ) {
            let mut life = life(&n);
            if stopped {
                life.dagmans.top_mut().aborted = Some(crate::core::manager::DagAbort {
                    node: None,
                    status: 0,
                    dag_return: 2,
                    halted_at: None,
                });
            }
            let end = life.pre_end(&wf(), 0, status);
            let want = match status {
                0 if stopped => PreEnd::Failed("the user removed the DAG".into(), Retry::Never),
                0 => PreEnd::Submit,
                s if n.pre_skip == Some(s) => PreEnd::Skip,
                _ if n.post && n.always_run_post && !stopped => PreEnd::PostAnyway,
                s => PreEnd::Failed(format!("PRE script exited {s}"), retry(&n, s)),
            };
            prop_assert_eq!(end, want);
        }

        /// A POST script's end: 0 is done whatever the job did; else a
        /// failure, whose job wrote its outputs only if it exited 0.
        #[test]
        fn a_post_scripts_end_is_decided_as_dagmans_manual_says(
            n in node(),
            exit in proptest::option::of(status()),
            status in status(),
        ) {
            let mut life = life(&n);
            life.exited[0] = exit;
            let want = match status {
                0 => PostEnd::Done,
                s => PostEnd::Failed { wrote: exit.is_none(), retry: retry(&n, s) },
            };
            prop_assert_eq!(life.post_end(0, status), want);
        }

        /// DEFER's wait applies to its value alone, and to each script
        /// its own.
        #[test]
        fn a_script_is_deferred_only_for_its_value(n in node(), status in status()) {
            let life = life(&n);
            let want = n.defer.filter(|&(v, _)| v == status).map(|(_, t)| t);
            prop_assert_eq!(life.deferral(0, ScriptKind::Pre, status), want);
            prop_assert_eq!(
                life.deferral(0, ScriptKind::Post, status),
                want.map(|t| t + 1.0)
            );
        }
    }

    #[test]
    fn a_pre_scripts_return_is_kept_for_its_node() {
        let mut life = NodeLife::new(vec![0], vec![Vec::new()], false, 0);
        assert_eq!(life.pre_return.get(&0), None);
        life.pre_returned(0, 7);
        assert_eq!(life.pre_return.get(&0), Some(&7));
    }
}
