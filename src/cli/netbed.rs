//! `gridbed netbed up|down`: a testbed's sites as daemons in network
//! namespaces with kernel-shaped links ([`crate::netbed`]); `gridbed run
//! --netbed DIR` and `gridbed validate --netbed DIR` use one.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;

use super::{CliError, ScenarioArgs, load};
use crate::config::Scenario;
use crate::netbed::{self, NetbedError, UpOptions};

/// Where a netbed's state goes unless told.
const DEFAULT_DIR: &str = "/run/gridbed-netbed";

#[derive(Subcommand)]
pub(crate) enum NetbedCmd {
    /// Make the netbed (root): every site of the testbed a `gridbed site`
    /// daemon in its own network namespace, joined to a bridge by a veth
    /// pair shaped by the kernel (tbf: the site's bandwidth; netem: its
    /// latency, where the kernel has netem).
    Up {
        #[command(flatten)]
        scenario: Box<ScenarioArgs>,
        /// Where the netbed's state, token and logs go.
        #[arg(long, value_name = "DIR", default_value = DEFAULT_DIR)]
        dir: PathBuf,
        /// Port of every daemon's control API.
        #[arg(long, default_value_t = 7100)]
        port: u16,
    },
    /// Remove the netbed: daemons, namespaces, veths, qdiscs, bridge.
    Down {
        /// The netbed's state directory.
        #[arg(long, value_name = "DIR", default_value = DEFAULT_DIR)]
        dir: PathBuf,
    },
}

fn netbed_error(e: NetbedError) -> CliError {
    match e {
        NetbedError::NotRoot | NetbedError::State { .. } => CliError::input(e),
        _ => CliError::failed(e),
    }
}

/// Runs a `netbed` subcommand.
pub(super) fn netbed(cmd: NetbedCmd) -> Result<ExitCode, CliError> {
    match cmd {
        NetbedCmd::Up {
            scenario,
            dir,
            port,
        } => {
            let s = load(&scenario)?;
            let exe = std::env::current_exe().map_err(CliError::failed)?;
            let state = netbed::up(&UpOptions {
                scenario: &s,
                dir: &dir,
                gridbed: &exe,
                port,
            })
            .map_err(netbed_error)?;
            say!(
                "netbed {} up: {} sites in namespaces {}-0…{}, bridge {} ({}), state in {}",
                state.prefix,
                state.sites.len(),
                state.prefix,
                state.sites.len() - 1,
                state.bridge,
                state.manager_addr,
                dir.display()
            );
            let mbit = |r: Option<u64>| {
                r.map_or("unlimited".into(), |r| {
                    format!("{:.3} Mbit/s", r as f64 / 1e6)
                })
            };
            let delay = |ms: Option<f64>| match (ms, state.netem) {
                (Some(d), _) => format!("{d:.3} ms (netem)"),
                (None, true) => "none".into(),
                (None, false) => "the endpoints' (this kernel has no netem)".into(),
            };
            for site in &state.sites {
                let rate = format!(
                    "out {}, in {}",
                    mbit(site.rate_bits),
                    mbit(site.rate_in_bits)
                );
                let delay = delay(site.delay_ms);
                say!(
                    "  {:<14} {:<22} rate {rate}, delay {delay}",
                    site.name,
                    site.url
                );
            }
            for link in &state.links {
                let delay = delay(link.delay_ms);
                say!(
                    "  link {:<9} bridge {:<9} rate {} each way, delay {delay}",
                    link.name,
                    link.bridge,
                    mbit(link.rate_bits)
                );
            }
            say!(
                "run it: gridbed run {} --netbed {}",
                s.path.display(),
                dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        NetbedCmd::Down { dir } => {
            let state = netbed::down(&dir).map_err(netbed_error)?;
            say!("netbed {} down", state.prefix);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Puts `scenario`'s sites on the netbed in `dir`.
pub(super) fn apply(scenario: &mut Scenario, dir: &Path) -> Result<(), CliError> {
    let state = netbed::State::read(dir).map_err(netbed_error)?;
    state.apply(scenario, dir).map_err(netbed_error)
}
