//! The sandbox's filesystem view as data: an ordered list of setup
//! operations ([`ViewOp`]) built from the [`SandboxSpec`] by [`plan`].
//!
//! Every backend shows the same view. The native backend executes the list in
//! one loop (`native::mounts`); the OCI and gVisor backends translate it into
//! an OCI bundle (`oci::bundle`). Building the list needs no privilege, only a
//! look at the host's directories ([`HostFs`]), so it is unit-tested here
//! without root (bubblewrap's list of setup operations is the model).
//!
//! Order matters and is kept: the root's system directories, `/etc`, `/dev`,
//! `/proc`, `/tmp`, the home, the policy's read paths, the workspace,
//! airlock's own state hidden, the write paths, the proxy socket, the hidden
//! paths (last, so that they win over anything bound before).

use crate::{NetworkSpec, SandboxSpec, WorkspaceMode};
use std::path::{Component, Path, PathBuf};

/// System directories bound read-only (or recreated as symlinks).
pub const SYSTEM_DIRS: &[&str] = &["usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"];

/// Host `/etc` entries programs need. Nothing with secrets: no shadow, no ssh
/// keys, no machine-id.
pub const ETC_ENTRIES: &[&str] = &[
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "nsswitch.conf",
    "localtime",
    "timezone",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "alternatives",
    "protocols",
    "services",
    "host.conf",
    "gai.conf",
    "mime.types",
    "os-release",
    "debian_version",
    "profile",
    "bash.bashrc",
    "inputrc",
    "environment",
    "login.defs",
    "python3",
    "python3.11",
    "terminfo",
    "magic",
    "magic.mime",
    "mailcap",
    "xdg",
    "locale.alias",
    "locale.gen",
    "default",
    "pki",
];

/// `/proc` entries remounted read-only.
pub const PROC_READ_ONLY: &[&str] = &["sys", "sysrq-trigger", "irq", "bus", "fs"];
/// `/proc` entries masked (files with /dev/null, directories with an empty tmpfs).
pub const PROC_MASKED: &[&str] = &[
    "kcore",
    "keys",
    "key-users",
    "timer_list",
    "kmsg",
    "sched_debug",
    "latency_stats",
    "timer_stats",
    "kallsyms",
    "vmallocinfo",
    "acpi",
    "scsi",
    "config.gz",
];
/// Device nodes bound from the host.
pub const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

/// The sandbox's `/etc/passwd`: root is the only user with a shell; its home
/// is [`crate::SANDBOX_HOME`].
pub const PASSWD: &str = "root:x:0:0:airlock sandbox:/home/airlock:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
/// The sandbox's `/etc/group`.
pub const GROUP: &str = "root:x:0:\nnogroup:x:65534:\n";
/// `/etc/hosts` when the sandbox has a network namespace of its own.
pub const ISOLATED_HOSTS: &[u8] =
    b"127.0.0.1\tlocalhost airlock\n::1\tlocalhost ip6-localhost ip6-loopback\n";
/// `/etc/resolv.conf` when the sandbox has a network namespace of its own.
pub const ISOLATED_RESOLV: &[u8] = b"# airlock: no network in this sandbox\n";

/// Who owns a fresh tmpfs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// Whoever mounts it (root of the sandbox's view).
    Mounter,
    /// The sandbox's user (the home directory).
    SandboxUser,
}

/// What a fresh tmpfs forbids besides set-uid programs (always forbidden).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TmpfsFlags {
    pub nodev: bool,
    pub noexec: bool,
}

