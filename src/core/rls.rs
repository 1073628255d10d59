//! Replica Location Service: which sites hold a registered replica of each file
//! (seed 000 section 4: "a replica location service keeps track of the location
//! of file replicas spread over the Grid").
//!
//! Only registered replicas are listed: a copy staged under the `delete` replica
//! policy is private to its job and never appears here.

use smallvec::SmallVec;

use super::{FileId, SiteId};

/// One file's holder sites. Most files have one or two, held inline: the
/// prescript asks for every input's holders, and a list on the heap would be
/// a second cache miss per input (and an allocation per file).
pub type Holders = SmallVec<[SiteId; 2]>;

/// File → holder sites. Holder lists are tiny (a few sites), so a short list
/// per file beats a set in both memory and speed.
#[derive(Debug, Clone, Default)]
pub struct Rls {
    holders: Vec<Holders>,
    replicas: usize,
    changes: u64,
}

impl Rls {
    /// An empty catalogue for `files` files.
    pub fn new(files: usize) -> Self {
        Rls {
            holders: vec![Holders::new(); files],
            replicas: 0,
            changes: 0,
        }
    }

    /// Registers a replica; returns false if it was already listed.
    pub fn register(&mut self, file: FileId, site: SiteId) -> bool {
        let h = &mut self.holders[file];
        if h.contains(&site) {
            return false;
        }
        h.push(site);
        self.replicas += 1;
        self.changes += 1;
        true
    }

    /// Forgets a replica; returns false if it was not listed.
    pub fn unregister(&mut self, file: FileId, site: SiteId) -> bool {
        let h = &mut self.holders[file];
        match h.iter().position(|&s| s == site) {
            Some(i) => {
                h.swap_remove(i);
                self.replicas -= 1;
                self.changes += 1;
                true
            }
            None => false,
        }
    }

    /// Forgets every replica at `site` (its pool was lost); returns the
    /// files it held.
    pub fn drop_site(&mut self, site: SiteId) -> Vec<FileId> {
        let mut dropped = Vec::new();
        for (file, h) in self.holders.iter_mut().enumerate() {
            if let Some(i) = h.iter().position(|&s| s == site) {
                h.swap_remove(i);
                self.replicas -= 1;
                self.changes += 1;
                dropped.push(file);
            }
        }
        dropped
    }

    /// Sites that hold `file`.
    pub fn holders(&self, file: FileId) -> &[SiteId] {
        &self.holders[file]
    }

    /// Whether `site` holds a registered replica of `file`.
    pub fn has(&self, file: FileId, site: SiteId) -> bool {
        self.holders[file].contains(&site)
    }

    /// How many times the catalogue changed (a replica registered or
    /// forgotten): the same count twice means the same holders.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Number of registered replicas over all files.
    pub fn replicas(&self) -> usize {
        self.replicas
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_and_unregister_are_idempotent() {
        let mut r = Rls::new(2);
        assert!(r.register(0, 3));
        assert_eq!(r.changes(), 1);
        assert!(!r.register(0, 3));
        assert!(r.register(0, 1));
        assert_eq!(r.replicas(), 2);
        assert!(r.has(0, 1));
        assert!(r.unregister(0, 3));
        assert!(!r.unregister(0, 3));
        assert_eq!(r.holders(0), &[1]);
        assert!(r.holders(1).is_empty());
        assert_eq!(r.replicas(), 1);
        assert_eq!(r.changes(), 3, "only what changed the catalogue counts");
    }
}
