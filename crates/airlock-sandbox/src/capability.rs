//! The capability report: for one backend and one spec, every boundary the
//! policy sets is either enforced (and how), or missing (and why). A run whose
//! report has a missing boundary is refused, naming it: nothing degrades
//! silently when a policy moves to another backend.

use crate::tier::BackendKind;
use crate::{NetworkSpec, SandboxSpec, WorkspaceMode};
use serde::Serialize;

/// One boundary a policy sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Boundary {
    /// What kinds of program the backend can run at all.
    Programs,
    /// Nothing of the host visible but what the spec shows.
    FilesystemView,
    Workspace,
    ProtectedPaths,
    ReadPaths,
    WritePaths,
    HidePaths,
    Network,
    Timeout,
    CpuTime,
    Memory,
    Pids,
    Cpus,
    Output,
    Tmp,
    FileSize,
    OpenFiles,
    Environment,
    /// No privilege gain; the host's own credentials never reach the program.
    Privileges,
}

impl Boundary {
    pub fn as_str(self) -> &'static str {
        match self {
            Boundary::Programs => "programs",
            Boundary::FilesystemView => "filesystem view",
            Boundary::Workspace => "workspace",
            Boundary::ProtectedPaths => "workspace.protect",
            Boundary::ReadPaths => "filesystem.read",
            Boundary::WritePaths => "filesystem.write",
            Boundary::HidePaths => "filesystem.hide",
            Boundary::Network => "network",
            Boundary::Timeout => "limits.timeout",
            Boundary::CpuTime => "limits.cpu_time",
            Boundary::Memory => "limits.memory",
            Boundary::Pids => "limits.pids",
            Boundary::Cpus => "limits.cpus",
            Boundary::Output => "limits.output",
            Boundary::Tmp => "limits.tmp",
            Boundary::FileSize => "limits.file_size",
            Boundary::OpenFiles => "limits.open_files",
            Boundary::Environment => "env",
            Boundary::Privileges => "privileges",
        }
    }
}

