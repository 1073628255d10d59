//! The one error locator of every TOML file gridbed reads (testbeds, the
//! site catalogue, farm testbeds): a byte offset becomes file, line, column
//! and the dotted field it sits in (`site[2].cpus`).

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ConfigError;

/// A loaded text file, for turning byte offsets into line, column and field.
pub(crate) struct Source {
    path: PathBuf,
    text: String,
}

impl Source {
    /// Reads `path`; an unreadable file is an error naming it.
    pub(crate) fn read(path: &Path) -> Result<Source, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            line: 0,
            column: 0,
            field: "(file)".into(),
            message: format!("cannot read: {e}"),
        })?;
        Ok(Source {
            path: path.to_path_buf(),
            text,
        })
    }

    /// `text` as if read from `path` (a file that need not exist).
    pub(crate) fn of(path: &Path, text: &str) -> Source {
        Source {
            path: path.to_path_buf(),
            text: text.into(),
        }
    }

    /// An error at `span` (none: the file as a whole); `field` None derives
    /// it from the text (table header and key of that line).
    pub(crate) fn error(
        &self,
        span: Option<Range<usize>>,
        field: Option<String>,
        message: String,
    ) -> ConfigError {
        let located = span.is_some();
        let offset = span.map(|s| s.start).unwrap_or(0).min(self.text.len());
        let before = &self.text[..offset];
        // Line 0 prints as the file alone: there is no place to point at.
        let line = if located {
            before.matches('\n').count() + 1
        } else {
            0
        };
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        let column = before[line_start..].chars().count() + 1;
        let field = field.unwrap_or_else(|| self.field_at(offset, line_start));
        ConfigError {
            file: self.path.clone(),
            line,
            column,
            field,
            message,
        }
    }

    /// The dotted field at byte `offset`: the last table header above it
    /// (`[[array]]` tables indexed) and the key of its line.
    pub(crate) fn field_at(&self, offset: usize, line_start: usize) -> String {
        let line_end = self.text[offset..]
            .find('\n')
            .map(|i| offset + i)
            .unwrap_or(self.text.len());
        let this_line = &self.text[line_start..line_end];
        let key = this_line
            .split_once('=')
            .map(|(k, _)| k.trim().trim_matches('"').to_string())
            .filter(|k| !k.is_empty() && !k.starts_with('['));
        // Index [[array]] tables so that `site[3].cpus` says which entry.
        let mut table = String::new();
        let mut counts: std::collections::HashMap<String, usize> = Default::default();
        for l in self.text[..line_end].lines() {
            let l = l.trim();
            if let Some(name) = l.strip_prefix("[[").and_then(|r| r.split_once("]]")) {
                let n = counts.entry(name.0.trim().to_string()).or_insert(0);
                table = format!("{}[{}]", name.0.trim(), *n);
                *n += 1;
            } else if let Some(name) = l.strip_prefix('[').and_then(|r| r.split_once(']')) {
                table = name.0.trim().to_string();
            }
        }
        match (table.is_empty(), key) {
            (true, Some(k)) => k,
            (false, Some(k)) => format!("{table}.{k}"),
            (false, None) => table,
            (true, None) => "(top level)".into(),
        }
    }

    /// Parses the whole file; a TOML or type error is located.
    pub(crate) fn parse<T: for<'de> Deserialize<'de>>(&self) -> Result<T, ConfigError> {
        toml::from_str(&self.text).map_err(|e| self.error(e.span(), None, e.message().to_string()))
    }
}
