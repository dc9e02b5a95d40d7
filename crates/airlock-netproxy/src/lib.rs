//! airlock's host-side egress proxy for `network.mode = "allowlist"`.
//!
//! The sandbox keeps an empty network namespace. Its only way out is a unix
//! socket, bound into it, on which this proxy serves HTTP (`CONNECT` tunnels and
//! plain-HTTP forwarding) and SOCKS5 with remote name resolution. A relay thread
//! of the sandbox's PID 1 (`airlock_sandbox::relay`) exposes that socket
//! on loopback ports inside, where `HTTP_PROXY`/`ALL_PROXY` point.
//!
//! Every execution gets its own [`ProxyContext`]: its own socket, its own rules
//! (policy plus grant-added hosts) and its own [`ConnectionLog`] tagged with the
//! request id. Every decision, allowed or refused, is a [`ConnectionEntry`].

pub mod addr;
pub mod client;
pub mod config;
pub mod decide;
pub mod fdio;
pub mod host_addrs;
pub mod http;
pub mod log;
pub mod pattern;
pub mod server;
pub mod socks;
pub mod tls;
pub mod tunnel;

pub use addr::{blocked_range, BlockedRange};
pub use config::ContextConfig;
pub use http::ERROR_HEADER;
pub use log::{blocked_summary, ConnectionEntry, ConnectionLog, Decision, Protocol, Reason};
pub use pattern::{HostPattern, PatternError, RuleSet, Target};
pub use server::{EgressProxy, ProxyContext, ProxyError};