/// One step of the view. Paths are absolute paths inside the sandbox; `src`
/// paths are host paths.
#[derive(Debug, Clone, PartialEq)]
pub enum ViewOp {
    /// A symlink in the (read-only) root.
    Symlink { link: PathBuf, target: PathBuf },
    /// A host directory or file bound read-only, nosuid, nodev.
    BindRo { src: PathBuf, dst: PathBuf },
    /// A host directory or file bound read-write, nosuid, nodev, owned by
    /// sandbox root (idmapped where the backend can).
    BindRw { src: PathBuf, dst: PathBuf },
    /// A file written into the root (read-only once the view is complete).
    WriteFile { path: PathBuf, content: Vec<u8> },
    /// A fresh, size-capped tmpfs.
    Tmpfs {
        path: PathBuf,
        mode: u32,
        size_bytes: u64,
        /// Inode cap; `None` leaves the kernel's default.
        inodes: Option<u64>,
        flags: TmpfsFlags,
        owner: Owner,
    },
    /// A host device node, bound nosuid, noexec.
    Device { path: PathBuf },
    /// A new devpts instance (`newinstance,ptmxmode=0666,mode=0620`).
    Devpts { path: PathBuf },
    /// A fresh procfs for the sandbox's PID namespace.
    Proc { path: PathBuf },
    /// An existing entry of the view made read-only (the riskier `/proc` corners).
    ReadOnly { path: PathBuf },
    /// An existing entry covered: a file by `/dev/null`, a directory by an
    /// empty read-only tmpfs (the leakier `/proc` corners).
    Mask { path: PathBuf },
    /// The workspace at its host path, in the spec's mode; in `rw` mode the
    /// protected paths (relative to the root) stay read-only.
    Workspace {
        root: PathBuf,
        mode: WorkspaceMode,
        protect: Vec<PathBuf>,
    },
    /// The egress proxy's unix socket.
    ProxySocket { src: PathBuf, dst: PathBuf },
    /// A path masked if it is visible in the view (a symlink is masked only
    /// as the final component; a path that is not there is left alone).
    Hide { path: PathBuf },
    /// A directory airlock prepared on the host (the `/etc` of [`split_etc`]),
    /// bound read-only, nosuid, nodev; the native backend attaches the tree
    /// its helper opened and checked, other backends bind `src`.
    Prepared { src: PathBuf, dst: PathBuf },
}

/// What a host path is, as far as the view cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostEntry {
    Missing,
    Dir,
    File,
    Symlink(PathBuf),
    /// A socket, device or fifo (or a symlink that cannot be read).
    Other,
}

/// The view's only look at the host, so that tests can use a fake one.
pub trait HostFs {
    /// What `path` itself is (a symlink is not followed).
    fn entry(&self, path: &Path) -> HostEntry;
    /// Whether `path` exists (symlinks followed).
    fn exists(&self, path: &Path) -> bool;
    /// `path` with every symlink resolved.
    fn canonical(&self, path: &Path) -> Option<PathBuf>;
}

/// The real host.
pub struct RealHost;

impl HostFs for RealHost {
    fn entry(&self, path: &Path) -> HostEntry {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(path) {
                Ok(t) => HostEntry::Symlink(t),
                Err(_) => HostEntry::Other,
            },
            Ok(m) if m.is_dir() => HostEntry::Dir,
            Ok(m) if m.is_file() => HostEntry::File,
            Ok(_) => HostEntry::Other,
            Err(_) => HostEntry::Missing,
        }
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(path).ok()
    }
}

/// A host that looks at each path once: [`plan`] and then [`split_etc`] ask
/// about the same `/etc` entries, and on a cold start each `lstat` is on the
/// critical path. Both also then see the same answer for a path.
pub struct CachedHost<'a> {
    host: &'a dyn HostFs,
    entries: std::cell::RefCell<std::collections::HashMap<PathBuf, HostEntry>>,
}

impl<'a> CachedHost<'a> {
    pub fn new(host: &'a dyn HostFs) -> CachedHost<'a> {
        CachedHost {
            host,
            entries: Default::default(),
        }
    }
}

impl HostFs for CachedHost<'_> {
    fn entry(&self, path: &Path) -> HostEntry {
        if let Some(known) = self.entries.borrow().get(path) {
            return known.clone();
        }
        let seen = self.host.entry(path);
        self.entries
            .borrow_mut()
            .insert(path.to_path_buf(), seen.clone());
        seen
    }

    fn exists(&self, path: &Path) -> bool {
        self.host.exists(path)
    }

    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        self.host.canonical(path)
    }
}

/// What the view needs besides the spec.
#[derive(Debug, Clone)]
pub struct ViewInput<'a> {
    pub spec: &'a SandboxSpec,
    /// The run's entry in the runs directory (`<state>/runs/<request id>`):
    /// airlock's state directory is its grandparent, hidden when it lies
    /// inside the workspace.
    pub run_dir: &'a Path,
    pub passwd: &'a str,
    pub group: &'a str,
}

