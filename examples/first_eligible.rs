//! The smallest external policy in Rust: a program that speaks gridbed's
//! policy protocol (`docs/write-a-policy.md`) on its stdin and stdout and
//! places every job on its first eligible site. `gridbed bench policy`
//! times the pipe with it; any language that reads and writes a JSON
//! object a line can do the same.
//!
//! ```text
//! cargo build --release --example first_eligible
//! gridbed run testbeds/quickstart.toml \
//!   --strategy 'external[cmd="target/release/examples/first_eligible"]'
//! ```

use std::io::{BufRead, BufWriter, Write};

use serde_json::{Value, json};

fn main() -> std::io::Result<()> {
    let stdin = std::io::stdin().lock();
    let mut out = BufWriter::new(std::io::stdout().lock());
    for line in stdin.lines() {
        let request: Value = serde_json::from_str(&line?)?;
        let answer = match request["type"].as_str() {
            Some("hello") => json!({"type": "hello", "protocol": 1, "serves": ["select"]}),
            Some("select") => json!({"id": request["id"], "site": request["eligible"][0]}),
            other => json!({"id": request["id"], "error": format!("not served: {other:?}")}),
        };
        serde_json::to_writer(&mut out, &answer)?;
        out.write_all(b"\n")?;
        out.flush()?;
    }
    Ok(())
}
