//! A site's "gridftp" endpoint: an actix-web server on loopback that serves the
//! bytes of the site's own pool, rate limited like a grid site's file server.
//!
//! * `GET /files/{pool name}` streams the file with `Content-Length` and
//!   `X-Sha256`; `HEAD` gives the same headers; `GET /health` answers `ok`.
//! * Only canonical pool names ([`super::names`]) are served: traversal
//!   (`../`, `%2e%2e%2f`, absolute paths) gets 400, a missing file 404.
//! * Egress is shaped by governor token buckets applied to every chunk: one
//!   shared by all responses (the site's out) and, optionally, one per
//!   response (the per-stream cap). A bucket counts bytes, or blocks of
//!   bytes at rates beyond governor's 10^9 cells/s, so that any finite rate
//!   is enforced. It holds at most one chunk, and a chunk is about 1/100 s
//!   of the slowest rate, so a transfer takes `size / rate` within a few
//!   milliseconds. A pull of this process that applies the out and the cap
//!   itself, with the rest of its path ([`super::shaping`]), presents the
//!   process's key and is sent unshaped.
//! * A request may ask for the latency of the shared links on its path
//!   (`X-Gridbed-Path-Latency-Us`, at most an hour): it is waited out with
//!   the server's own, holding the connection slot.
//! * More than `max_connections` responses at once get 503 with `Retry-After`
//!   (and `X-Retry-After-Ms`, since emulated transfers are far shorter than a
//!   second); the transfer client reports it as a busy source, and the
//!   manager retries (after `transfer_backoff`) or takes another replica.
//! * Faults on purpose ([`Faults`]): each response that starts to stream
//!   steps the site's schedules, which may flip one byte of it, reset the
//!   connection when half its bytes are sent, or stall it before its first
//!   byte; each injected fault is reported (the client names its transfer
//!   in `X-Gridbed-Transfer`). While the site is down (crashed) every request
//!   gets 502 and every response in flight is cut at its next chunk.
//! * Hostile input is bounded: a request head must arrive within 5 s, headers
//!   over 8 KiB in all get 431 (beyond 128 KiB actix closes the connection
//!   with 400 or 431), other methods 405, a `Range`
//!   request the whole file (200: ranges are optional in HTTP, and a partial
//!   copy is never what a transfer wants), and a worker holds at most 2,048
//!   connections.

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use actix_web::body::SizedStream;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, dev::Server, web};
use bytes::Bytes;
use tokio::io::AsyncReadExt;

use super::names;
use super::shaping::{
    ByteBucket, LATENCY_HEADER, MAX_PATH_LATENCY, SHAPED_HEADER, Shaper, WAITED_HEADER, chunk_for,
};
use super::store::{FileMeta, Store};
use crate::core::faults::{Fault, FaultSchedule};

/// Shaping and limits of one file server, in real units.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Aggregate egress, bytes per second (∞: unlimited).
    pub bandwidth: f64,
    /// Per-response cap, bytes per second (∞: none).
    pub stream_cap: f64,
    /// Responses served at once.
    pub max_connections: usize,
    /// Wait before the first byte of every response (the emulated per-transfer
    /// latency; the connection slot is held meanwhile).
    pub latency: Duration,
}

/// Deliberate faults in served responses: the site's schedules of
/// [`crate::core::faults`], stepped once per response that starts to stream,
/// and whether the site is down.
pub struct Faults {
    /// Which responses get one byte flipped in their first chunk.
    corrupt: std::sync::Mutex<FaultSchedule>,
    /// Which responses are reset when half their bytes are sent.
    resets: std::sync::Mutex<FaultSchedule>,
    /// Which responses stall for `stall` before their first byte.
    stalls: std::sync::Mutex<FaultSchedule>,
    stall: Duration,
    /// Nominal seconds of a stall, as reported.
    stall_nominal: f64,
    /// The site crashed and has not recovered.
    down: AtomicBool,
    /// Tells the manager of each fault injected into a transfer.
    report: Option<Box<dyn Fn(Fault) + Send + Sync>>,
}

