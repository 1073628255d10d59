//! A DAGMan's node counts as its run goes: the `DAG status` tables its
//! event timer logs (`condor_event_timer` calls `print_status` whenever a
//! count changed since its last tick: nodes done, failed, queued, ready,
//! running a script). They are read back from the records: each node's
//! phases (not ready, ready, PRE script, queued, POST script; then done,
//! failed or futile) from its events, in the order DAGMan saw them. One
//! table is logged for each instant at which a count changed, as a
//! DAGMan whose event loop notices each event at once (gridbed's model:
//! with `DAGMAN_USER_LOG_SCAN_INTERVAL`, the events it notices come at
//! that loop's ticks already).

use super::view::*;
use crate::core::JobId;

/// Where a node is, as `print_status` counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Unready,
    Ready,
    Pre,
    Queued,
    Post,
    Done,
    Failed,
    Futile,
}

/// One `DAG status` table: its time, DAGMan's `DagStatus` then, and the
/// nodes per phase in `print_status`'s order (Done, Pre, Queued, Post,
/// Ready, Un-Ready, Failed, Futile).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Table {
    pub(super) t: f64,
    pub(super) dag_status: u8,
    pub(super) counts: [usize; 8],
}

impl Phase {
    /// Its column in a table.
    fn column(self) -> usize {
        match self {
            Phase::Done => 0,
            Phase::Pre => 1,
            Phase::Queued => 2,
            Phase::Post => 3,
            Phase::Ready => 4,
            Phase::Unready => 5,
            Phase::Failed => 6,
            Phase::Futile => 7,
        }
    }
}

/// The tables DAGMan logs during run `r` of `inst` (the last as its last
/// node ends), before the one it logs as it exits.
pub(super) fn tables(cx: &Ctx, inst: &Instance, r: usize) -> Vec<Table> {
    let run = &inst.runs[r];
    let within = |t: f64| t >= run.start && t <= run.end;
    let nodes = cx.dag.drawn(inst);
    // (time, order, node, phase): a node's moves in the order it made them.
    let mut moves: Vec<(f64, usize, usize, Phase)> = Vec::new();
    for (i, &j) in nodes.iter().enumerate() {
        let mut n = 0;
        node_moves(cx, j, run.start, &mut |t, p| {
            moves.push((t, n, i, p));
            n += 1;
        });
    }
    moves.retain(|m| within(m.0));
    let stop = stop(cx, inst);
    (sweep(nodes.len(), moves).into_iter())
        .map(|(t, counts)| {
            let dag_status = match stop {
                Some((at, s)) if at <= t => s,
                _ if counts[Phase::Failed.column()] > 0 => 2,
                _ => 0,
            };
            Table {
                t,
                dag_status,
                counts,
            }
        })
        .collect()
}

/// The counts of `nodes` nodes per phase (all not ready at first) at
/// each instant at which they changed, as `moves` (time, the node's own
/// order of its moves, node, phase) move them.
fn sweep(nodes: usize, mut moves: Vec<(f64, usize, usize, Phase)>) -> Vec<(f64, [usize; 8])> {
    moves.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.2.cmp(&b.2)).then(a.1.cmp(&b.1)));
    let mut phase = vec![Phase::Unready; nodes];
    let mut counts = [0usize; 8];
    counts[Phase::Unready.column()] = nodes;
    let mut changed: Vec<(f64, [usize; 8])> = Vec::new();
    let mut k = 0;
    while k < moves.len() {
        let t = moves[k].0;
        while k < moves.len() && moves[k].0 == t {
            let (_, _, i, p) = moves[k];
            counts[phase[i].column()] -= 1;
            counts[p.column()] += 1;
            phase[i] = p;
            k += 1;
        }
        if changed.last().is_none_or(|&(_, last)| last != counts) {
            changed.push((t, counts));
        }
    }
    changed
}

/// When `inst`'s DAG stopped, if it did, and DAGMan's `DagStatus` then:
/// an `ABORT-DAG-ON` as its node's attempt ended, a removal as the first
/// job it removed, a halt as it drained.
fn stop(cx: &Ctx, inst: &Instance) -> Option<(f64, u8)> {
    let a = match inst.subdag {
        None => cx.run.dag_stop?,
        Some(_) => return None,
    };
    let jobs = &cx.run.records.jobs;
    let at = match a.node {
        _ if a.halted_at.is_some() => a.halted_at?,
        Some(n) => jobs[n]
            .attempts
            .last()
            .and_then(|a| a.ended.or(a.finished))?,
        None => (jobs.iter())
            .filter_map(|r| r.attempts.last())
            .filter(|a| matches!(a.outcome, crate::core::records::Outcome::Removed(_)))
            .filter_map(|a| a.ended)
            .fold(f64::INFINITY, f64::min),
    };
    Some((at, cx.dag.stop_status(a, false)))
}

