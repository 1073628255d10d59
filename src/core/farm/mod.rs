//! The data-diffusion farm's world (seed 001 §3): the scenario
//! ([`FarmSpec`], with the dynamic resource provisioner's tunables [`Drp`]),
//! the task stream's [`Task`]s, what a run measured ([`FarmRun`], per
//! [`Interval`]), and Falkon's dispatcher as a sans-IO state machine
//! ([`Dispatcher`]) in the manager's shape: an engine tells it what
//! happened ([`FarmEvent`]) at a nominal time and carries out what it answers
//! ([`FarmCommand`]), and wakes it at [`Dispatcher::next_wakeup`]. The
//! simulator (`sim::farm`) and the live farm (`live::farm`) both drive it.

mod dispatcher;

pub use dispatcher::{Dispatcher, EvictionFactory};

use super::FileId;
use super::cache_index::ExecId;

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
    /// Each executor's local disk, shared by the reads of its own cache
    /// (bytes/s; infinite: a local hit costs no time). Falkon's executors
    /// read a cached file from local disk before computing (seed 001 §5.2).
    pub disk_bandwidth: f64,
    /// Set-up time of each read from a peer's cache (s), before its bytes
    /// flow: the per-transfer cost of Falkon's executor-to-executor copies.
    pub peer_latency: f64,
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
    /// Distinct files in the executors' caches at the end of the interval.
    pub cached_files: usize,
    /// Copies of them, over all caches, at the end of the interval.
    pub cached_copies: usize,
    /// Summed response times (arrival to end, s) of the tasks that arrived
    /// in the interval.
    pub response: f64,
    /// When the last of the tasks that arrived in the interval ended (s).
    pub last_end: f64,
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
    /// Mean response time (s): from a task's arrival to its end, seed
    /// 001's `AR_T` (wait queue, reads and compute; results are delivered
    /// at once).
    pub response_mean: f64,
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
             arrival_rate,throughput_tasks_s,throughput_gbps,ideal_gbps,local_pct,global_pct,miss_pct,\
             cached_files,cached_copies\n",
        );
        for i in &self.intervals {
            let reads = (i.local + i.global + i.miss).max(1) as f64;
            let pct = |n: u64| 100.0 * n as f64 / reads;
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{:.3},{:.3},{:.4},{:.4},{:.2},{:.2},{:.2},{},{}",
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
                pct(i.miss),
                i.cached_files,
                i.cached_copies
            );
        }
        out
    }
}

/// One task: when it arrives and what it reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// Arrival time (s).
    pub arrival: f64,
    /// Files it reads.
    pub files: Vec<FileId>,
}

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

/// What happened, as an engine tells the [`Dispatcher`].
#[derive(Debug, Clone, PartialEq)]
pub enum FarmEvent {
    /// Time has passed: the arrivals, allocations and provisioning
    /// decisions due by now happen (in that order, each followed by
    /// dispatching).
    Tick,
    /// A read ended (reads that end at one instant are handed over
    /// together, with [`Dispatcher::handle_all`]).
    Fetched(Fetched),
    /// A read of a task failed past the engine's retries: the planned peer
    /// no longer serves it (the engine then sends [`FarmEvent::Requeue`]
    /// for its task).
    ReadFailed(Read),
    /// A task could not run on an executor (a read failed): back to the
    /// head of the wait queue, to be placed again.
    Requeue {
        /// The executor.
        exec: ExecId,
        /// The task.
        task: usize,
    },
    /// A task's reads and compute ended.
    Done {
        /// The executor.
        exec: ExecId,
        /// The task.
        task: usize,
    },
}

/// One read that ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fetched {
    /// The executor that read.
    pub exec: ExecId,
    /// The read as placed.
    pub read: Read,
    /// Where it was served from: the planned source, or the store when the
    /// planned peer had evicted the file meanwhile.
    pub served: Source,
    /// The engine's id of what arrived (echoed in [`FarmCommand::Commit`]).
    pub part: u64,
}

/// What the dispatcher asks an engine to do.
#[derive(Debug, Clone, PartialEq)]
pub enum FarmCommand {
    /// Executors registered now (allocated after the provisioner's
    /// latency): start them.
    Start(Vec<ExecId>),
    /// An executor released by the provisioner: stop it, delete its pool.
    Release(ExecId),
    /// Run a placed task: its reads, then its dispatch and compute time.
    Run(Placement),
    /// What to do with a file that arrived at an executor: delete the
    /// `evicted` files, then list the arrival (`keep`) or drop it.
    Commit {
        /// The executor.
        exec: ExecId,
        /// The file.
        file: FileId,
        /// [`Fetched::part`] of the arrival.
        part: u64,
        /// Whether it is cached now.
        keep: bool,
        /// Files evicted to make room for it.
        evicted: Vec<FileId>,
    },
}
