//! The ready queue: jobs whose parents are over, waiting for a prescript
//! slot (DAGMan's `_readyQ`, filled by `Dag::StartNode` in HTCondor's
//! source). Each DAGMan orders its own: first come first, or by `PRIORITY`
//! (higher first, then first come); `DAGMAN_SUBMIT_DEPTH_FIRST` puts a
//! newly ready job at the head instead of the tail, last come first among
//! equal priorities.
//!
//! A sub-DAG is a DAGMan of its own with its own `CONFIG`, so its order
//! may differ from the DAG above it. Its jobs then wait in a lane of their
//! own, and the lanes share the submit host's prescript slots by turns:
//! each job that becomes ready gives its lane one turn, stamped with its
//! priority and arrival, and the next slot goes to the highest-priority,
//! oldest turn, whose lane then hands over the job at its own head. Every
//! DAGMan is served as often, and as early, as its jobs arrived; which of
//! its jobs goes is its own order. When every DAGMan is first come first
//! served this is one queue's order exactly, so one lane is kept.
//!
//! A DAGMan at its `DAGMAN_MAX_JOBS_SUBMITTED` submits nothing more until a
//! job of its own leaves the queue (`Dag::SubmitReadyJobs` stops at a full
//! DAGMan): its ready jobs stay where they are in its order, so a job that
//! becomes ready meanwhile goes before them when it would (depth-first).
//! [`ReadyQueue::pop_open`] asks whether a lane's head may go; a lane whose
//! head may not is closed, its turns set aside, until it gets a job or its
//! DAGMan is [reopened](ReadyQueue::reopen). DAGMans whose throttle can
//! close keep lanes of their own, so one closed lane holds up no other.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, VecDeque};

use super::JobId;

/// One DAGMan's ready jobs in its own order: a FIFO (or LIFO, depth-first)
/// deque until priorities are set, a heap after.
#[derive(Debug, Clone, Default)]
struct Lane {
    fifo: VecDeque<JobId>,
    heap: BinaryHeap<(i32, Reverse<u64>, JobId)>,
    seq: u64,
    depth_first: bool,
}

impl Lane {
    fn push(&mut self, job: JobId, priority: Option<&[i32]>) {
        match priority {
            None if self.depth_first => self.fifo.push_front(job),
            None => self.fifo.push_back(job),
            Some(p) => {
                self.seq += 1;
                let order = if self.depth_first {
                    u64::MAX - self.seq
                } else {
                    self.seq
                };
                self.heap.push((p[job], Reverse(order), job));
            }
        }
    }

    /// The job [`pop`](Self::pop) would give, without taking it.
    fn head(&self) -> Option<JobId> {
        match self.heap.peek() {
            Some(&(_, _, j)) => Some(j),
            None => self.fifo.front().copied(),
        }
    }

    /// The head: only one of the deque and the heap holds jobs at a time.
    fn pop(&mut self) -> Option<JobId> {
        match self.heap.pop() {
            Some((_, _, j)) => Some(j),
            None => self.fifo.pop_front(),
        }
    }

    fn peek(&self, n: usize) -> Vec<JobId> {
        if self.heap.is_empty() {
            return self.fifo.iter().take(n).copied().collect();
        }
        let mut next: Vec<_> = self.heap.iter().copied().collect();
        if next.len() > n {
            next.select_nth_unstable_by(n, |a, b| b.cmp(a));
            next.truncate(n);
        }
        next.sort_unstable_by(|a, b| b.cmp(a));
        next.into_iter().map(|(_, _, j)| j).collect()
    }

    fn len(&self) -> usize {
        self.fifo.len() + self.heap.len()
    }

    /// Empties the lane, its jobs in the order they came.
    fn drain_arrivals(&mut self) -> Vec<JobId> {
        let mut fifo: Vec<JobId> = self.fifo.drain(..).collect();
        let mut heap: Vec<_> = self.heap.drain().collect();
        if self.depth_first {
            fifo.reverse();
        }
        // Arrival is the order key, or its mirror when depth-first.
        heap.sort_unstable_by_key(|&(_, Reverse(order), _)| {
            if self.depth_first {
                u64::MAX - order
            } else {
                order
            }
        });
        fifo.into_iter()
            .chain(heap.into_iter().map(|(_, _, j)| j))
            .collect()
    }
}

