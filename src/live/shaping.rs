//! The live engine's network: the simulator's max-min model
//! ([`crate::core::network`]) carried out on real bytes.
//!
//! * The grid ([`GridShapers`]): every limit a transfer crosses — the
//!   source's out, each shared link, the receiver's in, the per-stream cap —
//!   is a resource of the same [`GridNetwork`] the simulator drives, held by
//!   the process; each pull is a flow of it from its request (its first
//!   byte, when the source has a latency) to its end, and passes the chunks
//!   it receives only as fast as the model serves that flow.
//!   All of a path's limits are applied at one place, the puller: a server
//!   ahead of the receiver would fill the socket buffers at its own share and
//!   take rate from its other streams. A pull whose source is served in the
//!   same process says so with the process's key ([`SHAPED_HEADER`]); the
//!   source's server then sends unshaped. A source in another process (a
//!   `gridbed site` daemon) shapes its own out with a governor bucket, and
//!   its puller the rest.
//! * The data-diffusion farm: each limit is a [`Shaper`] (a governor bucket
//!   behind a FIFO turn, so that streams waiting on it get equal shares), and
//!   a read passes each chunk through the shapers of its path in turn
//!   ([`PathShaping::through`]), a whole chunk of each shaper per turn.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use smallvec::SmallVec;

use crate::config::{Emulation, SiteConfig};
use crate::core::SiteId;
use crate::core::network::RouteId;
use crate::core::topology::{GridNetwork, Interface, Topology};

/// Request header naming the shaping key of the puller's process: the
/// puller applies the source's out and stream cap itself.
pub const SHAPED_HEADER: &str = "X-Gridbed-Shaped";
/// Request header: microseconds the shared links on the path add before the
/// first byte (the source waits them out holding the connection, as it does
/// its own latency).
pub const LATENCY_HEADER: &str = "X-Gridbed-Path-Latency-Us";
/// Response header: microseconds the source waited (its latency and the
/// path's) before answering, which the puller's clock does not count as
/// its own.
pub const WAITED_HEADER: &str = "X-Gridbed-Waited-Us";
/// The longest wait for the source's next bytes (its response head, or
/// the next piece of its body) before the pull fails as stalled. It counts
/// only time spent waiting on the source: a puller pacing itself through a
/// narrow share (hundreds of streams on one link) may hold a chunk for
/// minutes before it reads on, and that is the network model, not a stall.
/// (reqwest's own `read_timeout` runs from the last byte read, pacing
/// included, and cut such pulls after their last byte.)
pub const READ_STALL: Duration = Duration::from_secs(60);

/// The most path latency a request may ask for.
pub const MAX_PATH_LATENCY: Duration = Duration::from_secs(3600);

/// A byte rate shared fairly by whoever passes bytes through it: a site's
/// out or in, a shared link, an executor's local disk. Streams take their
/// turn through a FIFO lock (tokio's mutex is fair), so concurrent streams
/// get equal shares of the rate, as the simulator's fair-share model
/// assumes; governor alone lets whichever waiter wakes first win.
pub struct Shaper {
    turn: tokio::sync::Mutex<()>,
    bucket: ByteBucket,
    chunk: usize,
}

impl Shaper {
    /// A shaper of `rate` bytes/s letting at most `chunk` bytes through at
    /// once; None when the rate is unlimited.
    pub fn new(rate: f64, chunk: usize) -> Option<Shaper> {
        ByteBucket::new(rate, chunk).map(|bucket| Shaper {
            turn: tokio::sync::Mutex::new(()),
            bucket,
            chunk,
        })
    }

    /// A shaper of `rate` with the chunk [`chunk_for`] it.
    pub fn of(rate: f64) -> Option<Arc<Shaper>> {
        Shaper::new(rate, chunk_for(rate)).map(Arc::new)
    }

    /// The most bytes one [`Shaper::pass`] lets through.
    pub fn chunk(&self) -> usize {
        self.chunk
    }

    /// Waits for this stream's turn and until `bytes` (at most a chunk) may
    /// pass.
    pub async fn pass(&self, bytes: usize) {
        let _turn = self.turn.lock().await;
        self.bucket.take(bytes).await;
    }
}

