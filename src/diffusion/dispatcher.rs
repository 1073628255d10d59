//! Falkon's dispatcher as a sans-IO state machine (seed 001 §3): the wait
//! queue, the executors with their caches and the location index, the
//! dispatch policy's two-part notify / pick-up, the dynamic resource
//! provisioner's decisions (§3.1) and the hit accounting and per-interval
//! metrics of §5. Both engines drive it: `diffusion::farm` on the
//! simulator's virtual clock, `live::farm` with executors as real site
//! actors that pull real bytes. The engine tells it what happened (a task
//! arrived, a file arrived at an executor, a task ended, executors were
//! registered) and does what it answers (start these reads, evict these
//! files, allocate or release these executors).

use std::collections::VecDeque;

use super::farm::{Allocation, FarmRun, FarmSpec, Interval};
use super::stream::Task;
use crate::core::FileId;
use crate::core::cache_index::{CacheIndex, ExecId};
use crate::core::storage::Pool;
use crate::policy::dispatch::{DispatchPolicy, FarmView, TaskQueue};
use crate::policy::{self, UnknownPolicy};

/// Where a read is served from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The executor's own cache (a local hit).
    Local,
    /// A peer executor's cache, over its endpoint (a global hit).
    Peer(ExecId),
    /// The shared store (a miss).
    Store,
}

/// One file a placed task reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    /// The file.
    pub file: FileId,
    /// Where the dispatcher found it.
    pub source: Source,
}

/// A task placed on an executor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The executor that runs it.
    pub exec: ExecId,
    /// The task (index into the stream).
    pub task: usize,
    /// Its files, each with where to read it.
    pub reads: Vec<Read>,
}

/// What one provisioning decision asks of the engine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provisioning {
    /// Executors to request now (registered after the allocation latency
    /// with [`Dispatcher::allocated`]).
    pub allocate: usize,
    /// Executors released now: stop them and delete their pools.
    pub released: Vec<ExecId>,
}

/// Running totals, for live metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Tasks arrived.
    pub arrived: u64,
    /// Tasks ended.
    pub done: u64,
    /// Files the arrived tasks read.
    pub arrived_reads: u64,
    /// Files the ended tasks read.
    pub done_reads: u64,
    /// Reads served by the executor's own cache.
    pub local: u64,
    /// Reads served by a peer.
    pub global: u64,
    /// Reads served by the store.
    pub miss: u64,
}

/// The dispatcher's state.
pub struct Dispatcher<'a> {
    spec: &'a FarmSpec,
    tasks: &'a [Task],
    policy: Box<dyn DispatchPolicy>,
    caches: Vec<Pool>,
    index: CacheIndex,
    /// Tasks running (or reading) per executor.
    busy: Vec<usize>,
    waiting: VecDeque<usize>,
    registered: Vec<bool>,
    idle_since: Vec<f64>,
    /// Executors requested and not yet registered.
    coming: usize,
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
        let carry = intervals.last().map(|l| (l.queue, l.executors, l.busy));
        let (queue, executors, busy) = carry.unwrap_or_default();
        intervals.push(Interval {
            t,
            queue,
            executors,
            busy,
            ..Default::default()
        });
    }
    &mut intervals[k]
}

impl<'a> Dispatcher<'a> {
    /// A dispatcher for `tasks` on the farm `spec`: no task arrived yet; all
    /// executors registered, or the provisioner's `min`.
    pub fn new(spec: &'a FarmSpec, tasks: &'a [Task]) -> Result<Self, UnknownPolicy> {
        let n = spec.executors;
        let caches = (0..n)
            .map(|e| new_cache(spec, e))
            .collect::<Result<_, _>>()?;
        let start = spec.drp.map_or(n, |d| d.min.min(n));
        Ok(Dispatcher {
            spec,
            tasks,
            policy: policy::dispatch_policy(&spec.policy, spec.seed)?,
            caches,
            index: CacheIndex::new(spec.files, n),
            busy: vec![0; n],
            waiting: VecDeque::new(),
            registered: (0..n).map(|e| e < start).collect(),
            idle_since: vec![0.0; n],
            coming: 0,
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
        })
    }

    /// Moves the clock to `now`: the state since the last call counts into
    /// the utilization, the CPU hours and that call's interval. Engines call
    /// it before telling the dispatcher anything.
    pub fn advance(&mut self, now: f64) {
        let live = self.executors();
        let busy_execs = self.busy.iter().filter(|&&x| x > 0).count();
        let b = bucket(&mut self.out.intervals, self.step, self.last_t);
        b.queue = self.waiting.len();
        b.executors = live;
        b.busy = busy_execs;
        let dt = (now - self.last_t).max(0.0);
        self.busy_time += self.busy.iter().sum::<usize>() as f64 * dt;
        self.registered_time += live as f64 * dt;
        self.last_t = self.last_t.max(now);
    }

