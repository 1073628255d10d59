//! The prescript's staging of a job's inputs (seed 000 §4), as the grid's
//! data placement decides it: which input goes next and from which
//! replica (the least busy holder that is up; after `transfer_retries`
//! failed tries from one source, another; under the `return` policy the
//! submit machine first), a copy already at the site or on its way there
//! used rather than fetched again (caching), and what the end of a
//! stage-in means for its prescript. The manager starts each transfer the
//! placement names, one at a time, so that each choice of source sees the
//! transfers started before it (`staging.rs`).

use super::Retry;
use super::transfers::Flight;
use std::collections::VecDeque;
use super::*;

/// One input's tries at being staged.
#[derive(Debug)]
pub(crate) struct StageTry {
    file: FileId,
    tries: u32,
    /// The source to try again, if the last failure was not its fault.
    source: Option<SiteId>,
    excluded: Vec<SiteId>,
    /// Whether a source was excluded for being busy (it may free up, so
    /// running out of sources is then nobody's fault).
    excluded_busy: bool,
}

/// A prescript staging a job's inputs at its site.
#[derive(Debug)]
pub(crate) struct Staging {
    /// The job's attempt this prescript is for.
    pub(crate) attempt: usize,
    pub(crate) site: SiteId,
    pub(crate) pending: VecDeque<FileId>,
    pub(crate) in_flight: usize,
    /// Inputs it waits for that another prescript is bringing to the site.
    pub(crate) waiting: usize,
    pub(crate) staged: Vec<FileId>,
    pub(crate) tries: Vec<StageTry>,
    /// The node's PRE script is running: nothing is staged until it ends.
    pub(crate) pre_running: bool,
    /// The inputs it planned to stage, seen by selectors at the site
    /// ([`Registration::Planned`](super::replicas::Registration::Planned)) until it ends.
    pub(crate) planned: Vec<FileId>,
}

/// What a prescript's staging does next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum StageNext {
    /// Nothing for now: its PRE script runs, its streams are busy, or it
    /// waits for transfers (or it is no longer staging).
    Wait,
    /// Start the transfer of `file` from `from` to `to` for the job's
    /// `attempt` (a retry of that file when `retry`).
    Send {
        file: FileId,
        from: SiteId,
        to: SiteId,
        attempt: usize,
        retry: bool,
    },
    /// Every input is at the site: the job is submitted.
    Submit,
    /// Every replica of `file` was lost (with a crashed site's pool).
    Lost(FileId),
    /// No source can serve an input: the staging fails for the reason
    /// given, and the job goes back as the [`Retry`] says.
    Fail(String, Retry),
}

/// What the end of a stage-in means for its prescript.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum StageEnd {
    /// Its attempt is over: the transfer only counts.
    Stale,
    /// The input is staged: the prescript goes on.
    Staged,
    /// The input has no room at the site: the staging fails.
    Fail(String, Retry),
    /// The input is tried again once the back-off has passed.
    Again(Timer),
}

impl Placement {
    /// Whether `job`'s `attempt` is staging its inputs.
    fn staging_of(&mut self, job: JobId, attempt: usize) -> Option<&mut Staging> {
        self.staging[job].as_mut().filter(|st| st.attempt == attempt)
    }

