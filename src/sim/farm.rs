//! The data-diffusion task farm on the simulator's virtual clock (seed 001
//! §3, §5.2): tasks arrive into a wait queue, the dispatch policy places them
//! on executors (two-part notify / pick-up), each task reads its files from
//! the executor's cache (local hit), a peer executor's cache (global hit) or
//! the shared store (miss), caches what it read, then computes.
//!
//! Transfers are flows of the core's max-min [`Network`], the grid's model:
//! a read from the store crosses the store's aggregate bandwidth (GPFS's
//! 4 Gb/s in the paper) and the reader's link in; a read from a peer's
//! cache (after the peer read's set-up time) crosses the peer's link out
//! and the reader's link in (each executor's link is full duplex); a read
//! of its own cache crosses the executor's local disk. Executors are
//! either all there from the start or come and go with the dynamic resource
//! provisioner ([`Drp`](crate::core::farm::Drp)): allocated, after a latency, while the wait queue is
//! long; released after idling, their caches dropped (only idle executors
//! go, so no task is ever lost with one).

use crate::core::cache_index::ExecId;
use crate::core::events::EventQueue;
use crate::core::farm::{FarmCommand, FarmEvent, FarmRun, FarmSpec, Fetched, Read, Source, Task};
use crate::core::network::{Network, ResourceId, RouteId, ShareId};
use crate::core::window::IdWindow;
use std::sync::Arc;

use crate::policy::{self, PolicyError};

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
    /// A share may have a flow done.
    Flow(ShareId, u64),
    /// A peer read's set-up ended: its bytes start to flow on this route.
    Begin(RouteId, u64),
    /// A task's compute ended on this executor.
    Done(ExecId, usize),
}

/// The farm's links and reads in flight: what the simulator carries out.
struct Links<'a> {
    spec: &'a FarmSpec,
    /// The store, every executor's link (each way) and local disk (no
    /// per-read cap in the paper's model).
    net: Network<u64>,
    store: ResourceId,
    link_out: Vec<ResourceId>,
    link_in: Vec<ResourceId>,
    disk: Vec<ResourceId>,
    flows: IdWindow<Flow>,
    next_flow: u64,
    /// Files a task still waits for, per task.
    pending: Vec<usize>,
}

impl Links<'_> {
    /// Starts the reads of placed tasks (a task with none computes at
    /// once); the other commands move no simulated bytes.
    fn carry_out(&mut self, now: f64, commands: &mut Vec<FarmCommand>, heap: &mut EventQueue<Ev>) {
        let spec = self.spec;
        let disks = spec.disk_bandwidth.is_finite();
        for c in commands.drain(..) {
            let FarmCommand::Run(p) = c else { continue };
            let mut needs = 0;
            for read in p.reads {
                let route = match read.source {
                    Source::Local if disks => self.net.route(&[self.disk[p.exec]], f64::INFINITY),
                    Source::Local => continue,
                    Source::Peer(peer) => self
                        .net
                        .route(&[self.link_out[peer], self.link_in[p.exec]], f64::INFINITY),
                    Source::Store => self
                        .net
                        .route(&[self.store, self.link_in[p.exec]], f64::INFINITY),
                };
                let id = self.next_flow;
                self.next_flow += 1;
                self.flows.insert(
                    id,
                    Flow {
                        exec: p.exec,
                        task: p.task,
                        read,
                    },
                );
                if matches!(read.source, Source::Peer(_)) && spec.peer_latency > 0.0 {
                    heap.push(now + spec.peer_latency, Ev::Begin(route, id));
                } else {
                    self.begin(now, route, id, heap);
                }
                needs += 1;
            }
            self.pending[p.task] = needs;
            if needs == 0 {
                heap.push(now + spec.dispatch + spec.compute, Ev::Done(p.exec, p.task));
            }
        }
    }

    /// Flow `id`'s bytes start on `route`.
    fn begin(&mut self, now: f64, route: RouteId, id: u64, heap: &mut EventQueue<Ev>) {
        self.net.start(now, route, id, self.spec.file_size as f64);
        self.reschedule(now, heap);
    }

    /// Schedules the next flow end of every share the network re-rated.
    fn reschedule(&mut self, now: f64, heap: &mut EventQueue<Ev>) {
        self.net.schedule_changed(now, |at, share, generation| {
            heap.push(at, Ev::Flow(share, generation))
        });
    }
}

