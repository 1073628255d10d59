//! Falkon's dispatcher (seed 001 §3): the wait queue, the executors with
//! their caches and the location index, the dispatch policy's two-part
//! notify / pick-up, the dynamic resource provisioner (§3.1: allocate after
//! a latency while the queue is long, release executors idle too long) and
//! the hit accounting and per-interval metrics of §5, in the manager's
//! shape: [`Dispatcher::handle`] takes what happened and answers with
//! commands, [`Dispatcher::next_wakeup`] says when time alone will matter
//! (the next arrival, allocation or provisioning decision).

use std::collections::VecDeque;

use super::{
    Allocation, Counts, FarmCommand, FarmEvent, FarmRun, FarmSpec, Fetched, Interval, Placement,
    Read, Source, Task,
};
use crate::core::FileId;
use crate::core::cache_index::{CacheIndex, ExecId};
use crate::core::seams::{DispatchPolicy, EvictionPolicy, FarmView, TaskQueue};
use crate::core::storage::Pool;

/// Makes executor `e`'s cache eviction policy: once per executor at the
/// start, and again when a released executor's slot is allocated anew (its
/// cache starts empty, with a fresh policy).
pub type EvictionFactory = Box<dyn FnMut(ExecId) -> Box<dyn EvictionPolicy> + Send>;

/// The dispatcher's state.
pub struct Dispatcher<'a> {
    spec: &'a FarmSpec,
    tasks: &'a [Task],
    policy: Box<dyn DispatchPolicy>,
    eviction: EvictionFactory,
    caches: Vec<Pool>,
    index: CacheIndex,
    /// Tasks running (or reading) per executor.
    busy: Vec<usize>,
    waiting: VecDeque<usize>,
    /// Tasks of the stream that arrived (they arrive in stream order).
    arrived: usize,
    registered: Vec<bool>,
    /// Executors registered, and tasks running on them (kept beside the
    /// vectors so that a dispatch with every slot taken costs nothing).
    live: usize,
    running: usize,
    idle_since: Vec<f64>,
    /// Allocations requested and not yet registered: (when, how many).
    allocations: VecDeque<(f64, usize)>,
    /// Executors requested and not yet registered.
    coming: usize,
    /// The provisioner's next decision (infinite without one, or once the
    /// stream ended).
    next_provision: f64,
    /// Reads in flight that each executor serves to peers.
    serving: Vec<usize>,
    out: FarmRun,
    counts: Counts,
    busy_time: f64,
    registered_time: f64,
    last_t: f64,
    step: f64,
}

/// The wait queue past its first `skip` tasks, as a policy sees it.
struct Queue<'a> {
    tasks: &'a [Task],
    waiting: &'a VecDeque<usize>,
    skip: usize,
}

impl TaskQueue for Queue<'_> {
    fn len(&self) -> usize {
        self.waiting.len() - self.skip
    }
    fn files(&self, i: usize) -> &[FileId] {
        &self.tasks[self.waiting[i + self.skip]].files
    }
}

fn bucket(intervals: &mut Vec<Interval>, step: f64, now: f64) -> &mut Interval {
    let k = (now / step).floor().max(0.0) as usize;
    while intervals.len() <= k {
        let t = intervals.len() as f64 * step;
        let carry = intervals.last().map(|l| {
            (
                l.queue,
                l.executors,
                l.busy,
                l.cached_files,
                l.cached_copies,
            )
        });
        let (queue, executors, busy, cached_files, cached_copies) = carry.unwrap_or_default();
        intervals.push(Interval {
            t,
            queue,
            executors,
            busy,
            cached_files,
            cached_copies,
            ..Default::default()
        });
    }
    &mut intervals[k]
}

