//! Host patterns of `network.allow` / `network.deny` and the rule set built from them.
//!
//! A pattern is an exact host (`api.example.com`), a wildcard over subdomains
//! (`*.files.example.com`, which does not match the apex), or an exact IP literal
//! (`203.0.113.7`, `[2001:db8::1]`), each optionally followed by `:port` or
//! `:port,port,...`. Without a port list every port matches.
//!
//! The policy crate validates these strings at load; this module parses them again
//! because the proxy must never trust that a caller did, and it refuses the same
//! over-broad forms (`*`, `*.com`, `*.co.uk`, wildcards in the middle).

use std::fmt;
use std::net::IpAddr;

/// Why a pattern string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("empty host pattern")]
    Empty,
    #[error("host pattern `{0}` is over-broad: a wildcard must cover a registrable domain (at least two labels, not a public suffix)")]
    OverBroad(String),
    #[error("host pattern `{0}` has a `*` outside a leading `*.`")]
    MisplacedWildcard(String),
    #[error("host pattern `{0}` has an invalid port list")]
    BadPort(String),
    #[error("host pattern `{0}` is not a valid host name or IP address")]
    BadHost(String),
    #[error("host pattern `{0}` must not contain a scheme or a path")]
    SchemeOrPath(String),
}

/// What a pattern matches on the host side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostMatch {
    /// One exact, lower-case host name.
    Exact(String),
    /// Any strict subdomain of this lower-case suffix (stored without the `*.`).
    Subdomains(String),
    /// One exact IP address.
    Ip(IpAddr),
}

/// One parsed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    pub host: HostMatch,
    /// Empty means every port.
    pub ports: Vec<u16>,
    /// The pattern as written, for reasons and logs.
    pub source: String,
}

/// Multi-label public suffixes under which a `*.` wildcard would still cover many
/// unrelated owners. Not the full public suffix list: the common ones, so that the
/// obvious over-broad grants are refused.
const PUBLIC_SUFFIXES: &[&str] = &[
    "co.uk",
    "org.uk",
    "ac.uk",
    "gov.uk",
    "com.au",
    "net.au",
    "org.au",
    "co.jp",
    "ne.jp",
    "co.nz",
    "co.za",
    "com.br",
    "com.cn",
    "com.mx",
    "co.in",
    "co.kr",
    "com.tw",
    "com.tr",
    "github.io",
    "gitlab.io",
    "herokuapp.com",
    "appspot.com",
    "cloudfront.net",
    "amazonaws.com",
    "azurewebsites.net",
    "blob.core.windows.net",
    "pages.dev",
    "workers.dev",
    "netlify.app",
    "vercel.app",
    "fly.dev",
    "web.app",
    "firebaseapp.com",
    "ngrok.io",
    "ngrok-free.app",
    "trycloudflare.com",
    "s3.amazonaws.com",
];

impl HostPattern {
    pub fn parse(text: &str) -> Result<HostPattern, PatternError> {
        let source = text.trim().to_string();
        if source.is_empty() {
            return Err(PatternError::Empty);
        }
        if source.contains("://") || source.contains('/') || source.contains('@') {
            return Err(PatternError::SchemeOrPath(source));
        }
        let (host_part, port_part) = split_host_port(&source)?;
        let ports = match port_part {
            None => Vec::new(),
            Some(list) => parse_ports(list).ok_or_else(|| PatternError::BadPort(source.clone()))?,
        };
        let host = if let Some(ip) = parse_ip_literal(host_part) {
            HostMatch::Ip(ip)
        } else {
            let lower = normalize_host(host_part).ok_or_else(|| {
                if host_part.contains('*') {
                    PatternError::MisplacedWildcard(source.clone())
                } else {
                    PatternError::BadHost(source.clone())
                }
            })?;
            if let Some(suffix) = lower.strip_prefix("*.") {
                if suffix.contains('*') {
                    return Err(PatternError::MisplacedWildcard(source));
                }
                if !is_host_name(suffix) {
                    return Err(PatternError::BadHost(source));
                }
                if suffix.split('.').count() < 2 || PUBLIC_SUFFIXES.contains(&suffix) {
                    return Err(PatternError::OverBroad(source));
                }
                HostMatch::Subdomains(suffix.to_string())
            } else if lower == "*" {
                return Err(PatternError::OverBroad(source));
            } else if lower.contains('*') {
                return Err(PatternError::MisplacedWildcard(source));
            } else if is_host_name(&lower) {
                HostMatch::Exact(lower)
            } else {
                return Err(PatternError::BadHost(source));
            }
        };
        Ok(HostPattern {
            host,
            ports,
            source,
        })
    }

