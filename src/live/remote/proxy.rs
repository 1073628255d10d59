//! The manager's side of a site daemon: an actor that takes the same
//! messages as an in-process [`crate::live::site::SiteActor`] and carries
//! them to the daemon in order (one request in flight, the orders queued
//! meanwhile going in the next), and that hands the daemon's event stream
//! to the manager.
//!
//! A daemon that stops answering is a crashed site whose pool is lost: the
//! proxy reports the crash and ends every job, transfer, script and kill it
//! had outstanding there as failed, so the manager plans them again and
//! nothing waits forever.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures_util::StreamExt;
use rustc_hash::FxHashSet;

use super::protocol::{Attach, Attached, Line, Order, Start, Status};
use crate::config::Daemon;
use crate::core::faults::Fault;
use crate::core::{Event, JobFailure, JobId, ScriptKind, SiteId, TransferFailure, TransferId};
use crate::live::EngineError;
use crate::live::messages::{
    AddJobs,
    Cleanup, Delete, Fetch, Kill, Pin, Release, Remove, RunScript, SiteEvent, SiteFault, SiteReport,
    Submit, TakeInventory,
};
use crate::metrics::Metrics;

/// A site daemon's control API.
#[derive(Clone)]
pub struct Remote {
    base: String,
    token: Option<String>,
    client: reqwest::Client,
}

impl Remote {
    /// The daemon at `daemon.url`.
    pub fn new(daemon: &Daemon) -> Result<Remote, EngineError> {
        // No read timeout: the event stream stays open for the whole run.
        let client = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| EngineError::Client(e.to_string()))?;
        Ok(Remote {
            base: daemon.url.clone(),
            token: daemon.token.clone(),
            client,
        })
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let r = self.client.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    }

    /// Sends a request; its body if the daemon says yes, else why not.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<bytes::Bytes, String> {
        let mut r = self.request(method.clone(), path);
        if let Some(b) = body {
            r = r.header("content-type", "application/json").body(b);
        }
        let resp = r
            .send()
            .await
            .map_err(|e| format!("{method} {}{path}: {e}", self.base))?;
        let code = resp.status();
        let text = resp
            .bytes()
            .await
            .map_err(|e| format!("{method} {}{path}: {e}", self.base))?;
        if code.is_success() {
            Ok(text)
        } else {
            Err(format!(
                "{method} {}{path}: {code}: {}",
                self.base,
                String::from_utf8_lossy(&text).trim()
            ))
        }
    }

    /// Attaches the daemon to a run as the site `attach` describes.
    pub async fn attach(&self, attach: &Attach) -> Result<Attached, EngineError> {
        let body = serde_json::to_vec(attach).map_err(|e| EngineError::Remote(e.to_string()))?;
        let reply = self
            .call(reqwest::Method::POST, "/v1/session", Some(body))
            .await
            .map_err(EngineError::Remote)?;
        serde_json::from_slice(&reply).map_err(|e| EngineError::Remote(e.to_string()))
    }

    /// Ends the daemon's session: its pool goes, its endpoint stops.
    pub async fn detach(&self) -> Result<(), String> {
        self.call(reqwest::Method::DELETE, "/v1/session", None)
            .await
            .map(drop)
    }
}

/// Starts the remote site: every endpoint is known.
#[derive(Message)]
#[rtype(result = "Result<(), String>")]
pub struct Go {
    /// Every site's gridftp endpoint, by site id.
    pub urls: Vec<String>,
}

/// Ends the session at the end of a run.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Detach;

/// A line of the event stream, or its end (`Err`: why).
#[derive(Message)]
#[rtype(result = "()")]
struct Incoming(Result<Line, String>);

/// What the manager is owed an answer for at the site.
#[derive(Default)]
struct Outstanding {
    jobs: FxHashSet<JobId>,
    fetches: FxHashSet<TransferId>,
    scripts: FxHashSet<(JobId, ScriptKind)>,
    kills: FxHashSet<JobId>,
}

/// One site run by a daemon. See the module docs.
pub struct RemoteSite {
    id: SiteId,
    name: String,
    remote: Remote,
    urls: Arc<Vec<String>>,
    manager: Recipient<SiteEvent>,
    metrics: Arc<Metrics>,
    queue: Vec<Order>,
    sending: bool,
    lost: Option<String>,
    owed: Outstanding,
    stream: Option<SpawnHandle>,
    detached: bool,
    /// Told once every order sent so far has reached the daemon.
    idle: Vec<tokio::sync::oneshot::Sender<()>>,
}

impl RemoteSite {
    /// The proxy of site `id` (`name`) run by `remote`.
    pub fn new(
        id: SiteId,
        name: String,
        remote: Remote,
        manager: Recipient<SiteEvent>,
        metrics: Arc<Metrics>,
    ) -> Self {
        RemoteSite {
            id,
            name,
            remote,
            urls: Arc::default(),
            manager,
            metrics,
            queue: Vec::new(),
            sending: false,
            lost: None,
            owed: Outstanding::default(),
            stream: None,
            detached: false,
            idle: Vec::new(),
        }
    }