/// A byte-rate bucket. Governor refills at most one cell a nanosecond, so
/// at rates beyond 10^8 bytes/s a cell stands for `unit` bytes (a chunk
/// then waits for its bytes rounded up to whole cells, at most `unit - 1`
/// bytes early: under a microsecond of the rate).
pub struct ByteBucket {
    limiter: DefaultDirectRateLimiter,
    unit: u64,
}

/// Cells a second the buckets stay under.
const MAX_CELL_RATE: f64 = 1e8;

impl ByteBucket {
    /// A bucket of `rate` bytes/s holding at most `chunk` bytes; None when
    /// unlimited. It starts empty: a full bucket would let a file smaller
    /// than a chunk through at once, and emulated files are often that
    /// small.
    pub fn new(rate: f64, chunk: usize) -> Option<ByteBucket> {
        if !rate.is_finite() {
            return None;
        }
        let rate = rate.max(1e-3);
        let unit = (rate / MAX_CELL_RATE).ceil().max(1.0) as u64;
        let period = Duration::from_secs_f64(unit as f64 / rate);
        let burst = NonZeroU32::new((chunk as u64).div_ceil(unit).min(u32::MAX as u64) as u32)?;
        let limiter = RateLimiter::direct(Quota::with_period(period)?.allow_burst(burst));
        let _ = limiter.check_n(burst);
        Some(ByteBucket { limiter, unit })
    }

    /// Waits until `bytes` (at most the bucket's chunk) may go.
    pub async fn take(&self, bytes: usize) {
        let cells = (bytes as u64).div_ceil(self.unit).min(u32::MAX as u64) as u32;
        if let Some(cells) = NonZeroU32::new(cells) {
            let _ = self.limiter.until_n_ready(cells).await;
        }
    }

    #[cfg(test)]
    fn unit(&self) -> u64 {
        self.unit
    }
}

/// The chunk shaped streams move at `rate` bytes/s: about 1/100 s of it, so
/// a transfer takes `size / rate` within a few milliseconds.
pub fn chunk_for(rate: f64) -> usize {
    if rate.is_finite() && rate < 1e9 {
        ((rate / 100.0) as usize).clamp(512, 256 * 1024)
    } else {
        1 << 20
    }
}

/// Every limit one pull's bytes pass, in order, and what its request tells
/// the source.
pub struct PathShaping {
    shapers: SmallVec<[Arc<Shaper>; 4]>,
    /// The per-stream cap (bytes/s, ∞: none), when the puller applies it.
    cap: f64,
    /// Its bucket, made (empty) when the first bytes arrive: made earlier,
    /// it would fill while the source waits out its latency and let the
    /// first chunk through free.
    stream: std::sync::OnceLock<Option<ByteBucket>>,
    /// The largest piece every bucket on the path takes at once.
    chunk: usize,
    /// This process's key, when the puller applies the source's out.
    pub key: Option<String>,
    /// Where the source, in this process, keeps the pull's connection
    /// slot until the puller has its bytes (with `key`).
    pub held: Option<Arc<HeldSlots>>,
    /// What the shared links on the path add before the first byte.
    pub latency: Duration,
    /// The longest wait for the source's next bytes ([`READ_STALL`] unless
    /// set otherwise).
    pub stall: Duration,
    /// Bytes passed, and granted by each shaper so far.
    turns: std::sync::Mutex<Turns>,
    /// The pull's flow in the process's model, when it is paced by it.
    flow: Option<ModelFlow>,
}

/// A pull's account at the shapers of its path.
#[derive(Default)]
struct Turns {
    /// Bytes the pull will move (0: unknown).
    total: u64,
    /// Bytes passed.
    consumed: u64,
    /// Bytes each shaper let through for it.
    granted: SmallVec<[u64; 4]>,
}

impl PathShaping {
    /// No limit at all (the source shapes what it serves, if anything).
    pub fn none() -> PathShaping {
        PathShaping {
            shapers: SmallVec::new(),
            cap: f64::INFINITY,
            stream: std::sync::OnceLock::new(),
            chunk: usize::MAX,
            key: None,
            held: None,
            latency: Duration::ZERO,
            stall: READ_STALL,
            turns: Default::default(),
            flow: None,
        }
    }