/// A server that injects nothing.
impl Default for Faults {
    fn default() -> Self {
        Faults::new(FaultSchedule::none())
    }
}

/// What the schedules say of one response.
#[derive(Debug, Clone, Copy, Default)]
struct Drawn {
    corrupt: bool,
    reset: bool,
    stall: bool,
}

impl Faults {
    /// Faults stepped by `corrupt` only.
    pub fn new(corrupt: FaultSchedule) -> Self {
        Faults {
            corrupt: std::sync::Mutex::new(corrupt),
            resets: std::sync::Mutex::new(FaultSchedule::none()),
            stalls: std::sync::Mutex::new(FaultSchedule::none()),
            stall: Duration::ZERO,
            stall_nominal: 0.0,
            down: AtomicBool::new(false),
            report: None,
        }
    }

    /// With resets and stalls (`stall` real, `stall_nominal` as reported).
    pub fn with(
        mut self,
        resets: FaultSchedule,
        stalls: FaultSchedule,
        stall: Duration,
        stall_nominal: f64,
    ) -> Self {
        self.resets = std::sync::Mutex::new(resets);
        self.stalls = std::sync::Mutex::new(stalls);
        self.stall = stall;
        self.stall_nominal = stall_nominal;
        self
    }

    /// Reporting each injected fault to `report`.
    pub fn reporting(mut self, report: impl Fn(Fault) + Send + Sync + 'static) -> Self {
        self.report = Some(Box::new(report));
        self
    }

    /// The site crashed (true) or recovered (false).
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::Release);
    }

    fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }

    /// The schedules' verdicts on the response starting now, in the
    /// simulator's order (corrupt, reset, stall).
    fn draw(&self) -> Drawn {
        let step =
            |s: &std::sync::Mutex<FaultSchedule>| s.lock().map(|mut s| s.step()).unwrap_or(false);
        Drawn {
            corrupt: step(&self.corrupt),
            reset: step(&self.resets),
            stall: step(&self.stalls),
        }
    }

    fn tell(&self, fault: Fault) {
        if let Some(r) = &self.report {
            r(fault);
        }
    }
}

/// Everything a server's handlers share.
pub struct Gridftp {
    store: Store,
    limits: Limits,
    chunk: usize,
    aggregate: Option<Arc<Shaper>>,
    /// The key of pulls that shape this server's out themselves.
    key: Option<String>,
    active: Arc<AtomicUsize>,
    faults: Arc<Faults>,
}

impl Gridftp {
    /// Handler state for `store` with `limits` and `faults`.
    pub fn new(store: Store, limits: Limits, faults: Arc<Faults>) -> Self {
        let chunk = chunk_for(limits.bandwidth.min(limits.stream_cap));
        Gridftp {
            aggregate: Shaper::new(limits.bandwidth, chunk).map(Arc::new),
            store,
            limits,
            chunk,
            key: None,
            active: Arc::default(),
            faults,
        }
    }

    /// Shaping its out with `egress` (the shaper this process's pulls pass
    /// too), and sending unshaped to pulls that present `key`.
    pub fn sharing(mut self, egress: Option<Arc<Shaper>>, key: &str) -> Self {
        self.aggregate = egress;
        self.key = Some(key.to_string());
        self
    }
}

/// The route table, shared by [`serve`] and the unit tests.
pub fn configure(cfg: &mut web::ServiceConfig, state: web::Data<Gridftp>) {
    cfg.app_data(state)
        .route(
            "/health",
            web::get().to(|| async { HttpResponse::Ok().body("ok") }),
        )
        .service(
            web::resource("/files/{tail:.*}")
                .route(web::get().to(get_file))
                .route(web::head().to(head_file)),
        )
        .default_service(web::to(|| async { HttpResponse::NotFound().finish() }));
}

