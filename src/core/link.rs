//! The one model of a shared link in gridbed's simulators: a bandwidth shared
//! fairly among the streams on it, each also capped (processor sharing with a
//! per-stream cap). A grid site's file server (seed 000: a site's gridftp
//! egress, 1 MB/s a stream) and the farm's store and executor links (seed
//! 001: GPFS's aggregate bandwidth, each node's NIC) are this model; the live
//! engine reaches the same shares with token buckets taken in turn.
//!
//! All streams of a link run at the same rate, `min(cap, bandwidth / n)`, so
//! the link keeps one clock of "bytes served per stream since the start" and
//! a heap of the marks at which each stream ends: a start or an end costs
//! O(log n), however many streams share the link.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::Time;

/// `f64` with a total order, for the heap.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Mark(f64);
impl Eq for Mark {}
impl PartialOrd for Mark {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Mark {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0)
    }
}

/// A link shared by streams identified by `K`. See the module docs.
#[derive(Debug)]
pub struct SharedLink<K> {
    bandwidth: f64,
    cap: f64,
    /// Streams by the mark of the per-stream clock at which they end.
    active: BinaryHeap<Reverse<(Mark, K)>>,
    /// Bytes served per stream since the start (the virtual clock).
    served: f64,
    /// When `served` was last brought up to date.
    last: Time,
    /// Bumped by every [`SharedLink::next_end`], so that an end scheduled
    /// before the stream set changed is recognised as stale.
    generation: u64,
}

impl<K: Ord + Copy> SharedLink<K> {
    /// A link of `bandwidth` bytes/s in all, `cap` bytes/s a stream (either
    /// may be infinite).
    pub fn new(bandwidth: f64, cap: f64) -> Self {
        SharedLink {
            bandwidth,
            cap,
            active: BinaryHeap::new(),
            served: 0.0,
            last: 0.0,
            generation: 0,
        }
    }

    /// Bytes per second of each stream now.
    pub fn rate(&self) -> f64 {
        let n = self.active.len();
        if n == 0 {
            return 0.0;
        }
        self.cap.min(self.bandwidth / n as f64)
    }

    /// Streams on the link.
    pub fn len(&self) -> usize {
        self.active.len()
    }

    /// Whether no stream is on the link.
    pub fn is_empty(&self) -> bool {
        self.active.is_empty()
    }

    fn advance(&mut self, now: Time) {
        let r = self.rate();
        if r.is_finite() && now > self.last {
            self.served += r * (now - self.last);
        }
        self.last = now;
    }

    /// Stream `id` of `bytes` starts at `now`. Call [`SharedLink::next_end`]
    /// after, since every stream's rate changed.
    pub fn start(&mut self, now: Time, id: K, bytes: f64) {
        self.advance(now);
        self.active.push(Reverse((Mark(self.served + bytes), id)));
    }

    /// Stream `id` stops at `now` (its source crashed), its bytes unsent.
    /// Call [`SharedLink::next_end`] after, since every stream's rate changed.
    pub fn remove(&mut self, now: Time, id: K) {
        self.advance(now);
        self.active.retain(|Reverse((_, k))| *k != id);
    }

    /// When the first stream ends at today's rate, and the generation to hand
    /// back to [`SharedLink::take_ended`] then; `None` when the link is idle.
    /// Any end computed earlier is stale from now on.
    pub fn next_end(&mut self, now: Time) -> Option<(Time, u64)> {
        self.generation += 1;
        let Reverse((Mark(mark), _)) = self.active.peek()?;
        let r = self.rate();
        let dt = if r.is_finite() {
            ((mark - self.served) / r).max(0.0)
        } else {
            0.0
        };
        Some((now + dt, self.generation))
    }

    /// The streams that ended by `now`, for the end scheduled as
    /// `generation`; `None` when that schedule is stale. At least the stream
    /// the schedule was for ends, so rounding never stalls a link.
    pub fn take_ended(&mut self, now: Time, generation: u64) -> Option<Vec<K>> {
        if generation != self.generation {
            return None;
        }
        self.advance(now);
        let unlimited = !self.rate().is_finite();
        let tolerance = 1e-9 * self.served.abs().max(1.0) + 1e-6;
        let mut done = Vec::new();
        while let Some(Reverse((Mark(mark), id))) = self.active.peek().copied() {
            if unlimited || mark <= self.served + tolerance || done.is_empty() {
                self.active.pop();
                done.push(id);
            } else {
                break;
            }
        }
        Some(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the link to idle from `now`; the end time of every stream.
    fn drain(link: &mut SharedLink<u32>, mut now: Time) -> Vec<(u32, Time)> {
        let mut ends = Vec::new();
        while let Some((at, generation)) = link.next_end(now) {
            now = at;
            for id in link.take_ended(now, generation).unwrap() {
                ends.push((id, now));
            }
        }
        ends
    }

    #[test]
    fn streams_share_the_bandwidth_fairly_and_each_is_capped() {
        // 10 B/s shared, 4 B/s a stream: two streams run at 4 B/s each.
        let mut link = SharedLink::new(10.0, 4.0);
        link.start(0.0, 1, 40.0);
        link.start(0.0, 2, 80.0);
        assert_eq!(link.rate(), 4.0);
        // Three streams share 10 B/s: 3.33 B/s each.
        link.start(0.0, 3, 10.0);
        assert!((link.rate() - 10.0 / 3.0).abs() < 1e-12);
        let ends = drain(&mut link, 0.0);
        // Stream 3 ends at 3 s (10 B at 10/3); then 1 and 2 run at 4 B/s:
        // 1 has 30 B left → 10.5 s; 2 has 70 B left, alone after that at 4 → 20.5 s.
        let want = [(3, 3.0), (1, 10.5), (2, 20.5)];
        assert_eq!(ends.len(), 3);
        for ((id, t), (wid, wt)) in ends.iter().zip(want) {
            assert_eq!(*id, wid);
            assert!((t - wt).abs() < 1e-9, "{id} ends at {t}, expected {wt}");
        }
    }

    #[test]
    fn a_change_makes_the_scheduled_end_stale() {
        let mut link = SharedLink::new(10.0, f64::INFINITY);
        link.start(0.0, 1, 100.0);
        let (at, old) = link.next_end(0.0).unwrap();
        assert_eq!(at, 10.0);
        link.start(5.0, 2, 10.0);
        let (at, new) = link.next_end(5.0).unwrap();
        assert_eq!(at, 7.0, "50 B left of 1, 10 of 2, at 5 B/s each");
        assert_eq!(link.take_ended(at, old), None);
        assert_eq!(link.take_ended(at, new), Some(vec![2]));
    }

    #[test]
    fn an_unlimited_link_ends_every_stream_at_once() {
        let mut link = SharedLink::new(f64::INFINITY, f64::INFINITY);
        link.start(1.0, 1, 5.0);
        link.start(1.0, 2, 7.0);
        let (at, g) = link.next_end(1.0).unwrap();
        assert_eq!(at, 1.0);
        assert_eq!(link.take_ended(at, g), Some(vec![1, 2]));
        assert!(link.is_empty());
        assert_eq!(link.next_end(1.0), None);
    }
}
