//! Rescue DAGs in DAGMan's own format (HTCondor manual, "The Rescue DAG";
//! `Dag::WriteRescue` and `DagmanUtils::FindLastRescueDagNum` in its source).
//!
//! A run of `x.dag` that does not complete writes `x.dag.rescue001`, or the
//! next number after the newest one there (at most [`MAX_RESCUE`]). The file
//! has DAGMan's header and a `DONE` line for every node that ended well,
//! except the FINAL node. DAGMan resets retries on rescue by default
//! (`DAGMAN_RESET_RETRIES_UPON_RESCUE`), so no `RETRY` lines are written.
//! The next run of `x.dag` reads the newest rescue after the DAG itself, as
//! `condor_submit_dag` does (its `-AutoRescue`), and runs only the nodes it
//! does not mark DONE. [`Rescue`] chooses another rescue or none.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::NodeInfo;
use crate::workflow::formats::FormatError;

/// DAGMan's `DAGMAN_MAX_RESCUE_NUM` default: the highest rescue number.
pub const MAX_RESCUE: u32 = 100;

/// The version DAGMan writes in a rescue's header.
const VERSION: &str = "2.1.0";

/// Which rescue DAG a run of a `.dag` starts from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Rescue {
    /// The newest one beside the DAG, if any (DAGMan's `-AutoRescue 1`).
    #[default]
    Newest,
    /// None: every node runs (`-AutoRescue 0`).
    Ignore,
    /// Rescue number N, which must exist (`-DoRescueFrom N`). Sub-DAGs
    /// start from their own number N too, which must exist as well.
    From(u32),
    /// A rescue file by name, which must exist (`-RescueFile file`). Its
    /// number is the one its name carries as `<dag>.rescueNNN` (see
    /// [`extracted`]), 0 for another name; sub-DAGs start from their own
    /// rescue of that number, or their newest when it is 0.
    File(PathBuf),
    /// A save file a node wrote (`-load_save file`), which must exist: a
    /// bare name is looked for in `save_files/` beside the DAG (see
    /// [`save_file`]), a path as given. Sub-DAGs start from their newest
    /// rescue.
    SaveFile(PathBuf),
}

impl Rescue {
    /// What the sub-DAGs of `dag` start from when `dag` starts from
    /// `self`. DAGMan passes its sub-DAGs its `-AutoRescue` and its
    /// `-DoRescueFrom` (set from a `-RescueFile`'s number), not the file
    /// itself: `dagman_main.cpp`, `DagmanOptions::addDeepArgs`.
    pub fn for_subdags(&self, dag: &Path) -> Rescue {
        match self {
            Rescue::Ignore => Rescue::Ignore,
            &Rescue::From(n) => Rescue::From(n),
            Rescue::File(file) => match extracted(dag, file) {
                0 => Rescue::Newest,
                n => Rescue::From(n),
            },
            Rescue::Newest | Rescue::SaveFile(_) => Rescue::Newest,
        }
    }
}

