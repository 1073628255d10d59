//! Workflows users bring, in the formats their tools write: WfCommons WfFormat
//! JSON (1.0–1.6), Pegasus DAX XML (2.1, 3.x), Pegasus 5 YAML and HTCondor
//! DAGMan `.dag` files. One parser per format, all producing the same DAG
//! model ([`crate::core::Workflow`]); the format is chosen by content (or
//! extension) unless the user names it.
//!
//! Missing runtimes and sizes take [`Options::default_runtime`] and
//! [`Options::default_size`], with a warning that says how many.

pub mod dagman;
pub mod dax;
pub mod pegasus_yaml;
pub mod wfformat;

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::core::{File, Job, JobSpec, Workflow};

/// A workflow file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Chosen from the file's content and extension.
    Auto,
    /// WfCommons WfFormat JSON, schema 1.0–1.6.
    Wfformat,
    /// Pegasus DAX XML, 2.1 or 3.x.
    Dax,
    /// Pegasus 5 YAML.
    PegasusYaml,
    /// HTCondor DAGMan `.dag`.
    Dagman,
}

impl Format {
    /// Every format, in the order a help text lists them.
    pub const ALL: [Format; 5] = [
        Format::Auto,
        Format::Wfformat,
        Format::Dax,
        Format::PegasusYaml,
        Format::Dagman,
    ];

    /// The format named `name` (as [`Format::name`] writes it).
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// One line on what the format is.
    pub fn description(self) -> &'static str {
        match self {
            Format::Auto => "Chosen from the file's content and extension",
            Format::Wfformat => "WfCommons WfFormat JSON, schema 1.0–1.6",
            Format::Dax => "Pegasus DAX XML, 2.1 or 3.x",
            Format::PegasusYaml => "Pegasus 5 YAML",
            Format::Dagman => "HTCondor DAGMan `.dag`",
        }
    }

    /// The format's name as users write it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Wfformat => "wfformat",
            Format::Dax => "dax",
            Format::PegasusYaml => "pegasus-yaml",
            Format::Dagman => "dagman",
        }
    }
}

/// How to read a workflow file.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The format (default: chosen by content).
    pub format: Format,
    /// Keep the auxiliary and transfer tasks of Pegasus traces (default: drop
    /// them, their parents then preceding their children).
    pub keep_auxiliary: bool,
    /// Runtime (nominal s) of a job whose file gives none.
    pub default_runtime: f64,
    /// Size (bytes) of a file whose size the file does not give.
    pub default_size: u64,
    /// A DAGMan file's sidecar: runtimes, inputs and outputs of its jobs.
    pub sidecar: Option<PathBuf>,
    /// Which rescue DAG a `.dag` starts from (default: the newest).
    pub rescue: dagman::rescue::Rescue,
    /// When a `.dag`'s sub-DAGs are read.
    pub subdag_reading: SubDagReading,
}

/// When a `.dag`'s sub-DAGs are read (HTCondor's DAGMan reads one as it
/// submits its node, after the node's PRE script, which may write it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SubDagReading {
    /// With the DAG: its scripts do not run, so nothing writes a sub-DAG's
    /// file meanwhile, and reading it later would read the same DAG.
    #[default]
    WithTheDag,
    /// Only a sub-DAG whose node has a PRE script, or whose file is
    /// missing, as its node is submitted; the others with the DAG (for
    /// what must see the whole DAG ahead, which then refuses the former).
    WhenWritten,
    /// Every sub-DAG as its node is submitted, as DAGMan reads it.
    AtSubmission,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            format: Format::Auto,
            keep_auxiliary: false,
            default_runtime: 1.0,
            default_size: 0,
            sidecar: None,
            rescue: Default::default(),
            subdag_reading: SubDagReading::WithTheDag,
        }
    }
}

/// `workflow = { file = "…" }`: a workflow read from a file, relative to the
/// testbed.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// The workflow file.
    pub file: String,
    /// Its format (default: chosen by content).
    #[serde(default = "auto")]
    pub format: Format,
    /// Keep auxiliary/transfer tasks of Pegasus traces.
    #[serde(default)]
    pub auxiliary: bool,
    /// Runtime (nominal s) of a job the file gives none (default 1).
    pub default_runtime: Option<f64>,
    /// Size of a file the file gives none (default 0 B).
    pub default_size: Option<crate::units::Size>,
    /// A DAGMan file's sidecar (TOML `[[file]]` and `[[job]]` tables with
    /// sizes, runtimes, inputs and outputs), relative to the testbed.
    pub sidecar: Option<String>,
    /// A DAGMan file's PRE/POST scripts: `skip` (default) or `run` (live:
    /// really run in the site's pool; sim: each ends at once, well).
    #[serde(default)]
    pub scripts: Scripts,
    /// A DAGMan file's node jobs: `skip` (default: a job's exit is its
    /// sidecar's) or `run`: each runs its submit description's program
    /// as it is submitted, whose exit is the job's (with `scripts =
    /// "run"`; see `dagman::program`).
    #[serde(default)]
    pub jobs: Scripts,
}

