//! What `airlock run` says about limits: the flags that tighten a policy for one
//! run (`--timeout`, `--memory`, `--network`), the kill message that names the
//! limit's value and its policy key, and the hint that follows a sandbox that
//! could not be built.
//!
//! A flag only ever tightens. The policy is the authority (an agent may be the
//! one calling the CLI), so a looser value is refused with what would allow it,
//! never quietly ignored and never quietly honoured.

use airlock_policy::{NetworkMode, Policy};
use airlock_sandbox::{KillReason, Layer, Outcome, SandboxError};

/// `--network`: the same words as `network.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NetworkFlag {
    None,
    Allowlist,
    Open,
}

impl NetworkFlag {
    fn mode(self) -> NetworkMode {
        match self {
            NetworkFlag::None => NetworkMode::None,
            NetworkFlag::Allowlist => NetworkMode::Allowlist,
            NetworkFlag::Open => NetworkMode::Open,
        }
    }
}

fn mode_name(m: NetworkMode) -> &'static str {
    match m {
        NetworkMode::None => "none",
        NetworkMode::Allowlist => "allowlist",
        NetworkMode::Open => "open",
    }
}

/// How open a mode is: none < allowlist < open.
fn openness(m: NetworkMode) -> u8 {
    match m {
        NetworkMode::None => 0,
        NetworkMode::Allowlist => 1,
        NetworkMode::Open => 2,
    }
}

/// The flags of one run that may change its policy.
#[derive(Debug, Default)]
pub struct Tighten<'a> {
    pub timeout: Option<&'a str>,
    pub memory: Option<&'a str>,
    pub network: Option<NetworkFlag>,
}

/// Where to raise a limit: the policy file, or a file to write first.
fn where_to_change(policy: &Policy) -> String {
    if policy.source.starts_with('<') {
        "this run uses the built-in default policy: `airlock policy init` writes an airlock.toml \
         next to your project to edit"
            .to_string()
    } else {
        format!("edit {}", policy.source)
    }
}

/// `--timeout`, in ms, read as the policy reads `limits.timeout`.
pub fn timeout_flag(text: &str) -> anyhow::Result<u64> {
    let ms = airlock_policy::load::parse_duration(text)
        .map_err(|e| anyhow::anyhow!("--timeout: {e}"))?;
    if ms == 0 {
        anyhow::bail!("--timeout must be longer than 0");
    }
    Ok(ms)
}

/// Apply the flags to `policy`, or say why one is refused and what would allow it.
pub fn tighten(policy: &mut Policy, flags: &Tighten<'_>) -> anyhow::Result<()> {
    if let Some(text) = flags.timeout {
        let ms = timeout_flag(text)?;
        let limit = policy.limits.timeout.ms;
        if ms > limit {
            anyhow::bail!(
                "--timeout {text} is longer than this policy's limits.timeout = \"{}\": a flag can \
                 only tighten the policy.\nHint: to allow it, set [limits] timeout = \"{text}\" in \
                 the policy ({}).",
                fmt_ms(limit),
                where_to_change(policy)
            );
        }
        policy.limits.timeout.ms = ms;
        policy.limits.cpu_time.ms = policy.limits.cpu_time.ms.min(ms);
    }
    if let Some(text) = flags.memory {
        let bytes =
            airlock_policy::load::parse_size(text).map_err(|e| anyhow::anyhow!("--memory: {e}"))?;
        // The same floor the policy loader keeps.
        if bytes < 1 << 20 {
            anyhow::bail!("--memory {text} is below 1MiB, the smallest limits.memory");
        }
        let limit = policy.limits.memory;
        if bytes > limit {
            anyhow::bail!(
                "--memory {text} is more than this policy's limits.memory = \"{}\": a flag can \
                 only tighten the policy.\nHint: to allow it, set [limits] memory = \"{text}\" in \
                 the policy ({}).",
                fmt_size(limit),
                where_to_change(policy)
            );
        }
        policy.limits.memory = bytes;
    }
    if let Some(flag) = flags.network {
        let want = flag.mode();
        let have = policy.network.mode;
        if openness(want) > openness(have) {
            let how = match want {
                NetworkMode::Allowlist => {
                    "set [network] mode = \"allowlist\" and list the hosts in allow = [...]; \
                     then `airlock grant --network HOST --for 'PROGRAM' --ttl 1h` can add a host \
                     for a while without editing the file"
                }
                _ => {
                    "set [network] mode = \"open\" (every address reachable: prefer \"allowlist\")"
                }
            };
            anyhow::bail!(
                "--network {} is looser than this policy's network.mode = \"{}\": a flag can only \
                 tighten the policy, and no grant opens a network mode.\nHint: to allow it, {} in \
                 the policy ({}).",
                mode_name(want),
                mode_name(have),
                how,
                where_to_change(policy)
            );
        }
        policy.network.mode = want;
    }
    Ok(())
}

