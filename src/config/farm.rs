//! Farm testbeds: a `[farm]` of executors and a `[stream]` of tasks in TOML,
//! as `testbeds/falkon-diffusion.toml` writes them. Errors give the file,
//! line, column and field, as the grid testbeds' do.

use std::path::Path;

use serde::Deserialize;

use super::source::Source;
use super::{ConfigError, Emulation};
use crate::core::farm::{Allocation, Drp, FarmSpec, Task};
use crate::diffusion::stream::{Arrivals, Popularity, generate, parse_arrivals};
use crate::units::{Rate, Size};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FarmFile {
    name: Option<String>,
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default = "one")]
    seed: u64,
    farm: FarmTable,
    stream: StreamTable,
    #[serde(default)]
    emulation: Option<EmulationTable>,
}

/// How the live engine scales the farm (nominal per real).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EmulationTable {
    #[serde(default = "one_f64")]
    time_scale: f64,
    #[serde(default = "one_f64")]
    byte_scale: f64,
}

/// A ramp with its parameters; each defaults to the paper's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RampTable {
    #[serde(default = "one_f64")]
    start: f64,
    #[serde(default = "ramp_factor")]
    factor: f64,
    #[serde(default = "ramp_interval")]
    interval: f64,
    #[serde(default = "ramp_max")]
    max: f64,
}

fn ramp_factor() -> f64 {
    1.3
}

fn ramp_interval() -> f64 {
    60.0
}

fn ramp_max() -> f64 {
    1000.0
}

