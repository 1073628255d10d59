//! Scenario loading: the site catalogue (`sites.toml`) and a testbed
//! (`testbeds/*.toml`) merged into one validated [`Scenario`].
//!
//! Every mistake in either file becomes a [`ConfigError`] naming the file, the
//! line and column, the field and what was expected; nothing here panics on
//! input. The testbed format is documented in `docs/testbed.md`. A loaded
//! scenario also makes each of its sites' starting state ([`SiteStart`]),
//! the one way both engines make a site. Farm testbeds (seed 001's `[farm]`
//! and `[stream]`) load through [`farm`].

pub mod farm;
mod faults;
mod manager;
mod setup;
mod sites;
pub(crate) mod source;
mod subdag_reader;
mod submissions;
mod workflow;

pub use setup::{SetupError, SiteStart};
pub use subdag_reader::{GrownDag, SubDagReader};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use toml::Spanned;

use crate::core::background::Background;
use crate::core::faults::SiteFaults;
use crate::core::submissions::Submissions;
use crate::core::{ManagerSettings, ReplicaPolicy, SiteId, SiteInfo, Workflow};
use crate::policy;
use crate::units;
use crate::workflow::formats;
use source::Source;

/// A mistake in a scenario file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {field}: {message}", location(file, *line, *column))]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line (0 when the file could not be read).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// Dotted field path, e.g. `site[2].cpus`.
    pub field: String,
    /// What was wrong and what was expected.
    pub message: String,
}

fn location(file: &Path, line: usize, column: usize) -> String {
    if line == 0 {
        file.display().to_string()
    } else {
        format!("{}:{line}:{column}", file.display())
    }
}

/// Emulation factors (DESIGN.md "Emulated time and bytes").
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Emulation {
    /// Nominal seconds per real second.
    pub time_scale: f64,
    /// Nominal bytes per real byte.
    pub byte_scale: f64,
}

impl Emulation {
    /// Real bytes on disk for `nominal` bytes (at least 1 for a non-empty file).
    pub fn real_bytes(&self, nominal: u64) -> u64 {
        if nominal == 0 {
            return 0;
        }
        ((nominal as f64 / self.byte_scale).round() as u64).max(1)
    }

    /// The run's registered replicas as the control database keeps them at
    /// the end: file name, site, real bytes.
    pub fn replica_rows(
        &self,
        wf: &Workflow,
        replicas: Vec<(crate::core::FileId, crate::core::SiteId)>,
    ) -> Vec<(crate::core::FileId, crate::core::SiteId, u64)> {
        replicas
            .into_iter()
            .map(|(f, s)| (f, s, self.real_bytes(wf.files[f].size)))
            .collect()
    }
    /// Real bytes per real second for a nominal rate.
    pub fn real_rate(&self, nominal: f64) -> f64 {
        nominal / self.byte_scale * self.time_scale
    }
    /// Real seconds for nominal seconds.
    pub fn real_secs(&self, nominal: f64) -> f64 {
        nominal / self.time_scale
    }
}

/// One site of a scenario, every field resolved.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SiteConfig {
    /// What the core sees.
    pub info: SiteInfo,
    /// A pure storage site (no CPUs).
    pub storage: bool,
    /// What its network interface sends, all streams together (nominal
    /// B/s; ∞ = none).
    #[serde(with = "crate::core::topology::unlimited")]
    pub bandwidth_out: f64,
    /// What its network interface receives, all streams together (nominal
    /// B/s; ∞ = none).
    #[serde(with = "crate::core::topology::unlimited")]
    pub bandwidth_in: f64,
    /// Cap per transfer stream (nominal B/s; ∞ = none).
    #[serde(with = "crate::core::topology::unlimited")]
    pub stream_cap: f64,
    /// Transfers served at once; more get 503.
    pub max_connections: usize,
    /// Per-transfer latency of its file server before the first byte (nominal s).
    pub latency: f64,
    /// Faults its file server injects on purpose (`corrupt_responses`: the
    /// first n responses get one byte flipped; `corrupt_probability`: each
    /// later one with this probability, seeded).
    pub faults: SiteFaults,
    /// Other users' load on the site's slots, if any.
    pub background: Option<Background>,
    /// The `gridbed site` daemon that runs this site, when it is not run
    /// in-process (`url` in the testbed). Never sent to the daemon.
    #[serde(skip)]
    pub daemon: Option<Daemon>,
}

