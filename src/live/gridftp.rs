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
//!   process's key and is sent unshaped; its connection slot is held until
//!   the puller has read it ([`HeldSlots`]), as the core's rule holds it.
//! * A request may ask for the latency of the shared links on its path
//!   (`X-Gridbed-Path-Latency-Us`, at most an hour): it is waited out with
//!   the server's own, holding the connection slot.
//! * What it answers is the core's rule ([`crate::core::file_server`]), the
//!   simulator's too: 502 while the site is down, 404 for a file not in the
//!   pool, 503 at `max_connections`, in that order; the file is read when
//!   the latency is over, so a file evicted meanwhile gets 404 then.
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::body::SizedStream;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, dev::Server, web};
use bytes::Bytes;
use tokio::io::AsyncReadExt;

use super::names;
use super::shaping::{
    ByteBucket, HeldSlots, LATENCY_HEADER, MAX_PATH_LATENCY, SHAPED_HEADER, Shaper, WAITED_HEADER,
    chunk_for,
};
use super::store::{FileMeta, Store};
use crate::core::faults::Fault;
use crate::core::file_server::{FileServer, Refusal};

/// Shaping and limits of one file server, in real units.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Aggregate egress, bytes per second (∞: unlimited).
    pub bandwidth: f64,
    /// Per-response cap, bytes per second (∞: none).
    pub stream_cap: f64,
    /// Wait before the first byte of every response (the emulated per-transfer
    /// latency; the connection slot is held meanwhile).
    pub latency: Duration,
}

/// How a server carries out faults on purpose: the real length of a stall,
/// whether the site is down, and whom it tells.
#[derive(Default)]
pub struct Faults {
    /// How long a stall lasts, real.
    stall: Duration,
    /// The site crashed and has not recovered.
    down: AtomicBool,
    /// Tells the manager of each fault injected into a transfer.
    report: Option<Box<dyn Fn(Fault) + Send + Sync>>,
}

impl Faults {
    /// Stalling `stall` (real) when a response's schedule says so.
    pub fn new(stall: Duration) -> Self {
        Faults {
            stall,
            ..Faults::default()
        }
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
    /// Where the connection slots of those pulls wait for their pullers.
    held: Option<Arc<HeldSlots>>,
    /// What it answers, its connections and fault schedules (the core's rule).
    server: Arc<Mutex<FileServer>>,
    faults: Arc<Faults>,
}

impl Gridftp {
    /// Handler state for `store` with `limits`, answering as `server` and
    /// carrying out its faults by `faults`.
    pub fn new(store: Store, limits: Limits, server: FileServer, faults: Arc<Faults>) -> Self {
        let chunk = chunk_for(limits.bandwidth.min(limits.stream_cap));
        Gridftp {
            aggregate: Shaper::new(limits.bandwidth, chunk).map(Arc::new),
            store,
            limits,
            chunk,
            key: None,
            held: None,
            server: Arc::new(Mutex::new(server)),
            faults,
        }
    }

    /// Shaping its out with `egress` (the shaper this process's pulls pass
    /// too), and sending unshaped to pulls that present `key`, whose
    /// connection slots wait in `held` until their pullers are done.
    pub fn sharing(mut self, egress: Option<Arc<Shaper>>, key: &str, held: Arc<HeldSlots>) -> Self {
        self.aggregate = egress;
        self.key = Some(key.to_string());
        self.held = Some(held);
        self
    }