    /// Through `shapers` in order, each stream capped at `cap` bytes/s (∞:
    /// none).
    pub fn through(shapers: impl IntoIterator<Item = Arc<Shaper>>, cap: f64) -> PathShaping {
        let shapers: SmallVec<[Arc<Shaper>; 4]> = shapers.into_iter().collect();
        let chunk = shapers
            .iter()
            .map(|s| s.chunk())
            .chain(cap.is_finite().then(|| chunk_for(cap)))
            .min()
            .unwrap_or(usize::MAX);
        PathShaping {
            cap,
            stream: std::sync::OnceLock::new(),
            shapers,
            chunk,
            key: None,
            held: None,
            latency: Duration::ZERO,
            stall: READ_STALL,
            turns: Default::default(),
            flow: None,
        }
    }

    /// The pull's request is on its way. A flow whose source is served here
    /// and answers at once (no latency on the source or the path) starts
    /// in the model now, as a transfer starts in the simulator when it is
    /// asked for; the request's round trip is then the model's time too
    /// (25 pulls asked at once share from that instant on, not from when
    /// each response came).
    pub fn requested(&self) {
        if let Some(f) = &self.flow
            && f.at_request
        {
            f.start();
        }
    }

    /// The pull's bytes are due from `at`: its request's departure plus
    /// the latency the source waited out, as a transfer's are in the
    /// simulator. The request's round trip is the emulator's own time, not
    /// the model's (a 5 kB pull of 17 ms took 21% longer than the model
    /// with the clock started at its first byte).
    pub fn begin(&self, at: tokio::time::Instant) {
        if let Some(f) = &self.flow
            && let Ok(mut clock) = f.clock.lock()
        {
            clock.due_from = Some(at);
        }
    }

    /// The pull will move `total` bytes in all: its last turn at each
    /// shaper takes only what is left.
    pub fn expect(&self, total: u64) {
        if let Ok(mut t) = self.turns.lock() {
            t.total = total;
        }
        if let Some(f) = &self.flow {
            f.start();
        }
    }

    /// Waits until `bytes` may pass every limit of the path, a piece at a
    /// time: the stream's cap, then each shaper in turn. At each shaper the
    /// pull takes its turns a whole chunk of that shaper at a time (and uses
    /// it over the following pieces), so that streams whose paths have other
    /// slowest links still get equal bytes, not equal turns, of a shared
    /// shaper.
    pub async fn pass(&self, mut bytes: usize) {
        let stream = self
            .stream
            .get_or_init(|| ByteBucket::new(self.cap, chunk_for(self.cap)));
        while bytes > 0 {
            // A piece is about 1/100 s at the flow's rate, so that a change
            // of rate applies within it.
            let piece = self
                .flow
                .as_ref()
                .map_or(usize::MAX, |f| chunk_for(f.network.rate(f.route)));
            let n = bytes.min(self.chunk).min(piece);
            if let Some(s) = stream {
                s.take(n).await;
            }
            if let Some(f) = &self.flow {
                f.pace(n).await;
            }
            let (consumed, total) = match self.turns.lock() {
                Ok(mut t) => {
                    t.consumed += n as u64;
                    if t.granted.len() < self.shapers.len() {
                        t.granted.resize(self.shapers.len(), 0);
                    }
                    (t.consumed, t.total)
                }
                Err(_) => return,
            };
            for (k, s) in self.shapers.iter().enumerate() {
                let granted = self.turns.lock().map_or(consumed, |t| t.granted[k]);
                if granted >= consumed {
                    continue;
                }
                let left = match total {
                    0 => u64::MAX,
                    t => t.saturating_sub(granted),
                };
                let grant = (s.chunk() as u64).min(left).max(consumed - granted);
                s.pass(grant as usize).await;
                if let Ok(mut t) = self.turns.lock() {
                    t.granted[k] += grant;
                }
            }
            bytes -= n;
        }
    }
}

