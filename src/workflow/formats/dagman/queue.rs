//! A submit description's `queue` statements, as `condor_submit` reads
//! them (HTCondor manual, "Submitting a Job": the `queue` command):
//! `queue [N]`, and the forms that queue over a list of items, each item
//! `N` procs with its variables set (`Item` when none is named):
//!
//! * `queue [N] [var] in [(] item, item … [)]`: the items written;
//! * `queue [N] [var] matching [files | dirs] [(] pattern … [)]`: the
//!   paths each file-name pattern matches, from the folder `condor_submit`
//!   runs in, in name order;
//! * `queue [N] [var, var …] from (` one item a line `)`, or `from file`:
//!   each line an item; with several variables the first gets the line's
//!   first word, and so on, the last the rest of the line
//!   (`MacroStreamXFormSource::set_iter_item`).
//!
//! A list in parentheses may run over lines up to one starting with `)`;
//! lines end with `\` to go on. Slices (`[a:b]`) are not read: an error
//! says so.

use std::path::Path;

/// One `queue` statement.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Queue {
    /// Where it starts in the description: its procs have the commands
    /// set before it.
    pub(super) at: usize,
    /// The procs it queues for each item (`N`).
    pub(super) count: u32,
    /// The variables each item sets.
    pub(super) vars: Vec<String>,
    /// Its items in order; none when it queues over no list.
    pub(super) items: Option<Vec<String>>,
}

impl Queue {
    /// The values item `item` gives its variables, by name: the first
    /// variable the whole item when it is the only one, else the item cut
    /// at commas and blanks, the last variable taking what is left.
    pub(super) fn values(&self, item: &str) -> Vec<(String, String)> {
        let mut rest = item.trim();
        let mut values = Vec::new();
        for (i, var) in self.vars.iter().enumerate() {
            let value = match i + 1 == self.vars.len() {
                true => std::mem::take(&mut rest),
                false => {
                    let end = rest.find([',', ' ', '\t']).unwrap_or(rest.len());
                    let (word, after) = rest.split_at(end);
                    rest = after.trim_start_matches([',', ' ', '\t']);
                    word
                }
            };
            values.push((var.clone(), value.to_string()));
        }
        values
    }
}

/// The `queue` statements of `text`, a description read in `dir` (where
/// `matching` patterns and `from` files are found).
pub(super) fn statements(text: &str, dir: &Path) -> Result<Vec<Queue>, String> {
    let mut lines = Vec::new();
    let mut start = 0;
    for raw in text.split_inclusive('\n') {
        lines.push((start, raw.trim_end_matches(['\n', '\r'])));
        start += raw.len();
    }
    let mut statements = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let at = lines[i].0;
        // One logical line: each `\` goes on to the next.
        let mut line = String::new();
        while i < lines.len() {
            let physical = lines[i].1;
            i += 1;
            match physical.strip_suffix('\\') {
                Some(part) => line.push_str(part),
                None => {
                    line.push_str(physical);
                    break;
                }
            }
        }
        let trimmed = line.trim();
        let is_queue = (trimmed.get(..5)).is_some_and(|w| w.eq_ignore_ascii_case("queue"))
            && trimmed[5..].chars().next().is_none_or(char::is_whitespace);
        if !is_queue || trimmed.contains('=') {
            continue;
        }
        let args = trimmed[5..].trim();
        // A list in parentheses over lines: up to a line starting with `)`.
        let mut block = None;
        if args.ends_with('(') {
            let end = (i..lines.len())
                .find(|&k| lines[k].1.trim_start().starts_with(')'))
                .ok_or_else(|| format!("its `{trimmed}` has no line closing its list with `)`"))?;
            block = Some(lines[i..end].iter().map(|l| l.1).collect::<Vec<_>>());
            i = end + 1;
        }
        statements.push(statement(at, trimmed, args, block, dir)?);
    }
    Ok(statements)
}

/// The statement at `at` written `line`, its arguments `args`, the lines
/// of its list in parentheses `block` when it has one over lines.
fn statement(
    at: usize,
    line: &str,
    args: &str,
    block: Option<Vec<&str>>,
    dir: &Path,
) -> Result<Queue, String> {
    let words = |s: &str| -> Vec<String> {
        (s.split([',', ' ', '\t']).filter(|w| !w.is_empty()))
            .map(str::to_string)
            .collect()
    };
    // Its first word that names a list's form.
    let mut mode = None;
    let mut from = 0;
    while let Some(start) = args[from..].find(|c: char| !c.is_whitespace()) {
        let start = from + start;
        let end = (args[start..].find(char::is_whitespace)).map_or(args.len(), |e| start + e);
        let word = &args[start..end];
        if let Some(m) = ["in", "matching", "from"]
            .into_iter()
            .find(|m| word.eq_ignore_ascii_case(m))
        {
            mode = Some((m, start, end));
            break;
        }
        from = end;
    }
    let (head, list) = match mode {
        Some((m, start, end)) => (&args[..start], Some((m, args[end..].trim()))),
        None => (args, None),
    };
    let mut head = words(head);
    let count = match head.first().map(|w| w.parse::<u32>()) {
        Some(Ok(n)) => {
            head.remove(0);
            n
        }
        Some(Err(_)) if list.is_none() || head[0].starts_with(['-', '+', '$']) => {
            return Err(format!("its `{line}` does not queue a count gridbed reads"));
        }
        _ => 1,
    };
    let Some((mode, mut rest)) = list else {
        if !head.is_empty() {
            return Err(format!("its `{line}` does not queue a count gridbed reads"));
        }
        return Ok(Queue {
            at,
            count,
            vars: Vec::new(),
            items: None,
        });
    };
    let mut kind = None;
    if mode == "matching" {
        for k in ["files", "dirs", "any"] {
            if let Some(after) = (rest.get(..k.len()))
                .filter(|w| w.eq_ignore_ascii_case(k))
                .map(|_| &rest[k.len()..])
                .filter(|a| a.is_empty() || a.starts_with(char::is_whitespace))
            {
                kind = Some(k);
                rest = after.trim_start();
            }
        }
    }
    if rest.starts_with('[') {
        return Err(format!(
            "its `{line}` takes a slice of its list, which gridbed does not read"
        ));
    }
    // The list's lines: over lines, inline in parentheses, or (`from`) a
    // file's.
    let listed: Vec<String> = match (block, rest.strip_prefix('(')) {
        (Some(block), _) => block.iter().map(|l| l.to_string()).collect(),
        (None, Some(inner)) => {
            let inner = inner
                .strip_suffix(')')
                .ok_or_else(|| format!("its `{line}` does not close its list with `)`"))?;
            vec![inner.to_string()]
        }
        (None, None) if mode == "from" => {
            let file = dir.join(rest);
            let text = std::fs::read_to_string(&file).map_err(|e| {
                format!(
                    "its `{line}` names a list it cannot read ({}: {e})",
                    file.display()
                )
            })?;
            text.lines().map(str::to_string).collect()
        }
        (None, None) => vec![rest.to_string()],
    };
    let listed = listed
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    let items: Vec<String> = match mode {
        "from" => listed.map(str::to_string).collect(),
        "in" => listed.flat_map(words).collect(),
        _ => {
            let mut paths = Vec::new();
            for pattern in listed.flat_map(words) {
                paths.extend(matching(&pattern, kind, dir)?);
            }
            paths
        }
    };
    if head.is_empty() {
        head.push("Item".into());
    }
    Ok(Queue {
        at,
        count,
        vars: head,
        items: Some(items),
    })
}