/// A site daemon's bearer token from the file at `path`: one token on one
/// line (testbeds' `token_file`, `gridbed site --token-file`, a netbed's).
pub fn read_token(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?;
    let token = text.trim();
    if token.is_empty() || token.contains(char::is_whitespace) {
        return Err(format!(
            "the token file {} should hold one token on one line",
            path.display()
        ));
    }
    Ok(token.to_string())
}

/// Where a site daemon listens and the token it asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Daemon {
    /// Its control API's base URL (`http://host:port`).
    pub url: String,
    /// Its bearer token (read from `token_file`), if it asks for one.
    pub token: Option<String>,
    /// What the kernel shapes on the site's link (a netbed's qdiscs),
    /// which its file server then leaves alone.
    pub kernel: KernelShaping,
}

/// What of a site's link the kernel emulates (`gridbed netbed`): the
/// rates (`tbf`: what it sends, what it receives, the shared links) and the
/// latency (`netem`). The alternative is the
/// site's own endpoint: governor's token buckets and a first-byte wait.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KernelShaping {
    /// The site's bandwidth, both ways, and the links it crosses.
    pub rate: bool,
    /// The site's latency, and the links'.
    pub delay: bool,
}

impl SiteConfig {
    /// The seed of this site's background load (same in both engines).
    pub fn load_seed(run_seed: u64, site: SiteId) -> u64 {
        run_seed ^ 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(site as u64 + 1)
    }
}

/// A workflow file a scenario was read from.
#[derive(Debug, Clone)]
pub struct WorkflowSource {
    /// The file.
    pub path: PathBuf,
    /// The format it was read as.
    pub format: formats::Format,
    /// Defaults taken, tasks dropped: worth telling the user.
    pub warnings: Vec<String>,
    /// DAGMan's node settings, for a `.dag` file.
    pub dagman: Option<formats::dagman::DagmanInfo>,
    /// Whether the DAG's PRE/POST scripts run.
    pub run_scripts: bool,
}

/// A validated scenario: sites, workflow, manager settings, policies, seed.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Testbed name.
    pub name: String,
    /// The testbed file.
    pub path: PathBuf,
    /// Seed of every generator of the run.
    pub seed: u64,
    /// Sites, indexed by [`SiteId`].
    pub sites: Vec<SiteConfig>,
    /// The shared links between the sites and each site's path over them.
    pub topology: crate::core::topology::Topology,
    /// The testbed's `origin`: the default submit machine.
    pub origin: SiteId,
    /// The workflows users submit (`[[submission]]`), each from its
    /// submit machine, where its inputs start (never evicted there).
    pub submissions: Submissions,
    /// The workflow.
    pub workflow: Arc<Workflow>,
    /// Where the workflow was read from, when it was not generated.
    pub source: Option<WorkflowSource>,
    /// How the workflow was clustered (seed 004), if it was.
    pub clustering: Option<crate::workflow::clustering::Clustering>,
    /// Site selector name.
    pub strategy: String,
    /// Eviction policy name.
    pub eviction: String,
    /// Where `strategy` and `eviction` are looked up: the built-ins, and
    /// what a library user registered ([`load_with`]).
    pub registry: Arc<policy::Registry>,
    /// Manager tunables.
    pub manager: ManagerSettings,
    /// Timed faults (`[[fault]]`); per-response ones are in each site's
    /// `faults`.
    pub faults: crate::core::faults::FaultPlan,
    /// What an interrupted run finished, when this one picks it up again
    /// (`gridbed resume`).
    pub resume: Option<Resume>,
    /// Emulation factors.
    pub emulation: Emulation,
    /// Memoization within the run (`memoize = true`, or `gridbed run
    /// --memo`): a job whose version ended earlier in the run is not run
    /// when its workflow is submitted (seed 003 §5.3).
    pub memoize: bool,
    /// Per job: never memoized (`no_memoize` names it or its program).
    pub no_memoize: Vec<bool>,
}