    /// The core's file server, locked (a poisoned lock is still its state:
    /// every change to it is a single counter or schedule step).
    fn server(&self) -> std::sync::MutexGuard<'_, FileServer> {
        self.server.lock().unwrap_or_else(|e| e.into_inner())
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

/// 400 for a name that is not a canonical pool name.
fn bad_name() -> HttpResponse {
    HttpResponse::BadRequest().body("not a pool file name: expected /files/<encoded name>")
}

/// The answer to a request the file server refuses.
fn refused(refusal: Refusal) -> HttpResponse {
    let status = actix_web::http::StatusCode::from_u16(refusal.status())
        .unwrap_or(actix_web::http::StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = HttpResponse::build(status);
    match refusal {
        Refusal::Down => response.body("site is down"),
        Refusal::Missing => response.body("no such file in this pool"),
        Refusal::Busy => response
            .insert_header(("Retry-After", "1"))
            .insert_header(("X-Retry-After-Ms", "5"))
            .body("too many transfers at once"),
    }
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
    let Some(enc) = pool_name(&req) else {
        return bad_name();
    };
    match st.store.meta(&enc) {
        Some(meta) => HttpResponse::Ok()
            .insert_header(("X-Sha256", meta.sha256))
            .insert_header(("X-Size", meta.size.to_string()))
            .no_chunking(meta.size)
            .finish(),
        None => refused(Refusal::Missing),
    }
}

/// Gives back a connection when the response (or the request, refused after
/// its latency) is dropped: sent in full, cut, or the client went away.
struct Slot(Arc<Mutex<FileServer>>);
impl Drop for Slot {
    fn drop(&mut self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).close();
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

/// The file `enc` of `store`, read whole when small or else opened, if it
/// is there.
async fn read_source(store: &Store, enc: &str) -> Option<(FileMeta, Source)> {
    let meta = store.meta(enc)?;
    let path = store.path(enc);
    let source = if meta.size <= READ_WHOLE {
        match tokio::task::spawn_blocking(move || std::fs::read(path)).await {
            Ok(Ok(bytes)) if bytes.len() as u64 == meta.size => Source::Memory(Bytes::from(bytes)),
            _ => return None,
        }
    } else {
        Source::File(tokio::fs::File::open(path).await.ok()?)
    };
    Some((meta, source))
}

struct Body {
    source: Source,
    remaining: u64,
    chunk: usize,
    aggregate: Option<Arc<Shaper>>,
    stream: Option<ByteBucket>,
    corrupt: bool,
    /// Bytes still to send when the connection is reset (a fault), if it is.
    reset_at: Option<u64>,
    transfer: Option<u64>,
    faults: Arc<Faults>,
    _slot: Option<Slot>,
}

async fn get_file(req: HttpRequest, st: web::Data<Gridftp>) -> HttpResponse {
    if let Some(refused) = oversized(&req) {
        return refused;
    }
    let Some(enc) = pool_name(&req) else {
        return bad_name();
    };
    let holds = st.store.meta(&enc).is_some();
    if let Err(refusal) = st.server().request(!st.faults.is_down(), holds) {
        return refused(refusal);
    }
    let slot = Slot(st.server.clone());
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let path_latency = header(LATENCY_HEADER)
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(Duration::ZERO, |us| {
            Duration::from_micros(us).min(MAX_PATH_LATENCY)
        });
    let latency = st.limits.latency + path_latency;
    if !latency.is_zero() {
        super::timer::sleep(latency).await;
    }
    // Read (or opened) when the latency is over, as the core's rule says:
    // an eviction after this point unlinks the name but not these bytes.
    let read = read_source(&st.store, &enc).await;
    let size = read.as_ref().map_or(0, |(meta, _)| meta.size);
    let response = st
        .server()
        .respond(!st.faults.is_down(), read.is_some(), size);
    let ((meta, source), response) = match (read, response) {
        (Some(read), Ok(response)) => (read, response),
        (_, Err(refusal)) => return refused(refusal),
        (None, Ok(_)) => return refused(Refusal::Missing),
    };
    // The puller passes its bytes through this server's out and cap.
    let shaped_there = st.key.is_some() && header(SHAPED_HEADER) == st.key.as_deref();
    let transfer: Option<u64> = header("X-Gridbed-Transfer").and_then(|v| v.parse().ok());
    if let Some(transfer) = transfer {
        if response.corrupt {
            st.faults.tell(Fault::Corrupt { transfer });
        }
        if let Some(seconds) = response.stall {
            st.faults.tell(Fault::Stall { transfer, seconds });
        }
    }
    if response.stall.is_some() {
        tokio::time::sleep(st.faults.stall).await;
    }
    // A pull shaped by its puller takes its bytes at once: its slot waits
    // for the puller, which takes as long as the rule says the bytes take.
    let slot = match (&st.held, transfer) {
        (Some(held), Some(id)) if shaped_there => {
            held.hold(id, Box::new(slot));
            None
        }
        _ => Some(slot),
    };
    let body = Body {
        source,
        remaining: meta.size,
        chunk: st.chunk,
        aggregate: st.aggregate.clone().filter(|_| !shaped_there),
        stream: ByteBucket::new(st.limits.stream_cap, st.chunk).filter(|_| !shaped_there),
        corrupt: response.corrupt,
        reset_at: response.reset_after.map(|sent| meta.size - sent),
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

    use crate::core::file_server::ResponseFaults;
    use actix_web::test;

    fn state(max_connections: usize) -> (tempfile::TempDir, web::Data<Gridftp>) {
        state_waiting(max_connections, Duration::ZERO)
    }

    fn state_waiting(
        max_connections: usize,
        latency: Duration,
    ) -> (tempfile::TempDir, web::Data<Gridftp>) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        super::super::store::write_generated(&store, "a.txt", 1, "a.txt", 5000).unwrap();
        std::fs::write(dir.path().join("secret"), b"not listed").unwrap();
        let limits = Limits {
            bandwidth: f64::INFINITY,
            stream_cap: f64::INFINITY,
            latency,
        };
        let answers = FileServer::new(max_connections, ResponseFaults::none());
        (
            dir,
            web::Data::new(Gridftp::new(store, limits, answers, Arc::default())),
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
    async fn a_file_evicted_during_the_latency_is_404_as_in_the_simulator() {
        let (_dir, st) = state_waiting(4, Duration::from_millis(300));
        let app = test::init_service(App::new().configure(|c| configure(c, st.clone()))).await;
        let get = test::TestRequest::get().uri("/files/a.txt").to_request();
        let evict = async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            std::fs::remove_file(st.store.path("a.txt")).unwrap();
            st.store.remove("a.txt");
        };
        let (resp, ()) = futures_util::join!(test::call_service(&app, get), evict);
        assert_eq!(resp.status(), 404);
        assert_eq!(st.server().connections(), 0, "its connection is given back");
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

    #[actix_web::test]
    async fn a_pull_of_this_process_holds_its_slot_until_its_puller_is_done() {
        let (_dir, st) = state(1);
        let held = Arc::new(HeldSlots::default());
        let st = web::Data::new(
            Arc::into_inner(st.into_inner())
                .unwrap()
                .sharing(None, "k", held.clone()),
        );
        let app = test::init_service(App::new().configure(|c| configure(c, st.clone()))).await;
        let get = |key: Option<&str>, transfer: u64| {
            let mut req = test::TestRequest::get()
                .uri("/files/a.txt")
                .insert_header(("X-Gridbed-Transfer", transfer));
            if let Some(key) = key {
                req = req.insert_header((SHAPED_HEADER, key));
            }
            req.to_request()
        };
        let first = test::call_service(&app, get(Some("k"), 7)).await;
        assert_eq!(first.status(), 200);
        // Every byte is sent, and the slot is still taken: the puller
        // paces its read, and the rule holds the slot until it is done.
        assert_eq!(test::read_body(first).await.len(), 5000);
        assert_eq!(held.len(), 1);
        let busy = test::call_service(&app, get(Some("k"), 8)).await;
        assert_eq!(busy.status(), 503);
        held.release(8, true);
        held.release(7, true);
        assert!(held.is_empty());
        // A pull of another process (no key, or another) is shaped here
        // and frees its slot with its last byte.
        for key in [None, Some("other")] {
            let resp = test::call_service(&app, get(key, 9)).await;
            assert_eq!(resp.status(), 200);
            drop(test::read_body(resp).await);
            assert!(held.is_empty());
        }
        // A puller that gave up before the answer: the slot goes as the
        // server comes to hold it.
        held.release(10, false);
        let late = test::call_service(&app, get(Some("k"), 10)).await;
        assert_eq!(late.status(), 200);
        assert!(held.is_empty());
        drop(test::read_body(late).await);
        let again = test::call_service(&app, get(Some("k"), 11)).await;
        assert_eq!(again.status(), 200, "the late slot was freed");
    }
}
