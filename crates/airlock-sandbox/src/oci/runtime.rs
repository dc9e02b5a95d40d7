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
    /// gVisor's runtime, with the platform it runs on.
    Runsc(GvisorPlatform),
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

    /// The runtime's global options (before the subcommand).
    pub fn global_args(self, state: &Path, network_none: bool) -> Vec<String> {
        let mut a = vec!["--root".to_string(), state.display().to_string()];
        match self {
            // airlock's own cgroup holds the limits: the runtime starts in it
            // and its container stays there.
            Runtime::Crun => a.push("--cgroup-manager=disabled".into()),
            Runtime::Runsc(p) => {
                a.push(format!("--platform={}", p.as_str()));
                a.push(format!(
                    "--network={}",
                    if network_none { "none" } else { "host" }
                ));
                a.push("--ignore-cgroups".into());
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

/// gVisor's runtime here and the platform it supports best: systrap if this
/// build knows it, else ptrace (the kvm platform needs working nested
/// virtualisation and is not chosen automatically).
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
    let platform = if flags.contains("systrap") {
        GvisorPlatform::Systrap
    } else {
        GvisorPlatform::Ptrace
    };
    Ok((Runtime::Runsc(platform), exe))
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