    fn emit(&self, e: Event) {
        self.manager.do_send(SiteEvent(e));
    }

    /// Queues `order` for the daemon, or answers it at once as a lost site
    /// would.
    fn order(&mut self, order: Order, ctx: &mut Context<Self>) {
        match &order {
            Order::Submit(m) => {
                self.owed.jobs.insert(m.job);
            }
            Order::Fetch(m) => {
                self.owed.fetches.insert(m.id);
            }
            Order::RunScript(m) => {
                self.owed.scripts.insert((m.job, m.kind));
            }
            Order::Kill(m) => {
                self.owed.kills.insert(m.job);
            }
            // Removed, the job is owed no end any more.
            Order::Remove(m) => {
                self.owed.jobs.remove(&m.job);
            }
            _ => {}
        }
        if self.lost.is_some() {
            self.answer_lost();
            return;
        }
        self.queue.push(order);
        self.flush(ctx);
    }

    fn flush(&mut self, ctx: &mut Context<Self>) {
        if self.sending {
            return;
        }
        if self.queue.is_empty() || self.lost.is_some() {
            for w in self.idle.drain(..) {
                let _ = w.send(());
            }
            return;
        }
        let batch = std::mem::take(&mut self.queue);
        let body = match serde_json::to_vec(&batch) {
            Ok(b) => b,
            Err(e) => return self.lose(format!("orders not encoded: {e}")),
        };
        self.sending = true;
        let remote = self.remote.clone();
        let fut = async move {
            remote
                .call(reqwest::Method::POST, "/v1/orders", Some(body))
                .await
        };
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| {
            act.sending = false;
            match res {
                Ok(_) => act.flush(ctx),
                Err(e) => act.lose(e),
            }
        }));
    }

    /// Ready once every order sent so far has reached the daemon: what
    /// the engine asks after them (the inventory, the end of the session)
    /// then sees them carried out, as an in-process site's mailbox would.
    fn when_idle(&mut self) -> tokio::sync::oneshot::Receiver<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if !self.sending && (self.queue.is_empty() || self.lost.is_some()) {
            let _ = tx.send(());
        } else {
            self.idle.push(tx);
        }
        rx
    }

    /// Follows the daemon's event stream until it ends.
    fn follow(&mut self, ctx: &mut Context<Self>) {
        let remote = self.remote.clone();
        let me = ctx.address();
        let fut = async move {
            let resp = remote
                .request(reqwest::Method::GET, "/v1/events")
                .send()
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| r.error_for_status().map_err(|e| e.to_string()));
            let resp = match resp {
                Ok(r) => r,
                Err(e) => return me.do_send(Incoming(Err(e))),
            };
            let mut body = resp.bytes_stream();
            let mut buf: Vec<u8> = Vec::new();
            while let Some(chunk) = body.next().await {
                let chunk = match chunk {
                    Ok(c) => c,
                    Err(e) => return me.do_send(Incoming(Err(e.to_string()))),
                };
                buf.extend_from_slice(&chunk);
                let mut start = 0;
                while let Some(n) = memchr::memchr(b'\n', &buf[start..]) {
                    let line = serde_json::from_slice::<Line>(&buf[start..start + n])
                        .map_err(|e| format!("a line of the event stream: {e}"));
                    me.do_send(Incoming(line));
                    start += n + 1;
                }
                buf.drain(..start);
            }
            me.do_send(Incoming(Err("the event stream ended".into())));
        };
        self.stream = Some(ctx.spawn(fut.into_actor(self)));
    }

    fn on_event(&mut self, e: &Event) {
        match *e {
            Event::JobEnded { job, .. } => {
                self.owed.jobs.remove(&job);
            }
            Event::JobKilled { job, killed, .. } => {
                self.owed.kills.remove(&job);
                if killed {
                    self.owed.jobs.remove(&job);
                }
            }
            Event::TransferDone { id, .. } => {
                self.owed.fetches.remove(&id);
            }
            Event::ScriptDone { job, kind, .. } => {
                self.owed.scripts.remove(&(job, kind));
            }
            _ => {}
        }
    }

    fn on_status(&self, s: Status) {
        let (m, n) = (&self.metrics, self.name.as_str());
        m.site_jobs
            .with_label_values(&[n, "queued"])
            .set(s.queued as i64);
        m.site_jobs
            .with_label_values(&[n, "running"])
            .set(s.running as i64);
        m.storage_used.with_label_values(&[n]).set(s.used as i64);
    }

    /// The daemon is gone: a crash with the pool lost, and every answer
    /// owed given as a failure.
    fn lose(&mut self, why: String) {
        // Whatever waits for the orders to arrive waits no more.
        self.queue.clear();
        for w in self.idle.drain(..) {
            let _ = w.send(());
        }
        if self.lost.is_some() || self.detached {
            return;
        }
        tracing::warn!(site = %self.name, "site daemon lost: {why}");
        self.emit(Event::Fault {
            site: self.id,
            fault: Fault::Crash { pool_lost: true },
        });
        self.lost = Some(why);
        self.answer_lost();
    }

    fn answer_lost(&mut self) {
        let why = self.lost.clone().unwrap_or_default();
        let site = self.id;
        for job in std::mem::take(&mut self.owed.kills) {
            self.emit(Event::JobKilled {
                job,
                site,
                killed: false,
            });
        }
        for job in std::mem::take(&mut self.owed.jobs) {
            let result = Err(JobFailure::Failed(format!("site daemon lost: {why}")));
            self.emit(Event::JobEnded { job, site, result });
        }
        for id in std::mem::take(&mut self.owed.fetches) {
            let result = Err(TransferFailure::Connection(format!(
                "site daemon lost: {why}"
            )));
            self.emit(Event::TransferDone { id, result });
        }
        for (job, kind) in std::mem::take(&mut self.owed.scripts) {
            self.emit(Event::ScriptDone {
                job,
                kind,
                status: 1,
            });
        }
    }
}

