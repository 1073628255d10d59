//! The workflow-manager actor: the submit host of seed 000 §4. It wraps the
//! sans-IO [`Manager`], stamps every site event with the nominal time (wall
//! time since the start × `time_scale`), carries out the commands by messaging
//! the site actors, and wakes itself when the core asks for a tick.

use crate::core::timeline::{Sample, Timeline};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use tokio::sync::oneshot;

use super::messages::{
    AddJobs, Cleanup, Delete, Fetch, Kill, Pin, Release, Remove, RunScript, SiteEvent, Submit,
};
use super::remote::SiteAddr;
use crate::core::observer::BoxedObserver;
use crate::core::{Command, Event, Manager, Time};
use crate::db::ControlDb;
use crate::metrics::Metrics;

/// Wall clock → nominal time.
#[derive(Debug, Clone, Copy)]
pub struct LiveClock {
    /// When the run started.
    pub start: Instant,
    /// Nominal seconds per real second.
    pub time_scale: f64,
}

impl LiveClock {
    /// Nominal seconds since the start.
    pub fn now(&self) -> Time {
        self.start.elapsed().as_secs_f64() * self.time_scale
    }

    /// The real instant of nominal time `t`.
    pub fn at(&self, t: Time) -> Instant {
        self.start + super::site::real_duration(t / self.time_scale)
    }
}

/// Sent by the engine when the sites are attached: start planning.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Start {
    /// The site actors, by site id.
    pub sites: Vec<SiteAddr>,
    /// Told once no job can make progress any more.
    pub done: oneshot::Sender<()>,
    /// The nominal time of the last timed fault: until then a stall may
    /// yet be moved (a site coming back), so it is not given up on.
    pub quiet_after: Time,
}

/// Asks for the manager state machine (and its database writer) at the end.
#[derive(Message)]
#[rtype(result = "Option<Taken>")]
pub struct TakeManager;

/// What the manager actor hands back at the end of a run.
pub struct Taken {
    /// The manager state machine, with its control records.
    pub core: Manager,
    /// The database writer, still to be finished.
    pub db: Option<ControlDb>,
    /// Per-site state over time.
    pub timeline: Timeline,
    /// The DAG as the run left it, when it read sub-DAGs as it went.
    pub grown: Option<crate::config::GrownDag>,
}

/// The manager actor. See the module docs.
pub struct ManagerActor {
    core: Option<Manager>,
    clock: LiveClock,
    sites: Vec<SiteAddr>,
    tick: Option<SpawnHandle>,
    done: Option<oneshot::Sender<()>>,
    metrics: Arc<Metrics>,
    progress: BoxedObserver,
    out: Vec<Command>,
    db: Option<ControlDb>,
    timeline: Timeline,
    /// Where an external policy program's failure shows: the run ends.
    policies: Arc<crate::policy::RunPolicies>,
    /// The sub-DAGs read as the run goes, if it has any.
    subdags: Option<crate::config::SubDagReader>,
    /// See [`Start::quiet_after`].
    quiet_after: Time,
    /// The DAG's halt files, looked for at each publication once started.
    halt: Option<crate::workflow::formats::dagman::halt::HaltFiles>,
}

impl ManagerActor {
    /// A manager actor around `core`, whose policies (and the sites') came
    /// from `policies`.
    pub fn new(
        mut core: Manager,
        clock: LiveClock,
        metrics: Arc<Metrics>,
        progress: BoxedObserver,
        db: Option<ControlDb>,
        policies: Arc<crate::policy::RunPolicies>,
        subdags: Option<crate::config::SubDagReader>,
    ) -> Self {
        core.track_changes(db.is_some());
        ManagerActor {
            subdags,
            policies,
            db,
            timeline: Timeline::default(),
            core: Some(core),
            clock,
            sites: Vec::new(),
            tick: None,
            done: None,
            metrics,
            progress,
            out: Vec::new(),
            quiet_after: 0.0,
            halt: None,
        }
    }

    /// Watches `halt`, the DAG's halt files: each halts its DAGMan once it
    /// appears.
    pub fn watching(mut self, halt: Option<crate::workflow::formats::dagman::halt::HaltFiles>) -> Self {
        self.halt = halt;
        self
    }

