//! Splices and sub-DAGs flattened into one DAG (HTCondor manual, "DAG
//! Splicing" and "SUBDAG EXTERNAL").
//!
//! A splice's nodes join the DAG named `splice+node` (nested splices chain
//! the prefixes, `outer+inner+node`, as DAGMan names them); a splice as a
//! parent stands for its leaves, as a child for its roots; `CONNECT out in`
//! joins the nodes of each `PIN_OUT` number of `out` to those of the same
//! `PIN_IN` number of `in`. A splice's categories are its own (prefixed)
//! unless their names start with `+`.
//!
//! A `SUBDAG EXTERNAL` node is one node of its parent that ends when its own
//! DAG ends: its DAG's nodes join as `node+inner`, after the node's parents,
//! and the node itself becomes a no-op that follows every one of them (so
//! its POST script and its children wait for the whole sub-DAG). The
//! sub-DAG starts in a no-op `node+PRE`, its entry: the node's PRE script
//! runs there, its save point file is written, and its end submits the
//! sub-DAG (one job of the DAGMan above); the sub-DAG's FINAL node waits
//! for it.
//! Each sub-DAG is recorded ([`SubDagInfo`]) for the manager, which runs it
//! as its own DAGMan (`core/manager/subdag.rs`: its exit value, `RETRY`,
//! POST's `$RETURN`), and it starts from its own newest rescue DAG, as
//! DAGMan's auto-rescue of the sub-DAG's `.dag` does. Its categories, its
//! FINAL and SERVICE nodes and most of its `CONFIG` ([`subdag_config`]) are
//! its own.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::grammar::{self, At, DagFile};
use super::rescue::{self, Rescue};
use super::{NodeInfo, SubDagInfo};
use crate::workflow::formats::{FormatError, SubDagReading};

/// Splices and sub-DAGs nested deeper than this are a cycle.
const MAX_DEPTH: usize = 32;

/// The flattened DAG.
#[derive(Default)]
pub(super) struct Flat {
    /// Every node, named as DAGMan names it.
    pub nodes: Vec<NodeInfo>,
    /// Each node's parents, by name.
    pub parents: Vec<Vec<String>>,
    /// MAXJOBS of every category, local ones prefixed.
    pub max_jobs: BTreeMap<String, usize>,
    /// Each sub-DAG, inner ones first.
    pub subdags: Vec<SubDagInfo>,
    /// Edges declared weak, and those declared strong (by names as
    /// flattened): an edge declared both ways is strong (DAGMan's
    /// "strongest wins").
    pub weak: std::collections::BTreeSet<(String, String)>,
    pub strong: std::collections::HashSet<(String, String)>,
    pub warnings: Vec<String>,
    /// Which rescue a sub-DAG starts from: its newest, or none.
    pub rescue: Rescue,
    /// Which sub-DAGs are read as their nodes are submitted
    /// ([`SubDagInfo::deferred`]).
    pub defer: SubDagReading,
    /// The nodes whose data the sidecar gives, by name as flattened: a
    /// sub-DAG with such nodes is read with the DAG where it can be, as
    /// the grid's data placement must know them ahead.
    pub move_data: std::collections::BTreeSet<String>,
}

/// One DAGMan's named inline submit descriptions and the nodes that may
/// use them: the top DAG with its splices (lifted into it), or a sub-DAG
/// with its own (a sub-DAG is a DAGMan of its own and shares none).
#[derive(Default)]
struct Scope {
    descriptions: HashMap<String, String>,
    nodes: Vec<usize>,
}

impl Scope {
    /// Adds `file`'s descriptions: a name the scope has already keeps its
    /// first description (the DAG above a splice wins, as DAGMan's
    /// `LiftSplices` has it), with a warning where the two differ.
    fn add(&mut self, descriptions: HashMap<String, String>, path: &Path, out: &mut Flat) {
        let mut names: Vec<_> = descriptions.into_iter().collect();
        names.sort();
        for (name, desc) in names {
            match self.descriptions.entry(name) {
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(desc);
                }
                std::collections::hash_map::Entry::Occupied(o) if *o.get() != desc => {
                    out.warnings.push(format!(
                        "{}: SUBMIT-DESCRIPTION {} differs from the one above it, which is used",
                        path.display(),
                        o.key()
                    ));
                }
                std::collections::hash_map::Entry::Occupied(_) => {}
            }
        }
    }

    /// Gives each node of the scope that names a description its text.
    fn resolve(self, out: &mut Flat) {
        for i in self.nodes {
            let n = &mut out.nodes[i];
            n.submit_description = self.descriptions.get(&n.submit).cloned();
        }
    }
}

