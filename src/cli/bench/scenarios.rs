//! The scenarios the live and remote benchmarks run: sites and settings
//! built in code rather than read from a testbed.

use super::*;

pub(super) fn bench_site(name: &str, cpus: usize) -> SiteConfig {
    SiteConfig {
        info: SiteInfo {
            name: name.into(),
            cpus,
            disk: 1 << 50,
            speed: 1.0,
            overhead: 0.0,
        },
        storage: cpus == 0,
        bandwidth_out: f64::INFINITY,
        bandwidth_in: f64::INFINITY,
        stream_cap: f64::INFINITY,
        max_connections: 1024,
        latency: 0.0,
        faults: Default::default(),
        background: None,
        daemon: None,
    }
}

/// Zero-work jobs through the whole live engine.
/// `jobs` zero-runtime, input-less jobs round robin on 5 sites of 16 slots,
/// MAXPRE unbounded, time_scale 1: the live engine's dispatch path alone.
pub(super) fn dispatch_scenario(jobs: usize) -> Result<Scenario, Failure> {
    dispatch_scenario_on(jobs, 5)
}

/// [`dispatch_scenario`] on `sites` execution sites.
pub(super) fn dispatch_scenario_on(jobs: usize, n_sites: usize) -> Result<Scenario, Failure> {
    let specs = (0..jobs)
        .map(|i| JobSpec {
            name: format!("j{i}"),
            runtime: 0.0,
            ..Default::default()
        })
        .collect();
    let wf = Workflow::build(Vec::<File>::new(), specs)?;
    let mut sites = vec![bench_site("store", 0)];
    sites.extend((0..n_sites).map(|i| bench_site(&format!("site{i}"), 16)));
    Ok(bench_scenario(
        "bench-dispatch",
        sites,
        0,
        wf,
        "round-robin",
        unthrottled(),
    ))
}

/// A benchmark's scenario: seed 1, LRU, no emulation scaling.
pub(super) fn bench_scenario(
    name: &str,
    sites: Vec<SiteConfig>,
    origin: usize,
    workflow: Workflow,
    strategy: &str,
    manager: ManagerSettings,
) -> Scenario {
    Scenario {
        name: name.into(),
        path: PathBuf::from("(bench)"),
        seed: 1,
        topology: crate::core::topology::Topology::flat(sites.len()),
        sites,
        origin,
        submissions: crate::core::submissions::Submissions::single(workflow.jobs.len(), origin),
        workflow: Arc::new(workflow),
        source: None,
        clustering: None,
        strategy: strategy.into(),
        eviction: "lru".into(),
        registry: crate::policy::Registry::shared_builtin(),
        manager,
        faults: Default::default(),
        resume: None,
        emulation: Emulation {
            time_scale: 1.0,
            byte_scale: 1.0,
        },
        memoize: false,
        no_memoize: Vec::new(),
    }
}

/// Manager settings with MAXPRE and the prescript interval off.
pub(super) fn unthrottled() -> ManagerSettings {
    ManagerSettings {
        maxpre: 0,
        prescript_interval: 0.0,
        ..Default::default()
    }
}
