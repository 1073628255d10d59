//! A farm dispatch policy answered by an external program, in the paper's
//! two parts (seed 001 §3.2): `notify` (the head task's files, which
//! executors are free and cache them: an executor or none) and `pick_up`
//! (the notified executor's view of the scheduling window: the tasks it
//! takes).

use std::sync::Arc;

use rand::RngCore;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::Program;
use crate::core::FileId;
use crate::core::cache_index::ExecId;
use crate::policy::Context;
use crate::policy::dispatch::{DispatchPolicy, FarmView, TaskQueue};

/// `external[cmd=…, window=…]` as the farm's dispatch policy.
pub struct ExternalDispatch {
    program: Arc<Program>,
    window: usize,
    rng: ChaCha8Rng,
}

impl ExternalDispatch {
    /// The dispatcher of an `external[cmd=…, timeout=…, window=…]` policy;
    /// `window` is the scheduling window W sent to `pick_up` (default
    /// 3,200, the built-ins').
    pub(in crate::policy) fn build(c: &Context<'_>) -> Result<Box<dyn DispatchPolicy>, String> {
        let window: usize = c.params().get("window", 3200)?;
        if window == 0 {
            return Err("window 0: expected at least 1 task".into());
        }
        Ok(Box::new(ExternalDispatch {
            program: super::program_of(c, &["notify", "pick_up"])?,
            window,
            rng: c.rng(),
        }))
    }
}

impl DispatchPolicy for ExternalDispatch {
    fn notify(&mut self, files: &[FileId], view: &FarmView<'_>) -> Option<ExecId> {
        let cached: Vec<&[ExecId]> = files.iter().map(|&f| view.index.holders(f)).collect();
        let request = json!({
            "type": "notify", "files": files, "cached_by": cached, "free": view.free,
            "utilization": view.utilization, "draw": self.rng.next_u32(),
        });
        let what = || "notify for the head task".to_string();
        let answer = self.program.ask(what, &request)?;
        match answer.get("executor") {
            Some(Value::Null) => None,
            Some(Value::Number(n)) => match n.as_u64().map(|e| e as usize) {
                Some(e) if view.free.get(e) == Some(&true) => Some(e),
                _ => {
                    self.program.refuse(
                        what(),
                        format!("answered executor {n}, which is not a free executor: expected {{\"executor\": ID}} with `free[ID]` true, or {{\"executor\": null}}"),
                    );
                    None
                }
            },
            _ => {
                self.program
                    .refuse(what(), "expected {\"executor\": ID or null}".into());
                None
            }
        }
    }

    fn pick_up(
        &mut self,
        e: ExecId,
        queue: &dyn TaskQueue,
        max: usize,
        view: &FarmView<'_>,
    ) -> Vec<usize> {
        let n = queue.len().min(self.window);
        let tasks: Vec<Value> = (0..n)
            .map(|i| {
                let files = queue.files(i);
                let here = files.iter().filter(|&&f| view.index.cached(f, e)).count();
                json!({"files": files, "cached_here": here})
            })
            .collect();
        let request = json!({
            "type": "pick_up", "executor": e, "max": max, "window": tasks,
            "free": view.free, "utilization": view.utilization, "draw": self.rng.next_u32(),
        });
        let what = || format!("pick_up for executor {e}");
        let Some(answer) = self.program.ask(what, &request) else {
            return Vec::new();
        };
        let picks = super::ids(&answer, "tasks");
        let ok = picks.as_ref().is_some_and(|p| {
            p.len() <= max
                && p.iter().all(|&i| i < n)
                && p.iter().enumerate().all(|(k, i)| !p[..k].contains(i))
        });
        if ok {
            return picks.unwrap_or_default();
        }
        self.program.refuse(
            what(),
            format!("answered {}: expected {{\"tasks\": [POSITIONS]}}, at most {max} distinct positions below {n}", answer.get("tasks").map_or("no `tasks`".into(), Value::to_string)),
        );
        Vec::new()
    }
}