    /// What `job`'s prescript does next, running at most `streams`
    /// transfers at once (see the module docs). A transfer it names is
    /// counted as in flight.
    pub(crate) fn next_stage(&mut self, wf: &RunDag, job: JobId, streams: usize) -> StageNext {
        loop {
            let Some(st) = self.staging[job].as_mut() else {
                return StageNext::Wait;
            };
            if st.pre_running {
                return StageNext::Wait;
            }
            if st.pending.is_empty() && st.in_flight == 0 && st.waiting == 0 {
                return StageNext::Submit;
            }
            if st.in_flight >= streams {
                return StageNext::Wait;
            }
            let Some(file) = st.pending.pop_front() else {
                return StageNext::Wait;
            };
            let to = st.site;
            if self.policy == ReplicaPolicy::Caching {
                // With caching a copy at the site serves every job: use one
                // that arrived meanwhile, or wait for one on its way.
                if self.replicas.has(file, to) {
                    continue;
                }
                if self.transfers.is_inbound(file, to) {
                    self.transfers.wait_for(file, to, (job, st.attempt));
                    st.waiting += 1;
                    continue;
                }
            }
            let earlier = st.tries.iter().find(|t| t.file == file);
            let retry = earlier.is_some();
            let (preferred, excluded): (Option<SiteId>, &[SiteId]) = match earlier {
                Some(t) => (t.source, &t.excluded),
                None => (None, &[]),
            };
            // Condor's own transfer reads every input from the job's submit
            // machine, even where another user's holds a copy.
            let home = self.home[job];
            let preferred = preferred
                .or((self.policy == ReplicaPolicy::Return && !excluded.contains(&home)).then_some(home));
            // Only a copy that is there can be read (one registered in its
            // job's postscript, with that registration).
            let holders = self.replicas.readable(file);
            let down = &self.pool.down;
            let source = preferred.filter(|&s| holders.contains(&s) && !down[s]).or_else(|| {
                (holders.iter().copied())
                    .filter(|&s| s != to && !excluded.contains(&s) && !down[s])
                    .min_by_key(|&s| (self.transfers.serving(s), s))
            });
            let Some(from) = source else {
                let name = &wf.files()[file].name;
                return if holders.is_empty() {
                    StageNext::Lost(file)
                } else if holders.iter().any(|&s| down[s]) {
                    let reason = format!("every replica of `{name}` is on a site that is down");
                    StageNext::Fail(reason, Retry::SitesDown)
                } else if earlier.is_some_and(|t| t.excluded_busy) {
                    // Busy sources free up as transfers end: wait, as for
                    // room at the site, rather than count a failure.
                    StageNext::Fail(format!("every replica of `{name}` was busy"), Retry::Later)
                } else {
                    StageNext::Fail(format!("no usable replica of `{name}`"), Retry::Counted)
                };
            };
            st.in_flight += 1;
            let attempt = st.attempt;
            return StageNext::Send { file, from, to, attempt, retry };
        }
    }

    /// Stage-in `fl` ended with `result`; `retries` tries are allowed from
    /// one source.
    pub(crate) fn stage_ended(
        &mut self,
        wf: &RunDag,
        fl: &Flight,
        result: &Result<u64, TransferFailure>,
        retries: u32,
    ) -> StageEnd {
        let (job, file) = (fl.job, fl.file);
        let Some(st) = self.staging_of(job, fl.attempt) else {
            return StageEnd::Stale;
        };
        st.in_flight -= 1;
        let failure = match result {
            Ok(_) => {
                st.staged.push(file);
                return StageEnd::Staged;
            }
            Err(TransferFailure::NoSpace { never: true }) => {
                let site = st.site;
                self.avoid.entry(job).or_default().push(site);
                let reason = format!("`{}` can never fit", wf.files()[file].name);
                return StageEnd::Fail(reason, Retry::Now);
            }
            Err(TransferFailure::NoSpace { never: false }) => {
                return StageEnd::Fail("no room at the site now".into(), Retry::Later);
            }
            Err(failure) => failure,
        };
        let i = match st.tries.iter().position(|t| t.file == file) {
            Some(i) => i,
            None => {
                st.tries.push(StageTry {
                    file,
                    tries: 0,
                    source: None,
                    excluded: Vec::new(),
                    excluded_busy: false,
                });
                st.tries.len() - 1
            }
        };
        let t = &mut st.tries[i];
        t.tries += 1;
        if t.tries > retries {
            t.excluded.push(fl.from);
            t.excluded_busy |= *failure == TransferFailure::Busy;
            t.tries = 0;
            t.source = None;
        } else if *failure == TransferFailure::Busy {
            // A busy source is not a broken one: the next try goes to the
            // least loaded holder, which may be another.
            t.source = None;
        } else {
            t.source = Some(fl.from);
        }
        StageEnd::Again(Timer::RetryTransfer { job, attempt: fl.attempt, file })
    }

    /// A transfer of `file` that `job`'s `attempt` waited for ended, `ok`
    /// or not (it then stages the file itself): whether it still stages.
    pub(crate) fn woken(&mut self, job: JobId, attempt: usize, file: FileId, ok: bool) -> bool {
        let Some(st) = self.staging_of(job, attempt) else {
            return false;
        };
        st.waiting -= 1;
        if !ok {
            st.pending.push_front(file);
        }
        true
    }

    /// The back-off before another try of `file` for `job`'s `attempt`
    /// passed: whether it still stages (the file is then next).
    pub(crate) fn stage_again(&mut self, job: JobId, attempt: usize, file: FileId) -> bool {
        let Some(st) = self.staging_of(job, attempt) else {
            return false;
        };
        st.pending.push_front(file);
        true
    }
}
