//! Scenario loading: the site catalogue (`sites.toml`) and a testbed
//! (`testbeds/*.toml`) merged into one validated [`Scenario`].
//!
//! Every mistake in either file becomes a [`ConfigError`] naming the file, the
//! line and column, the field and what was expected; nothing here panics on
//! input. The testbed format is documented in `docs/testbed.md`.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use toml::Spanned;

use crate::core::background::{Background, parse_trace};
use crate::core::faults::{FaultSpec, SiteFaults};
use crate::core::{ManagerSettings, ReplicaPolicy, SiteId, SiteInfo, Workflow};
use crate::policy;
use crate::units::{self, Rate, Size};
use crate::workflow::WorkflowSpec;
use crate::workflow::formats::{self, FormatError};
use crate::workflow::generators::{Coadd, FileSpec, GENERATORS, Inline, Pipeline, Spatial};

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
#[derive(Debug, Clone, Copy, PartialEq)]
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
#[derive(Debug, Clone, PartialEq)]
pub struct SiteConfig {
    /// What the core sees.
    pub info: SiteInfo,
    /// A pure storage site (no CPUs).
    pub storage: bool,
    /// Aggregate egress bandwidth of its file server (nominal B/s; ∞ = none).
    pub bandwidth: f64,
    /// Cap per transfer stream (nominal B/s; ∞ = none).
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
}