fn one() -> u64 {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FarmTable {
    executors: usize,
    cpus: usize,
    cache: Size,
    #[serde(default = "lru")]
    eviction: String,
    policy: String,
    store_bandwidth: Rate,
    peer_bandwidth: Rate,
    /// Each executor's local disk (unlimited when absent).
    #[serde(default)]
    disk_bandwidth: Option<Rate>,
    /// Set-up seconds of each peer read.
    #[serde(default)]
    peer_latency: f64,
    #[serde(default)]
    dispatch: f64,
    #[serde(default = "yes")]
    caching: bool,
    /// Seconds per reported interval (10 by default).
    #[serde(default)]
    interval: Option<f64>,
    provisioner: Option<ProvisionerTable>,
}

fn lru() -> String {
    "lru".into()
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProvisionerTable {
    min: usize,
    queue_threshold: usize,
    /// one-at-a-time, additive, exponential, all-at-once
    allocation: String,
    #[serde(default = "one_usize")]
    step: usize,
    latency: f64,
    idle: f64,
    #[serde(default = "one_f64")]
    interval: f64,
}

fn one_usize() -> usize {
    1
}

fn one_f64() -> f64 {
    1.0
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StreamTable {
    tasks: usize,
    files: usize,
    file_size: Size,
    compute: f64,
    #[serde(default = "one_usize")]
    files_per_task: usize,
    /// "ramp" (the paper's), a ramp table, `{ trace = "file" }` or a
    /// constant rate in tasks/s
    arrivals: toml::Value,
    /// uniform, or zipf with `zipf`
    #[serde(default)]
    zipf: Option<f64>,
}

/// A loaded farm testbed.
#[derive(Debug, Clone)]
pub struct FarmTestbed {
    /// Its name.
    pub name: String,
    /// The farm.
    pub spec: FarmSpec,
    /// The task stream.
    pub tasks: Vec<Task>,
    /// Seconds of one arrival-rate step (the ramp's interval; the reported
    /// interval for other arrivals): seed 001's slowdown is per step.
    pub step: f64,
    /// How the live engine scales it (`[emulation]`; 1 and 1 by default).
    pub emulation: Emulation,
}

/// Loads a farm testbed, its policies among the built-ins.
pub fn load(path: &Path) -> Result<FarmTestbed, ConfigError> {
    load_with(path, &crate::policy::Registry::shared_builtin())
}

/// [`load`], its `policy` and `eviction` looked up in `registry` (run it
/// with the same registry: `sim::farm::run_with`, or the live
/// `FarmOptions::registry`).
pub fn load_with(
    path: &Path,
    registry: &crate::policy::Registry,
) -> Result<FarmTestbed, ConfigError> {
    let src = Source::read(path)?;
    let f: FarmFile = src.parse()?;
    let bad = |field: &str, m: &str| src.error(None, Some(field.to_string()), m.to_string());
    if f.farm.executors == 0 || f.farm.cpus == 0 {
        return Err(bad("farm.executors", "expected executors ≥ 1 and cpus ≥ 1"));
    }
    if !(f.stream.compute.is_finite() && f.stream.compute >= 0.0) {
        return Err(bad("stream.compute", "expected seconds ≥ 0"));
    }
    if f.stream.files == 0 || f.stream.tasks == 0 {
        return Err(bad("stream.files", "expected tasks ≥ 1 and files ≥ 1"));
    }
    if !(f.farm.peer_latency.is_finite() && f.farm.peer_latency >= 0.0) {
        return Err(bad("farm.peer_latency", "expected seconds ≥ 0"));
    }
    if f.farm
        .disk_bandwidth
        .is_some_and(|r| r.0.is_nan() || r.0 <= 0.0)
    {
        return Err(bad("farm.disk_bandwidth", "expected a rate > 0"));
    }
    let policy_ok = registry.dispatch_policy(&f.farm.policy, f.seed);
    if let Err(e) = policy_ok {
        return Err(bad("farm.policy", &e.to_string()));
    }
    if let Err(e) = registry.eviction_policy(&f.farm.eviction, f.seed) {
        return Err(bad("farm.eviction", &e.to_string()));
    }
    let drp = match f.farm.provisioner {
        None => None,
        Some(p) => Some(Drp {
            min: p.min,
            queue_threshold: p.queue_threshold,
            allocation: match p.allocation.as_str() {
                "one-at-a-time" => Allocation::OneAtATime,
                "additive" => Allocation::Additive(p.step),
                "exponential" => Allocation::Exponential,
                "all-at-once" => Allocation::AllAtOnce,
                other => {
                    return Err(bad(
                        "farm.provisioner.allocation",
                        &format!(
                            "unknown `{other}`; expected one-at-a-time, additive, exponential, all-at-once"
                        ),
                    ));
                }
            },
            latency: p.latency.max(0.0),
            idle: p.idle.max(0.0),
            interval: if p.interval > 0.0 { p.interval } else { 1.0 },
        }),
    };
    let arrivals = match &f.stream.arrivals {
        toml::Value::String(s) if s == "ramp" => Arrivals::paper_ramp(),
        toml::Value::Float(r) if *r > 0.0 => Arrivals::Constant(*r),
        toml::Value::Integer(r) if *r > 0 => Arrivals::Constant(*r as f64),
        toml::Value::Table(t) if t.contains_key("trace") => {
            let Some(toml::Value::String(file)) = t.get("trace") else {
                return Err(bad("stream.arrivals.trace", "expected a file name"));
            };
            let trace = path.parent().unwrap_or(Path::new(".")).join(file);
            let text = std::fs::read_to_string(&trace).map_err(|e| {
                bad(
                    "stream.arrivals.trace",
                    &format!("cannot read {}: {e}", trace.display()),
                )
            })?;
            let times = parse_arrivals(&text).map_err(|(line, message)| ConfigError {
                file: trace.clone(),
                line,
                column: 1,
                field: "(arrival trace)".into(),
                message,
            })?;
            if times.len() < f.stream.tasks {
                return Err(bad(
                    "stream.tasks",
                    &format!(
                        "{} tasks, but the trace {} has {} arrival times",
                        f.stream.tasks,
                        trace.display(),
                        times.len()
                    ),
                ));
            }
            Arrivals::Trace(times)
        }
        toml::Value::Table(t) => {
            let r: RampTable = toml::Value::Table(t.clone()).try_into().map_err(|e| {
                bad(
                    "stream.arrivals",
                    &format!("a ramp table {{ start, factor, interval, max }}: {e}"),
                )
            })?;
            let ok = |x: f64| x.is_finite() && x > 0.0;
            if !(ok(r.start) && ok(r.interval) && ok(r.max) && r.factor >= 1.0) {
                return Err(bad(
                    "stream.arrivals",
                    "expected start, interval, max > 0 and factor ≥ 1",
                ));
            }
            Arrivals::Ramp {
                start: r.start,
                factor: r.factor,
                interval: r.interval,
                max: r.max,
            }
        }
        other => {
            return Err(bad(
                "stream.arrivals",
                &format!(
                    "`{other}`; expected \"ramp\", a ramp table, {{ trace = \"file\" }} or a rate in tasks/s"
                ),
            ));
        }
    };
    let emulation = match f.emulation {
        None => Emulation {
            time_scale: 1.0,
            byte_scale: 1.0,
        },
        Some(e) => {
            let ok = |x: f64| x.is_finite() && x > 0.0;
            if !(ok(e.time_scale) && ok(e.byte_scale)) {
                return Err(bad(
                    "emulation",
                    "expected time_scale > 0 and byte_scale > 0",
                ));
            }
            Emulation {
                time_scale: e.time_scale,
                byte_scale: e.byte_scale,
            }
        }
    };
    let popularity = match f.stream.zipf {
        None => Popularity::Uniform,
        Some(s) if s > 0.0 => Popularity::Zipf(s),
        Some(s) => {
            return Err(bad(
                "stream.zipf",
                &format!("{s}: expected an exponent > 0"),
            ));
        }
    };
    let interval = f.farm.interval.filter(|&i| i > 0.0).unwrap_or(10.0);
    let step = match &arrivals {
        Arrivals::Ramp { interval: i, .. } => *i,
        _ => interval,
    };
    let tasks = generate(
        f.stream.tasks,
        f.stream.files,
        f.stream.files_per_task.max(1),
        &arrivals,
        &popularity,
        f.seed,
    );
    Ok(FarmTestbed {
        name: f.name.unwrap_or_else(|| {
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
        spec: FarmSpec {
            executors: f.farm.executors,
            drp,
            cpus: f.farm.cpus,
            cache: f.farm.cache.0,
            eviction: f.farm.eviction,
            policy: f.farm.policy,
            files: f.stream.files,
            file_size: f.stream.file_size.0,
            compute: f.stream.compute,
            dispatch: f.farm.dispatch.max(0.0),
            store_bandwidth: f.farm.store_bandwidth.0,
            peer_bandwidth: f.farm.peer_bandwidth.0,
            disk_bandwidth: f.farm.disk_bandwidth.map_or(f64::INFINITY, |r| r.0),
            peer_latency: f.farm.peer_latency,
            caching: f.farm.caching,
            seed: f.seed,
            interval,
        },
        tasks,
        step,
        emulation,
    })
}
