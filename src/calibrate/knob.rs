//! The knobs `gridbed calibrate` may set: the WMS's latencies
//! ([`crate::core::wms`] and the per-job latencies of `[manager]`) and the
//! platform's rates (a site's network interface, each direction, and each
//! shared link of the max-min network, [`crate::core::network`]), each
//! named as a testbed writes it.

use std::fmt::Write as _;

use serde::{Serialize, Serializer};

use crate::config::Scenario;
use crate::core::wms::Latency;

/// A knob the fit may set, named after what it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Knob {
    /// `NEGOTIATOR_INTERVAL` (`[manager.wms] negotiator_interval`).
    NegotiatorInterval,
    /// `JOB_START_DELAY` with `JOB_START_COUNT = 1`.
    JobStartDelay,
    /// `DAGMAN_SUBMIT_DELAY` plus `condor_submit`'s own time.
    SubmitDelay,
    /// `DAGMAN_USER_LOG_SCAN_INTERVAL`.
    UserLogScanInterval,
    /// `[manager] postscript_overhead` (the POST script, `pegasus-exitcode`).
    PostscriptOverhead,
    /// `[manager] submit_overhead`.
    SubmitOverhead,
    /// `[manager] release_overhead`.
    ReleaseOverhead,
    /// A site's network interface, both directions (`SITE.bandwidth`).
    /// The testbed's execution-site template stands for every machine of
    /// a trace.
    Bandwidth(String),
    /// What a site's interface receives (`SITE.bandwidth_in`).
    BandwidthIn(String),
    /// What a site's interface sends (`SITE.bandwidth_out`).
    BandwidthOut(String),
    /// What a site's file server sends each stream at most
    /// (`SITE.stream_cap`).
    StreamCap(String),
    /// A shared link, both directions (`LINK.bandwidth`).
    LinkBandwidth(String),
    /// What a site adds before each transfer it sends starts
    /// (`SITE.latency`): a cost per file, where a rate is a cost per byte
    /// and the start rate one per job.
    Latency(String),
}

/// What a knob's value is measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Nominal seconds.
    Seconds,
    /// Nominal bytes per second.
    BytesPerSecond,
}

impl Unit {
    /// Its symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Seconds => "s",
            Unit::BytesPerSecond => "B/s",
        }
    }
}

/// A rate's physical bounds: a 10 Mbit/s interface to a 100 Gbit/s one.
const RATES: (f64, f64) = (1.25e6, 12.5e9);

/// A stream's: 1 Mbit/s to the fastest interface.
const STREAMS: (f64, f64) = (125e3, 12.5e9);

impl Knob {
    /// The WMS's knobs.
    pub const WMS: [Knob; 7] = [
        Knob::JobStartDelay,
        Knob::NegotiatorInterval,
        Knob::PostscriptOverhead,
        Knob::SubmitDelay,
        Knob::UserLogScanInterval,
        Knob::SubmitOverhead,
        Knob::ReleaseOverhead,
    ];

    /// Its name on the command line: a WMS knob's testbed key, or
    /// `SITE.KEY` / `LINK.bandwidth`.
    pub fn name(&self) -> String {
        match self {
            Knob::NegotiatorInterval => "negotiator_interval".into(),
            Knob::JobStartDelay => "job_start_delay".into(),
            Knob::SubmitDelay => "dagman_submit_delay".into(),
            Knob::UserLogScanInterval => "dagman_user_log_scan_interval".into(),
            Knob::PostscriptOverhead => "postscript_overhead".into(),
            Knob::SubmitOverhead => "submit_overhead".into(),
            Knob::ReleaseOverhead => "release_overhead".into(),
            Knob::Bandwidth(s) => format!("{s}.bandwidth"),
            Knob::BandwidthIn(s) => format!("{s}.bandwidth_in"),
            Knob::BandwidthOut(s) => format!("{s}.bandwidth_out"),
            Knob::StreamCap(s) => format!("{s}.stream_cap"),
            Knob::LinkBandwidth(l) => format!("{l}.bandwidth"),
            Knob::Latency(s) => format!("{s}.latency"),
        }
    }

