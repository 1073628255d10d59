//! SIGINT and SIGTERM as a command-line user expects of a long run: the
//! first asks the work to stop, the second ends the process at once.
//!
//! The first signal is DAGMan's `condor_rm` of the DAG (HTCondor's
//! `main_shutdown_remove`): every engine that listens ([`on_stop`]) removes
//! its jobs in flight and ends its run, whose record, database and rescue
//! are then written as for any run that did not complete; the processes the
//! work started (PRE and POST scripts, jobs' programs: [`Child::work`]) get
//! SIGTERM at once. A FINAL node still runs, as DAGMan runs it after a
//! removal. The command then exits 128 + the signal (130, 143). A
//! second signal kills every child still registered (policy programs
//! included), removes the temporary pools registered ([`remove_at_exit`])
//! and exits at once.
//!
//! Nothing here acts unless the process asked for it with [`watch`] (the
//! command line does); a library caller keeps the signals' default action.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

/// The first stopping signal received (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

static STATE: Mutex<State> = Mutex::new(State {
    next: 0,
    listeners: Vec::new(),
    children: Vec::new(),
    pools: Vec::new(),
});

struct State {
    next: u64,
    listeners: Vec<(u64, Box<dyn Fn() + Send>)>,
    /// Registered children: id, pid, whether the first signal stops it.
    children: Vec<(u64, u32, bool)>,
    /// Temporary folders to remove on an immediate exit: id, path.
    pools: Vec<(u64, PathBuf)>,
}

impl State {
    fn id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }
}

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Takes over SIGINT and SIGTERM for the rest of the process (see the
/// module docs). The handlers are in place when this returns.
pub fn watch() -> std::io::Result<()> {
    static WATCHING: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if WATCHING.get().is_some() {
        return Ok(());
    }
    use tokio::signal::unix::{SignalKind, signal};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    let (mut int, mut term) = {
        let _in = rt.enter();
        (
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
        )
    };
    std::thread::Builder::new()
        .name("gridbed-signals".into())
        .spawn(move || {
            rt.block_on(async {
                loop {
                    let sig = tokio::select! {
                        Some(()) = int.recv() => libc::SIGINT,
                        Some(()) = term.recv() => libc::SIGTERM,
                        else => return,
                    };
                    received(sig);
                }
            })
        })?;
    let _ = WATCHING.set(());
    Ok(())
}

/// The signal that asked the work to stop, if one did.
pub fn requested() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The signal's name as a user reads it.
pub fn name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

fn received(sig: i32) {
    if SIGNAL
        .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        let st = state();
        for &(_, pid, _) in &st.children {
            kill(pid, libc::SIGKILL);
        }
        for (_, dir) in &st.pools {
            let _ = std::fs::remove_dir_all(dir);
        }
        eprintln!("\n{}: stopped at once", name(sig));
        std::process::exit(128 + sig);
    }
    eprintln!(
        "\n{}: stopping: the jobs in flight are removed, then the record and database are written ({} again to stop at once)",
        name(sig),
        if sig == libc::SIGINT {
            "Ctrl-C"
        } else {
            "the signal"
        }
    );
    let listeners = {
        let mut st = state();
        for &(_, pid, work) in &st.children {
            if work {
                kill(pid, libc::SIGTERM);
            }
        }
        std::mem::take(&mut st.listeners)
    };
    for (_, f) in listeners {
        f();
    }
}

fn kill(pid: u32, sig: i32) {
    if let Ok(pid) = i32::try_from(pid) {
        // SAFETY: a plain signal to a child this process started and has
        // not yet reaped (its guard is alive), so the pid is still its own.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// A listener of [`on_stop`]; dropping it unregisters it.
pub struct Listener(u64);

impl Drop for Listener {
    fn drop(&mut self) {
        state().listeners.retain(|(id, _)| *id != self.0);
    }
}

/// Calls `f` once when a stop is asked (at once if it was already).
pub fn on_stop(f: impl Fn() + Send + 'static) -> Listener {
    if requested().is_some() {
        f();
        return Listener(0);
    }
    let mut st = state();
    let id = st.id();
    st.listeners.push((id, Box::new(f)));
    Listener(id)
}

/// A child process registered while it runs; dropping the guard (once the
/// child is reaped) unregisters it.
pub struct Child(u64);

impl Child {
    /// A process of the work (a script, a job's program) running when the
    /// first signal comes: it gets SIGTERM then. One started after it (a
    /// FINAL node's script, which DAGMan runs after a removal) runs on,
    /// unless a second signal comes.
    pub fn work(pid: u32) -> Child {
        Child::register(pid, true)
    }

    /// A helper the run needs to its end (a policy program): killed only
    /// by an immediate exit.
    pub fn helper(pid: u32) -> Child {
        Child::register(pid, false)
    }

    fn register(pid: u32, work: bool) -> Child {
        let mut st = state();
        let id = st.id();
        st.children.push((id, pid, work));
        Child(id)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        state().children.retain(|(id, ..)| *id != self.0);
    }
}

/// A temporary folder removed by an immediate exit; dropping the guard
/// unregisters it (its owner removes it then, or keeps it).
pub struct Pool(u64);

/// Registers `dir` for removal by an immediate exit.
pub fn remove_at_exit(dir: PathBuf) -> Pool {
    let mut st = state();
    let id = st.id();
    st.pools.push((id, dir));
    Pool(id)
}

impl Drop for Pool {
    fn drop(&mut self) {
        state().pools.retain(|(id, _)| *id != self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners_and_children_are_unregistered_by_their_guards() {
        let before = state().listeners.len();
        let l = on_stop(|| {});
        let c = Child::helper(u32::MAX);
        let p = remove_at_exit(PathBuf::from("/nonexistent/gridbed-test"));
        assert_eq!(state().listeners.len(), before + 1);
        assert!(state().children.iter().any(|&(_, pid, _)| pid == u32::MAX));
        drop((l, c, p));
        assert_eq!(state().listeners.len(), before);
        assert!(!state().children.iter().any(|&(_, pid, _)| pid == u32::MAX));
        assert!(
            !state()
                .pools
                .iter()
                .any(|(_, d)| d.ends_with("gridbed-test"))
        );
    }
}
