//! Sites beyond the engine's process (issue 18): `gridbed site` runs one site
//! as a daemon with an HTTP control API ([`daemon`], wire format in
//! [`protocol`]), and a testbed site with a `url` is driven through it by
//! a proxy actor ([`proxy`]) that takes the same messages as an in-process
//! site, so the manager cannot tell the two apart.

pub mod daemon;
pub mod protocol;
pub mod proxy;

use actix::prelude::*;

use super::messages::{SiteReport, TakeInventory};
use super::site::SiteActor;
use proxy::RemoteSite;

/// Where the manager sends a site's orders: an actor in this process, or
/// the proxy of a daemon.
#[derive(Clone)]
pub enum SiteAddr {
    /// An in-process site.
    Local(Addr<SiteActor>),
    /// A site daemon's proxy.
    Remote(Addr<RemoteSite>),
}

impl SiteAddr {
    /// Sends `m` without waiting, in order with every other message sent.
    pub fn do_send<M>(&self, m: M)
    where
        M: Message<Result = ()> + Send + 'static,
        SiteActor: Handler<M>,
        RemoteSite: Handler<M>,
    {
        match self {
            SiteAddr::Local(a) => a.do_send(m),
            SiteAddr::Remote(a) => a.do_send(m),
        }
    }

    /// The site's end-of-run inventory.
    pub async fn inventory(&self) -> Result<SiteReport, MailboxError> {
        match self {
            SiteAddr::Local(a) => a.send(TakeInventory).await,
            SiteAddr::Remote(a) => a.send(TakeInventory).await,
        }
    }
}
