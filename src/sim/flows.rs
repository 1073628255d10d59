//! Flow traces (issue 37): a simulated run's transfers as the flows of the
//! max-min model — when each one's bytes began to move, how many, which
//! limited resources it crossed and its per-stream cap — and their replay
//! through the core's [`Network`] alone, with no workflow around them.
//!
//! A trace is what `benches/simgrid_network.py` hands SimGrid's CM02 model
//! (SimGrid's flow-level max-min sharing, latency 0): the same flows, the
//! same resources, so that the two allocations can be compared transfer by
//! transfer and the two models timed on one machine.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::config::Scenario;
use crate::core::events::EventQueue;
use crate::core::faults::FaultSpec;
use crate::core::network::{Network, RouteId, ShareId};
use crate::core::result::RunResult;
use crate::core::topology::{GridNetwork, Resource};

/// Flows over limited resources, in nominal bytes and seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowTrace {
    /// The limited resources.
    pub resources: Vec<TraceResource>,
    /// The flows, in the order their bytes began to move.
    pub flows: Vec<TraceFlow>,
}

/// A limited resource of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceResource {
    /// What it is (`out:SITE`, `in:SITE`, `up:LINK`, `down:LINK`).
    pub name: String,
    /// Bytes/s.
    pub bandwidth: f64,
}

/// A flow of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceFlow {
    /// What it carried (`FILE:FROM->TO`).
    pub name: String,
    /// When its first byte moved (s).
    pub start: f64,
    /// Its bytes.
    pub bytes: f64,
    /// The resources it crossed, as indices into [`FlowTrace::resources`].
    pub resources: Vec<u32>,
    /// Its per-stream cap (bytes/s), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<f64>,
    /// When its last byte arrived (s): the simulator's or a replay's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<f64>,
}

/// Why a trace could not be made or replayed.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// Faults move when bytes flow (stalls, resets) or cut flows short.
    #[error(
        "the testbed injects faults ({0}): a flow trace is of a run without them, \
         as stalls, resets and crashes move or cut the flows"
    )]
    Faults(String),
    /// A resource of the trace is no bandwidth.
    #[error(
        "resource {index} (`{name}`): bandwidth {bandwidth} is not a positive number of bytes/s"
    )]
    Resource {
        /// Its index.
        index: usize,
        /// Its name.
        name: String,
        /// What it said.
        bandwidth: f64,
    },
    /// A flow of the trace makes no sense.
    #[error("flow {index} (`{name}`): {message}")]
    Flow {
        /// Its index.
        index: usize,
        /// Its name.
        name: String,
        /// What is wrong.
        message: String,
    },
}

