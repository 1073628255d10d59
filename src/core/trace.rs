//! One engine-neutral trace of a run: every job attempt's phases, every
//! transfer and every eviction, as time-stamped events (the habit of
//! dslab's serde-tagged trace log). Both engines feed the same manager, whose
//! control records hold exactly these facts, so the trace of a simulated and
//! of a live run are written by one function and compared like with like
//! (`gridbed run --trace`, `gridbed validate`).

use serde::Serialize;

use super::records::{Outcome, Records};
use super::{FileId, JobId, SiteId, Time, TransferFailure, TransferId};

/// What happened at one instant of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum TraceEvent<'a> {
    /// All the job's parents ended.
    Ready {
        /// Nominal time.
        t: Time,
        /// The job.
        job: JobId,
    },
    /// A prescript chose `site` for the job's `attempt`.
    Prescript {
        /// Nominal time.
        t: Time,
        /// The job.
        job: JobId,
        /// Its attempt (0-based).
        attempt: usize,
        /// The chosen site.
        site: SiteId,
    },
    /// Every input is staged: the job entered the site's FIFO queue.
    Submitted {
        /// Nominal time.
        t: Time,
        /// The job.
        job: JobId,
        /// Its attempt.
        attempt: usize,
        /// The site.
        site: SiteId,
    },
    /// The job took a CPU slot.
    Started {
        /// Nominal time.
        t: Time,
        /// The job.
        job: JobId,
        /// Its attempt.
        attempt: usize,
        /// The site.
        site: SiteId,
    },
    /// The attempt is over, well or not.
    Ended {
        /// Nominal time.
        t: Time,
        /// The job.
        job: JobId,
        /// Its attempt.
        attempt: usize,
        /// The site.
        site: SiteId,
        /// How it ended.
        outcome: &'a Outcome,
    },
    /// A transfer began.
    TransferStarted {
        /// Nominal time.
        t: Time,
        /// Its id.
        id: TransferId,
        /// The job it stages.
        job: JobId,
        /// The file.
        file: FileId,
        /// Source site.
        from: SiteId,
        /// Destination site.
        to: SiteId,
    },
    /// A transfer ended.
    TransferEnded {
        /// Nominal time.
        t: Time,
        /// Its id.
        id: TransferId,
        /// Nominal bytes moved.
        bytes: u64,
        /// Why it failed, if it did.
        failure: Option<&'a TransferFailure>,
    },
    /// A site evicted a replica to make room.
    Evicted {
        /// Nominal time.
        t: Time,
        /// The site.
        site: SiteId,
        /// The file.
        file: FileId,
    },
    /// A fault happened at a site (`[[fault]]`).
    Fault {
        /// Nominal time.
        t: Time,
        /// The site.
        site: SiteId,
        /// What happened.
        fault: &'a super::faults::Fault,
    },
}

impl TraceEvent<'_> {
    /// When it happened.
    pub fn time(&self) -> Time {
        match *self {
            TraceEvent::Ready { t, .. }
            | TraceEvent::Prescript { t, .. }
            | TraceEvent::Submitted { t, .. }
            | TraceEvent::Started { t, .. }
            | TraceEvent::Ended { t, .. }
            | TraceEvent::TransferStarted { t, .. }
            | TraceEvent::TransferEnded { t, .. }
            | TraceEvent::Evicted { t, .. }
            | TraceEvent::Fault { t, .. } => t,
        }
    }

    /// Its kind, as the JSON `event` tag writes it.
    pub fn kind(&self) -> &'static str {
        match self {
            TraceEvent::Ready { .. } => "ready",
            TraceEvent::Prescript { .. } => "prescript",
            TraceEvent::Submitted { .. } => "submitted",
            TraceEvent::Started { .. } => "started",
            TraceEvent::Ended { .. } => "ended",
            TraceEvent::TransferStarted { .. } => "transfer_started",
            TraceEvent::TransferEnded { .. } => "transfer_ended",
            TraceEvent::Evicted { .. } => "evicted",
            TraceEvent::Fault { .. } => "fault",
        }
    }
}

impl Records {
    /// The run as events in time order (ties in the order of the list
    /// above, then by job or transfer), whichever engine ran it.
    pub fn trace(&self) -> Vec<TraceEvent<'_>> {
        let mut events = Vec::new();
        for (job, rec) in self.jobs.iter().enumerate() {
            if let Some(t) = rec.ready {
                events.push(TraceEvent::Ready { t, job });
            }
            for (attempt, a) in rec.attempts.iter().enumerate() {
                let site = a.site;
                events.push(TraceEvent::Prescript {
                    t: a.prescript,
                    job,
                    attempt,
                    site,
                });
                if let Some(t) = a.submitted {
                    events.push(TraceEvent::Submitted {
                        t,
                        job,
                        attempt,
                        site,
                    });
                }
                if let Some(t) = a.started {
                    events.push(TraceEvent::Started {
                        t,
                        job,
                        attempt,
                        site,
                    });
                }
                if let Some(t) = a.ended {
                    events.push(TraceEvent::Ended {
                        t,
                        job,
                        attempt,
                        site,
                        outcome: &a.outcome,
                    });
                }
            }
        }
        for tr in &self.transfers {
            events.push(TraceEvent::TransferStarted {
                t: tr.start,
                id: tr.id,
                job: tr.job,
                file: tr.file,
                from: tr.from,
                to: tr.to,
            });
            if let Some(t) = tr.end {
                events.push(TraceEvent::TransferEnded {
                    t,
                    id: tr.id,
                    bytes: tr.bytes,
                    failure: tr.failure.as_deref(),
                });
            }
        }
        for e in &self.evictions {
            events.push(TraceEvent::Evicted {
                t: e.time,
                site: e.site,
                file: e.file,
            });
        }
        for f in &self.faults {
            events.push(TraceEvent::Fault {
                t: f.time,
                site: f.site,
                fault: &f.fault,
            });
        }
        // A stable sort keeps the build order for ties.
        events.sort_by(|a, b| a.time().total_cmp(&b.time()));
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::records::{Attempt, JobRecord, TransferRecord};

    #[test]
    fn a_job_and_its_transfer_become_events_in_time_order() {
        let r = Records {
            jobs: vec![JobRecord {
                ready: Some(0.0),
                attempts: vec![Attempt {
                    site: 1,
                    prescript: 1.0,
                    submitted: Some(7.0),
                    started: Some(7.0),
                    finished: Some(37.0),
                    ended: Some(37.0),
                    outcome: Outcome::Ended,
                    transfers: 1,
                    exit: Some(0),
                    scripts: Vec::new(),
                    members: Vec::new(),
                }],
                ..Default::default()
            }],
            transfers: vec![TransferRecord {
                id: 0,
                job: 0,
                file: 3,
                from: 0,
                to: 1,
                start: 1.0,
                end: Some(6.0),
                bytes: 5,
                failure: None,
                retry: false,
            }],
            ..Default::default()
        };
        let trace = r.trace();
        let kinds: Vec<_> = trace.iter().map(TraceEvent::kind).collect();
        assert_eq!(
            kinds,
            [
                "ready",
                "prescript",
                "transfer_started",
                "transfer_ended",
                "submitted",
                "started",
                "ended"
            ]
        );
        let json = serde_json::to_string(&trace[3]).unwrap();
        assert_eq!(
            json,
            r#"{"event":"transfer_ended","t":6.0,"id":0,"bytes":5,"failure":null}"#
        );
    }
}
