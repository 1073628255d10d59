//! `gridbed site`: one site as a standalone daemon that a run's manager
//! drives over HTTP (a testbed site with `url = ...`); see
//! [`crate::live::remote`] and docs/beyond-one-machine.md.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::CliError;
use crate::live::remote::daemon::{self, DaemonOptions};

#[derive(Args)]
pub(crate) struct SiteArgs {
    /// Where the control API listens (port 0: any free port, printed).
    /// Beyond loopback it needs a token.
    #[arg(long, default_value = "127.0.0.1:7100", value_name = "ADDR")]
    listen: SocketAddr,
    /// A file holding the bearer token every request must carry (else the
    /// GRIDBED_TOKEN environment variable, else none: loopback only).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Where the site's pool goes (default: /dev/shm when the run fits
    /// there, else the system temp dir).
    #[arg(long, value_name = "DIR")]
    pool_dir: Option<PathBuf>,
    /// Run the DAGMan PRE/POST scripts a run sends (programs on this host,
    /// run as this user); without it such a run is refused.
    #[arg(long)]
    allow_scripts: bool,
    /// The host name or address the other sites reach this one at (its
    /// gridftp endpoint); needed with `--listen 0.0.0.0:…` (in a container:
    /// its service name).
    #[arg(long, value_name = "HOST")]
    advertise: Option<String>,
}

/// Runs the daemon until it is stopped (Ctrl-C, SIGTERM).
pub(super) fn site(args: SiteArgs) -> Result<ExitCode, CliError> {
    let token = match &args.token_file {
        Some(path) => Some(
            crate::config::read_token(path)
                .map_err(|msg| CliError::input(format!("--token-file: {msg}")))?,
        ),
        None => std::env::var("GRIDBED_TOKEN")
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty()),
    };
    if token.is_none() && !args.listen.ip().is_loopback() {
        return Err(CliError::input(daemon::DaemonError::NoToken(args.listen)));
    }
    if args.advertise.is_none() && args.listen.ip().is_unspecified() {
        return Err(CliError::input(daemon::DaemonError::NoAdvertise(
            args.listen,
        )));
    }
    let listener = TcpListener::bind(args.listen)
        .map_err(|e| CliError::input(format!("--listen {}: {e}", args.listen)))?;
    let addr = listener.local_addr().map_err(CliError::failed)?;
    let with_token = token.is_some();
    let opts = DaemonOptions {
        token,
        pool_root: args.pool_dir,
        allow_scripts: args.allow_scripts,
        advertise: args.advertise,
    };
    actix_rt::System::new().block_on(async move {
        let server = daemon::serve(listener, opts).map_err(CliError::input)?;
        // The first line says where: a script that asked for port 0 reads it.
        println!(
            "gridbed site listening on http://{addr} ({})",
            if with_token {
                "bearer token required"
            } else {
                "no token: loopback only"
            }
        );
        use std::io::Write;
        let _ = std::io::stdout().flush();
        server.await.map_err(CliError::failed)
    })?;
    Ok(ExitCode::SUCCESS)
}