    fn step(&mut self, event: Event, ctx: &mut Context<Self>) {
        let Some(core) = self.core.as_mut() else {
            return;
        };
        let now = self.clock.now();
        core.handle(now, event, &mut self.out);
        let out = std::mem::take(&mut self.out);
        self.carry_out(out, now);
        let Some(core) = self.core.as_mut() else {
            return;
        };
        // Nothing in flight and nothing due: the run ends saying why, once
        // no timed fault is left to move it (the simulator's way too).
        if now >= self.quiet_after && core.give_up_if_stalled(&mut self.out) {
            let out = std::mem::take(&mut self.out);
            self.carry_out(out, now);
        }
        let Some(core) = self.core.as_mut() else {
            return;
        };
        if let Some(h) = self.tick.take() {
            ctx.cancel_future(h);
        }
        if core.is_finished() || self.policies.failure().is_some() {
            self.publish();
            self.progress.finish();
            if let Some(done) = self.done.take() {
                let _ = done.send(());
            }
            return;
        }
        let stalled_early = || core.stalled().is_some().then_some(self.quiet_after);
        if let Some(at) = core.next_wakeup().or_else(stalled_early) {
            // On the run's clock, not after `now`: a tick is not late by the
            // time this step took.
            let due = self.clock.at(at.max(now));
            self.tick = Some(ctx.spawn(super::timer::sleep_until(due.into()).into_actor(self).map(
                |(), act, ctx| {
                    act.tick = None;
                    act.step(Event::Tick, ctx);
                },
            )));
        }
    }

    /// Carries out the core's commands at nominal time `now`, by messaging
    /// the sites.
    fn carry_out(&mut self, out: Vec<Command>, now: Time) {
        let Some(core) = self.core.as_mut() else {
            return;
        };
        let mut out = out.into_iter();
        while let Some(c) = out.next() {
            match c {
                Command::Pin { job, site } => self.sites[site].do_send(Pin { job }),
                Command::StartTransfer {
                    id,
                    job,
                    file,
                    source,
                    from,
                    to,
                } => {
                    let names = core.sites();
                    self.metrics.transfer_started(
                        &names[from].name,
                        &names[to].name,
                        core.records().transfers[id as usize].retry,
                    );
                    self.sites[to].do_send(Fetch {
                        id,
                        job,
                        file,
                        source,
                        from,
                        url: None,
                    })
                }
                Command::Submit {
                    job,
                    site,
                    exit,
                    macros,
                } => self.sites[site].do_send(Submit { job, exit, macros }),
                Command::Kill { job, site } => self.sites[site].do_send(Kill { job }),
                Command::Remove { job, site } => self.sites[site].do_send(Remove { job }),
                Command::RunScript {
                    job,
                    site,
                    kind,
                    macros,
                    ..
                } => self.sites[site].do_send(RunScript { job, kind, macros }),
                Command::Release { job, site, delete } => {
                    self.sites[site].do_send(Release { job, delete })
                }
                Command::Cleanup { site, file } => self.sites[site].do_send(Cleanup { file }),
                Command::Delete { site, file } => self.sites[site].do_send(Delete { file }),
                Command::ReadSubDag { subdag, .. } => {
                    let first = core.run_dag().job_count();
                    let mut more = Vec::new();
                    let reader = self.subdags.as_mut();
                    let scripts = crate::config::SubDagReader::answer(
                        reader, core, now, subdag, &mut more,
                    );
                    let jobs = core.run_dag().jobs_from(first);
                    if !jobs.is_empty() {
                        self.metrics.jobs_total.add(jobs.len() as i64);
                        // Before any order about them, in order on each site.
                        for s in &self.sites {
                            s.do_send(AddJobs {
                                first,
                                jobs: jobs.clone(),
                                scripts: scripts.clone(),
                            });
                        }
                    }
                    // What the graft ordered, then the rest, in order.
                    self.carry_out(more, now);
                    return self.carry_out(out.collect(), now);
                }
            }
        }
    }

    /// Writes the control records changed since the last batch.
    fn flush_db(&mut self) {
        let (Some(db), Some(core)) = (self.db.as_mut(), self.core.as_mut()) else {
            return;
        };
        let Some(changes) = core.take_changes() else {
            return;
        };
        db.write(&changes, core.records(), core.run_dag());
    }