    /// Task `task` arrived into the wait queue.
    pub fn arrive(&mut self, now: f64, task: usize) {
        self.waiting.push_back(task);
        self.counts.arrived += 1;
        let reads = self.tasks[task].files.len() as u64;
        self.counts.arrived_reads += reads;
        let b = bucket(&mut self.out.intervals, self.step, now);
        b.arrived += 1;
        b.arrived_reads += reads;
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
        self.registered.iter().filter(|&&r| r).count()
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

    /// The provisioner's decision at `now` (a no-op without one): request
    /// executors while more than `queue_threshold` tasks wait; release those
    /// idle for `idle` seconds down to `min`. Only an executor running
    /// nothing and serving no peer read is released, so no task or read is
    /// ever lost with it; its cache and index entries go with it.
    pub fn provision(&mut self, now: f64) -> Provisioning {
        let Some(d) = self.spec.drp else {
            return Provisioning::default();
        };
        let n = self.spec.executors;
        let live = self.executors();
        let mut out = Provisioning::default();
        if self.waiting.len() > d.queue_threshold && live + self.coming < n {
            let room = n - live - self.coming;
            out.allocate = match d.allocation {
                Allocation::OneAtATime => 1,
                Allocation::Additive(k) => k.max(1),
                Allocation::Exponential => (live + self.coming).max(1),
                Allocation::AllAtOnce => room,
            }
            .min(room);
            self.coming += out.allocate;
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
                self.index.remove_executor(e);
                // The policy was resolved in `new`, so this cannot fail.
                if let Ok(c) = new_cache(self.spec, e) {
                    self.caches[e] = c;
                }
                out.released.push(e);
                kept -= 1;
            }
        }
        out
    }