/// The rescue number `file`'s name carries for `dag`
/// (`DagmanUtils::ExtractRescueNum`): the leading digits after
/// `<dag>.rescue` when `file` is named so in the DAG's folder, else 0.
/// DAGMan compares the names as written; here a file given by another
/// path to the same folder counts too.
pub fn extracted(dag: &Path, file: &Path) -> u32 {
    let (Some(dag_name), Some(name)) = (dag.file_name(), file.file_name()) else {
        return 0;
    };
    let folder = |p: &Path| {
        let parent = p.parent().filter(|d| !d.as_os_str().is_empty());
        std::fs::canonicalize(parent.unwrap_or(Path::new(".")))
    };
    match (folder(dag), folder(file)) {
        (Ok(a), Ok(b)) if a == b => {}
        _ => return 0,
    }
    let base = format!("{}.rescue", dag_name.to_string_lossy());
    let name = name.to_string_lossy();
    let Some(rest) = name.strip_prefix(&base) else {
        return 0;
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    // atoi's value, kept within what DAGMan can number.
    digits
        .parse::<u64>()
        .map_or(0, |n| n.min(u64::from(MAX_RESCUE)) as u32)
}

/// The name of rescue number `n` of `dag`: `dag.rescueNNN`.
pub fn name(dag: &Path, n: u32) -> PathBuf {
    let mut s = dag.as_os_str().to_owned();
    s.push(format!(".rescue{n:03}"));
    PathBuf::from(s)
}

/// The newest rescue number of `dag` (0: none), found as DAGMan finds it:
/// the highest number from 1 to [`MAX_RESCUE`] whose file exists.
pub fn newest(dag: &Path) -> u32 {
    (1..=MAX_RESCUE)
        .filter(|&n| name(dag, n).exists())
        .max()
        .unwrap_or(0)
}

/// The number of the rescue DAG `choice` runs `dag` from, 0 for none, as
/// DAGMan reports it in its metrics file (its `rescueDagNum`). A save
/// file is no rescue DAG: 0.
pub fn number(dag: &Path, choice: &Rescue) -> u32 {
    match *choice {
        Rescue::Newest => newest(dag),
        Rescue::From(n) => n,
        Rescue::File(ref file) => extracted(dag, file),
        Rescue::Ignore | Rescue::SaveFile(_) => 0,
    }
}

/// The rescue file `choice` picks for `dag`, if any.
pub fn chosen(dag: &Path, choice: &Rescue) -> Result<Option<PathBuf>, FormatError> {
    match *choice {
        Rescue::Ignore => Ok(None),
        Rescue::Newest => Ok(Some(newest(dag)).filter(|&n| n > 0).map(|n| name(dag, n))),
        Rescue::From(n) => {
            let file = name(dag, n);
            if n == 0 || n > MAX_RESCUE || !file.exists() {
                return Err(FormatError {
                    file,
                    message: format!(
                        "no rescue DAG number {n} (expected one of 1 to {MAX_RESCUE} that exists beside the DAG)"
                    ),
                });
            }
            Ok(Some(file))
        }
        Rescue::File(ref file) => match file.is_file() {
            true => Ok(Some(file.clone())),
            false => Err(FormatError {
                file: file.clone(),
                message: "no such rescue file (-RescueFile: a path from the current folder)".into(),
            }),
        },
        Rescue::SaveFile(ref file) => {
            let path = match file.to_str() {
                Some(bare) if file.parent() == Some(Path::new("")) => save_file(dag, bare),
                _ => file.clone(),
            };
            if !path.exists() {
                return Err(FormatError {
                    file: path,
                    message: "no such save file (a bare name is looked for in save_files/ beside the DAG)".into(),
                });
            }
            Ok(Some(path))
        }
    }
}

/// Reads the rescue at `path` and marks its `DONE` nodes done in `nodes`.
/// `RETRY node n [UNLESS-EXIT v]` lines set the retries left, as DAGMan
/// writes them when it does not reset retries. Returns how many nodes it
/// marked. A line naming no node of the DAG is an error at that line.
pub fn apply(path: &Path, nodes: &mut [NodeInfo]) -> Result<usize, FormatError> {
    let text = std::fs::read_to_string(path).map_err(|e| FormatError {
        file: path.to_path_buf(),
        message: format!("cannot read the rescue DAG: {e}"),
    })?;
    let index: HashMap<String, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.clone(), i))
        .collect();
    let mut marked = 0;
    for (no, line) in text.lines().enumerate() {
        let err = |m: String| FormatError {
            file: path.to_path_buf(),
            message: format!("line {}: {m}", no + 1),
        };
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.is_empty() || w[0].starts_with('#') {
            continue;
        }
        let node = |k: usize| -> Result<usize, FormatError> {
            let name = w
                .get(k)
                .ok_or_else(|| err(format!("{}: expected a node name", w[0])))?;
            index.get(*name).copied().ok_or_else(|| {
                err(format!(
                    "{} {name}: the DAG has no such node (was the DAG edited after its rescue was written?)",
                    w[0]
                ))
            })
        };
        match w[0].to_ascii_uppercase().as_str() {
            "DONE" => {
                let i = node(1)?;
                if nodes[i].is_final {
                    return Err(err(format!("DONE {}: the FINAL node is never done", w[1])));
                }
                marked += usize::from(!nodes[i].done);
                nodes[i].done = true;
            }
            "RETRY" => {
                let i = node(1)?;
                let bad = || err(format!("RETRY {}: expected a whole number", w[1]));
                nodes[i].retry = w.get(2).and_then(|n| n.parse().ok()).ok_or_else(bad)?;
                if w.get(3)
                    .is_some_and(|x| x.eq_ignore_ascii_case("UNLESS-EXIT"))
                {
                    nodes[i].retry_unless_exit = w.get(4).and_then(|v| v.parse().ok());
                }
            }
            _ => {
                return Err(err(format!(
                    "`{}`: a rescue DAG has only DONE and RETRY lines",
                    w[0]
                )));
            }
        }
    }
    Ok(marked)
}

