//! The proxy process side: one tokio runtime, one unix socket per execution.
//!
//! Each [`ProxyContext`] owns its own listening socket (mode 0600 inside a 0700
//! directory of its own), its own rules and its own connection log. A connection
//! accepted on a context's socket is judged by that context's rules only, so no
//! execution can borrow another's allowlist: it would need the other socket, which
//! is bound into the other sandbox alone.

use crate::config::ContextConfig;
use crate::log::{ConnectionEntry, ConnectionLog, Decision, NewEntry, Protocol, Reason};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{oneshot, Semaphore};

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("egress proxy runtime could not start: {0}")]
    Runtime(#[source] io::Error),
    #[error(
        "request id `{0}` cannot name a socket directory (use [A-Za-z0-9._-], at most 64 bytes)"
    )]
    BadRequestId(String),
    #[error("egress proxy socket at {path}: {source}")]
    Socket {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// The state every connection of one context shares.
pub struct ContextState {
    pub config: ContextConfig,
    pub log: ConnectionLog,
    slots: Arc<Semaphore>,
    /// Every task of this context (connections, tunnels, upstream drivers), so
    /// that closing the context cuts them all.
    tasks: std::sync::Mutex<Option<tokio::task::JoinSet<()>>>,
}

impl ContextState {
    /// Run `fut` as part of this context; dropped at once if the context is closed.
    pub fn spawn<F>(&self, fut: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let mut guard = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(set) = guard.as_mut() {
            while set.try_join_next().is_some() {}
            set.spawn(fut);
        }
    }

    fn take_tasks(&self) -> Option<tokio::task::JoinSet<()>> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// The host-side proxy: a small multi-threaded tokio runtime on its own threads,
/// usable from synchronous code. Keep one per process.
pub struct EgressProxy {
    runtime: tokio::runtime::Runtime,
}

impl EgressProxy {
    pub fn new() -> Result<EgressProxy, ProxyError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("airlock-netproxy")
            .enable_io()
            .enable_time()
            .build()
            .map_err(ProxyError::Runtime)?;
        Ok(EgressProxy { runtime })
    }

    /// Open the context of one execution: `parent/<request_id>/proxy.sock`.
    /// `owner` is the host uid/gid the sandbox runs as (the socket must be
    /// connectable by it and by nobody else); `None` keeps the caller's.
    pub fn open(
        &self,
        request_id: &str,
        config: ContextConfig,
        parent: &Path,
        owner: Option<(u32, u32)>,
    ) -> Result<ProxyContext, ProxyError> {
        if request_id.is_empty()
            || request_id.len() > 64
            || request_id.starts_with('.')
            || !request_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        {
            return Err(ProxyError::BadRequestId(request_id.to_string()));
        }
        let dir = parent.join(request_id);
        let sock_err = |path: &Path, source: io::Error| ProxyError::Socket {
            path: path.to_path_buf(),
            source,
        };
        if !parent.exists() {
            std::fs::create_dir_all(parent).map_err(|e| sock_err(parent, e))?;
            std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| sock_err(parent, e))?;
        }
        // create_dir (not _all): an existing directory means a reused id, refused.
        std::fs::create_dir(&dir).map_err(|e| sock_err(&dir, e))?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| sock_err(&dir, e))?;
        let socket = dir.join("proxy.sock");
        let listener =
            std::os::unix::net::UnixListener::bind(&socket).map_err(|e| sock_err(&socket, e))?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| sock_err(&socket, e))?;
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).map_err(|e| sock_err(&dir, e))?;
            std::os::unix::fs::chown(&socket, Some(uid), Some(gid))
                .map_err(|e| sock_err(&socket, e))?;
        }
        listener
            .set_nonblocking(true)
            .map_err(|e| sock_err(&socket, e))?;

        let log = ConnectionLog::new(request_id);
        let slots = Arc::new(Semaphore::new(config.max_connections));
        let tasks = std::sync::Mutex::new(Some(tokio::task::JoinSet::new()));
        let state = Arc::new(ContextState {
            config,
            log: log.clone(),
            slots,
            tasks,
        });
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let socket_for_task = socket.clone();
        let task = self.runtime.spawn(async move {
            let listener = match UnixListener::from_std(listener) {
                Ok(l) => l,
                Err(_) => return,
            };
            accept_loop(state, listener, stop_rx).await;
            drop(socket_for_task);
            let _ = done_tx.send(());
        });
        Ok(ProxyContext {
            request_id: request_id.to_string(),
            dir,
            socket,
            log,
            stop: Some(stop_tx),
            done: done_rx,
            task,
        })
    }
}

async fn accept_loop(
    state: Arc<ContextState>,
    listener: UnixListener,
    mut stop: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                match state.slots.clone().try_acquire_owned() {
                    Ok(permit) => {
                        let conn_state = state.clone();
                        state.spawn(async move {
                            let _ = serve_connection(conn_state, stream).await;
                            drop(permit);
                        });
                    }
                    Err(_) => {
                        state.log.record(NewEntry {
                            protocol: Protocol::HttpConnect,
                            host: String::new(),
                            port: 0,
                            resolved: None,
                            decision: Decision::Refused,
                            reason: Reason::ContextLimit,
                            detail: format!("more than {} concurrent connections", state.config.max_connections),
                        });
                    }
                }
            }
        }
    }
    // Aborts every connection and tunnel of this context.
    if let Some(mut tasks) = state.take_tasks() {
        tasks.shutdown().await;
    }
}

/// Take the connection over from the relay (or serve a direct client), tell
/// SOCKS5 (first byte 5) from HTTP (a method name) and serve accordingly.
async fn serve_connection(state: Arc<ContextState>, stream: UnixStream) -> io::Result<()> {
    let received = tokio::time::timeout(Duration::from_secs(30), crate::client::receive(stream));
    let (first, conn) = match received.await {
        Ok(Ok(Some(got))) => got,
        Ok(Err(e)) => return Err(e),
        _ => return Ok(()),
    };
    if first == 5 {
        return crate::socks::serve(state, conn).await;
    }
    crate::http::serve(state, first, conn).await
}

/// One execution's proxy context. Closing it (or dropping it) stops its listener,
/// cuts its tunnels and removes its socket directory.
pub struct ProxyContext {
    request_id: String,
    dir: PathBuf,
    socket: PathBuf,
    log: ConnectionLog,
    stop: Option<oneshot::Sender<()>>,
    done: std::sync::mpsc::Receiver<()>,
    task: tokio::task::JoinHandle<()>,
}

impl ProxyContext {
    pub fn request_id(&self) -> &str {
        &self.request_id
    }

    /// Host path of the socket to bind into the sandbox.
    pub fn socket_path(&self) -> &Path {
        &self.socket
    }

    /// The directory holding the socket (mode 0700).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The decisions so far, with live byte counts.
    pub fn entries(&self) -> Vec<ConnectionEntry> {
        self.log.snapshot()
    }

    /// Stop, wait (briefly) for the tunnels to be cut, and return the final log.
    pub fn close(mut self) -> Vec<ConnectionEntry> {
        self.shutdown();
        self.log.snapshot()
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
            if self.done.recv_timeout(Duration::from_secs(2)).is_err() {
                self.task.abort();
            }
            let _ = std::fs::remove_file(&self.socket);
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

impl Drop for ProxyContext {
    fn drop(&mut self) {
        self.shutdown();
    }
}
