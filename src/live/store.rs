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
    /// Lists the verified part file of `transfer` as `enc` (an atomic
    /// rename into place).
    pub fn commit_part(&self, enc: &str, transfer: u64, meta: FileMeta) -> std::io::Result<()> {
        std::fs::rename(self.part_path(enc, transfer), self.path(enc))?;
        self.insert(enc, meta);
        Ok(())
    }
    /// Deletes the part file of `transfer`.
    pub fn drop_part(&self, enc: &str, transfer: u64) {
        let _ = std::fs::remove_file(self.part_path(enc, transfer));
    }
    /// The listed files' pool names.
    pub fn names(&self) -> Vec<String> {
        self.catalog
            .read()
            .map(|c| c.keys().cloned().collect())
            .unwrap_or_default()
    }
    /// Number of listed files.
    #[cfg(any(test, feature = "internals"))]
    pub fn len(&self) -> usize {
        self.catalog.read().map(|c| c.len()).unwrap_or(0)
    }
    /// Whether nothing is listed.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Seeded generator of a generated file's bytes: derived from the run seed and
/// the file name only, so any site can recompute and check them.
fn content_rng(seed: u64, name: &str) -> ChaCha8Rng {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update(name.as_bytes());
    ChaCha8Rng::from_seed(h.finalize().into())
}

/// The bytes of a generated file (workflow input or mock-job output), whole.
/// For tests and checks; writing goes through [`write_generated`], which
/// streams.
#[cfg(any(test, feature = "internals"))]
pub fn content(seed: u64, name: &str, len: u64) -> Vec<u8> {
    let mut buf = vec![0u8; len as usize];
    content_rng(seed, name).fill_bytes(&mut buf);
    buf
}

/// Generates a file's bytes a step at a time, handing each to `sink`; the
/// sha256 (hex) of them all.
fn generate(
    seed: u64,
    name: &str,
    len: u64,
    mut sink: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<String> {
    let mut rng = content_rng(seed, name);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; STEP.min(len as usize)];
    let mut left = len;
    while left > 0 {
        let n = (left as usize).min(STEP);
        rng.fill_bytes(&mut buf[..n]);
        hasher.update(&buf[..n]);
        sink(&buf[..n])?;
        left -= n as u64;
    }
    Ok(hex::encode(hasher.finalize()))
}

/// The sha256 (hex) of a generated file's bytes, computed in steps.
pub fn generated_sha256(seed: u64, name: &str, len: u64) -> String {
    generate(seed, name, len, |_| Ok(())).unwrap_or_default()
}

/// Lower-case hex sha256 of `bytes`.
#[cfg(any(test, feature = "internals"))]
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Bytes generated and hashed per step, so files of any size stream.
const STEP: usize = 1 << 20;

/// Writes a generated file into `store` and lists it. Blocking: call it from a
/// blocking context.
pub fn write_generated(
    store: &Store,
    enc: &str,
    seed: u64,
    name: &str,
    len: u64,
) -> std::io::Result<FileMeta> {
    use std::io::Write;
    // Written under a temporary name and renamed, so a crash never leaves a
    // short file under a listed name.
    let tmp = store.part_path(enc, u64::MAX);
    let mut out = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
    let sha256 = generate(seed, name, len, |b| out.write_all(b))?;
    out.into_inner().map_err(|e| e.into_error())?;
    std::fs::rename(&tmp, store.path(enc))?;
    let meta = FileMeta { size: len, sha256 };
    store.insert(enc, meta.clone());
    Ok(meta)
}

/// Size and sha256 of a file on disk, read in steps.
pub fn hash_file(path: &Path) -> std::io::Result<FileMeta> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; STEP];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        size += n as u64;
    }
    Ok(FileMeta {
        size,
        sha256: hex::encode(hasher.finalize()),
    })
}

/// Re-reads a listed file and checks its size and sha256 against the
/// catalogue.
pub fn verify(store: &Store, enc: &str) -> Result<(), String> {
    let meta = store
        .meta(enc)
        .ok_or_else(|| "not in the pool".to_string())?;
    let found = hash_file(&store.path(enc)).map_err(|e| format!("unreadable: {e}"))?;
    if found.size != meta.size {
        return Err(format!("{} bytes, expected {}", found.size, meta.size));
    }
    if found.sha256 != meta.sha256 {
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
        let big = write_generated(&store, "b", 7, "b", 3 * STEP as u64 + 5).unwrap();
        assert_eq!(
            big.sha256,
            sha256_hex(&content(7, "b", 3 * STEP as u64 + 5))
        );
        assert_eq!(hash_file(&store.path("b")).unwrap(), big);
        assert_ne!(content(7, "a", 16), content(8, "a", 16));
        verify(&store, "a").unwrap();
        let mut bytes = std::fs::read(store.path("a")).unwrap();
        bytes[10] ^= 1;
        std::fs::write(store.path("a"), bytes).unwrap();
        assert_eq!(verify(&store, "a"), Err("sha256 mismatch".into()));
        store.remove("a");
        store.remove("b");
        assert!(store.is_empty() && !store.path("a").exists());
    }

    #[test]
    fn a_generated_files_hash_is_known_without_its_bytes_in_memory() {
        for len in [0, 1, 5000, (1 << 20) + 7] {
            let sha = sha256_hex(&content(9, "a/b", len));
            assert_eq!(generated_sha256(9, "a/b", len), sha, "{len} bytes");
        }
    }
}