impl SiteConfig {
    /// The seed of this site's background load (same in both engines).
    pub fn load_seed(run_seed: u64, site: SiteId) -> u64 {
        run_seed ^ 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(site as u64 + 1)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct BackgroundFile {
    model: Spanned<String>,
    mean_busy: Option<Spanned<f64>>,
    period: Option<Positive>,
    file: Option<Spanned<String>>,
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
    /// Where the workflow's input files start (never evicted there).
    pub origin: SiteId,
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
    /// Manager tunables.
    pub manager: ManagerSettings,
    /// Emulation factors.
    pub emulation: Emulation,
}

impl Scenario {
    /// The workflow manager of this scenario: its site selector, the initial
    /// replicas, and DAGMan's node settings when the workflow is a `.dag`.
    pub fn new_manager(&self) -> Result<crate::core::Manager, policy::UnknownPolicy> {
        let selector = policy::site_selector(&self.strategy, self.seed)?;
        let mut m = crate::core::Manager::new(
            self.workflow.clone(),
            self.site_infos(),
            &self.placement(),
            self.manager.clone(),
            selector,
        );
        if let Some(src) = &self.source
            && let Some(info) = &src.dagman
        {
            m.set_nodes(info.node_settings(&self.workflow, src.run_scripts));
        }
        Ok(m)
    }

    /// The core's view of the sites.
    pub fn site_infos(&self) -> Vec<SiteInfo> {
        self.sites.iter().map(|s| s.info.clone()).collect()
    }
    /// Initial replicas: every workflow input at the origin.
    pub fn placement(&self) -> Vec<(usize, SiteId)> {
        self.workflow.inputs().map(|f| (f, self.origin)).collect()
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
}

/// Non-negative finite seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Seconds(f64);
impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if v.is_finite() && v >= 0.0 {
            Ok(Seconds(v))
        } else {
            Err(serde::de::Error::custom(format!(
                "expected seconds ≥ 0, found {v}"
            )))
        }
    }
}

/// A finite number > 0.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Positive(f64);
impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if v.is_finite() && v > 0.0 {
            Ok(Positive(v))
        } else {
            Err(serde::de::Error::custom(format!(
                "expected a number > 0, found {v}"
            )))
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SiteFile {
    name: Spanned<String>,
    #[serde(default)]
    new: bool,
    storage: Option<bool>,
    cpus: Option<Spanned<usize>>,
    disk: Option<Size>,
    bandwidth: Option<Rate>,
    stream_cap: Option<Rate>,
    max_connections: Option<Spanned<usize>>,
    latency: Option<Seconds>,
    speed: Option<Positive>,
    overhead: Option<Seconds>,
    corrupt_responses: Option<u32>,
    corrupt_probability: Option<Spanned<f64>>,
    background: Option<Spanned<BackgroundFile>>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct SiteDefaults {
    bandwidth: Option<Rate>,
    stream_cap: Option<Rate>,
    max_connections: Option<usize>,
    latency: Option<Seconds>,
    speed: Option<Positive>,
    overhead: Option<Seconds>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    #[serde(default)]
    defaults: SiteDefaults,
    #[serde(default)]
    site: Vec<Spanned<SiteFile>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EmulationFile {
    time_scale: Positive,
    byte_scale: Positive,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ManagerFile {
    maxpre: Option<usize>,
    prescript_interval: Option<Seconds>,
    prescript_streams: Option<Spanned<usize>>,
    max_retries: Option<u32>,
    transfer_retries: Option<u32>,
    transfer_backoff: Option<Seconds>,
    replan_backoff: Option<Seconds>,
    max_replans: Option<u32>,
    monit_interval: Option<Spanned<Seconds>>,
    max_idle: Option<Spanned<Seconds>>,
    release_overhead: Option<Seconds>,
    submit_overhead: Option<Seconds>,
    postscript_overhead: Option<Seconds>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TestbedFile<W> {
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
    manager: ManagerFile,
    #[serde(default)]
    site: Vec<Spanned<SiteFile>>,
    /// Pegasus job clustering, e.g. `horizontal[size=4]`.
    clustering: Option<Spanned<String>>,
    workflow: Spanned<W>,
}

/// A loaded text file, for turning byte offsets into line, column and field.
struct Source {
    path: PathBuf,
    text: String,
}

impl Source {
    fn read(path: &Path) -> Result<Source, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            line: 0,
            column: 0,
            field: "(file)".into(),
            message: format!("cannot read: {e}"),
        })?;
        Ok(Source {
            path: path.to_path_buf(),
            text,
        })
    }

    /// An error at `span`; `field` None derives it from the text (table header
    /// and key of that line).
    fn error(
        &self,
        span: Option<Range<usize>>,
        field: Option<String>,
        message: String,
    ) -> ConfigError {
        let offset = span.map(|s| s.start).unwrap_or(0).min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        let column = before[line_start..].chars().count() + 1;
        let field = field.unwrap_or_else(|| self.field_at(offset, line_start));
        ConfigError {
            file: self.path.clone(),
            line,
            column,
            field,
            message,
        }
    }

    fn field_at(&self, offset: usize, line_start: usize) -> String {
        let line_end = self.text[offset..]
            .find('\n')
            .map(|i| offset + i)
            .unwrap_or(self.text.len());
        let this_line = &self.text[line_start..line_end];
        let key = this_line
            .split_once('=')
            .map(|(k, _)| k.trim().trim_matches('"').to_string())
            .filter(|k| !k.is_empty() && !k.starts_with('['));
        // Index [[array]] tables so that `site[3].cpus` says which entry.
        let mut table = String::new();
        let mut counts: std::collections::HashMap<String, usize> = Default::default();
        for l in self.text[..line_end].lines() {
            let l = l.trim();
            if let Some(name) = l.strip_prefix("[[").and_then(|r| r.split_once("]]")) {
                let n = counts.entry(name.0.trim().to_string()).or_insert(0);
                table = format!("{}[{}]", name.0.trim(), *n);
                *n += 1;
            } else if let Some(name) = l.strip_prefix('[').and_then(|r| r.split_once(']')) {
                table = name.0.trim().to_string();
            }
        }
        match (table.is_empty(), key) {
            (true, Some(k)) => k,
            (false, Some(k)) => format!("{table}.{k}"),
            (false, None) => table,
            (true, None) => "(top level)".into(),
        }
    }

    fn parse<T: for<'de> Deserialize<'de>>(&self) -> Result<T, ConfigError> {
        toml::from_str(&self.text).map_err(|e| self.error(e.span(), None, e.message().to_string()))
    }
}

/// Loads and validates a testbed and the site catalogue it uses.
pub fn load(path: &Path, overrides: &Overrides) -> Result<Scenario, ConfigError> {
    let src = Source::read(path)?;
    let tb = parse_testbed(&src)?;
    let base = path.parent().unwrap_or(Path::new("."));
    let catalog_path = match (&overrides.sites_file, &tb.sites_file) {
        (Some(p), _) => p.clone(),
        (None, Some(p)) => base.join(p.get_ref()),
        (None, None) => default_catalog(base),
    };
    let catalog_src = Source::read(&catalog_path)?;
    let catalog: CatalogFile = catalog_src.parse()?;

    let mut names: Vec<String> = Vec::new();
    for entry in &catalog.site {
        let s = entry.get_ref();
        if names.contains(s.name.get_ref()) {
            let msg = format!("duplicate site `{}`", s.name.get_ref());
            return Err(catalog_src.error(Some(s.name.span()), None, msg));
        }
        for (missing, present) in [("cpus", s.cpus.is_some()), ("disk", s.disk.is_some())] {
            if !present {
                let msg = format!("a catalogue site needs `{missing}`");
                return Err(catalog_src.error(Some(entry.span()), None, msg));
            }
        }
        names.push(s.name.get_ref().clone());
    }

    let mut sites: Vec<SiteConfig> = Vec::new();
    let mut site_spans = Vec::new();
    for entry in &tb.site {
        let s = entry.get_ref();
        let name = s.name.get_ref();
        if sites.iter().any(|c| &c.info.name == name) {
            let msg = format!("duplicate site `{name}`: each site may appear once");
            return Err(src.error(Some(s.name.span()), None, msg));
        }
        let base_entry = catalog
            .site
            .iter()
            .map(Spanned::get_ref)
            .find(|c| c.name.get_ref() == name);
        let (base_entry, err_src) = match (base_entry, s.new) {
            (Some(_), true) => {
                let msg = format!(
                    "`{name}` is already in the catalogue {}; drop `new = true` to use it",
                    catalog_path.display()
                );
                return Err(src.error(Some(s.name.span()), None, msg));
            }
            (Some(b), false) => (Some(b), &src),
            (None, true) => (None, &src),
            (None, false) => {
                let msg = format!(
                    "unknown site `{name}`; the catalogue {} has: {}; add `new = true` to define a site here",
                    catalog_path.display(),
                    summarize(&names)
                );
                return Err(src.error(Some(s.name.span()), None, msg));
            }
        };
        let mut site = merge(s, base_entry, &catalog.defaults).map_err(|(field, msg)| {
            err_src.error(
                Some(entry.span()),
                Some(format!("site `{name}`.{field}")),
                msg,
            )
        })?;
        if site.info.cpus == 0 && !site.storage {
            let span = s.cpus.as_ref().map(Spanned::span).unwrap_or(s.name.span());
            let msg = "zero CPUs on an execution site: expected cpus ≥ 1, or `storage = true` for a pure storage site".to_string();
            return Err(src.error(Some(span), None, msg));
        }
        if site.storage && site.info.cpus > 0 {
            let span = s.cpus.as_ref().map(Spanned::span).unwrap_or(s.name.span());
            let msg = "a storage site runs no jobs: expected cpus = 0".to_string();
            return Err(src.error(Some(span), None, msg));
        }
        // Written in the testbed or in the catalogue: errors and trace paths
        // are relative to the file it is written in.
        let written = match (
            &s.background,
            base_entry.and_then(|b| b.background.as_ref()),
        ) {
            (Some(b), _) => Some((b, &src, base)),
            (None, Some(b)) => Some((
                b,
                &catalog_src,
                catalog_path.parent().unwrap_or(Path::new(".")),
            )),
            (None, None) => None,
        };
        site.background = written
            .map(|(b, in_src, dir)| background(b, in_src, dir))
            .transpose()?;
        if site.max_connections == 0 {
            let span = s
                .max_connections
                .as_ref()
                .map(Spanned::span)
                .unwrap_or(entry.span());
            return Err(src.error(Some(span), None, "expected max_connections ≥ 1".into()));
        }
        if let Some(p) = &s.corrupt_probability
            && !(0.0..=1.0).contains(p.get_ref())
        {
            let msg = "expected corrupt_probability in [0, 1]".to_string();
            return Err(src.error(Some(p.span()), None, msg));
        }
        site_spans.push(s.name.span());
        sites.push(site);
    }
    if sites.is_empty() {
        return Err(src.error(
            None,
            Some("site".into()),
            "expected at least one [[site]]".into(),
        ));
    }
    if !sites.iter().any(|s| s.info.cpus > 0) {
        let msg = "expected at least one execution site (cpus ≥ 1)".to_string();
        return Err(src.error(Some(site_spans[0].clone()), Some("site".into()), msg));
    }
    let origin = sites
        .iter()
        .position(|s| &s.info.name == tb.origin.get_ref())
        .ok_or_else(|| {
            let valid: Vec<String> = sites.iter().map(|s| s.info.name.clone()).collect();
            let msg = format!(
                "unknown site `{}`; expected one of the testbed's sites: {}",
                tb.origin.get_ref(),
                valid.join(", ")
            );
            src.error(Some(tb.origin.span()), None, msg)
        })?;

    let strategy = match &overrides.strategy {
        Some(s) => {
            policy::site_selector(s, 0).map_err(|e| ConfigError {
                file: PathBuf::from("(command line)"),
                line: 0,
                column: 0,
                field: "--strategy".into(),
                message: e.to_string(),
            })?;
            s.clone()
        }
        None => {
            let s = tb.strategy.get_ref();
            policy::site_selector(s, 0)
                .map_err(|e| src.error(Some(tb.strategy.span()), None, e.to_string()))?;
            s.clone()
        }
    };
    let eviction = match &tb.eviction {
        Some(e) => {
            policy::eviction_policy(e.get_ref(), 0)
                .map_err(|err| src.error(Some(e.span()), None, err.to_string()))?;
            e.get_ref().clone()
        }
        None => "lru".to_string(),
    };

    let m = &tb.manager;
    let defaults = ManagerSettings::default();
    if let Some(s) = &m.prescript_streams
        && *s.get_ref() == 0
    {
        return Err(src.error(
            Some(s.span()),
            None,
            "expected prescript_streams ≥ 1".into(),
        ));
    }
    let mut manager = ManagerSettings {
        maxpre: m.maxpre.unwrap_or(defaults.maxpre),
        prescript_interval: m
            .prescript_interval
            .map_or(defaults.prescript_interval, |s| s.0),
        prescript_streams: m
            .prescript_streams
            .as_ref()
            .map_or(defaults.prescript_streams, |s| *s.get_ref()),
        max_retries: m.max_retries.unwrap_or(defaults.max_retries),
        transfer_retries: m.transfer_retries.unwrap_or(defaults.transfer_retries),
        transfer_backoff: m
            .transfer_backoff
            .map_or(defaults.transfer_backoff, |s| s.0),
        replan_backoff: m.replan_backoff.map_or(defaults.replan_backoff, |s| s.0),
        max_replans: m.max_replans.unwrap_or(defaults.max_replans),
        replica_policy: tb.replica_policy.unwrap_or(defaults.replica_policy),
        monit_interval: defaults.monit_interval,
        max_idle: defaults.max_idle,
        release_overhead: m.release_overhead.map_or(0.0, |s| s.0),
        submit_overhead: m.submit_overhead.map_or(0.0, |s| s.0),
        postscript_overhead: m.postscript_overhead.map_or(0.0, |s| s.0),
    };
    match (&m.monit_interval, &m.max_idle) {
        (None, None) => {}
        (Some(i), Some(idle)) => {
            if i.get_ref().0 <= 0.0 {
                return Err(src.error(
                    Some(i.span()),
                    None,
                    "expected monit_interval > 0 s".into(),
                ));
            }
            manager.monit_interval = i.get_ref().0;
            manager.max_idle = idle.get_ref().0;
        }
        (Some(one), None) | (None, Some(one)) => {
            let msg = "MonitQueue needs both monit_interval and max_idle".to_string();
            return Err(src.error(Some(one.span()), None, msg));
        }
    }

    // A strategy that implies a replica policy (RandomCaching) decides it.
    if let Ok(selector) = policy::site_selector(&strategy, 0)
        && let Some(p) = selector.replica_policy()
    {
        manager.replica_policy = p;
    }
    let seed = overrides.seed.or(tb.seed).unwrap_or(1);
    let spec = tb.workflow.get_ref();
    spec.validate().map_err(|(field, msg)| {
        src.error(
            Some(tb.workflow.span()),
            Some(format!("workflow.{field}")),
            msg,
        )
    })?;
    let file = match (&overrides.workflow, spec) {
        (Some(file), _) => Some((
            file.clone(),
            formats::Options {
                format: overrides.format.unwrap_or(formats::Format::Auto),
                ..Default::default()
            },
            false,
        )),
        (None, WorkflowSpec::File(f)) => Some((
            base.join(&f.file),
            f.options(base),
            f.scripts == crate::workflow::generators::Scripts::Run,
        )),
        _ => None,
    };
    let (workflow, source) = match file {
        Some((path, opts, run_scripts)) => {
            let loaded = formats::load(&path, &opts).map_err(|e: FormatError| ConfigError {
                file: e.file,
                line: 0,
                column: 0,
                field: "(workflow file)".into(),
                message: e.message,
            })?;
            let source = WorkflowSource {
                path,
                format: loaded.format,
                warnings: loaded.warnings,
                dagman: loaded.dagman,
                run_scripts,
            };
            (Ok(loaded.workflow), Some(source))
        }
        None => (spec.generate(seed), None),
    };
    let workflow = workflow.map_err(|e| {
        let located = match spec {
            WorkflowSpec::Inline(inline) => inline.locate(&e),
            _ => None,
        };
        match located {
            Some((i, span)) => src.error(
                Some(span),
                Some(format!("workflow.job[{i}]")),
                e.to_string(),
            ),
            None => src.error(
                Some(tb.workflow.span()),
                Some("workflow".into()),
                e.to_string(),
            ),
        }
    })?;
    let (workflow, clustering) = match &tb.clustering {
        None => (workflow, None),
        Some(spec) => {
            let at = |m: String| src.error(Some(spec.span()), None, m);
            let techniques = crate::workflow::clustering::parse(spec.get_ref()).map_err(at)?;
            let (clustered, map) = crate::workflow::clustering::apply(&workflow, &techniques)
                .map_err(|e| at(format!("clustering makes an invalid workflow: {e}")))?;
            (clustered, Some(map))
        }
    };
    let origin_name = &sites[origin].info.name;
    let input_bytes: u64 = workflow.inputs().map(|f| workflow.files[f].size).sum();
    if input_bytes > sites[origin].info.disk {
        let msg = format!(
            "the workflow's inputs ({}) do not fit on the origin `{origin_name}` ({})",
            units::human_bytes(input_bytes as f64),
            units::human_bytes(sites[origin].info.disk as f64)
        );
        return Err(src.error(Some(tb.origin.span()), None, msg));
    }

    // A DAGMan CONFIG's DAGMAN_MAX_PRE_SCRIPTS is the DAG's own MAXPRE.
    if let Some(max_pre) = source
        .as_ref()
        .and_then(|s| s.dagman.as_ref())
        .and_then(|d| d.max_pre)
    {
        manager.maxpre = max_pre;
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
        origin,
        workflow: Arc::new(workflow),
        source,
        clustering,
        strategy,
        eviction,
        manager,
        emulation: Emulation {
            time_scale: tb.emulation.time_scale.0,
            byte_scale: tb.emulation.byte_scale.0,
        },
    })
}

/// Reads the generator name first, then the whole testbed with that
/// generator's parameter type, so that a mistake in a parameter is reported at
/// its own line (a tagged enum would buffer the table and lose the position).
fn parse_testbed(src: &Source) -> Result<TestbedFile<WorkflowSpec>, ConfigError> {
    #[derive(Deserialize)]
    struct Probe {
        workflow: Option<ProbeWorkflow>,
    }
    #[derive(Deserialize)]
    struct ProbeWorkflow {
        generator: Option<Spanned<String>>,
        // A string names a workflow file; the inline generator's
        // `[[workflow.file]]` tables are something else.
        file: Option<toml::Value>,
    }
    let probe: Probe = src.parse()?;
    let (generator, file) = match probe.workflow {
        Some(w) => (w.generator, w.file.filter(toml::Value::is_str)),
        None => (None, None),
    };
    let generator = match (generator, file) {
        (Some(g), None) => g,
        (None, Some(_)) => {
            return Ok(with(
                src.parse::<TestbedFile<FileSpec>>()?,
                WorkflowSpec::File,
            ));
        }
        (Some(g), Some(_)) => {
            let msg = "a workflow is generated or read from a file: expected `generator` or `file`, not both".to_string();
            return Err(src.error(Some(g.span()), None, msg));
        }
        (None, None) => {
            let msg = format!(
                "expected a [workflow] table with `generator = …` (one of: {}) or `file = …` (a WfFormat, DAX, Pegasus YAML or DAGMan file)",
                GENERATORS.join(", ")
            );
            return Err(src.error(None, Some("workflow".into()), msg));
        }
    };
    fn with<W>(tb: TestbedFile<W>, f: fn(W) -> WorkflowSpec) -> TestbedFile<WorkflowSpec> {
        let span = tb.workflow.span();
        TestbedFile {
            workflow: Spanned::new(span, f(tb.workflow.into_inner())),
            name: tb.name,
            description: tb.description,
            seed: tb.seed,
            sites_file: tb.sites_file,
            strategy: tb.strategy,
            replica_policy: tb.replica_policy,
            eviction: tb.eviction,
            origin: tb.origin,
            emulation: tb.emulation,
            manager: tb.manager,
            site: tb.site,
            clustering: tb.clustering,
        }
    }
    match generator.get_ref().as_str() {
        "pipeline" => Ok(with(
            src.parse::<TestbedFile<Pipeline>>()?,
            WorkflowSpec::Pipeline,
        )),
        "spatial" => Ok(with(
            src.parse::<TestbedFile<Spatial>>()?,
            WorkflowSpec::Spatial,
        )),
        "coadd" => Ok(with(
            src.parse::<TestbedFile<Coadd>>()?,
            WorkflowSpec::Coadd,
        )),
        "inline" => Ok(with(
            src.parse::<TestbedFile<Inline>>()?,
            WorkflowSpec::Inline,
        )),
        other => {
            let msg = format!(
                "unknown generator `{other}`; expected one of: {}",
                GENERATORS.join(", ")
            );
            Err(src.error(Some(generator.span()), None, msg))
        }
    }
}

/// `sites.toml` beside the testbed's folder (the repository root for
/// `testbeds/x.toml`), else in the current directory.
fn default_catalog(base: &Path) -> PathBuf {
    let candidates = [
        base.join("../sites.toml"),
        base.join("sites.toml"),
        PathBuf::from("sites.toml"),
    ];
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .unwrap_or_else(|| candidates[0].clone())
}

fn summarize(names: &[String]) -> String {
    if names.len() <= 6 {
        names.join(", ")
    } else {
        format!(
            "{}, …, {} ({} sites)",
            names[..3].join(", "),
            names[names.len() - 1],
            names.len()
        )
    }
}

/// A site's background-load model, checked; a trace file is read now.
fn background(
    b: &Spanned<BackgroundFile>,
    src: &Source,
    dir: &Path,
) -> Result<Background, ConfigError> {
    let at = |span: Range<usize>, msg: String| src.error(Some(span), None, msg);
    let whole = b.span();
    let b = b.get_ref();
    let extra = |name: &str, present: bool| -> Result<(), ConfigError> {
        match present {
            true => Err(at(
                whole.clone(),
                format!(
                    "`{name}` does not apply to the `{}` model",
                    b.model.get_ref()
                ),
            )),
            false => Ok(()),
        }
    };
    match b.model.get_ref().as_str() {
        "markov" => {
            extra("file", b.file.is_some())?;
            let mean_busy = b.mean_busy.as_ref().ok_or_else(|| {
                at(
                    whole.clone(),
                    "the markov model needs `mean_busy` (a fraction in [0, 1])".into(),
                )
            })?;
            if !(0.0..=1.0).contains(mean_busy.get_ref()) {
                let msg = "expected a fraction of the slots in [0, 1]".to_string();
                return Err(at(mean_busy.span(), msg));
            }
            let period = b.period.as_ref().ok_or_else(|| {
                at(
                    whole.clone(),
                    "the markov model needs `period` (nominal seconds > 0)".into(),
                )
            })?;
            Ok(Background::Markov {
                mean_busy: *mean_busy.get_ref(),
                period: period.0,
            })
        }
        "trace" => {
            extra("mean_busy", b.mean_busy.is_some())?;
            extra("period", b.period.is_some())?;
            let file = b.file.as_ref().ok_or_else(|| {
                at(
                    whole.clone(),
                    "the trace model needs `file` (a `time, busy` CSV)".into(),
                )
            })?;
            let path = dir.join(file.get_ref());
            let text = std::fs::read_to_string(&path).map_err(|e| {
                at(
                    file.span(),
                    format!("cannot read trace {}: {e}", path.display()),
                )
            })?;
            let points = parse_trace(&text).map_err(|(line, message)| ConfigError {
                file: path.clone(),
                line,
                column: 1,
                field: "(trace)".into(),
                message,
            })?;
            Ok(Background::Trace(points))
        }
        other => Err(at(
            b.model.span(),
            format!("unknown background model `{other}`; expected: markov, trace"),
        )),
    }
}

/// Testbed entry over catalogue entry over catalogue defaults.
fn merge(
    s: &SiteFile,
    base: Option<&SiteFile>,
    d: &SiteDefaults,
) -> Result<SiteConfig, (&'static str, String)> {
    macro_rules! pick {
        ($f:ident) => {
            s.$f.clone().or_else(|| base.and_then(|b| b.$f.clone()))
        };
    }
    let cpus = pick!(cpus)
        .map(|c| *c.get_ref())
        .ok_or(("cpus", "expected cpus for a new site".to_string()))?;
    let disk = pick!(disk).ok_or(("disk", "expected disk for a new site".to_string()))?;
    let storage = pick!(storage).unwrap_or(false);
    let inf = Rate(f64::INFINITY);
    Ok(SiteConfig {
        info: SiteInfo {
            name: s.name.get_ref().clone(),
            cpus,
            disk: disk.0,
            speed: pick!(speed).or(d.speed).map_or(1.0, |p| p.0),
            overhead: pick!(overhead).or(d.overhead).map_or(0.0, |o| o.0),
        },
        storage,
        bandwidth: pick!(bandwidth).or(d.bandwidth).unwrap_or(inf).0,
        stream_cap: pick!(stream_cap).or(d.stream_cap).unwrap_or(inf).0,
        max_connections: pick!(max_connections)
            .map(|m| *m.get_ref())
            .or(d.max_connections)
            .unwrap_or(64),
        latency: pick!(latency).or(d.latency).map_or(0.0, |l| l.0),
        faults: SiteFaults {
            corrupt_responses: FaultSpec {
                first: s.corrupt_responses.unwrap_or(0),
                // Checked by the caller, which has the value's span.
                probability: s.corrupt_probability.as_ref().map_or(0.0, |p| *p.get_ref()),
            },
        },
        // Validated by the caller, which knows the file it was written in.
        background: None,
    })
}