/// Whether a DAGMan file's scripts run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scripts {
    /// Parsed, not run.
    #[default]
    Skip,
    /// Run.
    Run,
}

fn auto() -> Format {
    Format::Auto
}

impl FileSpec {
    /// The reading options this spec asks for; `base` is the testbed's folder.
    pub fn options(&self, base: &std::path::Path) -> Options {
        let d = Options::default();
        Options {
            format: self.format,
            keep_auxiliary: self.auxiliary,
            default_runtime: self.default_runtime.unwrap_or(d.default_runtime),
            default_size: self.default_size.map_or(d.default_size, |s| s.0),
            sidecar: self.sidecar.as_ref().map(|s| base.join(s)),
            ..d
        }
    }
}

/// A workflow file that could not be read: the file, where in it (a line, or
/// a JSON path), and what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {message}", file.display())]
pub struct FormatError {
    /// The workflow file.
    pub file: PathBuf,
    /// What was wrong, where, and what was expected.
    pub message: String,
}

/// What a parser found, before the DAG is validated.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// Every file with its size.
    pub files: Vec<File>,
    /// Every job, by name.
    pub jobs: Vec<JobSpec>,
    /// Instead of `jobs`: every job referring to `files` and its parents by
    /// index already (WfFormat, which is parsed at the scale of a million
    /// tasks and skips building names only to look them up again).
    pub indexed: Option<Vec<Job>>,
    /// Defaults taken, tasks dropped.
    pub warnings: Vec<String>,
    /// DAGMan's node settings, for a `.dag` file.
    pub dagman: Option<dagman::DagmanInfo>,
}

impl Parsed {
    /// A parse result from `jobs`, of which `missing_runtime` took the
    /// default runtime, and the files with their sizes where known (the
    /// others take the default size); the warnings say how many of each.
    fn with_defaults(
        jobs: Vec<JobSpec>,
        missing_runtime: usize,
        sizes: std::collections::HashMap<String, Option<u64>>,
        opts: &Options,
    ) -> Parsed {
        let mut warnings = Vec::new();
        if missing_runtime > 0 {
            warnings.push(format!(
                "{missing_runtime} jobs have no runtime: {} s assumed",
                opts.default_runtime
            ));
        }
        let missing = sizes.values().filter(|s| s.is_none()).count();
        if missing > 0 {
            warnings.push(format!(
                "{missing} files have no size: {} bytes assumed",
                opts.default_size
            ));
        }
        let mut files: Vec<File> = sizes
            .into_iter()
            .map(|(name, size)| File {
                name,
                size: size.unwrap_or(opts.default_size),
            })
            .collect();
        files.sort_by(|a, b| a.name.cmp(&b.name));
        Parsed {
            files,
            jobs,
            indexed: None,
            warnings,
            dagman: None,
        }
    }
}

/// A workflow read from a file.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The validated DAG.
    pub workflow: Workflow,
    /// The format it was read as.
    pub format: Format,
    /// Defaults taken, tasks dropped.
    pub warnings: Vec<String>,
    /// DAGMan's node settings, for a `.dag` file.
    pub dagman: Option<dagman::DagmanInfo>,
}

/// Whether the file at `path`, read as `format`, is a DAGMan file (a file
/// that cannot be read is none).
pub fn is_dagman(path: &Path, format: Format) -> bool {
    match format {
        Format::Dagman => true,
        Format::Auto => std::fs::read_to_string(path)
            .is_ok_and(|text| detect(path, &text) == Some(Format::Dagman)),
        _ => false,
    }
}

/// The format of `text` read from `path`: by content first, the extension
/// breaking ties.
pub fn detect(path: &Path, text: &str) -> Option<Format> {
    let start = text.trim_start_matches('\u{feff}').trim_start();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    if start.starts_with('{') {
        return Some(Format::Wfformat);
    }
    if start.starts_with('<') {
        return Some(Format::Dax);
    }
    if ext == "dag" || dagman::looks_like(start) {
        return Some(Format::Dagman);
    }
    if ext == "yml" || ext == "yaml" || start.lines().any(|l| l.starts_with("pegasus:")) {
        return Some(Format::PegasusYaml);
    }
    match ext.as_str() {
        "json" => Some(Format::Wfformat),
        "dax" | "xml" => Some(Format::Dax),
        _ => None,
    }
}

