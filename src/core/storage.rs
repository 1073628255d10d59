//! Byte accounting of one site's storage pool: capacity, pinning and eviction.
//!
//! Seed 000 gives every site a fixed disk and an LRU deletion policy; DESIGN.md
//! adds the rules both engines must share: a write that does not fit evicts
//! unpinned files by the eviction policy, files used by a queued or running job
//! are pinned, files being written are pinned, origin copies are never evicted.
//! The live site actor wraps this with a real directory; the sim site uses it as is.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;
use rustc_hash::FxHashSet;

use super::seams::{Candidate, EvictionPolicy};
use super::{FileId, JobId};

#[derive(Debug, Clone)]
struct Entry {
    size: u64,
    /// Whether the bytes are complete (false while the first write is going on).
    present: bool,
    /// Writes in flight for this file (a re-transfer may overwrite a present copy).
    writing: u32,
    /// Jobs pinning it.
    pins: u32,
    /// Origin copy or job output still needed: never evicted nor deleted.
    kept: bool,
    /// An origin copy (initial placement): kept for the whole run.
    origin: bool,
    /// Delete as soon as nothing pins it (replica policy `delete`).
    doomed: bool,
    inserted: u64,
    last_access: u64,
    /// Reads of it (LFU); 32 bits keep the entry at 56 bytes (a pool holds
    /// hundreds of thousands).
    accesses: u32,
    /// Its eviction key while it is in the evictable index.
    key: Option<u64>,
}

impl Entry {
    fn evictable(&self) -> bool {
        self.present && !self.kept && self.pins == 0 && self.writing == 0
    }
}

/// Not enough room for a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoSpace {
    /// True when the bytes would not fit even if every evictable file went.
    pub never: bool,
}

/// How a write reservation went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reserved {
    /// Files removed to make room; the caller deletes them and tells the RLS.
    pub evicted: Vec<FileId>,
    /// The file was already complete here (the write replaces identical bytes).
    pub was_present: bool,
}

/// One site's pool: which files it holds, how many bytes, who pins what.
///
/// Evictable files (complete, unpinned, not kept, not being written) carry
/// the eviction policy's key, drawn as they become evictable. The index
/// that orders them is built the first time room must be made and kept up
/// to date from then on, so making room costs O(log n) per evicted file
/// even in pools of tens of thousands of files, and a pool that never fills
/// (most runs: hundreds of thousands of pins and releases) never pays for
/// an ordered index.
pub struct Pool {
    capacity: u64,
    used: u64,
    kept_bytes: u64,
    /// Bytes of origin copies, which no cleanup ever frees.
    origin_bytes: u64,
    evictable_bytes: u64,
    entries: HashMap<FileId, Entry>,
    /// The evictable files by key, once room had to be made.
    evictable: Option<BTreeSet<(u64, FileId)>>,
    job_pins: HashMap<JobId, Vec<FileId>>,
    /// Inputs of staged jobs that are not here yet: file → jobs…
    wanted_by: HashMap<FileId, Vec<JobId>>,
    /// …and job → the files it waited for, some of them since pinned (see
    /// `pin_waiting`).
    wants: HashMap<JobId, Vec<FileId>>,
    clock: u64,
    eviction: Box<dyn EvictionPolicy>,
    evictions: u64,
}

impl Pool {
    /// An empty pool of `capacity` bytes evicting with `eviction`.
    pub fn new(capacity: u64, eviction: Box<dyn EvictionPolicy>) -> Self {
        Pool {
            capacity,
            used: 0,
            kept_bytes: 0,
            origin_bytes: 0,
            evictable_bytes: 0,
            entries: HashMap::default(),
            evictable: None,
            job_pins: HashMap::default(),
            wanted_by: HashMap::default(),
            wants: HashMap::default(),
            clock: 0,
            eviction,
            evictions: 0,
        }
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    /// Bytes reserved or held.
    pub fn used(&self) -> u64 {
        self.used
    }
    /// Files evicted so far.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }
    /// Whether a complete copy of `file` is here.
    pub fn has(&self, file: FileId) -> bool {
        self.entries.get(&file).is_some_and(|e| e.present)
    }
    /// Whether `file` is pinned (by a job or an ongoing write).
    #[cfg(test)]
    pub fn is_pinned(&self, file: FileId) -> bool {
        self.entries
            .get(&file)
            .is_some_and(|e| e.pins > 0 || e.writing > 0)
    }
    /// Complete files held, in no particular order.
    pub fn files(&self) -> impl Iterator<Item = FileId> + '_ {
        self.entries
            .iter()
            .filter(|(_, e)| e.present)
            .map(|(&f, _)| f)
    }