    /// Whether this pattern covers `host:port`. `host` must already be normalised
    /// (see [`Target`]).
    pub fn matches(&self, target: &Target) -> bool {
        let host_ok = match (&self.host, &target.host) {
            (HostMatch::Exact(h), TargetHost::Name(n)) => h == n,
            (HostMatch::Subdomains(s), TargetHost::Name(n)) => {
                n.len() > s.len() + 1
                    && n.ends_with(s.as_str())
                    && n.as_bytes()[n.len() - s.len() - 1] == b'.'
            }
            (HostMatch::Ip(a), TargetHost::Ip(b)) => canonical_ip(*a) == canonical_ip(*b),
            _ => false,
        };
        host_ok && (self.ports.is_empty() || self.ports.contains(&target.port))
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// IPv4-mapped IPv6 addresses compare equal to their IPv4 form.
pub fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

fn split_host_port(source: &str) -> Result<(&str, Option<&str>), PatternError> {
    if let Some(rest) = source.strip_prefix('[') {
        let end = rest
            .find(']')
            .ok_or_else(|| PatternError::BadHost(source.to_string()))?;
        let host = &rest[..end];
        let after = &rest[end + 1..];
        return match after.strip_prefix(':') {
            Some(ports) => Ok((host, Some(ports))),
            None if after.is_empty() => Ok((host, None)),
            None => Err(PatternError::BadHost(source.to_string())),
        };
    }
    // A bare IPv6 literal has several colons and no port.
    if source.matches(':').count() > 1 {
        return Ok((source, None));
    }
    match source.rsplit_once(':') {
        Some((host, ports)) => Ok((host, Some(ports))),
        None => Ok((source, None)),
    }
}

fn parse_ports(list: &str) -> Option<Vec<u16>> {
    let mut ports = Vec::new();
    for item in list.split(',') {
        let port: u16 = item.trim().parse().ok()?;
        if port == 0 {
            return None;
        }
        ports.push(port);
    }
    (!ports.is_empty()).then_some(ports)
}

fn parse_ip_literal(text: &str) -> Option<IpAddr> {
    let inner = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    inner.parse().ok()
}

/// Lower-case, strip one trailing dot; `None` for characters a host name cannot hold.
fn normalize_host(text: &str) -> Option<String> {
    let trimmed = text.strip_suffix('.').unwrap_or(text);
    if trimmed.is_empty() || trimmed.len() > 253 {
        return None;
    }
    let lower = trimmed.to_ascii_lowercase();
    lower
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_' || b == b'*')
        .then_some(lower)
}

fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// A destination asked for by a client, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: TargetHost,
    pub port: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetHost {
    Name(String),
    Ip(IpAddr),
}

impl Target {
    /// Parse a host as a client sent it (CONNECT authority, Host, SOCKS domain).
    pub fn new(host: &str, port: u16) -> Option<Target> {
        if let Some(ip) = parse_ip_literal(host) {
            return Some(Target {
                host: TargetHost::Ip(canonical_ip(ip)),
                port,
            });
        }
        let lower = normalize_host(host)?;
        if lower.contains('*') || !is_host_name(&lower) {
            return None;
        }
        // Names made only of digits and dots are IPv4 in odd notations
        // (`2130706433`, `0x7f.1`); resolvers would turn them into addresses.
        if lower.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            || lower
                .split('.')
                .all(|l| l.starts_with("0x") || l.bytes().all(|b| b.is_ascii_digit()))
        {
            return None;
        }
        Some(Target {
            host: TargetHost::Name(lower),
            port,
        })
    }

    pub fn host_string(&self) -> String {
        match &self.host {
            TargetHost::Name(n) => n.clone(),
            TargetHost::Ip(ip) => ip.to_string(),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            TargetHost::Name(n) => write!(f, "{n}:{}", self.port),
            TargetHost::Ip(IpAddr::V6(v6)) => write!(f, "[{v6}]:{}", self.port),
            TargetHost::Ip(ip) => write!(f, "{ip}:{}", self.port),
        }
    }
}

/// The allow and deny lists of one proxy context.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleSet {
    pub allow: Vec<HostPattern>,
    pub deny: Vec<HostPattern>,
}

/// The policy verdict on a target before any name is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleVerdict {
    /// Allowed by this allow pattern.
    Allowed(String),
    /// Refused by this deny pattern.
    Denied(String),
    /// An IP literal that no allow pattern lists exactly.
    IpLiteralNotListed,
    /// No allow pattern matched.
    NotListed,
}

