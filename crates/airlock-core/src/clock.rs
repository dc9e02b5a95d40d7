//! Wall-clock time as the audit log, approvals and grants write it: milliseconds
//! since the Unix epoch, shown as RFC 3339 UTC (`2026-11-29T10:30:00.123Z`), and
//! the short durations people type (`15m`, `1h`, `90s`).

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `2026-11-29T10:30:00.123Z`.
pub fn format_rfc3339(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        ms % 1000
    )
}

/// Parses what [`format_rfc3339`] writes, and also `YYYY-MM-DDTHH:MM:SSZ` and
/// `YYYY-MM-DD`. Only UTC (`Z`) is accepted: the log never writes an offset.
pub fn parse_rfc3339(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<u64> {
        let s = text.get(r)?;
        if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b.get(4) != Some(&b'-')
        || b.get(7) != Some(&b'-')
        || !(1..=12).contains(&mo)
        || !(1..=31).contains(&d)
    {
        return None;
    }
    let days = days_from_civil(y as i64, mo as u32, d as u32);
    if days < 0 {
        return None;
    }
    let mut ms = days as u64 * 86_400_000;
    if b.len() == 10 {
        return Some(ms);
    }
    if b.get(10) != Some(&b'T') || b.get(13) != Some(&b':') || b.get(16) != Some(&b':') {
        return None;
    }
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if h > 23 || mi > 59 || s > 60 {
        return None;
    }
    ms += (h * 3600 + mi * 60 + s) * 1000;
    let rest = &text[19..];
    let rest = if let Some(frac) = rest.strip_prefix('.') {
        let digits: String = frac.chars().take_while(|c| c.is_ascii_digit()).collect();
        if digits.is_empty() {
            return None;
        }
        let mut padded = digits.clone();
        padded.truncate(3);
        while padded.len() < 3 {
            padded.push('0');
        }
        ms += padded.parse::<u64>().ok()?;
        &frac[digits.len()..]
    } else {
        rest
    };
    (rest == "Z").then_some(ms)
}

/// `90s`, `15m`, `1h`, `2d`, `500ms`, or a combination such as `1h30m`.
pub fn parse_duration(text: &str) -> Option<std::time::Duration> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let mut total_ms: u64 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        let value: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(|c| c.is_ascii_alphabetic()).count();
        let unit_ms = match &rest[..unit_len] {
            "ms" => 1,
            "s" | "sec" => 1000,
            "m" | "min" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total_ms = total_ms.checked_add(value.checked_mul(unit_ms)?)?;
    }
    Some(std::time::Duration::from_millis(total_ms))
}

/// A duration the way people read it: `15m`, `1h30m`, `45s`.
pub fn format_duration(d: std::time::Duration) -> String {
    let mut secs = d.as_secs();
    if secs == 0 {
        return format!("{}ms", d.as_millis());
    }
    let mut out = String::new();
    for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)] {
        if secs >= size {
            out.push_str(&format!("{}{unit}", secs / size));
            secs %= size;
        }
    }
    out
}

// Howard Hinnant's civil calendar algorithms (public domain).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips() {
        for ms in [0, 1_700_000_000_123, 1_798_537_800_000, 951_782_400_000] {
            let text = format_rfc3339(ms);
            assert_eq!(parse_rfc3339(&text), Some(ms), "{text}");
        }
        assert_eq!(format_rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(parse_rfc3339("2000-02-29"), Some(951_782_400_000));
        assert_eq!(parse_rfc3339("2000-02-29T00:00:00+01:00"), None);
        assert_eq!(parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("15m").unwrap().as_secs(), 900);
        assert_eq!(parse_duration("1h30m").unwrap().as_secs(), 5400);
        assert_eq!(parse_duration("500ms").unwrap().as_millis(), 500);
        assert!(parse_duration("").is_none());
        assert!(parse_duration("10").is_none());
        assert!(parse_duration("5y").is_none());
        assert_eq!(
            format_duration(std::time::Duration::from_secs(5400)),
            "1h30m"
        );
    }
}