/// What a rescue records of a run: each node's name and how it ended.
pub struct Outcome<'a> {
    /// The node's name, as the DAG names it.
    pub name: &'a str,
    /// It ended well.
    pub done: bool,
    /// It failed for good.
    pub failed: bool,
    /// It is the FINAL node (never marked DONE).
    pub is_final: bool,
    /// It has children and every edge to them is weak: failed, it is
    /// written DONE all the same, as DAGMan's `WriteRescue` does.
    pub weak_children_only: bool,
}

/// The header of a rescue DAG of `dag`, as DAGMan writes it after a run:
/// the DAG as DAGMan was given it, run in its folder (as `condor_submit_dag`
/// is, and as a sub-DAG's DAGMan is in its `DIR`): its file name.
pub fn rescue_header(dag: &Path) -> String {
    let name = dag.file_name().map_or(dag.as_os_str(), |n| n);
    format!(
        "# Rescue DAG file, created after running\n#   the {} DAG file\n",
        Path::new(name).display()
    )
}

/// The text of a rescue (or save file) with `header`, of a run whose nodes
/// ended as `outcomes`, created at `created` (UTC `M/D/YYYY HH:MM:SS`);
/// DAGMan's `Dag::WriteRescue`.
pub fn text(header: &str, outcomes: &[Outcome], created: &str) -> String {
    let done = outcomes.iter().filter(|o| o.done && !o.is_final).count();
    let failed: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.failed)
        .map(|o| o.name)
        .collect();
    let mut out = format!(
        "{header}# Created {created} UTC\n# Rescue DAG version: {VERSION}\n#\n\
         # Total number of Nodes: {}\n# Nodes premarked DONE: {done}\n\
         # Nodes that failed: {}\n#   ",
        outcomes.len(),
        failed.len(),
    );
    for f in &failed {
        out.push_str(f);
        out.push(',');
    }
    out.push_str("<ENDLIST>\n\n");
    for o in outcomes.iter().filter(|o| !o.is_final) {
        if o.failed && o.weak_children_only {
            out.push_str("# Failed node with only weak child dependencies:\n");
        } else if !o.done {
            continue;
        }
        out.push_str("DONE ");
        out.push_str(o.name);
        out.push('\n');
    }
    out
}

/// Now, as DAGMan writes a rescue's creation time (UTC `M/D/YYYY HH:MM:SS`).
pub fn created_now() -> String {
    let t = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let num = |r: std::ops::Range<usize>| t.get(r).and_then(|s| s.parse::<u32>().ok()).unwrap_or(0);
    format!(
        "{}/{}/{} {}",
        num(5..7),
        num(8..10),
        num(0..4),
        t.get(11..19).unwrap_or("00:00:00")
    )
}

/// Writes the next rescue of `dag` (after the newest there, at most
/// [`MAX_RESCUE`], which is overwritten once reached, as DAGMan does) and
/// returns its path.
pub fn write(dag: &Path, outcomes: &[Outcome], created: &str) -> std::io::Result<PathBuf> {
    let path = name(dag, (newest(dag) + 1).min(MAX_RESCUE));
    std::fs::write(&path, text(&rescue_header(dag), outcomes, created))?;
    Ok(path)
}

/// Renames `file` to `file.old`, replacing an older `.old`.
fn to_old(file: &Path) -> std::io::Result<()> {
    let mut old = file.as_os_str().to_owned();
    old.push(".old");
    let _ = std::fs::remove_file(&old);
    std::fs::rename(file, old)
}

/// `-DoRescueFrom n`'s renaming (`DagmanUtils::RenameRescueDagsAfter`):
/// the rescues of `dag` numbered after `n` become `….rescueNNN.old`
/// (replacing an older `.old`), so the next one written is number
/// `n + 1`. Returns the renamed files.
pub fn rename_after(dag: &Path, n: u32) -> std::io::Result<Vec<PathBuf>> {
    let mut renamed = Vec::new();
    for k in n + 1..=newest(dag) {
        let from = name(dag, k);
        if from.exists() {
            to_old(&from)?;
            renamed.push(from);
        }
    }
    Ok(renamed)
}

