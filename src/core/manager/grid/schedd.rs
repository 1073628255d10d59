//! The pool's schedd as the placement keeps it: a job submitted to a site
//! is idle in the schedd until the negotiator matches it to a slot (when
//! the pool negotiates) and the schedd sends it to the site; its claim
//! then goes to the site's next idle job when it leaves its slot
//! (HTCondor's claim reuse, `core::wms`). Whether an attempt is still the
//! node's and still queued is the node life cycle's to say: each rule
//! here takes it as `queued(job, attempt)`, and adds what the pool knows
//! (sent to its site, a kill out).

use super::placement::Pool;
use crate::core::{JobId, SiteId, Time};

/// Where a job that reached the schedd goes next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Entered {
    /// Idle until a negotiation cycle, at this time if one must be
    /// scheduled.
    Idle(Option<Time>),
    /// The pool does not negotiate: it has its slot at once.
    Matched,
}

impl Pool {
    /// `job`'s `attempt` enters the schedd for `site` at `now`, listed for
    /// MonitQueue when `monit`.
    pub(crate) fn enter(&mut self, job: JobId, attempt: usize, site: SiteId, now: Time, monit: bool) -> Entered {
        self.active[site] += 1;
        if monit {
            self.idle.push_back((now, job, attempt));
        }
        if self.wms.negotiates() {
            Entered::Idle(self.wms.idle(job, attempt, site, now))
        } else {
            Entered::Matched
        }
    }

    /// Whether (job, attempt) waits in the schedd: `queued` (the node
    /// life cycle's word), not yet sent to its site, not being killed.
    pub(crate) fn waits(&self, job: JobId, attempt: usize, queued: impl Fn(JobId, usize) -> bool) -> bool {
        waiting(&self.at_site, &self.killing, queued)(job, attempt)
    }

    /// A negotiation cycle at `now`: the jobs matched to a slot, and the
    /// next cycle's time if one must be scheduled.
    pub(crate) fn negotiate(
        &mut self,
        now: Time,
        queued: impl Fn(JobId, usize) -> bool,
    ) -> (Vec<(JobId, usize)>, Option<Time>) {
        self.wms.negotiate(now, waiting(&self.at_site, &self.killing, queued))
    }

    /// The schedd sent `job` to its site's queue.
    pub(crate) fn sent(&mut self, job: JobId) {
        self.at_site[job] = true;
    }

    /// `job` left its slot at `site` (ended, failed, killed) at `now`: the
    /// job its claim goes to, the site's next idle one, if any.
    pub(crate) fn leave_slot(
        &mut self,
        job: JobId,
        site: SiteId,
        now: Time,
        queued: impl Fn(JobId, usize) -> bool,
    ) -> Option<JobId> {
        self.at_site[job] = false;
        if !self.wms.negotiates() {
            return None;
        }
        let waits = waiting(&self.at_site, &self.killing, queued);
        self.wms.release_claim(job, site, now, waits).map(|(next, _)| next)
    }
}

/// `queued` and what the pool knows: not yet sent to its site, no kill
/// out.
fn waiting<'a>(
    at_site: &'a [bool],
    killing: &'a [bool],
    queued: impl Fn(JobId, usize) -> bool + 'a,
) -> impl Fn(JobId, usize) -> bool + 'a {
    move |job, attempt| queued(job, attempt) && !at_site[job] && !killing[job]
}
