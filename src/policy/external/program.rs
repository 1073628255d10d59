//! One external policy program: started with `sh -c "exec CMD"` in the
//! current directory, spoken to in JSON Lines, ended when the run drops it.
//! Answers are read on the asking thread, waiting with `poll(2)` up to the
//! timeout, so that a silent program is found out instead of hanging the
//! run, and an answer costs no thread hand-off.

use std::collections::{BTreeSet, VecDeque};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::os::fd::AsRawFd;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{PROTOCOL, ProgramFailure, SiteSummary};

/// The most `select` offers gridbed puts in one request, whatever a
/// program takes.
pub const MAX_BATCH: usize = 1024;

/// Lines of the program's stderr kept for a failure's message.
const STDERR_TAIL: usize = 8;

/// An external policy program, shared by the policies of one run that name
/// its command line.
pub struct Program {
    cmd: String,
    failure: Arc<OnceLock<ProgramFailure>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Decisions the run's policies will ask of it.
    wanted: BTreeSet<&'static str>,
    timeout: Duration,
    started: bool,
    /// The most `select` offers it takes in one request (its handshake's
    /// `batch`; 1 without one).
    batch: usize,
    /// Whether its `select` requests list only the sites that changed
    /// since the last (its handshake's `site_changes`).
    site_changes: bool,
    running: Option<Running>,
    next_id: u64,
}