/// The ready jobs of every DAGMan of the run, in the order their prescripts
/// start (see the module docs).
#[derive(Debug, Clone)]
pub struct ReadyQueue {
    priority: Option<Vec<i32>>,
    /// One per DAGMan, the top DAG's first; one lane for all when every
    /// DAGMan is first come first served.
    lanes: Vec<Lane>,
    /// Each job's lane (empty while there is one lane).
    lane_of: Vec<u32>,
    /// With several lanes: one turn per queued job of an open lane.
    turns: BTreeSet<Turn>,
    /// Per lane: its head could not go when last asked (see `pop_open`).
    closed: Vec<bool>,
    /// Per lane: its turns set aside while it is closed.
    parked: Vec<Vec<Turn>>,
    /// Turns set aside in all.
    parked_len: usize,
    seq: u64,
}

/// A lane's right to the next slot: (priority, arrival, lane).
type Turn = (Reverse<i32>, u64, u32);

impl Default for ReadyQueue {
    fn default() -> Self {
        ReadyQueue {
            priority: None,
            lanes: vec![Lane::default()],
            lane_of: Vec::new(),
            turns: BTreeSet::new(),
            closed: vec![false],
            parked: vec![Vec::new()],
            parked_len: 0,
            seq: 0,
        }
    }
}

impl ReadyQueue {
    /// A FIFO queue.
    pub fn fifo() -> Self {
        ReadyQueue::default()
    }

    /// A queue that serves the newest ready job first.
    pub fn depth_first() -> Self {
        let mut q = ReadyQueue::default();
        q.lanes[0].depth_first = true;
        q
    }

    /// Orders by `priority` from now on (the jobs queued keep their order
    /// among equals).
    pub fn set_priorities(&mut self, priority: Vec<i32>) {
        if self.priority.is_none() && priority.iter().all(|&p| p == 0) {
            return;
        }
        let queued = self.drain_arrivals();
        self.priority = Some(priority);
        for j in queued {
            self.push(j);
        }
    }

    /// Gives each DAGMan its own order: `lane_of[job]` is the DAGMan of each
    /// job (0 the top DAG), `depth_first[d]` whether DAGMan `d` serves its
    /// newest ready job first; `throttled`: some DAGMan's lane may close
    /// (see [`pop_open`](Self::pop_open)). The jobs queued keep their
    /// arrival order.
    pub fn set_dagmans(&mut self, lane_of: Vec<usize>, depth_first: Vec<bool>, throttled: bool) {
        let queued = self.drain_arrivals();
        // One first-come queue gives the lanes' turns exactly, as long as
        // no lane closes.
        let lanes = match throttled || depth_first.iter().any(|&d| d) {
            true => depth_first,
            false => vec![false],
        };
        self.lane_of = match lanes.len() {
            1 => Vec::new(),
            _ => lane_of.into_iter().map(|d| d as u32).collect(),
        };
        self.lanes = (lanes.into_iter())
            .map(|depth_first| Lane {
                depth_first,
                ..Lane::default()
            })
            .collect();
        self.closed = vec![false; self.lanes.len()];
        self.parked = vec![Vec::new(); self.lanes.len()];
        queued.into_iter().for_each(|j| self.push(j));
    }

    /// Jobs `from..` (a sub-DAG read as the run goes) take their priorities
    /// from `priority`, every job's: the cost is the new jobs', unless they
    /// bring the first priority that is not 0.
    pub fn extend_priorities(&mut self, priority: &[i32], from: usize) {
        match &mut self.priority {
            Some(p) => p.extend_from_slice(priority.get(p.len()..).unwrap_or_default()),
            None if priority.get(from..).unwrap_or_default().iter().all(|&p| p == 0) => {}
            None => self.set_priorities(priority.to_vec()),
        }
    }