/// What one flattened file offers its parent: its roots and leaves, and the
/// nodes of each of its pins.
struct Piece {
    roots: Vec<String>,
    leaves: Vec<String>,
    pins_in: BTreeMap<usize, Vec<String>>,
    pins_out: BTreeMap<usize, Vec<String>>,
}

/// `dir` then `sub`, either of which may be absent.
fn joined(dir: Option<&Path>, sub: Option<&str>) -> Option<PathBuf> {
    match (dir, sub) {
        (Some(d), Some(s)) => Some(d.join(s)),
        (None, Some(s)) => Some(PathBuf::from(s)),
        (d, None) => d.map(Path::to_path_buf),
    }
}

fn at_err(at: &At, message: String) -> FormatError {
    FormatError {
        file: at.0.clone(),
        message: format!("line {}: {message}", at.1),
    }
}

/// Reads the `.dag` at `path`; `err` words a failure to read it.
fn read_file(path: &Path, err: impl Fn(String) -> FormatError) -> Result<DagFile, FormatError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| err(format!("cannot read {}: {e}", path.display())))?;
    grammar::read(path, &text)
}

/// Flattens the top `file`, read from `path`, into `out`; its sub-DAGs
/// start from the rescue DAG `rescue` gives them ([`Rescue::for_subdags`]).
/// An edge declared both weak and strong is left strong.
pub(super) fn flatten(
    file: DagFile,
    path: &Path,
    rescue: &Rescue,
    out: &mut Flat,
) -> Result<(), FormatError> {
    out.rescue = rescue.for_subdags(path);
    let top = path.parent().unwrap_or(Path::new("."));
    let mut scope = Scope::default();
    flatten_piece(file, path, top, "", Place::default(), &mut scope, out)?;
    scope.resolve(out);
    let strong = std::mem::take(&mut out.strong);
    out.weak.retain(|e| !strong.contains(e));
    Ok(())
}

/// A sub-DAG's own `CONFIG` (read beside its `.dag` at `path`, where its
/// DAGMan runs): its `DAGMAN_MAX_JOBS_SUBMITTED`, `DAGMAN_MAX_JOBS_IDLE`,
/// `DAGMAN_MAX_PRE_SCRIPTS`, `DAGMAN_MAX_POST_SCRIPTS` and
/// `DAGMAN_NODE_JOB_FAILURE_TOLERANCE` and `DAGMAN_SUBMIT_DEPTH_FIRST` are
/// its own.
fn subdag_config(
    file: &DagFile,
    path: &Path,
    out: &mut Flat,
) -> Result<super::DagmanInfo, FormatError> {
    let mut own = super::DagmanInfo::default();
    super::apply_environment(&mut own);
    let Some(config) = &file.info.config else {
        return Ok(own);
    };
    let cpath = path.parent().unwrap_or(Path::new(".")).join(config);
    let text = std::fs::read_to_string(&cpath).map_err(|e| FormatError {
        file: path.to_path_buf(),
        message: format!("CONFIG {config}: cannot read {}: {e}", cpath.display()),
    })?;
    let unread = super::apply_config(&text, &mut own).map_err(|(line, m)| FormatError {
        file: cpath.clone(),
        message: format!("line {line}: {m}"),
    })?;
    out.warnings
        .extend(super::unread_config_warning(&cpath, &unread));
    Ok(own)
}

