//! Falkon's dispatch policies (seed 001 §3.2), one file each. The dispatcher
//! works in two parts, as the paper's pseudo code: [`DispatchPolicy::notify`]
//! takes the head task of the wait queue and picks the executor to notify
//! (the head task goes to it); [`DispatchPolicy::pick_up`] then lets that
//! executor take more tasks from the first `W` of the queue (the scheduling
//! window), scored by the fraction of their files it caches.

mod first_available;
mod good_cache_compute;
mod max_cache_hit;
mod max_compute_util;

pub use first_available::FirstAvailable;
pub use good_cache_compute::GoodCacheCompute;
pub use max_cache_hit::MaxCacheHit;
pub use max_compute_util::MaxComputeUtil;

pub use crate::core::seams::{DispatchPolicy, FarmView, TaskQueue, Tasks};

use crate::core::FileId;
use crate::core::cache_index::ExecId;

/// Whether `e` may run a task reading `files` without raising any file it
/// lacks to more than `replicas` copies (0: no limit).
fn within_replicas(files: &[FileId], e: ExecId, view: &FarmView<'_>, replicas: usize) -> bool {
    replicas == 0
        || files
            .iter()
            .all(|&f| view.index.cached(f, e) || view.index.holders(f).len() < replicas)
}

/// The first free executor.
fn first_free(view: &FarmView<'_>) -> Option<ExecId> {
    view.free.iter().position(|&f| f)
}

/// The pseudo code's "send notification to the next free executor" when no
/// executor caches any of the head task's files: free executors in turn,
/// starting after the one notified last. Always taking the lowest free id
/// instead would pile every new file onto the first executors' caches and
/// evict there while the others stay empty (with 2 GB caches: 30% misses
/// instead of 9%; docs/reproduction/diffusion.md).
#[derive(Debug, Clone, Copy, Default)]
pub struct NextFree(usize);

impl NextFree {
    /// The next free executor allowed by `ok`, if any.
    fn pick(&mut self, view: &FarmView<'_>, ok: impl Fn(ExecId) -> bool) -> Option<ExecId> {
        let n = view.free.len();
        let e = (0..n)
            .map(|k| (self.0 + k) % n)
            .find(|&e| view.free[e] && ok(e))?;
        self.0 = e + 1;
        Some(e)
    }
}

/// Part 1 of max-cache-hit: the free executor caching most of the files;
/// the next free one when none caches any; none (the task waits) when all
/// that do are busy.
fn notify_cache_hit(files: &[FileId], view: &FarmView<'_>, next: &mut NextFree) -> Option<ExecId> {
    match best_free_candidate(files, view) {
        Ok(Some(e)) => Some(e),
        Ok(None) => next.pick(view, |_| true),
        Err(()) => None,
    }
}

/// Part 1 of max-compute-util: the free executor caching most of the files,
/// else the next free one.
fn notify_compute_util(
    files: &[FileId],
    view: &FarmView<'_>,
    next: &mut NextFree,
) -> Option<ExecId> {
    match best_free_candidate(files, view) {
        Ok(Some(e)) => Some(e),
        _ => next.pick(view, |_| true),
    }
}

