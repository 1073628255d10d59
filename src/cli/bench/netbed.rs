//! Netbed transfers (issue 18): for each link class, one file pulled over a
//! netbed link (the kernel's qdiscs) and over the same link in process
//! (governor's token buckets), each time set beside the model's (latency +
//! size / bandwidth). Needs root, like the netbed.

use std::path::Path;

use super::{Failure, Figure, bench_scenario, bench_site, unthrottled};
use crate::core::{File, JobSpec, Workflow};
use crate::live;
use crate::netbed;

/// Link classes: name, bandwidth (bit/s), one-way latency (s), file size
/// (bytes) sized for about two seconds on the wire.
const CLASSES: [(&str, f64, f64, u64); 3] = [
    ("campus", 100e6, 0.001, 25_000_000),
    ("regional", 50e6, 0.020, 12_500_000),
    ("WAN", 10e6, 0.080, 2_500_000),
];

/// The one transfer's duration in a live run of `s`.
fn transfer_time(s: &crate::config::Scenario) -> Result<f64, Failure> {
    let run = live::run(s, live::LiveOptions::default())?;
    let t = run
        .records
        .transfers
        .iter()
        .find(|t| t.failure.is_none())
        .ok_or("netbed bench: no transfer ended")?;
    Ok(t.end.ok_or("netbed bench: a transfer without an end")? - t.start)
}

/// Takes a netbed down when dropped.
struct Down<'a>(&'a Path);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        let _ = netbed::down(self.0);
    }
}

pub(super) fn link_classes() -> Result<Vec<Figure>, Failure> {
    let exe = std::env::current_exe()?;
    let mut figures = Vec::new();
    for (class, bits, latency, size) in CLASSES {
        let files = vec![File {
            name: "payload".into(),
            size,
        }];
        let jobs = vec![JobSpec {
            name: "reader".into(),
            runtime: 0.0,
            inputs: vec!["payload".into()],
            ..Default::default()
        }];
        let wf = Workflow::build(files, jobs)?;
        let mut sites = vec![bench_site("store", 0), bench_site("reader", 1)];
        for s in &mut sites {
            s.bandwidth_out = bits / 8.0;
            s.bandwidth_in = bits / 8.0;
            s.latency = latency;
        }
        let local = bench_scenario("bench-netbed", sites, 0, wf, "round-robin", unthrottled());
        let model = latency + size as f64 * 8.0 / bits;
        let governor = transfer_time(&local)?;
        let dir = tempfile::tempdir()?;
        let state = netbed::up(&netbed::UpOptions {
            scenario: &local,
            dir: dir.path(),
            gridbed: &exe,
            port: 7100,
        })?;
        let _down = Down(dir.path());
        let mut on_net = local.clone();
        state.apply(&mut on_net, dir.path())?;
        let kernel = transfer_time(&on_net)?;
        let delay = if state.netem {
            "netem"
        } else {
            "the endpoint (no netem)"
        };
        let ratio = kernel / model;
        figures.push(Figure {
            name: format!(
                "netbed: {class} link ({:.0} Mbit/s, {:.0} ms by {delay}), {:.1} MB: kernel {kernel:.3} s / model {model:.3} s",
                bits / 1e6,
                latency * 1e3,
                size as f64 / 1e6
            ),
            value: ratio,
            unit: "×".into(),
            goal: Some("within 10%".into()),
            met: (ratio - 1.0).abs() <= 0.10,
        });
        figures.push(Figure {
            name: format!("netbed: {class} link in process, governor {governor:.3} s / model"),
            value: governor / model,
            unit: "×".into(),
            goal: None,
            met: true,
        });
    }
    Ok(figures)
}
