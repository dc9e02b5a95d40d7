//! Where the server listens: a unix socket (0600, the default) and optionally a
//! loopback TCP port. Non-loopback addresses are refused: airlock does not
//! implement TLS, and bearer tokens must not cross a network in clear text.

use anyhow::{bail, Context};
use std::net::SocketAddr;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The default socket: `<state dir>/airlock.sock`.
pub fn default_socket_path() -> anyhow::Result<PathBuf> {
    let dir = airlock_core::state::resolve_state_dir()
        .context("cannot find the state directory for the default socket (set AIRLOCK_STATE_DIR or pass --socket)")?;
    Ok(dir.join("airlock.sock"))
}

/// Bind a unix socket readable and writable by the owner only. The mode is set by
/// a umask around `bind`, so the socket never exists with wider permissions; this
/// runs before any other thread of the server exists.
pub fn bind_unix(path: &Path) -> anyhow::Result<std::os::unix::net::UnixListener> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.exists() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
            std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o700))
                .with_context(|| format!("cannot restrict {}", parent.display()))?;
        }
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                bail!("another server is already listening on {}", path.display());
            }
            // A socket nobody answers on is left over from a crashed server.
            std::fs::remove_file(path)
                .with_context(|| format!("cannot remove stale socket {}", path.display()))?;
        }
        Ok(_) => bail!(
            "{} exists and is not a socket; refusing to replace it",
            path.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot inspect {}", path.display())),
    }
    let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o177));
    let bound = std::os::unix::net::UnixListener::bind(path);
    rustix::process::umask(old);
    let listener = bound.with_context(|| format!("cannot listen on {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot set 0600 on {}", path.display()))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// Bind a TCP listener after checking that the address is loopback.
pub fn bind_tcp(addr: SocketAddr, allow_remote: bool) -> anyhow::Result<std::net::TcpListener> {
    check_tcp_address(addr, allow_remote)?;
    let listener =
        std::net::TcpListener::bind(addr).with_context(|| format!("cannot listen on {addr}"))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

pub fn check_tcp_address(addr: SocketAddr, allow_remote: bool) -> anyhow::Result<()> {
    if addr.ip().is_loopback() {
        return Ok(());
    }
    if allow_remote {
        bail!(
            "refusing to listen on non-loopback address {addr}: --allow-remote needs TLS, and this \
             build of airlock does not implement TLS. Listen on 127.0.0.1 (or the unix socket) and \
             put a TLS-terminating proxy in front if remote agents must connect"
        );
    }
    bail!(
        "refusing to listen on non-loopback address {addr}: bearer tokens would cross the network \
         in clear text. Use 127.0.0.1:PORT or the unix socket (remote listening needs \
         --allow-remote and TLS, which this build does not implement)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_tcp_is_accepted() {
        assert!(check_tcp_address("127.0.0.1:0".parse().unwrap(), false).is_ok());
        assert!(check_tcp_address("[::1]:0".parse().unwrap(), false).is_ok());
        let err = check_tcp_address("0.0.0.0:8080".parse().unwrap(), false).unwrap_err();
        assert!(err.to_string().contains("non-loopback"), "{err}");
        let err = check_tcp_address("0.0.0.0:8080".parse().unwrap(), true).unwrap_err();
        assert!(err.to_string().contains("does not implement TLS"), "{err}");
    }

    #[test]
    fn unix_socket_is_owner_only_and_stale_sockets_are_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s/airlock.sock");
        let listener = bind_unix(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // While it is live, a second server must not steal it.
        assert!(bind_unix(&path).is_err());
        drop(listener);
        // Now it is stale and is replaced.
        let _again = bind_unix(&path).unwrap();
        // A regular file is never replaced.
        let file = dir.path().join("plain");
        std::fs::write(&file, b"keep").unwrap();
        assert!(bind_unix(&file).is_err());
        assert_eq!(std::fs::read(&file).unwrap(), b"keep");
    }
}