impl Actor for RemoteSite {
    type Context = Context<Self>;
}

impl Handler<Go> for RemoteSite {
    type Result = ResponseActFuture<Self, Result<(), String>>;
    fn handle(&mut self, m: Go, ctx: &mut Context<Self>) -> Self::Result {
        self.follow(ctx);
        self.urls = Arc::new(m.urls.clone());
        let remote = self.remote.clone();
        let fut = async move {
            let body = serde_json::to_vec(&Start { urls: m.urls }).map_err(|e| e.to_string())?;
            remote
                .call(reqwest::Method::POST, "/v1/start", Some(body))
                .await
                .map(drop)
        };
        Box::pin(fut.into_actor(self))
    }
}

impl Handler<Incoming> for RemoteSite {
    type Result = ();
    fn handle(&mut self, m: Incoming, _: &mut Context<Self>) {
        match m.0 {
            Ok(Line::Event(e)) => {
                self.on_event(&e);
                self.emit(e);
            }
            Ok(Line::Status(s)) => self.on_status(s),
            Err(why) => self.lose(why),
        }
    }
}

/// Each order message becomes an [`Order`] for the daemon.
macro_rules! orders {
    ($($msg:ident => $variant:ident),* $(,)?) => {$(
        impl Handler<$msg> for RemoteSite {
            type Result = ();
            fn handle(&mut self, m: $msg, ctx: &mut Context<Self>) {
                self.order(Order::$variant(m), ctx);
            }
        }
    )*};
}

orders!(
    Pin => Pin,
    Submit => Submit,
    Kill => Kill,
    Remove => Remove,
    RunScript => RunScript,
    Release => Release,
    Cleanup => Cleanup,
    Delete => Delete,
    SiteFault => Fault,
    AddJobs => AddJobs,
);

impl Handler<Fetch> for RemoteSite {
    type Result = ();
    /// The daemon is told where to stage from.
    fn handle(&mut self, mut m: Fetch, ctx: &mut Context<Self>) {
        if m.url.is_none() {
            m.url = self.urls.get(m.from).cloned();
        }
        self.order(Order::Fetch(m), ctx);
    }
}

impl Handler<TakeInventory> for RemoteSite {
    type Result = ResponseFuture<SiteReport>;
    /// The daemon's inventory; a lost daemon's is empty.
    fn handle(&mut self, _: TakeInventory, _: &mut Context<Self>) -> Self::Result {
        let (remote, name) = (self.remote.clone(), self.name.clone());
        let idle = self.when_idle();
        let lost = self.lost.is_some();
        Box::pin(async move {
            let _ = idle.await;
            if lost {
                return SiteReport::default();
            }
            let got = remote
                .call(reqwest::Method::GET, "/v1/inventory", None)
                .await
                .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()));
            got.unwrap_or_else(|e| {
                tracing::warn!(site = %name, "no inventory from the site daemon: {e}");
                SiteReport::default()
            })
        })
    }
}

impl Handler<Detach> for RemoteSite {
    type Result = ResponseActFuture<Self, ()>;
    /// The session ends first, then the stream: a daemon whose stream
    /// closes first ends the session by itself, which would race this.
    fn handle(&mut self, _: Detach, _: &mut Context<Self>) -> Self::Result {
        self.detached = true;
        let (remote, name) = (self.remote.clone(), self.name.clone());
        let stream = self.stream.take();
        let idle = self.when_idle();
        let fut = async move {
            let _ = idle.await;
            if let Err(e) = remote.detach().await {
                tracing::warn!(site = %name, "site daemon not detached: {e}");
            }
        };
        Box::pin(fut.into_actor(self).map(move |(), _, ctx| {
            if let Some(h) = stream {
                ctx.cancel_future(h);
            }
        }))
    }
}