    /// Jobs numbered after those it knows (a sub-DAG read as the run goes)
    /// belong to DAGMans `dagman_of` (see [`set_dagmans`](Self::set_dagmans)),
    /// and each DAGMan `d` of `lanes` has its order `depth_first` (a lane
    /// added if it has none; one already there must be empty). False where
    /// that is not enough, and [`set_dagmans`](Self::set_dagmans) must
    /// order them all: one queue served all the DAGMans, and now a lane may
    /// close (`throttled`) or serves depth first.
    pub fn extend_dagmans(
        &mut self,
        dagman_of: impl IntoIterator<Item = usize>,
        lanes: &[(usize, bool)],
        throttled: bool,
    ) -> bool {
        if self.lanes.len() == 1 {
            return !throttled && !self.lanes[0].depth_first && lanes.iter().all(|l| !l.1);
        }
        for &(d, depth_first) in lanes {
            if d >= self.lanes.len() {
                self.lanes.resize_with(d + 1, Lane::default);
                self.closed.resize(d + 1, false);
                self.parked.resize(d + 1, Vec::new());
            } else if self.lanes[d].len() > 0 {
                return false;
            }
            self.lanes[d].depth_first = depth_first;
        }
        self.lane_of.extend(dagman_of.into_iter().map(|d| d as u32));
        true
    }

    /// Queues `job`.
    pub fn push(&mut self, job: JobId) {
        let priority = self.priority.as_deref();
        if self.lanes.len() == 1 {
            // Its head may have changed: asked again.
            self.closed[0] = false;
            self.lanes[0].push(job, priority);
            return;
        }
        let lane = self.lane_of[job];
        self.seq += 1;
        let p = priority.map_or(0, |p| p[job]);
        self.turns.insert((Reverse(p), self.seq, lane));
        self.lanes[lane as usize].push(job, priority);
    }

    /// The next job to plan, every lane open.
    pub fn pop(&mut self) -> Option<JobId> {
        (0..self.lanes.len()).for_each(|l| self.reopen(l));
        self.pop_open(|_| true)
    }

    /// The next job to plan whose lane is open: a lane whose head `open`
    /// refuses is closed, and its turns skipped, until it gets a job or is
    /// [reopened](Self::reopen). Where a lane may close it holds one
    /// DAGMan's jobs (see [`set_dagmans`](Self::set_dagmans)).
    pub fn pop_open(&mut self, mut open: impl FnMut(JobId) -> bool) -> Option<JobId> {
        if self.lanes.len() == 1 {
            let head = self.lanes[0].head().filter(|_| !self.closed[0])?;
            if !open(head) {
                self.closed[0] = true;
                return None;
            }
            return self.lanes[0].pop();
        }
        // The turn taken has its lane's highest priority, which its head has.
        while let Some(turn) = self.turns.pop_first() {
            let lane = turn.2 as usize;
            let head = self.lanes[lane].head()?;
            if open(head) {
                return self.lanes[lane].pop();
            }
            self.closed[lane] = true;
            self.parked[lane].push(turn);
            self.parked_len += 1;
        }
        None
    }

    /// DAGMan `dagman` may submit again: its lane is asked again.
    pub fn reopen(&mut self, dagman: usize) {
        let lane = if self.lanes.len() == 1 { 0 } else { dagman };
        // (A DAGMan with no lane yet has nothing queued.)
        if !self.closed.get_mut(lane).is_some_and(std::mem::take) {
            return;
        }
        self.parked_len -= self.parked[lane].len();
        self.turns.extend(self.parked[lane].drain(..));
    }

    /// Whether a queued job's lane is open: [`pop_open`](Self::pop_open)
    /// may give one.
    pub fn any_open(&self) -> bool {
        match self.lanes.len() {
            1 => !self.closed[0] && self.lanes[0].len() > 0,
            _ => !self.turns.is_empty(),
        }
    }