/// Runs `tasks` through the farm `spec` to the end.
pub fn run(spec: &FarmSpec, tasks: &[Task]) -> Result<FarmRun, PolicyError> {
    run_with(spec, tasks, policy::Registry::shared_builtin())
}

/// [`run`], its policies looked up in `registry`. An external policy
/// program that fails ends the run with its failure.
pub fn run_with(
    spec: &FarmSpec,
    tasks: &[Task],
    registry: Arc<policy::Registry>,
) -> Result<FarmRun, PolicyError> {
    let policies = Arc::new(policy::RunPolicies::new(registry, spec.seed, Vec::new()));
    let mut d = policy::farm_dispatcher(spec, tasks, &policies)?;
    let mut net = Network::new();
    let store = net.add_resource(spec.store_bandwidth);
    let mut each = |rate: f64| -> Vec<ResourceId> {
        (0..spec.executors)
            .map(|_| net.add_resource(rate))
            .collect()
    };
    let (link_out, link_in, disk) = (
        each(spec.peer_bandwidth),
        each(spec.peer_bandwidth),
        each(spec.disk_bandwidth),
    );
    let mut links = Links {
        spec,
        net,
        store,
        link_out,
        link_in,
        disk,
        flows: IdWindow::default(),
        next_flow: 0,
        pending: vec![0; tasks.len()],
    };
    let mut heap = EventQueue::new();
    let mut commands = Vec::new();
    let mut events = 0u64;
    loop {
        // The dispatcher's wake-up comes before another event at the same
        // instant, as arrivals did when each was an event of its own.
        let next_event = heap.peek_time();
        if let Some(at) = d
            .next_wakeup()
            .filter(|&w| next_event.is_none_or(|t| w <= t))
        {
            events += 1;
            d.handle(at, FarmEvent::Tick, &mut commands);
            links.carry_out(at, &mut commands, &mut heap);
            continue;
        }
        let Some((now, ev)) = heap.pop() else { break };
        if policies.failure().is_some() {
            break;
        }
        events += 1;
        match ev {
            Ev::Flow(share, generation) => {
                let Some(done) = links.net.take_ended(now, share, generation) else {
                    continue;
                };
                links.reschedule(now, &mut heap);
                let mut fetched = Vec::with_capacity(done.len());
                for id in done {
                    let f = links.flows.take(id).expect("a flow on a link is in flight");
                    // A local read only takes time: nothing arrives.
                    if f.read.source != Source::Local {
                        fetched.push(Fetched {
                            exec: f.exec,
                            read: f.read,
                            served: f.read.source,
                            part: id,
                        });
                    }
                    links.pending[f.task] -= 1;
                    if links.pending[f.task] == 0 {
                        heap.push(now + spec.dispatch + spec.compute, Ev::Done(f.exec, f.task));
                    }
                }
                let fetched = fetched.into_iter().map(FarmEvent::Fetched);
                d.handle_all(now, fetched, &mut commands);
            }
            Ev::Begin(s, id) => links.begin(now, s, id, &mut heap),
            Ev::Done(exec, task) => d.handle(now, FarmEvent::Done { exec, task }, &mut commands),
        }
        links.carry_out(now, &mut commands, &mut heap);
    }
    if let Some(failure) = policies.failure() {
        return Err(failure.into());
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
        disk_bandwidth: f64::INFINITY,
        peer_latency: 0.0,
        caching,
        seed: 1,
        interval: 10.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::farm::{Allocation, Drp};
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