    /// Whether `bytes` more could ever fit here: beside the origin copies,
    /// once every other file is gone (evicted, or released by in-place
    /// cleanup: a kept job output is kept only while jobs may read it).
    pub fn could_ever_fit(&self, bytes: u64) -> bool {
        bytes <= self.capacity.saturating_sub(self.origin_bytes)
    }

    /// Whether a job's `files` (file, size: its inputs and outputs) could
    /// ever be here all at once: the ones that are not origin copies here
    /// must fit beside the origin copies.
    pub fn could_ever_hold(&self, inputs: impl IntoIterator<Item = (FileId, u64)>) -> bool {
        let need: u64 = inputs
            .into_iter()
            .filter(|(f, _)| !self.entries.get(f).is_some_and(|e| e.origin))
            .map(|(_, size)| size)
            .sum();
        self.could_ever_fit(need)
    }

    /// Changes one entry and keeps the evictable index and byte sums true.
    fn update(&mut self, file: FileId, change: impl FnOnce(&mut Entry)) {
        let Some(e) = self.entries.get_mut(&file) else {
            return;
        };
        let was_kept = e.kept;
        let was_evictable = e.key.is_some();
        if let Some(key) = e.key.take() {
            if let Some(index) = self.evictable.as_mut() {
                index.remove(&(key, file));
            }
            self.evictable_bytes -= e.size;
        }
        change(e);
        if was_evictable && !e.evictable() {
            self.eviction.forget(file);
        }
        if e.kept && !was_kept {
            self.kept_bytes += e.size;
        } else if was_kept && !e.kept {
            self.kept_bytes -= e.size;
        }
        if e.evictable() {
            let key = self.eviction.key(&Candidate {
                file,
                size: e.size,
                inserted: e.inserted,
                last_access: e.last_access,
                accesses: u64::from(e.accesses),
            });
            e.key = Some(key);
            if let Some(index) = self.evictable.as_mut() {
                index.insert((key, file));
            }
            self.evictable_bytes += e.size;
        }
    }

    /// Places an origin copy that is never evicted (initial placement).
    pub fn place_origin(&mut self, file: FileId, size: u64) -> Result<(), NoSpace> {
        self.begin_write(file, size)?;
        self.commit_write(file);
        self.keep(file);
        if self.entries.get(&file).is_some_and(|e| !e.origin) {
            self.origin_bytes += size;
            self.update(file, |e| e.origin = true);
        }
        Ok(())
    }

    /// Places a job's output left by an interrupted run (`gridbed resume`):
    /// kept, as the job had just written it.
    pub fn place_output(&mut self, file: FileId, size: u64) -> Result<(), NoSpace> {
        self.begin_write(file, size)?;
        self.commit_write(file);
        self.keep(file);
        Ok(())
    }

    /// Marks `file` as an origin copy (a job's output is the origin of its data).
    pub fn keep(&mut self, file: FileId) {
        self.update(file, |e| {
            e.kept = true;
            e.doomed = false;
        });
    }

    /// The workflow no longer needs `file` (every job reading it ended): a
    /// job output becomes a cached copy, evicted when room is needed; an
    /// origin copy stays.
    pub fn unkeep(&mut self, file: FileId) {
        self.update(file, |e| e.kept = e.origin);
    }

    /// Starts a job's staging here: pins its inputs that are present and
    /// remembers the others, so that each is pinned for the job the moment it
    /// is complete here, whichever transfer brought it.
    pub fn pin_job(&mut self, job: JobId, inputs: &[FileId]) {
        let mut pins = self.job_pins.remove(&job).unwrap_or_default();
        // An input named twice is pinned once. A long list is checked
        // against a set: scanning the pins for each input is quadratic in
        // a job reading hundreds of files.
        let long = inputs.len() > 16;
        let mut pinned: FxHashSet<FileId> = match long {
            true => pins.iter().copied().collect(),
            false => FxHashSet::default(),
        };
        for &f in inputs {
            let first = match long {
                true => !pinned.contains(&f),
                false => !pins.contains(&f),
            };
            if !first {
                continue;
            }
            // Only complete files: one still being written may yet be aborted.
            if self.has(f) {
                self.update(f, |e| {
                    e.pins += 1;
                    e.doomed = false;
                });
                pins.push(f);
                if long {
                    pinned.insert(f);
                }
            } else {
                let w = self.wanted_by.entry(f).or_default();
                if !w.contains(&job) {
                    w.push(job);
                    self.wants.entry(job).or_default().push(f);
                }
            }
        }
        self.job_pins.insert(job, pins);
    }