/// Inodes of a tmpfs of `bytes`: one per 4 KiB page (at least 1024), so that
/// empty files cannot exhaust kernel memory long before the size cap.
pub fn inode_cap(bytes: u64) -> u64 {
    (bytes / 4096).max(1024)
}

/// Whether the spec gives the sandbox a network namespace of its own.
pub fn isolated_network(spec: &SandboxSpec) -> bool {
    !matches!(spec.network, NetworkSpec::Open)
}

fn abs(name: &str) -> PathBuf {
    Path::new("/").join(name)
}

/// The view of `input.spec`, as the list of operations every backend shows.
pub fn plan(input: &ViewInput, host: &dyn HostFs) -> Vec<ViewOp> {
    let spec = input.spec;
    let mut ops = Vec::new();

    // The system directories (merged-usr symlinks stay symlinks).
    for name in SYSTEM_DIRS {
        let host_path = abs(name);
        match host.entry(&host_path) {
            HostEntry::Symlink(target) => ops.push(ViewOp::Symlink {
                link: host_path,
                target,
            }),
            HostEntry::Dir => ops.push(ViewOp::BindRo {
                src: host_path.clone(),
                dst: host_path,
            }),
            _ => {}
        }
    }

    // /etc: a handful of host entries and the generated files.
    let etc = Path::new("/etc");
    for name in ETC_ENTRIES {
        let host_path = etc.join(name);
        match host.entry(&host_path) {
            HostEntry::Symlink(target) => ops.push(ViewOp::Symlink {
                link: host_path,
                target,
            }),
            HostEntry::Dir | HostEntry::File => ops.push(ViewOp::BindRo {
                src: host_path.clone(),
                dst: host_path,
            }),
            _ => {}
        }
    }
    for (name, content) in [
        ("passwd", input.passwd.as_bytes()),
        ("group", input.group.as_bytes()),
        ("hostname", b"airlock\n".as_slice()),
    ] {
        ops.push(ViewOp::WriteFile {
            path: etc.join(name),
            content: content.to_vec(),
        });
    }
    // The only global git configuration (GIT_CONFIG_GLOBAL names it).
    ops.push(ViewOp::WriteFile {
        path: PathBuf::from(crate::GIT_CONFIG_FILE),
        content: spec.git_config.as_bytes().to_vec(),
    });
    if isolated_network(spec) {
        ops.push(ViewOp::WriteFile {
            path: etc.join("hosts"),
            content: ISOLATED_HOSTS.to_vec(),
        });
        ops.push(ViewOp::WriteFile {
            path: etc.join("resolv.conf"),
            content: ISOLATED_RESOLV.to_vec(),
        });
    } else {
        for name in ["hosts", "resolv.conf"] {
            let dst = etc.join(name);
            if let Some(src) = host.canonical(&dst) {
                ops.push(ViewOp::BindRo { src, dst });
            }
        }
    }

    // /dev: a small tmpfs with the harmless devices, its own ptys and shm.
    let dev = Path::new("/dev");
    ops.push(ViewOp::Tmpfs {
        path: dev.to_path_buf(),
        mode: 0o755,
        size_bytes: 64 << 10,
        inodes: None,
        flags: TmpfsFlags {
            nodev: false,
            noexec: true,
        },
        owner: Owner::Mounter,
    });
    for name in DEVICES {
        ops.push(ViewOp::Device {
            path: dev.join(name),
        });
    }
    ops.push(ViewOp::Devpts {
        path: dev.join("pts"),
    });
    ops.push(ViewOp::Symlink {
        link: dev.join("ptmx"),
        target: "pts/ptmx".into(),
    });
    let tmp_bytes = spec.limits.tmp_bytes.max(4096);
    ops.push(ViewOp::Tmpfs {
        path: dev.join("shm"),
        mode: 0o1777,
        size_bytes: tmp_bytes,
        inodes: Some(inode_cap(spec.limits.tmp_bytes)),
        flags: TmpfsFlags {
            nodev: true,
            noexec: true,
        },
        owner: Owner::Mounter,
    });
    for (link, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        ops.push(ViewOp::Symlink {
            link: dev.join(link),
            target: target.into(),
        });
    }

    // /proc, with its riskier corners read-only and its leakier ones masked.
    let proc = Path::new("/proc");
    ops.push(ViewOp::Proc {
        path: proc.to_path_buf(),
    });
    for name in PROC_READ_ONLY {
        ops.push(ViewOp::ReadOnly {
            path: proc.join(name),
        });
    }
    for name in PROC_MASKED {
        ops.push(ViewOp::Mask {
            path: proc.join(name),
        });
    }

    // /tmp and the home: size-capped, made for this run only.
    let capped = |path: PathBuf, mode: u32, owner: Owner| ViewOp::Tmpfs {
        path,
        mode,
        size_bytes: tmp_bytes,
        inodes: Some(inode_cap(spec.limits.tmp_bytes)),
        flags: TmpfsFlags {
            nodev: true,
            noexec: false,
        },
        owner,
    };
    ops.push(capped("/tmp".into(), 0o1777, Owner::Mounter));
    ops.push(capped(
        crate::SANDBOX_HOME.into(),
        0o700,
        Owner::SandboxUser,
    ));

    // Extra read paths first (shallowest first); the workspace and the write
    // paths after, so that they win over a read-only parent.
    let mut reads: Vec<&PathBuf> = spec.read_paths.iter().collect();
    reads.sort_by_key(|p| p.components().count());
    for p in reads {
        if host.exists(p) {
            ops.push(ViewOp::BindRo {
                src: p.clone(),
                dst: p.clone(),
            });
        }
    }

    let ws = &spec.workspace;
    ops.push(ViewOp::Workspace {
        root: ws.root.clone(),
        mode: ws.mode,
        protect: ws.protect.clone(),
    });
    // airlock's own state (audit log, other runs) is never visible, even when
    // it lies inside the workspace.
    if let Some(state) = input.run_dir.parent().and_then(Path::parent) {
        if state.starts_with(&ws.root) {
            ops.push(ViewOp::Hide {
                path: state.to_path_buf(),
            });
        }
    }

    let mut writes: Vec<&PathBuf> = spec.write_paths.iter().collect();
    writes.sort_by_key(|p| p.components().count());
    for p in writes {
        if host.exists(p) {
            ops.push(ViewOp::BindRw {
                src: p.clone(),
                dst: p.clone(),
            });
        }
    }

    if let NetworkSpec::Proxy { socket } = &spec.network {
        ops.push(ViewOp::ProxySocket {
            src: socket.clone(),
            dst: crate::relay::SOCKET_IN_SANDBOX.into(),
        });
    }

    for p in &spec.hide_paths {
        ops.push(ViewOp::Hide { path: p.clone() });
    }
    ops
}