impl Scenario {
    /// Each job's DAGMan PRE/POST scripts, executables resolved against the
    /// `.dag`'s folder, when the testbed runs them (`scripts = "run"`);
    /// empty otherwise.
    pub fn node_scripts(&self) -> Vec<Option<formats::dagman::NodeScripts>> {
        match &self.source {
            Some(src) if src.run_scripts => src
                .dagman
                .as_ref()
                .map(|d| d.scripts(&self.workflow, &self.script_dir(), None))
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// The halt files of the run's DAGMans, when the workflow is a `.dag`
    /// (the top DAG's stale one removed: call once, as the run starts).
    pub fn halt_files(&self) -> Option<formats::dagman::halt::HaltFiles> {
        let src = self.source.as_ref()?;
        let subdags =
            (src.dagman.as_ref()?.subdags.iter()).map(|d| (d.node.clone(), d.file.clone()));
        Some(formats::dagman::halt::HaltFiles::submitted(
            &src.path, subdags,
        ))
    }

    /// Where the DAG's scripts' relative executables are: the `.dag`'s
    /// folder, absolute (a bare `post.sh` would be looked for on PATH).
    fn script_dir(&self) -> PathBuf {
        let path = self.source.as_ref().map(|s| s.path.as_path());
        let dir = match path.and_then(std::path::Path::parent) {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf())
    }

    /// The policies of one run of this scenario: every policy of the run is
    /// built from it, so that an external program is started once.
    pub fn policies(&self) -> Arc<policy::RunPolicies> {
        let bandwidth = |b: f64| b.is_finite().then_some(b);
        let sites = self
            .sites
            .iter()
            .enumerate()
            .map(|(id, s)| policy::external::SiteSummary {
                id,
                name: s.info.name.clone(),
                cpus: s.info.cpus,
                disk: s.info.disk,
                bandwidth_out: bandwidth(s.bandwidth_out),
                bandwidth_in: bandwidth(s.bandwidth_in),
            })
            .collect();
        Arc::new(policy::RunPolicies::new(
            self.registry.clone(),
            self.seed,
            sites,
        ))
    }

    /// The workflow manager of this scenario: its site selector (built by
    /// the run's `policies`), the initial replicas, and DAGMan's node
    /// settings when the workflow is a `.dag`.
    pub fn new_manager(
        &self,
        policies: &policy::RunPolicies,
    ) -> Result<crate::core::Manager, policy::UnknownPolicy> {
        let selector = policies.selector(&self.strategy)?;
        let mut m = crate::core::Manager::new(
            self.workflow.clone(),
            self.site_infos(),
            &self.placement(),
            self.manager.clone(),
            selector,
        );
        m.set_submissions(self.submissions.clone());
        m.set_selector_name(&self.strategy);
        if let Some(twins) = self.twins() {
            m.set_twins(&twins);
        }
        if self.manager.cache_bound.is_some() {
            m.set_cache_worth(policies.cache_worth(&self.eviction)?);
        }
        let dagman = self.source.as_ref().and_then(|src| {
            let info = src.dagman.as_ref()?;
            Some(info.node_settings(&self.workflow, src.run_scripts))
        });
        if dagman.is_some() || self.resume.is_some() {
            let n = self.workflow.jobs.len();
            let mut nodes = dagman.unwrap_or_else(|| crate::core::nodes::NodeSettings::none(n));
            // What the interrupted run finished is DONE, as in a rescue DAG.
            if let Some(r) = &self.resume {
                for (d, &ended) in nodes.done.iter_mut().zip(&r.done) {
                    *d |= ended;
                }
            }
            m.set_nodes(nodes);
        }
        Ok(m)
    }

    /// The jobs of the run grouped by version, when it memoizes (see
    /// [`Scenario::memoize`]).
    pub fn twins(&self) -> Option<crate::core::versions::Twins> {
        use crate::core::versions::{Twins, Versions};
        self.memoize.then(|| {
            let versions = Versions::of(&self.workflow, self.seed);
            Twins::of(&self.workflow, &versions, &self.no_memoize)
        })
    }

    /// What the run is made of, each as a sha256 (hex): the testbed file,
    /// the sites as loaded (catalogue entries with the testbed's changes)
    /// and the workflow (its files' names and sizes, its jobs' names,
    /// runtimes, files and parents). A control database keeps them, so
    /// that a run is resumed only on what it ran on.
    pub fn digests(&self) -> Vec<(&'static str, String)> {
        use sha2::{Digest, Sha256};
        let hex = |d: Sha256| {
            d.finalize()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        let mut testbed = Sha256::new();
        testbed.update(std::fs::read(&self.path).unwrap_or_default());
        let mut sites = Sha256::new();
        sites.update(serde_json::to_vec(&self.sites).unwrap_or_default());
        let mut wf = Sha256::new();
        for f in &self.workflow.files {
            wf.update(f.name.as_bytes());
            wf.update(f.size.to_le_bytes());
        }
        let ids = |wf: &mut Sha256, ids: &[usize]| {
            wf.update((ids.len() as u64).to_le_bytes());
            for &i in ids {
                wf.update((i as u64).to_le_bytes());
            }
        };
        for j in &self.workflow.jobs {
            wf.update(j.name.as_bytes());
            wf.update(j.runtime.to_le_bytes());
            ids(&mut wf, &j.inputs);
            ids(&mut wf, &j.outputs);
            ids(&mut wf, &j.parents);
        }
        vec![
            ("testbed", hex(testbed)),
            ("sites", hex(sites)),
            ("workflow", hex(wf)),
        ]
    }

    /// The core's view of the sites.
    pub fn site_infos(&self) -> Vec<SiteInfo> {
        self.sites.iter().map(|s| s.info.clone()).collect()
    }
    /// The outputs an interrupted run left at `site` (none unless resuming).
    pub fn resumed_outputs(&self, site: SiteId) -> impl Iterator<Item = crate::core::FileId> + '_ {
        self.resume
            .iter()
            .flat_map(|r| r.outputs.iter())
            .filter(move |&&(_, s)| s == site)
            .map(|&(f, _)| f)
    }

    /// Initial replicas: every workflow input at its submit machines, and
    /// when resuming, the outputs the interrupted run's ended jobs left.
    pub fn placement(&self) -> Vec<(usize, SiteId)> {
        let resumed = self.resume.iter().flat_map(|r| r.outputs.iter().copied());
        self.submissions
            .placement(&self.workflow)
            .into_iter()
            .chain(resumed)
            .collect()
    }

    /// What site `id` starts from, given the run's `policies`, its
    /// workflow `inputs` (of [`Scenario::inputs_by_site`]) and `resumed`
    /// outputs (of [`Scenario::resumed_outputs`]).
    pub fn site_start<'a>(
        &'a self,
        id: SiteId,
        policies: &'a policy::RunPolicies,
        inputs: &'a [crate::core::FileId],
        resumed: &'a [crate::core::FileId],
    ) -> SiteStart<'a> {
        SiteStart {
            id,
            cfg: &self.sites[id],
            workflow: &self.workflow,
            seed: self.seed,
            eviction: &self.eviction,
            policies,
            inputs,
            resumed,
        }
    }

