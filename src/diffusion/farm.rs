//! The data-diffusion task farm on the simulator's virtual clock (seed 001
//! §3, §5.2): tasks arrive into a wait queue, the dispatch policy places them
//! on executors (two-part notify / pick-up), each task reads its files from
//! the executor's cache (local hit), a peer executor's cache (global hit) or
//! the shared store (miss), caches what it read, then computes.
//!
//! Transfers share bandwidth fairly (processor sharing): the store's
//! aggregate bandwidth (GPFS's 4 Gb/s in the paper) among all its reads, and
//! each executor's link among the reads served from its cache. Executors are
//! either all there from the start or come and go with the dynamic resource
//! provisioner ([`Drp`]): allocated, after a latency, while the wait queue is
//! long; released after idling, their caches dropped (only idle executors
//! go, so no task is ever lost with one).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::index::{CacheIndex, ExecId};
use super::stream::Task;
use crate::core::FileId;
use crate::core::storage::Pool;
use crate::policy::dispatch::{FarmView, TaskQueue};
use crate::policy::{self, UnknownPolicy};

/// A farm scenario.
#[derive(Debug, Clone)]
pub struct FarmSpec {
    /// Executors: all present from the start, or the most the provisioner
    /// may allocate.
    pub executors: usize,
    /// Dynamic resource provisioning, if on.
    pub drp: Option<Drp>,
    /// CPU slots per executor.
    pub cpus: usize,
    /// Cache per executor (bytes).
    pub cache: u64,
    /// Cache eviction policy (`lru`, `fifo`, `lfu`, `random`).
    pub eviction: String,
    /// Dispatch policy, e.g. `good-cache-compute[threshold=0.8]`.
    pub policy: String,
    /// Files in the dataset.
    pub files: usize,
    /// Size of each file (bytes).
    pub file_size: u64,
    /// Compute time of each task (s).
    pub compute: f64,
    /// Dispatch cost per task (s), the model's `o(κ)`.
    pub dispatch: f64,
    /// The shared store's aggregate bandwidth (bytes/s).
    pub store_bandwidth: f64,
    /// Each executor's link, serving its cache to peers (bytes/s).
    pub peer_bandwidth: f64,
    /// Whether executors cache what they read (false: every read goes to the
    /// store, as first-available on GPFS in the paper).
    pub caching: bool,
    /// Seed of the eviction policies.
    pub seed: u64,
    /// Seconds per reported interval (the summary view's resolution).
    pub interval: f64,
}

/// What happened in one reporting interval (seed 001's summary views).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Interval {
    /// Start of the interval (s).
    pub t: f64,
    /// Tasks that arrived.
    pub arrived: u64,
    /// Tasks that ended.
    pub done: u64,
    /// Bytes the ended tasks read (local, peer or store).
    pub read: u64,
    /// Reads served by the executor's own cache.
    pub local: u64,
    /// Reads served by a peer's cache.
    pub global: u64,
    /// Reads served by the store.
    pub miss: u64,
    /// Wait queue length at the end of the interval.
    pub queue: usize,
    /// Executors registered at the end of the interval.
    pub executors: usize,
    /// Executors running a task at the end of the interval.
    pub busy: usize,
}

/// How many executors one allocation asks for (Falkon's provisioner
/// policies).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Allocation {
    /// One at a time.
    OneAtATime,
    /// A fixed number each time.
    Additive(usize),
    /// As many as are allocated or coming (doubling).
    Exponential,
    /// All the rest at once.
    AllAtOnce,
}

/// The dynamic resource provisioner's tunables (seed 001 §3.1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drp {
    /// Executors always kept.
    pub min: usize,
    /// Allocate while more tasks than this wait.
    pub queue_threshold: usize,
    /// How many one allocation asks for.
    pub allocation: Allocation,
    /// Seconds from request to a registered executor (GRAM4 + bootstrap).
    pub latency: f64,
    /// An executor idle this long is released.
    pub idle: f64,
    /// Seconds between two provisioning decisions.
    pub interval: f64,
}

