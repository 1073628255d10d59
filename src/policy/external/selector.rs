//! A site selector answered by an external program (the `select`
//! decision): the job with its inputs' sizes and holders, every site's
//! free slots and load, the time; it answers a site or to hold the job.
//!
//! A program whose handshake takes a `batch` is asked a round at a time:
//! the job offered now and those the manager would offer after it in the
//! same round ([`SiteSelector::place_ahead`]), answered in order as if
//! each were asked alone with the earlier placements' slots taken. An
//! answer is used only if its job comes up with the grid exactly as the
//! program assumed; otherwise the rest are dropped and asked again, so a
//! run is the same with or without batches.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use rand::RngCore;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use serde_json::{Map, Value};

use super::Program;
use crate::core::{JobId, SiteId};
use crate::policy::{Context, GridView, Offer, SiteSelector};

/// The offers a fresh batch starts with; it doubles while whole batches
/// are used, and falls back to twice what was used when one is dropped.
const FIRST_BATCH: usize = 8;

/// `external[cmd=…]` as a site selector.
pub struct ExternalSelector {
    program: Arc<Program>,
    /// The generator as far as answers were used (each took one draw).
    rng: ChaCha8Rng,
    /// Answers of the last batch not used yet, next first.
    forecast: VecDeque<Forecast>,
    /// The grid the last batch assumed, apart from the claims.
    assumed: Assumed,
    /// Offers to ask in the next batch.
    want: usize,
    /// The sites as the program was last told them, when it asks for
    /// changes only.
    told: Vec<SiteOut>,
    /// Offers sent in the last batch and how many of them were used.
    sent: usize,
    used: usize,
    /// Whether the last answer placed its job.
    placed: bool,
    /// Whether the last batch's first answer placed its job.
    first_placed: bool,
    /// Whether the last batch that began with a placement was dropped
    /// right after it: the round ends at a placement (a prescript
    /// interval), so offers ahead of a placement are wasted.
    placing_ends_round: bool,
    /// Decisions asked alone since then; every [`PROBE`]th looks ahead
    /// again, to see whether that still holds.
    alone: usize,
}

/// See [`ExternalSelector::alone`].
const PROBE: usize = 64;

/// An answer given ahead, with what it was given for.
struct Forecast {
    job: JobId,
    eligible: Vec<SiteId>,
    /// Per site: the claimed slots the program assumed.
    claimed: Vec<usize>,
    /// The catalogue's count of changes it assumed: more than the batch's
    /// when earlier placements registered their inputs (`plans_inputs`).
    changes: u64,
    answer: Option<SiteId>,
}

#[derive(Default)]
struct Assumed {
    time: f64,
    active: Vec<usize>,
    /// The catalogue (its address): the inputs' holders as sent, with the
    /// forecasts' counts of changes.
    rls: usize,
}

impl ExternalSelector {
    /// The selector of an `external[cmd=…, timeout=…]` strategy.
    pub(in crate::policy) fn build(c: &Context<'_>) -> Result<Box<dyn SiteSelector>, String> {
        Ok(Box::new(ExternalSelector {
            program: super::program_of(c, &["select"])?,
            rng: c.rng(),
            forecast: VecDeque::new(),
            assumed: Assumed::default(),
            want: FIRST_BATCH,
            told: Vec::new(),
            sent: 0,
            used: 0,
            placed: false,
            first_placed: false,
            placing_ends_round: false,
            alone: 0,
        }))
    }

