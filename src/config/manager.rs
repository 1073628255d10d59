//! The manager settings of a testbed: the `[manager]` table (DAGMan's MAXPRE
//! and retries, the papers' prescript interval, MonitQueue, per-job
//! overheads), the strategy and eviction policy by name, the replica policy.

use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use super::source::Source;
use super::{ConfigError, Overrides, Seconds, TestbedFile};
use crate::core::manager::MAX_RETRIES;
use crate::core::wms::{Latency, WmsSettings};
use crate::core::{ManagerSettings, Registration};
use crate::policy;
use crate::units::Size;

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct ManagerFile {
    maxpre: Option<usize>,
    prescript_interval: Option<Seconds>,
    prescript_streams: Option<Spanned<usize>>,
    max_retries: Option<Spanned<u32>>,
    transfer_retries: Option<Spanned<u32>>,
    transfer_backoff: Option<Seconds>,
    replan_backoff: Option<Seconds>,
    max_replans: Option<Spanned<u32>>,
    monit_interval: Option<Spanned<Seconds>>,
    max_idle: Option<Spanned<Seconds>>,
    release_overhead: Option<LatencyFile>,
    submit_overhead: Option<LatencyFile>,
    postscript_overhead: Option<LatencyFile>,
    script_time: Option<LatencyFile>,
    cleanup: Option<bool>,
    reproduce_lost: Option<bool>,
    /// When kept staged copies enter the catalogue: `arrival` or `postscript`.
    registration: Option<Registration>,
    /// `[manager.wms]`: the serial stages of an HTCondor pool (`core::wms`).
    wms: Option<WmsFile>,
    /// Seed 003 §6: an execute site's cache bound, checked after each job.
    cache_bound: Option<Spanned<Size>>,
    /// Seed 003 §6.2: k-replication's k.
    replicas: Option<usize>,
    /// Storage-aware release (`core::manager::room`), on by default.
    storage_aware: Option<bool>,
    /// `DAGMAN_SUBMIT_DEPTH_FIRST`.
    submit_depth_first: Option<bool>,
    /// Pegasus's stage-out of final outputs to the submit machine.
    stage_out: Option<bool>,
}