/// The flows of `run`, a run of `scenario` (simulated, or live: what it
/// recorded): every transfer that moved bytes and arrived, from the moment
/// the source's and the links' latency was over, with the run's end.
pub fn export(scenario: &Scenario, run: &RunResult) -> Result<FlowTrace, TraceError> {
    let quiet = FaultSpec::default();
    let faulty: Vec<&str> = scenario
        .sites
        .iter()
        .filter(|s| {
            s.faults.resets != quiet
                || s.faults.stalls != quiet
                || s.faults.corrupt_responses != quiet
        })
        .map(|s| s.info.name.as_str())
        .collect();
    if !scenario.faults.is_empty() || !faulty.is_empty() {
        let what = if faulty.is_empty() {
            "timed faults".to_string()
        } else {
            format!("response faults at {}", faulty.join(", "))
        };
        return Err(TraceError::Faults(what));
    }
    let mut grid: GridNetwork<u64> =
        GridNetwork::new(&scenario.topology, &super::interfaces(scenario));
    let site = |s: usize| scenario.sites[s].info.name.as_str();
    let link = |l: usize| scenario.topology.links[l].name.as_str();
    let mut resources = Vec::new();
    let mut index: FxHashMap<u32, u32> = FxHashMap::default();
    let mut flows = Vec::new();
    for t in &run.records.transfers {
        let Some(end) = t.end else { continue };
        if t.failure.is_some() || t.bytes == 0 {
            continue;
        }
        let (route, link_latency) = grid.route(t.from, t.to);
        let (crossed, cap) = grid.net.route_of(route);
        let crossed = crossed.to_vec();
        let mut used = Vec::with_capacity(crossed.len());
        for r in crossed {
            let i = *index.entry(r).or_insert_with(|| {
                let name = match grid.resource(r) {
                    Some(Resource::Out(s)) => format!("out:{}", site(s)),
                    Some(Resource::In(s)) => format!("in:{}", site(s)),
                    Some(Resource::Up(l)) => format!("up:{}", link(l)),
                    Some(Resource::Down(l)) => format!("down:{}", link(l)),
                    None => format!("resource {r}"),
                };
                resources.push(TraceResource {
                    name,
                    bandwidth: grid.net.bandwidth(r),
                });
                (resources.len() - 1) as u32
            });
            used.push(i);
        }
        flows.push(TraceFlow {
            name: format!(
                "{}:{}->{}",
                scenario.workflow.files[t.file].name,
                site(t.from),
                site(t.to)
            ),
            start: t.start + scenario.sites[t.from].latency + link_latency,
            bytes: t.bytes as f64,
            resources: used,
            cap: cap.is_finite().then_some(cap),
            end: Some(end),
        });
    }
    flows.sort_by(|a, b| a.start.total_cmp(&b.start));
    Ok(FlowTrace { resources, flows })
}

/// Each transfer of `run` (live, or on a netbed) beside the model's time
/// for it when its bytes start when they did there: `run`'s flows replayed
/// through the max-min model alone, as (model, run) seconds from the first
/// byte. Set beside a simulated run instead, a workflow whose schedule
/// follows its transfers (a data-aware selector) compares transfers that
/// ran at other times among other flows.
pub fn own_starts(scenario: &Scenario, run: &RunResult) -> Result<Vec<(f64, f64)>, TraceError> {
    let trace = export(scenario, run)?;
    let ends = replay(&trace)?;
    Ok(trace
        .flows
        .iter()
        .zip(ends)
        .filter_map(|(f, model)| f.end.map(|end| (model - f.start, end - f.start)))
        .collect())
}

/// Checks that `trace` describes flows the model can carry.
fn check(trace: &FlowTrace) -> Result<(), TraceError> {
    for (index, r) in trace.resources.iter().enumerate() {
        if r.bandwidth.is_nan() || r.bandwidth <= 0.0 {
            return Err(TraceError::Resource {
                index,
                name: r.name.clone(),
                bandwidth: r.bandwidth,
            });
        }
    }
    for (index, f) in trace.flows.iter().enumerate() {
        let wrong = |message: String| TraceError::Flow {
            index,
            name: f.name.clone(),
            message,
        };
        if !(f.start.is_finite() && f.start >= 0.0) {
            return Err(wrong(format!("start {} is no time ≥ 0", f.start)));
        }
        if !(f.bytes.is_finite() && f.bytes >= 0.0) {
            return Err(wrong(format!("bytes {} is no size ≥ 0", f.bytes)));
        }
        if let Some(cap) = f.cap
            && (cap.is_nan() || cap <= 0.0)
        {
            return Err(wrong(format!("cap {cap} is no rate > 0")));
        }
        if let Some(&r) = f
            .resources
            .iter()
            .find(|&&r| r as usize >= trace.resources.len())
        {
            return Err(wrong(format!(
                "resource {r} does not exist (the trace has {})",
                trace.resources.len()
            )));
        }
        if let Some((i, &r)) = f
            .resources
            .iter()
            .enumerate()
            .find(|&(i, r)| f.resources[..i].contains(r))
        {
            return Err(wrong(format!(
                "resource {r} (`{}`) is listed twice (again at position {i}): a flow \
                 crosses a resource once, and the model would count it once",
                trace.resources[r as usize].name
            )));
        }
        if f.bytes > 0.0 && f.resources.is_empty() && f.cap.is_none() {
            return Err(wrong(
                "crosses no limited resource and has no cap: it would never end".into(),
            ));
        }
    }
    Ok(())
}

