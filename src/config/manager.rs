//! The manager settings of a testbed: the `[manager]` table (DAGMan's MAXPRE
//! and retries, the papers' prescript interval, MonitQueue, per-job
//! overheads), the strategy and eviction policy by name, the replica policy.

use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use super::source::Source;
use super::{ConfigError, Overrides, Seconds, TestbedFile};
use crate::core::ManagerSettings;
use crate::policy;

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct ManagerFile {
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
    cleanup: Option<bool>,
    reproduce_lost: Option<bool>,
}

/// The site selector and eviction policy by name, checked against the
/// resolver (`--strategy` overrides the testbed's).
pub(super) fn policies<W>(
    tb: &TestbedFile<W>,
    src: &Source,
    overrides: &Overrides,
) -> Result<(String, String), ConfigError> {
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
    Ok((strategy, eviction))
}

/// The manager's settings; a strategy that implies a replica policy
/// (RandomCaching) decides it.
pub(super) fn settings<W>(
    tb: &TestbedFile<W>,
    src: &Source,
    strategy: &str,
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
        cleanup: m.cleanup.unwrap_or(defaults.cleanup),
        reproduce_lost: m.reproduce_lost.unwrap_or(defaults.reproduce_lost),
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
    if let Ok(selector) = policy::site_selector(strategy, 0)
        && let Some(p) = selector.replica_policy()
    {
        manager.replica_policy = p;
    }
    Ok(manager)
}