impl RuleSet {
    /// Parse both lists; the first bad pattern is the error.
    pub fn parse<A: AsRef<str>, D: AsRef<str>>(
        allow: &[A],
        deny: &[D],
    ) -> Result<RuleSet, PatternError> {
        Ok(RuleSet {
            allow: allow
                .iter()
                .map(|p| HostPattern::parse(p.as_ref()))
                .collect::<Result<_, _>>()?,
            deny: deny
                .iter()
                .map(|p| HostPattern::parse(p.as_ref()))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Deny wins over allow; IP literals need an exact IP pattern.
    pub fn judge(&self, target: &Target) -> RuleVerdict {
        if let Some(p) = self.deny.iter().find(|p| p.matches(target)) {
            return RuleVerdict::Denied(p.source.clone());
        }
        match self.allow.iter().find(|p| p.matches(target)) {
            Some(p) => RuleVerdict::Allowed(p.source.clone()),
            None if matches!(target.host, TargetHost::Ip(_)) => RuleVerdict::IpLiteralNotListed,
            None => RuleVerdict::NotListed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(host: &str, port: u16) -> Target {
        Target::new(host, port).expect("valid target")
    }

    #[test]
    fn over_broad_and_malformed_patterns_are_refused() {
        for bad in [
            "*",
            "*.com",
            "*.co.uk",
            "*.github.io",
            "a.*.com",
            "foo*.example.com",
            "",
            "https://x.com",
            "x.com/path",
            "x.com:0",
            "x.com:99999",
            "x.com:",
            "user@x.com",
            "*.*.example.com",
        ] {
            assert!(HostPattern::parse(bad).is_err(), "{bad:?} must be refused");
        }
        assert!(matches!(
            HostPattern::parse("*.com"),
            Err(PatternError::OverBroad(_))
        ));
    }

    #[test]
    fn exact_wildcard_ports_and_ips() {
        let rules = RuleSet::parse(
            &[
                "pypi.test",
                "*.files.test",
                "api.test:443,8443",
                "203.0.113.7",
                "[2001:db8::1]:443",
            ],
            &["bad.files.test"],
        )
        .unwrap();
        assert_eq!(
            rules.judge(&t("PyPI.test.", 443)),
            RuleVerdict::Allowed("pypi.test".into())
        );
        assert_eq!(
            rules.judge(&t("pypi.test", 22)),
            RuleVerdict::Allowed("pypi.test".into())
        );
        assert_eq!(
            rules.judge(&t("a.b.files.test", 80)),
            RuleVerdict::Allowed("*.files.test".into())
        );
        assert_eq!(
            rules.judge(&t("files.test", 80)),
            RuleVerdict::NotListed,
            "wildcard excludes apex"
        );
        assert_eq!(
            rules.judge(&t("evilfiles.test", 80)),
            RuleVerdict::NotListed
        );
        assert_eq!(
            rules.judge(&t("bad.files.test", 443)),
            RuleVerdict::Denied("bad.files.test".into())
        );
        assert_eq!(
            rules.judge(&t("api.test", 8443)),
            RuleVerdict::Allowed("api.test:443,8443".into())
        );
        assert_eq!(rules.judge(&t("api.test", 80)), RuleVerdict::NotListed);
        assert_eq!(
            rules.judge(&t("203.0.113.7", 1)),
            RuleVerdict::Allowed("203.0.113.7".into())
        );
        assert_eq!(
            rules.judge(&t("::ffff:203.0.113.7", 1)),
            RuleVerdict::Allowed("203.0.113.7".into())
        );
        assert_eq!(
            rules.judge(&t("203.0.113.8", 443)),
            RuleVerdict::IpLiteralNotListed
        );
        assert_eq!(
            rules.judge(&t("[2001:db8::1]", 443)),
            RuleVerdict::Allowed("[2001:db8::1]:443".into())
        );
        assert_eq!(
            rules.judge(&t("2001:db8::1", 80)),
            RuleVerdict::IpLiteralNotListed
        );
    }

    #[test]
    fn deny_beats_allow_even_when_allow_is_more_specific() {
        let rules = RuleSet::parse(&["x.evil.test"], &["*.evil.test"]).unwrap();
        assert_eq!(
            rules.judge(&t("x.evil.test", 443)),
            RuleVerdict::Denied("*.evil.test".into())
        );
    }

    #[test]
    fn numeric_host_names_are_not_names() {
        for odd in ["2130706433", "0x7f.0x0.0x0.0x1", "127.1", "0177.0.0.1"] {
            assert!(Target::new(odd, 80).is_none(), "{odd}");
        }
        assert!(Target::new("bad host", 80).is_none());
        assert!(Target::new("*.x.test", 80).is_none());
    }
}
