//! Third-party transfers: the destination site pulls a file from the source
//! site's gridftp endpoint with reqwest.
//!
//! The body streams into a hidden `.part` file in the destination pool while
//! its sha256 is computed; only when length and hash match the source's
//! `Content-Length` and `X-Sha256` is it renamed into place (atomic on one file
//! system), so a corrupt or truncated copy is never listed nor registered.
//! Every failure goes back to the manager, which decides whether to retry or
//! take another replica: a 503 (the source is at `max_connections`) too, as
//! [`TransferFailure::Busy`], a failed try of that source.
//!
//! Each chunk received passes the limits of the pull's path first
//! ([`PathShaping`]: the receiver's in, the shared links, and the source's
//! out when this process holds it), so a pull is paced where the network
//! would pace it.

use futures_util::StreamExt;
use sha2::{Digest, Sha256};

use super::shaping::{HeldSlots, LATENCY_HEADER, PathShaping, SHAPED_HEADER, WAITED_HEADER};
use super::store::{FileMeta, Store};
use crate::core::TransferFailure;
use crate::core::file_server::Refusal;

/// Bodies up to this size are received in memory and written in one step;
/// larger ones stream to the part file through a blocking writer.
const WRITE_BATCH: usize = 4 << 20;

/// A completed pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulled {
    /// The verified file.
    pub meta: FileMeta,
}

/// Pulls `/files/{enc}` from `source` (a base URL such as
/// `http://127.0.0.1:4000`) into `dest` as transfer `id`, verifies it and
/// lists it in `dest`'s catalogue; only the source limits its bytes.
pub async fn pull(
    client: &reqwest::Client,
    source: &str,
    dest: &Store,
    enc: &str,
    id: u64,
) -> Result<Pulled, TransferFailure> {
    fetch(
        client,
        source,
        enc,
        dest,
        enc,
        id,
        true,
        &PathShaping::none(),
    )
    .await
}

/// Pulls `remote` like [`pull`], its bytes through `path`'s limits, and
/// lists them in `dest` as `enc` (a memoized job's output, a copy of its
/// twin's).
pub async fn pull_as(
    client: &reqwest::Client,
    source: &str,
    remote: &str,
    dest: &Store,
    enc: &str,
    id: u64,
    path: &PathShaping,
) -> Result<Pulled, TransferFailure> {
    fetch(client, source, remote, dest, enc, id, true, path).await
}

/// Pulls and verifies like [`pull`], its bytes through `path`'s limits,
/// but leaves the bytes in `dest`'s part
/// file of transfer `id`, unlisted: the caller lists them with
/// [`Store::commit_part`] or drops them with [`Store::drop_part`] once it
/// knows whether the file is to be cached (the data-diffusion executors,
/// whose dispatcher decides).
pub async fn pull_unlisted(
    client: &reqwest::Client,
    source: &str,
    dest: &Store,
    enc: &str,
    id: u64,
    path: &PathShaping,
) -> Result<Pulled, TransferFailure> {
    fetch(client, source, enc, dest, enc, id, false, path).await
}

#[allow(clippy::too_many_arguments)]
async fn fetch(
    client: &reqwest::Client,
    source: &str,
    remote: &str,
    dest: &Store,
    enc: &str,
    id: u64,
    list: bool,
    path: &PathShaping,
) -> Result<Pulled, TransferFailure> {
    let url = format!("{source}/files/{remote}");
    let mut request = client
        .get(&url)
        // Names the transfer to the source, which reports faults it injects.
        .header("X-Gridbed-Transfer", id);
    if let Some(key) = &path.key {
        request = request.header(SHAPED_HEADER, key);
    }
    if !path.latency.is_zero() {
        request = request.header(LATENCY_HEADER, path.latency.as_micros() as u64);
    }
    let sent = tokio::time::Instant::now();
    path.requested();
    let mut release = Done {
        held: path.held.as_deref(),
        id,
        answered: false,
    };
    let resp = tokio::time::timeout(path.stall, request.send())
        .await
        .map_err(|_| stalled(path.stall))?
        .map_err(|e| TransferFailure::Connection(e.to_string()))?;
    release.answered = true;
    match resp.status().as_u16() {
        200 => {}
        code => {
            return Err(Refusal::of_status(code).map_or_else(
                || TransferFailure::Connection(format!("HTTP {code} from {url}")),
                Refusal::failure,
            ));
        }
    }
    let expected_sha = resp
        .headers()
        .get("X-Sha256")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .ok_or_else(|| TransferFailure::Connection("no X-Sha256 header".into()))?;
    let expected_len = resp
        .content_length()
        .ok_or_else(|| TransferFailure::Connection("no Content-Length".into()))?;
    let waited = resp
        .headers()
        .get(WAITED_HEADER)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .map_or(std::time::Duration::ZERO, std::time::Duration::from_micros);
    path.begin(sent + waited);
    path.expect(expected_len);
    let part = dest.part_path(enc, id);
    let received = receive(resp, &part, expected_len, &expected_sha, path).await;
    let done = match received {
        Ok(body) => {
            let (part, dst) = (part.clone(), dest.path(enc));
            // One trip to the blocking pool: write (if still in memory), then
            // the atomic rename into place.
            tokio::task::spawn_blocking(move || {
                if let Some(bytes) = body {
                    std::fs::write(&part, bytes)?;
                }
                if list {
                    std::fs::rename(&part, &dst)?;
                }
                Ok(())
            })
            .await
            .map_err(std::io::Error::other)
            .and_then(|r| r)
            .map_err(|e| TransferFailure::Connection(format!("storing the file: {e}")))
        }
        Err(e) => Err(e),
    };
    match done {
        Ok(()) => {
            let meta = FileMeta {
                size: expected_len,
                sha256: expected_sha,
            };
            if list {
                dest.insert(enc, meta.clone());
            }
            Ok(Pulled { meta })
        }
        Err(e) => {
            let _ = tokio::fs::remove_file(&part).await;
            Err(e)
        }
    }
}