/// DAGMan's rescue of a sub-DAG: the rescue of its `.dag` at `path` that
/// `out.rescue` picks (its newest, or number N) marks its nodes (from `first` on in `out`, named `prefix` then
/// their names in it) DONE. Returns its number (0: none).
fn start_from_rescue(
    path: &Path,
    prefix: &str,
    first: usize,
    out: &mut Flat,
) -> Result<u32, FormatError> {
    let Some(file) = rescue::chosen(path, &out.rescue)? else {
        return Ok(0);
    };
    let mut local: Vec<NodeInfo> = out.nodes[first..]
        .iter()
        .map(|n| NodeInfo {
            name: n.name[prefix.len()..].to_string(),
            ..n.clone()
        })
        .collect();
    let marked = rescue::apply(&file, &mut local)?;
    for (n, l) in out.nodes[first..].iter_mut().zip(local) {
        (n.done, n.retry, n.retry_unless_exit) = (l.done, l.retry, l.retry_unless_exit);
    }
    // A sub-DAG inside that is DONE is done with all of its nodes.
    let done: std::collections::HashSet<String> = out.nodes[first..]
        .iter()
        .filter(|n| n.done)
        .map(|n| n.name.clone())
        .collect();
    let inner: std::collections::HashSet<String> = out
        .subdags
        .iter()
        .filter(|d| done.contains(&d.node))
        .flat_map(|d| d.members.iter().chain(std::iter::once(&d.entry)).cloned())
        .collect();
    for n in &mut out.nodes[first..] {
        n.done |= inner.contains(&n.name);
    }
    out.warnings.push(format!(
        "the sub-DAG {} starts from its rescue DAG {}: {marked} nodes already DONE",
        path.display(),
        file.display()
    ));
    Ok(rescue::number(path, &out.rescue))
}

/// The sub-DAG's roots (its nodes from `inner` on without parents; a
/// FINAL node waits for all of them instead) wait for its entry.
fn root_at_entry(out: &mut Flat, inner: usize, entry: &str) {
    for j in inner..out.nodes.len() {
        if out.parents[j].is_empty() && !out.nodes[j].is_final {
            out.parents[j].push(entry.to_string());
        }
    }
}

/// Flattens the `SUBDAG EXTERNAL` node `name`'s DAG, read from `spath`,
/// into `out` as its own DAGMan's (its own CONFIG, named descriptions,
/// FINAL and PROVISIONER; its newest rescue); `err` words a failure to read
/// it. Returns its record (without its entry) and its leaves.
fn flatten_subdag(
    name: &str,
    spath: &Path,
    top: &Path,
    place: Place,
    err: &dyn Fn(String) -> FormatError,
    out: &mut Flat,
) -> Result<(SubDagInfo, Vec<String>), FormatError> {
    let sfile = read_file(spath, err)?;
    let config = subdag_config(&sfile, spath, out)?;
    let i = &sfile.info;
    let (dot, node_status_file) = (i.dot.clone(), i.node_status_file.clone());
    let jobstate_log = i.jobstate_log.clone();
    let inner = out.nodes.len();
    let inner_subdags = out.subdags.len();
    let mut own = Scope::default();
    let piece = flatten_piece(sfile, spath, top, &format!("{name}+"), place, &mut own, out)?;
    own.resolve(out);
    let end = out.nodes.len();
    // Its DAGMan's tolerance, not the top DAG's, is its nodes' default.
    let tolerance = super::Tolerance {
        value: config.node_job_failure_tolerance.unwrap_or(0),
        percent: false,
    };
    for n in &mut out.nodes[inner..end] {
        n.tolerance.get_or_insert(tolerance);
    }
    let rescue_number = start_from_rescue(spath, &format!("{name}+"), inner, out)?;
    // Its own FINAL node (not one of a sub-DAG nested in it, which
    // has its own) ends it.
    let nested: std::collections::HashSet<&String> = (out.subdags[inner_subdags..].iter())
        .flat_map(|d| &d.members)
        .collect();
    let own = || {
        out.nodes[inner..end]
            .iter()
            .filter(|n| !nested.contains(&n.name))
    };
    let final_node = own().find(|n| n.is_final).map(|n| n.name.clone());
    // One PROVISIONER per DAGMan: the sub-DAG's file and its splices.
    let provisioners: Vec<&str> = own()
        .filter(|n| n.is_provisioner)
        .map(|n| n.name.as_str())
        .collect();
    if let [first, second, ..] = provisioners[..] {
        return Err(FormatError {
            file: spath.to_path_buf(),
            message: format!(
                "PROVISIONER {}: the DAG already has a PROVISIONER node ({}); a DAG may have only one",
                &second[name.len() + 1..],
                &first[name.len() + 1..]
            ),
        });
    }
    let provisioner = provisioners.first().map(|n| n.to_string());
    let sub = SubDagInfo {
        node: name.to_string(),
        file: spath.to_path_buf(),
        entry: String::new(),
        members: out.nodes[inner..end]
            .iter()
            .map(|n| n.name.clone())
            .collect(),
        max_jobs_submitted: config.max_jobs_submitted,
        max_jobs_idle: config.max_jobs_idle,
        max_post: config.max_post,
        max_pre: config.max_pre,
        final_node,
        provisioner,
        submit_depth_first: config.submit_depth_first,
        always_run_post: config.always_run_post,
        prohibit_multi_jobs: config.prohibit_multi_jobs,
        debug: config.debug,
        default_priority: config.default_priority,
        deferred: false,
        dot,
        node_status_file,
        jobstate_log,
        rescue_number,
    };
    Ok((sub, piece.leaves))
}