    /// Every knob `scenario` (a testbed, its execution-site template not
    /// yet replaced by a trace's machines) has.
    pub fn all(scenario: &Scenario) -> Vec<Knob> {
        let mut all = Knob::WMS.to_vec();
        for s in &scenario.sites {
            let n = &s.info.name;
            all.push(Knob::Bandwidth(n.clone()));
            all.push(Knob::BandwidthIn(n.clone()));
            all.push(Knob::BandwidthOut(n.clone()));
            all.push(Knob::StreamCap(n.clone()));
            all.push(Knob::Latency(n.clone()));
        }
        for l in &scenario.topology.links {
            all.push(Knob::LinkBandwidth(l.name.clone()));
        }
        all
    }

    /// The knob `name` of `scenario`; the error lists the names it has.
    pub fn parse(name: &str, scenario: &Scenario) -> Result<Knob, String> {
        let all = Knob::all(scenario);
        all.iter()
            .find(|k| k.name() == name)
            .cloned()
            .ok_or_else(|| {
                let mut known = String::new();
                for k in &all {
                    let _ = write!(
                        known,
                        "{}{}",
                        if known.is_empty() { "" } else { ", " },
                        k.name()
                    );
                }
                format!("unknown knob `{name}`: the testbed has {known}, staging")
            })
    }

    /// What its value is measured in.
    pub fn unit(&self) -> Unit {
        match self {
            Knob::Bandwidth(_)
            | Knob::BandwidthIn(_)
            | Knob::BandwidthOut(_)
            | Knob::StreamCap(_)
            | Knob::LinkBandwidth(_) => Unit::BytesPerSecond,
            _ => Unit::Seconds,
        }
    }

    /// Whether it is one of the platform's rates.
    pub fn is_rate(&self) -> bool {
        self.unit() == Unit::BytesPerSecond
    }

    /// The range searched (s, or B/s within physical bounds).
    pub fn range(&self) -> (f64, f64) {
        match self {
            Knob::NegotiatorInterval => (1.0, 900.0),
            Knob::UserLogScanInterval => (0.5, 60.0),
            Knob::JobStartDelay | Knob::SubmitDelay => (0.01, 60.0),
            Knob::Latency(_) => (0.001, 60.0),
            Knob::PostscriptOverhead | Knob::SubmitOverhead | Knob::ReleaseOverhead => (0.1, 600.0),
            Knob::StreamCap(_) => STREAMS,
            _ => RATES,
        }
    }

    fn site(s: &Scenario, name: &str) -> Option<usize> {
        s.sites.iter().position(|x| x.info.name == name)
    }

    /// Sets it in `s` (a latency becomes fixed at the value). A knob that
    /// names what `s` lacks changes nothing.
    pub fn set(&self, s: &mut Scenario, v: f64) {
        let m = &mut s.manager;
        match self {
            Knob::NegotiatorInterval => m.wms.negotiator_interval = v,
            Knob::JobStartDelay => {
                m.wms.job_start_delay = v;
                m.wms.job_start_count = 1;
            }
            Knob::SubmitDelay => m.wms.submit_delay = v,
            Knob::UserLogScanInterval => m.wms.user_log_scan_interval = v,
            Knob::PostscriptOverhead => m.postscript_overhead = Latency::fixed(v),
            Knob::SubmitOverhead => m.submit_overhead = Latency::fixed(v),
            Knob::ReleaseOverhead => m.release_overhead = Latency::fixed(v),
            Knob::Bandwidth(n) | Knob::BandwidthIn(n) | Knob::BandwidthOut(n) => {
                if let Some(i) = Knob::site(s, n) {
                    let site = &mut s.sites[i];
                    if !matches!(self, Knob::BandwidthIn(_)) {
                        site.bandwidth_out = v;
                    }
                    if !matches!(self, Knob::BandwidthOut(_)) {
                        site.bandwidth_in = v;
                    }
                }
            }
            Knob::StreamCap(n) => {
                if let Some(i) = Knob::site(s, n) {
                    s.sites[i].stream_cap = v;
                }
            }
            Knob::LinkBandwidth(n) => {
                if let Some(l) = s.topology.links.iter_mut().find(|l| &l.name == n) {
                    l.bandwidth = v;
                }
            }
            Knob::Latency(n) => {
                if let Some(i) = Knob::site(s, n) {
                    s.sites[i].latency = v;
                }
            }
        }
    }