/// `airlock: killed by the memory limit (limits.memory = "512MiB") after 812 ms`,
/// with where the value comes from and how to change it.
pub fn kill_message(reason: KillReason, outcome: &Outcome, policy: &Policy) -> String {
    let l = &policy.limits;
    let (what, key, value, flag) = match reason {
        KillReason::Cancelled => return cancelled_message(outcome),
        KillReason::Timeout => (
            "the wall-clock timeout",
            "timeout",
            fmt_ms(l.timeout.ms),
            Some("--timeout"),
        ),
        KillReason::Memory => (
            "the memory limit (out of memory)",
            "memory",
            fmt_size(l.memory),
            Some("--memory"),
        ),
        KillReason::Pids => (
            "the process limit (too many processes or threads)",
            "pids",
            l.pids.to_string(),
            None,
        ),
        KillReason::CpuTime => (
            "the CPU-time limit",
            "cpu_time",
            fmt_ms(l.cpu_time.ms),
            None,
        ),
        KillReason::Output => ("the output cap", "output", fmt_size(l.output), None),
    };
    let quoted = if reason == KillReason::Pids {
        value
    } else {
        format!("\"{value}\"")
    };
    let tighter = flag
        .map(|f| format!("; {f} can only lower it"))
        .unwrap_or_default();
    format!(
        "airlock: killed by {what}: limits.{key} = {quoted} ({}) after {} ms\n\
         Hint: if the command needs more, raise [limits] {key} ({}){tighter}.",
        policy.source,
        outcome.duration_ms,
        where_to_change(policy)
    )
}

/// [`kill_message`] for a run through `airlock serve`: the limit is the
/// server's policy's, which this process has not read.
pub fn kill_message_of_server(reason: KillReason, outcome: &Outcome) -> String {
    let (what, key) = match reason {
        KillReason::Cancelled => return cancelled_message(outcome),
        KillReason::Timeout => ("the wall-clock timeout", "timeout"),
        KillReason::Memory => ("the memory limit (out of memory)", "memory"),
        KillReason::Pids => ("the process limit (too many processes or threads)", "pids"),
        KillReason::CpuTime => ("the CPU-time limit", "cpu_time"),
        KillReason::Output => ("the output cap", "output"),
    };
    format!(
        "airlock: killed by {what} (the server's limits.{key}) after {} ms\n\
         Hint: if the command needs more, raise [limits] {key} in the policy `airlock serve` \
         runs under and restart it, or run without --server under a policy that allows more.",
        outcome.duration_ms
    )
}

/// A run stopped because its caller stopped waiting: no limit to raise.
fn cancelled_message(outcome: &Outcome) -> String {
    format!(
        "airlock: cancelled after {} ms: the caller stopped waiting for the run (its connection \
         to the server closed), so the sandbox was killed",
        outcome.duration_ms
    )
}

/// After exit 127 (command not found): the preset that would bring the program in.
pub fn not_found_hint(program: &str, policy: &Policy) -> Option<String> {
    use airlock_policy::Toolchain;
    let name = program.rsplit('/').next().unwrap_or(program);
    let toolchain = match name {
        "cargo" | "rustc" | "rustup" | "rustfmt" | "cargo-clippy" => Toolchain::Rust,
        "go" | "gofmt" => Toolchain::Go,
        "node" | "npm" | "npx" => Toolchain::Node,
        "pytest" | "pip" | "pip3" | "python" => Toolchain::Python,
        _ => return None,
    };
    if policy.toolchains.contains(&toolchain) {
        return Some(format!(
            "`{name}` was not found inside although the `{}` preset is on: `airlock policy check` \
             on the policy file shows what the preset found on this host",
            toolchain.as_str()
        ));
    }
    Some(format!(
        "`{name}` was not found inside the sandbox. If it is installed under a home directory \
         (rustup, nvm, pyenv, a Go SDK), add [toolchains] use = [\"{}\"] to the policy ({})",
        toolchain.as_str(),
        where_to_change(policy)
    ))
}

