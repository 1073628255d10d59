//! Progress on stderr: an indicatif bar on a terminal, a plain line every few
//! seconds otherwise (logs, CI).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::core::manager::StateCounts;

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
        /// Jobs in the workflow.
        total: usize,
        /// Wall time between lines.
        every: Duration,
    },
}

impl Progress {
    /// A bar when stderr is a terminal, plain lines otherwise.
    pub fn for_stderr(total: usize) -> Self {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total as u64);
            let style = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:32} {pos}/{len} jobs  {msg}  ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            Progress::Bar(bar)
        } else {
            Progress::Lines {
                last: Instant::now(),
                total,
                every: Duration::from_secs(5),
            }
        }
    }

    /// Shows the current state; `now` is nominal seconds.
    pub fn update(&mut self, c: StateCounts, transfers: usize, now: f64) {
        let ended = c.done + c.failed + c.blocked;
        let msg = format!(
            "{} running, {} queued, {} staging, {transfers} transfers, t = {now:.0} s nominal",
            c.running, c.queued, c.staging
        );
        match self {
            Progress::Hidden => {}
            Progress::Bar(bar) => {
                bar.set_position(ended as u64);
                bar.set_message(msg);
            }
            Progress::Lines { last, total, every } => {
                if last.elapsed() >= *every {
                    *last = Instant::now();
                    eprintln!("gridbed: {ended}/{total} jobs ended; {msg}");
                }
            }
        }
    }

    /// Clears the bar at the end.
    pub fn finish(&mut self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}