    /// The next forecast, if it was made for `job` on the grid as it is.
    fn fits(&self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> bool {
        self.forecast.front().is_some_and(|f| {
            f.job == job
                && f.eligible == eligible
                && f.claimed == view.claimed
                && self.assumed.time.to_bits() == view.now.to_bits()
                && self.assumed.active == view.active
                && self.assumed.rls == std::ptr::from_ref(view.rls) as usize
                && f.changes == view.rls.changes()
        })
    }

    /// Asks for `job` and the offers `ahead` in one batch and keeps the
    /// answers after the first; returns the first.
    fn ask_batch(
        &mut self,
        job: JobId,
        view: &GridView<'_>,
        eligible: &[SiteId],
        ahead: &[Offer],
    ) -> Option<SiteId> {
        self.learn();
        self.forecast.clear();
        let offers: Vec<(JobId, &[SiteId])> = std::iter::once((job, eligible))
            .chain(ahead.iter().map(|o| (o.job, o.eligible.as_slice())))
            .collect();
        let mut draws = self.rng.clone();
        let request = Batch {
            kind: "select",
            time: view.now,
            plans_inputs: view.plans_inputs,
            sites: self.sites_out(view),
            offers: offers
                .iter()
                .map(|&(j, eligible)| OfferOut {
                    job: job_out(j, view),
                    eligible,
                    draw: draws.next_u32(),
                })
                .collect(),
        };
        let name = &view.workflow.job(job).name;
        let what = || match offers.len() {
            1 => format!("select for job `{name}`"),
            n => format!("select for job `{name}` and the {} after it", n - 1),
        };
        let answer = self.program.ask(what, &request)?;
        let answers = match answer.get("answers").and_then(Value::as_array) {
            Some(a) if a.len() == offers.len() => a,
            _ => {
                self.program.refuse(
                    what(),
                    format!(
                        "answered {}: expected {{\"answers\": [...]}} with one answer for each of the {} offers, in order",
                        super::program::shorten(&Value::Object(answer.clone())),
                        offers.len()
                    ),
                );
                return None;
            }
        };
        let mut claimed = view.claimed.to_vec();
        // Inputs earlier placements registered at their sites, and so the
        // changes each later offer's catalogue shows.
        let mut planned: HashSet<(usize, SiteId)> = HashSet::new();
        let mut changes = view.rls.changes();
        let mut first = None;
        for (k, (&(j, eligible), a)) in offers.iter().zip(answers).enumerate() {
            let empty = Map::new();
            let site = self.choice(j, view, eligible, a.as_object().unwrap_or(&empty))?;
            if k == 0 {
                first = site;
            } else {
                self.forecast.push_back(Forecast {
                    job: j,
                    eligible: eligible.to_vec(),
                    claimed: claimed.clone(),
                    changes,
                    answer: site,
                });
            }
            if let Some(s) = site {
                claimed[s] += 1;
                if view.plans_inputs {
                    for &f in &view.workflow.job(j).inputs {
                        if !view.rls.has(f, s) && planned.insert((f, s)) {
                            changes += 1;
                        }
                    }
                }
            }
        }
        self.assumed = Assumed {
            time: view.now,
            active: view.active.to_vec(),
            rls: std::ptr::from_ref(view.rls) as usize,
        };
        self.sent = offers.len();
        self.used = 0;
        self.first_placed = first.is_some();
        self.take_answer(first)
    }

    /// The sites a request lists: all of them, or those that changed
    /// since the last request when the program asked for changes only.
    fn sites_out(&mut self, view: &GridView<'_>) -> Vec<SiteOut> {
        let sites = (0..view.sites.len()).map(|s| SiteOut {
            id: s,
            free: view.sites[s].cpus.saturating_sub(view.claimed[s]),
            claimed: view.claimed[s],
            active: view.active[s],
        });
        if !self.program.site_changes() {
            return sites.collect();
        }
        let first = self.told.is_empty();
        self.told.resize(view.sites.len(), SiteOut::default());
        let mut changed = Vec::new();
        for (site, told) in sites.zip(&mut self.told) {
            if first || site != *told {
                changed.push(site);
                *told = site;
            }
        }
        changed
    }

    /// What the last batch showed, once: how many offers to send next,
    /// whether a placement ends the round.
    fn learn(&mut self) {
        if self.sent > 1 {
            self.want = if self.used == self.sent {
                2 * self.want
            } else {
                2 * self.used
            };
            if self.first_placed {
                self.placing_ends_round = self.used == 1;
            }
        }
        self.sent = 0;
    }

    /// Uses an answer: it took one draw.
    fn take_answer(&mut self, site: Option<SiteId>) -> Option<SiteId> {
        self.rng.next_u32();
        self.used += 1;
        self.placed = site.is_some();
        site
    }

    /// What `answer` chose for `job`: `Some(None)` holds it, `None` means
    /// it chose what cannot be (the run fails, said why).
    fn choice(
        &self,
        job: JobId,
        view: &GridView<'_>,
        eligible: &[SiteId],
        answer: &Map<String, Value>,
    ) -> Option<Option<SiteId>> {
        if answer.get("hold").and_then(Value::as_bool) == Some(true) {
            return Some(None);
        }
        let site = match answer.get("site") {
            Some(Value::Number(n)) => n.as_u64().map(|s| s as usize),
            Some(Value::String(name)) => view.sites.iter().position(|s| &s.name == name),
            _ => None,
        };
        if let Some(s) = site.filter(|s| eligible.contains(s)) {
            return Some(Some(s));
        }
        let names: Vec<String> = eligible
            .iter()
            .map(|&s| format!("{s} ({})", view.sites[s].name))
            .collect();
        let said = answer
            .get("site")
            .map_or("no `site`".into(), Value::to_string);
        self.program.refuse(
            format!("select for job `{}`", view.workflow.job(job).name),
            format!(
                "answered site {said}, which cannot run it: expected {{\"site\": ID or NAME}} with one of {}, or {{\"hold\": true}}",
                names.join(", ")
            ),
        );
        None
    }
}

impl SiteSelector for ExternalSelector {
    /// A hold answered here (a caller that must have a site) takes the
    /// first eligible site.
    fn select(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
        self.place(job, view, eligible).unwrap_or(eligible[0])
    }

