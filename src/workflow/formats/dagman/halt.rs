//! DAGMan's halt file (issue 62; HTCondor's `DagmanUtils::HaltFileName`):
//! `<dag>.halt` beside the DAG file halts the DAG (see
//! [`crate::core::Event::Halted`]). `condor_submit_dag` removes a stale
//! one as it submits the DAG; DAGMan looks for it at each turn of its
//! event loop (`condor_event_timer`). Removing it does not undo the halt:
//! HTCondor's DAGMan only resumes on its `resume` command, which gridbed
//! has not.

use std::path::{Path, PathBuf};

/// The halt file of one run's DAG, watched for.
#[derive(Debug)]
pub struct HaltFile {
    path: PathBuf,
    seen: bool,
}

impl HaltFile {
    /// The halt file of the DAG at `dag` as the DAG is submitted: a stale
    /// one is removed, as `condor_submit_dag` removes it.
    pub fn submitted(dag: &Path) -> Self {
        let mut path = dag.as_os_str().to_owned();
        path.push(".halt");
        let path = PathBuf::from(path);
        // Absent is the usual case; one that cannot be removed halts the
        // DAG at once, which says why.
        let _ = std::fs::remove_file(&path);
        HaltFile { path, seen: false }
    }

    /// Whether the file has appeared: true the first time it is seen,
    /// false ever after (a halt is not undone).
    pub fn appeared(&mut self) -> bool {
        if !self.seen && self.path.exists() {
            self.seen = true;
            return true;
        }
        false
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_halt_file_is_removed_and_a_new_one_seen_once() {
        let dir = tempfile::tempdir().unwrap();
        let dag = dir.path().join("x.dag");
        let file = dir.path().join("x.dag.halt");
        std::fs::write(&file, "").unwrap();
        let mut halt = HaltFile::submitted(&dag);
        assert_eq!(halt.path(), file);
        assert!(!file.exists(), "removed as the DAG is submitted");
        assert!(!halt.appeared());
        std::fs::write(&file, "").unwrap();
        assert!(halt.appeared());
        assert!(!halt.appeared(), "seen once");
        std::fs::remove_file(&file).unwrap();
        assert!(!halt.appeared(), "its removal undoes nothing");
    }
}
