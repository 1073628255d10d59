//! The dispatcher's location index (seed 001 §3.2: `I_map`, file → executors
//! caching it, and `E_map`, executor → files it caches), kept exact as
//! executors cache, evict, join and leave.

use rustc_hash::FxHashSet;

use crate::core::FileId;

/// An executor's index in the farm.
pub type ExecId = usize;

/// Which executor caches which file.
#[derive(Debug, Clone, Default)]
pub struct CacheIndex {
    holders: Vec<Vec<ExecId>>,
    files: Vec<FxHashSet<FileId>>,
    /// Files with at least one holder.
    distinct: usize,
    /// Cached copies over all executors.
    copies: usize,
}

impl CacheIndex {
    /// An empty index over `files` files and `executors` executors.
    pub fn new(files: usize, executors: usize) -> Self {
        CacheIndex {
            holders: vec![Vec::new(); files],
            files: vec![FxHashSet::default(); executors],
            distinct: 0,
            copies: 0,
        }
    }

    /// Makes room for executor `e` (a newly provisioned one).
    pub fn ensure_executor(&mut self, e: ExecId) {
        if self.files.len() <= e {
            self.files.resize_with(e + 1, FxHashSet::default);
        }
    }

    /// `e` now caches `f`.
    pub fn insert(&mut self, f: FileId, e: ExecId) {
        self.ensure_executor(e);
        if self.files[e].insert(f) {
            self.holders[f].push(e);
            self.copies += 1;
            if self.holders[f].len() == 1 {
                self.distinct += 1;
            }
        }
    }

    /// `e` evicted `f`.
    pub fn evict(&mut self, f: FileId, e: ExecId) {
        if self.files.get_mut(e).is_some_and(|s| s.remove(&f)) {
            self.drop_holder(f, e);
        }
    }

    fn drop_holder(&mut self, f: FileId, e: ExecId) {
        self.holders[f].retain(|&x| x != e);
        self.copies -= 1;
        if self.holders[f].is_empty() {
            self.distinct -= 1;
        }
    }

    /// `e` left the farm: every file it cached is forgotten.
    pub fn remove_executor(&mut self, e: ExecId) {
        let Some(files) = self.files.get_mut(e) else {
            return;
        };
        for f in std::mem::take(files) {
            self.drop_holder(f, e);
        }
    }

    /// Executors caching `f`.
    pub fn holders(&self, f: FileId) -> &[ExecId] {
        &self.holders[f]
    }

    /// Whether `e` caches `f`.
    pub fn cached(&self, f: FileId, e: ExecId) -> bool {
        self.files.get(e).is_some_and(|s| s.contains(&f))
    }

    /// Distinct files cached anywhere, and the copies of them over all
    /// executors: how well the caches partition the working set (seed 001
    /// §5.2.2 blames the 1 GB run's misses on copies crowding out files).
    pub fn replication(&self) -> (usize, usize) {
        (self.distinct, self.copies)
    }

    /// Files `e` caches.
    pub fn cached_count(&self, e: ExecId) -> usize {
        self.files.get(e).map_or(0, FxHashSet::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_stays_exact_through_evictions_and_departures() {
        let mut ix = CacheIndex::new(3, 2);
        ix.insert(0, 0);
        ix.insert(0, 1);
        ix.insert(0, 1);
        ix.insert(2, 1);
        assert_eq!(ix.holders(0), [0, 1]);
        assert_eq!(ix.replication(), (2, 3), "files 0 and 2; three copies");
        ix.evict(0, 0);
        ix.evict(0, 0);
        assert_eq!(ix.replication(), (2, 2), "a second evict is void");
        assert_eq!(ix.holders(0), [1]);
        assert!(
            !ix.cached(0, 0),
            "an evicted file is no hit there afterwards"
        );
        ix.insert(1, 4);
        assert_eq!(ix.holders(1), [4]);
        ix.remove_executor(1);
        assert!(ix.holders(0).is_empty() && ix.holders(2).is_empty());
        assert_eq!((ix.cached_count(1), ix.cached_count(4)), (0, 1));
        assert_eq!(ix.replication(), (1, 1));
    }
}