/// The site selector and eviction policy by name, checked against the
/// resolver (`--strategy` overrides the testbed's).
pub(super) fn policies<W>(
    tb: &TestbedFile<W>,
    src: &Source,
    overrides: &Overrides,
    registry: &policy::Registry,
) -> Result<(String, String), ConfigError> {
    let strategy = match &overrides.strategy {
        Some(s) => {
            registry.site_selector(s, 0).map_err(|e| ConfigError {
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
            registry
                .site_selector(s, 0)
                .map_err(|e| src.error(Some(tb.strategy.span()), None, e.to_string()))?;
            s.clone()
        }
    };
    let eviction = match &tb.eviction {
        Some(e) => {
            registry
                .eviction_policy(e.get_ref(), 0)
                .map_err(|err| src.error(Some(e.span()), None, err.to_string()))?;
            e.get_ref().clone()
        }
        None => "lru".to_string(),
    };
    Ok((strategy, eviction))
}

/// The manager's settings; a strategy that implies a replica policy
/// (RandomCaching) decides it.
pub(super) fn settings<W>(
    tb: &TestbedFile<W>,
    src: &Source,
    strategy: &str,
    registry: &policy::Registry,
) -> Result<ManagerSettings, ConfigError> {
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
    for count in [&m.max_retries, &m.transfer_retries, &m.max_replans]
        .into_iter()
        .flatten()
    {
        if *count.get_ref() > MAX_RETRIES {
            return Err(src.error(
                Some(count.span()),
                None,
                format!(
                    "expected at most {MAX_RETRIES} retries, found {}",
                    count.get_ref()
                ),
            ));
        }
    }
    let count =
        |c: &Option<Spanned<u32>>, default: u32| c.as_ref().map_or(default, |c| *c.get_ref());
    let mut manager = ManagerSettings {
        maxpre: m.maxpre.unwrap_or(defaults.maxpre),
        prescript_interval: m
            .prescript_interval
            .map_or(defaults.prescript_interval, |s| s.0),
        prescript_streams: m
            .prescript_streams
            .as_ref()
            .map_or(defaults.prescript_streams, |s| *s.get_ref()),
        max_retries: count(&m.max_retries, defaults.max_retries),
        transfer_retries: count(&m.transfer_retries, defaults.transfer_retries),
        transfer_backoff: m
            .transfer_backoff
            .map_or(defaults.transfer_backoff, |s| s.0),
        replan_backoff: m.replan_backoff.map_or(defaults.replan_backoff, |s| s.0),
        max_replans: count(&m.max_replans, defaults.max_replans),
        replica_policy: tb.replica_policy.unwrap_or(defaults.replica_policy),
        registration: m.registration.unwrap_or(defaults.registration),
        monit_interval: defaults.monit_interval,
        max_idle: defaults.max_idle,
        release_overhead: m.release_overhead.map_or(Latency::default(), |l| l.0),
        submit_overhead: m.submit_overhead.map_or(Latency::default(), |l| l.0),
        postscript_overhead: m.postscript_overhead.map_or(Latency::default(), |l| l.0),
        script_time: m.script_time.map_or(Latency::default(), |l| l.0),
        wms: m
            .wms
            .as_ref()
            .map_or(WmsSettings::default(), WmsFile::settings),
        cleanup: m.cleanup.unwrap_or(defaults.cleanup),
        reproduce_lost: m.reproduce_lost.unwrap_or(defaults.reproduce_lost),
        cache_bound: m.cache_bound.as_ref().map(|b| b.get_ref().0),
        replicas: m.replicas.unwrap_or(defaults.replicas),
        storage_aware: m.storage_aware.unwrap_or(defaults.storage_aware),
        submit_depth_first: m.submit_depth_first.unwrap_or(defaults.submit_depth_first),
        stage_out: m.stage_out.unwrap_or(defaults.stage_out),
    };
    if let Some(b) = &m.cache_bound {
        let eviction = tb.eviction.as_ref().map_or("lru", |e| e.get_ref().as_str());
        if let Err(e) = registry.cache_worth(eviction) {
            let msg = format!(
                "cache_bound ranks the cache by the eviction policy, which must be lru, lfu or worth: {e}"
            );
            return Err(src.error(Some(b.span()), None, msg));
        }
    }
    if m.replicas.is_some_and(|k| k > 0) && m.cache_bound.is_none() {
        let msg =
            "replicas (k-replication) acts when cache_bound deletes a file: set cache_bound too";
        return Err(src.error(None, Some("manager".into()), msg.into()));
    }
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
    if let Ok(selector) = registry.site_selector(strategy, 0)
        && let Some(p) = selector.replica_policy()
    {
        manager.replica_policy = p;
    }
    Ok(manager)
}

/// A per-job latency: seconds, or a distribution
/// `{ dist = "fixed" | "uniform" | "exponential" | "lognormal", … }`.
#[derive(Debug, Clone, Copy)]
pub(super) struct LatencyFile(pub(super) Latency);

impl<'de> Deserialize<'de> for LatencyFile {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v = toml::Value::deserialize(d)?;
        let latency = match v {
            toml::Value::Integer(i) => Latency::fixed(i as f64),
            toml::Value::Float(f) => Latency::fixed(f),
            toml::Value::Table(t) => {
                let num = |key: &str| -> Result<f64, D::Error> {
                    match t.get(key) {
                        Some(toml::Value::Integer(i)) => Ok(*i as f64),
                        Some(toml::Value::Float(f)) => Ok(*f),
                        Some(other) => Err(D::Error::custom(format!(
                            "`{key}`: expected seconds, found {}",
                            other.type_str()
                        ))),
                        None => Err(D::Error::custom(format!("missing `{key}`"))),
                    }
                };
                let dist = t.get("dist").and_then(|d| d.as_str()).ok_or_else(|| {
                    D::Error::custom(
                        "expected `dist = \"fixed\" | \"uniform\" | \"exponential\" | \"lognormal\"`",
                    )
                })?;
                let (latency, keys): (Latency, &[&str]) = match dist {
                    "fixed" => (Latency::fixed(num("value")?), &["value"]),
                    "uniform" => (
                        Latency::Uniform {
                            min: num("min")?,
                            max: num("max")?,
                        },
                        &["min", "max"],
                    ),
                    "exponential" => (Latency::Exponential { mean: num("mean")? }, &["mean"]),
                    "lognormal" => (
                        Latency::Lognormal {
                            mean: num("mean")?,
                            sd: num("sd")?,
                        },
                        &["mean", "sd"],
                    ),
                    other => {
                        return Err(D::Error::custom(format!(
                            "unknown dist `{other}`: expected fixed, uniform, exponential or lognormal"
                        )));
                    }
                };
                if let Some(k) = t
                    .keys()
                    .find(|k| *k != "dist" && !keys.contains(&k.as_str()))
                {
                    return Err(D::Error::custom(format!(
                        "unknown field `{k}` of a {dist} latency: expected {}",
                        keys.join(", ")
                    )));
                }
                latency
            }
            other => {
                return Err(D::Error::custom(format!(
                    "expected seconds or {{ dist = … }}, found {}",
                    other.type_str()
                )));
            }
        };
        latency.check().map_err(D::Error::custom)?;
        Ok(LatencyFile(latency))
    }
}

/// The `[manager.wms]` table: the serial stages of an HTCondor pool, each field
/// named after its knob. Unset fields take HTCondor's defaults
/// (`model = "htcondor"`) or none (`model = "ideal"`).
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct WmsFile {
    model: Option<WmsModel>,
    dagman_user_log_scan_interval: Option<Seconds>,
    dagman_max_submits_per_interval: Option<usize>,
    dagman_submit_delay: Option<Seconds>,
    negotiator_interval: Option<Seconds>,
    claim_worklife: Option<Seconds>,
    job_start_delay: Option<Seconds>,
    job_start_count: Option<std::num::NonZeroUsize>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
enum WmsModel {
    Htcondor,
    Ideal,
}

impl WmsFile {
    fn settings(&self) -> WmsSettings {
        let base = match self.model {
            Some(WmsModel::Ideal) => WmsSettings::default(),
            _ => WmsSettings::htcondor(),
        };
        WmsSettings {
            user_log_scan_interval: self
                .dagman_user_log_scan_interval
                .map_or(base.user_log_scan_interval, |s| s.0),
            max_submits_per_interval: self
                .dagman_max_submits_per_interval
                .unwrap_or(base.max_submits_per_interval),
            submit_delay: self.dagman_submit_delay.map_or(base.submit_delay, |s| s.0),
            negotiator_interval: self
                .negotiator_interval
                .map_or(base.negotiator_interval, |s| s.0),
            claim_worklife: self.claim_worklife.map_or(base.claim_worklife, |s| s.0),
            job_start_delay: self.job_start_delay.map_or(base.job_start_delay, |s| s.0),
            job_start_count: self
                .job_start_count
                .map_or(base.job_start_count, |n| n.get()),
            seed: base.seed,
            random_phase: base.random_phase,
        }
    }
}
