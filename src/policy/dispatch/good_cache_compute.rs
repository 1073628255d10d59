//! good-cache-compute (seed 001 §3.2): max-compute-util while the CPU
//! utilization (busy executors over registered ones) is below a threshold,
//! max-cache-hit at or above it — cache hits as long as the CPUs stay busy.
//! The paper's experiments use 0.8.
//!
//! The paper names a second heuristic without giving its value: a maximum
//! replication factor, "which will determine how efficient the cache space
//! utilization will be". With `replicas = R` (0, the default: no limit) a
//! task goes to an executor that lacks one of its files only while that file
//! has fewer than R copies; otherwise it waits for an executor that has it,
//! as under max-cache-hit.

use super::{
    DispatchPolicy, FarmView, NextFree, TaskQueue, candidates, notify_cache_hit,
    notify_compute_util, pick_by_hits, within_replicas,
};
use crate::core::FileId;
use crate::core::cache_index::ExecId;

/// Switches between the two data-aware policies on CPU utilization.
#[derive(Debug, Clone, Copy)]
pub struct GoodCacheCompute {
    next: NextFree,
    threshold: f64,
    window: usize,
    replicas: usize,
}

impl GoodCacheCompute {
    /// With a scheduling window of `window` tasks, a utilization threshold
    /// and a maximum replication factor (0: none).
    pub fn new(window: usize, threshold: f64, replicas: usize) -> Self {
        GoodCacheCompute {
            next: NextFree::default(),
            threshold,
            window,
            replicas,
        }
    }

    fn computing(&self, view: &FarmView<'_>) -> bool {
        view.utilization < self.threshold
    }
}

impl DispatchPolicy for GoodCacheCompute {
    fn notify(&mut self, files: &[FileId], view: &FarmView<'_>) -> Option<ExecId> {
        if !self.computing(view) {
            return notify_cache_hit(files, view, &mut self.next);
        }
        if self.replicas == 0 {
            return notify_compute_util(files, view, &mut self.next);
        }
        // max-compute-util among the executors the cap allows.
        let r = self.replicas;
        let allowed = |e: ExecId| within_replicas(files, e, view, r);
        let free = |e: ExecId| view.free.get(e).copied().unwrap_or(false);
        candidates(files, view)
            .into_iter()
            .map(|(e, _)| e)
            .find(|&e| free(e) && allowed(e))
            .or_else(|| self.next.pick(view, allowed))
    }

    fn pick_up(
        &mut self,
        e: ExecId,
        queue: &dyn TaskQueue,
        max: usize,
        view: &FarmView<'_>,
    ) -> Vec<usize> {
        let r = self.replicas;
        let allowed = |files: &[FileId]| within_replicas(files, e, view, r);
        let computing = self.computing(view);
        pick_by_hits(e, queue, self.window, max, view, computing, &allowed)
    }
}
