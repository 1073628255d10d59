//! An eviction policy answered by an external program (the `evict`
//! decision). The program keeps its own copy of the pool's evictable files:
//! each request carries what changed since the previous one (`changed`:
//! files that became evictable or were written or read, with what LRU, LFU
//! and FIFO weigh; `gone`: files no longer evictable), so a request costs
//! what changed, not the pool's size. It answers the files to evict.

use std::sync::Arc;

use rand::RngCore;
use rand_chacha::ChaCha8Rng;
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{Value, json};

use super::Program;
use crate::core::{FileId, SiteId};
use crate::policy::{Candidate, Context, EvictionPolicy};

/// `external[cmd=…]` as the eviction policy of one site's pool.
pub struct ExternalEviction {
    program: Arc<Program>,
    site: Option<SiteId>,
    rng: ChaCha8Rng,
    /// Evictable files now, and their sizes (to check an answer).
    evictable: FxHashMap<FileId, u64>,
    /// Changed since the last request.
    changed: FxHashMap<FileId, Candidate>,
    /// No longer evictable since the last request.
    gone: FxHashSet<FileId>,
}

impl ExternalEviction {
    /// The eviction policy of an `external[cmd=…, timeout=…]` eviction.
    pub(in crate::policy) fn build(c: &Context<'_>) -> Result<Box<dyn EvictionPolicy>, String> {
        Ok(Box::new(ExternalEviction {
            program: super::program_of(c, &["evict"])?,
            site: c.site(),
            rng: c.rng(),
            evictable: FxHashMap::default(),
            changed: FxHashMap::default(),
            gone: FxHashSet::default(),
        }))
    }
}

impl EvictionPolicy for ExternalEviction {
    /// Notes the change for the next request (the program ranks).
    fn key(&mut self, candidate: &Candidate) -> u64 {
        self.evictable.insert(candidate.file, candidate.size);
        self.gone.remove(&candidate.file);
        self.changed.insert(candidate.file, *candidate);
        0
    }

    fn forget(&mut self, file: FileId) {
        if self.evictable.remove(&file).is_some() {
            self.changed.remove(&file);
            self.gone.insert(file);
        }
    }

    fn chooses(&self) -> bool {
        true
    }

    fn victims(&mut self, need: u64) -> Option<Vec<FileId>> {
        let mut changed: Vec<Candidate> = self.changed.drain().map(|(_, c)| c).collect();
        changed.sort_unstable_by_key(|c| c.file);
        let changed: Vec<Value> = changed
            .iter()
            .map(|c| {
                json!({"id": c.file, "size": c.size, "inserted": c.inserted,
                       "last_access": c.last_access, "accesses": c.accesses})
            })
            .collect();
        let mut gone: Vec<FileId> = self.gone.drain().collect();
        gone.sort_unstable();
        let request = json!({
            "type": "evict", "site": self.site, "need": need,
            "changed": changed, "gone": gone, "draw": self.rng.next_u32(),
        });
        let site = self.site.map_or(String::new(), |s| format!(" at site {s}"));
        let what = || format!("evict{site} ({need} bytes needed)");
        let answer = self.program.ask(what, &request)?;
        let files: Option<Vec<FileId>> = super::ids(&answer, "evict");
        let mut freed = 0;
        let mut seen = FxHashSet::default();
        let problem = match &files {
            None => Some("no list of file ids".to_string()),
            Some(files) => files.iter().find_map(|&f| match self.evictable.get(&f) {
                None => Some(format!("file {f}, which is not an evictable file here")),
                Some(_) if !seen.insert(f) => Some(format!("file {f} twice")),
                Some(size) => {
                    freed += size;
                    None
                }
            }),
        };
        let problem = problem.or_else(|| {
            (freed < need)
                .then(|| format!("files that free {freed} bytes, fewer than the {need} needed"))
        });
        match problem {
            None => files,
            Some(p) => {
                self.program.refuse(
                    what(),
                    format!("answered {p}: expected {{\"evict\": [FILE IDS]}} among the evictable files, freeing at least `need` bytes"),
                );
                None
            }
        }
    }
}