    /// Pins a newly complete `file` for every staged job waiting for it.
    ///
    /// The job's own list of wanted files keeps `file`, and the job's pins
    /// are not searched for it: each cost a scan of lists hundreds long
    /// per file (8% of a `bench sim` run's instructions). A wanted
    /// file is never pinned for its job already (`pin_job` wants only what
    /// it could not pin), and a stale want is harmless where it is read
    /// (`release_job`).
    fn pin_waiting(&mut self, file: FileId) {
        let Some(jobs) = self.wanted_by.remove(&file) else {
            return;
        };
        for job in jobs {
            let Some(pins) = self.job_pins.get_mut(&job) else {
                continue;
            };
            pins.push(file);
            self.update(file, |e| {
                e.pins += 1;
                e.doomed = false;
            });
        }
    }

    /// Ends a job here: unpins its files, marks `delete` for removal, and returns
    /// the files that went (nothing else pinned them).
    pub fn release_job(&mut self, job: JobId, delete: &[FileId]) -> Vec<FileId> {
        for f in self.job_pins.remove(&job).unwrap_or_default() {
            self.update(f, |e| e.pins = e.pins.saturating_sub(1));
        }
        for f in self.wants.remove(&job).unwrap_or_default() {
            if let Some(jobs) = self.wanted_by.get_mut(&f) {
                jobs.retain(|&j| j != job);
                if jobs.is_empty() {
                    self.wanted_by.remove(&f);
                }
            }
        }
        delete.iter().copied().filter(|&f| self.delete(f)).collect()
    }

    /// Cache maintenance evicts `file` (counted as an eviction): see
    /// [`delete`](Self::delete).
    pub fn evict(&mut self, file: FileId) -> bool {
        if self
            .entries
            .get(&file)
            .is_some_and(|e| !e.kept && !e.doomed)
        {
            self.evictions += 1;
        }
        self.delete(file)
    }

    /// Deletes `file` unless it is kept: now (true) or, if pinned or being
    /// written, once nothing holds it.
    pub fn delete(&mut self, file: FileId) -> bool {
        let Some(e) = self.entries.get_mut(&file) else {
            return false;
        };
        if e.kept {
            return false;
        }
        e.doomed = true;
        if e.pins == 0 && e.writing == 0 {
            self.remove(file);
            return true;
        }
        false
    }

    /// Reserves room for writing `file` (`size` bytes), evicting unpinned files if
    /// needed. The file is pinned by the write until [`commit_write`](Self::commit_write)
    /// or [`abort_write`](Self::abort_write).
    pub fn begin_write(&mut self, file: FileId, size: u64) -> Result<Reserved, NoSpace> {
        if let Some(e) = self.entries.get(&file) {
            // Same immutable file: no new room needed, the write replaces it.
            let was_present = e.present;
            self.update(file, |e| e.writing += 1);
            return Ok(Reserved {
                evicted: Vec::new(),
                was_present,
            });
        }
        if !self.could_ever_fit(size) {
            return Err(NoSpace { never: true });
        }
        let free = self.capacity.saturating_sub(self.used);
        if free + self.evictable_bytes < size {
            return Err(NoSpace { never: false });
        }
        let evicted = self.make_room(size);
        self.clock += 1;
        self.used += size;
        self.entries.insert(
            file,
            Entry {
                size,
                present: false,
                writing: 1,
                pins: 0,
                kept: false,
                origin: false,
                doomed: false,
                inserted: self.clock,
                last_access: self.clock,
                accesses: 0,
                key: None,
            },
        );
        Ok(Reserved {
            evicted,
            was_present: false,
        })
    }

