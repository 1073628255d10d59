//! Remote dispatch (issue 18): zero-work jobs through four `gridbed site`
//! daemons (child processes on loopback, driven over HTTP) against the same
//! jobs through four in-process sites, in one invocation.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use super::{Failure, Figure, dispatch_scenario_on};
use crate::config::Daemon;
use crate::live;

/// Site daemons started for the benchmark, killed when dropped.
struct Daemons(Vec<Child>);

impl Drop for Daemons {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Starts `n` daemons of this binary on free loopback ports: their URLs.
fn start_daemons(n: usize) -> Result<(Daemons, Vec<String>), Failure> {
    let exe = std::env::current_exe()?;
    let mut daemons = Daemons(Vec::new());
    let mut urls = Vec::new();
    for _ in 0..n {
        let mut child = Command::new(&exe)
            .args(["site", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let out = child.stdout.take();
        daemons.0.push(child);
        let mut line = String::new();
        BufReader::new(out.ok_or("no stdout")?).read_line(&mut line)?;
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .ok_or_else(|| format!("gridbed site said {line:?}"))?;
        urls.push(url.to_string());
    }
    Ok((daemons, urls))
}

/// `jobs` zero jobs round robin on 4 sites of 16 slots, in-process and
/// then on daemons: jobs ended/s of each and their ratio.
pub(super) fn remote_dispatch(jobs: usize) -> Result<Vec<Figure>, Failure> {
    let local = dispatch_scenario_on(jobs, 4)?;
    let (_daemons, urls) = start_daemons(4)?;
    let mut remote = local.clone();
    for (site, url) in remote.sites[1..].iter_mut().zip(urls) {
        site.daemon = Some(Daemon {
            url,
            token: None,
            kernel: Default::default(),
        });
    }
    let rate = |s: &crate::config::Scenario| -> Result<f64, Failure> {
        let run = live::run(s, live::LiveOptions::default())?;
        if !run.succeeded {
            return Err("remote dispatch bench: not every job ended".into());
        }
        Ok(jobs as f64 / run.wall.as_secs_f64())
    };
    let (here, there) = (rate(&local)?, rate(&remote)?);
    let ratio = there / here;
    Ok(vec![
        Figure {
            name: format!("remote dispatch: {jobs} zero jobs on 4 in-process sites, jobs ended/s"),
            value: here,
            unit: "jobs/s".into(),
            goal: None,
            met: true,
        },
        Figure {
            name: format!(
                "remote dispatch: the same on 4 `gridbed site` daemons over HTTP ({there:.0} jobs/s), ratio to in-process"
            ),
            value: ratio,
            unit: "×".into(),
            goal: Some("≥ 0.2".into()),
            met: ratio >= 0.2,
        },
    ])
}