    /// Per site: the workflow inputs that start there (on submit machines).
    pub fn inputs_by_site(&self) -> Vec<Vec<crate::core::FileId>> {
        let mut at = vec![Vec::new(); self.sites.len()];
        for (f, s) in self.submissions.placement(&self.workflow) {
            at[s].push(f);
        }
        at
    }

    /// Replaces the sites with `sites`, finding the origin, every submit
    /// machine and every timed fault's site again by name (a resumed
    /// output at a site that is gone is lost, as on a lost pool). The
    /// error names a submit machine or a faulted site that is gone.
    pub fn replace_sites(&mut self, sites: Vec<SiteConfig>) -> Result<(), SubsetError> {
        let find = |old: SiteId| {
            let name = &self.sites[old].info.name;
            sites.iter().position(|s| &s.info.name == name)
        };
        let submit = |old: SiteId| {
            find(old).ok_or_else(|| SubsetError::Submit(self.sites[old].info.name.clone()))
        };
        let origin = submit(self.origin)?;
        let mut submissions = self.submissions.clone();
        for sub in &mut submissions.list {
            sub.origin = submit(sub.origin)?;
        }
        let mut timed = self.faults.timed.clone();
        for (at, site, _) in &mut timed {
            *site = find(*site).ok_or_else(|| SubsetError::Faulted {
                site: self.sites[*site].info.name.clone(),
                at: *at,
            })?;
        }
        let outputs: Option<Vec<_>> = self.resume.as_ref().map(|r| {
            r.outputs
                .iter()
                .filter_map(|&(f, s)| Some((f, find(s)?)))
                .collect()
        });
        // A site new to the scenario (a trace's machine) is on no link.
        let keep: Vec<Option<SiteId>> = sites
            .iter()
            .map(|s| self.sites.iter().position(|o| o.info.name == s.info.name))
            .collect();
        self.topology = self.topology.subset(&keep);
        if let (Some(r), Some(outputs)) = (&mut self.resume, outputs) {
            r.outputs = outputs;
        }
        self.faults.timed = timed;
        self.origin = origin;
        self.submissions = submissions;
        self.sites = sites;
        Ok(())
    }
}

