//! Safe on-disk names for logical file names.
//!
//! Workflow file names may hold any character (`/`, spaces, `..`). A pool
//! stores each file under an encoding that keeps `[A-Za-z0-9._-]` and writes
//! every other byte as `~XX` (upper-case hex); a leading `.` is escaped too, so
//! no stored name is hidden, `.` or `..`, and partial files (`.NAME.part`) can
//! never collide with a stored one. The encoding uses only characters that URLs
//! carry unchanged, so the gridftp endpoint serves `/files/<encoding>` and
//! rejects anything that is not a canonical encoding.

/// Encodes a logical name into its pool name.
pub fn encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for (i, b) in name.bytes().enumerate() {
        let plain = b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (b == b'.' && i > 0);
        if plain {
            out.push(b as char);
        } else {
            out.push_str(&format!("~{b:02X}"));
        }
    }
    if out.is_empty() {
        out.push('~'); // the empty name; `~` alone decodes to nothing
    }
    out
}

/// Decodes a pool name back to the logical name; `None` unless `enc` is exactly
/// what [`encode`] would write (so `%2e`, `..`, `/`, lower-case or needless
/// escapes are all refused).
pub fn decode(enc: &str) -> Option<String> {
    if enc == "~" {
        return Some(String::new());
    }
    if enc.is_empty() {
        return None;
    }
    let bytes = enc.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'~' {
            let hex = enc.get(i + 1..i + 3)?;
            if !hex
                .bytes()
                .all(|h| h.is_ascii_digit() || (b'A'..=b'F').contains(&h))
            {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.' {
            out.push(b);
            i += 1;
        } else {
            return None;
        }
    }
    let name = String::from_utf8(out).ok()?;
    (encode(&name) == enc).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_any_name() {
        for name in [
            "a.fits",
            "sky/ra001 dec02.fits",
            "..",
            ".hidden",
            "é~%",
            "x.part",
            "",
        ] {
            let enc = encode(name);
            assert!(!enc.contains('/') && !enc.starts_with('.') && enc != "..");
            assert_eq!(decode(&enc).as_deref(), Some(name), "{enc}");
        }
        assert_eq!(encode("sky/a b"), "sky~2Fa~20b");
    }

    #[test]
    fn refuses_non_canonical_and_traversal() {
        for bad in [
            "..",
            ".",
            "../etc",
            "a/b",
            "%2e%2e%2f",
            "~2e",
            "~2F~",
            "~41",
            "a%20b",
            "",
            "/etc/passwd",
            "~zz",
        ] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }
}
