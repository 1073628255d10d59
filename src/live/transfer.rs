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

use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use super::store::{FileMeta, Store};
use crate::core::TransferFailure;

/// Bytes gathered before one write to the part file.
const WRITE_BATCH: usize = 4 << 20;

/// A completed pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulled {
    /// The verified file.
    pub meta: FileMeta,
}

/// Pulls `/files/{enc}` from `source` (a base URL such as
/// `http://127.0.0.1:4000`) into `dest` as transfer `id`, verifies it and lists
/// it in `dest`'s catalogue.
pub async fn pull(
    client: &reqwest::Client,
    source: &str,
    dest: &Store,
    enc: &str,
    id: u64,
) -> Result<Pulled, TransferFailure> {
    fetch(client, source, enc, dest, enc, id, true).await
}

/// Pulls `remote` like [`pull`] and lists its bytes in `dest` as `enc` (a
/// memoized job's output, a copy of its twin's).
pub async fn pull_as(
    client: &reqwest::Client,
    source: &str,
    remote: &str,
    dest: &Store,
    enc: &str,
    id: u64,
) -> Result<Pulled, TransferFailure> {
    fetch(client, source, remote, dest, enc, id, true).await
}

/// Pulls and verifies like [`pull`], but leaves the bytes in `dest`'s part
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
) -> Result<Pulled, TransferFailure> {
    fetch(client, source, enc, dest, enc, id, false).await
}

async fn fetch(
    client: &reqwest::Client,
    source: &str,
    remote: &str,
    dest: &Store,
    enc: &str,
    id: u64,
    list: bool,
) -> Result<Pulled, TransferFailure> {
    let url = format!("{source}/files/{remote}");
    let resp = client
        .get(&url)
        // Names the transfer to the source, which reports faults it injects.
        .header("X-Gridbed-Transfer", id)
        .send()
        .await
        .map_err(|e| TransferFailure::Connection(e.to_string()))?;
    match resp.status().as_u16() {
        200 => {}
        503 => return Err(TransferFailure::Busy),
        404 => return Err(TransferFailure::SourceMissing),
        code => {
            return Err(TransferFailure::Connection(format!(
                "HTTP {code} from {url}"
            )));
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
    let part = dest.part_path(enc, id);
    let received = receive(resp, &part, expected_len, &expected_sha).await;
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

/// Receives and verifies the body. A body of at most [`WRITE_BATCH`] bytes
/// stays in memory and is returned (the caller writes it in one step); a larger
/// one streams into `part` and `None` is returned.
async fn receive(
    resp: reqwest::Response,
    part: &std::path::Path,
    expected_len: u64,
    expected_sha: &str,
) -> Result<Option<Vec<u8>>, TransferFailure> {
    let io = |e: std::io::Error| TransferFailure::Connection(format!("writing the part file: {e}"));
    let in_memory = expected_len as usize <= WRITE_BATCH;
    let mut file = if in_memory {
        None
    } else {
        Some(tokio::fs::File::create(part).await.map_err(io)?)
    };
    let mut hasher = Sha256::new();
    let mut received = 0u64;
    let mut batch = Vec::with_capacity(WRITE_BATCH.min(expected_len as usize));
    let mut body = resp.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| {
            TransferFailure::Corrupt(format!(
                "truncated after {received} of {expected_len} bytes: {e}"
            ))
        })?;
        hasher.update(&chunk);
        received += chunk.len() as u64;
        if received > expected_len {
            return Err(TransferFailure::Corrupt(format!(
                "more than the {expected_len} bytes announced"
            )));
        }
        batch.extend_from_slice(&chunk);
        if let Some(f) = file.as_mut()
            && batch.len() >= WRITE_BATCH
        {
            f.write_all(&batch).await.map_err(io)?;
            batch.clear();
        }
    }
    if let Some(f) = file.as_mut() {
        f.write_all(&batch).await.map_err(io)?;
        f.flush().await.map_err(io)?;
    }
    if received != expected_len {
        return Err(TransferFailure::Corrupt(format!(
            "received {received} of {expected_len} bytes"
        )));
    }
    let sha = hex::encode(hasher.finalize());
    if sha != expected_sha {
        return Err(TransferFailure::Corrupt(format!(
            "sha256 {sha}, expected {expected_sha}"
        )));
    }
    Ok(in_memory.then_some(batch))
}
