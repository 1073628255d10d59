//! One live site made ready before any clock starts: its state machine as
//! the simulator makes it ([`SiteStart`]: pool, starting files, load,
//! exit faults), its pool directory with those files written, and its
//! gridftp endpoint. The
//! in-process engine and a `gridbed site` daemon make every site this way,
//! so a site behaves the same wherever it runs.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use tempfile::TempDir;

use super::{EngineError, gridftp, serve_gridftp, shaping, site, store, write_files};
use crate::config::{Emulation, SiteStart};
use crate::core::faults::Fault;
use crate::core::file_server::{FileServer, ResponseFaults};
use crate::core::site::Site;

/// What a site is made from.
pub struct SiteSpec<'a> {
    /// What it starts from, as the simulator's site does.
    pub start: SiteStart<'a>,
    /// Pool name of every file, by file id.
    pub encoded: &'a [String],
    /// Emulation factors.
    pub emulation: Emulation,
    /// The network's limits this process carries out (the site's out among
    /// them, shared with its server).
    pub shapers: &'a shaping::GridShapers,
}

/// A site ready to start.
pub struct SiteParts {
    /// Its state machine, its pool's starting files placed.
    pub site: Site,
    /// Its files on disk.
    pub store: store::Store,
    /// The pool directory (removed when the last holder drops it, unless kept).
    pub dir: Arc<TempDir>,
    /// Base URL of its gridftp endpoint.
    pub url: String,
    /// The endpoint's server.
    pub server: actix_web::dev::ServerHandle,
    /// The faults the endpoint injects (and whether the site is down).
    pub faults: Arc<gridftp::Faults>,
}

/// Makes the site of `spec`: a pool directory under `root` (left on disk
/// after the run when `keep`), its starting files written, its gridftp
/// endpoint listening on `bind` (port chosen by the system) and telling
/// `report` of every fault it injects.
pub async fn prepare(
    spec: &SiteSpec<'_>,
    root: &Path,
    keep: bool,
    bind: IpAddr,
    report: impl Fn(Fault) + Send + Sync + 'static,
) -> Result<SiteParts, EngineError> {
    let start = &spec.start;
    let (s, em, i) = (start.cfg, spec.emulation, start.id);
    let site = start.site()?;
    let dir = tempfile::Builder::new()
        .prefix(&format!("gridbed-{}-", s.info.name))
        .disable_cleanup(keep)
        .tempdir_in(root)?;
    let store = store::Store::new(dir.path());
    let files = start.files();
    write_files(&store, start.workflow, spec.encoded, em, start.seed, files).await?;

    let limits = gridftp::Limits {
        bandwidth: em.real_rate(s.bandwidth_out),
        stream_cap: em.real_rate(s.stream_cap),
        latency: site::real_duration(em.real_secs(s.latency)),
    };
    let faults = Arc::new(
        gridftp::Faults::new(site::real_duration(em.real_secs(s.faults.stall_seconds)))
            .reporting(report),
    );
    let answers = FileServer::new(
        s.max_connections,
        ResponseFaults::of(&s.faults, start.seed, i),
    );
    let server = gridftp::Gridftp::new(store.clone(), limits, answers, faults.clone())
        .sharing(spec.shapers.egress(i), spec.shapers.key(), spec.shapers.held());
    let (url, server) = serve_gridftp(bind, server)?;
    Ok(SiteParts {
        site,
        store,
        dir: Arc::new(dir),
        url,
        server,
        faults,
    })
}
