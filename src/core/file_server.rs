//! A site's file server, the "rate-limited HTTP file server" of DESIGN.md's
//! site: the one rule of what it answers to a request for a file, which both
//! engines carry out (the simulator with counted bytes, the live gridftp
//! endpoint with real ones).
//!
//! A request is refused at once, in this order: the site is down (live: 502),
//! the file is not in its pool (404), the server is already serving its
//! `max_connections` responses (503). Otherwise it takes a connection and
//! holds it through the latency (the server's and the path's); only when the
//! latency is over is the file read, so a file evicted meanwhile is refused
//! as missing then, and the site's schedules of faults on purpose
//! ([`super::faults`]) are stepped for the response that starts to stream:
//! corrupt, reset, stall, in that order. A response's bytes are shaped by the
//! network model, not here; its connection is held until they are sent or cut.

use super::faults::{FaultSchedule, ResponseFault, SiteFaults};
use super::{SiteId, TransferFailure};

/// Why a file server gives no bytes for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The site crashed and has not recovered.
    Down,
    /// The file is not in the site's pool.
    Missing,
    /// The server is serving its `max_connections` responses.
    Busy,
}

impl Refusal {
    /// How the transfer that asked ends.
    pub fn failure(self) -> TransferFailure {
        match self {
            Refusal::Down => TransferFailure::Connection(DOWN.into()),
            Refusal::Missing => TransferFailure::SourceMissing,
            Refusal::Busy => TransferFailure::Busy,
        }
    }

    /// The HTTP status a live endpoint answers with.
    pub fn status(self) -> u16 {
        match self {
            Refusal::Down => 502,
            Refusal::Missing => 404,
            Refusal::Busy => 503,
        }
    }

    /// The refusal a live endpoint's `status` stands for.
    pub fn of_status(status: u16) -> Option<Refusal> {
        [Refusal::Down, Refusal::Missing, Refusal::Busy]
            .into_iter()
            .find(|r| r.status() == status)
    }
}

/// Why a transfer from a crashed site failed, in both engines.
pub const DOWN: &str = "source site is down";

/// What a site's fault schedules say of one response that starts to stream.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Response {
    /// One byte of it is flipped, so the destination's sha256 check fails.
    pub corrupt: bool,
    /// Its connection is reset after this many bytes: half of them,
    /// rounded down, so never all (the client would see a whole body).
    pub reset_after: Option<u64>,
    /// It stalls this many nominal seconds before its first byte, the
    /// connection held.
    pub stall: Option<f64>,
}

/// A site's schedules of faults in responses (corrupt, reset, stall).
#[derive(Debug, Clone)]
pub struct ResponseFaults {
    corrupt: FaultSchedule,
    resets: FaultSchedule,
    stalls: FaultSchedule,
    stall_seconds: f64,
}

impl ResponseFaults {
    /// Site `site`'s schedules of `faults` in a run seeded `run_seed`.
    pub fn of(faults: &SiteFaults, run_seed: u64, site: SiteId) -> Self {
        ResponseFaults {
            corrupt: faults.schedule(ResponseFault::Corrupt, run_seed, site),
            resets: faults.schedule(ResponseFault::Reset, run_seed, site),
            stalls: faults.schedule(ResponseFault::Stall, run_seed, site),
            stall_seconds: faults.stall_seconds,
        }
    }

    /// Corrupting by `corrupt` only.
    pub fn corrupting(corrupt: FaultSchedule) -> Self {
        ResponseFaults {
            corrupt,
            ..ResponseFaults::none()
        }
    }

    /// No fault at all.
    pub fn none() -> Self {
        ResponseFaults {
            corrupt: FaultSchedule::none(),
            resets: FaultSchedule::none(),
            stalls: FaultSchedule::none(),
            stall_seconds: 0.0,
        }
    }

    /// The verdicts on a response of `size` bytes; an empty one has no byte
    /// to flip or cut and steps nothing.
    fn draw(&mut self, size: u64) -> Response {
        if size == 0 {
            return Response::default();
        }
        let (corrupt, reset, stall) = (
            self.corrupt.step(),
            self.resets.step(),
            self.stalls.step(),
        );
        Response {
            corrupt,
            reset_after: reset.then_some(size / 2),
            stall: stall.then_some(self.stall_seconds),
        }
    }
}

