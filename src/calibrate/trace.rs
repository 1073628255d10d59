//! A recorded run (WfFormat `execution`), the scenario that replays it, and
//! the prediction set beside the record.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::staging::Staging;
use crate::config::{self, Overrides, Scenario};

/// Why a trace cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read or is not JSON.
    #[error("{path}: {message}")]
    Read {
        /// The trace.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The testbed or the trace's workflow is wrong.
    #[error("{0}")]
    Config(#[from] config::ConfigError),
    /// The testbed names an unknown policy.
    #[error("{0}")]
    Policy(String),
}

/// What a trace recorded of its run.
#[derive(Debug, Clone, Serialize)]
pub struct Trace {
    /// The file.
    pub path: PathBuf,
    /// Its file name without extension.
    pub name: String,
    /// Recorded makespan (s).
    pub makespan: f64,
    /// The machines the run used.
    pub machines: Vec<Machine>,
    /// Each task's recorded start and end (s after the run's start), by
    /// task name, when the trace has them (`executedAt` of the run and of
    /// each task, as gridbed's `--wfformat` writes; Pegasus's WfInstances
    /// traces have none).
    #[serde(skip)]
    pub times: HashMap<String, (f64, f64)>,
    /// Tasks whose bytes read and written the trace records (`readBytes`,
    /// `writtenBytes`).
    pub io_recorded: usize,
    /// Tasks in its execution section.
    pub tasks: usize,
}

/// A machine a trace's run used.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Machine {
    /// Its host name (`nodeName`).
    pub name: String,
    /// Its cores.
    pub cores: usize,
    /// Its memory (bytes), when the trace says.
    pub memory: Option<u64>,
    /// Its CPU's clock (MHz, `cpu.speedInMHz`), when the trace says.
    pub speed: Option<f64>,
}

/// Memories within this fraction are one size (one machine type's
/// `memoryInBytes` differs by kilobytes between nodes: 131,795,956,000
/// against 131,795,984,000 on Chameleon).
const SAME_MEMORY: f64 = 0.01;

/// Clocks within this factor are one CPU. WfInstances' `speedInMHz` is
/// the clock when it was read, anywhere between the CPU's lowest and its
/// turbo frequency: pegasus-2 reads 1,200 MHz in one 1000genome run and
/// 2,600 MHz in another.
const SAME_SPEED: f64 = 2.5;

impl Machine {
    /// Its name without its index (`pegasus-5` and `pegasus-2` of one
    /// platform are both `pegasus`).
    pub fn stem(&self) -> &str {
        let stem = self
            .name
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .trim_end_matches(['-', '_', '.']);
        if stem.is_empty() { &self.name } else { stem }
    }

    /// What kind of machine it is: its [stem](Self::stem) and hardware.
    pub fn kind(&self) -> String {
        format!("{} ({})", self.stem(), self.hardware())
    }

    /// Its hardware in words: cores, and memory where recorded.
    pub fn hardware(&self) -> String {
        match self.memory {
            Some(m) => format!("{} cores, {:.1} GB", self.cores, m as f64 / 1e9),
            None => format!("{} cores", self.cores),
        }
    }

    /// Whether `other` is the same hardware: as many cores, and memory
    /// and CPU clock alike where both record them (see [`SAME_MEMORY`],
    /// [`SAME_SPEED`]). Names do not count: one platform's machines may be
    /// named anew between runs.
    pub fn same_hardware(&self, other: &Machine) -> bool {
        let memory = match (self.memory, other.memory) {
            (Some(a), Some(b)) => (a as f64 - b as f64).abs() <= SAME_MEMORY * a.max(b) as f64,
            _ => true,
        };
        let speed = match (self.speed, other.speed) {
            (Some(a), Some(b)) => a.max(b) <= SAME_SPEED * a.min(b),
            _ => true,
        };
        self.cores == other.cores && memory && speed
    }
}

/// Seconds since the Unix epoch of an RFC 3339 timestamp.
fn seconds(v: &Value) -> Option<f64> {
    let at = humantime::parse_rfc3339_weak(v.as_str()?).ok()?;
    Some(at.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs_f64())
}

