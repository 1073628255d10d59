//! Re-planning with back-off: how many times a job is planned again, and
//! how long it waits for room (or for a site that can run it) before it is,
//! giving up when no job anywhere ends meanwhile (seed 000 §4).

use super::*;

/// Waits for room in a row with no job ending anywhere in between, after
/// which (and after the manager's stall horizon) a job fails: waits double
/// up to 64 × `replan_backoff`, so ten are about 53 minutes of nominal time
/// at the default 10 s.
pub(crate) const MAX_STALLS: u32 = 10;

impl Placement {
    /// `job` is planned again at once (an input vanished, a site that can
    /// never fit it): the times it was, once more than `max`.
    pub(crate) fn replanned(&mut self, job: JobId, max: u32) -> Option<u32> {
        self.replans[job] += 1;
        let n = self.replans[job];
        (n > max).then_some(n)
    }

    /// `job` waits for room (or for a site that can run it to come back)
    /// before it is planned again: the wait, doubling from `backoff` up
    /// to 64 times it; and, when it gives up, its waits in a row and the
    /// time since the first in which no job ended anywhere.
    ///
    /// No room now is nobody's fault and passes as jobs end and release
    /// their pins. But when no job anywhere has ended in this job's last
    /// [`MAX_STALLS`] waits, over twice the longest a job can take to run,
    /// the waiting jobs are only taking turns at failing for room (a
    /// deadlock on disk space): the job gives up rather than wait for
    /// ever. Once no job ended for as long as the longest runs, its site's
    /// room is not freeing up: its next attempt goes elsewhere if it can
    /// (a selector that follows the data would choose it again).
    pub(crate) fn room_backoff(
        &mut self,
        job: JobId,
        now: Time,
        backoff: Time,
    ) -> (Time, Option<(u32, Time)>) {
        self.room_waits[job] += 1;
        let doubling = self.room_waits[job].min(7) - 1;
        let stall = &mut self.stall;
        if stall.progress_seen[job] == self.progress {
            stall.waits[job] += 1;
        } else {
            stall.waits[job] = 0;
            stall.since[job] = now;
        }
        stall.progress_seen[job] = self.progress;
        let stalled = now - stall.since[job];
        if stall.waits[job] > 0 && stalled >= stall.horizon / 2.0 {
            self.avoid_once[job] = Some(self.site_of[job]);
        }
        let gave_up = stall.waits[job] >= MAX_STALLS && stalled >= stall.horizon;
        let wait = backoff * f64::from(1u32 << doubling);
        (wait, gave_up.then_some((stall.waits[job] + 1, stalled)))
    }
}