/// Reads the deferred sub-DAG `sub` (its node's PRE script has run): its
/// DAG flattened alone, as [`flatten`] flattens a sub-DAG, with its node
/// running in `node_dir` (relative to `top`, the top DAG's folder) and
/// `depth` splices or sub-DAGs down. Returns
/// the flattened DAG and the sub-DAG's record, members filled in.
/// It and its sub-DAGs start from the rescue DAG `rescue` says.
pub(super) fn read_deferred(
    sub: &SubDagInfo,
    node_dir: Option<&Path>,
    top: &Path,
    depth: usize,
    rescue: &Rescue,
    defer: SubDagReading,
) -> Result<(Flat, SubDagInfo), FormatError> {
    let mut out = Flat {
        rescue: rescue.clone(),
        defer,
        ..Flat::default()
    };
    if depth >= MAX_DEPTH {
        return Err(FormatError {
            file: sub.file.clone(),
            message: format!(
                "SUBDAG EXTERNAL {}: nested more than {MAX_DEPTH} deep",
                sub.node
            ),
        });
    }
    let place = Place {
        dir: node_dir,
        depth: depth + 1,
        splice: false,
    };
    let err = |m: String| FormatError {
        file: sub.file.clone(),
        message: format!("SUBDAG EXTERNAL {}: {m}", sub.node),
    };
    // Its roots are left without parents: the manager has them wait for
    // the entry, as `root_at_entry` does.
    let (read, _) = flatten_subdag(&sub.node, &sub.file, top, place, &err, &mut out)?;
    let strong = std::mem::take(&mut out.strong);
    out.weak.retain(|e| !strong.contains(e));
    let read = SubDagInfo {
        entry: sub.entry.clone(),
        ..read
    };
    Ok((out, read))
}

/// Where a file is flattened from.
#[derive(Clone, Copy, Default)]
struct Place<'a> {
    /// The folder its nodes run in, relative to the top DAG's.
    dir: Option<&'a Path>,
    /// How many splices or sub-DAGs down it is.
    depth: usize,
    /// It is a splice.
    splice: bool,
}