impl<'a> Dispatcher<'a> {
    /// A dispatcher for `tasks` (in arrival order) on the farm `spec`,
    /// placing with `policy`, each executor's cache evicting with the
    /// policy `eviction` makes: no task arrived yet; all executors
    /// registered, or the provisioner's `min` (the engine starts those
    /// before the clock does, see [`is_registered`](Self::is_registered)).
    pub fn new(
        spec: &'a FarmSpec,
        tasks: &'a [Task],
        policy: Box<dyn DispatchPolicy>,
        mut eviction: EvictionFactory,
    ) -> Self {
        let n = spec.executors;
        let caches = (0..n).map(|e| Pool::new(spec.cache, eviction(e))).collect();
        let start = spec.drp.map_or(n, |d| d.min.min(n));
        Dispatcher {
            spec,
            tasks,
            policy,
            eviction,
            caches,
            index: CacheIndex::new(spec.files, n),
            busy: vec![0; n],
            waiting: VecDeque::new(),
            arrived: 0,
            registered: (0..n).map(|e| e < start).collect(),
            live: start,
            running: 0,
            idle_since: vec![0.0; n],
            allocations: VecDeque::new(),
            coming: 0,
            next_provision: if spec.drp.is_some() {
                0.0
            } else {
                f64::INFINITY
            },
            serving: vec![0; n],
            out: FarmRun {
                peak_executors: start,
                ..Default::default()
            },
            counts: Counts::default(),
            busy_time: 0.0,
            registered_time: 0.0,
            last_t: 0.0,
            step: if spec.interval > 0.0 {
                spec.interval
            } else {
                60.0
            },
        }
    }

    /// Handles `event` at nominal time `now` (never earlier than the last
    /// call's), appending what the engine must do to `out`. After
    /// anything that may free a slot or change the caches, it places what
    /// it can.
    pub fn handle(&mut self, now: f64, event: FarmEvent, out: &mut Vec<FarmCommand>) {
        self.handle_all(now, [event], out);
    }

    /// Handles `events`, all at `now`, placing what it can once after them
    /// rather than after each (what happened at one instant is one event
    /// to the dispatch policy; a [`FarmEvent::Tick`] among them still
    /// places after each arrival, allocation and decision it brings).
    pub fn handle_all(
        &mut self,
        now: f64,
        events: impl IntoIterator<Item = FarmEvent>,
        out: &mut Vec<FarmCommand>,
    ) {
        self.advance(now);
        let mut changed = false;
        for event in events {
            match event {
                FarmEvent::Tick => {
                    if std::mem::take(&mut changed) {
                        self.dispatch(now, out);
                    }
                    self.tick(now, out);
                    continue;
                }
                FarmEvent::Fetched(r) => self.fetched(now, r, out),
                FarmEvent::ReadFailed(read) => {
                    if let Source::Peer(p) = read.source {
                        self.serving[p] = self.serving[p].saturating_sub(1);
                    }
                }
                FarmEvent::Requeue { exec, task } => {
                    self.free_slot(now, exec);
                    self.out.requeued += 1;
                    self.waiting.push_front(task);
                }
                FarmEvent::Done { exec, task } => self.done(now, exec, task),
            }
            changed = true;
        }
        if changed {
            self.dispatch(now, out);
        }
    }

    /// When the dispatcher next has something to do with no event: the
    /// next arrival, allocation or provisioning decision.
    pub fn next_wakeup(&self) -> Option<f64> {
        let arrival = self.tasks.get(self.arrived).map(|t| t.arrival);
        let allocation = self.allocations.front().map(|a| a.0);
        [arrival, allocation, Some(self.next_provision)]
            .into_iter()
            .flatten()
            .filter(|t| t.is_finite())
            .min_by(f64::total_cmp)
    }

    /// Running totals.
    pub fn counts(&self) -> Counts {
        Counts {
            done: self.out.tasks as u64,
            local: self.out.local_hits,
            global: self.out.global_hits,
            miss: self.out.misses,
            ..self.counts
        }
    }

    /// Executors registered now.
    pub fn executors(&self) -> usize {
        self.live
    }

    /// Whether executor `e` is registered.
    pub fn is_registered(&self, e: ExecId) -> bool {
        self.registered.get(e).copied().unwrap_or(false)
    }

    /// Executors running at least one task now.
    pub fn busy_executors(&self) -> usize {
        self.busy.iter().filter(|&&b| b > 0).count()
    }

    /// Tasks in the wait queue.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Tasks that ended.
    pub fn done_tasks(&self) -> usize {
        self.out.tasks
    }

    /// Whether every task of the stream ended.
    pub fn finished(&self) -> bool {
        self.out.tasks >= self.tasks.len()
    }

    /// Whether `e` caches `f` now.
    pub fn cached(&self, f: FileId, e: ExecId) -> bool {
        self.index.cached(f, e)
    }

