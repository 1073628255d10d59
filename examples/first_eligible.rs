//! The smallest external policy in Rust: a program that speaks gridbed's
//! policy protocol (`docs/write-a-policy.md`) on its stdin and stdout and
//! places every job on its first eligible site, a round of offers at a
//! time. `gridbed bench policy` times the pipe with it; any language that
//! reads and writes a JSON object a line can do the same.
//!
//! ```text
//! cargo build --release --example first_eligible
//! gridbed run testbeds/quickstart.toml \
//!   --strategy 'external[cmd="target/release/examples/first_eligible"]'
//! ```

use std::io::{BufRead, BufWriter, Write};

use serde::Deserialize;
use serde_json::{Value, json};

/// What it reads of a request; the other fields are skipped unread.
#[derive(Deserialize)]
struct Request {
    #[serde(rename = "type")]
    kind: String,
    id: Option<u64>,
    /// A `select` for one job.
    eligible: Option<Vec<usize>>,
    /// A `select` for a round's offers (after the handshake's `batch`).
    offers: Option<Vec<Offer>>,
}

#[derive(Deserialize)]
struct Offer {
    eligible: Vec<usize>,
}

fn main() -> std::io::Result<()> {
    let mut stdin = std::io::stdin().lock();
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut line = String::new();
    while stdin.read_line(&mut line)? > 0 {
        let request: Request = serde_json::from_str(&line)?;
        line.clear();
        let answer = match (request.kind.as_str(), request.offers, request.eligible) {
            ("hello", ..) => {
                json!({"type": "hello", "protocol": 1, "serves": ["select"], "batch": 1024})
            }
            ("select", Some(offers), _) => {
                let answers: Vec<Value> = offers
                    .iter()
                    .map(|o| json!({"site": o.eligible[0]}))
                    .collect();
                json!({"id": request.id, "answers": answers})
            }
            ("select", None, Some(eligible)) => json!({"id": request.id, "site": eligible[0]}),
            (other, ..) => json!({"id": request.id, "error": format!("not served: {other}")}),
        };
        serde_json::to_writer(&mut out, &answer)?;
        out.write_all(b"\n")?;
        out.flush()?;
    }
    Ok(())
}
