//! MCP over streamable HTTP at `/mcp` of the real `airlock serve`: sessions
//! belong to the token that opened them and are capped per token and in all.

mod serve_support;

use http_body_util::Full;
use hyper::body::Bytes;
use serve_support::*;
use std::path::Path;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const TOOLS_LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

/// One request to `/mcp` with the headers a streamable HTTP client sends.
async fn mcp(
    socket: &Path,
    method: &str,
    tokens: &[&str],
    session: Option<&str>,
    body: Option<&str>,
) -> Reply {
    let mut builder = hyper::Request::builder()
        .method(method)
        .uri("/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream");
    for t in tokens {
        builder = builder.header("authorization", format!("Bearer {t}"));
    }
    if let Some(id) = session {
        builder = builder
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-06-18");
    }
    if body.is_some() {
        builder = builder.header("content-type", "application/json");
    }
    let req = builder
        .body(Full::new(Bytes::from(body.unwrap_or("").to_string())))
        .unwrap();
    request_unix(socket, req).await
}

fn text(r: &Reply) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

/// Open a session for `token`: its id, or the refusal.
async fn open(socket: &Path, token: &str) -> Result<String, Reply> {
    let r = mcp(socket, "POST", &[token], None, Some(INITIALIZE)).await;
    if r.status != 200 {
        return Err(r);
    }
    let id = r
        .headers
        .get("mcp-session-id")
        .unwrap_or_else(|| panic!("no session id: {}", text(&r)))
        .to_str()
        .unwrap()
        .to_string();
    let ack = mcp(socket, "POST", &[token], Some(&id), Some(INITIALIZED)).await;
    assert_eq!(ack.status, 202, "{}", text(&ack));
    Ok(id)
}

#[test]
fn mcp_sessions_belong_to_their_token_and_are_capped() {
    let mut server = Server::start(&[
        "--tokens",
        "tokens.toml",
        "--mcp-max-sessions-per-token",
        "3",
        "--mcp-max-sessions",
        "5",
    ]);
    rt().block_on(async {
        let sock = server.socket.clone();
        let sock = sock.as_path();
        let mut a = Vec::new();
        for _ in 0..3 {
            a.push(open(sock, TOKEN_A).await.unwrap());
        }
        // Past the per-token cap: 429, naming the cap and what frees a slot.
        let over = open(sock, TOKEN_A).await.unwrap_err();
        assert_eq!(over.status, 429, "{}", text(&over));
        let message = over.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            message.contains("--mcp-max-sessions-per-token") && message.contains("DELETE"),
            "{message}"
        );

        // Another token holding agent-a's session id: the session does not
        // exist for it, whatever it tries.
        let listed = mcp(sock, "POST", &[TOKEN_A], Some(&a[0]), Some(TOOLS_LIST)).await;
        assert_eq!(listed.status, 200, "{}", text(&listed));
        assert!(text(&listed).contains("run_shell"), "{}", text(&listed));
        let unknown = mcp(
            sock,
            "POST",
            &[TOKEN_B],
            Some("no-such-session"),
            Some(TOOLS_LIST),
        )
        .await;
        assert_eq!(unknown.status, 404);
        for (method, body) in [("POST", Some(TOOLS_LIST)), ("GET", None), ("DELETE", None)] {
            let theirs = mcp(sock, method, &[TOKEN_B], Some(&a[0]), body).await;
            assert_eq!(theirs.status, 404, "{method}: {}", text(&theirs));
            assert_eq!(theirs.body, unknown.body, "{method}");
        }
        let still = mcp(sock, "POST", &[TOKEN_A], Some(&a[0]), Some(TOOLS_LIST)).await;
        assert_eq!(still.status, 200, "{}", text(&still));

        // Two Authorization headers: refused, not the first one taken.
        let two = mcp(
            sock,
            "POST",
            &[TOKEN_A, TOKEN_B],
            Some(&a[0]),
            Some(TOOLS_LIST),
        )
        .await;
        assert_eq!(two.status, 400, "{}", text(&two));

        // DELETE frees a slot.
        let ended = mcp(sock, "DELETE", &[TOKEN_A], Some(&a[0]), None).await;
        assert_eq!(ended.status, 200, "{}", text(&ended));
        let gone = mcp(sock, "POST", &[TOKEN_A], Some(&a[0]), Some(TOOLS_LIST)).await;
        assert_eq!(gone.status, 404);
        a[0] = open(sock, TOKEN_A).await.unwrap();

        // The server-wide cap: 3 of agent-a's and 2 of agent-b's fill it.
        open(sock, TOKEN_B).await.unwrap();
        open(sock, TOKEN_B).await.unwrap();
        let full = open(sock, TOKEN_C).await.unwrap_err();
        assert_eq!(full.status, 503, "{}", text(&full));
        assert!(
            text(&full).contains("--mcp-max-sessions"),
            "{}",
            text(&full)
        );
    });
    server.stop();
}

/// A session with no request for `--mcp-session-idle` ends, and its slot is
/// free again: a client that vanished without DELETE does not hold it.
#[test]
fn an_idle_mcp_session_ends_and_frees_its_slot() {
    let mut server = Server::start(&[
        "--tokens",
        "tokens.toml",
        "--mcp-max-sessions-per-token",
        "1",
        "--mcp-session-idle",
        "1",
    ]);
    rt().block_on(async {
        let sock = server.socket.clone();
        let sock = sock.as_path();
        let first = open(sock, TOKEN_A).await.unwrap();
        let over = open(sock, TOKEN_A).await.unwrap_err();
        assert_eq!(over.status, 429, "{}", text(&over));
        // Polled, not timed: the slot frees some time after a second idle.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let second = loop {
            match open(sock, TOKEN_A).await {
                Ok(id) => break id,
                Err(r) => {
                    assert_eq!(r.status, 429, "{}", text(&r));
                    assert!(
                        std::time::Instant::now() < deadline,
                        "the idle session never freed its slot"
                    );
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
            }
        };
        assert_ne!(first, second);
        let gone = mcp(sock, "POST", &[TOKEN_A], Some(&first), Some(TOOLS_LIST)).await;
        assert_eq!(gone.status, 404, "{}", text(&gone));
    });
    server.stop();
}