impl super::DagmanInfo {
    /// Renames, as the run of `dag` starts, the rescues after the number
    /// it starts from ([`DagmanInfo::renames_after`]), its own and those
    /// of each sub-DAG read with it that starts from a number too; a
    /// sub-DAG read as the run goes renames its own then. Returns the
    /// renamed files.
    ///
    /// [`DagmanInfo::renames_after`]: super::DagmanInfo::renames_after
    pub fn rename_later_rescues(&self, dag: &Path) -> std::io::Result<Vec<PathBuf>> {
        let Some(n) = self.renames_after else {
            return Ok(Vec::new());
        };
        let mut renamed = rename_after(dag, n)?;
        if let Rescue::From(m) = self.subdag_reads.rescue {
            for d in self.subdags.iter().filter(|d| !d.deferred) {
                renamed.extend(rename_after(&d.file, m)?);
            }
        }
        Ok(renamed)
    }
}

/// Where the save file `file` of a node of `dag` goes, or is loaded from
/// (`DagmanUtils::ResolveSaveFile`): a bare name in `save_files/` beside
/// the DAG, a name with a path (`./x.save` too) where the path says, from
/// the DAG's folder (where DAGMan runs).
pub fn save_file(dag: &Path, file: &str) -> PathBuf {
    let dir = dag.parent().unwrap_or(Path::new(""));
    if Path::new(file).parent() == Some(Path::new("")) {
        dir.join("save_files").join(file)
    } else {
        dir.join(file)
    }
}

/// How a run of a DAG ended, as its rescue DAGs record it.
pub struct RunEnd<'a> {
    /// Each node's job in the run, by name.
    pub job_of: &'a HashMap<&'a str, usize>,
    /// Per job: it ended well.
    pub done: &'a [bool],
    /// Per job: it failed for good.
    pub failed: &'a [bool],
    /// Each failed run of a sub-DAG, in order.
    pub subdag_runs: &'a [crate::core::SubDagRun],
    /// Per job: its children in the run's workflow.
    pub children: &'a [Vec<usize>],
}

/// One DAGMan of a run: the top DAG's or a sub-DAG's, with its `.dag` and
/// its own nodes (under their names in it, and their names in the run).
struct OwnDag<'a> {
    file: &'a Path,
    nodes: Vec<(&'a str, &'a str, bool)>,
}

impl<'a> OwnDag<'a> {
    /// The DAGMan of sub-DAG `k` of `info` (`None`: the top DAG's, read
    /// from `top`).
    fn of(info: &'a super::DagmanInfo, k: Option<usize>, top: &'a Path) -> Option<Self> {
        let Some(k) = k else {
            let nodes = info
                .top_level()
                .map(|n| (n.name.as_str(), n.name.as_str(), n.is_final))
                .collect();
            return Some(OwnDag { file: top, nodes });
        };
        let d = info.subdags.get(k)?;
        // A sub-DAG nested in it has its own DAGMan.
        let nested: std::collections::HashSet<&str> = info
            .subdags
            .iter()
            .filter(|o| d.members.contains(&o.node))
            .flat_map(|o| o.members.iter().chain(std::iter::once(&o.entry)))
            .map(String::as_str)
            .collect();
        // A SERVICE node is in no rescue (DAGMan keeps them apart).
        let services: std::collections::HashSet<&str> = info
            .nodes
            .iter()
            .filter(|n| n.is_service)
            .map(|n| n.name.as_str())
            .collect();
        let prefix = d.node.len() + 1;
        let nodes = d
            .members
            .iter()
            .filter(|m| !nested.contains(m.as_str()) && !services.contains(m.as_str()))
            .map(|m| (&m[prefix..], m.as_str(), d.final_node.as_ref() == Some(m)))
            .collect();
        Some(OwnDag {
            file: &d.file,
            nodes,
        })
    }

