//! The transfers the manager has in flight (seed 000 §4: a prescript stages
//! each input from the least busy replica): their ids, how many each site
//! is serving (the "least busy" of source choice), and, with caching, the
//! transfer bringing a file to a site and the prescripts waiting for it
//! rather than fetching the same file again.

use crate::core::window::IdWindow;
use crate::core::{FileId, JobId, SiteId, TransferId};
use rustc_hash::FxHashMap as HashMap;

/// A transfer in flight; its id is also its index in the transfer records.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Flight {
    pub(crate) job: JobId,
    pub(crate) attempt: usize,
    pub(crate) file: FileId,
    pub(crate) from: SiteId,
    pub(crate) to: SiteId,
    /// What the transfer is for.
    pub(crate) kind: FlightKind,
}

/// What a transfer in flight is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlightKind {
    /// An input a prescript stages.
    Stage,
    /// An output on its way home (the `return` policy).
    StageOut,
    /// A copy k-replication moves away from a full cache.
    Replica,
    /// A final output on its way to the submit machine (`stage_out`).
    Final,
    /// A memoized job's output, copied from its twin's `source` to the
    /// job's submit machine (seed 003 §5.3, §8.4).
    Memo {
        /// The twin's output.
        source: FileId,
    },
}

/// A prescript's attempt: (job, attempt).
type Attempt = (JobId, usize);

/// The transfers in flight and who waits for them.
pub(crate) struct Transfers {
    flights: IdWindow<Flight>,
    next: TransferId,
    /// Per site: transfers it is serving now.
    serving: Vec<usize>,
    /// Caching: the transfer bringing a file to a site, while it is in flight.
    inbound: HashMap<(FileId, SiteId), TransferId>,
    /// Caching: prescripts waiting for an inbound transfer.
    waiters: HashMap<(FileId, SiteId), Vec<Attempt>>,
}

impl Transfers {
    /// No transfer yet, between `sites` sites.
    pub(crate) fn new(sites: usize) -> Self {
        Transfers {
            flights: IdWindow::default(),
            next: 0,
            serving: vec![0; sites],
            inbound: HashMap::default(),
            waiters: HashMap::default(),
        }
    }

    /// `flight` starts; returns its id (the next one: ids count up from 0).
    /// With `inbound`, later prescripts wanting its file at its destination
    /// wait for it.
    pub(crate) fn start(&mut self, flight: Flight, inbound: bool) -> TransferId {
        let id = self.next;
        self.next += 1;
        self.serving[flight.from] += 1;
        if inbound {
            self.inbound.insert((flight.file, flight.to), id);
        }
        self.flights.insert(id, flight);
        id
    }

    /// Transfer `id` ended: it is no longer in flight, its source serves
    /// one fewer, and its file is no longer on its way (unless another
    /// transfer brings it now). `None` when it was not in flight.
    pub(crate) fn end(&mut self, id: TransferId) -> Option<Flight> {
        let fl = self.flights.take(id)?;
        self.serving[fl.from] -= 1;
        let key = (fl.file, fl.to);
        if self.inbound.get(&key) == Some(&id) {
            self.inbound.remove(&key);
        }
        Some(fl)
    }

    /// Transfers `site` is serving now.
    pub(crate) fn serving(&self, site: SiteId) -> usize {
        self.serving[site]
    }

    /// Transfers in flight.
    pub(crate) fn in_flight(&self) -> usize {
        self.flights.len()
    }

    /// Whether a transfer is bringing `file` to `site` now.
    pub(crate) fn is_inbound(&self, file: FileId, site: SiteId) -> bool {
        self.inbound.contains_key(&(file, site))
    }

    /// `attempt` waits for the transfer bringing `file` to `site`.
    pub(crate) fn wait_for(&mut self, file: FileId, site: SiteId, attempt: Attempt) {
        self.waiters.entry((file, site)).or_default().push(attempt);
    }

    /// The attempts that waited for `file` at `site`, no longer waiting.
    pub(crate) fn take_waiters(&mut self, file: FileId, site: SiteId) -> Option<Vec<Attempt>> {
        self.waiters.remove(&(file, site))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn flight(file: FileId, from: SiteId, to: SiteId) -> Flight {
        Flight {
            job: 0,
            attempt: 0,
            file,
            from,
            to,
            kind: FlightKind::Stage,
        }
    }

    proptest! {
        /// Random starts and ends (ends of unknown and already ended ids
        /// too) on two files and three sites: every site serves exactly the
        /// live transfers it is the source of, ids never repeat, and a file
        /// is inbound exactly while the latest transfer that announced it
        /// is live.
        #[test]
        fn the_counts_follow_the_live_transfers(
            ops in proptest::collection::vec(
                prop_oneof![
                    (0..2usize, 0..3usize, 0..3usize, any::<bool>())
                        .prop_map(|(f, a, b, i)| (true, f, a, b, i, 0u64)),
                    (0..12u64).prop_map(|id| (false, 0, 0, 0, false, id)),
                ],
                0..40,
            )
        ) {
            let mut t = Transfers::new(3);
            let mut live: Vec<(TransferId, Flight)> = Vec::new();
            let mut announced: Vec<((FileId, SiteId), TransferId)> = Vec::new();
            let mut next = 0;
            for (start, f, from, to, inbound, id) in ops {
                if start {
                    let fl = flight(f, from, to);
                    let got = t.start(fl.clone(), inbound);
                    prop_assert_eq!(got, next);
                    next += 1;
                    live.push((got, fl));
                    if inbound {
                        announced.retain(|&(k, _)| k != (f, to));
                        announced.push(((f, to), got));
                    }
                } else {
                    let expected = live.iter().position(|(i, _)| *i == id).map(|p| live.remove(p).1);
                    prop_assert_eq!(t.end(id), expected);
                    announced.retain(|&(_, i)| i != id);
                }
                prop_assert_eq!(t.in_flight(), live.len());
                for s in 0..3 {
                    let serving = live.iter().filter(|(_, fl)| fl.from == s).count();
                    prop_assert_eq!(t.serving(s), serving);
                    for f in 0..2 {
                        let on_way = announced.iter().any(|&(k, _)| k == (f, s));
                        prop_assert_eq!(t.is_inbound(f, s), on_way);
                    }
                }
            }
        }
    }

    #[test]
    fn waiters_are_handed_back_once() {
        let mut t = Transfers::new(1);
        t.wait_for(3, 0, (1, 0));
        t.wait_for(3, 0, (2, 1));
        assert_eq!(t.take_waiters(3, 0), Some(vec![(1, 0), (2, 1)]));
        assert_eq!(t.take_waiters(3, 0), None);
    }
}
