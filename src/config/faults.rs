//! The testbed's `[[fault]]` table: faults on purpose (see
//! [`crate::core::faults`]), each checked where it is written.
//!
//! ```toml
//! [[fault]]
//! kind = "crash"            # the site's queue, running jobs and transfers are lost
//! site = "grid3-02"
//! at = 600                  # nominal s
//! recover = 1200            # optional: back up then
//! pool = "lost"             # or "kept" (default): its files survive the crash
//!
//! [[fault]]
//! kind = "reset"            # or "corrupt", "stall": per response of a file server
//! site = "submit-host"      # optional: every site when absent
//! probability = 0.05        # each response, seeded
//! first = 0                 # and the first n responses
//! seconds = 30              # stall only: how long
//!
//! [[fault]]
//! kind = "exit"             # a program run (a job, or a clustered job's member)
//! site = "grid3-01"         # optional: every site when absent
//! first = 1                 # exits `status` instead of 0: the first n runs,
//! probability = 0.01        # and each later one, seeded
//! status = 3                # default 1
//!
//! [[fault]]
//! kind = "slow"             # jobs starting in [from, until) run at factor × speed
//! site = "grid3-01"
//! from = 100
//! until = 500
//! factor = 0.5
//!
//! [[fault]]
//! kind = "shrink"           # the disk shrinks at `at`
//! site = "grid3-03"
//! at = 300
//! disk = "5 GB"
//! ```

use serde::Deserialize;
use toml::Spanned;

use super::source::Source;
use super::{ConfigError, Seconds, SiteConfig};
use crate::core::faults::{Fault, FaultPlan, FaultSpec};
use crate::units::Size;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FaultFile {
    kind: Spanned<String>,
    site: Option<Spanned<String>>,
    at: Option<Seconds>,
    recover: Option<Spanned<Seconds>>,
    pool: Option<Spanned<String>>,
    probability: Option<Spanned<f64>>,
    first: Option<u32>,
    seconds: Option<Seconds>,
    from: Option<Seconds>,
    until: Option<Spanned<Seconds>>,
    factor: Option<Spanned<f64>>,
    disk: Option<Size>,
    status: Option<i32>,
}

const KINDS: &str = "crash, reset, corrupt, stall, exit, slow, shrink";

/// Fields each kind takes, beyond `kind` and `site`.
fn allowed(kind: &str) -> &'static [&'static str] {
    match kind {
        "crash" => &["at", "recover", "pool"],
        "reset" | "corrupt" => &["probability", "first"],
        "stall" => &["probability", "first", "seconds"],
        "exit" => &["probability", "first", "status"],
        "slow" => &["from", "until", "factor"],
        "shrink" => &["at", "disk"],
        _ => &[],
    }
}