    /// Up to `n` queued jobs in the order [`pop`](Self::pop) would give
    /// them, without taking them.
    pub fn peek(&self, n: usize) -> Vec<JobId> {
        if self.lanes.len() == 1 {
            return self.lanes[0].peek(n);
        }
        let turns: Vec<u32> = self.turns.iter().take(n).map(|t| t.2).collect();
        let mut taken: HashMap<u32, usize> = HashMap::new();
        for &l in &turns {
            *taken.entry(l).or_default() += 1;
        }
        let mut heads: HashMap<u32, std::vec::IntoIter<JobId>> = taken
            .into_iter()
            .map(|(l, k)| (l, self.lanes[l as usize].peek(k).into_iter()))
            .collect();
        turns
            .into_iter()
            .filter_map(|l| heads.get_mut(&l)?.next())
            .collect()
    }

    /// Jobs queued.
    pub fn len(&self) -> usize {
        match self.lanes.len() {
            1 => self.lanes[0].len(),
            // One turn per queued job.
            _ => self.turns.len() + self.parked_len,
        }
    }

    /// Whether none is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Empties the queue, its jobs in the order they came: each lane's in
    /// its order of arrival, the lanes' merged by their turns.
    fn drain_arrivals(&mut self) -> Vec<JobId> {
        (0..self.lanes.len()).for_each(|l| self.reopen(l));
        if self.lanes.len() == 1 {
            return self.lanes[0].drain_arrivals();
        }
        let mut turns: Vec<(u64, u32)> = self.turns.iter().map(|t| (t.1, t.2)).collect();
        self.turns.clear();
        turns.sort_unstable();
        let mut arrivals: Vec<std::vec::IntoIter<JobId>> = self
            .lanes
            .iter_mut()
            .map(|l| l.drain_arrivals().into_iter())
            .collect();
        turns
            .into_iter()
            .filter_map(|(_, l)| arrivals[l as usize].next())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(q: &mut ReadyQueue) -> Vec<JobId> {
        std::iter::from_fn(|| q.pop()).collect()
    }

    #[test]
    fn priorities_release_higher_first_and_ties_in_arrival_order() {
        let mut q = ReadyQueue::fifo();
        for j in 0..4 {
            q.push(j);
        }
        q.set_priorities(vec![0, 5, -1, 5]);
        q.push(2);
        assert_eq!(drain(&mut q), [1, 3, 0, 2, 2]);
        let mut fifo = ReadyQueue::fifo();
        fifo.set_priorities(vec![0; 3]);
        fifo.push(2);
        fifo.push(0);
        assert_eq!(fifo.pop(), Some(2));
    }

    #[test]
    fn depth_first_serves_the_newest_first_among_equal_priorities() {
        let mut q = ReadyQueue::depth_first();
        for j in 0..3 {
            q.push(j);
        }
        assert_eq!(q.pop(), Some(2));
        q.push(3);
        assert_eq!(q.peek(3), [3, 1, 0]);
        // Priorities first; the queued keep their order when they are set.
        q.set_priorities(vec![0, 0, 0, 0, 7]);
        assert_eq!(q.peek(3), [3, 1, 0]);
        q.push(4);
        q.push(2);
        assert_eq!(drain(&mut q), [4, 2, 3, 1, 0]);
    }

    #[test]
    fn peek_gives_what_pop_would_without_taking_it() {
        let mut single = ReadyQueue::fifo();
        let mut lanes = ReadyQueue::fifo();
        lanes.set_dagmans(vec![0, 1, 1, 0, 1], vec![false, true], false);
        for q in [&mut single, &mut lanes] {
            for j in [4, 1, 3] {
                q.push(j);
            }
            assert_eq!(q.peek(2).len(), 2);
            q.set_priorities(vec![0, 5, -1, 5, 2]);
            q.push(0);
            q.push(2);
            for n in 0..=6 {
                let mut taken = q.clone();
                let popped: Vec<_> = std::iter::from_fn(|| taken.pop()).take(n).collect();
                assert_eq!(q.peek(n), popped, "peek({n})");
            }
            assert_eq!(q.len(), 5);
        }
    }

    /// A depth-first sub-DAG under a first-come top DAG: the sub-DAG's
    /// newest job goes at each of its turns, and its turns fall where its
    /// jobs arrived among the top DAG's.
    #[test]
    fn a_depth_first_subdag_takes_its_newest_job_at_its_own_turns() {
        let mut q = ReadyQueue::fifo();
        // Jobs 0-2 the top DAG's, 3-6 the sub-DAG's.
        q.set_dagmans(vec![0, 0, 0, 1, 1, 1, 1], vec![false, true], false);
        for j in [0, 3, 4, 1, 5, 2, 6] {
            q.push(j);
        }
        assert_eq!(q.peek(7), [0, 6, 5, 1, 4, 2, 3]);
        assert_eq!(drain(&mut q), [0, 6, 5, 1, 4, 2, 3]);
        // The other way round: the top DAG depth-first, the sub-DAG not.
        let mut q = ReadyQueue::depth_first();
        q.set_dagmans(vec![0, 0, 0, 1, 1, 1, 1], vec![true, false], false);
        for j in [0, 3, 4, 1, 5, 2, 6] {
            q.push(j);
        }
        assert_eq!(drain(&mut q), [2, 3, 4, 1, 5, 0, 6]);
    }

    #[test]
    fn first_come_dagmans_keep_one_queue_and_depth_first_ones_their_own_orders() {
        let arrivals = [0, 3, 4, 1, 5, 2, 6];
        let lane_of = vec![0, 0, 0, 1, 1, 1, 1];
        let mut one = ReadyQueue::fifo();
        let mut lanes = ReadyQueue::fifo();
        lanes.set_dagmans(lane_of.clone(), vec![false, false], false);
        assert_eq!(lanes.lanes.len(), 1, "no lanes where one queue is the same");
        for j in arrivals {
            one.push(j);
            lanes.push(j);
        }
        assert_eq!(drain(&mut lanes), drain(&mut one));
        // Both depth-first: each DAGMan its newest first, not the run's.
        let mut q = ReadyQueue::depth_first();
        q.set_dagmans(lane_of, vec![true, true], false);
        for j in arrivals {
            q.push(j);
        }
        assert_eq!(drain(&mut q), [2, 6, 5, 1, 4, 0, 3]);
    }

    #[test]
    fn jobs_queued_before_the_dagmans_are_set_keep_their_arrival_order() {
        let mut q = ReadyQueue::fifo();
        for j in [2, 0, 1] {
            q.push(j);
        }
        q.set_priorities(vec![0, 1, 1]);
        q.set_dagmans(vec![0, 1, 1], vec![false, true], false);
        // The sub-DAG's two jobs (priority 1) go first, newest first.
        assert_eq!(drain(&mut q), [1, 2, 0]);
    }

    /// What [`ReadyQueue::pop_open`] means, written plainly: each push
    /// gives its lane a turn; the turns are tried best first (priority,
    /// then arrival) and the first whose lane's head is open gives that
    /// head, its lane's best job (priority, then oldest, or newest when
    /// depth-first).
    struct Plain {
        lane_of: Vec<usize>,
        priority: Vec<i32>,
        depth_first: Vec<bool>,
        queued: Vec<(JobId, u64)>,
        turns: Vec<(i32, u64, usize)>,
        seq: u64,
    }

    impl Plain {
        fn push(&mut self, job: JobId) {
            self.seq += 1;
            self.queued.push((job, self.seq));
            let lane = self.lane_of[job];
            self.turns.push((self.priority[job], self.seq, lane));
        }

        fn head(&self, lane: usize) -> Option<JobId> {
            let key = |&(j, at): &(JobId, u64)| {
                let at = at as i64;
                (self.priority[j], if self.depth_first[lane] { at } else { -at })
            };
            let of_lane = self.queued.iter().filter(|(j, _)| self.lane_of[*j] == lane);
            of_lane.max_by_key(|q| key(q)).map(|&(j, _)| j)
        }

        fn pop_open(&mut self, open: impl Fn(JobId) -> bool) -> Option<JobId> {
            self.turns.sort_by_key(|&(p, at, _)| (Reverse(p), at));
            for t in 0..self.turns.len() {
                let head = self.head(self.turns[t].2)?;
                if open(head) {
                    self.turns.remove(t);
                    self.queued.retain(|&(j, _)| j != head);
                    return Some(head);
                }
            }
            None
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push,
        Pop,
        Close(usize),
        Open(usize),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            4 => Just(Op::Push),
            3 => Just(Op::Pop),
            2 => (0..3usize).prop_map(Op::Close),
            2 => (0..3usize).prop_map(Op::Open),
        ]
    }

    proptest::proptest! {
        /// Random pushes, pops and DAGMans closing and opening (each opened
        /// one reopened, as the manager does when a job of its leaves the
        /// queue), one DAGMan or three with lanes of their own, priorities
        /// with many ties or none: every pop gives what the plain
        /// statement gives, and a queue that could give a job says so.
        #[test]
        fn pop_open_gives_the_best_turn_of_an_open_lane(
            lanes in proptest::collection::vec(0..3usize, 40),
            priority in proptest::collection::vec(-1..2i32, 40),
            prioritised in 0..3u8,
            depth_first in proptest::collection::vec(proptest::bool::ANY, 3),
            one_dagman: bool,
            grafted: bool,
            ops in proptest::collection::vec(op(), 0..80),
        ) {
            let n = lanes.len();
            let mut lane_of = if one_dagman { vec![0; n] } else { lanes };
            // Grafted: DAGMan 2's jobs come last, and the queue knows them
            // (and DAGMan 2) only once the first of them is pushed, as a
            // sub-DAG read as the run goes.
            let cut = match grafted {
                true => {
                    lane_of.sort_by_key(|&d| d == 2);
                    lane_of.iter().position(|&d| d == 2).unwrap_or(n)
                }
                false => n,
            };
            // Priorities for none, all, or only the grafted jobs.
            let priority: Vec<i32> = (priority.iter().enumerate())
                .map(|(j, &p)| match prioritised {
                    0 => 0,
                    1 => p,
                    _ => p * i32::from(j >= cut),
                })
                .collect();
            let mut q = match depth_first[0] {
                true => ReadyQueue::depth_first(),
                false => ReadyQueue::fifo(),
            };
            q.set_priorities(priority[..cut].to_vec());
            if !one_dagman {
                let lanes = if cut < n { 2 } else { 3 };
                q.set_dagmans(lane_of[..cut].to_vec(), depth_first[..lanes].to_vec(), true);
            }
            let mut plain = Plain {
                lane_of: lane_of.clone(),
                priority: priority.clone(),
                depth_first: depth_first.clone(),
                queued: Vec::new(),
                turns: Vec::new(),
                seq: 0,
            };
            let mut closed = [false; 3];
            let mut next = 0;
            for op in ops {
                match op {
                    Op::Push if next < n => {
                        if next == cut {
                            q.extend_priorities(&priority, cut);
                            let lanes = [(2, depth_first[2])];
                            if !one_dagman && !q.extend_dagmans(lane_of[cut..].iter().copied(), &lanes, true) {
                                q.set_dagmans(lane_of.clone(), depth_first.clone(), true);
                            }
                        }
                        q.push(next);
                        plain.push(next);
                        next += 1;
                    }
                    Op::Push => {}
                    Op::Pop => {
                        let open = |j: JobId| !closed[lane_of[j]];
                        let expected = plain.pop_open(open);
                        if expected.is_some() {
                            proptest::prop_assert!(q.any_open());
                        }
                        proptest::prop_assert_eq!(q.pop_open(open), expected);
                    }
                    Op::Close(d) => closed[d] = true,
                    Op::Open(d) => {
                        closed[d] = false;
                        q.reopen(d);
                    }
                }
                proptest::prop_assert_eq!(q.len(), plain.queued.len());
            }
            let rest: Vec<JobId> = std::iter::from_fn(|| q.pop()).collect();
            let plain_rest: Vec<JobId> = std::iter::from_fn(|| plain.pop_open(|_| true)).collect();
            proptest::prop_assert_eq!(rest, plain_rest);
        }
    }
}
