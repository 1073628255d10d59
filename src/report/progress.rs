//! Progress on stderr: an indicatif bar on a terminal, a plain line every few
//! seconds otherwise (logs, CI).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::core::observer::Observer;

/// How a run shows its progress.
#[derive(Default)]
pub enum Progress {
    /// Nothing (tests, benchmarks, `--quiet`).
    #[default]
    Hidden,
    /// A bar of jobs ended over total with transfers and ETA.
    Bar(ProgressBar),
    /// A line every `every`.
    Lines {
        /// Wall time of the last line.
        last: Instant,
        /// Jobs (or tasks) in the run.
        total: usize,
        /// What is counted: "jobs", "tasks".
        unit: &'static str,
        /// Wall time between lines.
        every: Duration,
    },
}

impl Progress {
    /// A bar of jobs when stderr is a terminal, plain lines otherwise.
    pub fn for_stderr(total: usize) -> Self {
        Self::counting(total, "jobs")
    }

    /// A bar of `total` `unit`s (e.g. "tasks") when stderr is a terminal,
    /// plain lines otherwise.
    pub fn counting(total: usize, unit: &'static str) -> Self {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total as u64);
            let style = ProgressStyle::with_template(&format!(
                "{{spinner}} [{{elapsed_precise}}] {{bar:32}} {{pos}}/{{len}} {unit}  {{msg}}  ETA {{eta}}"
            ))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            Progress::Bar(bar)
        } else {
            Progress::Lines {
                last: Instant::now(),
                total,
                unit,
                every: Duration::from_secs(5),
            }
        }
    }
}

impl Observer for Progress {
    /// Shows `ended` of the total, with `msg`.
    fn show(&mut self, ended: usize, msg: &str) {
        match self {
            Progress::Hidden => {}
            Progress::Bar(bar) => {
                bar.set_position(ended as u64);
                bar.set_message(msg.to_string());
            }
            Progress::Lines {
                last,
                total,
                unit,
                every,
            } => {
                if last.elapsed() >= *every {
                    *last = Instant::now();
                    eprintln!("gridbed: {ended}/{total} {unit} ended; {msg}");
                }
            }
        }
    }

    fn total(&mut self, now: usize) {
        match self {
            Progress::Hidden => {}
            Progress::Bar(bar) => bar.set_length(now as u64),
            Progress::Lines { total, .. } => *total = now,
        }
    }

    /// Clears the bar at the end.
    fn finish(&mut self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}