/// Executors caching any of `files`, most files first (then lowest id).
fn candidates(files: &[FileId], view: &FarmView<'_>) -> Vec<(ExecId, usize)> {
    let mut counts: Vec<(ExecId, usize)> = Vec::new();
    for &f in files {
        for &e in view.index.holders(f) {
            match counts.iter_mut().find(|(x, _)| *x == e) {
                Some((_, n)) => *n += 1,
                None => counts.push((e, 1)),
            }
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    counts
}

/// The best free candidate for `files`: `Ok(Some)` a free executor caching
/// some of them, `Ok(None)` none caches any, `Err(())` all that do are busy.
fn best_free_candidate(files: &[FileId], view: &FarmView<'_>) -> Result<Option<ExecId>, ()> {
    let c = candidates(files, view);
    if c.is_empty() {
        return Ok(None);
    }
    c.iter()
        .find(|(e, _)| view.free.get(*e).copied().unwrap_or(false))
        .map(|&(e, _)| Some(e))
        .ok_or(())
}

/// Part 2 of the data-aware policies: in the window, tasks `e` caches every
/// file of are taken at once (until `max`); else the tasks with the most
/// local hits (fraction, then queue order). With `fill`, positions without
/// any hit complete the batch from the head (max-compute-util). Tasks `e`
/// would have to fetch files for are taken only if `allowed(files)` (the
/// replication cap of good-cache-compute).
fn pick_by_hits(
    e: ExecId,
    queue: &dyn TaskQueue,
    window: usize,
    max: usize,
    view: &FarmView<'_>,
    fill: bool,
    allowed: &dyn Fn(&[FileId]) -> bool,
) -> Vec<usize> {
    if max == 0 {
        return Vec::new();
    }
    let n = queue.len().min(window);
    let mut full = Vec::new();
    let mut partial: Vec<(usize, f64)> = Vec::new();
    for i in 0..n {
        let files = queue.files(i);
        let hits = files.iter().filter(|&&f| view.index.cached(f, e)).count();
        if !files.is_empty() && hits == files.len() {
            full.push(i);
            if full.len() == max {
                return full;
            }
        } else if hits > 0 && allowed(files) {
            partial.push((i, hits as f64 / files.len() as f64));
        }
    }
    partial.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out = full;
    out.extend(partial.iter().map(|p| p.0).take(max - out.len()));
    if fill && out.len() < max {
        for i in 0..n {
            if out.len() == max {
                break;
            }
            if !out.contains(&i) && allowed(queue.files(i)) {
                out.push(i);
            }
        }
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::cache_index::CacheIndex;

    /// Three executors: 0 caches {0, 1}, 1 caches {2}, 2 caches nothing.
    fn index() -> CacheIndex {
        let mut ix = CacheIndex::new(10, 3);
        ix.insert(0, 0);
        ix.insert(1, 0);
        ix.insert(2, 1);
        ix
    }

    fn view<'a>(ix: &'a CacheIndex, free: &'a [bool], utilization: f64) -> FarmView<'a> {
        FarmView {
            free,
            utilization,
            index: ix,
        }
    }

    fn q(tasks: &[&[FileId]]) -> Vec<Vec<FileId>> {
        tasks.iter().map(|t| t.to_vec()).collect()
    }

    #[test]
    fn the_resolver_knows_the_four_and_checks_the_threshold() {
        for name in [
            "first-available",
            "max-cache-hit",
            "max-compute-util[window=100]",
            "good-cache-compute[threshold=0.9]",
        ] {
            assert!(crate::policy::dispatch_policy(name, 1).is_ok(), "{name}");
        }
        let e = crate::policy::dispatch_policy("good-cache-compute[threshold=1.5]", 1)
            .err()
            .unwrap();
        assert!(e.to_string().contains("[0, 1]"), "{e}");
        assert!(crate::policy::dispatch_policy("fastest", 1).is_err());
    }

    #[test]
    fn first_available_ignores_data() {
        let ix = index();
        let mut p = FirstAvailable;
        assert_eq!(
            p.notify(&[2], &view(&ix, &[false, true, true], 0.3)),
            Some(1)
        );
        assert_eq!(
            p.notify(&[0], &view(&ix, &[false, false, false], 1.0)),
            None
        );
        let queue = q(&[&[9], &[0], &[1]]);
        assert_eq!(
            p.pick_up(0, &Tasks(&queue), 2, &view(&ix, &[true; 3], 0.0)),
            [0, 1]
        );
    }

    #[test]
    fn max_cache_hit_waits_for_the_executor_with_the_data() {
        let ix = index();
        let mut p = MaxCacheHit::new(3200);
        // Task reads 0 and 1: executor 0 has both.
        assert_eq!(
            p.notify(&[0, 1], &view(&ix, &[true, true, true], 0.0)),
            Some(0)
        );
        // Executor 0 busy: the task waits (delayed), even with others free.
        assert_eq!(
            p.notify(&[0, 1], &view(&ix, &[false, true, true], 0.3)),
            None
        );
        // Nobody caches file 7: the next free executor.
        assert_eq!(
            p.notify(&[7], &view(&ix, &[false, false, true], 0.6)),
            Some(2)
        );
        // Pick-up: full local hits first, then partial; never a task without hits.
        let queue = q(&[&[7], &[0, 9], &[1], &[2], &[0, 1]]);
        assert_eq!(
            p.pick_up(0, &Tasks(&queue), 3, &view(&ix, &[true; 3], 0.0)),
            [1, 2, 4]
        );
        assert_eq!(
            p.pick_up(2, &Tasks(&queue), 3, &view(&ix, &[true; 3], 0.0)),
            Vec::<usize>::new()
        );
    }

    #[test]
    fn the_window_limits_what_a_pick_up_inspects() {
        let ix = index();
        // The only task executor 1 caches is at position 3.
        let queue = q(&[&[7], &[8], &[9], &[2]]);
        let v = view(&ix, &[true; 3], 0.0);
        assert_eq!(MaxCacheHit::new(4).pick_up(1, &Tasks(&queue), 1, &v), [3]);
        assert_eq!(
            MaxCacheHit::new(3).pick_up(1, &Tasks(&queue), 1, &v),
            Vec::<usize>::new()
        );
        // max-compute-util fills from the head, within the window.
        assert_eq!(
            MaxComputeUtil::new(3).pick_up(1, &Tasks(&queue), 2, &v),
            [0, 1]
        );
    }

    #[test]
    fn max_compute_util_never_leaves_a_free_executor_idle() {
        let ix = index();
        let mut p = MaxComputeUtil::new(3200);
        assert_eq!(
            p.notify(&[0, 1], &view(&ix, &[true, true, true], 0.0)),
            Some(0)
        );
        // The data's executor is busy: any free one rather than waiting.
        assert_eq!(
            p.notify(&[0, 1], &view(&ix, &[false, false, true], 0.6)),
            Some(2)
        );
        let queue = q(&[&[7], &[8], &[1]]);
        // Hits first, then the head of the queue.
        assert_eq!(
            p.pick_up(0, &Tasks(&queue), 2, &view(&ix, &[true; 3], 0.0)),
            [0, 2]
        );
    }

    #[test]
    fn good_cache_compute_switches_at_its_utilization_threshold() {
        let ix = index();
        let mut p = GoodCacheCompute::new(3200, 0.8, 0);
        let free = [false, true, true];
        // Below 0.8 busy: behave as max-compute-util (keep CPUs busy).
        assert_eq!(p.notify(&[0], &view(&ix, &free, 0.79)), Some(1));
        // At or above 0.8: as max-cache-hit (wait for the data's executor).
        assert_eq!(p.notify(&[0], &view(&ix, &free, 0.8)), None);
        let queue = q(&[&[7], &[8]]);
        assert_eq!(
            p.pick_up(2, &Tasks(&queue), 1, &view(&ix, &[true; 3], 0.5)),
            [0]
        );
        assert!(
            p.pick_up(2, &Tasks(&queue), 1, &view(&ix, &[true; 3], 0.9))
                .is_empty()
        );
    }

    #[test]
    fn with_no_cached_data_the_data_aware_policies_notify_free_executors_in_turn() {
        let ix = CacheIndex::new(10, 4);
        let free = [true, false, true, true];
        let v = view(&ix, &free, 0.5);
        let mut policies: Vec<Box<dyn DispatchPolicy>> = vec![
            Box::new(MaxCacheHit::new(3200)),
            Box::new(MaxComputeUtil::new(3200)),
            Box::new(GoodCacheCompute::new(3200, 0.8, 0)),
        ];
        for p in &mut policies {
            let picks: Vec<_> = (0..4).map(|f| p.notify(&[f], &v).unwrap()).collect();
            assert_eq!(picks, [0, 2, 3, 0], "the next free one, busy 1 skipped");
        }
        // first-available takes the first free one every time.
        assert_eq!(FirstAvailable.notify(&[0], &v), Some(0));
        assert_eq!(FirstAvailable.notify(&[1], &v), Some(0));
    }

    #[test]
    fn good_cache_compute_with_a_replication_cap_waits_for_a_holder() {
        // File 0 is cached at executors 0 and 1 (two copies), both busy.
        let mut ix = CacheIndex::new(10, 3);
        ix.insert(0, 0);
        ix.insert(0, 1);
        let free = [false, false, true];
        let v = view(&ix, &free, 0.5);
        // Without a cap, max-compute-util sends it to free executor 2.
        assert_eq!(
            GoodCacheCompute::new(3200, 0.8, 0).notify(&[0], &v),
            Some(2)
        );
        assert_eq!(
            GoodCacheCompute::new(3200, 0.8, 3).notify(&[0], &v),
            Some(2)
        );
        // At two copies with replicas = 2, it waits for executor 0 or 1.
        let mut capped = GoodCacheCompute::new(3200, 0.8, 2);
        assert_eq!(capped.notify(&[0], &v), None);
        assert_eq!(
            capped.notify(&[5], &v),
            Some(2),
            "an uncached file may go anywhere"
        );
        // A pick-up by executor 2 fills only with tasks under the cap.
        let queue = q(&[&[0], &[6], &[0]]);
        assert_eq!(capped.pick_up(2, &Tasks(&queue), 3, &v), [1]);
        assert!(crate::policy::dispatch_policy("good-cache-compute[replicas=2]", 1).is_ok());
    }
}