/// One entry of a prepared `/etc` (see [`split_etc`]), relative to `/etc`.
#[derive(Debug, Clone, PartialEq)]
pub enum EtcEntry {
    /// A host file, copied with its mode, owner and times.
    Copy { rel: PathBuf, src: PathBuf },
    /// A symlink, as the host has it.
    Symlink { rel: PathBuf, target: PathBuf },
    /// A file airlock writes (passwd, group, git config, ...).
    File { rel: PathBuf, content: Vec<u8> },
    /// An empty directory or file that a live bind covers (a host directory,
    /// or a file bound from elsewhere, such as a resolved `resolv.conf`).
    MountPoint { rel: PathBuf, dir: bool },
}

/// A view whose `/etc` is one prepared directory instead of one operation per
/// entry: what that directory holds, and the view around it.
#[derive(Debug, Clone, PartialEq)]
pub struct EtcSplit {
    /// The operations before `/etc`.
    pub before: Vec<ViewOp>,
    /// What the prepared directory holds, in the order the view had it.
    pub entries: Vec<EtcEntry>,
    /// Binds that stay live, on mount points the prepared directory holds.
    pub live: Vec<ViewOp>,
    /// The operations after `/etc`.
    pub after: Vec<ViewOp>,
}

impl EtcSplit {
    /// The view with `/etc` bound read-only from `prepared` (a host path to the
    /// directory built from [`EtcSplit::entries`]), then the live binds on it.
    pub fn join(self, prepared: PathBuf) -> Vec<ViewOp> {
        let mut ops = self.before;
        ops.push(ViewOp::Prepared {
            src: prepared,
            dst: "/etc".into(),
        });
        ops.extend(self.live);
        ops.extend(self.after);
        ops
    }
}