/// The paths `pattern` matches in `dir`, as written from it, in name
/// order: only files (`files`) or folders (`dirs`) when asked; a pattern
/// with no wildcard stands for itself.
fn matching(pattern: &str, kind: Option<&str>, dir: &Path) -> Result<Vec<String>, String> {
    if !pattern.contains(['*', '?', '[']) {
        return Ok(vec![pattern.to_string()]);
    }
    let base = glob::Pattern::escape(&dir.to_string_lossy());
    let full = format!("{base}/{pattern}");
    let found = glob::glob(&full).map_err(|e| format!("the pattern `{pattern}`: {e}"))?;
    let mut paths = Vec::new();
    for path in found.flatten() {
        let keep = match kind {
            Some("files") => path.is_file(),
            Some("dirs") => path.is_dir(),
            _ => true,
        };
        if keep && let Ok(rel) = path.strip_prefix(dir) {
            paths.push(rel.to_string_lossy().into_owned());
        }
    }
    paths.sort();
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(text: &str, dir: &Path) -> Vec<(u32, Vec<String>, Option<Vec<String>>)> {
        (statements(text, dir).unwrap().into_iter())
            .map(|q| (q.count, q.vars, q.items))
            .collect()
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn lists_are_read_as_condor_submit_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["b.dat", "a.dat", "c.txt"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("d.dat")).unwrap();
        std::fs::write(dir.path().join("rows"), "x 1\n\n# no\ny 2\n").unwrap();
        let d = dir.path();
        let q = |t: &str| items(t, d);
        assert_eq!(q("queue\n"), [(1, vec![], None)]);
        assert_eq!(
            q("queue 1 input in a, \\\n\tb, \\\n\tc\n"),
            [(1, strings(&["input"]), Some(strings(&["a", "b", "c"])))]
        );
        assert_eq!(
            q("Queue 2 in (x y,z)\n"),
            [(2, strings(&["Item"]), Some(strings(&["x", "y", "z"])))]
        );
        assert_eq!(
            q("queue f matching files *.dat\n"),
            [(1, strings(&["f"]), Some(strings(&["a.dat", "b.dat"])))],
            "files only, in name order"
        );
        assert_eq!(
            q("queue matching dirs *.dat\n")[0].2,
            Some(strings(&["d.dat"]))
        );
        assert_eq!(
            q("queue matching *.dat\n")[0].2,
            Some(strings(&["a.dat", "b.dat", "d.dat"]))
        );
        assert_eq!(
            q("queue a, b from (\n  one two three\n# not an item\n  four\n)\nqueue\n"),
            [
                (
                    1,
                    strings(&["a", "b"]),
                    Some(strings(&["one two three", "four"]))
                ),
                (1, vec![], None)
            ],
            "the block is the statement's; the next one is read after it"
        );
        assert_eq!(q("queue from rows\n")[0].2, Some(strings(&["x 1", "y 2"])));
        let why = |t: &str| statements(t, d).unwrap_err();
        assert!(why("queue from (\na\n").contains("closing"));
        assert!(why("queue in [1:] (a b)\n").contains("slice"));
        assert!(why("queue from nowhere\n").contains("cannot read"));
        assert!(why("queue -1\n").contains("count"));
        assert!(why("queue x y\n").contains("count"));
    }

    #[test]
    fn an_item_fills_its_variables_left_to_right() {
        let q = Queue {
            at: 0,
            count: 1,
            vars: strings(&["a", "b", "c"]),
            items: None,
        };
        let values =
            |item: &str| -> Vec<String> { q.values(item).into_iter().map(|(_, v)| v).collect() };
        assert_eq!(values("1, 2 3 4"), ["1", "2", "3 4"]);
        assert_eq!(values("1"), ["1", "", ""]);
        let one = Queue {
            vars: strings(&["args"]),
            ..q.clone()
        };
        assert_eq!(
            one.values(" x y ")[0].1,
            "x y",
            "one variable: the whole item"
        );
    }
}
