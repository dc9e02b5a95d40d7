//! The OCI runtimes airlock can drive, how to find them and how to call them.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Picks the OCI runtime of `backend = "oci"` (crun, runc or youki); the
/// first one installed, in that order, when unset.
pub const RUNTIME_ENV: &str = "AIRLOCK_OCI_RUNTIME";

/// Where runtimes are looked for (the caller's PATH is not trusted for this).
const SEARCH: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Runtime {
    Crun,
    Runc,
    Youki,
    /// gVisor's runtime, with what this build of it can do.
    Runsc(Gvisor),
}

/// What the installed runsc offers that airlock uses, read from `runsc flags`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gvisor {
    pub platform: GvisorPlatform,
    /// How to let the gofer connect to a host unix socket bound into the
    /// sandbox (network allowlist mode's proxy socket); `None` when this
    /// build has no such flag.
    pub host_uds: Option<HostUds>,
}

impl Gvisor {
    /// What `runsc flags` (its output, `flags`) says this build offers:
    /// systrap if it knows it, else ptrace (the kvm platform needs working
    /// nested virtualisation and is not chosen automatically).
    pub fn from_flags(flags: &str) -> Gvisor {
        let has = |name: &str| {
            flags
                .lines()
                .any(|l| l.split_whitespace().next() == Some(name))
        };
        let platform = if flags.contains("systrap") {
            GvisorPlatform::Systrap
        } else {
            GvisorPlatform::Ptrace
        };
        let host_uds = if has("-host-uds") {
            Some(HostUds::Open)
        } else if has("-fsgofer-host-uds") {
            Some(HostUds::FsgoferHostUds)
        } else {
            None
        };
        Gvisor { platform, host_uds }
    }
}

/// runsc's switch that lets the gofer connect to host unix sockets, which is
/// off by default (a bind-mounted socket then cannot even be mounted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostUds {
    /// `--host-uds=open` (runsc from 2022 on): connect only; creating host
    /// sockets stays refused.
    Open,
    /// `--fsgofer-host-uds`, older builds' only form (newer ones read it as
    /// `--host-uds=all`: connect, and create sockets in writable binds).
    FsgoferHostUds,
}

impl HostUds {
    pub fn flag(self) -> &'static str {
        match self {
            HostUds::Open => "--host-uds=open",
            HostUds::FsgoferHostUds => "--fsgofer-host-uds",
        }
    }
}

/// The network a run's runtime is started with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunNetwork {
    /// Loopback only (network mode none).
    Isolated,
    /// Loopback only, plus the egress proxy's socket reached from inside:
    /// under gVisor the in-sandbox relay copies to it, so runsc must let the
    /// gofer connect to a host unix socket. Nothing changes for the OCI
    /// runtimes (their relay runs on the host).
    Relay,
    /// The host's network (network mode open).
    Host,
}

/// How gVisor's Sentry intercepts the sandbox's system calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GvisorPlatform {
    /// seccomp traps (runsc builds from mid-2023 on).
    Systrap,
    /// ptrace: slower, works everywhere.
    Ptrace,
}

impl GvisorPlatform {
    pub fn as_str(self) -> &'static str {
        match self {
            GvisorPlatform::Systrap => "systrap",
            GvisorPlatform::Ptrace => "ptrace",
        }
    }
}

/// The OCI runtimes of `backend = "oci"`, in order of preference.
pub const OCI_RUNTIMES: [Runtime; 3] = [Runtime::Crun, Runtime::Runc, Runtime::Youki];

impl Runtime {
    pub fn exe_name(self) -> &'static str {
        match self {
            Runtime::Crun => "crun",
            Runtime::Runc => "runc",
            Runtime::Youki => "youki",
            Runtime::Runsc(_) => "runsc",
        }
    }

    pub fn parse_oci(name: &str) -> Option<Runtime> {
        OCI_RUNTIMES.into_iter().find(|r| r.exe_name() == name)
    }

    pub fn is_gvisor(self) -> bool {
        matches!(self, Runtime::Runsc(_))
    }

    /// The runtime's global options (before the subcommand). `rootless`:
    /// the helper runs as root of a user namespace of its own that maps only
    /// the caller (gVisor only; see `oci::Privilege`).
    pub fn global_args(self, state: &Path, network: RunNetwork, rootless: bool) -> Vec<String> {
        let mut a = vec!["--root".to_string(), state.display().to_string()];
        match self {
            // airlock's own cgroup holds the limits: the runtime starts in it
            // and its container stays there.
            Runtime::Crun => a.push("--cgroup-manager=disabled".into()),
            Runtime::Runsc(g) => {
                a.push(format!("--platform={}", g.platform.as_str()));
                a.push(format!(
                    "--network={}",
                    if network == RunNetwork::Host {
                        "host"
                    } else {
                        "none"
                    }
                ));
                // Only in this mode: otherwise no host socket the view
                // shows (one in the workspace, say) can be connected to.
                if let (RunNetwork::Relay, Some(h)) = (network, g.host_uds) {
                    a.push(h.flag().into());
                }
                a.push("--ignore-cgroups".into());
                // Without it runsc sets up the sandbox's and the gofer's
                // ids as host root would, which the caller's namespace
                // (one uid mapped) cannot: runsc then runs the Sentry as
                // nobody in a user namespace nested in the helper's, and
                // the gofer as the caller.
                if rootless {
                    a.push("--rootless".into());
                }
                // The bundle's seccomp profile, applied by the Sentry to the guest.
                a.push("--oci-seccomp".into());
            }
            // runc and youki make a cgroup of their own below the one they
            // start in (a relative cgroupsPath), so the limits still hold.
            Runtime::Runc | Runtime::Youki => {}
        }
        a
    }
}

