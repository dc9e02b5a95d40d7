//! A small world built on loopback for the proxy tests and the benchmark: a test
//! CA, HTTPS and HTTP servers on 127.0.0.x, the egress proxy with one context,
//! and the real sandbox relay exposing that context's unix socket on a TCP port
//! (as PID 1 does inside a sandbox).
//!
//! Nothing here talks to any address outside 127.0.0.0/8.

#![allow(dead_code)]

use airlock_netproxy::{ContextConfig, EgressProxy, ProxyContext};
use airlock_sandbox::relay::Relay;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

/// The names the test CA's server certificate covers.
pub const CERT_NAMES: &[&str] = &[
    "pypi.test",
    "other.test",
    "good.cdn.test",
    "bad.cdn.test",
    "plain.test",
];

pub struct Tls {
    pub ca_pem_path: PathBuf,
    /// The server certificate chain and its key as PEM files, for real servers
    /// (nginx in the benchmarks) that serve TLS with the test CA.
    pub server_chain_pem_path: PathBuf,
    pub server_key_pem_path: PathBuf,
    pub ca_der: rustls::pki_types::CertificateDer<'static>,
    pub server_config: Arc<rustls::ServerConfig>,
}

pub fn make_tls(dir: &Path) -> Tls {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "airlock netproxy test CA");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);

    let mut leaf_params =
        CertificateParams::new(CERT_NAMES.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .unwrap();
    leaf_params
        .distinguished_name
        .push(DnType::CommonName, "pypi.test");
    leaf_params.use_authority_key_identifier_extension = true;
    leaf_params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    leaf_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = leaf_params.signed_by(&leaf_key, &issuer).unwrap();

    let ca_pem_path = dir.join("ca.pem");
    std::fs::write(&ca_pem_path, ca_cert.pem()).unwrap();
    let server_chain_pem_path = dir.join("server-chain.pem");
    std::fs::write(&server_chain_pem_path, leaf.pem() + &ca_cert.pem()).unwrap();
    let server_key_pem_path = dir.join("server-key.pem");
    std::fs::write(&server_key_pem_path, leaf_key.serialize_pem()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server_config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone(), ca_cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
        )
        .unwrap();
    Tls {
        ca_pem_path,
        server_chain_pem_path,
        server_key_pem_path,
        ca_der: ca_cert.der().clone(),
        server_config: Arc::new(server_config),
    }
}

/// What a test server saw.
#[derive(Default)]
pub struct Seen {
    pub tcp_accepted: AtomicUsize,
    pub tls_handshakes: AtomicUsize,
    pub requests: Mutex<Vec<String>>,
    pub server_names: Mutex<Vec<String>>,
}

/// Path → body. A body of `Generated(n)` is n bytes produced on the fly.
#[derive(Clone)]
pub enum Body {
    Bytes(&'static str, Vec<u8>),
    Generated(u64),
}

pub type Routes = Arc<HashMap<String, Body>>;

pub struct Server {
    pub addr: SocketAddr,
    pub seen: Arc<Seen>,
}

pub fn spawn_server(
    rt: &tokio::runtime::Runtime,
    ip: &str,
    tls: Option<Arc<rustls::ServerConfig>>,
    routes: Routes,
) -> Server {
    let listener = rt
        .block_on(TcpListener::bind((ip.parse::<IpAddr>().unwrap(), 0)))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let seen2 = seen.clone();
    rt.spawn(async move {
        let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let _ = tcp.set_nodelay(true);
            seen2.tcp_accepted.fetch_add(1, Ordering::SeqCst);
            let (seen, routes, acceptor) = (seen2.clone(), routes.clone(), acceptor.clone());
            tokio::spawn(async move {
                match acceptor {
                    Some(acc) => {
                        let Ok(stream) = acc.accept(tcp).await else {
                            return;
                        };
                        if let Some(name) = stream.get_ref().1.server_name() {
                            seen.server_names.lock().unwrap().push(name.to_string());
                        }
                        seen.tls_handshakes.fetch_add(1, Ordering::SeqCst);
                        let _ = serve_http(stream, &routes, &seen).await;
                    }
                    None => {
                        let _ = serve_http(tcp, &routes, &seen).await;
                    }
                }
            });
        }
    });
    Server { addr, seen }
}

