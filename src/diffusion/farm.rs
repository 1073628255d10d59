//! The data-diffusion task farm on the simulator's virtual clock (seed 001
//! §3, §5.2): tasks arrive into a wait queue, the dispatch policy places them
//! on executors (two-part notify / pick-up), each task reads its files from
//! the executor's cache (local hit), a peer executor's cache (global hit) or
//! the shared store (miss), caches what it read, then computes.
//!
//! Transfers share bandwidth fairly on the core's
//! [`SharedLink`] (processor sharing): the store's
//! aggregate bandwidth (GPFS's 4 Gb/s in the paper) among all its reads, and
//! each executor's link among the reads served from its cache. Executors are
//! either all there from the start or come and go with the dynamic resource
//! provisioner ([`Drp`]): allocated, after a latency, while the wait queue is
//! long; released after idling, their caches dropped (only idle executors
//! go, so no task is ever lost with one).

use super::dispatcher::{Dispatcher, Read, Source};
use super::stream::Task;
use crate::core::cache_index::ExecId;
use crate::core::events::EventQueue;
use crate::core::link::SharedLink;
use crate::core::window::IdWindow;
use crate::policy::UnknownPolicy;

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
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Interval {
    /// Start of the interval (s).
    pub t: f64,
    /// Tasks that arrived.
    pub arrived: u64,
    /// Tasks that ended.
    pub done: u64,
    /// Bytes the ended tasks read (local, peer or store).
    pub read: u64,
    /// Files the arrived tasks read (the ideal throughput's numerator).
    pub arrived_reads: u64,
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
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
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
    /// Tasks put back into the wait queue after a failed read.
    pub requeued: u64,
    /// Most executors registered at once.
    pub peak_executors: usize,
    /// Executors registered at the end.
    pub final_executors: usize,
    /// CPU hours of registered executors.
    pub cpu_hours: f64,
    /// Per interval of `FarmSpec::interval` seconds.
    pub intervals: Vec<Interval>,
    /// Events the simulator processed (0 for a live run).
    pub events: u64,
}

impl FarmRun {
    /// The per-interval metrics as CSV, one row an interval: the counts,
    /// then seed 001's rates — arrivals and throughput in tasks/s,
    /// throughput and the ideal (arrivals × files read) in Gb/s nominal, and
    /// the shares of reads served locally, by a peer and by the store.
    pub fn intervals_csv(&self, spec: &FarmSpec) -> String {
        use std::fmt::Write as _;
        let step = if spec.interval > 0.0 {
            spec.interval
        } else {
            60.0
        };
        let gbps = |bytes: f64| bytes * 8.0 / step / 1e9;
        let mut out = String::from(
            "t_s,arrived,done,bytes_read,local,global,miss,wait_queue,executors,busy,\
             arrival_rate,throughput_tasks_s,throughput_gbps,ideal_gbps,local_pct,global_pct,miss_pct\n",
        );
        for i in &self.intervals {
            let reads = (i.local + i.global + i.miss).max(1) as f64;
            let pct = |n: u64| 100.0 * n as f64 / reads;
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{:.3},{:.3},{:.4},{:.4},{:.2},{:.2},{:.2}",
                i.t,
                i.arrived,
                i.done,
                i.read,
                i.local,
                i.global,
                i.miss,
                i.queue,
                i.executors,
                i.busy,
                i.arrived as f64 / step,
                i.done as f64 / step,
                gbps(i.read as f64),
                gbps(i.arrived_reads as f64 * spec.file_size as f64),
                pct(i.local),
                pct(i.global),
                pct(i.miss)
            );
        }
        out
    }
}

/// A read in flight at one server (the store or a peer's link).
#[derive(Debug, Clone)]
struct Flow {
    /// The reading executor and task, and the file read.
    exec: ExecId,
    task: usize,
    read: Read,
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

/// Runs `tasks` through the farm `spec` to the end.
pub fn run(spec: &FarmSpec, tasks: &[Task]) -> Result<FarmRun, UnknownPolicy> {
    let mut d = Dispatcher::new(spec, tasks)?;
    let n = spec.executors;
    // Files a task still waits for, per task.
    let mut pending = vec![0usize; tasks.len()];
    // Server 0 is the store, 1 + e executor e's link, each shared fairly
    // among the reads it serves (no per-read cap in the paper's model).
    let mut servers: Vec<SharedLink<u64>> = (0..=n)
        .map(|i| {
            let rate = if i == 0 {
                spec.store_bandwidth
            } else {
                spec.peer_bandwidth
            };
            SharedLink::new(rate, f64::INFINITY)
        })
        .collect();
    let mut flows: IdWindow<Flow> = IdWindow::default();
    let mut next_flow = 0u64;
    let mut heap = EventQueue::new();
    let push = |heap: &mut EventQueue<Ev>, at: f64, ev: Ev| heap.push(at, ev);
    for (i, t) in tasks.iter().enumerate() {
        push(&mut heap, t.arrival, Ev::Arrive(i));
    }
    if spec.drp.is_some() {
        push(&mut heap, 0.0, Ev::Provision);
    }
    let mut events = 0u64;
    while let Some((now, ev)) = heap.pop() {
        events += 1;
        d.advance(now);
        match ev {
            Ev::Arrive(i) => d.arrive(now, i),
            Ev::Provision => {
                let Some(drp) = spec.drp else { continue };
                // Released executors are idle and serve nobody: nothing of
                // theirs is in flight.
                let p = d.provision(now);
                if p.allocate > 0 {
                    push(&mut heap, now + drp.latency, Ev::Allocated(p.allocate));
                }
                if !d.finished() {
                    push(&mut heap, now + drp.interval, Ev::Provision);
                }
            }
            Ev::Allocated(count) => {
                d.allocated(now, count);
            }
            Ev::Flow(s, generation) => {
                let Some(done) = servers[s].take_ended(now, generation) else {
                    continue;
                };
                if let Some((at, generation)) = servers[s].next_end(now) {
                    push(&mut heap, at, Ev::Flow(s, generation));
                }
                for id in done {
                    let f = flows.take(id).expect("a flow on a link is in flight");
                    d.fetched(now, f.exec, f.read, f.read.source);
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
            Ev::Done(e, task) => d.done(now, e, task),
        }
        for p in d.dispatch(now) {
            let mut needs = 0;
            for read in p.reads {
                let s = match read.source {
                    Source::Local => continue,
                    Source::Peer(peer) => 1 + peer,
                    Source::Store => 0,
                };
                let id = next_flow;
                next_flow += 1;
                flows.insert(
                    id,
                    Flow {
                        exec: p.exec,
                        task: p.task,
                        read,
                    },
                );
                servers[s].start(now, id, spec.file_size as f64);
                if let Some((at, generation)) = servers[s].next_end(now) {
                    push(&mut heap, at, Ev::Flow(s, generation));
                }
                needs += 1;
            }
            pending[p.task] = needs;
            if needs == 0 {
                push(
                    &mut heap,
                    now + spec.dispatch + spec.compute,
                    Ev::Done(p.exec, p.task),
                );
            }
        }
    }
    Ok(FarmRun {
        events,
        ..d.finish()
    })
}

/// A small farm for unit tests: 200 files of 10 MB, a 50 MB/s store,
/// 125 MB/s links, 2 CPUs an executor.
#[cfg(test)]
pub(crate) fn test_spec(policy: &str, executors: usize, cache: u64, caching: bool) -> FarmSpec {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diffusion::stream::{Arrivals, Popularity, generate};

    use super::test_spec as spec;

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
}