/// The grid's network as this process carries it out: the core's max-min
/// model ([`GridNetwork`]) over the limits this process holds — for each
/// site served here its out and stream cap, for each site that pulls here
/// its in, and every shared link — and each pull paced by the bytes the
/// model has served its flow, every change of rate as pulls start and end
/// integrated ([`crate::core::network::Network::clock`]). Pacing by the model's
/// rates, rather than passing each chunk through a bucket per limit in turn,
/// is what keeps both engines on one rule: buckets in series lose the rate
/// a stream could use at one limit while it waits at another, and streams
/// whose slowest limits differ take unequal bytes per turn of a shared one
/// (measured: 17–75% per transfer on `testbeds/network/mixed.toml`).
///
/// The connection slots a server of this process holds for pulls of this
/// process, by transfer id. Such a pull is shaped by its puller, so its
/// server hands all of its bytes to the socket at once; the slot (one of
/// the source's `max_connections`) is held here until the puller has read
/// them, as the core's rule holds it until the bytes arrive.
#[derive(Default)]
pub struct HeldSlots(std::sync::Mutex<HashMap<u64, Option<Box<dyn Send>>>>);

impl HeldSlots {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Option<Box<dyn Send>>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A server keeps `slot` for transfer `id` until its puller is done;
    /// the slot goes at once when the puller already gave up.
    pub fn hold(&self, id: u64, slot: Box<dyn Send>) {
        let mut map = self.map();
        if let Some(None) = map.remove(&id) {
            drop(map);
            drop(slot);
        } else {
            map.insert(id, Some(slot));
        }
    }

    /// Transfer `id`'s puller is done. When it had no answer (it timed out
    /// or lost the connection first), the server may still come to hold a
    /// slot for it, which then goes at once: a mark says so.
    pub fn release(&self, id: u64, answered: bool) {
        let mut map = self.map();
        let slot = map.remove(&id);
        if slot.is_none() && !answered {
            map.insert(id, None);
        }
        drop(map);
        drop(slot);
    }

    /// How many slots are held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map().values().filter(|s| s.is_some()).count()
    }

    /// Whether no slot is held.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A site's server shapes its out with a governor bucket for pulls of
/// other processes (a `gridbed site` daemon); pulls of this process present
/// the process's key and are sent unshaped.
pub struct GridShapers {
    /// The model, in real bytes/s and real seconds since `epoch`.
    grid: std::sync::Mutex<GridNetwork<u64>>,
    epoch: std::time::Instant,
    next_flow: std::sync::atomic::AtomicU64,
    /// Each served site's out bucket, for pulls of other processes.
    out: Vec<Option<Arc<Shaper>>>,
    link_latency: Vec<Duration>,
    /// Each served site's own latency before it answers.
    source_latency: Vec<Duration>,
    /// Which sites this process serves and pulls for.
    here: Vec<bool>,
    topology: Topology,
    key: String,
    held: Arc<HeldSlots>,
}

impl GridShapers {
    /// The network of the `topology`'s sites, in real units of `em`, for
    /// the sites `here` this process runs (by id, with their
    /// configuration); the limits of the other sites are theirs to apply.
    pub fn new(here: &[(SiteId, &SiteConfig)], topology: &Topology, em: Emulation) -> Self {
        let n = topology.paths.len();
        let free = Interface {
            out: f64::INFINITY,
            inbound: f64::INFINITY,
            stream_cap: f64::INFINITY,
        };
        let mut interfaces = vec![free; n];
        let mut out = vec![None; n];
        let mut local = vec![false; n];
        let mut source_latency = vec![Duration::ZERO; n];
        for &(i, s) in here {
            source_latency[i] = super::site::real_duration(em.real_secs(s.latency));
            interfaces[i] = Interface {
                out: em.real_rate(s.bandwidth_out),
                inbound: em.real_rate(s.bandwidth_in),
                stream_cap: em.real_rate(s.stream_cap),
            };
            // File bytes, as the model's resources carry them.
            out[i] = Shaper::of(interfaces[i].out * topology.protocol_efficiency);
            local[i] = true;
        }
        let mut real = topology.clone();
        for l in &mut real.links {
            l.bandwidth = em.real_rate(l.bandwidth);
        }
        GridShapers {
            grid: std::sync::Mutex::new(GridNetwork::new(&real, &interfaces)),
            epoch: std::time::Instant::now(),
            next_flow: Default::default(),
            out,
            link_latency: topology
                .links
                .iter()
                .map(|l| super::site::real_duration(em.real_secs(l.latency)))
                .collect(),
            source_latency,
            here: local,
            topology: topology.clone(),
            key: format!("{:032x}", rand::random::<u128>()),
            held: Arc::default(),
        }
    }