    /// Its nodes' outcomes, each node's job's `done` and `failed`.
    fn outcomes(
        &self,
        end: &RunEnd,
        weak: &std::collections::HashSet<(usize, usize)>,
        done: impl Fn(usize) -> bool,
        failed: impl Fn(usize) -> bool,
    ) -> Vec<Outcome<'a>> {
        let weak_only = |j: usize| {
            let children = &end.children[j];
            !children.is_empty() && children.iter().all(|&c| weak.contains(&(j, c)))
        };
        self.nodes
            .iter()
            .map(|&(name, full, is_final)| {
                let j = end.job_of.get(full).copied();
                Outcome {
                    name,
                    done: j.is_some_and(&done),
                    failed: j.is_some_and(&failed),
                    is_final,
                    weak_children_only: j.is_some_and(weak_only),
                }
            })
            .collect()
    }
}

/// The `WEAK` edges of `info`, by job.
fn weak_edges(info: &super::DagmanInfo, end: &RunEnd) -> std::collections::HashSet<(usize, usize)> {
    let job = |n: &str| end.job_of.get(n).copied();
    info.weak_edges
        .iter()
        .filter_map(|(p, c)| Some((job(p)?, job(c)?)))
        .collect()
}

/// The rescue DAGs of a run of the DAG `info`, read from `dag`: one per
/// failed run of one of its sub-DAGs, beside that sub-DAG's `.dag` (its
/// own nodes under their names in it, as its DAGMan writes it), in the
/// order they failed; then, with `top`, the DAG's own (its top-level
/// nodes). Returns their paths.
pub fn write_for_run(
    dag: &Path,
    info: &super::DagmanInfo,
    end: &RunEnd,
    top: bool,
) -> std::io::Result<Vec<PathBuf>> {
    let created = created_now();
    let weak = weak_edges(info, end);
    let mut written = Vec::new();
    for run in end.subdag_runs {
        let Some(own) = OwnDag::of(info, Some(run.subdag), dag) else {
            continue;
        };
        let outcomes = own.outcomes(
            end,
            &weak,
            |j| run.done.contains(&j),
            |j| run.failed.contains(&j),
        );
        written.push(write(own.file, &outcomes, &created)?);
    }
    if top && let Some(own) = OwnDag::of(info, None, dag) {
        let outcomes = own.outcomes(end, &weak, |j| end.done[j], |j| end.failed[j]);
        written.push(write(dag, &outcomes, &created)?);
    }
    Ok(written)
}