/// Why a scenario's sites cannot be replaced by a subset.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SubsetError {
    /// A submit machine (where inputs start) is not among the new sites.
    #[error("the submit machine `{0}` is not among the sites")]
    Submit(String),
    /// A site with a timed fault is not among the new sites.
    #[error(
        "site `{site}` has a timed fault (at {at} s) and is not among the sites: keep it, or take its faults out of the testbed"
    )]
    Faulted {
        /// The site.
        site: String,
        /// When its fault is planned (nominal s).
        at: f64,
    },
}

/// What an interrupted run finished: its ended jobs (they do not run again)
/// and the outputs they left, each at the site its job ended at.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resume {
    /// Per job: it ended.
    pub done: Vec<bool>,
    /// (file, site): an ended job's output where it was written.
    pub outputs: Vec<(crate::core::FileId, SiteId)>,
}

impl Resume {
    /// From the site each job ended at (`None`: it did not end): its outputs
    /// are placed there as far as the site's disk holds them (an output
    /// that does not fit is lost, and made again if a job needs it).
    pub fn new(
        wf: &Workflow,
        ended_at: &[Option<SiteId>],
        sites: &[SiteConfig],
        origin: SiteId,
    ) -> Resume {
        let mut room: Vec<u64> = sites.iter().map(|s| s.info.disk).collect();
        let inputs: u64 = wf.inputs().map(|f| wf.files[f].size).sum();
        room[origin] = room[origin].saturating_sub(inputs);
        let mut outputs = Vec::new();
        for (job, site) in ended_at.iter().enumerate() {
            // A site the sites no longer list (resumed with `--force`
            // after the catalogue changed) lost its outputs.
            let Some((site, room)) = site.and_then(|s| Some((s, room.get_mut(s)?))) else {
                continue;
            };
            for &f in &wf.jobs[job].outputs {
                let size = wf.files[f].size;
                if size <= *room {
                    *room -= size;
                    outputs.push((f, site));
                }
            }
        }
        Resume {
            done: ended_at.iter().map(Option::is_some).collect(),
            outputs,
        }
    }
}

/// Command-line overrides of testbed fields.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--strategy`.
    pub strategy: Option<String>,
    /// `--seed`.
    pub seed: Option<u64>,
    /// `--sites`.
    pub sites_file: Option<PathBuf>,
    /// `--workflow`: a workflow file run instead of the testbed's workflow.
    pub workflow: Option<PathBuf>,
    /// `--format` of that file (default: told from its content).
    pub format: Option<formats::Format>,
    /// `--no-rescue` / `--rescue-from N` / `--load-save FILE`: which rescue
    /// DAG a `.dag` starts from (default: the newest, as
    /// `condor_submit_dag` picks it).
    pub rescue: Option<formats::dagman::rescue::Rescue>,
    /// A `.dag` refused as it is read gets the log DAGMan writes as it
    /// fails to parse one (`<dag>.dagman.out`): `gridbed run`'s, not
    /// `check`'s.
    pub log_refusal: bool,
    /// `gridbed run --memo`: the run memoizes, so sub-DAGs are read with
    /// the DAG where they can be, as with the testbed's `memoize = true`.
    pub memoize: bool,
}

/// Seconds from 0 to [`workflow::MAX_RUNTIME_S`] (about 31 years): a
/// time, a delay or an interval beyond it would leave a simulated makespan
/// `inf` and a live run endless.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Seconds(f64);
impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if v.is_finite() && (0.0..=workflow::MAX_RUNTIME_S).contains(&v) {
            Ok(Seconds(v))
        } else {
            Err(serde::de::Error::custom(format!(
                "expected seconds from 0 to {:e}, found {}",
                workflow::MAX_RUNTIME_S,
                crate::units::plain(v)
            )))
        }
    }
}

/// The range of a [`Positive`] factor (a CPU speed, a time or byte scale,
/// a share, a period): a billionth to a billion.
pub const POSITIVE_RANGE: std::ops::RangeInclusive<f64> = 1e-9..=1e9;