/// Reads and validates the workflow in `path`.
///
/// A JSON file (WfFormat) is read without the whitespace between its
/// tokens: WfCommons writes instances indented, and a 100,000-task one is
/// 170 MB of which more than half is indentation that the parse would hold
/// in memory for nothing. Should the compact text not parse, the file is
/// read again as written, so that the error names its real line and column.
pub fn load(path: &Path, opts: &Options) -> Result<Loaded, FormatError> {
    let cannot_read = |e: std::io::Error| FormatError {
        file: path.to_path_buf(),
        message: format!("cannot read: {e}"),
    };
    let (text, compacted) = read_compact(path).map_err(cannot_read)?;
    match load_text(path, &text, opts) {
        Err(_) if compacted => {
            drop(text);
            let text = std::fs::read_to_string(path).map_err(cannot_read)?;
            load_text(path, &text, opts)
        }
        result => result,
    }
}

/// The text of `path`; when it is JSON (its first token `{` or `[`), without
/// the whitespace outside its strings, and `true`.
///
/// A large file is read and compacted by every core at once, each taking a
/// part that starts after a raw newline: valid JSON has none inside a string,
/// so every part starts between tokens. Each part is read in chunks and
/// written compacted into its own stretch of the text (a part never grows),
/// so the file's indentation is never held. A part that ends inside a string
/// proves the file is not valid JSON; it is then read as written, for the
/// parse to say where.
fn read_compact(path: &Path) -> std::io::Result<(String, bool)> {
    let size = std::fs::metadata(path)?.len() as usize;
    let parts = match size < PARALLEL_COMPACT {
        true => 1,
        false => std::thread::available_parallelism().map_or(1, |n| n.get().min(8)),
    };
    read_compact_in(path, parts)
}

/// [`read_compact`] in `parts` parts.
fn read_compact_in(path: &Path, parts: usize) -> std::io::Result<(String, bool)> {
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len() as usize;
    let mut head = vec![0u8; size.min(4096)];
    let n = read_fully(&file, &mut head, 0)?;
    let first = head[..n]
        .iter()
        .position(|b| !b.is_ascii_whitespace() && !matches!(b, 0xEF | 0xBB | 0xBF));
    let json = first.is_some_and(|i| matches!(head[i], b'{' | b'['));
    let as_written = || std::fs::read_to_string(path).map(|t| (t, false));
    if !json {
        return as_written();
    }
    let mut cuts = vec![0];
    let mut probe = vec![0u8; 1 << 16];
    for k in 1..parts {
        let mut at = (size / parts * k).max(cuts[cuts.len() - 1]);
        let cut = loop {
            let n = read_fully(&file, &mut probe, at as u64)?;
            if n == 0 {
                break None;
            }
            if let Some(i) = memchr::memchr(b'\n', &probe[..n]) {
                break Some(at + i + 1);
            }
            at += n;
        };
        match cut {
            Some(c) if c < size => cuts.push(c),
            _ => break,
        }
    }
    cuts.push(size);
    // Zeroed memory is only touched where the compact text is written.
    let mut out = vec![0u8; size];
    let mut stretches = Vec::with_capacity(cuts.len() - 1);
    let mut rest = &mut out[..];
    for w in cuts.windows(2) {
        let (stretch, tail) = std::mem::take(&mut rest).split_at_mut(w[1] - w[0]);
        stretches.push((w[0], stretch));
        rest = tail;
    }
    let compact_part = |(from, stretch): (usize, &mut [u8])| -> std::io::Result<Option<usize>> {
        let mut chunk = vec![0u8; (1 << 20).min(stretch.len())];
        let (mut state, mut done, mut kept) = (Strings::default(), 0, 0);
        while done < stretch.len() {
            let want = chunk.len().min(stretch.len() - done);
            let n = read_fully(&file, &mut chunk[..want], (from + done) as u64)?;
            if n < want {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            kept += state.compact(&chunk[..n], &mut stretch[kept..]);
            done += n;
        }
        Ok(state.between_tokens().then_some(kept))
    };
    let kept: Vec<std::io::Result<Option<usize>>> = std::thread::scope(|scope| {
        let mut stretches = stretches.into_iter();
        let first = stretches.next();
        let others: Vec<_> = stretches
            .map(|part| std::thread::Builder::new().spawn_scoped(scope, || compact_part(part)))
            .collect();
        let mut kept = vec![first.map_or(Ok(Some(0)), compact_part)];
        for other in others {
            kept.push(match other {
                Ok(handle) => handle
                    .join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("compaction failed"))),
                Err(e) => Err(e),
            });
        }
        kept
    });
    let mut end = 0;
    for (w, kept) in cuts.windows(2).zip(kept) {
        let Some(len) = kept? else {
            return as_written();
        };
        out.copy_within(w[0]..w[0] + len, end);
        end += len;
    }
    out.truncate(end);
    out.shrink_to_fit();
    let text = String::from_utf8(out)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    Ok((text, true))
}