/// HTTP/1.1, one request per connection, `Connection: close`.
async fn serve_http<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    routes: &Routes,
    seen: &Seen,
) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut byte).await?;
        if n == 0 || head.len() > 64 * 1024 {
            return Ok(());
        }
        head.extend_from_slice(&byte[..n]);
    }
    let text = String::from_utf8_lossy(&head).to_string();
    let path = text.split_whitespace().nth(1).unwrap_or("/").to_string();
    seen.requests.lock().unwrap().push(text.clone());
    let path_only = path.split('?').next().unwrap_or("/").to_string();
    match routes.get(&path_only) {
        Some(Body::Bytes(ctype, body)) => {
            let hdr = format!("HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            s.write_all(hdr.as_bytes()).await?;
            s.write_all(body).await?;
        }
        Some(Body::Generated(n)) => {
            let hdr = format!("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {n}\r\nConnection: close\r\n\r\n");
            s.write_all(hdr.as_bytes()).await?;
            let chunk = vec![0x5au8; 256 * 1024];
            let mut left = *n;
            while left > 0 {
                let k = left.min(chunk.len() as u64) as usize;
                s.write_all(&chunk[..k]).await?;
                left -= k as u64;
            }
        }
        None => {
            s.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )
            .await?;
        }
    }
    s.flush().await?;
    s.shutdown().await
}

/// The proxy, one context, and the relay in front of it.
pub struct World {
    pub dir: tempfile::TempDir,
    pub rt: tokio::runtime::Runtime,
    pub tls: Tls,
    pub https: Server,
    pub http: Server,
    /// A listener on an address that names resolve to but that the proxy must refuse.
    pub internal: Server,
    pub proxy: EgressProxy,
    pub ctx: Option<ProxyContext>,
    /// `127.0.0.1:port` of the relay (what HTTP_PROXY points at).
    pub relay: SocketAddr,
}

pub fn routes_with(extra: Vec<(&str, Body)>) -> Routes {
    let mut m = HashMap::new();
    m.insert(
        "/hello".to_string(),
        Body::Bytes("text/plain", b"hello through airlock\n".to_vec()),
    );
    for (k, v) in extra {
        m.insert(k.to_string(), v);
    }
    Arc::new(m)
}

impl World {
    /// `allow`/`deny` are policy patterns; `{https}` and `{http}` in them become the
    /// servers' ports.
    pub fn new(allow: &[&str], deny: &[&str], routes: Routes) -> World {
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let tls = make_tls(dir.path());
        let https = spawn_server(
            &rt,
            "127.0.0.2",
            Some(tls.server_config.clone()),
            routes.clone(),
        );
        let http = spawn_server(&rt, "127.0.0.3", None, routes.clone());
        let internal = spawn_server(&rt, "127.0.0.9", None, routes);
        let proxy = EgressProxy::new().unwrap();
        let mut world = World {
            dir,
            rt,
            tls,
            https,
            http,
            internal,
            proxy,
            ctx: None,
            relay: "127.0.0.1:1".parse().unwrap(),
        };
        let ctx = world.open_context("r-test-1", allow, deny);
        world.relay = relay_to(ctx.socket_path());
        world.ctx = Some(ctx);
        world
    }

