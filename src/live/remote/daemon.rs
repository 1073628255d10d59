//! `gridbed site`: one site as a standalone daemon. A run's manager attaches
//! to it (the site's configuration and the workflow), the daemon makes the
//! site exactly as the in-process engine does ([`crate::live::prepare`]:
//! pool, starting files, gridftp endpoint) and runs the same
//! [`SiteActor`] over it, taking the manager's orders over HTTP and
//! streaming the site's events back (see [`super::protocol`]).

use std::net::{IpAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use actix_web::http::StatusCode;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use tokio::sync::{Mutex, mpsc};

use super::protocol::{Attach, Attached, Line, Order, Start, Status};
use crate::core::topology::Topology;
use crate::config::SiteStart;
use crate::core::{Event, Workflow};
use crate::live::messages::{SiteEvent, TakeInventory};
use crate::live::prepare::{SiteParts, SiteSpec, prepare};
use crate::live::shaping::GridShapers;
use crate::live::site::SiteActor;
use crate::live::{Shared, gridftp, names};
use crate::metrics::Metrics;

/// How a daemon runs.
#[derive(Debug, Clone, Default)]
pub struct DaemonOptions {
    /// The bearer token every request must carry; required to listen
    /// beyond loopback.
    pub token: Option<String>,
    /// Where pools go (default as for `gridbed run`).
    pub pool_root: Option<PathBuf>,
    /// Run the DAGMan PRE/POST scripts a manager sends (programs on this
    /// host, run as this daemon's user); without it such a session is
    /// refused.
    pub allow_scripts: bool,
    /// The host other sites reach this one's gridftp endpoint at; needed
    /// when listening on every address (`0.0.0.0`), where the address
    /// bound says nothing (a container's service name, a host name).
    pub advertise: Option<String>,
}

/// Why a daemon cannot start.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// Listening beyond loopback with no token would let anyone run jobs.
    #[error(
        "gridbed site listens on {0}, beyond loopback: give it a token (--token-file or GRIDBED_TOKEN)"
    )]
    NoToken(std::net::SocketAddr),
    /// Listening on every address, it cannot tell others where it is.
    #[error(
        "gridbed site listens on {0}, every address: say which host the other sites reach it at (--advertise HOST)"
    )]
    NoAdvertise(std::net::SocketAddr),
    /// Binding or starting the server.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The run a daemon is attached to.
struct Session {
    /// Which attach this is (the daemon counts them).
    serial: u64,
    name: String,
    /// Made at attach; taken when the site starts.
    parts: Option<SiteParts>,
    attach: Attach,
    workflow: Arc<Workflow>,
    encoded: Vec<String>,
    /// The limits of this site's pulls and of its server's out.
    shapers: Arc<GridShapers>,
    pool_dir: PathBuf,
    metrics: Arc<Metrics>,
    actor: Option<Addr<SiteActor>>,
    events: mpsc::UnboundedSender<Line>,
    stream: Option<mpsc::UnboundedReceiver<Line>>,
    gridftp: actix_web::dev::ServerHandle,
}

struct State {
    opts: DaemonOptions,
    bind: IpAddr,
    session: Mutex<Option<Session>>,
    attaches: std::sync::atomic::AtomicU64,
}

impl State {
    /// Ends the session, if it is still attach `serial` (any, if `None`):
    /// the endpoint stops, the site actor and the pool go.
    async fn end(&self, serial: Option<u64>) -> Option<String> {
        let mut guard = self.session.lock().await;
        if serial.is_some() && guard.as_ref().map(|s| s.serial) != serial {
            return None;
        }
        let session = guard.take()?;
        drop(guard);
        session.gridftp.stop(false).await;
        tracing::info!(site = %session.name, run = %session.attach.run_id, "detached");
        // The site actor stops once its address is gone, and its pool would
        // go with its last holder; a holder that outlives the session (a
        // killed manager's) left it on disk, so it goes here.
        if let Err(e) = std::fs::remove_dir_all(&session.pool_dir)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(dir = %session.pool_dir.display(), "pool not removed: {e}");
        }
        Some(session.attach.run_id)
    }
}

/// Held by an event stream: when the manager's connection goes (a manager
/// killed mid-run), the session it was following ends with it, so the
/// daemon is free for the next run.
struct Follower {
    state: web::Data<State>,
    serial: u64,
}

impl Drop for Follower {
    fn drop(&mut self) {
        let (state, serial) = (self.state.clone(), self.serial);
        actix_rt::spawn(async move {
            if state.end(Some(serial)).await.is_some() {
                tracing::warn!("the manager's event stream closed: session ended");
            }
        });
    }
}