    /// The write completed and verified: the file is present, and pinned for
    /// the staged jobs that want it.
    pub fn commit_write(&mut self, file: FileId) {
        self.clock += 1;
        let now = self.clock;
        self.update(file, |e| {
            e.writing = e.writing.saturating_sub(1);
            e.present = true;
            e.last_access = now;
        });
        self.pin_waiting(file);
    }

    /// The write failed: give back its room unless an older copy is still here.
    pub fn abort_write(&mut self, file: FileId) {
        self.update(file, |e| e.writing = e.writing.saturating_sub(1));
        if self
            .entries
            .get(&file)
            .is_some_and(|e| !e.present && e.writing == 0)
        {
            self.remove(file);
        }
    }

    /// The site crashed: every job's pins and wanted files are forgotten
    /// (its jobs are gone); with `lose`, every file too, origin copies and
    /// writes in flight included. Returns the complete files removed.
    pub fn crash(&mut self, lose: bool) -> Vec<FileId> {
        for (_, files) in std::mem::take(&mut self.job_pins) {
            for f in files {
                self.update(f, |e| e.pins = e.pins.saturating_sub(1));
            }
        }
        self.wants.clear();
        self.wanted_by.clear();
        if !lose {
            return Vec::new();
        }
        let gone = self.files().collect();
        self.entries.clear();
        self.evictable = None;
        self.used = 0;
        self.kept_bytes = 0;
        self.origin_bytes = 0;
        self.evictable_bytes = 0;
        gone
    }

    /// The disk shrinks (or grows) to `capacity`: evictable files go, by
    /// the eviction policy, until the rest fits; returns them. What is kept
    /// or pinned stays even beyond the new capacity, and writes fail until
    /// it fits.
    pub fn set_capacity(&mut self, capacity: u64) -> Vec<FileId> {
        self.capacity = capacity;
        self.make_room(0)
    }

    /// Evicts files by the policy's key until `size` more bytes fit (or
    /// nothing evictable is left); returns them. A policy that chooses its
    /// victims itself is asked first; a choice that is not evictable or
    /// frees too little is not taken (the keys decide then).
    fn make_room(&mut self, size: u64) -> Vec<FileId> {
        let mut evicted = Vec::new();
        let need = (self.used + size).saturating_sub(self.capacity);
        if need > 0
            && self.eviction.chooses()
            && let Some(chosen) = self.eviction.victims(need)
        {
            let mut freed = 0;
            let mut seen = FxHashSet::default();
            let valid = chosen.iter().all(|f| {
                let e = self.entries.get(f).filter(|e| e.key.is_some());
                freed += e.map_or(0, |e| e.size);
                e.is_some() && seen.insert(*f)
            });
            if valid && freed >= need {
                for victim in chosen {
                    self.remove(victim);
                    self.evictions += 1;
                    evicted.push(victim);
                }
            }
        }
        while self.used + size > self.capacity {
            let entries = &self.entries;
            let index = self.evictable.get_or_insert_with(|| {
                entries
                    .iter()
                    .filter_map(|(&f, e)| Some((e.key?, f)))
                    .collect()
            });
            let Some(&(_, victim)) = index.first() else {
                break;
            };
            self.remove(victim);
            self.evictions += 1;
            evicted.push(victim);
        }
        evicted
    }

    /// A job read `file`: recency and frequency for the eviction policy.
    pub fn touch(&mut self, file: FileId) {
        self.clock += 1;
        let now = self.clock;
        self.update(file, |e| {
            e.last_access = now;
            e.accesses = e.accesses.saturating_add(1);
        });
    }