/// A finite number > 0, within [`POSITIVE_RANGE`].
#[derive(Debug, Clone, Copy, PartialEq)]
struct Positive(f64);
impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if POSITIVE_RANGE.contains(&v) {
            Ok(Positive(v))
        } else {
            Err(serde::de::Error::custom(format!(
                "expected a number from {:e} to {:e}, found {}",
                POSITIVE_RANGE.start(),
                POSITIVE_RANGE.end(),
                crate::units::plain(v)
            )))
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EmulationFile {
    time_scale: Positive,
    byte_scale: Positive,
}

/// The testbed's `[network]`: what holds for every interface and link.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NetworkFile {
    /// The part of a rate that carries file bytes ([`Topology`]).
    ///
    /// [`Topology`]: crate::core::topology::Topology::protocol_efficiency
    protocol_efficiency: Option<Spanned<f64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TestbedFile<W> {
    name: Option<String>,
    #[allow(dead_code)]
    description: Option<String>,
    seed: Option<u64>,
    sites_file: Option<Spanned<String>>,
    strategy: Spanned<String>,
    replica_policy: Option<ReplicaPolicy>,
    eviction: Option<Spanned<String>>,
    origin: Spanned<String>,
    emulation: EmulationFile,
    #[serde(default)]
    manager: manager::ManagerFile,
    #[serde(default)]
    site: Vec<Spanned<sites::SiteFile>>,
    /// Shared links between sites.
    #[serde(default)]
    link: Vec<Spanned<sites::LinkFile>>,
    #[serde(default)]
    network: NetworkFile,
    #[serde(default)]
    fault: Vec<Spanned<faults::FaultFile>>,
    /// Pegasus job clustering, e.g. `horizontal[size=4]`.
    clustering: Option<Spanned<String>>,
    /// Pegasus's auxiliary jobs (create-dir, stage-in/out, registration).
    planner: Option<Spanned<workflow::PlannerFile>>,
    /// Workflows submitted from several submit machines, over time.
    #[serde(default)]
    submission: Vec<Spanned<submissions::SubmissionFile>>,
    /// Memoization within the run (seed 003 §5.3).
    memoize: Option<bool>,
    /// Jobs or programs never memoized (seed 003 §5.3's opt-out).
    no_memoize: Option<Spanned<Vec<String>>>,
    workflow: Spanned<W>,
}

/// Loads and validates a testbed and the site catalogue it uses, its
/// policies among the built-ins.
pub fn load(path: &Path, overrides: &Overrides) -> Result<Scenario, ConfigError> {
    load_with(path, overrides, policy::Registry::shared_builtin())
}

/// [`load`], its policy names looked up in `registry` (the built-ins and
/// the policies a library user registered).
pub fn load_with(
    path: &Path,
    overrides: &Overrides,
    registry: Arc<policy::Registry>,
) -> Result<Scenario, ConfigError> {
    let src = Source::read(path)?;
    let tb = workflow::parse_testbed(&src)?;
    let base = path.parent().unwrap_or(Path::new("."));
    let catalog_path = match (&overrides.sites_file, &tb.sites_file) {
        (Some(p), _) => p.clone(),
        (None, Some(p)) => base.join(p.get_ref()),
        (None, None) => sites::default_catalog(base),
    };
    // A testbed that defines every site itself reads no catalogue unless it
    // names one.
    let catalogue = if overrides.sites_file.is_none()
        && tb.sites_file.is_none()
        && !catalog_path.is_file()
        && tb.site.iter().all(|s| s.get_ref().new)
    {
        sites::Catalogue::empty(&catalog_path)?
    } else {
        sites::Catalogue::read(&catalog_path)?
    };
    let mut sites = sites::resolve(&tb.site, &src, base, &catalogue)?;
    let mut topology = sites::topology(&tb.site, &tb.link, &src, &catalogue)?;
    if let Some(e) = &tb.network.protocol_efficiency {
        let v = *e.get_ref();
        if !(v > 0.0 && v <= 1.0) {
            let msg = format!(
                "expected a fraction in (0, 1] (0.956: TCP/IP's headers over Ethernet), found {v}"
            );
            return Err(src.error(Some(e.span()), None, msg));
        }
        topology.protocol_efficiency = v;
    }
    let faults = faults::resolve(&tb.fault, &mut sites, &src)?;
    let origin = sites::origin(&sites, &tb.origin, &src)?;
    let (strategy, eviction) = manager::policies(&tb, &src, overrides, &registry)?;
    let mut manager = manager::settings(&tb, &src, &strategy, &registry)?;
    let seed = overrides.seed.or(tb.seed).unwrap_or(1);
    manager.wms.seed = seed;
    // What must see the whole DAG ahead takes the sub-DAGs read with it.
    let memoize = tb.memoize == Some(true);
    let ahead = match strategy.as_str() {
        _ if tb.clustering.is_some() => {
            Some((tb.clustering.as_ref().map(Spanned::span), "clustering"))
        }
        _ if tb.planner.is_some() => Some((tb.planner.as_ref().map(Spanned::span), "[planner]")),
        "dag-c" | "clustered" => Some((None, "a strategy that plans the whole DAG ahead")),
        _ if memoize => Some((None, "memoization")),
        _ => None,
    };
    let plans_ahead = ahead.is_some() || overrides.memoize;
    let (workflow, mut source, clustering) =
        workflow::resolve(&tb, &src, base, overrides, seed, plans_ahead)?;
    let submissions = submissions::resolve(&tb.submission, &workflow, &sites, origin, &src)?;
    let mut input_bytes = vec![0u64; sites.len()];
    for (f, s) in submissions.placement(&workflow) {
        input_bytes[s] += workflow.files[f].size;
    }
    for (s, &bytes) in input_bytes.iter().enumerate() {
        if bytes > sites[s].info.disk {
            let msg = format!(
                "the workflow's inputs ({}) do not fit on the submit machine `{}` ({})",
                units::human_bytes(bytes as f64),
                sites[s].info.name,
                units::human_bytes(sites[s].info.disk as f64)
            );
            return Err(src.error(Some(tb.origin.span()), None, msg));
        }
    }

    let no_memoize = match &tb.no_memoize {
        None => vec![false; workflow.jobs.len()],
        Some(list) => {
            let names = list.get_ref();
            let program = |j: usize| crate::core::versions::program(&workflow, j);
            let named = |j: usize, n: &String| n == &workflow.jobs[j].name || n == program(j);
            let jobs = 0..workflow.jobs.len();
            if let Some(n) = names.iter().find(|n| !jobs.clone().any(|j| named(j, n))) {
                let msg = format!("`{n}` is no job or program of the workflow");
                return Err(src.error(Some(list.span()), Some("no_memoize".into()), msg));
            }
            jobs.map(|j| names.iter().any(|n| named(j, n))).collect()
        }
    };

    // A DAGMan CONFIG's DAGMAN_MAX_PRE_SCRIPTS is the DAG's own MAXPRE, its
    // DAGMAN_SUBMIT_DEPTH_FIRST the DAG's release order. The testbed's
    // order is every DAGMan's default, as HTCondor's configuration is: a
    // sub-DAG without a CONFIG of its own keeps it, not the top DAG's.
    if let Some(d) = source.as_mut().and_then(|s| s.dagman.as_mut()) {
        for sub in &mut d.subdags {
            sub.submit_depth_first
                .get_or_insert(manager.submit_depth_first);
        }
        if let Some(max_pre) = d.max_pre {
            manager.maxpre = max_pre;
        }
        if let Some(depth_first) = d.submit_depth_first {
            manager.submit_depth_first = depth_first;
        }
    }
    let deferred = (source.as_ref().and_then(|s| s.dagman.as_ref()))
        .and_then(|d| d.subdags.iter().find(|s| s.deferred));
    if let Some(sub) = deferred {
        // Its nodes are known only once its PRE script has run: nothing
        // that plans or transforms the whole DAG ahead can take them.
        if let Some((span, what)) = ahead {
            let msg = format!(
                "the sub-DAG {} is read after its node's PRE script (scripts = \"run\"), as DAGMan reads it, so {what} cannot take it; run without it, or without scripts = \"run\" to read it with the DAG",
                sub.node
            );
            return Err(src.error(span, None, msg));
        }
    }
    Ok(Scenario {
        name: tb.name.unwrap_or_else(|| {
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
        path: path.to_path_buf(),
        seed,
        sites,
        topology,
        origin,
        submissions,
        workflow: Arc::new(workflow),
        source,
        clustering,
        strategy,
        eviction,
        registry,
        manager,
        faults,
        resume: None,
        emulation: Emulation {
            time_scale: tb.emulation.time_scale.0,
            byte_scale: tb.emulation.byte_scale.0,
        },
        memoize: tb.memoize.unwrap_or(false),
        no_memoize,
    })
}