struct Running {
    child: Child,
    /// Killed by an immediate exit on a second signal.
    _registered: crate::interrupt::Child,
    /// Taken (closed) when it is ended.
    stdin: Option<BufWriter<ChildStdin>>,
    /// Its stdout, a line at a time.
    lines: Lines,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl Drop for Running {
    /// Closes its stdin (a program ends when its input does), waits a
    /// second for it, then kills it: no program outlives its run.
    fn drop(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.flush();
        }
        let until = Instant::now() + Duration::from_secs(1);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Program {
    pub(super) fn new(cmd: &str, failure: Arc<OnceLock<ProgramFailure>>) -> Program {
        Program {
            cmd: cmd.to_string(),
            failure,
            state: Mutex::new(State::default()),
        }
    }

    /// Its command line.
    pub fn cmd(&self) -> &str {
        &self.cmd
    }

    /// A policy will ask it `decision`, answered within `timeout` (the
    /// longest any of its policies allows).
    pub(super) fn want(&self, decision: &'static str, timeout: Duration) {
        let mut s = self.lock();
        s.wanted.insert(decision);
        s.timeout = s.timeout.max(timeout);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn failure(&self, decision: &str, message: String) -> ProgramFailure {
        ProgramFailure {
            program: self.cmd.clone(),
            decision: decision.to_string(),
            message,
        }
    }

    /// Records the run's first failure and ends the program.
    fn fail(&self, state: &mut State, failure: ProgramFailure) -> ProgramFailure {
        state.running = None;
        let _ = self.failure.set(failure.clone());
        failure
    }

    /// Starts it and checks its handshake (once; later calls return what
    /// the first found).
    pub fn start(&self, seed: u64, sites: &[SiteSummary]) -> Result<(), ProgramFailure> {
        let mut s = self.lock();
        if s.started {
            return match self.failure.get() {
                Some(f) if f.program == self.cmd => Err(f.clone()),
                _ => Ok(()),
            };
        }
        s.started = true;
        let running = match self.spawn() {
            Ok(r) => r,
            Err(e) => {
                let f = self.failure(
                    "start",
                    format!("cannot start `sh -c \"exec {}\"`: {e}", self.cmd),
                );
                return Err(self.fail(&mut s, f));
            }
        };
        s.running = Some(running);
        let wants: Vec<&str> = s.wanted.iter().copied().collect();
        let hello = json!({"type": "hello", "protocol": PROTOCOL, "seed": seed, "wants": wants, "sites": sites});
        let answer = self.exchange(&mut s, "handshake", &hello, false)?;
        let expected = format!(
            "expected {{\"type\": \"hello\", \"protocol\": {PROTOCOL}, \"serves\": [...]}} with {wants:?} among the decisions served"
        );
        let protocol = answer.get("protocol").and_then(Value::as_u64);
        let serves: Option<Vec<&str>> = answer
            .get("serves")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect());
        let problem = match (
            answer.get("type").and_then(Value::as_str),
            protocol,
            &serves,
        ) {
            (Some("hello"), Some(p), Some(serves)) if p == u64::from(PROTOCOL) => wants
                .iter()
                .find(|w| !serves.contains(w))
                .map(|w| format!("it does not serve `{w}` (it serves {serves:?}); {expected}")),
            (Some("hello"), Some(p), _) if p != u64::from(PROTOCOL) => Some(format!(
                "it speaks protocol {p}, this gridbed speaks {PROTOCOL}"
            )),
            _ => Some(format!(
                "answered {}; {expected}",
                shorten(&Value::Object(answer.clone()))
            )),
        };
        let batch = match answer.get("batch") {
            None => Ok(1),
            Some(b) => b
                .as_u64()
                .filter(|&b| b >= 1)
                .map(|b| b.min(MAX_BATCH as u64) as usize)
                .ok_or_else(|| {
                    format!(
                        "answered `\"batch\": {b}`: expected a whole number of offers, at least 1"
                    )
                }),
        };
        let site_changes = match answer.get("site_changes") {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(format!(
                "answered `\"site_changes\": {v}`: expected true or false"
            )),
        };
        let problem = problem
            .or_else(|| batch.as_ref().err().cloned())
            .or_else(|| site_changes.as_ref().err().cloned());
        s.batch = batch.unwrap_or(1);
        s.site_changes = site_changes.unwrap_or(false);
        match problem {
            Some(p) => {
                let f = self.failure("handshake", p);
                Err(self.fail(&mut s, f))
            }
            None => Ok(()),
        }
    }

    fn spawn(&self) -> std::io::Result<Running> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("exec {}", self.cmd))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdin = BufWriter::new(child.stdin.take().expect("piped stdin"));
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let lines = Lines {
            out: stdout,
            buf: Vec::with_capacity(1 << 16),
            start: 0,
        };
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let (keep, name) = (tail.clone(), self.cmd.clone());
        std::thread::Builder::new()
            .name("policy-stderr".into())
            .spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    eprintln!("[{name}] {line}");
                    let mut t = keep.lock().unwrap_or_else(|e| e.into_inner());
                    if t.len() == STDERR_TAIL {
                        t.pop_front();
                    }
                    t.push_back(line);
                }
            })?;
        Ok(Running {
            _registered: crate::interrupt::Child::helper(child.id()),
            child,
            stdin: Some(stdin),
            lines,
            stderr: tail,
        })
    }

    /// The most `select` offers it takes in one request: 1 unless its
    /// handshake said more (then at most [`MAX_BATCH`]); 1 before it
    /// started.
    pub fn batch(&self) -> usize {
        self.lock().batch.max(1)
    }

    /// Whether its `select` requests list only the sites that changed
    /// since its last one (false before it started).
    pub fn site_changes(&self) -> bool {
        self.lock().site_changes
    }

    /// Asks `request` of it (a `type` and the decision's fields; the `id`
    /// and the answer's check are added here) and returns its answer, or
    /// `None` once it failed (the failure is kept for the engine). `what`
    /// names the decision in a failure ("select for job `j3`").
    pub fn ask(
        &self,
        what: impl FnOnce() -> String,
        request: &impl Serialize,
    ) -> Option<Map<String, Value>> {
        if self.failure.get().is_some() {
            return None;
        }
        let mut s = self.lock();
        if !s.started {
            drop(s);
            self.start(0, &[]).ok()?;
            s = self.lock();
        }
        self.exchange(&mut s, &what(), request, true).ok()
    }

    /// Fails the run over an answer that parsed but is not a possible
    /// choice: `message` says what it answered and what was expected.
    pub fn refuse(&self, what: String, message: String) {
        let mut s = self.lock();
        let f = self.failure(&what, message);
        self.fail(&mut s, f);
    }

    /// Writes one request and reads its answer.
    fn exchange(
        &self,
        s: &mut State,
        decision: &str,
        request: &impl Serialize,
        with_id: bool,
    ) -> Result<Map<String, Value>, ProgramFailure> {
        let id = s.next_id;
        s.next_id += 1;
        // The id goes first in the object: `{"id":N,` and the request's
        // fields.
        let mut line = Vec::with_capacity(256);
        if let Err(e) = serde_json::to_writer(&mut line, request) {
            let f = self.failure(decision, format!("cannot write the request: {e}"));
            return Err(self.fail(s, f));
        }
        if with_id && line.first() == Some(&b'{') {
            let head = format!("{{\"id\":{id}{}", if line.len() > 2 { "," } else { "" });
            line.splice(..1, head.bytes());
        }
        line.push(b'\n');
        let timeout = s.timeout;
        let Some(run) = s.running.as_mut() else {
            let f = self.failure(decision, "it is not running (it failed before)".into());
            return Err(self.fail(s, f));
        };
        let stdin = run.stdin.as_mut().expect("open while running");
        let written = stdin.write_all(&line).and_then(|()| stdin.flush());
        let answer = match written {
            Err(_) => Err(self.gone(run)),
            Ok(()) => match run.lines.next(Instant::now() + timeout) {
                Read_::Line(line) => Ok(line),
                Read_::Closed => Err(self.gone(run)),
                Read_::Late => Err(format!(
                    "no answer within {} s (its `timeout`); ended it",
                    timeout.as_secs_f64()
                )),
            },
        };
        let parsed = answer.and_then(|line| match serde_json::from_str::<Value>(&line) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) | Err(_) => Err(format!(
                "answered `{}`, which is not a JSON object on one line",
                shorten_str(&line)
            )),
        });
        let checked = parsed.and_then(|m| {
            if let Some(e) = m.get("error") {
                return Err(format!(
                    "it reported an error: {}",
                    e.as_str().map_or_else(|| e.to_string(), str::to_string)
                ));
            }
            if with_id && m.get("id").and_then(Value::as_u64) != Some(id) {
                return Err(format!(
                    "answered {} for request id {id}: expected its `id` repeated",
                    shorten(&Value::Object(m))
                ));
            }
            Ok(m)
        });
        checked.map_err(|message| {
            let f = self.failure(decision, message);
            self.fail(s, f)
        })
    }

    /// What to say of a program whose pipe closed: its exit status and
    /// the last lines it wrote to stderr.
    fn gone(&self, run: &mut Running) -> String {
        let until = Instant::now() + Duration::from_millis(500);
        let mut status = None;
        while Instant::now() < until {
            if let Ok(Some(s)) = run.child.try_wait() {
                status = Some(s);
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // Let the stderr thread catch up with the program's last words.
        std::thread::sleep(Duration::from_millis(20));
        let tail = run.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let said = if tail.is_empty() {
            String::new()
        } else {
            let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
            format!("; its stderr ended with: {}", lines.join(" | "))
        };
        match status {
            Some(s) => format!("it exited ({s}) instead of answering{said}"),
            None => format!("it closed its stdout instead of answering{said}"),
        }
    }
}

/// What reading an answer gave.
enum Read_ {
    Line(String),
    /// Its stdout closed (it exited) or could not be read.
    Closed,
    /// Nothing by the deadline.
    Late,
}

/// A program's stdout read a line at a time on the asking thread.
struct Lines {
    out: ChildStdout,
    buf: Vec<u8>,
    /// Where the next line starts in `buf`.
    start: usize,
}

impl Lines {
    /// The next line, waiting for it until `deadline`.
    fn next(&mut self, deadline: Instant) -> Read_ {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..]) {
                let end = self.start + i;
                let line = String::from_utf8_lossy(&self.buf[self.start..end]).into_owned();
                self.start = end + 1;
                if self.start == self.buf.len() {
                    self.buf.clear();
                    self.start = 0;
                }
                return Read_::Line(line);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let mut fd = libc::pollfd {
                fd: self.out.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
            // SAFETY: one valid pollfd, for the call's duration.
            let ready = unsafe { libc::poll(&mut fd, 1, ms) };
            if ready < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Read_::Closed;
            }
            if ready == 0 {
                if Instant::now() >= deadline {
                    return Read_::Late;
                }
                continue;
            }
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            let mut chunk = [0u8; 1 << 14];
            match self.out.read(&mut chunk) {
                Ok(0) | Err(_) => return Read_::Closed,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

pub(super) fn shorten(v: &Value) -> String {
    shorten_str(&v.to_string())
}

fn shorten_str(s: &str) -> String {
    const MAX: usize = 200;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
