//! Durations (`"30s"`) and sizes (`"512MiB"`) as the policy file writes them.

/// Parse `"500ms"`, `"30s"`, `"2m"`, `"1h"` (also `"1m30s"`) into milliseconds.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let expected = "expected a duration such as \"500ms\", \"30s\", \"2m\" or \"1h\"";
    let s = text.trim();
    if s.is_empty() {
        return Err(format!("empty duration; {expected}"));
    }
    let mut total: u64 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.chars().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return Err(format!("`{text}` is not a duration; {expected}"));
        }
        let (num, after) = rest.split_at(digits);
        let unit_len = after
            .chars()
            .take_while(|c| c.is_ascii_alphabetic())
            .count();
        let (unit, after) = after.split_at(unit_len);
        let n: u64 = num
            .parse()
            .map_err(|_| format!("`{text}`: number too large"))?;
        let factor = match unit {
            "ms" => 1,
            "s" | "sec" => 1_000,
            "m" | "min" => 60_000,
            "h" => 3_600_000,
            "" if after.is_empty() => return Err(format!("`{text}` has no unit; {expected}")),
            "" => return Err(format!("`{text}` is not a duration; {expected}")),
            other => return Err(format!("`{text}`: unknown unit `{other}`; {expected}")),
        };
        total = n
            .checked_mul(factor)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| format!("`{text}`: duration too large"))?;
        rest = after;
    }
    Ok(total)
}

/// Parse `"512MiB"`, `"64KiB"`, `"1GiB"`, `"100MB"`, `"4096"` (bytes) into bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let expected = "expected a size such as \"64KiB\", \"512MiB\", \"1GiB\" or a number of bytes";
    let s = text.trim();
    let digits = s
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .count();
    if digits == 0 {
        return Err(format!("`{text}` is not a size; {expected}"));
    }
    let (num, unit) = s.split_at(digits);
    let factor: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" | "k" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        "T" | "TiB" => 1 << 40,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        other => return Err(format!("`{text}`: unknown size unit `{other}`; {expected}")),
    };
    if num.contains('.') {
        let v: f64 = num
            .parse()
            .map_err(|_| format!("`{text}` is not a size; {expected}"))?;
        let bytes = v * factor as f64;
        if !bytes.is_finite() || bytes >= u64::MAX as f64 {
            return Err(format!("`{text}`: size too large"));
        }
        return Ok(bytes as u64);
    }
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{text}`: number too large"))?;
    n.checked_mul(factor)
        .ok_or_else(|| format!("`{text}`: size too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(30_000));
        assert_eq!(parse_duration("500ms"), Ok(500));
        assert_eq!(parse_duration("1m30s"), Ok(90_000));
        assert_eq!(parse_duration("2h"), Ok(7_200_000));
        assert!(parse_duration("30").unwrap_err().contains("no unit"));
        assert!(parse_duration("30 parsecs").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("99999999999999999999h").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        assert_eq!(parse_size("100MB"), Ok(100_000_000));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("12 parsecs")
            .unwrap_err()
            .contains("unknown size unit"));
        assert!(parse_size("99999999999TiB").is_err());
    }
}