/// Below this size a JSON file is read and compacted on one core.
const PARALLEL_COMPACT: usize = 1 << 20;

/// Fills `buf` from `file` at `offset` as far as the file goes; the bytes read.
fn read_fully(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], offset + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Where a stretch of JSON read so far has left off: inside a string, and
/// right after a backslash there.
#[derive(Default)]
struct Strings {
    inside: bool,
    escaped: bool,
}

impl Strings {
    /// Whether the text so far ends between tokens.
    fn between_tokens(&self) -> bool {
        !self.inside && !self.escaped
    }

    /// Writes `bytes` to the front of `out` without the whitespace outside
    /// strings; returns how many bytes were written (never more than read).
    fn compact(&mut self, bytes: &[u8], out: &mut [u8]) -> usize {
        let (mut i, mut kept) = (0, 0);
        fn put(out: &mut [u8], kept: &mut usize, bytes: &[u8]) {
            out[*kept..*kept + bytes.len()].copy_from_slice(bytes);
            *kept += bytes.len();
        }
        while i < bytes.len() {
            if self.escaped {
                // The byte after a backslash, whatever it is.
                put(out, &mut kept, &bytes[i..=i]);
                (self.escaped, i) = (false, i + 1);
            } else if self.inside {
                // A string's bytes up to its closing quote or an escape, at once.
                match memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                    None => {
                        put(out, &mut kept, &bytes[i..]);
                        i = bytes.len();
                    }
                    Some(k) => {
                        put(out, &mut kept, &bytes[i..=i + k]);
                        let escape = bytes[i + k] == b'\\';
                        (self.escaped, self.inside) = (escape, escape);
                        i += k + 1;
                    }
                }
            } else {
                // Tokens and whitespace up to the next quote, without the
                // whitespace.
                let end = memchr::memchr(b'"', &bytes[i..]).map_or(bytes.len(), |k| i + k);
                let mut j = i;
                while j < end {
                    // Indentation is skipped eight spaces at a time.
                    if end - j >= 8 && bytes[j..j + 8] == [b' '; 8] {
                        j += 8;
                        continue;
                    }
                    out[kept] = bytes[j];
                    kept += usize::from(!matches!(bytes[j], b' ' | b'\n' | b'\r' | b'\t'));
                    j += 1;
                }
                if end < bytes.len() {
                    put(out, &mut kept, b"\"");
                    self.inside = true;
                }
                i = end + 1;
            }
        }
        kept
    }
}

/// Parses and validates `text`, read from `path` (which names the file in
/// errors, helps tell the format and anchors a DAGMan `CONFIG`).
pub fn load_text(path: &Path, text: &str, opts: &Options) -> Result<Loaded, FormatError> {
    let err = |message: String| FormatError {
        file: path.to_path_buf(),
        message,
    };
    let format = match opts.format {
        Format::Auto => detect(path, text),
        f => Some(f),
    };
    let mut parsed = match format {
        Some(Format::Wfformat) => wfformat::parse(text, opts, &err)?,
        Some(Format::Dax) => dax::parse(text, opts, &err)?,
        Some(Format::PegasusYaml) => pegasus_yaml::parse(text, opts, &err)?,
        Some(Format::Dagman) => dagman::parse(path, text, opts)?,
        Some(Format::Auto) | None => {
            return Err(err("cannot tell the format: expected WfFormat JSON, Pegasus DAX XML, Pegasus 5 YAML or a DAGMan .dag file (or name it with `format`)".into()));
        }
    };
    // `dagman::parse` has applied the sidecar.
    if opts.sidecar.is_some() && parsed.dagman.is_none() {
        return Err(err("a sidecar completes a DAGMan file only".into()));
    }
    if let Some(info) = parsed.dagman.as_mut() {
        dagman::apply_environment(info);
    }
    // A DAGMan CONFIG file is read relative to the .dag.
    if let Some(info) = parsed.dagman.as_mut()
        && let Some(config) = info.config.clone()
    {
        let cpath = path.parent().unwrap_or(Path::new(".")).join(&config);
        let ctext = std::fs::read_to_string(&cpath).map_err(|e| {
            err(format!(
                "CONFIG {config}: cannot read {}: {e}",
                cpath.display()
            ))
        })?;
        let unread = dagman::apply_config(&ctext, info).map_err(|(line, m)| FormatError {
            file: cpath.clone(),
            message: format!("line {line}: {m}"),
        })?;
        parsed
            .warnings
            .extend(dagman::unread_config_warning(&cpath, &unread));
    }
    let format = format.unwrap_or(Format::Auto);
    let workflow = match parsed.indexed {
        Some(jobs) => Workflow::from_jobs(parsed.files, jobs),
        None => Workflow::build(parsed.files, parsed.jobs),
    }
    .map_err(|e| err(format!("not a valid workflow: {e}")))?;
    Ok(Loaded {
        workflow,
        format,
        warnings: parsed.warnings,
        dagman: parsed.dagman,
    })
}