    /// `count` executors requested earlier are registered now; their ids.
    pub fn allocated(&mut self, now: f64, count: usize) -> Vec<ExecId> {
        self.coming = self.coming.saturating_sub(count);
        let mut ids = Vec::with_capacity(count);
        for e in 0..self.spec.executors {
            if ids.len() == count {
                break;
            }
            if !self.registered[e] {
                self.registered[e] = true;
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
    pub fn dispatch(&mut self, now: f64) -> Vec<Placement> {
        let spec = self.spec;
        let n = spec.executors;
        let mut placed = Vec::new();
        self.out.peak_queue = self.out.peak_queue.max(self.waiting.len());
        let mut free: Vec<bool> = vec![false; n];
        while let Some(&head) = self.waiting.front() {
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
                let reads = self.tasks[task]
                    .files
                    .iter()
                    .map(|&file| Read {
                        file,
                        source: self.locate(now, e, file),
                    })
                    .collect();
                placed.push(Placement {
                    exec: e,
                    task,
                    reads,
                });
            }
        }
        placed
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

    /// The read `read` of a task on `e` completed, served by `served`
    /// (the planned source, or the store when the planned peer had evicted
    /// the file meanwhile). Counts the global hit or miss and the bytes,
    /// caches the file; the files evicted to make room, which the engine
    /// deletes from `e`'s pool.
    pub fn fetched(&mut self, now: f64, e: ExecId, read: Read, served: Source) -> Vec<FileId> {
        if let Source::Peer(p) = read.source {
            self.serving[p] = self.serving[p].saturating_sub(1);
        }
        let b = bucket(&mut self.out.intervals, self.step, now);
        match served {
            Source::Local => return Vec::new(),
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
        }
        evicted
    }

    /// A read of a task on `e` failed (past the engine's retries): the
    /// planned peer no longer serves it.
    pub fn read_failed(&mut self, read: Read) {
        if let Source::Peer(p) = read.source {
            self.serving[p] = self.serving[p].saturating_sub(1);
        }
    }

    /// Task `task` could not run on `e` (a read failed, or the executor was
    /// lost): it goes back to the head of the wait queue, to be placed again.
    pub fn requeue(&mut self, now: f64, e: ExecId, task: usize) {
        self.busy[e] = self.busy[e].saturating_sub(1);
        if self.busy[e] == 0 {
            self.idle_since[e] = now;
        }
        self.out.requeued += 1;
        self.waiting.push_front(task);
    }

    /// Task `task` ended on `e`.
    pub fn done(&mut self, now: f64, e: ExecId, task: usize) {
        self.busy[e] -= 1;
        if self.busy[e] == 0 {
            self.idle_since[e] = now;
        }
        self.out.tasks += 1;
        self.counts.done_reads += self.tasks[task].files.len() as u64;
        let b = bucket(&mut self.out.intervals, self.step, now);
        b.done += 1;
        b.read += self.tasks[task].files.len() as u64 * self.spec.file_size;
        self.out.makespan = self.out.makespan.max(now);
    }

    /// The run as measured, at the end.
    pub fn finish(self) -> FarmRun {
        let mut out = self.out;
        out.utilization = if self.registered_time > 0.0 {
            self.busy_time / (self.registered_time * self.spec.cpus as f64)
        } else {
            0.0
        };
        out.final_executors = self.registered.iter().filter(|&&r| r).count();
        out.cpu_hours = self.registered_time * self.spec.cpus as f64 / 3600.0;
        out
    }
}

fn new_cache(spec: &FarmSpec, e: ExecId) -> Result<Pool, UnknownPolicy> {
    policy::eviction_policy(&spec.eviction, spec.seed ^ (e as u64 + 1))
        .map(|p| Pool::new(spec.cache, p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diffusion::farm::Drp;

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

    #[test]
    fn reads_come_from_the_cache_then_the_least_loaded_peer_then_the_store() {
        let s = spec(3, None);
        let tasks = vec![task(0.0, &[0]), task(0.0, &[0, 1]), task(0.0, &[0])];
        let mut d = Dispatcher::new(&s, &tasks).unwrap();
        d.arrive(0.0, 0);
        let p = d.dispatch(0.0);
        assert_eq!(p[0].reads[0].source, Source::Store);
        assert!(d.fetched(0.0, 0, p[0].reads[0], Source::Store).is_empty());
        assert!(d.cached(0, 0));
        d.done(1.0, 0, 0);
        // Executor 0 caches file 0: max-compute-util notifies the first free
        // executor (0), which reads 0 locally and 1 from the store.
        d.arrive(1.0, 1);
        let p = d.dispatch(1.0);
        assert_eq!(p[0].exec, 0);
        let sources: Vec<Source> = p[0].reads.iter().map(|r| r.source).collect();
        assert_eq!(sources, [Source::Local, Source::Store]);
        // The next task lands on executor 1 and reads file 0 from peer 0.
        d.arrive(1.0, 2);
        let p = d.dispatch(1.0);
        assert_eq!(p[0].exec, 1);
        assert_eq!(p[0].reads[0].source, Source::Peer(0));
        let c = d.counts();
        assert_eq!(
            (c.local, c.global, c.miss),
            (1, 0, 1),
            "peer read not ended"
        );
        d.fetched(1.5, 1, p[0].reads[0], Source::Peer(0));
        assert_eq!(d.counts().global, 1);
    }

    #[test]
    fn a_requeued_task_is_placed_again_and_nothing_is_lost() {
        let s = spec(1, None);
        let tasks = vec![task(0.0, &[3]), task(0.0, &[4])];
        let mut d = Dispatcher::new(&s, &tasks).unwrap();
        d.arrive(0.0, 0);
        d.arrive(0.0, 1);
        let p = d.dispatch(0.0);
        assert_eq!((p.len(), d.waiting()), (1, 1), "one slot");
        // Its read failed: back to the head, ahead of task 1.
        d.read_failed(p[0].reads[0]);
        d.requeue(0.5, 0, 0);
        assert_eq!(d.waiting(), 2);
        let p = d.dispatch(0.5);
        assert_eq!(p[0].task, 0);
        d.fetched(0.7, 0, p[0].reads[0], Source::Store);
        d.done(1.0, 0, 0);
        let p = d.dispatch(1.0);
        assert_eq!(p[0].task, 1);
        d.done(2.0, 0, 1);
        assert!(d.finished());
        let r = d.finish();
        assert_eq!((r.tasks, r.requeued), (2, 1));
    }

    #[test]
    fn the_provisioner_releases_only_idle_executors_that_serve_no_peer() {
        let drp = Drp {
            min: 0,
            queue_threshold: 0,
            allocation: crate::diffusion::farm::Allocation::AllAtOnce,
            latency: 1.0,
            idle: 5.0,
            interval: 1.0,
        };
        let s = spec(2, Some(drp));
        let tasks = vec![task(0.0, &[0]), task(0.0, &[1]), task(2.0, &[0, 1])];
        let mut d = Dispatcher::new(&s, &tasks).unwrap();
        assert_eq!(d.executors(), 0);
        d.arrive(0.0, 0);
        d.arrive(0.0, 1);
        let p = d.provision(0.0);
        assert_eq!(p.allocate, 2, "all at once");
        assert_eq!(d.provision(0.5).allocate, 0, "already coming");
        assert_eq!(d.allocated(1.0, 2), [0, 1]);
        for p in d.dispatch(1.0) {
            d.fetched(1.5, p.exec, p.reads[0], Source::Store);
            d.done(2.0, p.exec, p.task);
        }
        // Executor 0 reads file 0 locally and file 1 from executor 1.
        d.arrive(2.0, 2);
        let p = d.dispatch(2.0);
        let sources: Vec<Source> = p[0].reads.iter().map(|r| r.source).collect();
        assert_eq!(
            (p[0].exec, sources),
            (0, vec![Source::Local, Source::Peer(1)])
        );
        // At 8 s executor 1 has idled 6 s but serves a peer: kept.
        assert!(d.provision(8.0).released.is_empty());
        d.fetched(8.5, 0, p[0].reads[1], Source::Peer(1));
        d.done(9.0, 0, 2);
        assert_eq!(d.provision(9.0).released, [1], "idle 7 s, serving none");
        assert!(!d.cached(1, 1), "its cache went with it");
        assert_eq!(d.provision(14.0).released, [0]);
        assert_eq!(d.executors(), 0);
    }
}
