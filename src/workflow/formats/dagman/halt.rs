//! DAGMan's halt file (issue 62; HTCondor's `DagmanUtils::HaltFileName`):
//! `<dag>.halt` beside the DAG file halts the DAG (see
//! [`crate::core::Event::Halted`]), and a sub-DAG's beside its own DAG file
//! halts that sub-DAG's DAGMan ([`crate::core::Event::SubDagHalted`]). `condor_submit_dag` removes a stale
//! one as it submits the DAG; DAGMan looks for it at each turn of its
//! event loop (`condor_event_timer`). Removing it does not undo the halt:
//! HTCondor's DAGMan only resumes on its `resume` command, which gridbed
//! has not.

use std::path::{Path, PathBuf};

use crate::core::{Event, SubDagSpan};

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

/// The halt files of a run's DAGMans: the top DAG's, and each sub-DAG's
/// while its DAGMan runs (`<its dag>.halt`, HTCondor's
/// `DagmanUtils::HaltFileName` of the sub-DAG's own DAG file). A sub-DAG's
/// DAGMan is submitted with each run of its node, which removes a stale
/// halt file; its file is watched from then until that run ends.
#[derive(Debug)]
pub struct HaltFiles {
    top: HaltFile,
    /// The sub-DAG runs watched: sub-DAG, its run's index among the
    /// manager's spans, its halt file.
    subs: Vec<(usize, usize, HaltFile)>,
    /// The manager's spans followed so far.
    spans_seen: usize,
    /// Each sub-DAG's DAG file, by its node's name, as the DAG was read.
    files: std::collections::HashMap<String, PathBuf>,
}

impl HaltFiles {
    /// The halt files of the DAG at `dag` as it is submitted (see
    /// [`HaltFile::submitted`]), its sub-DAGs' DAG files by their nodes'
    /// names in `subdags`.
    pub fn submitted(dag: &Path, subdags: impl IntoIterator<Item = (String, PathBuf)>) -> Self {
        HaltFiles {
            top: HaltFile::submitted(dag),
            subs: Vec::new(),
            spans_seen: 0,
            files: subdags.into_iter().collect(),
        }
    }

    /// Follows the sub-DAG runs that started since last told (`spans`,
    /// [`Manager::subdag_spans`](crate::core::Manager::subdag_spans)): the
    /// sub-DAG of node `name_of(k)`, its DAG file as the DAG was read or,
    /// for one nested in a sub-DAG read as the run went, as `read_later`
    /// gives it (none: not watched). Cheap when none started.
    pub fn follow(
        &mut self,
        spans: &[SubDagSpan],
        name_of: impl Fn(usize) -> Option<String>,
        read_later: impl Fn(&str) -> Option<PathBuf>,
    ) {
        for (i, span) in spans.iter().enumerate().skip(self.spans_seen) {
            let dag = (name_of(span.subdag).filter(|_| span.ended.is_none()))
                .and_then(|n| self.files.get(&n).cloned().or_else(|| read_later(&n)));
            if let Some(dag) = dag {
                self.subs.push((span.subdag, i, HaltFile::submitted(&dag)));
            }
        }
        self.spans_seen = self.spans_seen.max(spans.len());
    }

    /// The halts whose files appeared since last asked, each once: the
    /// top DAG's ([`Event::Halted`]) and those of sub-DAGs still running
    /// ([`Event::SubDagHalted`]; a run that ended is no longer watched).
    pub fn appeared(&mut self, spans: &[SubDagSpan]) -> Vec<Event> {
        let mut halts = Vec::new();
        if self.top.appeared() {
            halts.push(Event::Halted);
        }
        self.subs
            .retain(|&(_, i, _)| spans.get(i).is_some_and(|s| s.ended.is_none()));
        for (k, _, file) in &mut self.subs {
            if file.appeared() {
                halts.push(Event::SubDagHalted { subdag: *k });
            }
        }
        halts
    }

    /// The top DAG's halt file.
    pub fn top(&self) -> &Path {
        self.top.path()
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

    #[test]
    fn a_subdags_halt_file_is_watched_while_its_run_goes_and_removed_as_it_starts() {
        let dir = tempfile::tempdir().unwrap();
        let (top, inner) = (dir.path().join("x.dag"), dir.path().join("inner.dag"));
        let inner_halt = dir.path().join("inner.dag.halt");
        std::fs::write(&inner_halt, "").unwrap();
        let mut halts = HaltFiles::submitted(&top, [("S".to_string(), inner.clone())]);
        let name_of = |k: usize| Some(["S", "T"][k].to_string());
        let none = |_: &str| None;
        let span = |subdag: usize, ended: Option<f64>| SubDagSpan {
            subdag,
            started: 0.0,
            ended,
            exit: ended.map(|_| 1),
            aborted: false,
        };
        // Not started: its stale file stays, unwatched.
        assert!(halts.appeared(&[]).is_empty());
        assert!(inner_halt.exists());
        // Sub-DAG 0 starts (its stale file removed); 1 has no file known.
        let mut spans = vec![span(0, None), span(1, None)];
        halts.follow(&spans, name_of, none);
        assert!(!inner_halt.exists(), "removed as its DAGMan is submitted");
        assert!(halts.appeared(&spans).is_empty());
        std::fs::write(&inner_halt, "").unwrap();
        std::fs::write(halts.top(), "").unwrap();
        let got = halts.appeared(&spans);
        assert_eq!(got, [Event::Halted, Event::SubDagHalted { subdag: 0 }]);
        assert!(halts.appeared(&spans).is_empty(), "each seen once");
        // Its run ends; a new one starts: the file is stale again, removed,
        // and seen anew once written.
        spans[0].ended = Some(5.0);
        spans.push(span(0, None));
        halts.follow(&spans, name_of, none);
        assert!(!inner_halt.exists());
        std::fs::write(&inner_halt, "").unwrap();
        assert_eq!(halts.appeared(&spans), [Event::SubDagHalted { subdag: 0 }]);
        // Once that run ended, nothing is watched.
        spans[2].ended = Some(9.0);
        std::fs::remove_file(&inner_halt).unwrap();
        halts.follow(&spans, name_of, none);
        std::fs::write(&inner_halt, "").unwrap();
        assert!(halts.appeared(&spans).is_empty());
    }
}
