//! Kept and parked change sets through the engine: a stand-in backend leaves a
//! prepared upper layer and hands it to the real return path
//! (`workspace::finish`), so keeping, parking, approving and applying later run
//! as they do after a sandboxed command.

use airlock_core::apply::ApplyStatus;
use airlock_core::approvals::RefusalCode;
use airlock_core::{Caller, Engine, EngineConfig, RunOptions};
use airlock_policy::{Command, Policy, Request};
use airlock_sandbox::backend::Discard;
use airlock_sandbox::{Backend, Outcome, OutputSink, SandboxError, SandboxSpec};
use std::path::{Path, PathBuf};

/// Leaves `.envrc` (needs a person) and `ok.txt` in an upper layer, then
/// judges it as a sandboxed run's would be.
struct Leaves {
    upper_root: PathBuf,
    envrc: &'static str,
}

impl Backend for Leaves {
    fn name(&self) -> &'static str {
        "kept-test-backend"
    }
    fn run(&self, spec: &SandboxSpec, _: &mut dyn OutputSink) -> Result<Outcome, SandboxError> {
        let upper = self.upper_root.join(&spec.request_id);
        std::fs::create_dir_all(&upper).unwrap();
        std::fs::write(upper.join(".envrc"), self.envrc).unwrap();
        std::fs::write(upper.join("ok.txt"), "ok\n").unwrap();
        let f = airlock_sandbox::workspace::finish(
            &upper,
            &spec.workspace,
            &spec.limits,
            spec.workspace.apply,
        );
        Ok(Outcome {
            exit_code: Some(0),
            applied: f.applied,
            changes: f.changes,
            violations: f.violations,
            change_summary: Some(f.summary),
            ..Outcome::default()
        })
    }
}

const POLICY: &str = r#"
[workspace]
root = "."
mode = "overlay"
[commands]
allow = ["echo"]
approval = ["make deploy"]
"#;

struct Fx {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    state: PathBuf,
    policy: Policy,
}

fn fx() -> Fx {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    let policy = airlock_policy::load::from_str(POLICY, "test-policy.toml", &ws)
        .unwrap()
        .policy;
    Fx {
        state: tmp.path().join("state"),
        _tmp: tmp,
        ws,
        policy,
    }
}

fn engine(f: &Fx, envrc: &'static str) -> Engine {
    let backend = Leaves {
        upper_root: f.state.parent().unwrap().join("uppers"),
        envrc,
    };
    Engine::open(EngineConfig::new(f.state.clone(), Box::new(backend))).unwrap()
}

fn req(ws: &Path, command: &str) -> Request {
    Request {
        command: Command::Shell {
            command: command.into(),
        },
        cwd: ws.to_path_buf(),
        loosening: Default::default(),
    }
}

fn run_apply(e: &Engine, f: &Fx, who: &Caller) -> airlock_core::RunResponse {
    let options = RunOptions {
        apply: Some(true),
        ..Default::default()
    };
    e.run(
        who,
        &f.policy,
        &req(&f.ws, "echo hi"),
        options,
        &mut Discard,
    )
    .unwrap()
}