    /// The run as measured, at the end.
    pub fn finish(self) -> FarmRun {
        let mut out = self.out;
        out.utilization = if self.registered_time > 0.0 {
            self.busy_time / (self.registered_time * self.spec.cpus as f64)
        } else {
            0.0
        };
        out.final_executors = self.live;
        out.cpu_hours = self.registered_time * self.spec.cpus as f64 / 3600.0;
        out
    }

    /// Moves the clock to `now`: the state since the last call counts into
    /// the utilization, the CPU hours and that call's interval.
    fn advance(&mut self, now: f64) {
        let live = self.executors();
        let busy_execs = self.busy_executors();
        let b = bucket(&mut self.out.intervals, self.step, self.last_t);
        b.queue = self.waiting.len();
        b.executors = live;
        b.busy = busy_execs;
        (b.cached_files, b.cached_copies) = self.index.replication();
        let dt = (now - self.last_t).max(0.0);
        self.busy_time += self.running as f64 * dt;
        self.registered_time += live as f64 * dt;
        self.last_t = self.last_t.max(now);
    }

    /// What is due by `now`, in the order a simulator's events at one
    /// instant come: arrivals, then allocations, then the provisioner's
    /// decision; each followed by dispatching, as if it were an event of
    /// its own.
    fn tick(&mut self, now: f64, out: &mut Vec<FarmCommand>) {
        while let Some(t) = self.tasks.get(self.arrived)
            && t.arrival <= now
        {
            let reads = t.files.len() as u64;
            self.waiting.push_back(self.arrived);
            self.arrived += 1;
            self.counts.arrived += 1;
            self.counts.arrived_reads += reads;
            let b = bucket(&mut self.out.intervals, self.step, now);
            b.arrived += 1;
            b.arrived_reads += reads;
            self.dispatch(now, out);
        }
        while let Some(&(at, count)) = self.allocations.front()
            && at <= now
        {
            self.allocations.pop_front();
            let started = self.allocated(now, count);
            if !started.is_empty() {
                out.push(FarmCommand::Start(started));
            }
            self.dispatch(now, out);
        }
        if self.next_provision <= now {
            self.provision(now, out);
            self.next_provision = match self.spec.drp {
                Some(d) if !self.finished() => now + d.interval,
                _ => f64::INFINITY,
            };
            self.dispatch(now, out);
        }
    }

    /// The provisioner's decision at `now`: request executors while more
    /// than `queue_threshold` tasks wait; release those idle for `idle`
    /// seconds down to `min`. Only an executor running nothing and serving
    /// no peer read is released, so no task or read is ever lost with it;
    /// its cache and index entries go with it.
    fn provision(&mut self, now: f64, out: &mut Vec<FarmCommand>) {
        let Some(d) = self.spec.drp else {
            return;
        };
        let n = self.spec.executors;
        let live = self.executors();
        if self.waiting.len() > d.queue_threshold && live + self.coming < n {
            let room = n - live - self.coming;
            let allocate = match d.allocation {
                Allocation::OneAtATime => 1,
                Allocation::Additive(k) => k.max(1),
                Allocation::Exponential => (live + self.coming).max(1),
                Allocation::AllAtOnce => room,
            }
            .min(room);
            self.coming += allocate;
            self.allocations.push_back((now + d.latency, allocate));
        }
        let mut kept = live;
        for e in 0..n {
            if kept <= d.min {
                break;
            }
            if self.registered[e]
                && self.busy[e] == 0
                && self.serving[e] == 0
                && now - self.idle_since[e] >= d.idle
            {
                self.registered[e] = false;
                self.live -= 1;
                self.index.remove_executor(e);
                self.caches[e] = Pool::new(self.spec.cache, (self.eviction)(e));
                out.push(FarmCommand::Release(e));
                kept -= 1;
            }
        }
    }

    /// `count` executors requested earlier are registered now; their ids.
    fn allocated(&mut self, now: f64, count: usize) -> Vec<ExecId> {
        self.coming = self.coming.saturating_sub(count);
        let mut ids = Vec::with_capacity(count);
        for e in 0..self.spec.executors {
            if ids.len() == count {
                break;
            }
            if !self.registered[e] {
                self.registered[e] = true;
                self.live += 1;
                self.idle_since[e] = now;
                ids.push(e);
            }
        }
        self.out.peak_executors = self.out.peak_executors.max(self.executors());
        ids
    }