/// Starts a one-worker server on `listener` (bind `127.0.0.1:0` in tests). The
/// returned [`Server`] must be spawned or awaited; stop it with its handle.
pub fn serve(listener: TcpListener, state: Arc<Gridftp>) -> std::io::Result<Server> {
    let data = web::Data::from(state);
    Ok(
        HttpServer::new(move || App::new().configure(|cfg| configure(cfg, data.clone())))
            .workers(1)
            // Small responses back to back on a kept-alive connection would
            // otherwise wait out the peer's delayed ACK (Nagle): 40 ms each.
            .tcp_nodelay(true)
            .disable_signals()
            .shutdown_timeout(1)
            // Hostile clients on the grid's open ports: a request head must
            // arrive within 5 s (slowloris), be under actix's header limits
            // (else 431/400), and a worker takes at most 2,048 connections.
            .client_request_timeout(Duration::from_secs(5))
            .client_disconnect_timeout(Duration::from_secs(1))
            .max_connections(2048)
            .listen(listener)?
            .run(),
    )
}

/// The pool name in the raw request path, if it is a canonical one. The raw
/// path is used (not the router's decoded match) so that no decoding step can
/// turn `%2e%2e%2f` into a traversal.
fn pool_name(req: &HttpRequest) -> Option<String> {
    let raw = req.uri().path().strip_prefix("/files/")?;
    names::decode(raw)?;
    Some(raw.to_string())
}

/// Why a request gets no file.
enum Refusal {
    /// Not a canonical pool name: 400.
    BadName,
    /// Not in this pool: 404.
    Missing,
}

impl Refusal {
    fn response(self) -> HttpResponse {
        match self {
            Refusal::BadName => HttpResponse::BadRequest()
                .body("not a pool file name: expected /files/<encoded name>"),
            Refusal::Missing => HttpResponse::NotFound().body("no such file in this pool"),
        }
    }
}

fn lookup(req: &HttpRequest, st: &Gridftp) -> Result<(String, FileMeta), Refusal> {
    let enc = pool_name(req).ok_or(Refusal::BadName)?;
    let meta = st.store.meta(&enc).ok_or(Refusal::Missing)?;
    Ok((enc, meta))
}

/// Request headers beyond this many bytes in all get 431 (as nginx's and
/// Apache's 8 KiB defaults); actix itself refuses heads beyond 128 KiB.
const MAX_HEADER_BYTES: usize = 8 << 10;

/// 431 for a request whose headers exceed [`MAX_HEADER_BYTES`].
fn oversized(req: &HttpRequest) -> Option<HttpResponse> {
    let bytes: usize = req
        .headers()
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 4)
        .sum();
    (bytes > MAX_HEADER_BYTES).then(|| {
        HttpResponse::build(actix_web::http::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE)
            .body("request headers over 8 KiB")
    })
}

async fn head_file(req: HttpRequest, st: web::Data<Gridftp>) -> HttpResponse {
    if let Some(refused) = oversized(&req) {
        return refused;
    }
    match lookup(&req, &st) {
        Ok((_, meta)) => HttpResponse::Ok()
            .insert_header(("X-Sha256", meta.sha256))
            .insert_header(("X-Size", meta.size.to_string()))
            .no_chunking(meta.size)
            .finish(),
        Err(refusal) => refusal.response(),
    }
}

/// Gives back a connection slot when the response body is dropped (sent in
/// full, or the client went away).
struct Slot(Arc<AtomicUsize>);
impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Where a response's bytes come from.
enum Source {
    /// A small file, read whole in one trip to the blocking pool.
    Memory(Bytes),
    /// A large file, read a chunk at a time.
    File(tokio::fs::File),
}

/// Files up to this size are read whole before streaming.
const READ_WHOLE: u64 = 4 << 20;