/// What a farm run measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FarmRun {
    /// Last task end (s).
    pub makespan: f64,
    /// Tasks that ran.
    pub tasks: usize,
    /// File reads from the executor's own cache.
    pub local_hits: u64,
    /// File reads from a peer's cache.
    pub global_hits: u64,
    /// File reads from the store.
    pub misses: u64,
    /// Bytes moved from peers and the store.
    pub bytes_moved: u64,
    /// Longest wait queue.
    pub peak_queue: usize,
    /// Busy slots over registered slots, averaged over the makespan.
    pub utilization: f64,
    /// Most executors registered at once.
    pub peak_executors: usize,
    /// Executors registered at the end.
    pub final_executors: usize,
    /// CPU hours of registered executors.
    pub cpu_hours: f64,
    /// Per interval of `FarmSpec::interval` seconds.
    pub intervals: Vec<Interval>,
}

impl FarmRun {
    /// The summary view of seed 001's figures 4–10 as an SVG at `path`:
    /// throughput vs the ideal, the wait queue, executors allocated and busy,
    /// and where reads were served, per interval.
    pub fn summary_svg(
        &self,
        path: &std::path::Path,
        title: &str,
        spec: &FarmSpec,
    ) -> Result<(), String> {
        use crate::report::plot::{Panel, Series, stacked};
        let step = if spec.interval > 0.0 {
            spec.interval
        } else {
            60.0
        };
        let line = |name: &str, f: &dyn Fn(&Interval) -> f64| Series {
            name: name.into(),
            points: self.intervals.iter().map(|i| (i.t, f(i))).collect(),
        };
        let gbps = |bytes: f64| bytes * 8.0 / step / 1e9;
        let share = |n: u64, i: &Interval| {
            let all = (i.local + i.global + i.miss).max(1) as f64;
            100.0 * n as f64 / all
        };
        let size = spec.file_size as f64;
        let panels = [
            Panel {
                title: "Throughput".into(),
                y_label: "Gb/s".into(),
                series: vec![
                    line("ideal (arrivals × file size)", &|i| {
                        gbps(i.arrived as f64 * size)
                    }),
                    line("measured (reads of ended tasks)", &|i| gbps(i.read as f64)),
                ],
            },
            Panel {
                title: "Wait queue".into(),
                y_label: "tasks".into(),
                series: vec![line("wait queue length", &|i| i.queue as f64)],
            },
            Panel {
                title: "Executors".into(),
                y_label: "executors".into(),
                series: vec![
                    line("allocated", &|i| i.executors as f64),
                    line("busy", &|i| i.busy as f64),
                ],
            },
            Panel {
                title: "Where reads were served".into(),
                y_label: "% of reads".into(),
                series: vec![
                    line("cache hit local", &|i| share(i.local, i)),
                    line("cache hit global", &|i| share(i.global, i)),
                    line("cache miss (store)", &|i| share(i.miss, i)),
                ],
            },
        ];
        stacked(path, title, "time (s)", &panels)
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

/// A transfer in processor sharing at one server (the store or a peer).
#[derive(Debug, Clone)]
struct Flow {
    /// Bytes left.
    left: f64,
    /// The reading executor and task, and the file read.
    exec: ExecId,
    task: usize,
    file: FileId,
}

/// A bandwidth shared equally among its flows.
#[derive(Debug, Default)]
struct Server {
    rate: f64,
    flows: Vec<Flow>,
    last: f64,
    /// Bumped whenever the flow set changes, to drop stale completions.
    generation: u64,
}

impl Server {
    fn advance(&mut self, now: f64) {
        if !self.flows.is_empty() {
            let each = self.rate / self.flows.len() as f64 * (now - self.last);
            for f in &mut self.flows {
                f.left -= each;
            }
        }
        self.last = now;
    }

    /// When the next flow finishes, if any.
    fn next_end(&self, now: f64) -> Option<f64> {
        let each = self.rate / self.flows.len().max(1) as f64;
        self.flows
            .iter()
            .map(|f| now + f.left.max(0.0) / each)
            .min_by(f64::total_cmp)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
enum Ev {
    Arrive(usize),
    /// Server (0: the store, 1 + e: executor e's link) may have a flow done.
    Flow(usize, u64),
    /// A task's compute ended on this executor.
    Done(ExecId, usize),
    /// The provisioner decides.
    Provision,
    /// Executors requested earlier are registered.
    Allocated(usize),
}

#[derive(Debug, PartialEq)]
struct Due(f64, u64, Ev);
impl Eq for Due {}
impl Ord for Due {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0).then(self.1.cmp(&o.1))
    }
}
impl PartialOrd for Due {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

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

/// Runs `tasks` through the farm `spec` to the end.
pub fn run(spec: &FarmSpec, tasks: &[Task]) -> Result<FarmRun, UnknownPolicy> {
    let mut policy = policy::dispatch_policy(&spec.policy, spec.seed)?;
    let n = spec.executors;
    let mut caches: Vec<Pool> = (0..n)
        .map(|e| {
            policy::eviction_policy(&spec.eviction, spec.seed ^ (e as u64 + 1))
                .map(|p| Pool::new(spec.cache, p))
        })
        .collect::<Result<_, _>>()?;
    let mut index = CacheIndex::new(spec.files, n);
    let mut busy = vec![0usize; n];
    // Files a task still waits for, per task.
    let mut pending = vec![0usize; tasks.len()];
    let mut servers: Vec<Server> = (0..=n)
        .map(|i| Server {
            rate: if i == 0 {
                spec.store_bandwidth
            } else {
                spec.peer_bandwidth
            },
            ..Default::default()
        })
        .collect();
    let mut heap: BinaryHeap<Reverse<Due>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |heap: &mut BinaryHeap<Reverse<Due>>, at: f64, ev: Ev| {
        seq += 1;
        heap.push(Reverse(Due(at, seq, ev)));
    };
    for (i, t) in tasks.iter().enumerate() {
        push(&mut heap, t.arrival, Ev::Arrive(i));
    }
    let mut waiting: VecDeque<usize> = VecDeque::new();
    let mut out = FarmRun::default();
    let mut busy_time = 0.0;
    let mut registered_time = 0.0;
    let mut last_t = 0.0;
    let start = spec.drp.map_or(n, |d| d.min.min(n));
    let mut registered: Vec<bool> = (0..n).map(|e| e < start).collect();
    let mut idle_since = vec![0.0_f64; n];
    let mut coming = 0usize;
    let step = if spec.interval > 0.0 {
        spec.interval
    } else {
        60.0
    };
    out.peak_executors = start;
    if spec.drp.is_some() {
        push(&mut heap, 0.0, Ev::Provision);
    }
    while let Some(Reverse(Due(now, _, ev))) = heap.pop() {
        let live = registered.iter().filter(|&&r| r).count();
        // The state since the last event, into that event's interval.
        let b = bucket(&mut out.intervals, step, last_t);
        b.queue = waiting.len();
        b.executors = live;
        b.busy = busy.iter().filter(|&&x| x > 0).count();
        busy_time += busy.iter().sum::<usize>() as f64 * (now - last_t);
        registered_time += live as f64 * (now - last_t);
        last_t = now;
        match ev {
            Ev::Arrive(i) => {
                waiting.push_back(i);
                bucket(&mut out.intervals, step, now).arrived += 1;
            }
            Ev::Provision => {
                let Some(d) = spec.drp else { continue };
                if waiting.len() > d.queue_threshold && live + coming < n {
                    let room = n - live - coming;
                    let ask = match d.allocation {
                        Allocation::OneAtATime => 1,
                        Allocation::Additive(k) => k.max(1),
                        Allocation::Exponential => (live + coming).max(1),
                        Allocation::AllAtOnce => room,
                    }
                    .min(room);
                    coming += ask;
                    push(&mut heap, now + d.latency, Ev::Allocated(ask));
                }
                // Release executors idle too long, keeping `min`.
                let mut kept = live;
                for e in 0..n {
                    if kept <= d.min {
                        break;
                    }
                    if registered[e] && busy[e] == 0 && now - idle_since[e] >= d.idle {
                        registered[e] = false;
                        index.remove_executor(e);
                        caches[e] =
                            policy::eviction_policy(&spec.eviction, spec.seed ^ (e as u64 + 1))
                                .map(|p| Pool::new(spec.cache, p))?;
                        kept -= 1;
                    }
                }
                if out.tasks < tasks.len() {
                    push(&mut heap, now + d.interval, Ev::Provision);
                }
            }
            Ev::Allocated(count) => {
                coming -= count;
                let mut left = count;
                for e in 0..n {
                    if left == 0 {
                        break;
                    }
                    if !registered[e] {
                        registered[e] = true;
                        idle_since[e] = now;
                        left -= 1;
                    }
                }
                let live = registered.iter().filter(|&&r| r).count();
                out.peak_executors = out.peak_executors.max(live);
            }
            Ev::Flow(s, generation) => {
                let server = &mut servers[s];
                if server.generation != generation {
                    continue;
                }
                server.advance(now);
                let done: Vec<Flow> = {
                    let (d, keep): (Vec<Flow>, Vec<Flow>) =
                        server.flows.drain(..).partition(|f| f.left < 1.0);
                    server.flows = keep;
                    d
                };
                server.generation += 1;
                if let Some(at) = server.next_end(now) {
                    push(&mut heap, at, Ev::Flow(s, server.generation));
                }
                for f in done {
                    // The file is cached once it has arrived (and may serve
                    // peers from then on).
                    if spec.caching
                        && !index.cached(f.file, f.exec)
                        && let Ok(r) = caches[f.exec].begin_write(f.file, spec.file_size)
                    {
                        for gone in r.evicted {
                            index.evict(gone, f.exec);
                        }
                        caches[f.exec].commit_write(f.file);
                        index.insert(f.file, f.exec);
                    }
                    pending[f.task] -= 1;
                    if pending[f.task] == 0 {
                        push(
                            &mut heap,
                            now + spec.dispatch + spec.compute,
                            Ev::Done(f.exec, f.task),
                        );
                    }
                }
            }
            Ev::Done(e, task) => {
                busy[e] -= 1;
                if busy[e] == 0 {
                    idle_since[e] = now;
                }
                out.tasks += 1;
                let b = bucket(&mut out.intervals, step, now);
                b.done += 1;
                b.read += tasks[task].files.len() as u64 * spec.file_size;
                out.makespan = out.makespan.max(now);
            }
        }
        // Dispatch while the head can be placed.
        out.peak_queue = out.peak_queue.max(waiting.len());
        while let Some(&head) = waiting.front() {
            let free: Vec<bool> = (0..n)
                .map(|e| registered[e] && busy[e] < spec.cpus)
                .collect();
            let live = registered.iter().filter(|&&r| r).count();
            let utilization = busy.iter().filter(|&&b| b > 0).count() as f64 / live.max(1) as f64;
            let view = FarmView {
                free: &free,
                utilization,
                index: &index,
            };
            let Some(e) = policy.notify(&tasks[head].files, &view) else {
                break;
            };
            let room = spec.cpus - busy[e];
            let more = policy.pick_up(
                e,
                &Queue {
                    tasks,
                    waiting: &waiting,
                    skip: 1,
                },
                room - 1,
                &view,
            );
            let mut chosen: Vec<usize> = more.iter().map(|&i| waiting[i + 1]).collect();
            chosen.insert(0, head);
            let mut positions: Vec<usize> = more.iter().map(|&i| i + 1).collect();
            positions.push(0);
            positions.sort_unstable_by(|a, b| b.cmp(a));
            for p in positions {
                waiting.remove(p);
            }
            for task in chosen {
                busy[e] += 1;
                let mut needs = 0;
                for &f in &tasks[task].files {
                    if index.cached(f, e) {
                        out.local_hits += 1;
                        bucket(&mut out.intervals, step, now).local += 1;
                        caches[e].touch(f);
                        continue;
                    }
                    // A peer holding it (the least loaded), else the store.
                    let peer = index
                        .holders(f)
                        .iter()
                        .min_by_key(|&&p| (servers[1 + p].flows.len(), p))
                        .map(|&p| 1 + p);
                    match peer {
                        Some(_) => {
                            out.global_hits += 1;
                            bucket(&mut out.intervals, step, now).global += 1;
                        }
                        None => {
                            out.misses += 1;
                            bucket(&mut out.intervals, step, now).miss += 1;
                        }
                    }
                    out.bytes_moved += spec.file_size;
                    let s = peer.unwrap_or(0);
                    let server = &mut servers[s];
                    server.advance(now);
                    server.flows.push(Flow {
                        left: spec.file_size as f64,
                        exec: e,
                        task,
                        file: f,
                    });
                    server.generation += 1;
                    if let Some(at) = server.next_end(now) {
                        push(&mut heap, at, Ev::Flow(s, server.generation));
                    }
                    needs += 1;
                }
                pending[task] = needs;
                if needs == 0 {
                    push(
                        &mut heap,
                        now + spec.dispatch + spec.compute,
                        Ev::Done(e, task),
                    );
                }
            }
        }
    }
    out.utilization = if registered_time > 0.0 {
        busy_time / (registered_time * spec.cpus as f64)
    } else {
        0.0
    };
    out.final_executors = registered.iter().filter(|&&r| r).count();
    out.cpu_hours = registered_time * spec.cpus as f64 / 3600.0;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diffusion::stream::{Arrivals, Popularity, generate};

    fn spec(policy: &str, executors: usize, cache: u64, caching: bool) -> FarmSpec {
        FarmSpec {
            executors,
            drp: None,
            cpus: 2,
            cache,
            eviction: "lru".into(),
            policy: policy.into(),
            files: 200,
            file_size: 10_000_000,
            compute: 0.01,
            dispatch: 0.0,
            store_bandwidth: 50e6,
            peer_bandwidth: 125e6,
            caching,
            seed: 1,
            interval: 10.0,
        }
    }

    #[test]
    fn every_read_is_a_local_hit_a_global_hit_or_a_miss_and_moves_what_it_says() {
        let tasks = generate(
            3000,
            200,
            2,
            &Arrivals::Constant(100.0),
            &Popularity::Uniform,
            3,
        );
        for policy in [
            "first-available",
            "max-cache-hit",
            "max-compute-util",
            "good-cache-compute",
        ] {
            let r = run(&spec(policy, 8, 500_000_000, true), &tasks).unwrap();
            assert_eq!(r.tasks, 3000, "{policy}: every task ran");
            assert_eq!(r.local_hits + r.global_hits + r.misses, 6000, "{policy}");
            assert_eq!(
                r.bytes_moved,
                (r.global_hits + r.misses) * 10_000_000,
                "{policy}"
            );
            assert!(
                r.misses >= 200 - 10,
                "{policy}: each file read from the store at least once, nearly"
            );
        }
    }

    #[test]
    fn an_evicted_file_is_never_a_hit_there_again() {
        // One executor caching one file; tasks alternate between two files.
        let tasks: Vec<Task> = (0..20)
            .map(|i| Task {
                arrival: i as f64,
                files: vec![i % 2],
            })
            .collect();
        let mut s = spec("max-compute-util", 1, 10_000_000, true);
        s.cpus = 1;
        let r = run(&s, &tasks).unwrap();
        assert_eq!((r.local_hits, r.global_hits, r.misses), (0, 0, 20));
        // With room for both, all but the first two reads are local.
        s.cache = 20_000_000;
        let r = run(&s, &tasks).unwrap();
        assert_eq!((r.local_hits, r.misses), (18, 2));
    }

    #[test]
    fn diffusion_beats_the_shared_store_when_the_working_set_fits() {
        let tasks = generate(
            5000,
            200,
            1,
            &Arrivals::Constant(100.0),
            &Popularity::Uniform,
            5,
        );
        // first-available on the store alone: 5,000 × 10 MB at 50 MB/s ≥ 1,000 s.
        let store = run(&spec("first-available", 8, 0, false), &tasks).unwrap();
        assert_eq!(store.misses, 5000);
        assert!(store.makespan >= 1000.0, "{}", store.makespan);
        // good-cache-compute with 1 GB caches: the 2 GB working set fits in 8 GB.
        let dd = run(&spec("good-cache-compute", 8, 1_000_000_000, true), &tasks).unwrap();
        assert!(
            dd.makespan < store.makespan / 5.0,
            "{} vs {}",
            dd.makespan,
            store.makespan
        );
        assert!(dd.local_hits > 4000, "{dd:?}");
    }

    #[test]
    fn the_provisioner_grows_under_load_shrinks_when_idle_and_loses_no_task() {
        // A burst of 200 tasks/s for 60 s, a lull, one last task at 400 s.
        let mut tasks = generate(
            12_000,
            200,
            1,
            &Arrivals::Constant(200.0),
            &Popularity::Uniform,
            9,
        );
        tasks.push(Task {
            arrival: 400.0,
            files: vec![0],
        });
        let mut s = spec("good-cache-compute", 32, 1_000_000_000, true);
        s.compute = 0.2;
        s.drp = Some(Drp {
            min: 1,
            queue_threshold: 10,
            allocation: Allocation::Additive(2),
            latency: 5.0,
            idle: 30.0,
            interval: 1.0,
        });
        let r = run(&s, &tasks).unwrap();
        assert_eq!(r.tasks, tasks.len(), "no task lost");
        assert!(r.peak_executors >= 16, "grew: {r:?}");
        assert!(r.final_executors <= 2, "shrank in the lull: {r:?}");
        // The same stream on all 32 from the start costs more CPU time.
        s.drp = None;
        let fixed = run(&s, &tasks).unwrap();
        assert!(
            fixed.cpu_hours > 1.5 * r.cpu_hours,
            "{} vs {}",
            fixed.cpu_hours,
            r.cpu_hours
        );
    }

    #[test]
    fn the_summary_view_draws_every_panel_from_the_intervals() {
        let tasks = generate(
            2000,
            50,
            1,
            &Arrivals::Constant(50.0),
            &Popularity::Uniform,
            2,
        );
        let s = spec("good-cache-compute", 4, 200_000_000, true);
        let r = run(&s, &tasks).unwrap();
        let arrived: u64 = r.intervals.iter().map(|i| i.arrived).sum();
        let done: u64 = r.intervals.iter().map(|i| i.done).sum();
        assert_eq!((arrived, done), (2000, 2000));
        let reads: u64 = r
            .intervals
            .iter()
            .map(|i| i.local + i.global + i.miss)
            .sum();
        assert_eq!(reads, r.local_hits + r.global_hits + r.misses);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("view.svg");
        r.summary_svg(&path, "t", &s).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        for panel in [
            "Throughput",
            "Wait queue",
            "Executors",
            "Where reads were served",
        ] {
            assert!(svg.contains(panel), "{panel}");
        }
    }
}