#[test]
fn a_held_change_set_parks_and_applies_exactly_once_as_approved() {
    let f = fx();
    let agent = Caller::token("agent-1");
    let e = engine(&f, "echo reviewed\n");
    let r = run_apply(&e, &f, &agent);
    let o = r.outcome.as_ref().unwrap();
    assert!(!o.applied);
    assert!(o.change_summary.as_ref().unwrap().kept);
    let parked = r.apply.as_ref().expect("the held set parks");
    assert_eq!(
        parked.status,
        ApplyStatus::ApprovalPending,
        "{}",
        parked.message
    );
    let id = parked.approval.as_ref().unwrap().id.clone();
    assert!(!f.ws.join(".envrc").exists());

    // The approval shows the exact changes and binds the set's hash.
    let a = e.ledger().approval(&id).unwrap();
    let pin = a.change_set.as_ref().unwrap();
    assert_eq!(pin.run_id, r.request_id);
    assert_eq!(pin.sha256, parked.set_sha256);
    assert!(
        pin.changes
            .iter()
            .any(|l| l.contains(".envrc") && l.contains("NEEDS APPROVAL")),
        "{:?}",
        pin.changes
    );

    // Before a person answers: pending, nothing written.
    let early = e
        .apply_kept(
            &agent,
            &f.policy,
            &r.request_id,
            RunOptions {
                approval_id: Some(id.clone()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(early.status, ApplyStatus::ApprovalRefused);
    assert_eq!(early.refusal.unwrap().code, RefusalCode::Pending);

    e.ledger().approve(&id, &Caller::cli(), None).unwrap();
    // Never a command's approval.
    let cmd = e
        .run(
            &agent,
            &f.policy,
            &req(&f.ws, "make deploy"),
            RunOptions {
                approval_id: Some(id.clone()),
                ..Default::default()
            },
            &mut Discard,
        )
        .unwrap();
    assert_eq!(cmd.refusal.unwrap().code, RefusalCode::WrongKind);
    // Another tenant sees no such set.
    let other = e
        .apply_kept(
            &Caller::token("agent-2"),
            &f.policy,
            &r.request_id,
            RunOptions {
                approval_id: Some(id.clone()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(other.status, ApplyStatus::Refused);
    assert!(!f.ws.join(".envrc").exists());

    let done = e
        .apply_kept(
            &agent,
            &f.policy,
            &r.request_id,
            RunOptions {
                approval_id: Some(id.clone()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(
        done.status,
        ApplyStatus::Applied,
        "{} {:?}",
        done.message,
        done.violations
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join(".envrc")).unwrap(),
        "echo reviewed\n"
    );
    assert!(f.ws.join("ok.txt").exists());
    // Applied sets are gone: a second apply is refused, naming why.
    let again = e
        .apply_kept(
            &agent,
            &f.policy,
            &r.request_id,
            RunOptions {
                approval_id: Some(id),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(again.status, ApplyStatus::Refused);
    assert!(
        again.message.contains("no kept change set"),
        "{}",
        again.message
    );
    // Each apply has its audit record.
    let records: String = std::fs::read_dir(f.state.join("audit"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(
        records.matches("\"kind\":\"apply\"").count() >= 4,
        "{records}"
    );
}

#[test]
fn an_approval_of_one_run_never_applies_another() {
    let f = fx();
    let agent = Caller::token("agent-1");
    let a = run_apply(&engine(&f, "echo reviewed\n"), &f, &agent);
    let b = run_apply(&engine(&f, "echo SWAPPED\n"), &f, &agent);
    let e = engine(&f, "unused");
    let id = a.apply.unwrap().approval.unwrap().id;
    e.ledger().approve(&id, &Caller::cli(), None).unwrap();
    let wrong = e
        .apply_kept(
            &agent,
            &f.policy,
            &b.request_id,
            RunOptions {
                approval_id: Some(id.clone()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(wrong.refusal.unwrap().code, RefusalCode::WrongKind);
    assert!(!f.ws.join(".envrc").exists());
    // Bad run ids are refused before they name a path.
    let bad = e.kept_changes(&agent, &f.policy, "../../etc").unwrap();
    assert_eq!(bad.status, ApplyStatus::Refused);
    let shown = e.kept_changes(&agent, &f.policy, &b.request_id).unwrap();
    assert_eq!(shown.status, ApplyStatus::Report);
    assert_eq!(shown.change_summary.unwrap().held, 1);
}

/// An apply that writes nothing because every change is denied says so: not
/// applied (exit 1 at the CLI), "nothing applied", the workspace untouched.
#[test]
fn an_apply_whose_every_change_is_denied_is_not_applied() {
    let f = fx();
    let agent = Caller::token("agent-1");
    let e = engine(&f, "echo x\n");
    let r = run_apply(&e, &f, &agent);
    assert!(
        r.outcome
            .as_ref()
            .unwrap()
            .change_summary
            .as_ref()
            .unwrap()
            .kept
    );
    let strict = airlock_policy::load::from_str(
        &format!("{POLICY}\n[changes]\ndeny = [\"**\"]\n"),
        "strict.toml",
        &f.ws,
    )
    .unwrap()
    .policy;
    let a = e
        .apply_kept(&agent, &strict, &r.request_id, RunOptions::default())
        .unwrap();
    assert_eq!(a.status, ApplyStatus::NotApplied, "{}", a.message);
    assert!(a.message.starts_with("nothing applied"), "{}", a.message);
    assert!(!f.ws.join("ok.txt").exists() && !f.ws.join(".envrc").exists());
}

/// A kept set is listed for its own tenant only, and discarding it removes
/// it without applying anything, with an audit record; a second discard, or
/// an apply after it, is refused.
#[test]
fn a_kept_set_is_listed_and_discarded_without_being_applied() {
    let f = fx();
    let e = engine(&f, "export X=1\n");
    let me = Caller::cli();
    let r = run_apply(&e, &f, &me);
    let run_id = r.request_id.clone();
    let listed = e.kept_list(&me);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].run_id, run_id);
    let other = Caller::token("agent-2");
    assert!(e.kept_list(&other).is_empty());
    assert_eq!(
        e.discard_kept(&other, &f.policy, &run_id).unwrap().status,
        ApplyStatus::Refused
    );
    let d = e.discard_kept(&me, &f.policy, &run_id).unwrap();
    assert_eq!(d.status, ApplyStatus::Discarded, "{}", d.message);
    assert!(!d.applied);
    assert_eq!(d.audit_ids.len(), 1);
    assert!(!f.ws.join("ok.txt").exists() && !f.ws.join(".envrc").exists());
    assert!(e.kept_list(&me).is_empty());
    assert_eq!(
        e.discard_kept(&me, &f.policy, &run_id).unwrap().status,
        ApplyStatus::Refused
    );
    let a = e
        .apply_kept(&me, &f.policy, &run_id, RunOptions::default())
        .unwrap();
    assert_eq!(a.status, ApplyStatus::Refused);
}