    fn remove(&mut self, file: FileId) {
        if let Some(e) = self.entries.remove(&file) {
            self.used -= e.size;
            if e.kept {
                self.kept_bytes -= e.size;
            }
            if let Some(key) = e.key {
                if let Some(index) = self.evictable.as_mut() {
                    index.remove(&(key, file));
                }
                self.evictable_bytes -= e.size;
                self.eviction.forget(file);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::eviction::Lru;

    #[test]
    fn an_entry_stays_small() {
        // Pools hold one entry a copy: hundreds of thousands in a large run.
        assert!(std::mem::size_of::<Entry>() <= 56);
    }

    fn pool(cap: u64) -> Pool {
        Pool::new(cap, Box::new(Lru))
    }

    fn write(p: &mut Pool, f: FileId, size: u64) -> Vec<FileId> {
        let r = p.begin_write(f, size).unwrap();
        p.commit_write(f);
        r.evicted
    }

    /// Chooses its victims: the evictable files it was told of, newest
    /// first, or an impossible answer when `bad`.
    struct Chooser {
        evictable: Vec<FileId>,
        bad: bool,
    }

    impl EvictionPolicy for Chooser {
        fn key(&mut self, c: &Candidate) -> u64 {
            self.evictable.retain(|&f| f != c.file);
            self.evictable.push(c.file);
            0
        }
        fn forget(&mut self, file: FileId) {
            self.evictable.retain(|&f| f != file);
        }
        fn chooses(&self) -> bool {
            true
        }
        fn victims(&mut self, _need: u64) -> Option<Vec<FileId>> {
            if self.bad {
                return Some(vec![99]);
            }
            self.evictable.last().map(|&f| vec![f])
        }
    }

    #[test]
    fn a_policy_that_chooses_is_told_what_is_evictable_and_its_choice_is_checked() {
        let chooser = |bad| Chooser {
            evictable: Vec::new(),
            bad,
        };
        let mut p = Pool::new(30, Box::new(chooser(false)));
        write(&mut p, 1, 10);
        write(&mut p, 2, 10);
        p.pin_job(7, &[2]);
        write(&mut p, 3, 10);
        // 3 is the newest evictable file (2 is pinned: forgotten).
        assert_eq!(write(&mut p, 4, 10), vec![3]);
        p.release_job(7, &[]);
        assert_eq!(
            write(&mut p, 5, 10),
            vec![2],
            "unpinned: evictable again, newest"
        );
        check(&p);
        // A choice of a file that is not evictable here is not taken: the
        // keys (file order at equal keys) decide.
        let mut p = Pool::new(20, Box::new(chooser(true)));
        write(&mut p, 1, 10);
        write(&mut p, 2, 10);
        assert_eq!(write(&mut p, 3, 10), vec![1]);
        check(&p);
    }

    #[test]
    fn evicts_least_recently_used_first() {
        let mut p = pool(30);
        write(&mut p, 1, 10);
        write(&mut p, 2, 10);
        write(&mut p, 3, 10);
        p.touch(1);
        // Nothing had to go yet: no index was built.
        assert!(p.evictable.is_none());
        assert_eq!(write(&mut p, 4, 15), vec![2, 3]);
        assert!(p.evictable.is_some());
        check(&p);
        assert!(p.has(1) && p.has(4) && !p.has(2));
        assert_eq!(p.used(), 25);
        assert_eq!(p.evictions(), 2);
    }

    #[test]
    fn never_evicts_pinned_kept_or_writing_files() {
        let mut p = pool(30);
        p.place_origin(1, 10).unwrap();
        write(&mut p, 2, 10);
        p.pin_job(7, &[2]);
        p.begin_write(3, 10).unwrap(); // in flight
        assert_eq!(p.begin_write(4, 5), Err(NoSpace { never: false }));
        assert_eq!(p.begin_write(4, 25), Err(NoSpace { never: true }));
        p.release_job(7, &[]);
        assert_eq!(p.begin_write(4, 5).unwrap().evicted, vec![2]);
    }

    #[test]
    fn delete_waits_for_the_last_pin() {
        let mut p = pool(100);
        write(&mut p, 1, 10);
        p.pin_job(1, &[1]);
        p.pin_job(2, &[1]);
        assert!(p.release_job(1, &[1]).is_empty());
        assert!(p.has(1));
        assert_eq!(p.release_job(2, &[1]), vec![1]);
        assert!(!p.has(1));
        assert_eq!(p.used(), 0);
    }

    #[test]
    fn arriving_files_are_pinned_only_for_staged_jobs() {
        let mut p = pool(20);
        p.pin_job(5, &[1]);
        p.pin_job(6, &[1]);
        p.release_job(6, &[]); // job 6 went elsewhere before the file came
        p.begin_write(1, 10).unwrap();
        p.commit_write(1);
        assert!(p.is_pinned(1));
        p.release_job(5, &[]);
        assert!(!p.is_pinned(1), "only job 5's pin was taken");
    }

    #[test]
    fn a_write_in_flight_is_not_pinned_by_a_job_and_an_abort_leaves_no_stale_pin() {
        let mut p = pool(20);
        p.begin_write(1, 10).unwrap();
        p.pin_job(9, &[1]);
        p.abort_write(1);
        write(&mut p, 1, 10);
        p.release_job(9, &[]);
        assert!(!p.is_pinned(1));
        assert_eq!(write(&mut p, 2, 15), vec![1]);
    }

    /// Recomputes the derived sums and the index from the entries.
    fn check(p: &Pool) {
        let used: u64 = p.entries.values().map(|e| e.size).sum();
        let kept: u64 = p.entries.values().filter(|e| e.kept).map(|e| e.size).sum();
        let idx: BTreeSet<(u64, FileId)> = p
            .entries
            .iter()
            .filter(|(_, e)| e.evictable())
            .map(|(&f, e)| (e.key.unwrap(), f))
            .collect();
        let ev: u64 = idx.iter().map(|(_, f)| p.entries[f].size).sum();
        assert_eq!((p.used, p.kept_bytes, p.evictable_bytes), (used, kept, ev));
        assert!(p.entries.values().all(|e| e.key.is_some() == e.evictable()));
        if let Some(index) = &p.evictable {
            assert_eq!(index, &idx);
        }
        assert!(p.used <= p.capacity);
    }

    #[test]
    fn random_operations_keep_the_index_and_sums_true() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let mut p = pool(100);
        for _ in 0..20_000 {
            let f = rng.random_range(0..30);
            let job = rng.random_range(0..5);
            match rng.random_range(0..8) {
                0 => {
                    if p.begin_write(f, rng.random_range(1..30)).is_ok() {
                        if rng.random_bool(0.8) {
                            p.commit_write(f);
                        } else {
                            p.abort_write(f);
                        }
                    }
                }
                1 => p.pin_job(job, &[f, (f + 1) % 30]),
                2 => p.touch(f),
                3 => drop(p.release_job(job, &[f])),
                4 => p.touch(f),
                5 => p.keep(f),
                6 => drop(p.release_job(job, &[])),
                _ => {
                    let _ = p.begin_write(f, 5);
                }
            }
            check(&p);
        }
    }

    #[test]
    fn aborted_write_gives_room_back() {
        let mut p = pool(20);
        p.begin_write(1, 10).unwrap();
        p.abort_write(1);
        assert_eq!(p.used(), 0);
        assert!(!p.has(1));
    }

    proptest::proptest! {
        /// Pins against a plain model: a file is pinned while it is being
        /// written, or while it is here and some staged job lists it. Few
        /// files and long input lists make repeats, waits for files still
        /// in flight, aborted writes and evictions common; lists over 16
        /// take the set path.
        #[test]
        fn a_file_is_pinned_while_a_staged_job_lists_it(
            ops in proptest::collection::vec(
                (0u8..5, 0usize..4, 0usize..10, 1u64..6,
                 proptest::collection::vec(0usize..10, 0..40)),
                0..60,
            ),
        ) {
            use std::collections::{BTreeMap, BTreeSet};
            let mut p = pool(20);
            let mut present = BTreeSet::new();
            let mut writing = BTreeSet::new();
            let mut staged: BTreeMap<JobId, Vec<FileId>> = BTreeMap::new();
            for (kind, job, f, size, inputs) in ops {
                match kind {
                    0 => {
                        p.pin_job(job, &inputs);
                        staged.entry(job).or_default().extend(inputs);
                    }
                    1 if !writing.contains(&f) => {
                        if let Ok(r) = p.begin_write(f, size) {
                            writing.insert(f);
                            for gone in r.evicted {
                                let listed = staged.values().any(|i| i.contains(&gone));
                                proptest::prop_assert!(!listed && !writing.contains(&gone));
                                proptest::prop_assert!(present.remove(&gone));
                            }
                        }
                    }
                    2 if writing.remove(&f) => {
                        p.commit_write(f);
                        present.insert(f);
                    }
                    3 if writing.remove(&f) => p.abort_write(f),
                    4 => {
                        p.release_job(job, &[]);
                        staged.remove(&job);
                    }
                    _ => {}
                }
                for f in 0..10 {
                    proptest::prop_assert_eq!(p.has(f), present.contains(&f), "{}", f);
                    let listed = staged.values().any(|i| i.contains(&f));
                    let pinned = writing.contains(&f) || (present.contains(&f) && listed);
                    proptest::prop_assert_eq!(p.is_pinned(f), pinned, "{}", f);
                }
            }
        }
    }
}