#[cfg(test)]
mod compact_tests {
    use super::*;

    #[test]
    fn json_is_read_without_the_whitespace_between_tokens_and_strings_intact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.json");
        let text = "\u{feff}{\n  \"a b\": [1,\t2],\r\n  \"q\\\" x\": \"é \\\\\", \"z\": {}\n}\n";
        std::fs::write(&path, text).unwrap();
        let (compact, json) = read_compact(&path).unwrap();
        assert!(json);
        assert_eq!(
            compact,
            "\u{feff}{\"a b\":[1,2],\"q\\\" x\":\"é \\\\\",\"z\":{}}"
        );
        let original: serde_json::Value =
            serde_json::from_str(text.trim_start_matches('\u{feff}')).unwrap();
        let back: serde_json::Value =
            serde_json::from_str(compact.trim_start_matches('\u{feff}')).unwrap();
        assert_eq!(original, back);
        // Other formats are read as they are.
        let dag = dir.path().join("w.dag");
        std::fs::write(&dag, "JOB a a.sub\n  RETRY a 2\n").unwrap();
        assert_eq!(
            read_compact(&dag).unwrap(),
            ("JOB a a.sub\n  RETRY a 2\n".to_string(), false)
        );
    }

    /// An indented JSON text of about `size` bytes whose strings hold
    /// spaces, escaped quotes and backslashes.
    fn indented(size: usize) -> String {
        let mut text = String::from("{\n  \"tasks\": [\n");
        let mut i = 0;
        while text.len() < size {
            text.push_str(&format!(
                "    {{\n      \"name\": \"t {i} \\\" q\",\n      \"path\": \"a\\\\b  c\",\n      \"n\": [ {i}, {i} ]\n    }},\n"
            ));
            i += 1;
        }
        text.push_str("    {}\n  ]\n}\n");
        text
    }

    #[test]
    fn a_large_file_is_compacted_in_parts_as_in_one_pass() {
        let text = indented(3 * PARALLEL_COMPACT);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        std::fs::write(&path, &text).unwrap();
        let mut one_pass = vec![0u8; text.len()];
        let mut strings = Strings::default();
        let n = strings.compact(text.as_bytes(), &mut one_pass);
        assert!(strings.between_tokens());
        one_pass.truncate(n);
        for parts in [1, 2, 3, 8] {
            let (compact, json) = read_compact_in(&path, parts).unwrap();
            assert!(json);
            assert_eq!(compact.as_bytes(), &one_pass[..], "{parts} parts");
        }
        let original: serde_json::Value = serde_json::from_str(&text).unwrap();
        let compact = String::from_utf8(one_pass).unwrap();
        assert_eq!(
            original,
            serde_json::from_str::<serde_json::Value>(&compact).unwrap()
        );
    }

    #[test]
    fn a_raw_newline_inside_a_string_leaves_the_file_as_written() {
        // Invalid JSON: a string that spans the middle of the file, where
        // a part is cut at the first newline, holds raw newlines.
        let half = "x ".repeat(PARALLEL_COMPACT);
        let text = format!("{{\"a\": \"{half}\n{half}\n  y\", \"b\": [1, 2]}}\n");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.json");
        std::fs::write(&path, &text).unwrap();
        let (read, compacted) = read_compact_in(&path, 2).unwrap();
        assert!(!compacted);
        assert_eq!(read, text);
        // The parse names the real line, however many cores.
        let e = load(&path, &Options::default()).unwrap_err();
        assert!(e.message.contains("line 1"), "{}", e.message);
        // The same file is valid with the newlines escaped, and compacts.
        std::fs::write(&path, text.replacen('\n', "\\n", 2)).unwrap();
        let (read, compacted) = read_compact_in(&path, 2).unwrap();
        assert!(compacted);
        assert!(read.ends_with("\"b\":[1,2]}"));
    }
}
