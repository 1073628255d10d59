//! Policies in any language: `external[cmd="python3 my_policy.py"]` runs a
//! program once per run and asks it for each decision over a pipe, in JSON
//! Lines (protocol 1, `docs/write-a-policy.md`). gridbed writes one request
//! a line on the program's stdin and reads one answer a line from its
//! stdout; the program's stderr passes through to gridbed's, prefixed.
//!
//! The handshake: gridbed sends `{"type": "hello", "protocol": 1, "seed": …,
//! "wants": [...], "sites": [...]}`; the program answers `{"type": "hello",
//! "protocol": 1, "serves": [...]}` with the decisions it serves
//! (`select`, `evict`, `notify`, `pick_up`). Every request then carries an
//! `id` that the answer repeats, and a `draw`: the next number of a
//! generator seeded for that policy as the built-in would be, so that a
//! program that takes its randomness from it repeats for a seed (and a
//! re-implementation of a built-in draws what the built-in draws).
//!
//! A program that cannot start, exits, prints what is not an answer,
//! answers a choice that does not exist, or does not answer within its
//! `timeout` (seconds, default 10) fails the run: the policy holds (a
//! selector) or falls back to the key order (an eviction) so that the
//! engine's state stays whole, and the engine ends the run with the
//! [`ProgramFailure`] it finds in the run's [`Programs`].

mod dispatch;
mod eviction;
mod program;
mod selector;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

pub use dispatch::ExternalDispatch;
pub use eviction::ExternalEviction;
pub use program::{MAX_BATCH, Program};
pub use selector::ExternalSelector;

use super::Context;

/// The protocol's version, sent and expected in the handshake.
pub const PROTOCOL: u32 = 1;

/// What an external program failed at, naming the program, the decision
/// and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("external policy `{program}`, {decision}: {message}")]
pub struct ProgramFailure {
    /// The command line.
    pub program: String,
    /// The decision asked ("handshake", "select for job `x`", …).
    pub decision: String,
    /// What went wrong and what was expected.
    pub message: String,
}

/// A site as the handshake describes it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SiteSummary {
    /// Its index: the id requests and answers use.
    pub id: usize,
    /// Its name.
    pub name: String,
    /// CPU slots.
    pub cpus: usize,
    /// Pool capacity (nominal bytes).
    pub disk: u64,
    /// Its interface's rate out and in (nominal bytes/s; `null`: unlimited).
    pub bandwidth_out: Option<f64>,
    /// See `bandwidth_out`.
    pub bandwidth_in: Option<f64>,
}

/// The external programs of one run, one per command line, started once and
/// shared by every policy that names them.
#[derive(Default)]
pub struct Programs {
    seed: u64,
    sites: Vec<SiteSummary>,
    programs: Mutex<Vec<Arc<Program>>>,
    failure: Arc<OnceLock<ProgramFailure>>,
}

impl Programs {
    /// The table of a run seeded `seed` on `sites`.
    pub fn new(seed: u64, sites: Vec<SiteSummary>) -> Programs {
        Programs {
            seed,
            sites,
            ..Programs::default()
        }
    }

    /// The program `cmd`, added on first use; `decision` is one it must
    /// serve.
    fn program(&self, cmd: &str, timeout: Duration, decision: &'static str) -> Arc<Program> {
        let mut programs = self.programs.lock().unwrap_or_else(|e| e.into_inner());
        let p = match programs.iter().find(|p| p.cmd() == cmd) {
            Some(p) => p.clone(),
            None => {
                let p = Arc::new(Program::new(cmd, self.failure.clone()));
                programs.push(p.clone());
                p
            }
        };
        p.want(decision, timeout);
        p
    }

    /// Starts every program and checks its handshake.
    pub fn start_all(&self) -> Result<(), ProgramFailure> {
        let programs = self.programs.lock().unwrap_or_else(|e| e.into_inner());
        for p in programs.iter() {
            p.start(self.seed, &self.sites)?;
        }
        Ok(())
    }

    /// The first failure of any program, if one failed.
    pub fn failure(&self) -> Option<ProgramFailure> {
        self.failure.get().cloned()
    }
}

/// The list of ids an answer gives under `key` (`evict`, `tasks`), if it
/// is one.
fn ids(answer: &serde_json::Map<String, serde_json::Value>, key: &str) -> Option<Vec<usize>> {
    let list = answer.get(key)?.as_array()?;
    list.iter()
        .map(|v| v.as_u64().map(|i| i as usize))
        .collect()
}

/// The program an `external[cmd=…, timeout=…]` policy names.
fn program_of(c: &Context<'_>, decisions: &[&'static str]) -> Result<Arc<Program>, String> {
    let cmd: String = c.params().get("cmd", String::new())?;
    let timeout: f64 = c.params().get("timeout", 10.0)?;
    if cmd.trim().is_empty() {
        return Err("expected `cmd=\"program and its arguments\"`".into());
    }
    if !(timeout > 0.0 && timeout <= 86_400.0) {
        return Err(format!("timeout {timeout}: expected seconds in (0, 86400]"));
    }
    let timeout = Duration::from_secs_f64(timeout);
    let mut program = None;
    for &d in decisions {
        program = Some(c.programs.program(&cmd, timeout, d));
    }
    Ok(program.expect("a decision"))
}
