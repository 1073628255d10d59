//! The real bytes of a site's pool: a directory (a `tempfile::TempDir` owned by
//! the site) and a catalogue of the complete files in it with their sizes and
//! sha256, shared with the site's gridftp server.
//!
//! Only the site actor writes the catalogue; the server only reads it. A file is
//! listed only once its bytes are complete and verified, so the server never
//! hands out a partial or corrupt copy.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

/// What the catalogue knows of a complete file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// Real size on disk.
    pub size: u64,
    /// Lower-case hex sha256 of the bytes.
    pub sha256: String,
}

/// A site's pool directory and its catalogue, cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    catalog: Arc<RwLock<HashMap<String, FileMeta>>>,
}

impl Store {
    /// A store over `dir` (which must exist), empty.
    pub fn new(dir: &Path) -> Self {
        Store {
            dir: dir.to_path_buf(),
            catalog: Arc::default(),
        }
    }
    /// The pool directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// Where the complete file with pool name `enc` lives.
    pub fn path(&self, enc: &str) -> PathBuf {
        self.dir.join(enc)
    }
    /// Where a transfer writes `enc` before it is verified. Hidden and suffixed
    /// with the transfer id, so it can never be served nor collide with another
    /// transfer of the same file.
    pub fn part_path(&self, enc: &str, transfer: u64) -> PathBuf {
        self.dir.join(format!(".{enc}.{transfer}.part"))
    }
    /// The catalogue entry of `enc`, if complete.
    pub fn meta(&self, enc: &str) -> Option<FileMeta> {
        self.catalog.read().ok()?.get(enc).cloned()
    }
    /// Lists a complete, verified file.
    pub fn insert(&self, enc: &str, meta: FileMeta) {
        if let Ok(mut c) = self.catalog.write() {
            c.insert(enc.to_string(), meta);
        }
    }
    /// Unlists and deletes a file. A reader that already opened it keeps its
    /// bytes (POSIX unlink semantics), so eviction never breaks a transfer.
    pub fn remove(&self, enc: &str) {
        if let Ok(mut c) = self.catalog.write() {
            c.remove(enc);
        }
        let _ = std::fs::remove_file(self.path(enc));
    }
    /// Number of listed files.
    pub fn len(&self) -> usize {
        self.catalog.read().map(|c| c.len()).unwrap_or(0)
    }
    /// Whether nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The bytes of a generated file (workflow input or mock-job output): derived
/// from the run seed and the file name only, so any site can recompute and check
/// them.
pub fn content(seed: u64, name: &str, len: u64) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update(name.as_bytes());
    let key: [u8; 32] = h.finalize().into();
    let mut rng = ChaCha8Rng::from_seed(key);
    let mut buf = vec![0u8; len as usize];
    rng.fill_bytes(&mut buf);
    buf
}

/// Lower-case hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Writes a generated file into `store` and lists it. Blocking: call it from a
/// blocking context for large files.
pub fn write_generated(
    store: &Store,
    enc: &str,
    seed: u64,
    name: &str,
    len: u64,
) -> std::io::Result<FileMeta> {
    let bytes = content(seed, name, len);
    let meta = FileMeta {
        size: len,
        sha256: sha256_hex(&bytes),
    };
    // Written under a temporary name and renamed, so a crash never leaves a
    // short file under a listed name.
    let tmp = store.part_path(enc, u64::MAX);
    std::fs::write(&tmp, &bytes)?;
    std::fs::rename(&tmp, store.path(enc))?;
    store.insert(enc, meta.clone());
    Ok(meta)
}

/// Reads a listed file and checks its size and sha256 against the catalogue.
pub fn verify(store: &Store, enc: &str) -> Result<(), String> {
    let meta = store
        .meta(enc)
        .ok_or_else(|| "not in the pool".to_string())?;
    let bytes = std::fs::read(store.path(enc)).map_err(|e| format!("unreadable: {e}"))?;
    if bytes.len() as u64 != meta.size {
        return Err(format!("{} bytes, expected {}", bytes.len(), meta.size));
    }
    if sha256_hex(&bytes) != meta.sha256 {
        return Err("sha256 mismatch".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_files_verify_and_corruption_is_caught() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let meta = write_generated(&store, "a", 7, "a", 1000).unwrap();
        assert_eq!(meta.sha256, sha256_hex(&content(7, "a", 1000)));
        assert_ne!(content(7, "a", 16), content(8, "a", 16));
        verify(&store, "a").unwrap();
        let mut bytes = std::fs::read(store.path("a")).unwrap();
        bytes[10] ^= 1;
        std::fs::write(store.path("a"), bytes).unwrap();
        assert_eq!(verify(&store, "a"), Err("sha256 mismatch".into()));
        store.remove("a");
        assert!(store.is_empty() && !store.path("a").exists());
    }
}
