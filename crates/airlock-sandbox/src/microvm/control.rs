//! The run's control share: what the host hands the guest's init
//! (scripts/microvm/init) and what the init hands back.
//!
//! The host writes `spec.sh` (the workspace's path and the limits, as shell
//! assignments the init sources) and `cmd.sh` (cwd, environment and argv, run
//! by the unprivileged user), every value single-quoted so that no byte of
//! the spec is ever shell syntax. The guest writes `stdout`, `stderr` and
//! `result` (`key=value` lines). The result is untrusted input: a guest root
//! that broke out of its user could write anything there, so it is parsed
//! leniently and bounded, never trusted for more than the run's own outcome.

use super::guest::Share;
use crate::{KillReason, SandboxSpec, WorkspaceMode};
use std::collections::HashMap;
use std::path::PathBuf;

/// The guest user's uid and gid: the owner the host's idmapped staging gives
/// the workspace (so the guest user owns it, as sandbox root does natively).
pub const RUN_UID: u32 = crate::native::namespaces::SANDBOX_HOST_UID;

/// `s` as one single-quoted shell word.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Whether `s` can cross into the guest as text: the shell script cannot
/// carry NUL bytes.
fn check(what: &str, s: &str) -> Result<(), String> {
    if s.contains('\0') {
        return Err(format!("{what} contains a NUL byte"));
    }
    Ok(())
}

/// `spec.sh`: the values the init needs before the command starts.
/// `links` (path, target) and `shares` are the view's symlinks and read-only
/// host directories, made and mounted by the init in that order.
pub fn spec_sh(
    spec: &SandboxSpec,
    links: &[(PathBuf, PathBuf)],
    shares: &[Share],
) -> Result<String, String> {
    let l = &spec.limits;
    let ws = spec.workspace.root.to_str().ok_or_else(|| {
        format!(
            "workspace path {} is not UTF-8",
            spec.workspace.root.display()
        )
    })?;
    check("the workspace path", ws)?;
    // cgroup v2 cpu.max: quota per 100 ms period; "max" when unbounded.
    let cpu_max = if l.cpus > 0.0 && l.cpus.is_finite() {
        format!("{} 100000", ((l.cpus * 100_000.0) as u64).max(1000))
    } else {
        "max 100000".to_string()
    };
    let utf8 = |p: &std::path::Path| -> Result<String, String> {
        let s = p
            .to_str()
            .ok_or_else(|| format!("path {} is not UTF-8", p.display()))?;
        check("a path", s)?;
        Ok(quote(s))
    };
    let mut mounts = Vec::new();
    for (link, target) in links {
        mounts.push(format!("link {} {}", utf8(link)?, utf8(target)?));
    }
    for s in shares {
        mounts.push(format!("share {} {}", quote(&s.tag), utf8(&s.dst)?));
    }
    let lines = [
        format!("SHARES={}", quote(&mounts.join("; "))),
        format!("WS={}", quote(ws)),
        format!(
            "WS_RO={}",
            u8::from(spec.workspace.mode == WorkspaceMode::Ro)
        ),
        format!("RUN_UID={RUN_UID}"),
        format!(
            "EGRESS={}",
            u8::from(matches!(spec.network, crate::NetworkSpec::Proxy { .. }))
        ),
        format!("TMP_BYTES={}", l.tmp_bytes.max(1 << 20)),
        format!("MEMORY_BYTES={}", l.memory_bytes.max(1 << 20)),
        format!("PIDS={}", l.pids.max(1)),
        format!("CPU_MAX={}", quote(&cpu_max)),
        // RLIMIT_CPU in whole seconds, rounded up (the cgroup's account is exact).
        format!("CPU_S={}", l.cpu_time_ms.div_ceil(1000).max(1)),
        // busybox ash's `ulimit -f` counts 512-byte blocks.
        format!("FSIZE_BLOCKS={}", l.file_size_bytes.div_ceil(512).max(1)),
        format!("OPEN_FILES={}", l.open_files.max(16)),
        format!("OUTPUT_BYTES={}", l.output_bytes),
        format!(
            "TIMEOUT_S={}.{:03}",
            l.timeout_ms / 1000,
            l.timeout_ms % 1000
        ),
    ];
    Ok(lines.join("\n") + "\n")
}

/// `cmd.sh`: the environment, the working directory and the command.
pub fn cmd_sh(spec: &SandboxSpec) -> Result<String, String> {
    if spec.argv.is_empty() {
        return Err("argv is empty".into());
    }
    let mut env = spec.env.clone();
    // Allowlist mode: programs find the guest's relay as they find the
    // native backend's (the same ports, the same variables).
    if let crate::NetworkSpec::Proxy { .. } = spec.network {
        use crate::relay;
        for (k, v) in relay::proxy_env(relay::HTTP_PORT, relay::SOCKS_PORT) {
            env.retain(|(n, _)| *n != k);
            env.push((k, v));
        }
    }
    let mut out = String::new();
    for (k, v) in &env {
        if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "environment variable name `{k}` cannot be passed to the guest's shell \
                 (letters, digits and `_` only)"
            ));
        }
        check("an environment value", v)?;
        out.push_str(&format!("export {k}={}\n", quote(v)));
    }
    let cwd = spec
        .cwd
        .to_str()
        .ok_or_else(|| format!("cwd {} is not UTF-8", spec.cwd.display()))?;
    check("cwd", cwd)?;
    out.push_str(&format!(
        "cd {} || {{ echo \"airlock: cannot enter the working directory\" >&2; exit 126; }}\n",
        quote(cwd)
    ));
    out.push_str("exec");
    for a in &spec.argv {
        check("an argument", a)?;
        out.push(' ');
        out.push_str(&quote(a));
    }
    out.push('\n');
    Ok(out)
}