/// Forwards the site actor's events to the event stream.
struct EventSink(mpsc::UnboundedSender<Line>);

impl Actor for EventSink {
    type Context = Context<Self>;
}

impl Handler<SiteEvent> for EventSink {
    type Result = ();
    fn handle(&mut self, m: SiteEvent, _: &mut Context<Self>) {
        let _ = self.0.send(Line::Event(m.0));
    }
}

/// The daemon's HTTP server on `listener`; run it on an actix system.
pub fn serve(
    listener: TcpListener,
    opts: DaemonOptions,
) -> Result<actix_web::dev::Server, DaemonError> {
    let addr = listener.local_addr()?;
    if opts.token.is_none() && !addr.ip().is_loopback() {
        return Err(DaemonError::NoToken(addr));
    }
    if opts.advertise.is_none() && addr.ip().is_unspecified() {
        return Err(DaemonError::NoAdvertise(addr));
    }
    let state = web::Data::new(State {
        opts,
        bind: addr.ip(),
        session: Mutex::new(None),
        attaches: Default::default(),
    });
    Ok(HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            // A workflow of a million jobs is a few hundred MB of JSON.
            .app_data(web::PayloadConfig::new(4 << 30))
            .route("/v1/session", web::post().to(attach))
            .route("/v1/session", web::delete().to(detach))
            .route("/v1/start", web::post().to(start))
            .route("/v1/events", web::get().to(events))
            .route("/v1/orders", web::post().to(orders))
            .route("/v1/status", web::get().to(status))
            .route("/v1/inventory", web::get().to(inventory))
            .route("/metrics", web::get().to(metrics))
    })
    // Orders and the site actor on one thread, in order.
    .workers(1)
    .tcp_nodelay(true)
    .shutdown_timeout(1)
    .listen(listener)?
    .run())
}

fn refuse(code: StatusCode, msg: impl std::fmt::Display) -> HttpResponse {
    HttpResponse::build(code)
        .content_type("text/plain; charset=utf-8")
        .body(format!("{msg}\n"))
}

