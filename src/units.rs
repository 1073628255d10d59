//! Sizes and rates as people write them: `5000000`, `"5 MB"`, `"1 GiB"`,
//! `"1 MB/s"`, `"100 Mbit/s"`. Decimal prefixes are powers of 1000 (as the papers
//! use them: a 5 MB file at 1 MB/s takes 5 s), binary ones powers of 1024.

use std::fmt;

use serde::{Deserialize, Deserializer, de};

/// A size in nominal bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Size(pub u64);

/// `v` as a user wrote it: plainly, or in exponent form where it is huge
/// or tiny (`1e300`, not 301 digits).
pub fn plain(v: f64) -> String {
    if v != 0.0 && !(1e-6..1e9).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// The finite rates a testbed may give (nominal B/s): 1 B/s to 1 PB/s.
/// Below, a file's transfer outlasts any run; above, no link is that fast.
pub const RATE_RANGE: std::ops::RangeInclusive<f64> = 1.0..=1e15;

/// A rate in nominal bytes per second; `f64::INFINITY` means unlimited.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Rate(pub f64);

fn unit_factor(unit: &str) -> Option<f64> {
    Some(match unit {
        "" | "B" => 1.0,
        "kB" | "KB" | "k" | "K" => 1e3,
        "MB" | "M" => 1e6,
        "GB" | "G" => 1e9,
        "TB" | "T" => 1e12,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0_f64.powi(4),
        "bit" => 0.125,
        "kbit" | "Kbit" => 125.0,
        "Mbit" => 125e3,
        "Gbit" => 125e6,
        _ => return None,
    })
}

/// Parses `"5 MB"`-style text into bytes.
pub fn parse_bytes(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.trim().parse().map_err(|_| {
        format!("expected a number with an optional unit such as `5 MB`, found `{text}`")
    })?;
    let factor = unit_factor(unit.trim()).ok_or_else(|| {
        format!(
            "unknown unit `{}` in `{text}` (use B, kB, MB, GB, TB, KiB, MiB, GiB, Mbit)",
            unit.trim()
        )
    })?;
    let bytes = value * factor;
    if !bytes.is_finite() || bytes < 0.0 {
        return Err(format!("expected a non-negative amount, found `{text}`"));
    }
    Ok(bytes)
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Int(i64),
    Float(f64),
    Text(String),
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bytes = match Raw::deserialize(d).map_err(|_| {
            de::Error::custom("expected a size: a byte count or text such as `5 MB`")
        })? {
            Raw::Int(i) if i >= 0 => i as f64,
            Raw::Int(i) => {
                return Err(de::Error::custom(format!(
                    "expected a non-negative size, found {i}"
                )));
            }
            Raw::Float(f) if f >= 0.0 && f.is_finite() => f,
            Raw::Float(f) => {
                return Err(de::Error::custom(format!(
                    "expected a non-negative size, found {f}"
                )));
            }
            Raw::Text(t) => parse_bytes(&t).map_err(de::Error::custom)?,
        };
        Ok(Size(bytes.round() as u64))
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let expected = "expected a rate: bytes per second or text such as `1 MB/s` or `unlimited`";
        let v = match Raw::deserialize(d).map_err(|_| de::Error::custom(expected))? {
            Raw::Int(i) => i as f64,
            Raw::Float(f) => f,
            Raw::Text(t) if t.trim() == "unlimited" => f64::INFINITY,
            Raw::Text(t) => {
                let body = t
                    .trim()
                    .strip_suffix("/s")
                    .ok_or_else(|| de::Error::custom(expected))?;
                parse_bytes(body).map_err(de::Error::custom)?
            }
        };
        if v.is_nan() || v <= 0.0 {
            return Err(de::Error::custom(format!("{expected}; found a rate ≤ 0")));
        }
        if v.is_finite() && !RATE_RANGE.contains(&v) {
            return Err(de::Error::custom(format!(
                "expected a rate from {} to {:e} B/s, or `unlimited`; found {} B/s",
                RATE_RANGE.start(),
                RATE_RANGE.end(),
                plain(v)
            )));
        }
        Ok(Rate(v))
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", human_bytes(self.0 as f64))
    }
}

/// `1234567` → `"1.23 MB"`.
pub fn human_bytes(b: f64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut v = b;
    let mut i = 0;
    while v.abs() >= 1000.0 && i + 1 < units.len() {
        v /= 1000.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.2} {}", units[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct T {
        s: Size,
        r: Rate,
    }

    #[test]
    fn parses_units() {
        let t: T = toml::from_str("s = \"5 MB\"\nr = \"100 Mbit/s\"").unwrap();
        assert_eq!(t.s, Size(5_000_000));
        assert_eq!(t.r, Rate(12.5e6));
        let t: T = toml::from_str("s = 1024\nr = \"unlimited\"").unwrap();
        assert_eq!(t.s, Size(1024));
        assert!(t.r.0.is_infinite());
        assert_eq!(
            parse_bytes("2 GiB").unwrap(),
            2.0 * 1024.0 * 1024.0 * 1024.0
        );
    }

    #[test]
    fn rejects_negative_and_unknown() {
        assert!(toml::from_str::<T>("s = -5\nr = 1").is_err());
        assert!(toml::from_str::<T>("s = \"5 parsecs\"\nr = 1").is_err());
        assert!(toml::from_str::<T>("s = 1\nr = 0").is_err());
        assert_eq!(human_bytes(1_234_567.0), "1.23 MB");
    }
}
