//! The farm's executors (seed 001 §3): each an actor that owns a cache
//! pool (its own temp dir) and a gridftp endpoint, runs the tasks the
//! dispatcher gives it (reads from a peer, the store or its own disk, then
//! the compute), and applies the dispatcher's decisions on what it cached.

use super::*;

/// Attempts of a read from the store before it counts as failed (its task
/// goes back to the wait queue).
const STORE_ATTEMPTS: u32 = 5;

/// What an executor tells the dispatcher.
#[derive(Debug)]
pub(super) enum Report {
    /// A read arrived, verified, in the part file of `transfer`.
    Fetched {
        exec: ExecId,
        read: Read,
        served: Source,
        transfer: u64,
        meta: FileMeta,
    },
    /// Task `task`'s reads and compute ended.
    Done { exec: ExecId, task: usize },
    /// A read failed past its retries.
    Failed { read: Read, why: String },
    /// Task `task` could not read its files: back to the wait queue.
    Requeue { exec: ExecId, task: usize },
}

/// What every executor shares.
pub(super) struct Shared {
    pub(super) client: reqwest::Client,
    pub(super) store_url: String,
    /// Pool name of every file.
    pub(super) names: Vec<String>,
    /// Real seconds of a task's dispatch and compute.
    pub(super) compute: Duration,
    pub(super) reports: mpsc::UnboundedSender<Report>,
    /// The store's aggregate bandwidth, and each executor's link out and
    /// in: the simulator's resources, passed by the reading executor (the
    /// endpoints send unshaped).
    pub(super) store_out: Option<Arc<shaping::Shaper>>,
    pub(super) link_out: Vec<Option<Arc<shaping::Shaper>>>,
    pub(super) link_in: Vec<Option<Arc<shaping::Shaper>>>,
}

/// An executor: CPU slots are the dispatcher's business; the actor owns
/// the pool and runs what it is given.
pub(super) struct Executor {
    id: ExecId,
    store: Store,
    /// Deleted on [`Stop`] (release).
    dir: Option<tempfile::TempDir>,
    shared: Arc<Shared>,
    next_transfer: u64,
    /// The local disk its cached files are read through (None: free).
    disk: Option<Arc<shaping::Shaper>>,
}

impl Actor for Executor {
    type Context = Context<Self>;
}

/// Run `task`, reading `reads` (each with its source's URL, none if local).
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Run {
    pub(super) task: usize,
    pub(super) reads: Vec<(Read, Option<String>)>,
}

/// The dispatcher's decision on a fetched file: list it or drop it, and
/// delete what was evicted for it.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Commit {
    pub(super) file: usize,
    pub(super) transfer: u64,
    pub(super) meta: FileMeta,
    pub(super) keep: bool,
    pub(super) evict: Vec<usize>,
}

/// Released: delete the pool and stop. Answers once the pool is gone.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Stop;

/// The pool names listed now, once every earlier message was handled.
#[derive(Message)]
#[rtype(result = "Vec<String>")]
pub(super) struct Inventory;

impl Handler<Run> for Executor {
    type Result = ();
    fn handle(&mut self, m: Run, ctx: &mut Context<Self>) {
        let shared = self.shared.clone();
        let store = self.store.clone();
        let exec = self.id;
        let mut pulls = Vec::new();
        let mut locals = Vec::new();
        for (read, url) in m.reads {
            let Some(url) = url else {
                if let Some(disk) = &self.disk {
                    // Opened now, in mailbox order: an eviction committed
                    // after this task's placement cannot take it away.
                    let path = self.store.path(&shared.names[read.file]);
                    locals.push((read, std::fs::File::open(path), disk.clone()));
                }
                continue;
            };
            self.next_transfer += 1;
            let transfer = self.next_transfer;
            let (shared, store) = (shared.clone(), store.clone());
            pulls.push(
                async move {
                    let r = read_file(&shared, &store, (exec, read), &url, transfer).await;
                    let report = match r {
                        Ok((served, meta)) => Report::Fetched {
                            exec,
                            read,
                            served,
                            transfer,
                            meta,
                        },
                        Err(e) => Report::Failed {
                            read,
                            why: format!("file {}: {e:?}", shared.names[read.file]),
                        },
                    };
                    let failed = matches!(report, Report::Failed { .. });
                    let _ = shared.reports.send(report);
                    failed
                }
                .boxed_local(),
            );
        }
        for (read, file, disk) in locals {
            let shared = shared.clone();
            pulls.push(
                async move {
                    let r = match file {
                        Ok(file) => read_local(file, &disk).await,
                        Err(e) => Err(e),
                    };
                    match r {
                        Ok(()) => false,
                        Err(e) => {
                            let why = format!("cached file {}: {e}", shared.names[read.file]);
                            let _ = shared.reports.send(Report::Failed { read, why });
                            true
                        }
                    }
                }
                .boxed_local(),
            );
        }
        let task = m.task;
        ctx.spawn(
            async move {
                let results = futures_util::future::join_all(pulls).await;
                if results.iter().any(|&failed| failed) {
                    let _ = shared.reports.send(Report::Requeue { exec, task });
                    return;
                }
                if !shared.compute.is_zero() {
                    tokio::time::sleep(shared.compute).await;
                }
                let _ = shared.reports.send(Report::Done { exec, task });
            }
            .into_actor(self),
        );
    }
}