/// The path an operation makes or changes in the view.
fn target_of(op: &ViewOp) -> &Path {
    match op {
        ViewOp::Symlink { link, .. } => link,
        ViewOp::BindRo { dst, .. } | ViewOp::BindRw { dst, .. } => dst,
        ViewOp::ProxySocket { dst, .. } | ViewOp::Prepared { dst, .. } => dst,
        ViewOp::WriteFile { path, .. }
        | ViewOp::Tmpfs { path, .. }
        | ViewOp::Device { path }
        | ViewOp::Devpts { path }
        | ViewOp::Proc { path }
        | ViewOp::ReadOnly { path }
        | ViewOp::Mask { path }
        | ViewOp::Hide { path } => path,
        ViewOp::Workspace { root, .. } => root,
    }
}

/// Splits the `/etc` part out of `ops` (the consecutive operations under
/// `/etc` that [`plan`] makes), so that it can be served by one bind of a
/// prepared directory. `None` when that would change the view: no `/etc` part,
/// a path that is not plain (`..`), or a later operation that creates
/// something under `/etc` (the prepared directory is bound read-only, so it
/// could not; masking or hiding what is already there still works).
pub fn split_etc(ops: Vec<ViewOp>, host: &dyn HostFs) -> Option<EtcSplit> {
    let etc = Path::new("/etc");
    let under = |op: &ViewOp| target_of(op).starts_with(etc);
    let start = ops.iter().position(under)?;
    let end = start + ops[start..].iter().take_while(|o| under(o)).count();
    let creates_later = ops[end..].iter().any(|o| {
        under(o)
            && !matches!(
                o,
                ViewOp::Hide { .. } | ViewOp::Mask { .. } | ViewOp::ReadOnly { .. }
            )
    });
    if creates_later {
        return None;
    }
    let mut ops = ops;
    let after = ops.split_off(end);
    let part = ops.split_off(start);
    let mut entries = Vec::new();
    let mut live = Vec::new();
    for op in part {
        let rel = relative_to_etc(target_of(&op))?;
        match op {
            ViewOp::Symlink { target, .. } => entries.push(EtcEntry::Symlink { rel, target }),
            ViewOp::WriteFile { content, .. } => entries.push(EtcEntry::File { rel, content }),
            ViewOp::BindRo { src, dst } => match host.entry(&src) {
                HostEntry::File if src == dst => entries.push(EtcEntry::Copy { rel, src }),
                HostEntry::Dir => {
                    entries.push(EtcEntry::MountPoint { rel, dir: true });
                    live.push(ViewOp::BindRo { src, dst });
                }
                _ => {
                    entries.push(EtcEntry::MountPoint { rel, dir: false });
                    live.push(ViewOp::BindRo { src, dst });
                }
            },
            // Nothing else is made under /etc by `plan`.
            _ => return None,
        }
    }
    Some(EtcSplit {
        before: ops,
        entries,
        live,
        after,
    })
}

/// `path` relative to `/etc`, if it lies strictly below it with plain components.
fn relative_to_etc(path: &Path) -> Option<PathBuf> {
    let rel = path.strip_prefix("/etc").ok()?;
    let plain = rel
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    (plain && !rel.as_os_str().is_empty()).then(|| rel.to_path_buf())
}