/// A site's file server: its connections and its fault schedules.
#[derive(Debug, Clone)]
pub struct FileServer {
    max_connections: usize,
    connections: usize,
    faults: ResponseFaults,
}

impl FileServer {
    /// A server of `max_connections` responses at once injecting `faults`.
    pub fn new(max_connections: usize, faults: ResponseFaults) -> Self {
        FileServer {
            max_connections,
            connections: 0,
            faults,
        }
    }

    /// A request for a file arrives at a site that is `up` and `holds` it:
    /// refused (see the module docs for the order), or a connection taken,
    /// to be given back with [`FileServer::close`] however the response ends.
    pub fn request(&mut self, up: bool, holds: bool) -> Result<(), Refusal> {
        if !up {
            Err(Refusal::Down)
        } else if !holds {
            Err(Refusal::Missing)
        } else if self.connections >= self.max_connections {
            Err(Refusal::Busy)
        } else {
            self.connections += 1;
            Ok(())
        }
    }

    /// The latency of an accepted request is over: the site must still be
    /// up and hold the file (else the request is refused now, its
    /// connection still to close), and the response of `size` bytes starts,
    /// with the faults its schedules draw.
    pub fn respond(&mut self, up: bool, holds: bool, size: u64) -> Result<Response, Refusal> {
        match (up, holds) {
            (false, _) => Err(Refusal::Down),
            (true, false) => Err(Refusal::Missing),
            (true, true) => Ok(self.faults.draw(size)),
        }
    }

    /// A response ended (sent, cut or abandoned): its connection is free.
    pub fn close(&mut self) {
        self.connections = self.connections.saturating_sub(1);
    }

    /// Connections held now.
    #[cfg(test)]
    pub fn connections(&self) -> usize {
        self.connections
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::faults::FaultSpec;

    #[test]
    fn refuses_down_then_missing_then_busy() {
        let mut s = FileServer::new(1, ResponseFaults::none());
        assert_eq!(s.request(false, false), Err(Refusal::Down));
        assert_eq!(s.request(true, false), Err(Refusal::Missing));
        assert_eq!(s.request(true, true), Ok(()));
        // A missing file is 404 even when the server is full.
        assert_eq!(s.request(true, false), Err(Refusal::Missing));
        assert_eq!(s.request(true, true), Err(Refusal::Busy));
        assert_eq!(s.connections(), 1);
        s.close();
        assert_eq!(s.request(true, true), Ok(()));
        for (r, status) in [(Refusal::Down, 502), (Refusal::Missing, 404), (Refusal::Busy, 503)] {
            assert_eq!((r.status(), Refusal::of_status(status)), (status, Some(r)));
        }
        assert_eq!(Refusal::of_status(500), None);
    }

    #[test]
    fn a_file_evicted_during_the_latency_is_refused_then() {
        let mut s = FileServer::new(1, ResponseFaults::none());
        s.request(true, true).unwrap();
        assert_eq!(s.respond(true, false, 10), Err(Refusal::Missing));
        assert_eq!(s.request(true, true), Err(Refusal::Busy));
        s.close();
        s.request(true, true).unwrap();
        assert_eq!(s.respond(false, true, 10), Err(Refusal::Down));
    }

    #[test]
    fn responses_step_the_schedules_in_order_and_empty_ones_not_at_all() {
        let first = |n| FaultSpec {
            first: n,
            probability: 0.0,
        };
        let faults = SiteFaults {
            corrupt_responses: first(1),
            resets: first(2),
            stalls: first(3),
            stall_seconds: 4.0,
            ..Default::default()
        };
        let mut s = FileServer::new(8, ResponseFaults::of(&faults, 1, 0));
        let mut draw = |size| {
            s.request(true, true).unwrap();
            s.respond(true, true, size).unwrap()
        };
        assert_eq!(draw(0), Response::default());
        let r = draw(9);
        assert_eq!((r.corrupt, r.reset_after, r.stall), (true, Some(4), Some(4.0)));
        let r = draw(1);
        assert_eq!((r.corrupt, r.reset_after, r.stall), (false, Some(0), Some(4.0)));
        let r = draw(9);
        assert_eq!((r.corrupt, r.reset_after, r.stall), (false, None, Some(4.0)));
        assert_eq!(draw(9), Response::default());
    }
}
