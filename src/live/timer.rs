//! Sleeps that end when they are due, for the live engine's emulated time.
//!
//! Tokio's timer wheel ticks in whole milliseconds and rounds a deadline up
//! to the next tick: on this project's 2-core VM a `tokio::time::sleep`
//! ended 1.1–1.3 ms late on average whatever its length (200 sleeps each of
//! 0.3–16.7 ms). At `time_scale = 300` that is 0.35 s nominal on every
//! wait: 7% of a 5-s transfer, which ends on its pacer's last wait, and of
//! every WMS delay the manager's tick carries out. A Linux `timerfd`, read
//! through tokio's reactor, ended 0.08–0.16 ms late on the same machine.
//!
//! So a wait sleeps on tokio's wheel until [`FINE`] before its deadline,
//! and on a timerfd the rest: few timers are open at once (only those
//! within [`FINE`] of their end), and a timerfd that cannot be had (no
//! file descriptor left) falls back to the wheel, late but never early.

use std::time::Duration;

use tokio::time::Instant;

/// How late a timerfd's wake-up is, about (0.08–0.16 ms measured on the
/// machine above): a wait shorter than this is not worth a sleep.
pub const LATENESS: Duration = Duration::from_micros(150);

/// How close to its deadline a wait moves from tokio's wheel to a timerfd:
/// more than the wheel's usual lateness, so that the wheel seldom overshoots it.
const FINE: Duration = Duration::from_millis(3);

/// Sleeps until `deadline`, at most a fraction of a millisecond late.
pub async fn sleep_until(deadline: Instant) {
    if let Some(coarse) = deadline.checked_sub(FINE)
        && coarse > Instant::now()
    {
        tokio::time::sleep_until(coarse).await;
    }
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return;
    }
    if fine_sleep(left).await.is_err() {
        tokio::time::sleep_until(deadline).await;
    }
}

/// Sleeps for `wait`, at most a fraction of a millisecond late.
pub async fn sleep(wait: Duration) {
    sleep_until(Instant::now() + wait).await;
}

/// Elsewhere than on Linux there is no timerfd: the wheel does it all.
#[cfg(not(target_os = "linux"))]
async fn fine_sleep(_left: Duration) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// One timerfd armed for `left` and awaited on tokio's reactor.
#[cfg(target_os = "linux")]
async fn fine_sleep(left: Duration) -> std::io::Result<()> {
    use tokio::io::Interest;
    use tokio::io::unix::AsyncFd;
    use rustix::time::{
        Itimerspec, Timespec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, timerfd_create,
        timerfd_settime,
    };
    let timer = timerfd_create(
        TimerfdClockId::Monotonic,
        TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
    )?;
    let once = Itimerspec {
        it_interval: Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: Timespec {
            tv_sec: left.as_secs() as _,
            tv_nsec: left.subsec_nanos() as _,
        },
    };
    timerfd_settime(&timer, TimerfdTimerFlags::empty(), &once)?;
    // SAFETY: the `OwnedFd` is open and is closed only when it is dropped,
    // which the `AsyncFd` owning it does after deregistering it.
    let fd = unsafe { AsyncFd::register_with_interest(timer, Interest::READABLE) }
        .map_err(|e| e.into_parts().1)?;
    loop {
        let mut ready = fd.readable().await?;
        // Readable once it expired; the read of its count of expirations
        // would block on a spurious wake, which then waits again.
        match ready.try_io(|t| Ok(rustix::io::read(t.get_ref(), &mut [0u8; 8])?)) {
            Ok(result) => return result.map(drop),
            Err(_would_block) => continue,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleep_never_ends_before_its_deadline_short_or_long() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            for wait in [0, 200, 2_500, 3_000, 7_000] {
                let wait = Duration::from_micros(wait);
                let start = Instant::now();
                sleep(wait).await;
                assert!(start.elapsed() >= wait, "{wait:?}: {:?}", start.elapsed());
            }
        });
    }
}