/// Flattens `file` (read from `path`) into `out`: its nodes named with
/// `prefix` before their names, running in `place.dir` (relative to `top`,
/// the top DAG's folder, where DAGMan runs: splice and sub-DAG files are
/// found there, or in their DIR); its nodes find their named submit
/// descriptions in `scope`.
fn flatten_piece(
    file: DagFile,
    path: &Path,
    top: &Path,
    prefix: &str,
    place: Place,
    scope: &mut Scope,
    out: &mut Flat,
) -> Result<Piece, FormatError> {
    let (dir, depth) = (place.dir, place.depth);
    let first = out.nodes.len();
    let nested = !prefix.is_empty();
    // A global category (`+name`) keeps its name, `+` included, as in
    // DAGMan: it is not the top DAG's `name`.
    let category = |c: &str| match c.starts_with('+') || !nested {
        true => c.to_string(),
        false => format!("{prefix}{c}"),
    };
    out.warnings.extend(file.warnings);
    scope.add(file.descriptions, path, out);
    let i = &file.info;
    if place.splice && (i.dot.is_some() || i.node_status_file.is_some() || i.jobstate_log.is_some())
    {
        out.warnings.push(format!(
            "{}: DOT, NODE_STATUS_FILE and JOBSTATE_LOG of a splice are ignored (its DAG's apply)",
            path.display()
        ));
    }
    // What each name of this file stands for: as a parent, as a child.
    let mut as_parent: HashMap<String, Vec<String>> = HashMap::new();
    let mut as_child: HashMap<String, Vec<String>> = HashMap::new();
    let mut subdags = Vec::new();
    for mut n in file.info.nodes {
        let local = n.name.clone();
        // HTCondor refuses a splice with a FINAL node (`ProcessSplice`);
        // a splice's SERVICE and PROVISIONER nodes are lifted into its
        // DAG. A sub-DAG's FINAL and PROVISIONER are its own.
        let refused = match &n {
            n if n.is_final && place.splice => Some(format!(
                "SPLICE {}: it has a FINAL node ({local}). This is not permitted.",
                prefix.trim_end_matches('+')
            )),
            _ => None,
        };
        if let Some(message) = refused {
            return Err(FormatError {
                file: path.to_path_buf(),
                message,
            });
        }
        n.name = format!("{prefix}{local}");
        n.category = n.category.as_deref().map(category);
        if let Some(d) = dir {
            n.dir = Some(d.join(n.dir.as_deref().unwrap_or("")).display().to_string());
        }
        if n.subdag.is_some() && !n.done && !n.noop {
            subdags.push((out.nodes.len(), n.dir.clone()));
        }
        if n.subdag.is_none() && n.submit_description.is_none() {
            scope.nodes.push(out.nodes.len());
        }
        as_parent.insert(local.clone(), vec![n.name.clone()]);
        as_child.insert(local, vec![n.name.clone()]);
        out.nodes.push(n);
        out.parents.push(Vec::new());
    }
    let mut pieces: HashMap<String, Piece> = HashMap::new();
    for s in file.splices {
        if depth >= MAX_DEPTH {
            return Err(at_err(
                &s.at,
                format!("SPLICE {}: nested more than {MAX_DEPTH} deep", s.name),
            ));
        }
        let inner_dir = joined(dir, s.dir.as_deref());
        let spath = top
            .join(inner_dir.as_deref().unwrap_or(Path::new("")))
            .join(&s.file);
        let what = format!("SPLICE {}", s.name);
        let sfile = read_file(&spath, |m| at_err(&s.at, format!("{what}: {m}")))?;
        let piece = flatten_piece(
            sfile,
            &spath,
            top,
            &format!("{prefix}{}+", s.name),
            Place {
                dir: inner_dir.as_deref(),
                depth: depth + 1,
                splice: true,
            },
            scope,
            out,
        )?;
        as_parent.insert(s.name.clone(), piece.leaves.clone());
        as_child.insert(s.name.clone(), piece.roots.clone());
        pieces.insert(s.name, piece);
    }
    // Commands naming a spliced node, which DAGMan finds once its splice
    // is joined (a category named here is this file's).
    for (at, kw, name, cmd) in file.spliced_cmds {
        let full = format!("{prefix}{name}");
        let Some(n) = out.nodes[first..].iter_mut().find(|n| n.name == full) else {
            let (splice, node) = name.split_once('+').unwrap_or_default();
            let why =
                format!("{kw}: unknown node `{name}` (splice `{splice}` has no node `{node}`)");
            return Err(at_err(&at, why));
        };
        match cmd {
            grammar::NodeCmd::Category(c) => n.category = Some(category(&c)),
            cmd => cmd.apply(n),
        }
    }
    for (i, local_dir) in subdags {
        let n = &out.nodes[i];
        if depth >= MAX_DEPTH {
            return Err(FormatError {
                file: path.to_path_buf(),
                message: format!(
                    "SUBDAG EXTERNAL {}: nested more than {MAX_DEPTH} deep",
                    n.name
                ),
            });
        }
        let inner_dir = joined(dir, local_dir.as_deref());
        let spath = top
            .join(inner_dir.as_deref().unwrap_or(Path::new("")))
            .join(n.subdag.as_deref().unwrap_or_default());
        let (name, local) = (n.name.clone(), n.name[prefix.len()..].to_string());
        let inner = out.nodes.len();
        // DAGMan reads a sub-DAG's file as it submits the node, after its
        // PRE script, which may write it: when that script runs, so does
        // gridbed (the manager asks for it), for every sub-DAG but those
        // whose nodes the sidecar gives data and no PRE script may write
        // (the data placement must know them ahead). A file missing now is
        // read then too: DAGMan runs the DAG, and the node fails if the
        // file is still missing (its DAGMan exits 1).
        // So is one whose rescue DAG `-DoRescueFrom N` is missing, scripts
        // run or not: its DAGMan cannot start (condor_submit_dag refuses
        // it), which fails its node if the run reaches it, and only then
        // (a node DONE in the rescue the run started from is not).
        let no_rescue = matches!(out.rescue, Rescue::From(_))
            && spath.is_file()
            && rescue::chosen(&spath, &out.rescue).is_err();
        let written = n.pre.is_some() || !spath.is_file();
        let below = format!("{name}+");
        let moves_data =
            (out.move_data.range(below.clone()..).next()).is_some_and(|d| d.starts_with(&below));
        let deferred = no_rescue
            || match out.defer {
                SubDagReading::WithTheDag => false,
                SubDagReading::WhenWritten => written,
                SubDagReading::AtSubmission => written || !moves_data,
            };
        let (sub, leaves) = if deferred {
            let sub = SubDagInfo {
                node: name.clone(),
                file: spath.clone(),
                deferred: true,
                ..Default::default()
            };
            (sub, Vec::new())
        } else {
            let place = Place {
                dir: inner_dir.as_deref(),
                depth: depth + 1,
                splice: false,
            };
            let written_by_pre = match &n.pre {
                Some(_) => {
                    " (if the node's PRE script writes it: the testbed does not run the DAG's scripts, so gridbed reads it with the DAG; with scripts = \"run\" it is read after the PRE script, as DAGMan reads it)"
                }
                None => "",
            };
            let err = |m: String| FormatError {
                file: path.to_path_buf(),
                message: format!("SUBDAG EXTERNAL {name}: {m}{written_by_pre}"),
            };
            flatten_subdag(&name, &spath, top, place, &err, out)?
        };
        // The node ends when its DAG ends. It starts in a no-op, its entry,
        // before its DAG starts: the node's PRE script runs there, its save
        // point is written, its DAG is submitted (one job of the DAGMan
        // above), and its FINAL node waits for it.
        let node = &mut out.nodes[i];
        node.noop = true;
        let (pre, save_point) = (node.pre.take(), node.save_point.take());
        let pre_skip = node.pre_skip.take();
        // The PRE script's exit is the node's: its RETRY (counted on the
        // node, in the manager), UNLESS-EXIT, ABORT-DAG-ON and PRE_SKIP.
        let n = &out.nodes[i];
        let entry = NodeInfo {
            name: format!("{name}+PRE"),
            noop: true,
            pre,
            save_point,
            retry: n.retry,
            retry_unless_exit: n.retry_unless_exit,
            abort_on: n.abort_on.clone(),
            pre_skip,
            ..Default::default()
        };
        let entry_name = entry.name.clone();
        root_at_entry(out, inner, &entry_name);
        out.nodes.push(entry);
        out.parents.push(Vec::new());
        // A deferred sub-DAG's node waits for its entry, and for its DAG's
        // leaves once read.
        let ends = leaves.iter().chain(&sub.final_node);
        out.parents[i].extend(ends.cloned().chain(deferred.then(|| entry_name.clone())));
        out.subdags.push(SubDagInfo {
            entry: entry_name.clone(),
            ..sub
        });
        as_child.insert(local, vec![entry_name]);
    }
    // A file's MAXJOBS lines are read after its splices' (DAGMan reads a
    // splice where its SPLICE line stands, on the first pass): the outer
    // file's limit for a category wins (`maxjobs D0+cat1 12` over splice
    // D0's `maxjobs cat1 11`, HTCondor's job_dagman_splice-cat).
    for (c, n) in &file.info.max_jobs {
        out.max_jobs.insert(category(c), *n);
    }
    let index: HashMap<String, usize> = out.nodes[first..]
        .iter()
        .enumerate()
        .map(|(k, n)| (n.name.clone(), first + k))
        .collect();
    let edge = |out: &mut Flat, p: &str, c: &str| {
        let ci = index[c];
        if !out.parents[ci].iter().any(|x| x == p) {
            out.parents[ci].push(p.to_string());
        }
    };
    for (at, p, c, weak) in &file.edges {
        let find = |map: &HashMap<String, Vec<String>>, n: &String| {
            let names = map.get(n).ok_or_else(|| {
                at_err(
                    at,
                    format!("PARENT/CHILD: no JOB, SUBDAG or SPLICE named `{n}`"),
                )
            })?;
            if let Some(&i) = names.first().and_then(|x| index.get(x)) {
                let why = match &out.nodes[i] {
                    x if x.is_final => Some("the FINAL node, which runs after every other"),
                    x if x.is_service => Some("a SERVICE node, which runs beside the DAG"),
                    _ => None,
                };
                if let Some(why) = why {
                    return Err(at_err(
                        at,
                        format!("PARENT/CHILD: `{n}` is {why} and has no edges"),
                    ));
                }
            }
            Ok(names.clone())
        };
        let (ps, cs) = (find(&as_parent, p)?, find(&as_child, c)?);
        for p in &ps {
            for c in &cs {
                edge(out, p, c);
                let pair = (p.clone(), c.clone());
                match weak {
                    true => out.weak.insert(pair),
                    false => out.strong.insert(pair),
                };
            }
        }
    }
    for (at, o, i) in &file.connects {
        let piece = |n: &String| {
            pieces
                .get(n)
                .ok_or_else(|| at_err(at, format!("CONNECT: no SPLICE named `{n}`")))
        };
        let (po, pi) = (piece(o)?, piece(i)?);
        let outs: Vec<usize> = po.pins_out.keys().copied().collect();
        let ins: Vec<usize> = pi.pins_in.keys().copied().collect();
        if outs.is_empty() || outs != ins {
            return Err(at_err(
                at,
                format!(
                    "CONNECT {o} {i}: `{o}` has output pins {outs:?} and `{i}` input pins {ins:?}; they must be the same numbers"
                ),
            ));
        }
        // A node of the child splice left with no parent is refused, as
        // DAGMan's `Dag::ConnectSplices` refuses it.
        if let Some(orphan) =
            (pi.roots.iter()).find(|r| !pi.pins_in.values().flatten().any(|x| x == *r))
        {
            return Err(at_err(
                at,
                format!(
                    "CONNECT {o} {i}: `{orphan}` of `{i}` has no parent after the pin connections; give it a PIN_IN or a parent"
                ),
            ));
        }
        for (n, from) in &po.pins_out {
            for p in from {
                for c in &pi.pins_in[n] {
                    edge(out, p, c);
                }
            }
        }
    }
    let mut pins_in: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut pins_out: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (pins, into) in [
        (&file.pins_in, &mut pins_in),
        (&file.pins_out, &mut pins_out),
    ] {
        for (at, node, n) in pins {
            let full = format!("{prefix}{node}");
            if !index.contains_key(&full) {
                return Err(at_err(
                    at,
                    format!("PIN: no JOB named `{node}` in this file"),
                ));
            }
            into.entry(*n).or_default().push(full);
        }
    }
    // Roots and leaves among the nodes this file brought in.
    let mut has_child = vec![false; out.nodes.len() - first];
    for k in first..out.nodes.len() {
        for p in &out.parents[k] {
            if let Some(&i) = index.get(p) {
                has_child[i - first] = true;
            }
        }
    }
    let mut roots = Vec::new();
    let mut leaves = Vec::new();
    for k in first..out.nodes.len() {
        let n = &out.nodes[k];
        if n.is_final || n.is_service || n.is_provisioner {
            continue; // no edges
        }
        if out.parents[k].is_empty() {
            roots.push(n.name.clone());
        }
        if !has_child[k - first] {
            leaves.push(n.name.clone());
        }
    }
    Ok(Piece {
        roots,
        leaves,
        pins_in,
        pins_out,
    })
}