/// Whether the backend holds a boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "detail")]
pub enum Support {
    /// Enforced, and by what.
    Enforced(String),
    /// Not enforceable by this backend, and why (the run is refused).
    Missing(String),
    /// Only approximated, and how; allowed because the policy accepts it
    /// (`[limits] enforcement = "best_effort"`).
    BestEffort(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Line {
    pub boundary: Boundary,
    /// What the spec asks for, in the policy's own words.
    pub asked: String,
    #[serde(flatten)]
    pub support: Support,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CapabilityReport {
    pub backend: BackendKind,
    pub tier: &'static str,
    /// `Err` when the backend cannot run at all here (not built, runtime missing).
    pub available: Result<String, String>,
    pub lines: Vec<Line>,
    /// What would let a refused run go ahead, when it is more specific than
    /// the general hint (rootless limits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl CapabilityReport {
    pub fn missing(&self) -> impl Iterator<Item = &Line> {
        self.lines
            .iter()
            .filter(|l| matches!(l.support, Support::Missing(_)))
    }

    /// The refusal for a run under this report, if it must be refused: names the
    /// backend, every boundary it cannot hold, and what would allow the run.
    pub fn refusal(&self) -> Option<String> {
        if let Err(why) = &self.available {
            return Some(format!("backend `{}` cannot run here: {why}", self.backend));
        }
        let missing: Vec<String> = self
            .missing()
            .map(|l| match &l.support {
                Support::Missing(why) => format!("{} ({}): {why}", l.boundary.as_str(), l.asked),
                Support::Enforced(_) | Support::BestEffort(_) => String::new(),
            })
            .collect();
        if missing.is_empty() {
            return None;
        }
        if let Some(hint) = &self.hint {
            return Some(format!(
                "backend `{}` cannot enforce what this policy sets: {}. Hint: {hint}",
                self.backend,
                missing.join("; ")
            ));
        }
        Some(format!(
            "backend `{}` cannot enforce what this policy sets: {}. Hint: change those \
             settings in the policy, or choose a backend that enforces them \
             (`[sandbox] backend`, `--backend`; `airlock doctor --backend NAME` shows what each one enforces)",
            self.backend,
            missing.join("; ")
        ))
    }
}

fn mib(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// What the spec asks for, boundary by boundary (the same for every backend).
fn asked(spec: &SandboxSpec) -> Vec<(Boundary, String)> {
    let l = &spec.limits;
    let list = |v: &[std::path::PathBuf]| {
        v.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = vec![
        (
            Boundary::Programs,
            spec.argv
                .first()
                .cloned()
                .unwrap_or_else(|| "(no command)".into()),
        ),
        (
            Boundary::FilesystemView,
            "the workspace and system directories only".into(),
        ),
        (
            Boundary::Workspace,
            format!(
                "{} mode at {}",
                format!("{:?}", spec.workspace.mode).to_lowercase(),
                spec.workspace.root.display()
            ),
        ),
    ];
    if !spec.workspace.protect.is_empty() {
        out.push((Boundary::ProtectedPaths, list(&spec.workspace.protect)));
    }
    if !spec.read_paths.is_empty() {
        out.push((Boundary::ReadPaths, list(&spec.read_paths)));
    }
    if !spec.write_paths.is_empty() {
        out.push((Boundary::WritePaths, list(&spec.write_paths)));
    }
    if !spec.hide_paths.is_empty() {
        out.push((Boundary::HidePaths, list(&spec.hide_paths)));
    }
    out.push((
        Boundary::Network,
        match &spec.network {
            NetworkSpec::None => "none".into(),
            NetworkSpec::Proxy { .. } => "allowlist (through the egress proxy)".into(),
            NetworkSpec::Open => "open".into(),
        },
    ));
    out.extend([
        (Boundary::Timeout, format!("{} ms", l.timeout_ms)),
        (Boundary::CpuTime, format!("{} ms", l.cpu_time_ms)),
        (Boundary::Memory, mib(l.memory_bytes)),
        (Boundary::Pids, l.pids.to_string()),
        (Boundary::Cpus, l.cpus.to_string()),
        (Boundary::Output, mib(l.output_bytes)),
        (Boundary::Tmp, mib(l.tmp_bytes)),
        (Boundary::FileSize, mib(l.file_size_bytes)),
        (Boundary::OpenFiles, l.open_files.to_string()),
        (
            Boundary::Environment,
            format!("{} variables, nothing else inherited", spec.env.len()),
        ),
        (Boundary::Privileges, "none gained".into()),
    ]);
    out
}

/// How the native backend can hold the memory, CPU and process limits here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NativeLimits {
    /// As root: the host's cgroups (v1 or v2).
    RootCgroup,
    /// Rootless, with a cgroup v2 subtree delegated to this user.
    Delegated(std::path::PathBuf),
    /// Rootless without a cgroup this user may manage.
    RlimitsOnly,
}

impl NativeLimits {
    /// Probes this process's situation (cheap: no cgroup is created).
    pub fn detect() -> NativeLimits {
        if !crate::native::rootless::is_rootless() {
            NativeLimits::RootCgroup
        } else {
            match crate::native::cgroup::delegated_v2() {
                Some(d) => NativeLimits::Delegated(d),
                None => NativeLimits::RlimitsOnly,
            }
        }
    }
}

/// The hint of a run refused in rootless mode for want of a cgroup.
pub const ROOTLESS_LIMITS_HINT: &str = "airlock runs unprivileged here and this user has no \
     cgroup to manage (cgroup v1 needs root; no delegated cgroup v2 subtree was found). Either \
     accept per-process rlimits for these limits with `[limits] enforcement = \"best_effort\"` \
     in the policy, or run airlock as root, or start it in a delegated cgroup v2 subtree \
     (systemd: `systemd-run --user --scope -p Delegate=yes airlock ...`; see docs/sandbox.md, \
     \"Running unprivileged\")";

/// The rootless stand-in for a limit a cgroup would hold, if any.
fn rootless_limit(b: Boundary, limits: &NativeLimits, spec: &SandboxSpec) -> Option<Support> {
    if *limits != NativeLimits::RlimitsOnly {
        return None;
    }
    let best_effort = spec.limit_enforcement == crate::spec::LimitEnforcement::BestEffort;
    let (stand_in, missing) = match b {
        Boundary::Memory => (
            "RLIMIT_DATA per process: private data only (allocations past it fail with ENOMEM); shared anonymous memory and memfds are not counted (a memfd is capped by file_size, not their number); a tree of N processes may use N times it; not reported as a memory kill",
            "needs a memory cgroup, and this user has none",
        ),
        Boundary::Cpus => (
            "not enforced: no CPU bandwidth control without a cgroup (the wall-clock timeout and RLIMIT_CPU still bound the run)",
            "needs a cpu cgroup, and this user has none",
        ),
        Boundary::CpuTime => (
            "RLIMIT_CPU per process and the wall-clock timeout (no tree-wide CPU accounting)",
            "tree-wide CPU time needs a cgroup, and this user has none",
        ),
        _ => return None,
    };
    Some(if best_effort {
        Support::BestEffort(format!(
            "best effort (limits.enforcement = \"best_effort\"): {stand_in}"
        ))
    } else {
        Support::Missing(missing.to_string())
    })
}

/// The native backend enforces every boundary as root (each layer is checked
/// by `airlock doctor`; a layer the host lacks refuses the run when it is
/// built). Rootless, the limits a cgroup holds depend on `limits`.
fn native(b: Boundary, spec: &SandboxSpec, limits: &NativeLimits) -> Support {
    if let Some(s) = rootless_limit(b, limits, spec) {
        return s;
    }
    let rootless = *limits != NativeLimits::RootCgroup;
    if rootless {
        let how = match b {
            Boundary::Workspace => Some(match spec.workspace.mode {
                WorkspaceMode::Overlay => "overlayfs (userxattr) in the run's user namespace with a per-run upper layer; changes reported, applied on request",
                WorkspaceMode::Ro => "read-only bind (files keep the caller's ownership)",
                WorkspaceMode::Rw => "bind, protected paths read-only (files keep the caller's ownership)",
            }),
            Boundary::Pids => Some("RLIMIT_NPROC, counted in the run's own user namespace (fork fails with EAGAIN past it), and the pids cgroup where delegated"),
            Boundary::Privileges => Some("rootless: user namespace (root inside is the caller, who holds no capability on the host), no_new_privs, every capability dropped, seccomp; the caller's supplementary groups stay (an unprivileged user namespace cannot drop them)"),
            Boundary::Memory | Boundary::Cpus | Boundary::CpuTime => Some("the delegated cgroup v2 subtree"),
            _ => None,
        };
        if let Some(how) = how {
            return Support::Enforced(how.to_string());
        }
    }
    let how = match b {
        Boundary::Programs => "any host program, run in the sandbox's namespaces",
        Boundary::FilesystemView => "mount namespace with a tmpfs root, pivot_root; landlock as a second wall",
        Boundary::Workspace => match spec.workspace.mode {
            WorkspaceMode::Overlay => "overlayfs with a per-run upper layer; changes reported, applied on request",
            WorkspaceMode::Ro => "read-only idmapped bind",
            WorkspaceMode::Rw => "idmapped bind, protected paths read-only",
        },
        Boundary::ProtectedPaths => "read-only mounts, never applied back",
        Boundary::ReadPaths => "read-only binds",
        Boundary::WritePaths => "read-write binds",
        Boundary::HidePaths => "masked with an empty directory or /dev/null",
        Boundary::Network => match spec.network {
            NetworkSpec::None => "empty network namespace, AF_UNIX-only seccomp rule",
            NetworkSpec::Proxy { .. } => "empty network namespace, relay to the egress proxy, netwatch",
            NetworkSpec::Open => "host network (as the policy says)",
        },
        Boundary::Timeout => "wall-clock timer in the helper; the whole tree is killed",
        Boundary::CpuTime => "RLIMIT_CPU and cgroup CPU accounting",
        Boundary::Memory => "memory cgroup (OOM kill reported as memory)",
        Boundary::Pids => "pids cgroup and RLIMIT_NPROC",
        Boundary::Cpus => "cgroup CPU bandwidth",
        Boundary::Output => "captured and capped by the caller; killed at the cap",
        Boundary::Tmp => "size- and inode-capped tmpfs /tmp and /dev/shm",
        Boundary::FileSize => "RLIMIT_FSIZE",
        Boundary::OpenFiles => "RLIMIT_NOFILE",
        Boundary::Environment => "the helper starts with an empty environment; the spec's is the whole environment",
        Boundary::Privileges => "user namespace (root inside is host uid 2000000000), no_new_privs, every capability dropped, seccomp",
    };
    Support::Enforced(how.to_string())
}

/// The report for `kind` running `spec`. `available` says whether the backend
/// can run on this host at all (the backend's own probe).
pub fn report(
    kind: BackendKind,
    spec: &SandboxSpec,
    available: Result<String, String>,
) -> CapabilityReport {
    // gVisor has a rootless mode too, with the same choice of limits.
    let native_limits = if matches!(kind, BackendKind::Native | BackendKind::Gvisor) {
        NativeLimits::detect()
    } else {
        NativeLimits::RootCgroup
    };
    let uses_sandbox_ids = match kind {
        BackendKind::Native | BackendKind::Gvisor => native_limits == NativeLimits::RootCgroup,
        BackendKind::Wasm => false,
        _ => true,
    };
    let mut r = report_with(kind, spec, available, native_limits);
    if uses_sandbox_ids {
        refuse_delegated_ids(&mut r, &crate::native::subid::host_delegations());
    }
    r
}

/// A backend whose sandbox runs as the sandbox's host uid and gid holds no
/// privilege boundary while a user of the host may become them (their range
/// in /etc/subuid or /etc/subgid): the run is refused, saying which range and
/// how to remove it.
fn refuse_delegated_ids(
    r: &mut CapabilityReport,
    delegations: &[crate::native::subid::Delegation],
) {
    let Some(why) = crate::native::subid::describe(delegations) else {
        return;
    };
    for l in r.lines.iter_mut() {
        if l.boundary == Boundary::Privileges {
            l.support = Support::Missing(why.clone());
        }
    }
}

/// [`report`] for a given native limits situation (tests, doctor).
pub fn report_with(
    kind: BackendKind,
    spec: &SandboxSpec,
    available: Result<String, String>,
    native_limits: NativeLimits,
) -> CapabilityReport {
    let available = if kind.built() {
        available
    } else {
        Err(kind.not_built_reason())
    };
    let lines: Vec<Line> = asked(spec)
        .into_iter()
        .map(|(boundary, asked)| {
            let support = match kind {
                BackendKind::Native => native(boundary, spec, &native_limits),
                BackendKind::Wasm => crate::wasm::caps::support(boundary, spec),
                BackendKind::Oci => crate::oci::caps::support(boundary, spec, false),
                BackendKind::Gvisor if native_limits != NativeLimits::RootCgroup => {
                    crate::oci::caps::support_rootless_gvisor(boundary, spec, &native_limits)
                }
                BackendKind::Gvisor => crate::oci::caps::support(boundary, spec, true),
                BackendKind::Docker => crate::docker::caps::support(boundary, spec),
                BackendKind::Microvm => crate::microvm::caps::support(boundary, spec),
                // Reached when a backend's cargo feature (wasm, docker) is off.
                #[allow(unreachable_patterns)]
                _ => Support::Missing(kind.not_built_reason()),
            };
            Line {
                boundary,
                asked,
                support,
            }
        })
        .collect();
    let hint = (native_limits == NativeLimits::RlimitsOnly
        && lines
            .iter()
            .any(|l| matches!(l.support, Support::Missing(_))))
    .then(|| ROOTLESS_LIMITS_HINT.to_string());
    CapabilityReport {
        backend: kind,
        tier: kind.tier().as_str(),
        available,
        lines,
        hint,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn spec() -> SandboxSpec {
        SandboxSpec {
            request_id: "t".into(),
            argv: vec!["python3".into(), "-c".into(), "print(1)".into()],
            cwd: "/w".into(),
            env: vec![("PATH".into(), "/usr/bin".into())],
            workspace: crate::WorkspaceSpec {
                root: "/w".into(),
                mode: WorkspaceMode::Overlay,
                protect: vec![".git/hooks".into()],
                apply: false,
                changes: Default::default(),
                owned: vec![],
                keep: None,
                list: None,
                home: None,
            },
            network: NetworkSpec::None,
            limits: crate::Limits {
                timeout_ms: 30_000,
                cpu_time_ms: 30_000,
                memory_bytes: 512 << 20,
                pids: 128,
                cpus: 1.0,
                output_bytes: 1 << 20,
                tmp_bytes: 64 << 20,
                file_size_bytes: 256 << 20,
                open_files: 1024,
            },
            read_paths: vec![],
            write_paths: vec![],
            hide_paths: vec![],
            stdin: None,
            limit_enforcement: Default::default(),
            git_config: String::new(),
        }
    }

    #[test]
    fn a_delegated_sandbox_uid_refuses_the_run_naming_the_range_and_the_fix() {
        use crate::native::namespaces::SANDBOX_HOST_UID;
        let spec = spec();
        let mut r = report_with(
            BackendKind::Native,
            &spec,
            Ok("here".into()),
            NativeLimits::RootCgroup,
        );
        refuse_delegated_ids(&mut r, &[]);
        assert_eq!(r.refusal(), None);
        let d = crate::native::subid::holding(
            "/etc/subuid",
            &format!("alice:{SANDBOX_HOST_UID}:65536\n"),
            SANDBOX_HOST_UID,
        );
        refuse_delegated_ids(&mut r, &d);
        let why = r.refusal().expect("refused");
        assert!(why.contains("privileges (none gained)"), "{why}");
        assert!(why.contains("/etc/subuid gives alice"), "{why}");
        assert!(why.contains("usermod --del-subuids"), "{why}");
        // The description names the id the sandbox really uses.
        let native = native(Boundary::Privileges, &spec, &NativeLimits::RootCgroup);
        assert!(
            matches!(&native, Support::Enforced(s) if s.contains(&SANDBOX_HOST_UID.to_string())),
            "{native:?}"
        );
    }

    #[test]
    fn native_enforces_everything_and_unbuilt_backends_refuse() {
        let s = spec();
        let r = report(BackendKind::Native, &s, Ok("ok".into()));
        assert!(r.refusal().is_none(), "{r:?}");
        // Which backends are built depends on the cargo features (wasm, docker).
        for kind in BackendKind::ALL.into_iter().filter(|k| !k.built()) {
            let g = report(kind, &s, Ok("ok".into()));
            let why = g.refusal().unwrap();
            assert!(why.contains("not built"), "{why}");
        }
    }

    #[test]
    fn rootless_gvisor_refuses_memory_cpus_and_tmp_unless_best_effort_and_names_the_sentry_gap() {
        let mut s = spec();
        let r = report_with(
            BackendKind::Gvisor,
            &s,
            Ok("ok".into()),
            NativeLimits::RlimitsOnly,
        );
        let why = r.refusal().expect("refused");
        for needle in [
            "limits.memory",
            "limits.cpus",
            "limits.tmp",
            "enforcement = \"best_effort\"",
        ] {
            assert!(why.contains(needle), "{needle}: {why}");
        }
        // The helper's sampled CPU-time ceiling holds tree-wide without a cgroup.
        assert!(!why.contains("limits.cpu_time"), "{why}");
        s.limit_enforcement = crate::spec::LimitEnforcement::BestEffort;
        let r = report_with(
            BackendKind::Gvisor,
            &s,
            Ok("ok".into()),
            NativeLimits::RlimitsOnly,
        );
        assert!(r.refusal().is_none(), "{r:?}");
        let line = |b: Boundary| r.lines.iter().find(|l| l.boundary == b).unwrap().clone();
        assert!(
            matches!(&line(Boundary::Memory).support,
                Support::BestEffort(how) if how.contains("RLIMIT_AS") && how.contains("Sentry's own memory")),
            "{:?}",
            line(Boundary::Memory)
        );
        assert!(
            matches!(&line(Boundary::Privileges).support, Support::Enforced(how) if how.contains("rootless")),
            "{:?}",
            line(Boundary::Privileges)
        );
        // As root, the gvisor report is root mode's.
        let root = report_with(
            BackendKind::Gvisor,
            &spec(),
            Ok("ok".into()),
            NativeLimits::RootCgroup,
        );
        assert!(root.refusal().is_none(), "{root:?}");
    }

    #[test]
    fn rootless_without_a_cgroup_refuses_naming_the_setting_unless_best_effort() {
        let mut s = spec();
        let r = report_with(
            BackendKind::Native,
            &s,
            Ok("ok".into()),
            NativeLimits::RlimitsOnly,
        );
        let why = r.refusal().expect("refused");
        for needle in [
            "limits.memory",
            "limits.cpus",
            "limits.cpu_time",
            "enforcement = \"best_effort\"",
        ] {
            assert!(why.contains(needle), "{needle}: {why}");
        }
        // pids, the timeout and the rest hold without a cgroup.
        assert!(!why.contains("limits.pids"), "{why}");
        s.limit_enforcement = crate::spec::LimitEnforcement::BestEffort;
        let r = report_with(
            BackendKind::Native,
            &s,
            Ok("ok".into()),
            NativeLimits::RlimitsOnly,
        );
        assert!(r.refusal().is_none(), "{r:?}");
        let memory = r
            .lines
            .iter()
            .find(|l| l.boundary == Boundary::Memory)
            .unwrap();
        assert!(
            matches!(&memory.support, Support::BestEffort(how) if how.contains("RLIMIT_DATA")),
            "{memory:?}"
        );
        // A delegated cgroup v2 subtree holds them: nothing to accept.
        let mut s = spec();
        s.limit_enforcement = crate::spec::LimitEnforcement::Cgroup;
        let r = report_with(
            BackendKind::Native,
            &s,
            Ok("ok".into()),
            NativeLimits::Delegated("/sys/fs/cgroup/user.slice/user@1000.service".into()),
        );
        assert!(r.refusal().is_none(), "{r:?}");
    }
}