    pub fn config(&self, allow: &[&str], deny: &[&str]) -> ContextConfig {
        let fill = |p: &&str| {
            p.replace("{https}", &self.https.addr.port().to_string())
                .replace("{http}", &self.http.addr.port().to_string())
        };
        let allow: Vec<String> = allow.iter().map(fill).collect();
        let deny: Vec<String> = deny.iter().map(fill).collect();
        let mut cfg = ContextConfig::new(&allow, &deny).unwrap();
        let https_ip = self.https.addr.ip();
        for name in [
            "pypi.test",
            "other.test",
            "good.cdn.test",
            "bad.cdn.test",
            "evil.test",
        ] {
            cfg.map_host(name, &[https_ip]);
        }
        cfg.map_host("plain.test", &[self.http.addr.ip()]);
        cfg.map_host("intranet.test", &[self.internal.addr.ip()]);
        cfg.hosts_only = true;
        // TEST ONLY: the two servers above live on loopback.
        cfg.allow_private_for_tests = vec![https_ip, self.http.addr.ip()];
        cfg
    }

    pub fn open_context(&self, request_id: &str, allow: &[&str], deny: &[&str]) -> ProxyContext {
        let cfg = self.config(allow, deny);
        self.proxy
            .open(request_id, cfg, &self.dir.path().join("proxy"), None)
            .unwrap()
    }

    pub fn ctx(&self) -> &ProxyContext {
        self.ctx.as_ref().unwrap()
    }

    pub fn proxy_url(&self) -> String {
        format!("http://{}", self.relay)
    }

    pub fn https_url(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.https.addr.port())
    }

    pub fn http_url(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.http.addr.port())
    }
}

/// A native sandbox in proxy mode running `script` with `/bin/sh` in the
/// workspace `ws`, reaching the network only through the context socket
/// `socket`, with the built-in default policy's limits (one CPU, 512 MiB, 128
/// processes) and time enough for large downloads. `env` joins PATH and HOME.
pub fn proxy_sandbox_spec(
    request_id: &str,
    ws: &Path,
    socket: &Path,
    script: &str,
    env: &[(&str, String)],
) -> airlock_sandbox::SandboxSpec {
    use airlock_sandbox::{Limits, NetworkSpec, WorkspaceMode, WorkspaceSpec};
    let mut all_env = vec![
        (
            "PATH".to_string(),
            "/usr/local/bin:/usr/bin:/bin".to_string(),
        ),
        ("HOME".to_string(), "/tmp".to_string()),
    ];
    all_env.extend(env.iter().map(|(k, v)| (k.to_string(), v.clone())));
    airlock_sandbox::SandboxSpec {
        request_id: request_id.into(),
        argv: vec!["/bin/sh".into(), "-c".into(), script.into()],
        cwd: ws.to_path_buf(),
        env: all_env,
        workspace: WorkspaceSpec {
            root: ws.to_path_buf(),
            mode: WorkspaceMode::Overlay,
            protect: vec![],
            apply: false,
            changes: Default::default(),
            owned: vec![],
            keep: None,
            list: None,
            home: None,
        },
        network: NetworkSpec::Proxy {
            socket: socket.to_path_buf(),
        },
        limits: Limits {
            timeout_ms: 120_000,
            cpu_time_ms: 120_000,
            memory_bytes: 512 << 20,
            pids: 128,
            cpus: 1.0,
            output_bytes: 1 << 20,
            tmp_bytes: 64 << 20,
            file_size_bytes: 64 << 20,
            open_files: 256,
        },
        read_paths: vec![],
        write_paths: vec![],
        hide_paths: vec![],
        stdin: None,
        limit_enforcement: Default::default(),
        git_config: String::new(),
    }
}

/// The real in-sandbox relay, here on the host: TCP 127.0.0.1:ephemeral → unix socket.
pub fn relay_to(socket: &Path) -> SocketAddr {
    let relay = Relay::bind(&["127.0.0.1:0".parse().unwrap()], socket).unwrap();
    let addr = relay.local_addrs().unwrap()[0];
    relay.start().unwrap();
    addr
}

/// Send a raw proxy request, return the response head (status line + headers).
pub fn raw_proxy_request(relay: SocketAddr, request: &str) -> String {
    let mut s = TcpStream::connect(relay).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => buf.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&buf).to_string()
}

/// A header's value in a response head, case-insensitively.
pub fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}