/// `j`'s moves from phase to phase, `to(time, phase)` in the order it
/// made them, from not ready; a node DONE in its DAG, or done by a run
/// before the one starting at `start`, is done as it starts.
fn node_moves(cx: &Ctx, j: JobId, start: f64, to: &mut impl FnMut(f64, Phase)) {
    let record = &cx.run.records.jobs[j];
    if done_by(cx, j, start, true) {
        to(start, Phase::Done);
        return;
    }
    let events = node_events(cx, j);
    let mut attempt = None;
    let mut last = None;
    for (t, k, began, e) in events {
        if attempt != Some(k) {
            // A node is ready from its parents' end (its first attempt)
            // or its last attempt's (a retry).
            let ready = match (attempt, record.ready) {
                (None, Some(r)) => r.min(began),
                _ => last.unwrap_or(began),
            };
            to(ready, Phase::Ready);
            attempt = Some(k);
        }
        last = Some(t);
        match e {
            NodeEvent::PreStarted => to(t, Phase::Pre),
            NodeEvent::PreEnded(_) | NodeEvent::SubmitFailed { .. } => to(t, Phase::Ready),
            NodeEvent::Submitted(_) => to(t, Phase::Queued),
            NodeEvent::PostStarted(_) => to(t, Phase::Post),
            // The attempt's end decides: the node's end, or a retry.
            NodeEvent::Executing(_)
            | NodeEvent::ProcSubmitted(_)
            | NodeEvent::ProcEnded(..)
            | NodeEvent::ClusterEnded(_)
            | NodeEvent::Terminated(..)
            | NodeEvent::Aborted(_)
            | NodeEvent::PostEnded(..) => {}
        }
    }
    let ended = record.attempts.last().and_then(|a| a.ended).or(last);
    match cx.ends[j] {
        State::Done => to(ended.unwrap_or(start), Phase::Done),
        State::Error => to(ended.unwrap_or(start), Phase::Failed),
        State::Futile => {
            let by = record.blocked_by.and_then(|b| {
                let a = cx.run.records.jobs[b].attempts.last()?;
                a.ended.or(a.finished)
            });
            to(by.unwrap_or(start), Phase::Futile)
        }
        State::NotReady | State::Ready => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PHASES: [Phase; 8] = [
        Phase::Unready,
        Phase::Ready,
        Phase::Pre,
        Phase::Queued,
        Phase::Post,
        Phase::Done,
        Phase::Failed,
        Phase::Futile,
    ];

    proptest! {
        /// Against a recount: at each instant a move happens, each
        /// node is in the phase of its last move by then (its own order
        /// breaking a tie in time), else not ready; a table is logged
        /// exactly where the counts differ from the last one logged.
        /// Times are drawn from a few, so moves often share an instant.
        #[test]
        fn the_counts_are_a_recount_at_each_change(
            nodes in 0..5usize,
            drawn in proptest::collection::vec((0..4u8, 0..5usize, 0..8usize), 0..30),
        ) {
            let mut order = [0; 5];
            let moves: Vec<(f64, usize, usize, Phase)> = (drawn.iter())
                .filter(|m| m.1 < nodes)
                .map(|&(t, i, p)| {
                    order[i] += 1;
                    (f64::from(t), order[i], i, PHASES[p])
                })
                .collect();
            let mut times: Vec<f64> = moves.iter().map(|m| m.0).collect();
            times.sort_by(f64::total_cmp);
            times.dedup();
            let mut want: Vec<(f64, [usize; 8])> = Vec::new();
            for t in times {
                let mut counts = [0; 8];
                for i in 0..nodes {
                    let last = (moves.iter())
                        .filter(|m| m.2 == i && m.0 <= t)
                        .max_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                    counts[last.map_or(Phase::Unready, |m| m.3).column()] += 1;
                }
                if want.last().is_none_or(|w| w.1 != counts) {
                    want.push((t, counts));
                }
            }
            prop_assert_eq!(sweep(nodes, moves), want);
        }
    }
}