/// What to do about a sandbox that could not be built, after the layer's own message.
pub fn setup_hint(err: &SandboxError) -> String {
    let doctor = "`airlock doctor` checks every layer on this host and names what is missing";
    let (layer, _detail) = match err {
        SandboxError::Layer { layer, detail } => (*layer, detail.as_str()),
        SandboxError::Spec(_) => return "the sandbox spec was refused before anything was built; this is a bug in airlock if the policy loaded cleanly: please report it".into(),
        SandboxError::Helper(_) | SandboxError::Io { .. } => {
            return format!("the sandbox helper (this binary, re-executed) failed; {doctor}; AIRLOCK_PROFILE=1 prints each setup step's time")
        }
    };
    let not_root = !rustix::process::geteuid().is_root();
    match layer {
        Layer::Cgroup if not_root => airlock_sandbox::capability::ROOTLESS_LIMITS_HINT.to_string(),
        Layer::UserNamespace | Layer::Namespaces if not_root => format!(
            "airlock runs unprivileged here (rootless mode), which needs unprivileged user \
             namespaces: `sysctl user.max_user_namespaces` above 0, and where they exist \
             kernel.unprivileged_userns_clone = 1 and kernel.apparmor_restrict_unprivileged_userns \
             = 0 (or an AppArmor profile for airlock with `userns,`); or run airlock as root; {doctor}"
        ),
        Layer::Cgroup => format!(
            "airlock puts each run in its own memory, pids and cpu cgroup: the controllers must be \
             mounted (cgroup v1 under /sys/fs/cgroup/<controller>, or cgroup v2) and writable by \
             root; {doctor}"
        ),
        Layer::UserNamespace | Layer::Namespaces => format!(
            "user namespaces may be off on this host: `sysctl user.max_user_namespaces` must be \
             above 0 (and, where they exist, kernel.unprivileged_userns_clone = 1 and \
             kernel.apparmor_restrict_unprivileged_userns = 0); inside a container, run it with \
             --privileged or a seccomp profile that allows unshare/clone of namespaces; {doctor}"
        ),
        Layer::Landlock => format!(
            "the kernel must have landlock enabled (CONFIG_SECURITY_LANDLOCK, and `landlock` in \
             the lsm= boot parameter); {doctor}"
        ),
        Layer::Seccomp => {
            format!("the kernel must support seccomp filters (CONFIG_SECCOMP_FILTER); {doctor}")
        }
        Layer::Workspace => format!(
            "the workspace is mounted as an overlay (or an idmapped bind in ro/rw mode): its \
             filesystem must support that (ext4, xfs, btrfs, tmpfs do; NFS and another overlay's \
             upper layer do not); [workspace] mode = \"ro\" or \"rw\" avoids the overlay; {doctor}"
        ),
        Layer::StateDir => format!(
            "airlock keeps per-run directories under its state directory \
             ($AIRLOCK_STATE_DIR, default /var/lib/airlock for root, $XDG_STATE_HOME/airlock or \
             ~/.local/state/airlock otherwise) and, unprivileged, its mount points under \
             $XDG_RUNTIME_DIR/airlock: both must be local, writable directories; {doctor}"
        ),
        Layer::Exec => "the program could not be started inside the sandbox: is it installed under \
                   /usr, /bin or the workspace, and on the sandbox's PATH?"
            .into(),
        _ => doctor.to_string(),
    }
}

/// `30s`, `1m30s`, `250ms`, the way the policy file writes durations.
pub fn fmt_ms(ms: u64) -> String {
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let s = ms / 1000;
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, 0, 0) => format!("{h}h"),
        _ => format!("{s}s"),
    }
}

/// `512MiB`, `64KiB`, `1GiB`, or bytes, the way the policy file writes sizes.
pub fn fmt_size(bytes: u64) -> String {
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        airlock_policy::load::builtin_default(std::path::Path::new("/tmp"))
    }

    #[test]
    fn flags_tighten_and_refuse_looser_values_with_what_would_allow_them() {
        let mut p = policy();
        tighten(
            &mut p,
            &Tighten {
                timeout: Some("5s"),
                memory: Some("128MiB"),
                network: Some(NetworkFlag::None),
            },
        )
        .unwrap();
        assert_eq!(p.limits.timeout.ms, 5000);
        assert!(p.limits.cpu_time.ms <= 5000);
        assert_eq!(p.limits.memory, 128 << 20);

        let refused = |t: Tighten<'_>| tighten(&mut policy(), &t).unwrap_err().to_string();
        let e = refused(Tighten {
            timeout: Some("5m"),
            ..Default::default()
        });
        assert!(e.contains("limits.timeout = \"30s\""), "{e}");
        assert!(e.contains("[limits] timeout = \"5m\""), "{e}");
        assert!(e.contains("airlock policy init"), "{e}");
        let e = refused(Tighten {
            memory: Some("1GiB"),
            ..Default::default()
        });
        assert!(e.contains("limits.memory = \"512MiB\""), "{e}");
        let e = refused(Tighten {
            network: Some(NetworkFlag::Open),
            ..Default::default()
        });
        assert!(e.contains("network.mode = \"none\""), "{e}");
        assert!(e.contains("[network] mode = \"open\""), "{e}");
        let e = refused(Tighten {
            network: Some(NetworkFlag::Allowlist),
            ..Default::default()
        });
        assert!(e.contains("airlock grant --network"), "{e}");
        assert!(refused(Tighten {
            timeout: Some("soon"),
            ..Default::default()
        })
        .contains("--timeout"));
    }

    #[test]
    fn values_print_as_the_policy_writes_them() {
        assert_eq!(fmt_ms(30_000), "30s");
        assert_eq!(fmt_ms(90_000), "1m30s");
        assert_eq!(fmt_ms(120_000), "2m");
        assert_eq!(fmt_ms(3_600_000), "1h");
        assert_eq!(fmt_ms(1500), "1500ms");
        assert_eq!(fmt_size(512 << 20), "512MiB");
        assert_eq!(fmt_size(1 << 30), "1GiB");
        assert_eq!(fmt_size(1000), "1000");
    }
}