/// The runtime's executable, if installed.
pub fn locate(name: &str) -> Option<PathBuf> {
    SEARCH
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// The runtime `backend = "oci"` uses here: `asked` (from [`RUNTIME_ENV`])
/// if given (it must be installed), else the first of crun, runc, youki found.
pub fn choose_oci(asked: Option<&str>) -> Result<(Runtime, PathBuf), String> {
    if let Some(name) = asked {
        let rt = Runtime::parse_oci(name).ok_or_else(|| {
            format!("{RUNTIME_ENV}={name} names no OCI runtime airlock knows; Hint: crun, runc or youki")
        })?;
        let exe = locate(rt.exe_name()).ok_or_else(|| {
            format!("{RUNTIME_ENV}={name}, but `{name}` is not installed; Hint: install it (Debian: apt-get install {name})")
        })?;
        return Ok((rt, exe));
    }
    OCI_RUNTIMES
        .into_iter()
        .find_map(|rt| locate(rt.exe_name()).map(|exe| (rt, exe)))
        .ok_or_else(|| {
            "no OCI runtime is installed (looked for crun, runc, youki); \
             Hint: install one (Debian: apt-get install crun)"
                .to_string()
        })
}

/// gVisor's runtime here and what it offers ([`Gvisor::from_flags`]).
pub fn choose_gvisor() -> Result<(Runtime, PathBuf), String> {
    let exe = locate("runsc").ok_or_else(|| {
        "gVisor's runsc is not installed; Hint: install it (Debian: apt-get install runsc)"
            .to_string()
    })?;
    let flags = std::process::Command::new(&exe)
        .arg("flags")
        .env_clear()
        .output()
        .map(|o| {
            let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
            s.push_str(&String::from_utf8_lossy(&o.stderr));
            s
        })
        .unwrap_or_default();
    Ok((Runtime::Runsc(Gvisor::from_flags(&flags)), exe))
}

/// The first line of `exe --version`.
pub fn version(exe: &Path) -> String {
    std::process::Command::new(exe)
        .arg("--version")
        .env_clear()
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_string)
        })
        .unwrap_or_else(|| "version unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of `runsc flags` as the 2022 build prints them.
    const FLAGS_2022: &str = "  -fsgofer-host-uds\n    \tDEPRECATED: use host-uds=all\n  \
        -host-uds value\n    \tcontrols permission to access host Unix-domain sockets. \
        Values: none|open|create|all, default: none\n  -platform string\n    \tspecifies \
        which platform to use: ptrace (default), kvm. (default \"ptrace\")\n";

    #[test]
    fn runsc_flags_name_the_platform_and_the_host_socket_switch() {
        let g = Gvisor::from_flags(FLAGS_2022);
        assert_eq!(g.platform, GvisorPlatform::Ptrace);
        assert_eq!(g.host_uds, Some(HostUds::Open));
        // An older build: only the deprecated switch.
        let old = Gvisor::from_flags(
            "  -fsgofer-host-uds\n    \tallow the gofer to mount Unix Domain Sockets.\n",
        );
        assert_eq!(old.host_uds, Some(HostUds::FsgoferHostUds));
        // A word in a description is not a flag.
        let none = Gvisor::from_flags("  -network string\n    \tsee -host-uds in newer builds\n");
        assert_eq!(none.host_uds, None);
    }

    #[test]
    fn runsc_gets_the_host_socket_switch_in_relay_mode_only() {
        let g = Runtime::Runsc(Gvisor::from_flags(FLAGS_2022));
        let state = Path::new("/s");
        let relay = g.global_args(state, RunNetwork::Relay, false);
        assert!(relay.contains(&"--network=none".to_string()));
        assert!(relay.contains(&"--host-uds=open".to_string()));
        for other in [RunNetwork::Isolated, RunNetwork::Host] {
            let a = g.global_args(state, other, false);
            assert!(
                !a.iter().any(|x| x.contains("host-uds")),
                "{other:?}: {a:?}"
            );
        }
        assert!(g
            .global_args(state, RunNetwork::Isolated, false)
            .contains(&"--network=none".to_string()));
        assert!(g
            .global_args(state, RunNetwork::Host, false)
            .contains(&"--network=host".to_string()));
        assert!(g
            .global_args(state, RunNetwork::Isolated, true)
            .contains(&"--rootless".to_string()));
        assert!(!g
            .global_args(state, RunNetwork::Isolated, false)
            .contains(&"--rootless".to_string()));
        // The OCI runtimes never get it.
        assert!(!Runtime::Crun
            .global_args(state, RunNetwork::Relay, false)
            .iter()
            .any(|x| x.contains("host-uds")));
    }
}