    fn publish(&mut self) {
        self.flush_db();
        let Some(core) = self.core.as_ref() else {
            return;
        };
        let c = core.counts();
        let m = &self.metrics;
        for (state, n) in [
            ("waiting", c.waiting),
            ("ready", c.ready),
            ("staging", c.staging),
            ("queued", c.queued),
            ("running", c.running),
            ("done", c.done),
            ("failed", c.failed),
            ("blocked", c.blocked),
        ] {
            m.jobs.with_label_values(&[state]).set(n as i64);
        }
        m.prescripts_running.set(core.prescripts_running() as i64);
        m.transfers_in_flight.set(core.transfers_in_flight() as i64);
        m.makespan.set(self.clock.now());
        for (s, counters) in core.records().sites.iter().enumerate() {
            let name = core.sites()[s].name.as_str();
            m.cache_hits
                .with_label_values(&[name])
                .set(counters.cache_hits as i64);
            m.inputs_planned
                .with_label_values(&[name])
                .set(counters.inputs_planned as i64);
        }
        let replans: usize = core
            .records()
            .jobs
            .iter()
            .map(|j| j.attempts.len().saturating_sub(1))
            .sum();
        m.replans
            .inc_by((replans as u64).saturating_sub(m.replans.get()));
        let transfers = core.records().transfers.len();
        self.progress.manager_state(c, transfers, self.clock.now());
        if self.timeline.due(self.clock.now()) {
            let s = self.sample();
            self.timeline.push(s);
        }
    }

    /// Every site's queue, running jobs and storage now, as the site actors
    /// last published them.
    fn sample(&self) -> Sample {
        let names: Vec<&str> = match &self.core {
            Some(core) => core.sites().iter().map(|s| s.name.as_str()).collect(),
            None => Vec::new(),
        };
        let m = &self.metrics;
        let jobs = |state: &str| -> Vec<u32> {
            names
                .iter()
                .map(|n| m.site_jobs.with_label_values(&[n, state]).get().max(0) as u32)
                .collect()
        };
        Sample {
            t: self.clock.now(),
            queued: jobs("queued"),
            running: jobs("running"),
            used: names
                .iter()
                .map(|n| m.storage_used.with_label_values(&[n]).get().max(0) as u64)
                .collect(),
        }
    }
}

impl Actor for ManagerActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(super::MAILBOX);
        ctx.run_interval(Duration::from_millis(100), |act, ctx| {
            act.publish();
            // DAGMan looks at each turn of its event loop.
            let (Some(core), Some(h)) = (act.core.as_ref(), act.halt.as_mut()) else {
                return;
            };
            if act.done.is_none() {
                return;
            }
            crate::config::SubDagReader::follow_halts(h, core, act.subdags.as_ref());
            for halt in h.appeared(core.subdag_spans()) {
                act.step(halt, ctx);
            }
        });
    }
}

impl Handler<Start> for ManagerActor {
    type Result = ();
    fn handle(&mut self, m: Start, ctx: &mut Context<Self>) {
        self.sites = m.sites;
        self.done = Some(m.done);
        self.quiet_after = m.quiet_after;
        self.step(Event::Tick, ctx);
    }
}

impl Handler<SiteEvent> for ManagerActor {
    type Result = ();
    fn handle(&mut self, m: SiteEvent, ctx: &mut Context<Self>) {
        if let Event::Fault { site, fault } = &m.0
            && let Some(core) = &self.core
        {
            let name = &core.sites()[*site].name;
            self.metrics
                .faults
                .with_label_values(&[name.as_str(), fault.kind()])
                .inc();
        }
        self.step(m.0, ctx);
    }
}

impl Handler<TakeManager> for ManagerActor {
    type Result = MessageResult<TakeManager>;
    fn handle(&mut self, _: TakeManager, ctx: &mut Context<Self>) -> Self::Result {
        self.publish();
        ctx.stop();
        let last = self.sample();
        let mut timeline = std::mem::take(&mut self.timeline);
        timeline.finish(last);
        let db = self.db.take();
        let reader = self.subdags.take();
        MessageResult(self.core.take().map(|core| Taken {
            grown: reader.map(|r| r.finish(&core)),
            core,
            db,
            timeline,
        }))
    }
}
