//! `gridbed audit <control.db>`: after a live run whose pools were kept
//! (`--keep-pools DIR`), checks that the replica catalogue the control
//! database holds and every pool on disk agree: each registered replica is on
//! its site's disk with its real size and the sha256 of the bytes the run
//! generates for that file (contents derive from the seed and the name), and
//! every file on a site's disk is registered there. Each difference is
//! reported; partial writes (`.part`) left by a crash are differences too.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::{names, store};
use crate::db::{self, DbError};

/// One way the catalogue and the disks disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// A registered replica is not on its site's disk.
    Missing {
        /// File name.
        file: String,
        /// Site name.
        site: String,
    },
    /// On disk with another size than the run's.
    WrongSize {
        /// File name.
        file: String,
        /// Site name.
        site: String,
        /// Real bytes the catalogue says.
        expected: u64,
        /// Real bytes on disk.
        found: u64,
    },
    /// On disk with the right size but other bytes.
    Corrupt {
        /// File name.
        file: String,
        /// Site name.
        site: String,
    },
    /// On a site's disk but not registered there (or not a pool file).
    Unregistered {
        /// The file's name on disk.
        name: String,
        /// Site name.
        site: String,
    },
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Difference::Missing { file, site } => {
                write!(f, "{site}: `{file}` is registered but not on disk")
            }
            Difference::WrongSize {
                file,
                site,
                expected,
                found,
            } => write!(
                f,
                "{site}: `{file}` has {found} bytes on disk, {expected} expected"
            ),
            Difference::Corrupt { file, site } => {
                write!(f, "{site}: `{file}` does not match its sha256")
            }
            Difference::Unregistered { name, site } => {
                write!(f, "{site}: `{name}` is on disk but not registered")
            }
        }
    }
}

/// Why an audit could not be made.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The database is missing, not gridbed's, or from an older gridbed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The run did not keep its pools.
    #[error(
        "{0}: the run kept no pools on disk; run it with `gridbed run --keep-pools DIR --db FILE`"
    )]
    NoPools(PathBuf),
    /// The run kept its pools but never wrote its replica catalogue: it
    /// was killed (or still runs).
    #[error(
        "{path}: the run kept its pools at {} but ended before writing its replica catalogue (killed, or still running): resume it with `gridbed resume`, then audit",
        dirs.join(", ")
    )]
    Unfinished {
        /// The database.
        path: PathBuf,
        /// Its pools.
        dirs: Vec<String>,
    },
    /// A pool directory could not be read.
    #[error("{dir}: {message}")]
    Unreadable {
        /// The directory.
        dir: PathBuf,
        /// Why.
        message: String,
    },
}

/// Audits the run of the control database at `path`: every difference
/// between its replica catalogue and the pools on disk (none: they agree).
pub fn audit(path: &Path) -> Result<Vec<Difference>, AuditError> {
    let state = db::final_state(path)?;
    if state.pools.is_empty() {
        return Err(AuditError::NoPools(path.to_path_buf()));
    }
    if state.replicas.is_empty() {
        return Err(AuditError::Unfinished {
            path: path.to_path_buf(),
            dirs: (state.pools.iter())
                .map(|(_, d)| d.display().to_string())
                .collect(),
        });
    }
    let mut differences = Vec::new();
    for (site, dir) in &state.pools {
        let site_name = state.sites.get(*site).cloned().unwrap_or_default();
        let mut on_disk: BTreeSet<String> = std::fs::read_dir(dir)
            .map_err(|e| AuditError::Unreadable {
                dir: dir.clone(),
                message: e.to_string(),
            })?
            .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
            .collect();
        for (file, _, real) in state.replicas.iter().filter(|r| r.1 == *site) {
            let enc = names::encode(file);
            if !on_disk.remove(&enc) {
                differences.push(Difference::Missing {
                    file: file.clone(),
                    site: site_name.clone(),
                });
                continue;
            }
            let meta = store::hash_file(&dir.join(&enc)).map_err(|e| AuditError::Unreadable {
                dir: dir.clone(),
                message: format!("{enc}: {e}"),
            })?;
            if meta.size != *real {
                differences.push(Difference::WrongSize {
                    file: file.clone(),
                    site: site_name.clone(),
                    expected: *real,
                    found: meta.size,
                });
            } else if meta.sha256
                != store::generated_sha256(
                    state.seed,
                    state.contents.get(file).unwrap_or(file),
                    *real,
                )
            {
                differences.push(Difference::Corrupt {
                    file: file.clone(),
                    site: site_name.clone(),
                });
            }
        }
        differences.extend(on_disk.into_iter().map(|name| Difference::Unregistered {
            name,
            site: site_name.clone(),
        }));
    }
    Ok(differences)
}
