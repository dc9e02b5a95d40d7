//! The caller's side of the Docker-API backend: where the daemon and the
//! image are, and the helper started through the OCI backend's driver (the
//! same output capture, cap and report).

use super::helper::HELPER_ARG;
use super::{Request, DEFAULT_IMAGE, DEFAULT_SOCKET, IMAGE_ENV, SOCKET_ENV};
use crate::oci::backend::{drive, outcome, Helper};
use crate::{Backend, NetworkSpec, Outcome, OutputSink, SandboxError, SandboxSpec};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct DockerBackend {
    /// The daemon's unix socket.
    pub socket: PathBuf,
    /// The image every container runs (present locally; never pulled).
    pub image: String,
    /// The executable that runs the helper when given [`HELPER_ARG`] first.
    pub helper_exe: PathBuf,
    /// Where per-run directories live.
    pub runs_dir: PathBuf,
    /// Stream this process's own stdin to the command when a spec brings no
    /// bytes of its own.
    pub stdin_from_caller: bool,
}

impl DockerBackend {
    /// The backend with the socket and image from the environment
    /// ([`SOCKET_ENV`], [`IMAGE_ENV`]) or their defaults.
    pub fn current_exe(state_dir: &Path) -> Result<DockerBackend, SandboxError> {
        let exe = std::fs::read_link("/proc/self/exe").map_err(|source| SandboxError::Io {
            context: "resolving /proc/self/exe".into(),
            source,
        })?;
        let (socket, image) = Self::settings();
        Ok(DockerBackend {
            socket,
            image,
            helper_exe: exe,
            runs_dir: state_dir.join("runs"),
            stdin_from_caller: false,
        })
    }

    /// The socket and image this process would use.
    pub fn settings() -> (PathBuf, String) {
        let socket = std::env::var(SOCKET_ENV)
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| DEFAULT_SOCKET.to_string());
        let image = std::env::var(IMAGE_ENV)
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| DEFAULT_IMAGE.to_string());
        (super::socket_path(&socket), image)
    }

    /// Whether the backend can run here: root (the workspace is staged with
    /// idmapped mounts) and a socket to talk to. The daemon itself is asked
    /// at run time.
    pub fn probe() -> Result<String, String> {
        let (socket, image) = Self::settings();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(
                "the docker backend stages the workspace with idmapped mounts as root; \
                 Hint: run airlock as root, or use the native backend (which runs unprivileged)"
                    .into(),
            );
        }
        use std::os::unix::fs::FileTypeExt;
        match std::fs::metadata(&socket) {
            Ok(m) if m.file_type().is_socket() => Ok(format!(
                "Docker Engine API at {} (image {image})",
                socket.display()
            )),
            _ => Err(format!(
                "no Docker Engine API socket at {}; Hint: start dockerd or `podman system \
                 service`, or name the socket with {SOCKET_ENV}",
                socket.display()
            )),
        }
    }
}

impl Backend for DockerBackend {
    fn name(&self) -> &'static str {
        "docker"
    }

    fn run(&self, spec: &SandboxSpec, sink: &mut dyn OutputSink) -> Result<Outcome, SandboxError> {
        if spec.argv.is_empty() {
            return Err(SandboxError::Spec("argv is empty".into()));
        }
        // Before anything starts: allowlist mode needs the in-sandbox relay,
        // and so does open mode to scope the host's abstract unix sockets
        // (where the kernel can: landlock ABI 6).
        let scoping = crate::native::landlock::abi_version().is_some_and(|abi| abi >= 6);
        let relay = match spec.network {
            NetworkSpec::Proxy { .. } => Some(relay_for_container()?),
            NetworkSpec::Open if scoping => Some(relay_for_container().map_err(|e| match e {
                SandboxError::Layer { layer, detail } => SandboxError::Layer {
                    layer,
                    detail: format!(
                        "network open on the docker backend runs the command through the \
                         in-sandbox relay, which scopes the host's abstract unix sockets: {detail}"
                    ),
                },
                other => other,
            })?),
            NetworkSpec::None | NetworkSpec::Open => None,
        };
        let request = Request {
            spec: spec.clone(),
            runs_dir: self.runs_dir.clone(),
            socket: self.socket.clone(),
            image: self.image.clone(),
            stdin: spec.stdin.is_some() || self.stdin_from_caller,
            relay,
        };
        let bytes = serde_json::to_vec(&request).map_err(|e| SandboxError::Spec(e.to_string()))?;
        let helper = Helper {
            exe: &self.helper_exe,
            arg: HELPER_ARG,
            what: "Docker",
            backend: crate::Layer::Docker,
            stdin_from_caller: self.stdin_from_caller,
        };
        let driven = drive(&helper, &bytes, spec, sink)?;
        if std::env::var_os("AIRLOCK_PROFILE").is_some() {
            for n in &driven.report.notes {
                eprintln!("airlock profile: note: {n}");
            }
            eprintln!(
                "airlock profile: {:>8.2} ms  caller total (docker)",
                driven.started.elapsed().as_secs_f64() * 1000.0
            );
        }
        Ok(outcome(driven))
    }
}

/// The in-sandbox relay binary of allowlist mode ([`crate::relay::relay_binary`]:
/// static, executable), which the container's user, host uid 2000000000 and not
/// its owner, must also be allowed to execute: the bind carries the host
/// file's owner and mode into the container.
pub fn relay_for_container() -> Result<PathBuf, SandboxError> {
    use std::os::unix::fs::PermissionsExt;
    let path = crate::relay::relay_binary()?;
    let mode = std::fs::metadata(&path)
        .map(|m| m.permissions().mode())
        .unwrap_or(0);
    if mode & 0o001 == 0 {
        return Err(SandboxError::Layer {
            layer: crate::Layer::Network,
            detail: format!(
                "the in-sandbox relay {} (mode {:o}) may not be executed by others, and the \
                 container runs as uid {}; Hint: `chmod 0755 {}`, or build it with \
                 `scripts/build-relay`",
                path.display(),
                mode & 0o7777,
                crate::native::namespaces::SANDBOX_HOST_UID,
                path.display()
            ),
        });
    }
    Ok(path)
}

/// The factory's probe: [`DockerBackend::probe`] as a typed [`crate::probe::Probe`].
pub fn probe() -> crate::probe::Probe {
    use crate::probe::{Probe, RuntimeFound};
    let kind = crate::BackendKind::Docker;
    match DockerBackend::probe() {
        Ok(found) => {
            let (socket, _) = DockerBackend::settings();
            let runtime = RuntimeFound {
                name: "Docker Engine API".into(),
                path: Some(socket),
                version: found,
                platform: None,
            };
            Probe::available(kind, runtime, super::caps::ENFORCES.to_vec())
        }
        Err(why) => Probe::unavailable(kind, why),
    }
}