/// The components of an absolute path, refusing `..`.
pub fn relative_inside(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(n) => out.push(n),
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A host with merged /usr, a little of /etc and a few extra paths.
    struct FakeHost(HashMap<PathBuf, HostEntry>);

    impl FakeHost {
        fn new() -> FakeHost {
            let mut m = HashMap::new();
            m.insert("/usr".into(), HostEntry::Dir);
            m.insert("/bin".into(), HostEntry::Symlink("usr/bin".into()));
            m.insert("/lib".into(), HostEntry::Symlink("usr/lib".into()));
            m.insert("/etc/ssl".into(), HostEntry::Dir);
            m.insert(
                "/etc/localtime".into(),
                HostEntry::Symlink("/usr/share/zoneinfo/UTC".into()),
            );
            m.insert("/etc/ld.so.cache".into(), HostEntry::File);
            m.insert("/etc/resolv.conf".into(), HostEntry::File);
            m.insert("/etc/hosts".into(), HostEntry::File);
            m.insert("/etc/python3".into(), HostEntry::Other);
            m.insert("/opt/data".into(), HostEntry::Dir);
            m.insert("/srv/out".into(), HostEntry::Dir);
            FakeHost(m)
        }
    }

    /// Counts the lookups that reach the host under it.
    struct Counting<'a>(&'a FakeHost, std::cell::Cell<usize>);

    impl HostFs for Counting<'_> {
        fn entry(&self, path: &Path) -> HostEntry {
            self.1.set(self.1.get() + 1);
            self.0.entry(path)
        }
        fn exists(&self, path: &Path) -> bool {
            self.0.exists(path)
        }
        fn canonical(&self, path: &Path) -> Option<PathBuf> {
            self.0.canonical(path)
        }
    }

    #[test]
    fn a_cached_host_looks_at_each_path_once_and_changes_no_answer() {
        let host = FakeHost::new();
        let input = ViewInput {
            spec: &spec(),
            run_dir: Path::new("/var/lib/airlock/runs/t"),
            passwd: PASSWD,
            group: GROUP,
        };
        let direct = Counting(&host, Default::default());
        let ops = plan(&input, &direct);
        let split = split_etc(ops.clone(), &direct).expect("an /etc part");
        let counting = Counting(&host, Default::default());
        let cached = CachedHost::new(&counting);
        let cached_ops = plan(&input, &cached);
        let cached_split = split_etc(cached_ops.clone(), &cached).expect("an /etc part");
        assert_eq!(cached_ops, ops);
        assert_eq!(cached_split.entries, split.entries);
        assert_eq!(cached_split.join("/p".into()), split.join("/p".into()));
        let distinct = cached.entries.borrow().len();
        assert_eq!(counting.1.get(), distinct, "one lookup per path");
        assert!(direct.1.get() > distinct, "plan and split share paths");
    }

    impl HostFs for FakeHost {
        fn entry(&self, path: &Path) -> HostEntry {
            self.0.get(path).cloned().unwrap_or(HostEntry::Missing)
        }
        fn exists(&self, path: &Path) -> bool {
            self.0.contains_key(path)
        }
        fn canonical(&self, path: &Path) -> Option<PathBuf> {
            self.exists(path)
                .then(|| Path::new("/real").join(path.file_name().unwrap_or_default()))
        }
    }

    fn spec() -> SandboxSpec {
        SandboxSpec {
            request_id: "t".into(),
            argv: vec!["true".into()],
            cwd: "/w".into(),
            env: vec![],
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
                timeout_ms: 1000,
                cpu_time_ms: 1000,
                memory_bytes: 512 << 20,
                pids: 64,
                cpus: 1.0,
                output_bytes: 1 << 20,
                tmp_bytes: 64 << 20,
                file_size_bytes: 1 << 20,
                open_files: 256,
            },
            read_paths: vec!["/opt/data".into(), "/opt/missing".into()],
            write_paths: vec!["/srv/out".into()],
            hide_paths: vec!["/w/secret".into()],
            stdin: None,
            limit_enforcement: Default::default(),
            git_config: "[user]\n".into(),
        }
    }

    fn ops_of(spec: &SandboxSpec, run_dir: &str) -> Vec<ViewOp> {
        plan(
            &ViewInput {
                spec,
                run_dir: Path::new(run_dir),
                passwd: PASSWD,
                group: GROUP,
            },
            &FakeHost::new(),
        )
    }

    fn position(ops: &[ViewOp], pred: impl Fn(&ViewOp) -> bool) -> usize {
        ops.iter().position(pred).expect("operation present")
    }

    #[test]
    fn system_dirs_are_bound_or_recreated_as_symlinks_and_missing_ones_skipped() {
        let ops = ops_of(&spec(), "/var/lib/airlock/runs/t");
        assert_eq!(
            ops[..3],
            [
                ViewOp::BindRo {
                    src: "/usr".into(),
                    dst: "/usr".into()
                },
                ViewOp::Symlink {
                    link: "/bin".into(),
                    target: "usr/bin".into()
                },
                ViewOp::Symlink {
                    link: "/lib".into(),
                    target: "usr/lib".into()
                },
            ]
        );
        // /etc: files and directories bound, symlinks kept, sockets skipped.
        assert!(ops.contains(&ViewOp::BindRo {
            src: "/etc/ssl".into(),
            dst: "/etc/ssl".into()
        }));
        assert!(ops.contains(&ViewOp::Symlink {
            link: "/etc/localtime".into(),
            target: "/usr/share/zoneinfo/UTC".into()
        }));
        assert!(!ops.iter().any(|o| matches!(o,
            ViewOp::BindRo { src, .. } if src == Path::new("/etc/python3"))));
        assert!(ops.contains(&ViewOp::WriteFile {
            path: crate::GIT_CONFIG_FILE.into(),
            content: b"[user]\n".to_vec()
        }));
    }

    #[test]
    fn isolated_network_gets_its_own_hosts_and_open_network_the_hosts_files() {
        let ops = ops_of(&spec(), "/var/lib/airlock/runs/t");
        assert!(ops.contains(&ViewOp::WriteFile {
            path: "/etc/resolv.conf".into(),
            content: ISOLATED_RESOLV.to_vec()
        }));
        let mut open = spec();
        open.network = NetworkSpec::Open;
        let ops = ops_of(&open, "/var/lib/airlock/runs/t");
        assert!(ops.contains(&ViewOp::BindRo {
            src: "/real/resolv.conf".into(),
            dst: "/etc/resolv.conf".into()
        }));
        let mut proxy = spec();
        proxy.network = NetworkSpec::Proxy {
            socket: "/run/p.sock".into(),
        };
        let ops = ops_of(&proxy, "/var/lib/airlock/runs/t");
        assert!(ops.contains(&ViewOp::ProxySocket {
            src: "/run/p.sock".into(),
            dst: crate::relay::SOCKET_IN_SANDBOX.into()
        }));
    }

    #[test]
    fn order_puts_the_workspace_after_read_paths_and_hides_last() {
        let ops = ops_of(&spec(), "/var/lib/airlock/runs/t");
        let dev = position(
            &ops,
            |o| matches!(o, ViewOp::Tmpfs { path, .. } if path == Path::new("/dev")),
        );
        let pts = position(&ops, |o| matches!(o, ViewOp::Devpts { .. }));
        let proc = position(&ops, |o| matches!(o, ViewOp::Proc { .. }));
        let mask = position(
            &ops,
            |o| matches!(o, ViewOp::Mask { path } if path == Path::new("/proc/kcore")),
        );
        let tmp = position(
            &ops,
            |o| matches!(o, ViewOp::Tmpfs { path, .. } if path == Path::new("/tmp")),
        );
        let read = position(
            &ops,
            |o| matches!(o, ViewOp::BindRo { src, .. } if src == Path::new("/opt/data")),
        );
        let ws = position(&ops, |o| matches!(o, ViewOp::Workspace { .. }));
        let write = position(&ops, |o| matches!(o, ViewOp::BindRw { .. }));
        let hide = position(&ops, |o| matches!(o, ViewOp::Hide { .. }));
        assert!(dev < pts && pts < proc && proc < mask && mask < tmp);
        assert!(tmp < read && read < ws && ws < write && write < hide);
        assert_eq!(hide, ops.len() - 1);
        // A read path that does not exist is not shown.
        assert!(!ops.iter().any(|o| matches!(o,
            ViewOp::BindRo { src, .. } if src == Path::new("/opt/missing"))));
        // No state directory inside the workspace: nothing else hidden.
        assert_eq!(
            ops.iter()
                .filter(|o| matches!(o, ViewOp::Hide { .. }))
                .count(),
            1
        );
    }

    #[test]
    fn tmpfs_caps_come_from_the_spec_and_the_home_belongs_to_the_sandbox_user() {
        let ops = ops_of(&spec(), "/var/lib/airlock/runs/t");
        let home = ops
            .iter()
            .find(|o| matches!(o, ViewOp::Tmpfs { path, .. } if path == Path::new(crate::SANDBOX_HOME)))
            .unwrap();
        assert_eq!(
            home,
            &ViewOp::Tmpfs {
                path: crate::SANDBOX_HOME.into(),
                mode: 0o700,
                size_bytes: 64 << 20,
                inodes: Some(16384),
                flags: TmpfsFlags {
                    nodev: true,
                    noexec: false
                },
                owner: Owner::SandboxUser,
            }
        );
        assert_eq!(inode_cap(0), 1024);
    }

    #[test]
    fn state_inside_the_workspace_is_hidden_right_after_it() {
        let ops = ops_of(&spec(), "/w/.airlock/runs/t");
        let ws = position(&ops, |o| matches!(o, ViewOp::Workspace { .. }));
        assert_eq!(
            ops[ws + 1],
            ViewOp::Hide {
                path: "/w/.airlock".into()
            }
        );
    }

    #[test]
    fn etc_splits_into_copies_symlinks_written_files_and_live_binds() {
        let mut host = FakeHost::new();
        host.0.insert("/etc/nsswitch.conf".into(), HostEntry::File);
        let mut open = spec();
        open.network = NetworkSpec::Open;
        let ops = plan(
            &ViewInput {
                spec: &open,
                run_dir: Path::new("/var/lib/airlock/runs/t"),
                passwd: PASSWD,
                group: GROUP,
            },
            &host,
        );
        let split = split_etc(ops.clone(), &host).expect("an /etc part");
        assert!(split.entries.contains(&EtcEntry::Copy {
            rel: "ld.so.cache".into(),
            src: "/etc/ld.so.cache".into()
        }));
        assert!(split.entries.contains(&EtcEntry::Symlink {
            rel: "localtime".into(),
            target: "/usr/share/zoneinfo/UTC".into()
        }));
        assert!(split.entries.contains(&EtcEntry::File {
            rel: "airlock/gitconfig".into(),
            content: b"[user]\n".to_vec()
        }));
        // A host directory and a file bound from elsewhere stay live binds,
        // on mount points the prepared directory holds.
        assert!(split.entries.contains(&EtcEntry::MountPoint {
            rel: "ssl".into(),
            dir: true
        }));
        assert!(split.entries.contains(&EtcEntry::MountPoint {
            rel: "resolv.conf".into(),
            dir: false
        }));
        assert_eq!(
            split.live,
            [
                ViewOp::BindRo {
                    src: "/etc/ssl".into(),
                    dst: "/etc/ssl".into()
                },
                ViewOp::BindRo {
                    src: "/real/hosts".into(),
                    dst: "/etc/hosts".into()
                },
                ViewOp::BindRo {
                    src: "/real/resolv.conf".into(),
                    dst: "/etc/resolv.conf".into()
                },
            ]
        );
        // Joined: everything else in its place, /etc one bind where it began.
        let joined = split.join("/cache/etc-x".into());
        let etc_at = ops
            .iter()
            .position(|o| target_of(o).starts_with("/etc"))
            .unwrap();
        assert_eq!(joined[..etc_at], ops[..etc_at]);
        assert_eq!(
            joined[etc_at],
            ViewOp::Prepared {
                src: "/cache/etc-x".into(),
                dst: "/etc".into()
            }
        );
        assert!(!joined[etc_at + 4..]
            .iter()
            .any(|o| target_of(o).starts_with("/etc")));
        assert_eq!(joined.last(), ops.last());
    }

    #[test]
    fn etc_is_not_split_when_a_later_operation_creates_something_in_it() {
        let host = FakeHost::new();
        let mut s = spec();
        s.read_paths = vec!["/etc/extra".into()];
        let mut host2 = FakeHost::new();
        host2.0.insert("/etc/extra".into(), HostEntry::Dir);
        let ops = ops_of(&s, "/var/lib/airlock/runs/t");
        // Not on this host: nothing is bound there, so the split is fine.
        assert!(split_etc(ops, &host).is_some());
        let ops = plan(
            &ViewInput {
                spec: &s,
                run_dir: Path::new("/var/lib/airlock/runs/t"),
                passwd: PASSWD,
                group: GROUP,
            },
            &host2,
        );
        assert!(split_etc(ops, &host2).is_none());
        // Hiding something already in /etc is fine (a mount over an entry).
        let mut hide = spec();
        hide.hide_paths = vec!["/etc/ssl/private".into()];
        assert!(split_etc(ops_of(&hide, "/var/lib/airlock/runs/t"), &host).is_some());
        // A workspace under /etc would need a mount point in it.
        let mut ws = spec();
        ws.workspace.root = "/etc/project".into();
        assert!(split_etc(ops_of(&ws, "/var/lib/airlock/runs/t"), &host).is_none());
    }
}
