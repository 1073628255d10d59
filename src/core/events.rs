//! The one event queue of every simulator and timer list in gridbed: events
//! ordered by (nominal time, sequence), so that events due at the same
//! instant come out in the order they were pushed. That tie rule is what
//! makes a simulation deterministic for a seed (as simcore orders its events),
//! and one type for the manager's timers, the grid simulator and the farm
//! simulator keeps the rule the same everywhere.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::Time;

struct Due<E> {
    at: Time,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Due<E> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl<E> Eq for Due<E> {}
impl<E> PartialOrd for Due<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Due<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        self.at.total_cmp(&o.at).then(self.seq.cmp(&o.seq))
    }
}

/// Events by (time, push order). O(log n) a push or pop.
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Due<E>>>,
    seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedules `ev` at `at`, after everything already due then.
    pub fn push(&mut self, at: Time, ev: E) {
        self.seq += 1;
        self.heap.push(Reverse(Due {
            at,
            seq: self.seq,
            ev,
        }));
    }

    /// The earliest event and its time.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        self.heap.pop().map(|Reverse(d)| (d.at, d.ev))
    }

    /// The earliest event if it is due at or before `now`.
    pub fn pop_due(&mut self, now: Time) -> Option<E> {
        if self.peek_time()? > now {
            return None;
        }
        self.pop().map(|(_, ev)| ev)
    }

    /// When the earliest event is due.
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|Reverse(d)| d.at)
    }

    /// Events waiting.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether none waits.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_by_time_then_in_push_order() {
        let mut q = EventQueue::new();
        for (at, ev) in [(2.0, "c"), (1.0, "a"), (2.0, "d"), (1.0, "b"), (0.5, "z")] {
            q.push(at, ev);
        }
        assert_eq!(q.len(), 5);
        assert_eq!(q.pop_due(0.4), None);
        assert_eq!(q.pop_due(0.5), Some("z"));
        let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(rest, [(1.0, "a"), (1.0, "b"), (2.0, "c"), (2.0, "d")]);
        assert!(q.is_empty());
    }
}
