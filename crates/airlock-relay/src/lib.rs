//! The in-sandbox half of airlock's egress relay.
//!
//! In network allowlist mode a sandbox's only way out is the host's egress
//! proxy, reached through a unix socket. Programs speak TCP to a proxy
//! (`HTTP_PROXY=http://127.0.0.1:3128`, `ALL_PROXY=socks5h://127.0.0.1:1080`),
//! so something on the sandbox's own loopback must listen on those ports and
//! carry each connection to the proxy, which judges every request (it tells
//! HTTP from SOCKS5 by the first byte).
//!
//! Where the host can reach into the sandbox's network namespace (native, crun,
//! runc), the host-side relay of `airlock-sandbox` binds the listeners there
//! and nothing runs inside. Where it cannot, this crate's binary runs inside:
//!
//! - [`mux`]: a microVM has no network device and no shared socket, only one
//!   virtio-serial port; every connection becomes a stream of a small
//!   multiplexing protocol over it, which the host side ([`mux::serve`])
//!   unpacks onto the proxy socket.
//! - [`copy`]: a gVisor sandbox (its own network stack, whose loopback no host
//!   listener can serve) or a Docker-API container (its namespace made by the
//!   daemon when the command starts) gets the proxy socket bound in; every
//!   connection is copied to a fresh connection to it. `airlock-relay exec`
//!   is the sandbox's first program: it binds the listeners, relays on one
//!   thread of its own (a `poll(2)` loop, so connections cost no tasks
//!   against `limits.pids`), runs the command as its child and reaps as an
//!   init does.
//!
//! The crate is std-only so that its binary links statically and runs in any
//! root filesystem: a busybox initramfs, or a container image of any
//! distribution.

pub mod copy;
pub mod mux;

/// What the relay prints on stdout once every listener is bound.
pub const READY: &str = "airlock-relay: ready";

/// Relay threads only shuffle bytes between sockets.
const THREAD_STACK: usize = 64 * 1024;