    /// What `site`'s server shapes its out with (for pulls of another
    /// process).
    pub fn egress(&self, site: SiteId) -> Option<Arc<Shaper>> {
        self.out.get(site).cloned().flatten()
    }

    /// The key a pull of this process presents to a server it shapes for.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Where this process's servers keep the connection slots of its own
    /// pulls until each puller is done.
    pub fn held(&self) -> Arc<HeldSlots> {
        self.held.clone()
    }

    /// The limits of a pull by `to` from `from`: its route in the model
    /// (the source's out and cap when it is served here, the links between
    /// them, `to`'s in) and the links' latency.
    pub fn path(self: &Arc<Self>, from: SiteId, to: SiteId) -> PathShaping {
        let local = self.here.get(from).copied().unwrap_or(false);
        let route = self.grid.lock().map(|mut g| g.route(from, to).0).ok();
        let mut path = PathShaping::through([], f64::INFINITY);
        path.flow = route.map(|route| ModelFlow {
            network: self.clone(),
            route,
            id: self
                .next_flow
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            at_request: local
                && self.source_latency[from].is_zero()
                && self.topology.crossed(from, to).iter().all(|&l| self.link_latency[l].is_zero()),
            started: Default::default(),
            clock: Default::default(),
        });
        path.key = local.then(|| self.key.clone());
        path.held = local.then(|| self.held.clone());
        path.latency = self
            .topology
            .crossed(from, to)
            .iter()
            .map(|&l| self.link_latency[l])
            .sum();
        path
    }

    fn now(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
    }

    /// Flow `id` starts on `route`; its route's clock and rate then.
    fn start(&self, route: RouteId, id: u64) -> Option<(f64, f64)> {
        let mut g = self.grid.lock().ok()?;
        let now = self.now();
        // The live bytes decide when a flow ends: the model's end schedule
        // (which its size would set) is not kept.
        g.net.start(now, route, id, f64::MAX);
        g.net.take_changed(&mut Vec::new());
        Some((g.net.clock(now, route), g.net.rate(route)))
    }

    /// Each flow's rate on `route` now (bytes/s).
    fn rate(&self, route: RouteId) -> f64 {
        self.grid
            .lock()
            .map_or(f64::INFINITY, |mut g| g.net.rate(route))
    }

    /// The clock of `route` (bytes served to each of its flows) and each
    /// flow's rate now.
    fn progress(&self, route: RouteId) -> Option<(f64, f64)> {
        let mut g = self.grid.lock().ok()?;
        let now = self.now();
        Some((g.net.clock(now, route), g.net.rate(route)))
    }

    /// Flow `id` leaves `route`.
    fn end(&self, route: RouteId, id: u64) {
        if let Ok(mut g) = self.grid.lock() {
            let now = self.now();
            g.net.remove(now, route, id);
            g.net.take_changed(&mut Vec::new());
        }
    }
}

/// A pull's flow in the process's model: started when its first bytes
/// come, paced by the bytes the model has served it, removed when the pull
/// is dropped.
struct ModelFlow {
    network: Arc<GridShapers>,
    route: RouteId,
    id: u64,
    /// Whether it starts as its request goes ([`PathShaping::requested`])
    /// rather than when its first bytes come.
    at_request: bool,
    started: std::sync::atomic::AtomicBool,
    clock: std::sync::Mutex<FlowClock>,
}