/// The timed faults of the testbed, and each site's per-response faults
/// written into `sites`.
pub(super) fn resolve(
    entries: &[Spanned<FaultFile>],
    sites: &mut [SiteConfig],
    src: &Source,
) -> Result<FaultPlan, ConfigError> {
    let mut timed = Vec::new();
    for entry in entries {
        let f = entry.get_ref();
        let span = Some(entry.span());
        let err = |msg: String| src.error(span.clone(), Some("fault".into()), msg);
        let kind = f.kind.get_ref().as_str();
        if allowed(kind).is_empty() {
            let msg = format!("unknown fault kind `{kind}`; expected one of {KINDS}");
            return Err(src.error(Some(f.kind.span()), None, msg));
        }
        let given = [
            ("at", f.at.is_some()),
            ("recover", f.recover.is_some()),
            ("pool", f.pool.is_some()),
            ("probability", f.probability.is_some()),
            ("first", f.first.is_some()),
            ("seconds", f.seconds.is_some()),
            ("from", f.from.is_some()),
            ("until", f.until.is_some()),
            ("factor", f.factor.is_some()),
            ("disk", f.disk.is_some()),
            ("status", f.status.is_some()),
        ];
        if let Some((field, _)) = given
            .iter()
            .find(|(name, set)| *set && !allowed(kind).contains(name))
        {
            let msg = format!(
                "a `{kind}` fault takes no `{field}`; expected {}",
                allowed(kind).join(", ")
            );
            return Err(err(msg));
        }
        let site = match &f.site {
            Some(name) => Some(
                sites
                    .iter()
                    .position(|s| &s.info.name == name.get_ref())
                    .ok_or_else(|| {
                        let valid: Vec<&str> = sites.iter().map(|s| s.info.name.as_str()).collect();
                        let msg = format!(
                            "unknown site `{}`; expected one of the testbed's sites: {}",
                            name.get_ref(),
                            valid.join(", ")
                        );
                        src.error(Some(name.span()), None, msg)
                    })?,
            ),
            None => None,
        };
        let need_site = || site.ok_or_else(|| err(format!("a `{kind}` fault needs a `site`")));
        let need = |field: &str, v: Option<f64>| {
            v.ok_or_else(|| err(format!("a `{kind}` fault needs `{field}`")))
        };
        match kind {
            "crash" => {
                let site = need_site()?;
                let at = need("at", f.at.map(|s| s.0))?;
                let pool_lost = match f.pool.as_ref().map(|p| p.get_ref().as_str()) {
                    None | Some("kept") => false,
                    Some("lost") => true,
                    Some(other) => {
                        let msg = format!("unknown pool `{other}`; expected lost or kept");
                        return Err(src.error(f.pool.as_ref().map(Spanned::span), None, msg));
                    }
                };
                timed.push((at, site, Fault::Crash { pool_lost }));
                if let Some(r) = &f.recover {
                    if r.get_ref().0 <= at {
                        let msg = format!("expected recover > at ({at} s)");
                        return Err(src.error(Some(r.span()), None, msg));
                    }
                    timed.push((r.get_ref().0, site, Fault::Recover));
                }
            }
            "slow" => {
                let site = need_site()?;
                let from = need("from", f.from.map(|s| s.0))?;
                let factor = f
                    .factor
                    .as_ref()
                    .ok_or_else(|| err("a `slow` fault needs `factor`".into()))?;
                if !(factor.get_ref().is_finite() && *factor.get_ref() > 0.0) {
                    let msg = "expected factor > 0 (0.5: half speed)".to_string();
                    return Err(src.error(Some(factor.span()), None, msg));
                }
                timed.push((
                    from,
                    site,
                    Fault::Slow {
                        factor: *factor.get_ref(),
                    },
                ));
                if let Some(u) = &f.until {
                    if u.get_ref().0 <= from {
                        let msg = format!("expected until > from ({from} s)");
                        return Err(src.error(Some(u.span()), None, msg));
                    }
                    timed.push((u.get_ref().0, site, Fault::SlowEnd));
                }
            }
            "shrink" => {
                let site = need_site()?;
                let at = need("at", f.at.map(|s| s.0))?;
                let disk = f
                    .disk
                    .ok_or_else(|| err("a `shrink` fault needs `disk`".into()))?;
                timed.push((at, site, Fault::Shrink { disk: disk.0 }));
            }
            _ => {
                let probability = match &f.probability {
                    Some(p) if !(0.0..=1.0).contains(p.get_ref()) => {
                        let msg = "expected probability in [0, 1]".to_string();
                        return Err(src.error(Some(p.span()), None, msg));
                    }
                    Some(p) => *p.get_ref(),
                    None => 0.0,
                };
                let spec = FaultSpec {
                    first: f.first.unwrap_or(0),
                    probability,
                };
                if spec == FaultSpec::default() {
                    return Err(err(format!(
                        "a `{kind}` fault needs `probability` > 0 or `first` > 0"
                    )));
                }
                let seconds = if kind == "stall" {
                    need("seconds", f.seconds.map(|s| s.0))?
                } else {
                    0.0
                };
                let targets: Vec<usize> = match site {
                    Some(s) => vec![s],
                    None => (0..sites.len()).collect(),
                };
                for s in targets {
                    let faults = &mut sites[s].faults;
                    match kind {
                        "reset" => faults.resets = spec,
                        "corrupt" => faults.corrupt_responses = spec,
                        "exit" => {
                            faults.exits = spec;
                            faults.exit_status = f.status.unwrap_or(1);
                        }
                        _ => {
                            faults.stalls = spec;
                            faults.stall_seconds = seconds;
                        }
                    }
                }
            }
        }
    }
    Ok(FaultPlan::new(timed))
}