/// Frees the connection slot a source in this process holds for a pull
/// ([`HeldSlots`]) when the pull ends, however it ends.
struct Done<'a> {
    held: Option<&'a HeldSlots>,
    id: u64,
    /// Whether the source answered (and so holds a slot or never will).
    answered: bool,
}

impl Drop for Done<'_> {
    fn drop(&mut self) {
        if let Some(held) = self.held {
            held.release(self.id, self.answered);
        }
    }
}

/// A pull whose source sent nothing for `wait`.
fn stalled(wait: std::time::Duration) -> TransferFailure {
    TransferFailure::Connection(format!("the source sent nothing for {:.1} s", wait.as_secs_f64()))
}

/// Receives and verifies the body. A body of at most [`WRITE_BATCH`] bytes
/// stays in memory and is returned (the caller writes it in one step); a
/// larger one goes chunk by chunk to a blocking writer that hashes each
/// chunk and appends it to `part`, so that the sha256 and the file system
/// run beside the network instead of after it, and `None` is returned.
async fn receive(
    resp: reqwest::Response,
    part: &std::path::Path,
    expected_len: u64,
    expected_sha: &str,
    path: &PathShaping,
) -> Result<Option<Vec<u8>>, TransferFailure> {
    let in_memory = expected_len as usize <= WRITE_BATCH;
    let mut received = 0u64;
    let mut body = resp.bytes_stream();
    let mut next = async || -> Result<Option<bytes::Bytes>, TransferFailure> {
        let next = tokio::time::timeout(path.stall, body.next());
        let Some(chunk) = next.await.map_err(|_| stalled(path.stall))? else {
            return Ok(None);
        };
        let chunk = chunk.map_err(|e| {
            TransferFailure::Corrupt(format!(
                "truncated after {received} of {expected_len} bytes: {e}"
            ))
        })?;
        received += chunk.len() as u64;
        if received > expected_len {
            return Err(TransferFailure::Corrupt(format!(
                "more than the {expected_len} bytes announced"
            )));
        }
        path.pass(chunk.len()).await;
        Ok(Some(chunk))
    };
    let (sha, kept) = if in_memory {
        let mut hasher = Sha256::new();
        let mut batch = Vec::with_capacity(expected_len as usize);
        while let Some(chunk) = next().await? {
            hasher.update(&chunk);
            batch.extend_from_slice(&chunk);
        }
        (hasher.finalize(), Some(batch))
    } else {
        let (tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(WRITER_QUEUE);
        let writer = tokio::task::spawn_blocking({
            let part = part.to_path_buf();
            move || write_hashed(&part, rx)
        });
        let mut failed = None;
        loop {
            match next().await {
                Ok(Some(chunk)) => {
                    if tx.send(chunk).await.is_err() {
                        break; // the writer stopped: its error says why
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        drop(tx);
        let written = writer
            .await
            .map_err(|e| TransferFailure::Connection(format!("writing the part file: {e}")))?;
        if let Some(e) = failed {
            return Err(e);
        }
        let hash = written
            .map_err(|e| TransferFailure::Connection(format!("writing the part file: {e}")))?;
        (hash, None)
    };
    if received != expected_len {
        return Err(TransferFailure::Corrupt(format!(
            "received {received} of {expected_len} bytes"
        )));
    }
    let sha = hex::encode(sha);
    if sha != expected_sha {
        return Err(TransferFailure::Corrupt(format!(
            "sha256 {sha}, expected {expected_sha}"
        )));
    }
    Ok(kept)
}

/// Chunks a large body may have received ahead of its writer.
const WRITER_QUEUE: usize = 8;

/// The blocking half of a large pull: each chunk `rx` brings hashed and
/// appended to `part`, until the sender hangs up; the sha256 of them all.
fn write_hashed(
    part: &std::path::Path,
    mut rx: tokio::sync::mpsc::Receiver<bytes::Bytes>,
) -> std::io::Result<sha2::digest::Output<Sha256>> {
    use std::io::Write;
    let mut file = std::fs::File::create(part)?;
    let mut hasher = Sha256::new();
    while let Some(chunk) = rx.blocking_recv() {
        hasher.update(&chunk);
        file.write_all(&chunk)?;
    }
    file.flush()?;
    Ok(hasher.finalize())
}
