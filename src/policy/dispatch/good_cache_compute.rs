//! good-cache-compute (seed 001 §3.2): max-compute-util while the CPU
//! utilization (busy executors over registered ones) is below a threshold,
//! max-cache-hit at or above it — cache hits as long as the CPUs stay busy.
//! The paper's experiments use 0.8.

use super::{DispatchPolicy, FarmView, MaxCacheHit, MaxComputeUtil, TaskQueue};
use crate::core::FileId;
use crate::diffusion::index::ExecId;

/// Switches between the two data-aware policies on CPU utilization.
#[derive(Debug, Clone, Copy)]
pub struct GoodCacheCompute {
    cache: MaxCacheHit,
    compute: MaxComputeUtil,
    threshold: f64,
}

impl GoodCacheCompute {
    /// With a scheduling window of `window` tasks and a utilization threshold.
    pub fn new(window: usize, threshold: f64) -> Self {
        GoodCacheCompute {
            cache: MaxCacheHit::new(window),
            compute: MaxComputeUtil::new(window),
            threshold,
        }
    }

    fn current(&mut self, view: &FarmView<'_>) -> &mut dyn DispatchPolicy {
        if view.utilization < self.threshold {
            &mut self.compute
        } else {
            &mut self.cache
        }
    }
}

impl DispatchPolicy for GoodCacheCompute {
    fn notify(&mut self, files: &[FileId], view: &FarmView<'_>) -> Option<ExecId> {
        self.current(view).notify(files, view)
    }

    fn pick_up(
        &mut self,
        e: ExecId,
        queue: &dyn TaskQueue,
        max: usize,
        view: &FarmView<'_>,
    ) -> Vec<usize> {
        self.current(view).pick_up(e, queue, max, view)
    }
}
