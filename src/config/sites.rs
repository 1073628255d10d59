//! The sites of a testbed: the site catalogue (`sites.toml`: seed 000's
//! Grid3 table and defaults) and the testbed's `[[site]]` entries merged over
//! it, background load and faults included, each checked where it is written.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::source::Source;
use super::{ConfigError, Daemon, Positive, Seconds, SiteConfig};
use crate::core::SiteInfo;
use crate::core::background::{Background, parse_trace};
use crate::core::faults::{FaultSpec, SiteFaults};
use crate::core::topology::{Link, Topology};
use crate::units::{Rate, Size};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BackgroundFile {
    model: Spanned<String>,
    mean_busy: Option<Spanned<f64>>,
    period: Option<Positive>,
    file: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SiteFile {
    name: Spanned<String>,
    #[serde(default)]
    pub(super) new: bool,
    storage: Option<bool>,
    cpus: Option<Spanned<usize>>,
    disk: Option<Size>,
    bandwidth: Option<Rate>,
    bandwidth_in: Option<Rate>,
    bandwidth_out: Option<Rate>,
    stream_cap: Option<Rate>,
    max_connections: Option<Spanned<usize>>,
    latency: Option<Seconds>,
    speed: Option<Positive>,
    overhead: Option<Seconds>,
    corrupt_responses: Option<u32>,
    corrupt_probability: Option<Spanned<f64>>,
    background: Option<Spanned<BackgroundFile>>,
    /// A `gridbed site` daemon runs this site: its control API.
    url: Option<Spanned<String>>,
    /// The daemon's bearer token, in this file (relative to the testbed).
    token_file: Option<Spanned<String>>,
    /// The shared links its traffic crosses toward the core, nearest first.
    path: Option<Spanned<Vec<Spanned<String>>>>,
}

/// A `[[link]]`: a named link shared by the sites whose path crosses it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LinkFile {
    name: Spanned<String>,
    bandwidth: Rate,
    latency: Option<Seconds>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct SiteDefaults {
    bandwidth: Option<Rate>,
    bandwidth_in: Option<Rate>,
    bandwidth_out: Option<Rate>,
    stream_cap: Option<Rate>,
    max_connections: Option<usize>,
    latency: Option<Seconds>,
    speed: Option<Positive>,
    overhead: Option<Seconds>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CatalogFile {
    #[serde(default)]
    defaults: SiteDefaults,
    #[serde(default)]
    site: Vec<Spanned<SiteFile>>,
    #[serde(default)]
    link: Vec<Spanned<LinkFile>>,
}

/// A site catalogue, read and checked.
pub(super) struct Catalogue {
    path: PathBuf,
    src: Source,
    file: CatalogFile,
    names: Vec<String>,
}

impl Catalogue {
    /// Reads the catalogue at `catalog_path`: every site named once, each
    /// with its CPUs and disk.
    pub(super) fn read(catalog_path: &Path) -> Result<Catalogue, ConfigError> {
        Catalogue::of(catalog_path, Source::read(catalog_path)?)
    }

    /// No sites: what a testbed that defines every site itself (`new =
    /// true`) needs when no catalogue is beside it.
    pub(super) fn empty(catalog_path: &Path) -> Result<Catalogue, ConfigError> {
        Catalogue::of(catalog_path, Source::of(catalog_path, ""))
    }

    fn of(catalog_path: &Path, catalog_src: Source) -> Result<Catalogue, ConfigError> {
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
            if let Some(span) = s.url.as_ref().map(Spanned::span) {
                let msg = "a site daemon's `url` belongs in the testbed, not the catalogue".into();
                return Err(catalog_src.error(Some(span), None, msg));
            }
            names.push(s.name.get_ref().clone());
        }
        Ok(Catalogue {
            path: catalog_path.to_path_buf(),
            src: catalog_src,
            file: catalog,
            names,
        })
    }
}

/// The testbed's sites (`entries`, written in `src`, whose folder is `base`)
/// merged over the catalogue; at least one of them runs jobs.
pub(super) fn resolve(
    entries: &[Spanned<SiteFile>],
    src: &Source,
    base: &Path,
    catalogue: &Catalogue,
) -> Result<Vec<SiteConfig>, ConfigError> {
    let (catalog, catalog_src, catalog_path, names) = (
        &catalogue.file,
        &catalogue.src,
        &catalogue.path,
        &catalogue.names,
    );
    let mut sites: Vec<SiteConfig> = Vec::new();
    let mut site_spans = Vec::new();
    for entry in entries {
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
                    summarize(names)
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
        site.daemon = daemon(s, src, base)?;
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
    Ok(sites)
}

/// The site daemon a testbed's site names (`url`, `token_file`), checked:
/// an http(s) URL with a host, a token file that reads to one line.
fn daemon(s: &SiteFile, src: &Source, base: &Path) -> Result<Option<Daemon>, ConfigError> {
    let Some(url) = &s.url else {
        if let Some(t) = &s.token_file {
            let msg = "`token_file` is for a site daemon: give its `url` too".to_string();
            return Err(src.error(Some(t.span()), None, msg));
        }
        return Ok(None);
    };
    let parsed = reqwest::Url::parse(url.get_ref());
    let ok = parsed
        .as_ref()
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
    if !ok {
        let msg = format!(
            "expected the site daemon's URL, `http://host:port` (as `gridbed site` prints it), found `{}`",
            url.get_ref()
        );
        return Err(src.error(Some(url.span()), None, msg));
    }
    let token = s
        .token_file
        .as_ref()
        .map(|t| {
            super::read_token(&base.join(t.get_ref()))
                .map_err(|msg| src.error(Some(t.span()), None, msg))
        })
        .transpose()?;
    Ok(Some(Daemon {
        url: url.get_ref().trim_end_matches('/').to_string(),
        token,
        kernel: Default::default(),
    }))
}

/// The index of the origin site named by `origin`.
pub(super) fn origin(
    sites: &[SiteConfig],
    origin: &Spanned<String>,
    src: &Source,
) -> Result<usize, ConfigError> {
    sites
        .iter()
        .position(|s| &s.info.name == origin.get_ref())
        .ok_or_else(|| {
            let valid: Vec<String> = sites.iter().map(|s| s.info.name.clone()).collect();
            let msg = format!(
                "unknown site `{}`; expected one of the testbed's sites: {}",
                origin.get_ref(),
                valid.join(", ")
            );
            src.error(Some(origin.span()), None, msg)
        })
}

/// `sites.toml` beside the testbed's folder (the repository root for
/// `testbeds/x.toml`), else in the current directory.
pub(super) fn default_catalog(base: &Path) -> PathBuf {
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
pub(super) fn background(
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
    // Each direction: this entry's own word for it, then its `bandwidth`,
    // then the catalogue entry's, then the defaults'.
    let direction = |own: Option<Rate>, base_own: Option<Rate>, default: Option<Rate>| {
        own.or(s.bandwidth)
            .or(base_own)
            .or(base.and_then(|b| b.bandwidth))
            .or(default)
            .or(d.bandwidth)
            .unwrap_or(inf)
            .0
    };
    let bandwidth_out = direction(
        s.bandwidth_out,
        base.and_then(|b| b.bandwidth_out),
        d.bandwidth_out,
    );
    let bandwidth_in = direction(
        s.bandwidth_in,
        base.and_then(|b| b.bandwidth_in),
        d.bandwidth_in,
    );
    Ok(SiteConfig {
        info: SiteInfo {
            name: s.name.get_ref().clone(),
            cpus,
            disk: disk.0,
            speed: pick!(speed).or(d.speed).map_or(1.0, |p| p.0),
            overhead: pick!(overhead).or(d.overhead).map_or(0.0, |o| o.0),
        },
        storage,
        bandwidth_out,
        bandwidth_in,
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
            // Set by the testbed's [[fault]] table.
            ..Default::default()
        },
        // Validated by the caller, which knows the file it was written in.
        background: None,
        daemon: None,
    })
}

/// The shared links (the catalogue's, then the testbed's: a testbed link
/// replaces the catalogue's of its name) and each site's path over them,
/// checked to form a tree.
pub(super) fn topology(
    entries: &[Spanned<SiteFile>],
    links: &[Spanned<LinkFile>],
    src: &Source,
    catalogue: &Catalogue,
) -> Result<Topology, ConfigError> {
    let mut all: Vec<Link> = Vec::new();
    for (file, in_src) in [
        (catalogue.file.link.as_slice(), &catalogue.src),
        (links, src),
    ] {
        let mut named_here: Vec<&str> = Vec::new();
        for l in file.iter() {
            let l = l.get_ref();
            let name = l.name.get_ref();
            if name.trim().is_empty() {
                let msg = "a link's `name` is empty: expected a name that site paths \
                           can give (such as \"campus\")";
                return Err(in_src.error(Some(l.name.span()), None, msg.to_string()));
            }
            if named_here.contains(&name.as_str()) {
                let msg = format!("link `{name}` is named twice: each link may appear once");
                return Err(in_src.error(Some(l.name.span()), None, msg));
            }
            named_here.push(name);
            let link = Link {
                name: name.clone(),
                bandwidth: l.bandwidth.0,
                latency: l.latency.map_or(0.0, |s| s.0),
            };
            match all.iter_mut().find(|x| &x.name == name) {
                Some(x) => *x = link,
                None => all.push(link),
            }
        }
    }
    let mut paths = Vec::with_capacity(entries.len());
    for entry in entries {
        let s = entry.get_ref();
        let base = catalogue
            .file
            .site
            .iter()
            .map(Spanned::get_ref)
            .find(|c| c.name.get_ref() == s.name.get_ref());
        let written = match (&s.path, base.and_then(|b| b.path.as_ref())) {
            (Some(p), _) => Some((p, src)),
            (None, Some(p)) => Some((p, &catalogue.src)),
            (None, None) => None,
        };
        let mut path = Vec::new();
        if let Some((p, in_src)) = written {
            for name in p.get_ref() {
                let Some(i) = all.iter().position(|l| &l.name == name.get_ref()) else {
                    let known: Vec<String> = all.iter().map(|l| l.name.clone()).collect();
                    let msg = format!(
                        "unknown link `{}` in the path of site `{}`; expected a [[link]] name{}",
                        name.get_ref(),
                        s.name.get_ref(),
                        if known.is_empty() {
                            " (none is defined)".to_string()
                        } else {
                            format!(": {}", summarize(&known))
                        }
                    );
                    return Err(in_src.error(Some(name.span()), None, msg));
                };
                path.push(i);
            }
        }
        paths.push(path);
    }
    let topology = Topology {
        links: all,
        paths,
        protocol_efficiency: 1.0,
    };
    topology.check().map_err(|e| {
        let s = entries[e.site].get_ref();
        let span = s.path.as_ref().map_or(s.name.span(), Spanned::span);
        src.error(
            Some(span),
            Some(format!("site `{}`.path", s.name.get_ref())),
            e.message,
        )
    })?;
    Ok(topology)
}
