//! What `gridbed resume` may take from an interrupted run: the jobs that
//! ended and the site each ended at, matched by name to the scenario as it
//! is now, and the testbed edits between the two runs it can honour.
//!
//! The control database names sites and jobs by row; the scenario loaded
//! again names them by position, which an edit of the testbed shifts (a site
//! removed moves every later one). So nothing here is matched by position.

use std::collections::HashMap;

use crate::config::{Scenario, SiteConfig};
use crate::core::SiteId;
use crate::db::Interrupted;

/// The `run` key under which a run records how a site was described
/// (`site.<name>`, its configuration as JSON): a resume names what changed.
pub(super) fn site_key(name: &str) -> String {
    format!("site.{name}")
}

/// The `run` keys describing `sites` ([`site_key`]).
pub(super) fn site_keys(sites: &[SiteConfig]) -> Vec<(String, String)> {
    sites
        .iter()
        .map(|s| {
            let json = serde_json::to_string(s).unwrap_or_default();
            (site_key(&s.info.name), json)
        })
        .collect()
}

/// Per job of `now`'s workflow, the site (of `now`) its last attempt ended
/// well at in the interrupted run `was`, jobs and sites matched by name.
///
/// Refused (the reason): a site where a job ended is gone from the sites
/// (removed or renamed: the outputs it holds and its records would belong
/// to no site, or to another), or ran jobs then and runs none now (a
/// storage site). Every other edit of such a site is honoured, and said:
/// CPUs, speed, overhead, bandwidths, latency, load and faults govern only
/// what runs from now on, and a smaller disk keeps the outputs that fit
/// (the rest are made again where a job needs them).
pub(super) fn ended_at(was: &Interrupted, now: &Scenario) -> Result<Vec<Option<SiteId>>, String> {
    let sites: HashMap<&str, SiteId> = (now.sites.iter().enumerate())
        .map(|(i, s)| (s.info.name.as_str(), i))
        .collect();
    let jobs: HashMap<&str, usize> = (now.workflow.jobs.iter().enumerate())
        .map(|(i, j)| (j.name.as_str(), i))
        .collect();
    let mut ended = vec![None; now.workflow.jobs.len()];
    // Per site row of the interrupted run: the jobs that ended there.
    let mut ran: std::collections::BTreeMap<i64, usize> = Default::default();
    let mut gone_jobs = 0;
    for ((_, job), site) in was.jobs.iter().zip(&was.ended_at) {
        let Some(row) = *site else { continue };
        *ran.entry(row).or_default() += 1;
        match (jobs.get(job.as_str()), was.site_name(row)) {
            (Some(&j), Some(name)) => ended[j] = sites.get(name).copied(),
            (None, _) => gone_jobs += 1,
            (Some(_), None) => {}
        }
    }
    let mut refused = Vec::new();
    for (&row, &count) in &ran {
        let Some((_, name, cpus)) = was.sites.iter().find(|(r, ..)| *r == row) else {
            refused.push(format!("{count} jobs ended at site row {row}, which it does not name"));
            continue;
        };
        match sites.get(name.as_str()).map(|&i| &now.sites[i]) {
            None => refused.push(format!(
                "site {name}, where {count} jobs ended, is not among the sites now (removed or renamed)"
            )),
            Some(s) if *cpus > 0 && s.info.cpus == 0 => refused.push(format!(
                "site {name}, where {count} jobs ended, runs no jobs now (a storage site)"
            )),
            Some(s) => {
                let changed = changed_fields(was.run.get(&site_key(name)), s);
                if !changed.is_empty() {
                    eprintln!(
                        "note: site {name}, where {count} jobs ended, changed ({}): resume honours it, the jobs that ended stay ended and their outputs stay as far as its disk holds them",
                        changed.join(", ")
                    );
                }
            }
        }
    }
    if !refused.is_empty() {
        return Err(refused.join("; "));
    }
    // A sub-DAG read as the run goes has no nodes until it is read: unless
    // its node ended, its entry runs again and reads it, so that its nodes
    // run (again: the run cannot tell them from the ones read then).
    let deferred = (now.source.as_ref().and_then(|s| s.dagman.as_ref()))
        .map(|d| d.subdags.iter().filter(|d| d.deferred).collect::<Vec<_>>())
        .unwrap_or_default();
    let mut again = 0;
    for d in deferred {
        if let (Some(&entry), Some(&node)) = (jobs.get(d.entry.as_str()), jobs.get(d.node.as_str()))
            && ended[node].is_none()
            && ended[entry].take().is_some()
        {
            again += 1;
        }
    }
    if again > 0 {
        eprintln!(
            "note: {again} sub-DAGs read as the run went had not ended: each is read again, and its nodes run again"
        );
    }
    if gone_jobs > 0 {
        eprintln!(
            "note: {gone_jobs} jobs that ended are not in the workflow now (or are of a sub-DAG read as the run goes): their records stay in the database"
        );
    }
    Ok(ended)
}

/// The fields of site `now` that differ from how the run recorded it
/// (`recorded`: its JSON, [`site_keys`]); none where it was not recorded.
fn changed_fields(recorded: Option<&String>, now: &SiteConfig) -> Vec<String> {
    let Some(Ok(serde_json::Value::Object(was))) =
        recorded.map(|r| serde_json::from_str::<serde_json::Value>(r))
    else {
        return Vec::new();
    };
    let Ok(serde_json::Value::Object(now)) = serde_json::to_value(now) else {
        return Vec::new();
    };
    let mut changed = Vec::new();
    for (k, v) in &now {
        match (v, was.get(k)) {
            (serde_json::Value::Object(inner), Some(serde_json::Value::Object(old))) => {
                for (ik, iv) in inner {
                    if old.get(ik) != Some(iv) {
                        changed.push(ik.clone());
                    }
                }
            }
            (v, old) if old != Some(v) => changed.push(k.clone()),
            _ => {}
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_site_names_the_fields_that_changed() {
        let path = std::path::Path::new("testbeds/quickstart.toml");
        let sc = crate::config::load(path, &Default::default()).unwrap();
        let s = sc.sites[1].clone();
        let recorded = serde_json::to_string(&s).unwrap();
        assert!(changed_fields(Some(&recorded), &s).is_empty());
        let mut t = s.clone();
        t.info.disk += 1;
        t.latency += 0.5;
        assert_eq!(changed_fields(Some(&recorded), &t), ["disk", "latency"]);
        assert!(changed_fields(None, &t).is_empty());
    }
}