    /// Its value in `s` (a latency's mean); none where `s` lacks what it
    /// names.
    pub fn get(&self, s: &Scenario) -> Option<f64> {
        let m = &s.manager;
        let site = |n: &str| Knob::site(s, n).map(|i| &s.sites[i]);
        Some(match self {
            Knob::NegotiatorInterval => m.wms.negotiator_interval,
            Knob::JobStartDelay => m.wms.job_start_delay,
            Knob::SubmitDelay => m.wms.submit_delay,
            Knob::UserLogScanInterval => m.wms.user_log_scan_interval,
            Knob::PostscriptOverhead => m.postscript_overhead.mean(),
            Knob::SubmitOverhead => m.submit_overhead.mean(),
            Knob::ReleaseOverhead => m.release_overhead.mean(),
            Knob::Bandwidth(n) => {
                let x = site(n)?;
                x.bandwidth_in.min(x.bandwidth_out)
            }
            Knob::BandwidthIn(n) => site(n)?.bandwidth_in,
            Knob::BandwidthOut(n) => site(n)?.bandwidth_out,
            Knob::StreamCap(n) => site(n)?.stream_cap,
            Knob::LinkBandwidth(n) => s.topology.links.iter().find(|l| &l.name == n)?.bandwidth,
            Knob::Latency(n) => site(n)?.latency,
        })
    }

    /// A value of it as people read it: `12.3 s`, `125 MB/s (1.0 Gbit/s)`.
    pub fn show(&self, v: f64) -> String {
        match self.unit() {
            Unit::Seconds => format!("{v:.3} s"),
            Unit::BytesPerSecond => show_rate(v),
        }
    }

    /// `"lower"` or `"upper"` when `v` ended at that bound of the search.
    pub fn at_bound(&self, v: f64) -> Option<&'static str> {
        let (lo, hi) = self.range();
        if v <= lo * 1.001 {
            Some("lower")
        } else if v >= hi / 1.001 {
            Some("upper")
        } else {
            None
        }
    }
}

impl Serialize for Knob {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

/// A rate in bytes and in bits: `125 MB/s (1.0 Gbit/s)`.
pub fn show_rate(v: f64) -> String {
    if !v.is_finite() {
        return "unlimited".into();
    }
    let bits = v * 8.0;
    let (b, bu) = if bits >= 1e9 {
        (bits / 1e9, "Gbit/s")
    } else {
        (bits / 1e6, "Mbit/s")
    };
    let (x, xu) = if v >= 1e9 {
        (v / 1e9, "GB/s")
    } else {
        (v / 1e6, "MB/s")
    };
    let digits = |x: f64| {
        if x >= 100.0 {
            0
        } else if x >= 10.0 {
            1
        } else {
            2
        }
    };
    format!(
        "{x:.dx$} {xu} ({b:.db$} {bu})",
        dx = digits(x),
        db = digits(b).min(1)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_in_bytes_and_bits() {
        assert_eq!(show_rate(125e6), "125 MB/s (1.0 Gbit/s)");
        assert_eq!(show_rate(12.5e6), "12.5 MB/s (100 Mbit/s)");
        assert_eq!(show_rate(1.25e9), "1.25 GB/s (10.0 Gbit/s)");
        assert_eq!(show_rate(f64::INFINITY), "unlimited");
    }

    #[test]
    fn bounds_are_flagged() {
        let k = Knob::Bandwidth("submit".into());
        assert_eq!(k.at_bound(RATES.0), Some("lower"));
        assert_eq!(k.at_bound(RATES.1), Some("upper"));
        assert_eq!(k.at_bound(125e6), None);
        assert_eq!(Knob::JobStartDelay.at_bound(0.01), Some("lower"));
    }
}