/// Task starts and ends by task name, relative to the run's `executedAt`;
/// empty unless every executed task has a readable start.
fn task_times(wf: &Value, ex: &Value) -> HashMap<String, (f64, f64)> {
    let mut times = HashMap::new();
    let Some(t0) = ex.get("executedAt").and_then(seconds) else {
        return times;
    };
    let names: HashMap<&str, &str> = wf
        .get("specification")
        .and_then(|s| s.get("tasks"))
        .and_then(Value::as_array)
        .map(|ts| {
            ts.iter()
                .filter_map(|t| Some((t.get("id")?.as_str()?, t.get("name")?.as_str()?)))
                .collect()
        })
        .unwrap_or_default();
    for t in ex
        .get("tasks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let start = t.get("executedAt").and_then(seconds);
        let runtime = t.get("runtimeInSeconds").and_then(Value::as_f64);
        let id = t.get("id").and_then(Value::as_str);
        let (Some(start), Some(runtime), Some(id)) = (start, runtime, id) else {
            return HashMap::new();
        };
        let name = names.get(id).copied().unwrap_or(id);
        times.insert(name.to_string(), (start - t0, start - t0 + runtime));
    }
    times
}

impl Trace {
    /// Reads the execution section of a WfFormat instance (1.5's
    /// `workflow.execution`, or the older `workflow.makespan…`/`machines`).
    pub fn read(path: &Path) -> Result<Trace, TraceError> {
        let err = |message: String| TraceError::Read {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| err(e.to_string()))?;
        let wf = v
            .get("workflow")
            .ok_or_else(|| err("no `workflow` object: not a WfFormat instance".into()))?;
        let ex = wf.get("execution").unwrap_or(wf);
        let makespan = ["makespanInSeconds", "makespan"]
            .iter()
            .find_map(|k| ex.get(*k).and_then(Value::as_f64))
            .filter(|m| *m > 0.0)
            .ok_or_else(|| {
                err("workflow.execution.makespanInSeconds: expected the recorded makespan (> 0 s); \
                     a trace must be a run, not only a specification"
                    .into())
            })?;
        let machines: Vec<Machine> = ex
            .get("machines")
            .and_then(Value::as_array)
            .map(|ms| {
                ms.iter()
                    .filter_map(|m| {
                        let name = m.get("nodeName")?.as_str()?.to_string();
                        let cores = m.get("cpu")?.get("coreCount")?.as_u64()? as usize;
                        let memory = m.get("memoryInBytes").and_then(Value::as_u64);
                        let speed = m
                            .get("cpu")?
                            .get("speedInMHz")
                            .and_then(Value::as_f64)
                            .filter(|v| *v > 0.0);
                        Some(Machine {
                            name,
                            cores: cores.max(1),
                            memory,
                            speed,
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        if machines.is_empty() {
            return Err(err(
                "workflow.execution.machines: expected machines with nodeName and cpu.coreCount"
                    .into(),
            ));
        }
        let times = task_times(wf, ex);
        let executed = ex.get("tasks").and_then(Value::as_array);
        let io_recorded = executed.map_or(0, |ts| {
            ts.iter()
                .filter(|t| t.get("readBytes").is_some() || t.get("writtenBytes").is_some())
                .count()
        });
        Ok(Trace {
            times,
            io_recorded,
            tasks: executed.map_or(0, Vec::len),
            path: path.to_path_buf(),
            name: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            makespan,
            machines,
        })
    }
}

/// `testbed` with `trace`'s workflow: the scenario the knobs are set on,
/// its execution-site template not yet replaced by the trace's machines
/// (see [`replay`]).
pub fn testbed_for(
    testbed: &Path,
    trace: &Trace,
    seed: Option<u64>,
) -> Result<Scenario, TraceError> {
    let overrides = Overrides {
        workflow: Some(trace.path.clone()),
        seed,
        ..Overrides::default()
    };
    Ok(config::load(testbed, &overrides)?)
}

/// The scenario that replays `trace` on `scenario` (from [`testbed_for`]):
/// its machines as the execution sites, each a copy of the testbed's first
/// execution site (its links, path, speed and disk) with the machine's
/// name and cores, or all of them one site with their cores together
/// under `sharedfs`; storage sites stay. Each job runs on the machine the
/// trace records for it, when it records one for every job (see
/// [`placed`]). `staging` sets the data path ([`Staging`]); without it the
/// testbed's own stays.
pub fn replay(
    mut scenario: Scenario,
    trace: &Trace,
    staging: Option<Staging>,
) -> Result<Scenario, TraceError> {
    let (at, template) = scenario
        .sites
        .iter()
        .enumerate()
        .find(|(_, s)| !s.storage)
        .map(|(i, s)| (i, s.clone()))
        .ok_or_else(|| TraceError::Policy("the testbed has no execution site".into()))?;
    let path = scenario.topology.paths.get(at).cloned().unwrap_or_default();
    let mut sites: Vec<_> = scenario
        .sites
        .iter()
        .filter(|s| s.storage)
        .cloned()
        .collect();
    let storage = sites.len();
    let machine = |name: String, cpus: usize| {
        let mut site = template.clone();
        site.info.name = name;
        site.info.cpus = cpus;
        site
    };
    if staging.is_some_and(Staging::merges_machines) {
        let names: Vec<&str> = trace.machines.iter().map(|m| m.name.as_str()).collect();
        let cores = trace.machines.iter().map(|m| m.cores).sum();
        sites.push(machine(names.join("+"), cores));
    } else {
        for m in &trace.machines {
            sites.push(machine(m.name.clone(), m.cores));
        }
    }
    let machines = sites.len() - storage;
    scenario.replace_sites(sites).map_err(|e| match e {
        crate::config::SubsetError::Submit(name) => TraceError::Policy(format!(
            "the testbed's submit machine `{name}` must be a storage site to replay a trace"
        )),
        e => TraceError::Policy(e.to_string()),
    })?;
    for p in scenario
        .topology
        .paths
        .iter_mut()
        .skip(storage)
        .take(machines)
    {
        p.clone_from(&path);
    }
    // Merged into one site, the machines leave nothing to place.
    let merged = staging.is_some_and(Staging::merges_machines);
    if !merged && placed(&scenario, trace) == scenario.workflow.jobs.len() {
        scenario.strategy = "recorded".into();
    }
    if let Some(staging) = staging {
        staging.apply(&mut scenario);
    }
    Ok(scenario)
}

/// How many of `scenario`'s jobs name the machine of `trace` they ran on.
/// When all do, a replay places them there (the `recorded` selector) and
/// not by the testbed's selector: HTCondor's matchmaker filled one
/// machine's slots before the next, and each machine received what its
/// jobs read.
pub fn placed(scenario: &Scenario, trace: &Trace) -> usize {
    scenario
        .workflow
        .jobs
        .iter()
        .filter(|j| {
            j.site
                .as_deref()
                .is_some_and(|s| trace.machines.iter().any(|m| m.name == s))
        })
        .count()
}

/// What `trace` records beyond its makespan and runtimes, and what the fit
/// makes of it, in a line.
pub fn evidence(trace: &Trace, scenario: &Scenario) -> String {
    let jobs = scenario.workflow.jobs.len();
    let placed = placed(scenario, trace);
    let mut parts = vec![format!("makespan {:.0} s", trace.makespan)];
    parts.push(if placed == jobs {
        format!("the machine of every job ({jobs}): its placement replayed")
    } else if placed > 0 {
        format!("the machine of {placed} of {jobs} jobs: not replayed (the testbed's selector places them)")
    } else {
        "no machine per job: the testbed's selector places them".into()
    });
    parts.push(if trace.times.is_empty() {
        "no task start times: makespan only".into()
    } else {
        format!("start and end of {} tasks: fitted too", trace.times.len())
    });
    parts.push(if trace.io_recorded == 0 {
        "no bytes read or written: the files' sizes give what each job moves".into()
    } else {
        format!(
            "bytes read and written of {} of {} tasks: not used, the files' sizes give what each job moves",
            trace.io_recorded, trace.tasks
        )
    });
    parts.join("; ")
}

/// The scenario that replays `trace` on `testbed` with the testbed's own
/// data path: [`replay`] of [`testbed_for`].
pub fn scenario_for(
    testbed: &Path,
    trace: &Trace,
    seed: Option<u64>,
) -> Result<Scenario, TraceError> {
    replay(testbed_for(testbed, trace, seed)?, trace, None)
}

/// Refuses traces of more than one platform, told by hardware: every
/// trace's machines must be the same hardware as some machine of the
/// first trace ([`Machine::same_hardware`]). Machines of the same hardware
/// under other names are one platform; the warnings returned name them
/// (the traces cannot say whether their WMS was deployed alike).
pub fn one_platform<'a>(
    traces: impl IntoIterator<Item = &'a Trace>,
) -> Result<Vec<String>, TraceError> {
    let names = |t: &Trace| {
        let n: Vec<&str> = t.machines.iter().map(|m| m.name.as_str()).collect();
        n.join(", ")
    };
    let kinds = |t: &Trace| {
        let mut k: Vec<String> = t.machines.iter().map(Machine::kind).collect();
        k.sort();
        k.dedup();
        k.join(", ")
    };
    let mut warnings = Vec::new();
    let mut named: Vec<(&str, &str)> = Vec::new();
    let mut first: Option<&Trace> = None;
    for t in traces {
        let Some(f) = first else {
            first = Some(t);
            continue;
        };
        for m in &t.machines {
            let Some(fm) = f.machines.iter().find(|fm| fm.same_hardware(m)) else {
                return Err(TraceError::Policy(format!(
                    "traces of two platforms: {} ran on {} ({}), {} on {} ({}): \
                     {} matches none of {}'s machines in cores, memory and CPU clock; \
                     fit and predict the runs of one platform together",
                    f.name,
                    names(f),
                    kinds(f),
                    t.name,
                    names(t),
                    kinds(t),
                    m.name,
                    f.name
                )));
            };
            let pair = (fm.stem(), m.stem());
            if pair.0 != pair.1 && !named.contains(&pair) {
                named.push(pair);
                warnings.push(format!(
                    "{} ({}) and {} ({}) have other names but the same hardware ({}): \
                     fitted as one platform; the traces cannot say whether their WMS ran alike",
                    fm.name,
                    f.name,
                    m.name,
                    t.name,
                    m.hardware()
                ));
            }
        }
    }
    Ok(warnings)
}

/// When the last job of one level (longest distance from a root) ended:
/// its program's end, as a trace records a task's (start + runtime).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LevelFinish {
    /// The level, 0 for the roots.
    pub level: usize,
    /// Its jobs.
    pub jobs: usize,
    /// Predicted finish (s).
    pub predicted: f64,
    /// Recorded finish (s), when the trace has task times.
    pub recorded: Option<f64>,
}

/// A trace's recorded makespan beside the simulator's.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Prediction {
    /// The trace's name.
    pub trace: String,
    /// Jobs run.
    pub jobs: usize,
    /// Recorded makespan (s).
    pub recorded: f64,
    /// Predicted makespan (s).
    pub predicted: f64,
    /// `(predicted − recorded) / recorded`.
    pub error: f64,
    /// Per-level finish times of the prediction.
    pub levels: Vec<LevelFinish>,
    /// Tasks whose recorded start and end were set beside the predicted
    /// ones (0 when the trace has no task times).
    pub tasks_compared: usize,
    /// Root mean square of the differences of those starts and ends, as a
    /// fraction of the recorded makespan.
    pub task_error: Option<f64>,
    /// The recorded makespans the fit's left-out errors allow (s), for a
    /// trace predicted, not fitted on (see [`super::Interval`]).
    pub interval: Option<[f64; 2]>,
}

impl Prediction {
    /// What the fit minimises for this trace: the squared makespan error,
    /// plus the squared task-time error where the trace has task times.
    pub fn cost(&self) -> f64 {
        self.error.powi(2) + self.task_error.map_or(0.0, |e| e.powi(2))
    }

    /// The errors whose squares make [`Prediction::cost`]: the makespan's
    /// and the task times' (0 without them).
    pub fn errors(&self) -> [f64; 2] {
        [self.error, self.task_error.unwrap_or(0.0)]
    }
}

/// Runs `scenario` (a trace's) on the simulator.
pub fn predict(trace: &Trace, scenario: &Scenario) -> Result<Prediction, TraceError> {
    let run = crate::sim::run(scenario).map_err(|e| TraceError::Policy(e.to_string()))?;
    let wf = &scenario.workflow;
    let mut level = vec![0usize; wf.jobs.len()];
    let mut levels: Vec<LevelFinish> = Vec::new();
    let (mut squares, mut compared) = (0.0, 0usize);
    // Jobs are in topological order.
    for (j, job) in wf.jobs.iter().enumerate() {
        level[j] = job.parents.iter().map(|&p| level[p] + 1).max().unwrap_or(0);
        if levels.len() <= level[j] {
            levels.resize_with(level[j] + 1, || LevelFinish {
                level: 0,
                jobs: 0,
                predicted: 0.0,
                recorded: None,
            });
        }
        let l = &mut levels[level[j]];
        l.level = level[j];
        l.jobs += 1;
        let last = run.records.jobs[j].attempts.last();
        let ended = last.and_then(|a| a.finished).unwrap_or(f64::NAN);
        l.predicted = l.predicted.max(ended);
        if let Some(&(start, end)) = trace.times.get(&job.name) {
            l.recorded = Some(l.recorded.map_or(end, |r: f64| r.max(end)));
            let started = last.and_then(|a| a.started).unwrap_or(f64::NAN);
            squares += (started - start).powi(2) + (ended - end).powi(2);
            compared += 1;
        }
    }
    let task_error = (compared > 0)
        .then(|| (squares / (2 * compared) as f64).sqrt() / trace.makespan)
        // A job that never ran compares as far off as the whole run.
        .map(|e| if e.is_finite() { e } else { 1.0 });
    Ok(Prediction {
        tasks_compared: compared,
        task_error,
        trace: trace.name.clone(),
        jobs: wf.jobs.len(),
        recorded: trace.makespan,
        predicted: run.makespan,
        error: (run.makespan - trace.makespan) / trace.makespan,
        levels,
        interval: None,
    })
}