/// Whether the request carries the daemon's bearer token (or none is asked).
fn token_ok(req: &HttpRequest, state: &State) -> bool {
    let Some(want) = &state.opts.token else {
        return true;
    };
    let given = req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    // Every byte compared, so the time taken does not tell how many match.
    given.len() == want.len()
        && given
            .bytes()
            .zip(want.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// Returns 401 from the handler unless the request carries the token.
macro_rules! authorized {
    ($req:expr, $state:expr) => {
        if !token_ok(&$req, &$state) {
            return HttpResponse::Unauthorized()
                .insert_header(("WWW-Authenticate", "Bearer"))
                .body("a valid bearer token is required\n");
        }
    };
}

async fn attach(req: HttpRequest, state: web::Data<State>, body: web::Bytes) -> HttpResponse {
    authorized!(req, state);
    let a: Attach = match serde_json::from_slice(&body) {
        Ok(a) => a,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, format!("the attach request: {e}")),
    };
    if a.scripts.iter().any(Option::is_some) && !state.opts.allow_scripts {
        return refuse(
            StatusCode::FORBIDDEN,
            "this run has DAGMan PRE/POST scripts and this daemon was not started with --allow-scripts",
        );
    }
    let mut session = state.session.lock().await;
    if let Some(s) = session.as_ref() {
        return refuse(
            StatusCode::CONFLICT,
            format!(
                "this daemon is site `{}` of run `{}`; one run at a time",
                s.name, s.attach.run_id
            ),
        );
    }
    let workflow = match Workflow::from_jobs(a.files.clone(), a.jobs.clone()) {
        Ok(w) => Arc::new(w),
        Err(e) => return refuse(StatusCode::BAD_REQUEST, format!("the workflow: {e}")),
    };
    let bad_id = |ids: &[usize]| ids.iter().any(|&f| f >= workflow.files.len());
    if a.site >= a.site_names.len() || bad_id(&a.inputs) || bad_id(&a.resumed) {
        return refuse(
            StatusCode::BAD_REQUEST,
            "the attach request names a site or file the run does not have",
        );
    }
    let mut topology = a.topology.clone();
    if topology.paths.is_empty() {
        topology = Topology::flat(a.site_names.len());
    }
    let links = topology.links.len();
    if topology.paths.len() != a.site_names.len()
        || topology.paths.iter().flatten().any(|&l| l >= links)
        || topology.check().is_err()
    {
        return refuse(
            StatusCode::BAD_REQUEST,
            "the attach request's topology is not one path per site over its links, forming a tree",
        );
    }
    let shapers = Arc::new(GridShapers::new(
        &[(a.site, &a.config)],
        &topology,
        a.emulation,
    ));
    let encoded: Vec<String> = workflow
        .files
        .iter()
        .map(|f| names::encode(&f.name))
        .collect();
    let (tx, rx) = mpsc::unbounded_channel();
    let root = state.opts.pool_root.clone().unwrap_or_else(|| {
        let real = workflow.files.iter().fold(0u64, |s, f| {
            s.saturating_add(a.emulation.real_bytes(f.size))
        });
        crate::live::pool_root_for(real)
    });
    // An external program's failure must reach the manager, which runs in
    // another process: the daemon does not start one.
    if a.eviction.trim_start().starts_with("external") {
        let why = "an external eviction policy runs beside the manager; this site runs as a daemon: give it a built-in eviction";
        return refuse(StatusCode::UNPROCESSABLE_ENTITY, why);
    }
    let policies = crate::policy::RunPolicies::new(
        crate::policy::Registry::shared_builtin(),
        a.seed,
        Vec::new(),
    );
    let spec = SiteSpec {
        start: SiteStart {
            id: a.site,
            cfg: &a.config,
            workflow: &workflow,
            seed: a.seed,
            eviction: &a.eviction,
            policies: &policies,
            inputs: &a.inputs,
            resumed: &a.resumed,
        },
        encoded: &encoded,
        emulation: a.emulation,
        shapers: &shapers,
    };
    let (site, report) = (a.site, tx.clone());
    let parts = match prepare(&spec, &root, false, state.bind, move |fault| {
        let _ = report.send(Line::Event(Event::Fault { site, fault }));
    })
    .await
    {
        Ok(p) => p,
        Err(e) => return refuse(StatusCode::UNPROCESSABLE_ENTITY, e),
    };
    let gridftp = match &state.opts.advertise {
        Some(host) => {
            let port = parts.url.rsplit(':').next().unwrap_or("0");
            format!("http://{host}:{port}")
        }
        None => parts.url.clone(),
    };
    let reply = Attached {
        gridftp,
        pool_dir: parts.dir.path().display().to_string(),
    };
    tracing::info!(site = %a.config.info.name, run = %a.run_id, "attached");
    *session = Some(Session {
        serial: state
            .attaches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        name: a.config.info.name.clone(),
        pool_dir: parts.dir.path().to_path_buf(),
        gridftp: parts.server.clone(),
        parts: Some(parts),
        metrics: Arc::new(Metrics::new(&a.run_id)),
        attach: a,
        workflow,
        encoded,
        shapers,
        actor: None,
        events: tx,
        stream: Some(rx),
    });
    HttpResponse::Ok().json(reply)
}

async fn start(req: HttpRequest, state: web::Data<State>, body: web::Bytes) -> HttpResponse {
    authorized!(req, state);
    let s: Start = match serde_json::from_slice(&body) {
        Ok(s) => s,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, format!("the start request: {e}")),
    };
    let mut guard = state.session.lock().await;
    let Some(session) = guard.as_mut() else {
        return refuse(StatusCode::CONFLICT, "no run is attached");
    };
    let Some(parts) = session.parts.take() else {
        return refuse(StatusCode::CONFLICT, "the site has started already");
    };
    let a = &session.attach;
    if s.urls.len() != a.site_names.len() {
        return refuse(
            StatusCode::BAD_REQUEST,
            format!(
                "expected {} endpoint URLs, one a site; found {}",
                a.site_names.len(),
                s.urls.len()
            ),
        );
    }
    let client = match crate::live::http_client() {
        Ok(c) => c,
        Err(e) => return refuse(StatusCode::INTERNAL_SERVER_ERROR, e),
    };
    // Only this site's endpoint is the daemon's; the others are only pulled from.
    let mut endpoints: Vec<Arc<gridftp::Faults>> =
        (0..s.urls.len()).map(|_| Arc::default()).collect();
    endpoints[a.site] = parts.faults.clone();
    let shared = Arc::new(Shared {
        workflow: session.workflow.clone(),
        encoded: session.encoded.clone(),
        content: a.content.clone(),
        site_names: a.site_names.clone(),
        urls: s.urls,
        endpoints,
        emulation: a.emulation,
        seed: a.seed,
        client,
        metrics: session.metrics.clone(),
        scripts: a.scripts.clone(),
        shapers: session.shapers.clone(),
    });
    let sink = EventSink(session.events.clone()).start();
    let actor = SiteActor::new(
        a.config.clone(),
        shared,
        parts.site,
        parts.store,
        parts.dir,
        sink.recipient(),
    );
    session.actor = Some(actor.start());
    HttpResponse::NoContent().finish()
}

