//! A site selector answered by an external program (the `select`
//! decision): the job with its inputs' sizes and holders, every site's
//! free slots and load, the time; it answers a site or to hold the job.

use std::sync::Arc;

use rand::RngCore;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::Program;
use crate::core::{JobId, SiteId};
use crate::policy::{Context, GridView, SiteSelector};

/// `external[cmd=…]` as a site selector.
pub struct ExternalSelector {
    program: Arc<Program>,
    rng: ChaCha8Rng,
}

impl ExternalSelector {
    /// The selector of an `external[cmd=…, timeout=…]` strategy.
    pub(in crate::policy) fn build(c: &Context<'_>) -> Result<Box<dyn SiteSelector>, String> {
        Ok(Box::new(ExternalSelector {
            program: super::program_of(c, &["select"])?,
            rng: c.rng(),
        }))
    }
}

impl SiteSelector for ExternalSelector {
    /// A hold answered here (a caller that must have a site) takes the
    /// first eligible site.
    fn select(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
        self.place(job, view, eligible).unwrap_or(eligible[0])
    }

    fn place(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> Option<SiteId> {
        let wf = view.workflow;
        let j = &wf.jobs[job];
        let file = |f: usize| {
            let file = &wf.files[f];
            json!({"id": f, "name": file.name, "size": file.size})
        };
        let inputs: Vec<Value> = j
            .inputs
            .iter()
            .map(|&f| {
                let mut v = file(f);
                v["holders"] = json!(view.rls.holders(f));
                v
            })
            .collect();
        let outputs: Vec<Value> = j.outputs.iter().map(|&f| file(f)).collect();
        let sites: Vec<Value> = (0..view.sites.len())
            .map(|s| {
                let free = view.sites[s].cpus.saturating_sub(view.claimed[s]);
                json!({"id": s, "free": free, "claimed": view.claimed[s], "active": view.active[s]})
            })
            .collect();
        let request = json!({
            "type": "select",
            "time": view.now,
            "job": {"id": job, "name": j.name, "runtime": j.runtime, "inputs": inputs, "outputs": outputs},
            "eligible": eligible,
            "sites": sites,
            "draw": self.rng.next_u32(),
        });
        let what = || format!("select for job `{}`", j.name);
        let answer = self.program.ask(what, request)?;
        if answer.get("hold").and_then(Value::as_bool) == Some(true) {
            return None;
        }
        let site = match answer.get("site") {
            Some(Value::Number(n)) => n.as_u64().map(|s| s as usize),
            Some(Value::String(name)) => view.sites.iter().position(|s| &s.name == name),
            _ => None,
        };
        match site.filter(|s| eligible.contains(s)) {
            Some(s) => Some(s),
            None => {
                let names: Vec<String> = eligible
                    .iter()
                    .map(|&s| format!("{s} ({})", view.sites[s].name))
                    .collect();
                let said = answer
                    .get("site")
                    .map_or("no `site`".into(), Value::to_string);
                self.program.refuse(
                    what(),
                    format!(
                        "answered site {said}, which cannot run it: expected {{\"site\": ID or NAME}} with one of {}, or {{\"hold\": true}}",
                        names.join(", ")
                    ),
                );
                None
            }
        }
    }
}