    /// Places tasks while the head of the wait queue can be placed: part 1
    /// notifies an executor for the head, part 2 lets it pick up more from
    /// the window, up to its free slots. Each read says where the file is:
    /// the executor's cache (counted as a local hit now), else the least
    /// loaded peer caching it, else the store.
    fn dispatch(&mut self, now: f64, out: &mut Vec<FarmCommand>) {
        let spec = self.spec;
        let n = spec.executors;
        self.out.peak_queue = self.out.peak_queue.max(self.waiting.len());
        // A policy only notifies an executor with a free slot.
        let full = |d: &Self| d.running >= d.live * spec.cpus;
        if self.waiting.is_empty() || full(self) {
            return;
        }
        let mut free: Vec<bool> = vec![false; n];
        while let Some(&head) = self.waiting.front() {
            if full(self) {
                break;
            }
            for (e, f) in free.iter_mut().enumerate() {
                *f = self.registered[e] && self.busy[e] < spec.cpus;
            }
            let live = self.executors();
            let utilization = self.busy_executors() as f64 / live.max(1) as f64;
            let view = FarmView {
                free: &free,
                utilization,
                index: &self.index,
            };
            let Some(e) = self.policy.notify(&self.tasks[head].files, &view) else {
                break;
            };
            let room = spec.cpus - self.busy[e];
            let queue = Queue {
                tasks: self.tasks,
                waiting: &self.waiting,
                skip: 1,
            };
            let more = self.policy.pick_up(e, &queue, room - 1, &view);
            let mut chosen: Vec<usize> = Vec::with_capacity(more.len() + 1);
            chosen.push(head);
            chosen.extend(more.iter().map(|&i| self.waiting[i + 1]));
            let mut positions: Vec<usize> = more.iter().map(|&i| i + 1).collect();
            positions.push(0);
            positions.sort_unstable_by(|a, b| b.cmp(a));
            for p in positions {
                self.waiting.remove(p);
            }
            for task in chosen {
                self.busy[e] += 1;
                self.running += 1;
                let reads = self.tasks[task]
                    .files
                    .iter()
                    .map(|&file| Read {
                        file,
                        source: self.locate(now, e, file),
                    })
                    .collect();
                out.push(FarmCommand::Run(Placement {
                    exec: e,
                    task,
                    reads,
                }));
            }
        }
    }

    fn locate(&mut self, now: f64, e: ExecId, f: FileId) -> Source {
        if self.index.cached(f, e) {
            self.out.local_hits += 1;
            bucket(&mut self.out.intervals, self.step, now).local += 1;
            self.caches[e].touch(f);
            return Source::Local;
        }
        let serving = &self.serving;
        let peer = self
            .index
            .holders(f)
            .iter()
            .min_by_key(|&&p| (serving[p], p))
            .copied();
        match peer {
            Some(p) => {
                self.serving[p] += 1;
                Source::Peer(p)
            }
            None => Source::Store,
        }
    }

    /// A read ended: counts the global hit or miss and the bytes, caches
    /// the file (evicting to make room) and tells the engine what to keep
    /// and delete.
    fn fetched(&mut self, now: f64, r: Fetched, out: &mut Vec<FarmCommand>) {
        let Fetched {
            exec: e,
            read,
            served,
            part,
        } = r;
        if let Source::Peer(p) = read.source {
            self.serving[p] = self.serving[p].saturating_sub(1);
        }
        let b = bucket(&mut self.out.intervals, self.step, now);
        match served {
            Source::Local => return,
            Source::Peer(_) => {
                self.out.global_hits += 1;
                b.global += 1;
            }
            Source::Store => {
                self.out.misses += 1;
                b.miss += 1;
            }
        }
        self.out.bytes_moved += self.spec.file_size;
        let f = read.file;
        let mut evicted = Vec::new();
        let mut keep = false;
        // The file is cached once it has arrived (and may serve peers from
        // then on).
        if self.spec.caching
            && !self.index.cached(f, e)
            && let Ok(r) = self.caches[e].begin_write(f, self.spec.file_size)
        {
            for gone in r.evicted {
                self.index.evict(gone, e);
                evicted.push(gone);
            }
            self.caches[e].commit_write(f);
            self.index.insert(f, e);
            keep = true;
        }
        out.push(FarmCommand::Commit {
            exec: e,
            file: f,
            part,
            keep,
            evicted,
        });
    }

