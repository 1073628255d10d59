//! One live site made ready before any clock starts: its pool directory and
//! accounting, the files it starts with (workflow inputs at a submit
//! machine, a resumed run's outputs) and its gridftp endpoint. The
//! in-process engine and a `gridbed site` daemon make every site this way,
//! so a site behaves the same wherever it runs.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use tempfile::TempDir;

use super::{EngineError, gridftp, serve_gridftp, shaping, site, store, write_files};
use crate::config::{Emulation, SiteConfig};
use crate::core::faults::{Fault, ResponseFault};
use crate::core::storage::Pool;
use crate::core::{FileId, SiteId, Workflow};
use crate::policy;

/// What a site is made from.
pub struct SiteSpec<'a> {
    /// Its id in the run.
    pub id: SiteId,
    /// Its configuration.
    pub cfg: &'a SiteConfig,
    /// The workflow.
    pub workflow: &'a Arc<Workflow>,
    /// Pool name of every file, by file id.
    pub encoded: &'a [String],
    /// Emulation factors.
    pub emulation: Emulation,
    /// The run seed.
    pub seed: u64,
    /// The eviction policy's name.
    pub eviction: &'a str,
    /// The run's policies, which build it.
    pub policies: &'a policy::RunPolicies,
    /// Workflow inputs that start here (a submit machine).
    pub inputs: &'a [FileId],
    /// Outputs an interrupted run's ended jobs left here.
    pub resumed: &'a [FileId],
    /// The network's limits this process carries out (the site's out among
    /// them, shared with its server).
    pub shapers: &'a shaping::GridShapers,
}

/// A site ready to start.
pub struct SiteParts {
    /// Its pool accounting, the starting files placed.
    pub pool: Pool,
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
    let (s, wf, em, i) = (spec.cfg, spec.workflow, spec.emulation, spec.id);
    let dir = tempfile::Builder::new()
        .prefix(&format!("gridbed-{}-", s.info.name))
        .disable_cleanup(keep)
        .tempdir_in(root)?;
    let store = store::Store::new(dir.path());
    let eviction = spec
        .policies
        .eviction(spec.eviction, i)
        .map_err(policy::PolicyError::from)?;
    let mut pool = Pool::new(s.info.disk, eviction);
    for &f in spec.inputs {
        pool.place_origin(f, wf.files[f].size)
            .map_err(|_| EngineError::OriginFull(s.info.name.clone()))?;
    }
    for &f in spec.resumed {
        let _ = pool.place_output(f, wf.files[f].size);
    }
    let mut files = spec.resumed.to_vec();
    files.extend_from_slice(spec.inputs);
    write_files(&store, wf, spec.encoded, em, spec.seed, files).await?;

    let limits = gridftp::Limits {
        bandwidth: em.real_rate(s.bandwidth_out),
        stream_cap: em.real_rate(s.stream_cap),
        max_connections: s.max_connections,
        latency: site::real_duration(em.real_secs(s.latency)),
    };
    let f = &s.faults;
    let faults = Arc::new(
        gridftp::Faults::new(f.schedule(ResponseFault::Corrupt, spec.seed, i))
            .with(
                f.schedule(ResponseFault::Reset, spec.seed, i),
                f.schedule(ResponseFault::Stall, spec.seed, i),
                site::real_duration(em.real_secs(f.stall_seconds)),
                f.stall_seconds,
            )
            .reporting(report),
    );
    let server = gridftp::Gridftp::new(store.clone(), limits, faults.clone())
        .sharing(spec.shapers.egress(i), spec.shapers.key());
    let (url, server) = serve_gridftp(bind, server)?;
    Ok(SiteParts {
        pool,
        store,
        dir: Arc::new(dir),
        url,
        server,
        faults,
    })
}