/// The save files of a run of the DAG `info`, read from `dag` (HTCondor's
/// `Dag::WriteSavePoint`): one per save point, in the order their nodes
/// started, each in the rescue format of its node's own DAGMan as it stood
/// then, headed `# Save file written at Start Node …`; a file already there
/// becomes `file.old` (replacing an older one). Returns their paths.
pub fn write_save_points(
    dag: &Path,
    info: &super::DagmanInfo,
    end: &RunEnd,
    points: &[crate::core::SavePoint],
) -> std::io::Result<Vec<PathBuf>> {
    let created = created_now();
    let weak = weak_edges(info, end);
    let node_of: HashMap<usize, &super::NodeInfo> = info
        .nodes
        .iter()
        .filter_map(|n| Some((*end.job_of.get(n.name.as_str())?, n)))
        .collect();
    let mut written = Vec::new();
    for p in points {
        let Some(n) = node_of.get(&p.node) else {
            continue;
        };
        let Some(file) = &n.save_point else { continue };
        // A sub-DAG node starts in its entry no-op.
        let node = info
            .subdags
            .iter()
            .find(|d| d.entry == n.name)
            .map_or(n.name.as_str(), |d| d.node.as_str());
        let innermost = (0..info.subdags.len())
            .filter(|&k| info.subdags[k].members.contains(&n.name))
            .min_by_key(|&k| info.subdags[k].members.len());
        let Some(own) = OwnDag::of(info, innermost, dag) else {
            continue;
        };
        let outcomes = own.outcomes(
            end,
            &weak,
            |j| p.done.binary_search(&j).is_ok(),
            |j| p.failed.binary_search(&j).is_ok(),
        );
        let path = save_file(own.file, file);
        if path.exists() {
            to_old(&path)?;
        } else if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let header = format!("# Save file written at Start Node {node}\n");
        std::fs::write(&path, text(&header, &outcomes, &created))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rescue_files_number_is_the_one_its_name_carries_beside_its_dag() {
        let dir = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let dag = dir.path().join("t.dag");
        let at = |name: &str| dir.path().join(name);
        assert_eq!(extracted(&dag, &at("t.dag.rescue004")), 4);
        assert_eq!(extracted(&dag, &at("t.dag.rescue12x")), 12);
        assert_eq!(extracted(&dag, &at("t.dag.rescue999")), MAX_RESCUE);
        assert_eq!(extracted(&dag, &at("t.dag.rescue")), 0);
        assert_eq!(extracted(&dag, &at("custom.rescue")), 0);
        assert_eq!(extracted(&dag, &at("u.dag.rescue002")), 0);
        assert_eq!(extracted(&dag, &other.path().join("t.dag.rescue002")), 0);
        // What a run from each gives its sub-DAGs.
        let file = |n: &str| Rescue::File(at(n));
        assert_eq!(file("t.dag.rescue002").for_subdags(&dag), Rescue::From(2));
        assert_eq!(file("custom.rescue").for_subdags(&dag), Rescue::Newest);
        assert_eq!(Rescue::From(3).for_subdags(&dag), Rescue::From(3));
        assert_eq!(Rescue::Ignore.for_subdags(&dag), Rescue::Ignore);
        let save = Rescue::SaveFile(at("x.save"));
        assert_eq!(save.for_subdags(&dag), Rescue::Newest);
        assert_eq!(number(&dag, &file("t.dag.rescue002")), 2);
        assert!(chosen(&dag, &file("t.dag.rescue002")).is_err(), "missing");
    }

    #[test]
    fn a_rescue_has_dagmans_header_and_done_lines_and_reads_back() {
        let o = |name, done, failed, is_final| Outcome {
            name,
            done,
            failed,
            is_final,
            weak_children_only: false,
        };
        let outcomes = [
            o("A", true, false, false),
            o("B", false, true, false),
            o("S+C", true, false, false),
            o("F", true, false, true),
        ];
        let t = text(
            &rescue_header(Path::new("x.dag")),
            &outcomes,
            "11/27/2026 01:02:03",
        );
        assert!(t.starts_with(
            "# Rescue DAG file, created after running\n#   the x.dag DAG file\n# Created 11/27/2026 01:02:03 UTC\n# Rescue DAG version: 2.1.0\n"
        ));
        assert!(t.contains("# Total number of Nodes: 4\n# Nodes premarked DONE: 2\n# Nodes that failed: 1\n#   B,<ENDLIST>\n\nDONE A\nDONE S+C\n"), "{t}");
        assert!(!t.contains("DONE F"), "FINAL is never DONE");
        let dir = tempfile::tempdir().unwrap();
        let dag = dir.path().join("x.dag");
        assert_eq!(newest(&dag), 0);
        let first = write(&dag, &outcomes, "now").unwrap();
        assert_eq!(first, dir.path().join("x.dag.rescue001"));
        assert_eq!(write(&dag, &outcomes, "now").unwrap(), name(&dag, 2));
        assert_eq!(newest(&dag), 2);
        let node = |n: &str, is_final| NodeInfo {
            name: n.into(),
            is_final,
            ..Default::default()
        };
        let mut nodes = vec![
            node("A", false),
            node("B", false),
            node("S+C", false),
            node("F", true),
        ];
        assert_eq!(apply(&first, &mut nodes).unwrap(), 2);
        let done: Vec<bool> = nodes.iter().map(|n| n.done).collect();
        assert_eq!(done, [true, false, true, false]);
        assert_eq!(chosen(&dag, &Rescue::Newest).unwrap(), Some(name(&dag, 2)));
        assert_eq!(chosen(&dag, &Rescue::From(1)).unwrap(), Some(first.clone()));
        assert_eq!(chosen(&dag, &Rescue::Ignore).unwrap(), None);
        assert!(chosen(&dag, &Rescue::From(3)).is_err());
        std::fs::write(&first, "DONE A\nDONE Z\n").unwrap();
        let e = apply(&first, &mut nodes).unwrap_err();
        assert!(
            e.message
                .starts_with("line 2: DONE Z: the DAG has no such node"),
            "{e:?}"
        );
        std::fs::write(&first, "JOB A a.sub\n").unwrap();
        assert!(
            apply(&first, &mut nodes)
                .unwrap_err()
                .message
                .contains("only DONE and RETRY")
        );
    }
}