    fn free_slot(&mut self, now: f64, e: ExecId) {
        if self.busy[e] > 0 {
            self.busy[e] -= 1;
            self.running -= 1;
        }
        if self.busy[e] == 0 {
            self.idle_since[e] = now;
        }
    }

    fn done(&mut self, now: f64, e: ExecId, task: usize) {
        self.free_slot(now, e);
        self.out.tasks += 1;
        let reads = self.tasks[task].files.len() as u64;
        self.counts.done_reads += reads;
        let b = bucket(&mut self.out.intervals, self.step, now);
        b.done += 1;
        b.read += reads * self.spec.file_size;
        self.out.makespan = self.out.makespan.max(now);
        // Seed 001's response time and slowdown count by arrival.
        let arrival = self.tasks[task].arrival;
        let a = bucket(&mut self.out.intervals, self.step, arrival);
        a.response += now - arrival;
        a.last_end = a.last_end.max(now);
        self.out.response_mean += (now - arrival - self.out.response_mean) / self.out.tasks as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::farm::Drp;

    fn spec(executors: usize, drp: Option<Drp>) -> FarmSpec {
        FarmSpec {
            executors,
            drp,
            cpus: 1,
            cache: 30,
            eviction: "lru".into(),
            policy: "max-compute-util".into(),
            files: 10,
            file_size: 10,
            compute: 1.0,
            dispatch: 0.0,
            store_bandwidth: 1.0,
            peer_bandwidth: 1.0,
            disk_bandwidth: f64::INFINITY,
            peer_latency: 0.0,
            caching: true,
            seed: 1,
            interval: 10.0,
        }
    }

    fn task(at: f64, files: &[FileId]) -> Task {
        Task {
            arrival: at,
            files: files.to_vec(),
        }
    }

    fn dispatcher<'a>(s: &'a FarmSpec, tasks: &'a [Task]) -> Dispatcher<'a> {
        let registry = crate::policy::Registry::shared_builtin();
        let policies =
            std::sync::Arc::new(crate::policy::RunPolicies::new(registry, s.seed, vec![]));
        crate::policy::farm_dispatcher(s, tasks, &policies).unwrap()
    }

    /// Handles `event` at `now`; the tasks it placed.
    fn handle(d: &mut Dispatcher, now: f64, event: FarmEvent) -> Vec<Placement> {
        let mut out = Vec::new();
        d.handle(now, event, &mut out);
        placements(out)
    }

    fn placements(out: Vec<FarmCommand>) -> Vec<Placement> {
        out.into_iter()
            .filter_map(|c| match c {
                FarmCommand::Run(p) => Some(p),
                _ => None,
            })
            .collect()
    }

    /// Every wake-up due by `until`, as an engine would; what they asked.
    fn wake_until(d: &mut Dispatcher, until: f64) -> Vec<FarmCommand> {
        let mut out = Vec::new();
        while let Some(at) = d.next_wakeup().filter(|&t| t <= until) {
            d.handle(at, FarmEvent::Tick, &mut out);
        }
        out
    }

    fn fetched(exec: ExecId, read: Read, served: Source) -> FarmEvent {
        FarmEvent::Fetched(Fetched {
            exec,
            read,
            served,
            part: 7,
        })
    }

    fn sources(p: &Placement) -> Vec<Source> {
        p.reads.iter().map(|r| r.source).collect()
    }

    #[test]
    fn reads_come_from_the_cache_then_the_least_loaded_peer_then_the_store() {
        let s = spec(3, None);
        let tasks = vec![task(0.0, &[0]), task(1.0, &[0, 1]), task(1.0, &[0])];
        let mut d = dispatcher(&s, &tasks);
        assert_eq!(d.next_wakeup(), Some(0.0), "the first arrival");
        let p = placements(wake_until(&mut d, 0.0));
        assert_eq!(sources(&p[0]), [Source::Store]);
        let mut out = Vec::new();
        d.handle(0.0, fetched(0, p[0].reads[0], Source::Store), &mut out);
        let commit = FarmCommand::Commit {
            exec: 0,
            file: 0,
            part: 7,
            keep: true,
            evicted: vec![],
        };
        assert_eq!(out, [commit], "the engine lists what arrived");
        assert!(d.cached(0, 0));
        handle(&mut d, 1.0, FarmEvent::Done { exec: 0, task: 0 });
        // Executor 0 caches file 0: max-compute-util notifies the first free
        // executor (0), which reads 0 locally and 1 from the store; the next
        // task lands on executor 1 and reads file 0 from peer 0.
        let p = placements(wake_until(&mut d, 1.0));
        assert_eq!(
            (p[0].exec, sources(&p[0])),
            (0, vec![Source::Local, Source::Store])
        );
        assert_eq!((p[1].exec, sources(&p[1])), (1, vec![Source::Peer(0)]));
        let c = d.counts();
        assert_eq!(
            (c.local, c.global, c.miss),
            (1, 0, 1),
            "peer read not ended"
        );
        handle(&mut d, 1.5, fetched(1, p[1].reads[0], Source::Peer(0)));
        assert_eq!(d.counts().global, 1);
        assert_eq!(d.next_wakeup(), None, "every task arrived, no provisioner");
    }

    #[test]
    fn a_requeued_task_is_placed_again_and_nothing_is_lost() {
        let s = spec(1, None);
        let tasks = vec![task(0.0, &[3]), task(0.0, &[4])];
        let mut d = dispatcher(&s, &tasks);
        let p = placements(wake_until(&mut d, 0.0));
        assert_eq!((p.len(), d.waiting()), (1, 1), "one slot");
        // Its read failed: back to the head, ahead of task 1, and placed
        // again at once.
        assert!(handle(&mut d, 0.5, FarmEvent::ReadFailed(p[0].reads[0])).is_empty());
        let p = handle(&mut d, 0.5, FarmEvent::Requeue { exec: 0, task: 0 });
        assert_eq!(p[0].task, 0);
        handle(&mut d, 0.7, fetched(0, p[0].reads[0], Source::Store));
        let p = handle(&mut d, 1.0, FarmEvent::Done { exec: 0, task: 0 });
        assert_eq!(p[0].task, 1);
        handle(&mut d, 2.0, FarmEvent::Done { exec: 0, task: 1 });
        assert!(d.finished());
        let r = d.finish();
        assert_eq!((r.tasks, r.requeued), (2, 1));
    }

    #[test]
    fn the_provisioner_releases_only_idle_executors_that_serve_no_peer() {
        let drp = Drp {
            min: 0,
            queue_threshold: 0,
            allocation: crate::core::farm::Allocation::AllAtOnce,
            latency: 2.0,
            idle: 5.0,
            interval: 1.0,
        };
        let s = spec(2, Some(drp));
        let tasks = vec![
            task(0.0, &[0]),
            task(0.0, &[1]),
            task(3.0, &[0, 1]),
            task(20.0, &[2]),
        ];
        let mut d = dispatcher(&s, &tasks);
        assert_eq!(d.executors(), 0);
        // Asked for both at 0 s, not again at 1 s (already coming), there
        // at 2 s: each runs one task.
        assert!(wake_until(&mut d, 1.0).is_empty());
        let out = wake_until(&mut d, 2.0);
        assert_eq!(out[0], FarmCommand::Start(vec![0, 1]));
        for p in placements(out) {
            handle(&mut d, 2.5, fetched(p.exec, p.reads[0], Source::Store));
            handle(
                &mut d,
                3.0,
                FarmEvent::Done {
                    exec: p.exec,
                    task: p.task,
                },
            );
        }
        // Executor 0 reads file 0 locally and file 1 from executor 1.
        let p = placements(wake_until(&mut d, 3.0));
        assert_eq!(
            (p[0].exec, sources(&p[0])),
            (0, vec![Source::Local, Source::Peer(1)])
        );
        // At 9 s executor 1 has idled 6 s but serves a peer: kept.
        assert!(wake_until(&mut d, 9.0).is_empty());
        handle(&mut d, 9.5, fetched(0, p[0].reads[1], Source::Peer(1)));
        handle(&mut d, 10.0, FarmEvent::Done { exec: 0, task: 2 });
        assert_eq!(
            wake_until(&mut d, 10.0),
            [FarmCommand::Release(1)],
            "idle 7 s, serving none"
        );
        assert!(!d.cached(1, 1), "its cache went with it");
        assert_eq!(wake_until(&mut d, 15.0), [FarmCommand::Release(0)]);
        assert_eq!(d.executors(), 0);
        assert_eq!(
            d.next_wakeup(),
            Some(16.0),
            "the provisioner decides each second"
        );
    }
}
