//! An eviction policy answered by an external program (the `evict`
//! decision): when a write needs room, the pool's evictable files with
//! what LRU, LFU and FIFO weigh; it answers the files to evict.

use std::sync::Arc;

use rand::RngCore;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::Program;
use crate::core::{FileId, SiteId};
use crate::policy::{Candidate, Context, EvictionPolicy};

/// `external[cmd=…]` as the eviction policy of one site's pool.
pub struct ExternalEviction {
    program: Arc<Program>,
    site: Option<SiteId>,
    rng: ChaCha8Rng,
}

impl ExternalEviction {
    /// The eviction policy of an `external[cmd=…, timeout=…]` eviction.
    pub(in crate::policy) fn build(c: &Context<'_>) -> Result<Box<dyn EvictionPolicy>, String> {
        Ok(Box::new(ExternalEviction {
            program: super::program_of(c, &["evict"])?,
            site: c.site(),
            rng: c.rng(),
        }))
    }
}

impl EvictionPolicy for ExternalEviction {
    /// Unused: the program chooses the victims itself.
    fn key(&mut self, _candidate: &Candidate) -> u64 {
        0
    }

    fn chooses(&self) -> bool {
        true
    }

    fn victims(&mut self, candidates: &[Candidate], need: u64) -> Option<Vec<FileId>> {
        let list: Vec<Value> = candidates
            .iter()
            .map(|c| {
                json!({"id": c.file, "size": c.size, "inserted": c.inserted,
                       "last_access": c.last_access, "accesses": c.accesses})
            })
            .collect();
        let request = json!({
            "type": "evict", "site": self.site, "need": need,
            "candidates": list, "draw": self.rng.next_u32(),
        });
        let site = self.site.map_or(String::new(), |s| format!(" at site {s}"));
        let what = || format!("evict{site} ({need} bytes needed)");
        let answer = self.program.ask(what, request)?;
        let files: Option<Vec<FileId>> = answer
            .get("evict")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().map(|v| v.as_u64().map(|f| f as FileId)).collect());
        let mut freed = 0;
        let mut seen = Vec::new();
        let problem = match &files {
            None => Some("no list of file ids".to_string()),
            Some(files) => {
                files
                    .iter()
                    .find_map(|&f| match candidates.iter().find(|c| c.file == f) {
                        None => Some(format!("file {f}, which is not an evictable file here")),
                        Some(_) if seen.contains(&f) => Some(format!("file {f} twice")),
                        Some(c) => {
                            seen.push(f);
                            freed += c.size;
                            None
                        }
                    })
            }
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
                    format!("answered {p}: expected {{\"evict\": [FILE IDS]}} from the candidates, freeing at least `need` bytes"),
                );
                None
            }
        }
    }
}
