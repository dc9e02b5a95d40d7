//! The configuration of one proxy context (one execution).

use crate::pattern::{PatternError, RuleSet};
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

/// Everything a context decides with. Build with [`ContextConfig::new`] from the
/// policy's `network.allow` / `network.deny` plus any grant-added hosts.
#[derive(Debug, Clone)]
pub struct ContextConfig {
    pub rules: RuleSet,
    /// Name overrides consulted before the system resolver (like /etc/hosts, but
    /// per context). Keys are lower-case names without a trailing dot.
    pub hosts: HashMap<String, Vec<IpAddr>>,
    /// When true, names missing from `hosts` fail instead of reaching the system
    /// resolver. Tests set it so that nothing leaves the machine.
    pub hosts_only: bool,
    /// TEST ONLY. Exact addresses exempted from the internal-address refusal, so
    /// that tests can serve `pypi.test` from 127.0.0.x. Production configurations
    /// never set it: every entry is a hole in the DNS-rebinding defence.
    pub allow_private_for_tests: Vec<IpAddr>,
    pub connect_timeout: Duration,
    /// How long a tunnel may stay silent before its first bytes (the ClientHello).
    pub first_bytes_timeout: Duration,
    /// Concurrent connections allowed for this context.
    pub max_connections: usize,
}

impl ContextConfig {
    /// Parse allow and deny patterns (plus grant-added hosts, which join `allow`).
    pub fn new<A: AsRef<str>, D: AsRef<str>>(
        allow: &[A],
        deny: &[D],
    ) -> Result<ContextConfig, PatternError> {
        Ok(ContextConfig {
            rules: RuleSet::parse(allow, deny)?,
            hosts: HashMap::new(),
            hosts_only: false,
            allow_private_for_tests: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            first_bytes_timeout: Duration::from_secs(10),
            max_connections: 256,
        })
    }

    /// Add the hosts a grant opened for this one execution.
    pub fn add_granted<G: AsRef<str>>(&mut self, granted: &[G]) -> Result<(), PatternError> {
        let extra = RuleSet::parse::<G, &str>(granted, &[])?;
        self.rules.allow.extend(extra.allow);
        Ok(())
    }

    pub fn map_host(&mut self, name: &str, addrs: &[IpAddr]) {
        let key = name.trim_end_matches('.').to_ascii_lowercase();
        self.hosts.insert(key, addrs.to_vec());
    }
}