/// What the guest's init reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GuestResult {
    /// Set up failed before the command ran: what failed.
    pub error: Option<String>,
    /// The shell's status: 0-125 the command's exit code, 128+N signal N,
    /// 125/126/127 set-up failures of the command's own shell.
    pub rc: Option<i32>,
    pub killed_by: Option<KillReason>,
    pub oom_kill: bool,
    pub pids_max: bool,
    pub cpu_ms: u64,
    pub memory_peak: u64,
    /// Seconds since the guest kernel started: init up, command started, ended.
    pub t_init: Option<f64>,
    pub t_start: Option<f64>,
    pub t_end: Option<f64>,
}

/// Parses `result` (at most the first 64 KiB are looked at).
pub fn parse_result(text: &str) -> GuestResult {
    let text = &text[..text.len().min(64 << 10)];
    let kv: HashMap<&str, &str> = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect();
    let num = |k: &str| kv.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let secs = |k: &str| {
        kv.get(k)
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|t| t.is_finite())
    };
    let killed_by = match kv.get("killed").copied() {
        Some("timeout") => Some(KillReason::Timeout),
        Some("output") => Some(KillReason::Output),
        _ => None,
    };
    GuestResult {
        error: kv
            .get("error")
            .map(|e| e.chars().take(500).collect::<String>()),
        rc: kv.get("rc").and_then(|v| v.parse::<i32>().ok()),
        killed_by,
        oom_kill: num("oom_kill") > 0,
        pids_max: num("pids_max") > 0,
        cpu_ms: num("cpu_usec") / 1000,
        memory_peak: num("memory_peak"),
        t_init: secs("t_init"),
        t_start: secs("t_start"),
        t_end: secs("t_end"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_keeps_every_byte_a_literal() {
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$(x)`y`"), "'$(x)`y`'");
    }

    #[test]
    fn cmd_sh_refuses_names_the_shell_cannot_carry() {
        let mut spec = crate::capability::tests::spec();
        spec.env = vec![("A-B".into(), "x".into())];
        assert!(cmd_sh(&spec).unwrap_err().contains("A-B"));
        spec.env = vec![("OK".into(), "x\0y".into())];
        assert!(cmd_sh(&spec).unwrap_err().contains("NUL"));
        spec.env = vec![("OK".into(), "it's".into())];
        let s = cmd_sh(&spec).unwrap();
        assert!(s.contains(r"export OK='it'\''s'"), "{s}");
        assert!(s.ends_with("exec 'python3' '-c' 'print(1)'\n"), "{s}");
    }

    #[test]
    fn allowlist_mode_starts_the_relay_and_points_programs_at_it() {
        let mut spec = crate::capability::tests::spec();
        spec.env = vec![("HTTP_PROXY".into(), "http://elsewhere:1".into())];
        assert!(spec_sh(&spec, &[], &[]).unwrap().contains("EGRESS=0\n"));
        assert!(!cmd_sh(&spec).unwrap().contains("127.0.0.1:3128"));
        spec.network = crate::NetworkSpec::Proxy {
            socket: "/state/proxy/r1.sock".into(),
        };
        assert!(spec_sh(&spec, &[], &[]).unwrap().contains("EGRESS=1\n"));
        let s = cmd_sh(&spec).unwrap();
        assert!(
            s.contains("export HTTP_PROXY='http://127.0.0.1:3128'"),
            "{s}"
        );
        assert!(
            s.contains("export all_proxy='socks5h://127.0.0.1:1080'"),
            "{s}"
        );
        assert!(
            !s.contains("elsewhere"),
            "the spec's own proxy is replaced: {s}"
        );
    }

    #[test]
    fn the_views_mounts_survive_the_shell_byte_for_byte() {
        let spec = crate::capability::tests::spec();
        let odd = "/opt/it's $(x) \"q\"";
        let s = spec_sh(
            &spec,
            &[("/lib".into(), "usr/lib".into())],
            &[Share {
                tag: "r1".into(),
                src: odd.into(),
                dst: odd.into(),
            }],
        )
        .unwrap();
        let script = format!(
            "{s}\nlink() {{ printf 'L[%s][%s]' \"$1\" \"$2\"; }}\n\
             share() {{ printf 'S[%s][%s]' \"$1\" \"$2\"; }}\neval \"$SHARES\""
        );
        let out = std::process::Command::new("sh")
            .args(["-c", &script])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("L[/lib][usr/lib]S[r1][{odd}]")
        );
    }

    #[test]
    fn results_parse_leniently() {
        let r =
            parse_result("rc=3\nkilled=timeout\noom_kill=0\ncpu_usec=2500\nt_start=1.5\ngarbage\n");
        assert_eq!(r.rc, Some(3));
        assert_eq!(r.killed_by, Some(KillReason::Timeout));
        assert_eq!(r.cpu_ms, 2);
        assert_eq!(r.t_start, Some(1.5));
        assert!(!r.oom_kill);
        assert_eq!(parse_result("rc=x\nt_end=NaN").rc, None);
        assert_eq!(
            parse_result("error=mount the workspace").error.as_deref(),
            Some("mount the workspace")
        );
    }
}
