//! The Docker-API backend: the sandbox's view translated into a container of
//! a locally present image, created and run through a Docker Engine API
//! socket (dockerd, or podman's service) with the `bollard` client.
//!
//! Process model, as for the OCI backend: the caller never talks to the
//! daemon itself. It starts a helper (this binary re-executed, [`helper`])
//! that stages the workspace with the OCI backend's layout (an idmapped lower
//! layer and a size-capped upper layer the change report is read from), in
//! the host's mount namespace because the daemon resolves bind sources there;
//! creates the container ([`config`]), streams its output, watches the wall
//! clock and the caller, and always removes the container before it reports.
//! Containers carry labels naming the helper's process, so that a helper
//! killed outright leaves nothing that the next run does not sweep
//! ([`sweep`]).
//!
//! The helper's async runtime (bollard needs one) lives only in that process.

#[cfg(feature = "docker")]
pub mod backend;
pub mod caps;
#[cfg(feature = "docker")]
pub mod cgroup;
#[cfg(feature = "docker")]
pub mod config;
#[cfg(feature = "docker")]
pub mod helper;
#[cfg(feature = "docker")]
pub mod sweep;

#[cfg(feature = "docker")]
pub use backend::{probe, DockerBackend};

use crate::SandboxSpec;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Where the daemon's socket is when neither the policy nor the environment
/// says otherwise.
pub const DEFAULT_SOCKET: &str = "/var/run/docker.sock";
/// The environment variable naming the daemon's socket (a path, or
/// `unix://PATH` as `DOCKER_HOST` takes it).
pub const SOCKET_ENV: &str = "AIRLOCK_DOCKER_SOCKET";
/// The environment variable naming the image when the policy names none.
pub const IMAGE_ENV: &str = "AIRLOCK_DOCKER_IMAGE";
/// The image used when neither the policy nor the environment names one.
pub const DEFAULT_IMAGE: &str = "airlock-sandbox:latest";

/// Which daemon serves the Engine API: podman's compatibility service reads
/// some fields differently (see [`config::translate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Daemon {
    Docker,
    Podman,
}

impl Daemon {
    /// The daemon named by the components of its `/version` answer (podman
    /// lists a "Podman Engine"; anything else is taken for dockerd).
    pub fn from_components<'a>(names: impl IntoIterator<Item = &'a str>) -> Daemon {
        if names.into_iter().any(|n| n.starts_with("Podman")) {
            Daemon::Podman
        } else {
            Daemon::Docker
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Daemon::Docker => "dockerd",
            Daemon::Podman => "podman",
        }
    }
}

/// What the caller hands the helper (on its stdin).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub spec: SandboxSpec,
    pub runs_dir: PathBuf,
    /// The daemon's unix socket.
    pub socket: PathBuf,
    /// The image the container runs (present locally; never pulled).
    pub image: String,
    /// Whether the command gets a stdin stream (else it reads EOF).
    pub stdin: bool,
    /// Network allowlist mode, and open mode where landlock scopes abstract
    /// unix sockets: the statically linked in-sandbox relay on the host
    /// ([`crate::relay::relay_binary`], found by the caller, whose
    /// environment names it), bound read-only into the container.
    #[serde(default)]
    pub relay: Option<PathBuf>,
}

/// Runs the Docker helper and never returns if this process was started as
/// one; otherwise returns at once. Binaries that embed the backend call this
/// first.
pub fn maybe_run_helper() {
    #[cfg(feature = "docker")]
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == helper::HELPER_ARG)
    {
        helper::helper_main();
    }
}

/// The socket path from a setting that may be written `unix://PATH`.
pub fn socket_path(setting: &str) -> PathBuf {
    PathBuf::from(setting.strip_prefix("unix://").unwrap_or(setting))
}