struct Body {
    source: Source,
    remaining: u64,
    chunk: usize,
    aggregate: Option<Arc<Shaper>>,
    stream: Option<ByteBucket>,
    corrupt: bool,
    /// Bytes after which the connection is reset (a fault), if any.
    reset_at: Option<u64>,
    transfer: Option<u64>,
    faults: Arc<Faults>,
    _slot: Slot,
}

async fn get_file(req: HttpRequest, st: web::Data<Gridftp>) -> HttpResponse {
    if let Some(refused) = oversized(&req) {
        return refused;
    }
    if st.faults.is_down() {
        return HttpResponse::BadGateway().body("site is down");
    }
    let (enc, meta) = match lookup(&req, &st) {
        Ok(found) => found,
        Err(refusal) => return refusal.response(),
    };
    if st.active.fetch_add(1, Ordering::AcqRel) >= st.limits.max_connections {
        st.active.fetch_sub(1, Ordering::AcqRel);
        return HttpResponse::ServiceUnavailable()
            .insert_header(("Retry-After", "1"))
            .insert_header(("X-Retry-After-Ms", "5"))
            .body("too many transfers at once");
    }
    let slot = Slot(st.active.clone());
    // Read (or opened) before streaming: an eviction after this point unlinks
    // the name but not these bytes.
    let path = st.store.path(&enc);
    let source = if meta.size <= READ_WHOLE {
        match tokio::task::spawn_blocking(move || std::fs::read(path)).await {
            Ok(Ok(bytes)) if bytes.len() as u64 == meta.size => Source::Memory(Bytes::from(bytes)),
            _ => return Refusal::Missing.response(),
        }
    } else {
        match tokio::fs::File::open(path).await {
            Ok(f) => Source::File(f),
            Err(_) => return Refusal::Missing.response(),
        }
    };
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let path_latency = header(LATENCY_HEADER)
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(Duration::ZERO, |us| {
            Duration::from_micros(us).min(MAX_PATH_LATENCY)
        });
    let latency = st.limits.latency + path_latency;
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    // The puller passes its bytes through this server's out and cap.
    let shaped_there = st.key.is_some() && header(SHAPED_HEADER) == st.key.as_deref();
    let drawn = if meta.size > 0 {
        st.faults.draw()
    } else {
        Drawn::default()
    };
    let transfer: Option<u64> = req
        .headers()
        .get("X-Gridbed-Transfer")
        .and_then(|v| v.to_str().ok()?.parse().ok());
    if let Some(transfer) = transfer {
        if drawn.corrupt {
            st.faults.tell(Fault::Corrupt { transfer });
        }
        if drawn.stall {
            let seconds = st.faults.stall_nominal;
            st.faults.tell(Fault::Stall { transfer, seconds });
        }
    }
    if drawn.stall {
        tokio::time::sleep(st.faults.stall).await;
    }
    let body = Body {
        source,
        remaining: meta.size,
        chunk: st.chunk,
        aggregate: st.aggregate.clone().filter(|_| !shaped_there),
        stream: ByteBucket::new(st.limits.stream_cap, st.chunk).filter(|_| !shaped_there),
        corrupt: drawn.corrupt,
        // Half the bytes go, and never all of them (the client would see
        // a complete body).
        reset_at: drawn.reset.then_some((meta.size / 2).max(1)),
        transfer,
        faults: st.faults.clone(),
        _slot: slot,
    };
    let stream = futures_util::stream::unfold(body, |mut b| async move {
        if b.remaining == 0 {
            return None;
        }
        let reset = b.reset_at.is_some_and(|at| b.remaining <= at);
        if reset || b.faults.is_down() {
            if reset && let Some(transfer) = b.transfer {
                b.faults.tell(Fault::Reset { transfer });
            }
            b.remaining = 0;
            let e = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
            return Some((Err(e), b));
        }
        // A chunk never crosses the reset point.
        let until_reset = b.reset_at.map_or(b.remaining, |at| b.remaining - at);
        let n = (b.chunk as u64).min(b.remaining).min(until_reset) as usize;
        if let Some(l) = &b.stream {
            l.take(n).await;
        }
        if let Some(shaper) = &b.aggregate {
            shaper.pass(n).await;
        }
        let mut chunk = match &mut b.source {
            Source::Memory(bytes) => bytes.split_to(n),
            Source::File(file) => {
                let mut buf = vec![0u8; n];
                if let Err(e) = file.read_exact(&mut buf).await {
                    b.remaining = 0;
                    return Some((Err(e), b));
                }
                Bytes::from(buf)
            }
        };
        if b.corrupt {
            let mut flipped = chunk.to_vec();
            flipped[n / 2] ^= 0xFF;
            chunk = Bytes::from(flipped);
            b.corrupt = false;
        }
        b.remaining -= n as u64;
        Some((Ok::<_, std::io::Error>(chunk), b))
    });
    HttpResponse::Ok()
        .content_type("application/octet-stream")
        .insert_header(("X-Sha256", meta.sha256))
        .insert_header((WAITED_HEADER, latency.as_micros().to_string()))
        .body(SizedStream::new(meta.size, stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    use actix_web::test;

    fn state(max_connections: usize) -> (tempfile::TempDir, web::Data<Gridftp>) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        super::super::store::write_generated(&store, "a.txt", 1, "a.txt", 5000).unwrap();
        std::fs::write(dir.path().join("secret"), b"not listed").unwrap();
        let limits = Limits {
            bandwidth: f64::INFINITY,
            stream_cap: f64::INFINITY,
            max_connections,
            latency: Duration::ZERO,
        };
        (
            dir,
            web::Data::new(Gridftp::new(store, limits, Arc::default())),
        )
    }

    #[actix_web::test]
    async fn serves_listed_files_with_their_sha_and_refuses_the_rest() {
        let (_dir, st) = state(4);
        let app = test::init_service(App::new().configure(|c| configure(c, st.clone()))).await;
        let resp = test::call_service(
            &app,
            test::TestRequest::get().uri("/files/a.txt").to_request(),
        )
        .await;
        assert_eq!(resp.status(), 200);
        let sha = resp
            .headers()
            .get("X-Sha256")
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let body = test::read_body(resp).await;
        assert_eq!(body.len(), 5000);
        assert_eq!(super::super::store::sha256_hex(&body), sha);
        for (uri, code) in [
            ("/files/secret", 404),
            ("/files/..%2fsecret", 400),
            ("/files/%2e%2e%2fsecret", 400),
            ("/files/~2E~2E", 400),
            ("/files/a~2Ftxt", 404),
            ("/health", 200),
        ] {
            let resp =
                test::call_service(&app, test::TestRequest::get().uri(uri).to_request()).await;
            assert_eq!(resp.status().as_u16(), code, "{uri}");
        }
        let head = test::call_service(
            &app,
            test::TestRequest::default()
                .method(actix_web::http::Method::HEAD)
                .uri("/files/a.txt")
                .to_request(),
        )
        .await;
        assert_eq!(head.status(), 200);
        assert_eq!(head.headers().get("X-Size").unwrap(), "5000");
    }

    #[actix_web::test]
    async fn over_max_connections_is_503() {
        let (_dir, st) = state(1);
        let app = test::init_service(App::new().configure(|c| configure(c, st.clone()))).await;
        let first = test::call_service(
            &app,
            test::TestRequest::get().uri("/files/a.txt").to_request(),
        )
        .await;
        assert_eq!(first.status(), 200);
        let second = test::call_service(
            &app,
            test::TestRequest::get().uri("/files/a.txt").to_request(),
        )
        .await;
        assert_eq!(second.status(), 503);
        assert!(second.headers().contains_key("Retry-After"));
        drop(test::read_body(first).await);
        let third = test::call_service(
            &app,
            test::TestRequest::get().uri("/files/a.txt").to_request(),
        )
        .await;
        assert_eq!(third.status(), 200);
    }
}