/// Replays `trace` through the max-min [`Network`]: each flow starts at its
/// `start` and the result is each flow's end, in the trace's order.
pub fn replay(trace: &FlowTrace) -> Result<Vec<f64>, TraceError> {
    check(trace)?;
    let mut net: Network<usize> = Network::new();
    for r in &trace.resources {
        net.add_resource(r.bandwidth);
    }
    let routes: Vec<RouteId> = trace
        .flows
        .iter()
        .map(|f| net.route(&f.resources, f.cap.unwrap_or(f64::INFINITY)))
        .collect();
    let mut order: Vec<usize> = (0..trace.flows.len()).collect();
    order.sort_by(|&a, &b| trace.flows[a].start.total_cmp(&trace.flows[b].start));
    let mut ends = vec![f64::NAN; trace.flows.len()];
    let mut due: EventQueue<(ShareId, u64)> = EventQueue::new();
    let mut next = 0;
    loop {
        let start = order.get(next).map(|&i| trace.flows[i].start);
        let now = match (start, due.peek_time()) {
            (None, None) => break,
            (Some(s), Some(d)) => s.min(d),
            (Some(s), None) => s,
            (None, Some(d)) => d,
        };
        while let Some((share, generation)) = due.pop_due(now) {
            for i in net.take_ended(now, share, generation).unwrap_or_default() {
                ends[i] = now;
            }
        }
        while let Some(&i) = order.get(next) {
            if trace.flows[i].start > now {
                break;
            }
            next += 1;
            if trace.flows[i].bytes == 0.0 {
                ends[i] = now;
            } else {
                net.start(now, routes[i], i, trace.flows[i].bytes);
            }
        }
        net.schedule_changed(now, |at, share, generation| {
            due.push(at, (share, generation))
        });
    }
    Ok(ends)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(start: f64, bytes: f64, resources: &[u32]) -> TraceFlow {
        TraceFlow {
            name: format!("f{start}"),
            start,
            bytes,
            resources: resources.to_vec(),
            cap: None,
            end: None,
        }
    }

    #[test]
    fn a_replay_shares_a_resource_max_min_as_flows_come_and_go() {
        let trace = FlowTrace {
            resources: vec![TraceResource {
                name: "in:sink".into(),
                bandwidth: 10.0,
            }],
            // The first moves 10 bytes alone in 1 s, then 5 at 5/s beside
            // the second (ends at 2), whose last 5 bytes go alone at 10/s
            // (ends at 2.5).
            flows: vec![flow(0.0, 15.0, &[0]), flow(1.0, 10.0, &[0])],
        };
        let ends = replay(&trace).unwrap();
        assert!((ends[0] - 2.0).abs() < 1e-12, "{ends:?}");
        assert!((ends[1] - 2.5).abs() < 1e-12, "{ends:?}");
    }

    #[test]
    fn a_trace_that_makes_no_sense_is_refused() {
        let mut trace = FlowTrace {
            resources: vec![TraceResource {
                name: "out:a".into(),
                bandwidth: 1.0,
            }],
            flows: vec![flow(0.0, 1.0, &[3])],
        };
        assert!(
            replay(&trace)
                .unwrap_err()
                .to_string()
                .contains("resource 3")
        );
        trace.flows = vec![flow(0.0, 1.0, &[0, 0])];
        assert!(
            replay(&trace)
                .unwrap_err()
                .to_string()
                .contains("listed twice")
        );
        trace.flows = vec![flow(0.0, 1.0, &[])];
        assert!(
            replay(&trace)
                .unwrap_err()
                .to_string()
                .contains("never end")
        );
        trace.flows = vec![flow(-1.0, 1.0, &[0])];
        assert!(replay(&trace).unwrap_err().to_string().contains("start"));
        trace.resources[0].bandwidth = 0.0;
        assert!(
            replay(&trace)
                .unwrap_err()
                .to_string()
                .contains("bandwidth")
        );
    }
}
