//! `[[submission]]`: the workflow split into workflows that users submit
//! from their own submit machines at their own times (seed 003 §9's two
//! submit machines, §5.2's new workflows). Each takes whole DAGs, in order;
//! without any, the workflow is one submission from the testbed's `origin`
//! at time 0.

use serde::Deserialize;
use toml::Spanned;

use super::source::Source;
use super::{ConfigError, Positive, Seconds, SiteConfig};
use crate::core::Workflow;
use crate::core::submissions::{Submission, Submissions};

/// One `[[submission]]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SubmissionFile {
    /// Its name (default `w1`, `w2`, …).
    name: Option<String>,
    /// Its submit machine (default: the testbed's `origin`).
    origin: Option<Spanned<String>>,
    /// When it is submitted (s, default 0).
    arrival: Option<Seconds>,
    /// How many DAGs it takes (default: every DAG left; only the last may
    /// leave it out).
    dags: Option<Spanned<usize>>,
    /// Its fair-share weight (default 1).
    share: Option<Positive>,
}

/// The scenario's submissions; `origin` is the testbed's.
pub(super) fn resolve(
    tables: &[Spanned<SubmissionFile>],
    wf: &Workflow,
    sites: &[SiteConfig],
    origin: usize,
    src: &Source,
) -> Result<Submissions, ConfigError> {
    if tables.is_empty() {
        return Ok(Submissions::single(wf.jobs.len(), origin));
    }
    let mut list = Vec::new();
    let mut dags = Vec::new();
    for (i, t) in tables.iter().enumerate() {
        let field = |f: &str| Some(format!("submission[{i}].{f}"));
        let sub = t.get_ref();
        let origin = match &sub.origin {
            Some(name) => super::sites::origin(sites, name, src)?,
            None => origin,
        };
        let last = i + 1 == tables.len();
        let count = match &sub.dags {
            Some(n) if *n.get_ref() == 0 => {
                return Err(src.error(
                    Some(n.span()),
                    field("dags"),
                    "expected at least 1 DAG".into(),
                ));
            }
            Some(n) => Some(*n.get_ref()),
            None if last => None,
            None => {
                return Err(src.error(
                    Some(t.span()),
                    field("dags"),
                    "expected `dags = n`: only the last submission takes the DAGs left".into(),
                ));
            }
        };
        dags.push(count);
        list.push(Submission {
            name: sub.name.clone().unwrap_or_else(|| format!("w{}", i + 1)),
            origin,
            arrival: sub.arrival.as_ref().map_or(0.0, |s| s.0),
            share: sub.share.as_ref().map_or(1.0, |s| s.0),
        });
    }
    Submissions::by_dags(wf, list, &dags).map_err(|(i, msg)| {
        let span = tables[i]
            .get_ref()
            .dags
            .as_ref()
            .map_or(tables[i].span(), |d| d.span());
        src.error(Some(span), Some(format!("submission[{i}].dags")), msg)
    })
}