/// Where a pull stands against its flow in the model.
#[derive(Default)]
struct FlowClock {
    /// When its bytes were due from ([`PathShaping::begin`]).
    due_from: Option<tokio::time::Instant>,
    /// The route's clock at which the flow's bytes count from (None: not
    /// started): the flow has been served `clock - origin` bytes.
    origin: Option<f64>,
    /// Bytes the pull has passed.
    passed: f64,
}

/// The longest a pull sleeps before it reads the model again: a rate that
/// rose meanwhile (another flow ended) is taken up within it.
const PACE_SLICE: Duration = Duration::from_millis(10);

impl ModelFlow {
    fn start(&self) {
        if self.started.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return;
        }
        let Some((clock, rate)) = self.network.start(self.route, self.id) else {
            return;
        };
        if let Ok(mut c) = self.clock.lock() {
            // Served since its bytes were due (the request's round trip is
            // the emulator's time, not the model's), at most a piece.
            let early = c.due_from.map_or(0.0, |at| {
                tokio::time::Instant::now()
                    .saturating_duration_since(at)
                    .as_secs_f64()
            });
            let head = if rate.is_finite() {
                (rate * early).min(chunk_for(rate) as f64)
            } else {
                0.0
            };
            c.origin = Some(clock - head);
        }
    }

    /// Waits until the model has served the flow `bytes` more than it has
    /// passed. The model integrates every change of rate while the pull
    /// waits, so a piece begun when its route was uncrowded does not keep
    /// that rate after others join (pieces paced at the rate of their
    /// first instant let a fan-out of 25 small pulls end one after another
    /// instead of together).
    async fn pace(&self, bytes: usize) {
        let mut first = true;
        loop {
            let Some((clock, rate)) = self.network.progress(self.route) else {
                return;
            };
            let wait = {
                let Ok(mut c) = self.clock.lock() else { return };
                let Some(mut origin) = c.origin else {
                    return;
                };
                if first && rate.is_finite() {
                    // At most one piece behind the model: the time between
                    // two pieces (reading, hashing, the timer's lateness)
                    // is made up, but time the pull was not asking (its
                    // bytes had not come) is not banked beyond that.
                    let behind = clock - origin - c.passed - chunk_for(rate) as f64;
                    if behind > 0.0 {
                        origin += behind;
                        c.origin = Some(origin);
                    }
                }
                first = false;
                let need = c.passed + bytes as f64 - (clock - origin);
                let wait = if !rate.is_finite() || need <= 0.0 {
                    Duration::ZERO
                } else if rate > 0.0 {
                    Duration::from_secs_f64((need / rate).min(3600.0))
                } else {
                    PACE_SLICE
                };
                // A wait shorter than a timer's lateness is not slept: the
                // pull goes on and makes it up on its next piece (at 10 GB/s
                // a piece is due every 0.1 ms; sleeping each would hold it
                // back by the lateness each time).
                if wait <= super::timer::LATENESS {
                    c.passed += bytes as f64;
                    return;
                }
                wait
            };
            super::timer::sleep(wait.min(PACE_SLICE)).await;
        }
    }
}

impl Drop for ModelFlow {
    fn drop(&mut self) {
        if self.started.load(std::sync::atomic::Ordering::Acquire) {
            self.network.end(self.route, self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_finite_rate_is_enforced_in_blocks_beyond_a_hundred_million_bytes_a_second() {
        assert!(
            ByteBucket::new(f64::INFINITY, 1 << 20).is_none(),
            "unlimited"
        );
        for (rate, unit) in [(1e3, 1), (1e8, 1), (1e9, 10), (4e9, 40), (1e12, 10_000)] {
            let b = ByteBucket::new(rate, 1 << 20).unwrap();
            assert_eq!(b.unit(), unit, "{rate} B/s");
        }
    }

    #[test]
    fn a_path_moves_pieces_every_bucket_on_it_takes() {
        let fast = Shaper::of(1e8).unwrap();
        let slow = Shaper::of(1e5).unwrap();
        let path = PathShaping::through([fast.clone(), slow.clone()], 5e4);
        assert_eq!(path.chunk, chunk_for(5e4).min(slow.chunk()));
        assert_eq!(PathShaping::through([], f64::INFINITY).chunk, usize::MAX);
    }
}