async fn events(req: HttpRequest, state: web::Data<State>) -> HttpResponse {
    authorized!(req, state);
    let mut guard = state.session.lock().await;
    let Some(session) = guard.as_mut() else {
        return refuse(StatusCode::CONFLICT, "no run is attached");
    };
    let Some(rx) = session.stream.take() else {
        return refuse(StatusCode::CONFLICT, "the event stream is taken");
    };
    let (metrics, name) = (session.metrics.clone(), session.name.clone());
    let follower = Follower {
        state: state.clone(),
        serial: session.serial,
    };
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let start = (rx, tick, follower);
    let stream = futures_util::stream::unfold(start, move |(mut rx, mut tick, follower)| {
        let (metrics, name) = (metrics.clone(), name.clone());
        async move {
            let first = tokio::select! {
                line = rx.recv() => line?,
                _ = tick.tick() => Line::Status(status_of(&metrics, &name)),
            };
            // Whatever else is waiting goes in the same chunk.
            let mut bytes = Vec::new();
            let mut line = Some(first);
            while let Some(l) = line.take() {
                serde_json::to_writer(&mut bytes, &l).ok()?;
                bytes.push(b'\n');
                if bytes.len() < 1 << 16 {
                    line = rx.try_recv().ok();
                }
            }
            Some((
                Ok::<_, actix_web::Error>(web::Bytes::from(bytes)),
                (rx, tick, follower),
            ))
        }
    });
    HttpResponse::Ok()
        .content_type("application/x-ndjson")
        .streaming(stream)
}

fn status_of(m: &Metrics, name: &str) -> Status {
    let jobs = |state: &str| m.site_jobs.with_label_values(&[name, state]).get().max(0) as u32;
    Status {
        queued: jobs("queued"),
        running: jobs("running"),
        used: m.storage_used.with_label_values(&[name]).get().max(0) as u64,
    }
}

async fn orders(req: HttpRequest, state: web::Data<State>, body: web::Bytes) -> HttpResponse {
    authorized!(req, state);
    let orders: Vec<Order> = match serde_json::from_slice(&body) {
        Ok(o) => o,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, format!("the orders: {e}")),
    };
    let guard = state.session.lock().await;
    let Some(actor) = guard.as_ref().and_then(|s| s.actor.as_ref()) else {
        return refuse(StatusCode::CONFLICT, "no site is running here");
    };
    for order in orders {
        match order {
            Order::Pin(m) => actor.do_send(m),
            Order::Fetch(m) => actor.do_send(m),
            Order::Submit(m) => actor.do_send(m),
            Order::Kill(m) => actor.do_send(m),
            Order::Remove(m) => actor.do_send(m),
            Order::RunScript(m) => actor.do_send(m),
            Order::Release(m) => actor.do_send(m),
            Order::Cleanup(m) => actor.do_send(m),
            Order::Delete(m) => actor.do_send(m),
            Order::Fault(m) => actor.do_send(m),
            // Scripts run only where the daemon allows them, as at attach.
            Order::AddJobs(mut m) => {
                if !state.opts.allow_scripts {
                    m.scripts.clear();
                }
                actor.do_send(m)
            }
        }
    }
    HttpResponse::NoContent().finish()
}

async fn status(req: HttpRequest, state: web::Data<State>) -> HttpResponse {
    authorized!(req, state);
    let guard = state.session.lock().await;
    let body = match guard.as_ref() {
        None => serde_json::json!({ "session": null }),
        Some(s) => serde_json::json!({
            "session": {
                "run_id": s.attach.run_id,
                "site": s.name,
                "started": s.actor.is_some(),
                "pool_dir": s.pool_dir,
                "status": status_of(&s.metrics, &s.name),
            }
        }),
    };
    HttpResponse::Ok().json(body)
}

async fn inventory(req: HttpRequest, state: web::Data<State>) -> HttpResponse {
    authorized!(req, state);
    let actor = {
        let guard = state.session.lock().await;
        guard.as_ref().and_then(|s| s.actor.clone())
    };
    let Some(actor) = actor else {
        return refuse(StatusCode::CONFLICT, "no site is running here");
    };
    match actor.send(TakeInventory).await {
        Ok(report) => HttpResponse::Ok().json(report),
        Err(e) => refuse(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

async fn detach(req: HttpRequest, state: web::Data<State>) -> HttpResponse {
    authorized!(req, state);
    match state.end(None).await {
        Some(_) => HttpResponse::NoContent().finish(),
        None => refuse(StatusCode::CONFLICT, "no run is attached"),
    }
}

async fn metrics(state: web::Data<State>) -> HttpResponse {
    let text = match state.session.lock().await.as_ref() {
        Some(s) => s.metrics.render(),
        None => String::new(),
    };
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(text)
}
