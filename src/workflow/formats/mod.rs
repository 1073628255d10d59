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
}

impl Default for Options {
    fn default() -> Self {
        Options {
            format: Format::Auto,
            keep_auxiliary: false,
            default_runtime: 1.0,
            default_size: 0,
            sidecar: None,
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
fn read_compact(path: &Path) -> std::io::Result<(String, bool)> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata().map(|m| m.len() as usize).unwrap_or(0);
    let mut out: Vec<u8> = Vec::with_capacity(size);
    let mut chunk = vec![0u8; 1 << 20];
    // None until the first token says whether this is JSON.
    let mut json: Option<bool> = None;
    let (mut in_string, mut escaped) = (false, false);
    loop {
        let n = match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let bytes = &chunk[..n];
        if json.is_none() {
            let first = bytes
                .iter()
                .position(|b| !b.is_ascii_whitespace() && !matches!(b, 0xEF | 0xBB | 0xBF));
            json = first.map(|i| matches!(bytes[i], b'{' | b'['));
        }
        if json != Some(true) {
            out.extend_from_slice(bytes);
            continue;
        }
        let mut i = 0;
        while i < bytes.len() {
            if escaped {
                // The byte after a backslash, whatever it is.
                out.push(bytes[i]);
                (escaped, i) = (false, i + 1);
            } else if in_string {
                // A string's bytes up to its closing quote or an escape, at once.
                match memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                    None => {
                        out.extend_from_slice(&bytes[i..]);
                        i = bytes.len();
                    }
                    Some(k) => {
                        let b = bytes[i + k];
                        out.extend_from_slice(&bytes[i..=i + k]);
                        (escaped, in_string) = (b == b'\\', b == b'\\');
                        i += k + 1;
                    }
                }
            } else {
                // Between strings: tokens and whitespace up to the next quote,
                // copied without the whitespace.
                let end = memchr::memchr(b'"', &bytes[i..]).map_or(bytes.len(), |k| i + k);
                out.extend(
                    bytes[i..end]
                        .iter()
                        .filter(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t')),
                );
                if end < bytes.len() {
                    out.push(b'"');
                    in_string = true;
                }
                i = end + 1;
            }
        }
    }
    let text = String::from_utf8(out)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    Ok((text, json == Some(true)))
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
    if let Some(sidecar) = &opts.sidecar {
        if parsed.dagman.is_none() {
            return Err(err("a sidecar completes a DAGMan file only".into()));
        }
        dagman::apply_sidecar(sidecar, &mut parsed)?;
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
        dagman::apply_config(&ctext, info).map_err(|(line, m)| FormatError {
            file: cpath.clone(),
            message: format!("line {line}: {m}"),
        })?;
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
}