/// Reads a cached file off the executor's local disk, its bytes through the
/// disk's shaper.
async fn read_local(file: std::fs::File, disk: &shaping::Shaper) -> std::io::Result<()> {
    use tokio::io::AsyncReadExt;
    let mut file = tokio::fs::File::from_std(file);
    let mut buf = vec![0u8; disk.chunk()];
    loop {
        let n = file.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        disk.pass(n).await;
    }
}

/// Pulls `read` for `exec` from `url` (a peer or the store); a peer that no
/// longer has it sends the read to the store; the store is retried on
/// connection failures. Where it was served from, and what arrived.
async fn read_file(
    shared: &Shared,
    store: &Store,
    (exec, read): (ExecId, Read),
    url: &str,
    transfer: u64,
) -> Result<(Source, FileMeta), TransferFailure> {
    let enc = &shared.names[read.file];
    let through = |from: &Option<Arc<shaping::Shaper>>| {
        let shapers = [from, &shared.link_in[exec]];
        PathShaping::through(shapers.into_iter().flatten().cloned(), f64::INFINITY)
    };
    if let Source::Peer(peer) = read.source {
        let path = through(&shared.link_out[peer]);
        // A failed pull leaves no part file behind.
        if let Ok(p) =
            transfer::pull_unlisted(&shared.client, url, store, enc, transfer, &path).await
        {
            return Ok((read.source, p.meta));
        }
    }
    let path = through(&shared.store_out);
    let mut attempt = 0;
    loop {
        attempt += 1;
        match transfer::pull_unlisted(
            &shared.client,
            &shared.store_url,
            store,
            enc,
            transfer,
            &path,
        )
        .await
        {
            Ok(p) => return Ok((Source::Store, p.meta)),
            Err(e) if attempt >= STORE_ATTEMPTS => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_millis(10 << attempt)).await,
        }
    }
}

impl Handler<Commit> for Executor {
    type Result = ();
    fn handle(&mut self, m: Commit, _: &mut Context<Self>) {
        let names = &self.shared.names;
        for f in m.evict {
            self.store.remove(&names[f]);
        }
        let enc = &names[m.file];
        if m.keep {
            if let Err(e) = self.store.commit_part(enc, m.transfer, m.meta) {
                // The index now says this executor caches the file; the
                // end-of-run check reports the difference.
                tracing::warn!("executor {}: listing {enc}: {e}", self.id);
            }
        } else {
            self.store.drop_part(enc, m.transfer);
        }
    }
}

impl Handler<Stop> for Executor {
    type Result = ();
    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        if let Some(dir) = self.dir.take()
            && let Err(e) = dir.close()
        {
            tracing::warn!("executor {}: deleting its pool: {e}", self.id);
        }
        ctx.stop();
    }
}

impl Handler<Inventory> for Executor {
    type Result = Vec<String>;
    fn handle(&mut self, _: Inventory, _: &mut Context<Self>) -> Vec<String> {
        self.store.names()
    }
}

/// The dispatcher's handle on a started executor.
pub(super) struct Started {
    pub(super) addr: Addr<Executor>,
    pub(super) url: String,
    pub(super) server: actix_web::dev::ServerHandle,
    pub(super) store: Store,
}

/// What it takes to start an executor.
pub(super) struct Starter {
    pub(super) root: PathBuf,
    pub(super) limits: gridftp::Limits,
    /// Real bytes/s of each executor's local disk.
    pub(super) disk: f64,
    pub(super) shared: Arc<Shared>,
}

impl Starter {
    /// An executor's endpoint over `store`.
    fn endpoint(&self, store: &Store) -> gridftp::Gridftp {
        gridftp::Gridftp::new(
            store.clone(),
            self.limits.clone(),
            FileServer::new(ENDPOINT_CONNECTIONS, ResponseFaults::none()),
            Arc::default(),
        )
    }

    pub(super) fn start(&self, id: ExecId) -> std::io::Result<Started> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("gridbed-executor-{id}-"))
            .tempdir_in(&self.root)?;
        let store = Store::new(dir.path());
        let (url, handle) =
            crate::live::serve_gridftp(crate::live::LOOPBACK, self.endpoint(&store))?;
        let addr = Executor {
            id,
            store: store.clone(),
            dir: Some(dir),
            shared: self.shared.clone(),
            next_transfer: 0,
            disk: shaping::Shaper::of(self.disk),
        }
        .start();
        Ok(Started {
            addr,
            url,
            server: handle,
            store,
        })
    }
}