    fn look_ahead(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> usize {
        let batch = self.program.batch();
        if batch < 2 || self.fits(job, view, eligible) {
            return 0;
        }
        self.learn();
        if self.placed && self.placing_ends_round {
            self.alone += 1;
            if !self.alone.is_multiple_of(PROBE) {
                return 0;
            }
        }
        self.want = self.want.clamp(2, batch);
        self.want - 1
    }

    fn place(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> Option<SiteId> {
        self.place_ahead(job, view, eligible, &[])
    }

    fn place_ahead(
        &mut self,
        job: JobId,
        view: &GridView<'_>,
        eligible: &[SiteId],
        ahead: &[Offer],
    ) -> Option<SiteId> {
        if self.fits(job, view, eligible) {
            let f = self.forecast.pop_front().expect("fits");
            return self.take_answer(f.answer);
        }
        if self.program.batch() > 1 {
            return self.ask_batch(job, view, eligible, ahead);
        }
        let request = One {
            kind: "select",
            time: view.now,
            job: job_out(job, view),
            eligible,
            sites: self.sites_out(view),
            draw: self.rng.next_u32(),
        };
        let name = &view.workflow.job(job).name;
        let answer = self
            .program
            .ask(|| format!("select for job `{name}`"), &request)?;
        self.choice(job, view, eligible, &answer).flatten()
    }
}

/// A `select` request for one job.
#[derive(Serialize)]
struct One<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    time: f64,
    job: JobOut<'a>,
    eligible: &'a [SiteId],
    sites: Vec<SiteOut>,
    draw: u32,
}

/// A `select` request for a round's offers, answered in order.
#[derive(Serialize)]
struct Batch<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    time: f64,
    /// Each placement registers its job's inputs at its site, as the
    /// offers after it must assume.
    plans_inputs: bool,
    sites: Vec<SiteOut>,
    offers: Vec<OfferOut<'a>>,
}

#[derive(Serialize)]
struct OfferOut<'a> {
    job: JobOut<'a>,
    eligible: &'a [SiteId],
    draw: u32,
}

/// The job as a request gives it: its inputs with sizes and holders, its
/// outputs.
#[derive(Serialize)]
struct JobOut<'a> {
    id: JobId,
    name: &'a str,
    runtime: f64,
    inputs: Vec<FileOut<'a>>,
    outputs: Vec<FileOut<'a>>,
}

#[derive(Serialize)]
struct FileOut<'a> {
    id: usize,
    name: &'a str,
    size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    holders: Option<&'a [SiteId]>,
}

/// A site's free slots, claimed slots and active jobs.
#[derive(Serialize, Clone, Copy, Default, PartialEq)]
struct SiteOut {
    id: SiteId,
    free: usize,
    claimed: usize,
    active: usize,
}

fn job_out<'a>(job: JobId, view: &GridView<'a>) -> JobOut<'a> {
    let wf = view.workflow;
    let j = wf.job(job);
    let file = |f: usize, holders: Option<&'a [SiteId]>| FileOut {
        id: f,
        name: &wf.files()[f].name,
        size: wf.files()[f].size,
        holders,
    };
    JobOut {
        id: job,
        name: &j.name,
        runtime: j.runtime,
        inputs: j
            .inputs
            .iter()
            .map(|&f| file(f, Some(view.rls.holders(f))))
            .collect(),
        outputs: j.outputs.iter().map(|&f| file(f, None)).collect(),
    }
}
