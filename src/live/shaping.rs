//! The live engine's network: the simulator's max-min model
//! ([`crate::core::network`]) carried out on real bytes with token buckets.
//!
//! Every limited resource a transfer crosses — the source's out, each shared
//! link, the receiver's in, and the per-stream cap — is a [`Shaper`] (a
//! governor bucket behind a FIFO turn, so that streams waiting on it get
//! equal shares). A pull passes each chunk it receives through every shaper
//! of its path in turn, as one [`PathShaping`]: a stream bounded at one
//! resource waits there and leaves the others' rate to streams that can use
//! it, which is what max-min sharing gives.
//!
//! All of a path's shapers are applied at one place, the puller, when this
//! process holds them: a server ahead of the receiver's bucket would fill the
//! socket buffers at its own share and steal rate from its other streams. A
//! pull that holds the source's out says so with this process's key
//! ([`SHAPED_HEADER`]); the source's server then sends unshaped. A source in
//! another process (a `gridbed site` daemon) shapes its own out, and its
//! puller the rest.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use smallvec::SmallVec;

use crate::config::{Emulation, SiteConfig};
use crate::core::SiteId;
use crate::core::topology::Topology;

/// Request header naming the shaping key of the puller's process: the
/// puller applies the source's out and stream cap itself.
pub const SHAPED_HEADER: &str = "X-Gridbed-Shaped";
/// Request header: microseconds the shared links on the path add before the
/// first byte (the source waits them out holding the connection, as it does
/// its own latency).
pub const LATENCY_HEADER: &str = "X-Gridbed-Path-Latency-Us";
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
    /// What the shared links on the path add before the first byte.
    pub latency: Duration,
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
            latency: Duration::ZERO,
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
            latency: Duration::ZERO,
        }
    }

    /// Waits until `bytes` may pass every limit of the path, a piece at a
    /// time: the stream's cap, then each shaper in turn.
    pub async fn pass(&self, mut bytes: usize) {
        let stream = self
            .stream
            .get_or_init(|| ByteBucket::new(self.cap, chunk_for(self.cap)));
        while bytes > 0 {
            let n = bytes.min(self.chunk);
            if let Some(s) = stream {
                s.take(n).await;
            }
            for s in &self.shapers {
                s.pass(n).await;
            }
            bytes -= n;
        }
    }
}

/// The grid's shapers this process carries out: for each site served here
/// its out (shared with its server) and stream cap, for each site that
/// pulls here its in, and every shared link. See the module docs.
pub struct GridShapers {
    out: Vec<Option<Arc<Shaper>>>,
    inbound: Vec<Option<Arc<Shaper>>>,
    links: Vec<Option<Arc<Shaper>>>,
    link_latency: Vec<Duration>,
    /// Real bytes/s of each site's stream cap.
    caps: Vec<f64>,
    /// Which sites this process serves and pulls for.
    here: Vec<bool>,
    topology: Topology,
    key: String,
}

impl GridShapers {
    /// The shapers of the `topology`'s sites, in real units of `em`, for
    /// the sites `here` this process runs (by id, with their configuration).
    pub fn new(here: &[(SiteId, &SiteConfig)], topology: &Topology, em: Emulation) -> Self {
        let n = topology.paths.len();
        let mut out = vec![None; n];
        let mut inbound = vec![None; n];
        let mut caps = vec![f64::INFINITY; n];
        let mut local = vec![false; n];
        for &(i, s) in here {
            out[i] = Shaper::of(em.real_rate(s.bandwidth_out));
            inbound[i] = Shaper::of(em.real_rate(s.bandwidth_in));
            caps[i] = em.real_rate(s.stream_cap);
            local[i] = true;
        }
        GridShapers {
            out,
            inbound,
            links: topology
                .links
                .iter()
                .map(|l| Shaper::of(em.real_rate(l.bandwidth)))
                .collect(),
            link_latency: topology
                .links
                .iter()
                .map(|l| super::site::real_duration(em.real_secs(l.latency)))
                .collect(),
            caps,
            here: local,
            topology: topology.clone(),
            key: format!("{:032x}", rand::random::<u128>()),
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

    /// The limits of a pull by `to` from `from`: the source's out and cap
    /// when it is served here, the links between them, `to`'s in.
    pub fn path(&self, from: SiteId, to: SiteId) -> PathShaping {
        let crossed = self.topology.crossed(from, to);
        let local = self.here.get(from).copied().unwrap_or(false);
        let shapers = self
            .out
            .get(from)
            .filter(|_| local)
            .cloned()
            .flatten()
            .into_iter()
            .chain(crossed.iter().filter_map(|&l| self.links[l].clone()))
            .chain(self.inbound.get(to).cloned().flatten());
        let cap = if local {
            self.caps[from]
        } else {
            f64::INFINITY
        };
        let mut path = PathShaping::through(shapers, cap);
        path.key = local.then(|| self.key.clone());
        path.latency = crossed.iter().map(|&l| self.link_latency[l]).sum();
        path
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
