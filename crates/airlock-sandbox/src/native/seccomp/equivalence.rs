//! The merge and the search tree changed nothing in what is allowed: the stacks
//! of filters installed before (the set-id filter, then the main filter, under
//! netwatch in proxy mode), as assembled at commit f2dc4e2 and kept in
//! `testdata/seccomp/`, answer exactly as the programs built now, for every
//! syscall number up to past the table's end, x32 and foreign-architecture
//! entries, and argument values around every constant the filters compare.

use super::assembler::interp::{self, Data};
use super::policy::{SetIdRule, SocketRule, SOCK_PACKET, TIOCLINUX, TIOCSTI};
use super::table::{AUDIT_ARCH_X86_64, MAX_NR, X32_SYSCALL_BIT};
use super::{assembler, compile};

fn parse(text: &str) -> Vec<libc::sock_filter> {
    let hex = |s: &str| u32::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            libc::sock_filter {
                code: hex(f[0]) as u16,
                jt: f[1].parse().unwrap(),
                jf: f[2].parse().unwrap(),
                k: hex(f[3]),
            }
        })
        .collect()
}

macro_rules! reference {
    ($name:literal) => {
        parse(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/seccomp/",
            $name,
            ".bpf.txt"
        )))
    };
}

/// Argument values worth trying: every constant the filters compare or mask
/// with, its neighbours, and the same with garbage in the high half.
fn values() -> Vec<u64> {
    let mut v: Vec<u64> = vec![
        0,
        1,
        2,
        3,
        0xf,
        0o755,
        0o4000,
        0o2000,
        0o6000,
        0o4755,
        0o2755,
        0o1777,
        0o10_4755, // S_IFREG | 04755 (mknod)
        TIOCSTI.into(),
        TIOCLINUX.into(),
        libc::TIOCGWINSZ,
        SOCK_PACKET.into(),
        libc::SOCK_RAW as u64,
        libc::SOCK_DGRAM as u64,
        (libc::SOCK_STREAM | libc::SOCK_CLOEXEC) as u64,
        (libc::SOCK_RAW | libc::SOCK_NONBLOCK) as u64,
        (SOCK_PACKET | libc::SOCK_CLOEXEC as u32).into(),
        libc::SIGCHLD as u64,
        (libc::CLONE_VM | libc::CLONE_THREAD | libc::CLONE_SIGHAND) as u64,
        0x0040_0000, // ADDR_NO_RANDOMIZE
        0xffff_ffff,
        0x8000_0000,
    ];
    for f in [
        libc::AF_UNIX,
        libc::AF_INET,
        libc::AF_INET6,
        libc::AF_NETLINK,
        libc::AF_PACKET,
        libc::AF_VSOCK,
        libc::AF_BLUETOOTH,
        libc::NETLINK_AUDIT,
    ] {
        v.push(f as u64);
    }
    for flag in [
        libc::CLONE_NEWNS,
        libc::CLONE_NEWCGROUP,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWNET,
    ] {
        v.push((flag | libc::SIGCHLD) as u64);
    }
    let low: Vec<u64> = v.clone();
    for x in low {
        v.push(x | (1 << 32));
        v.push(x | (0xdead_beef << 32));
    }
    v.push(1 << 32);
    v
}

/// Programs in install order.
type Stack = Vec<Vec<libc::sock_filter>>;

/// Every filter stack airlock installs: what, before, now.
fn stacks() -> Vec<(&'static str, Stack, Stack)> {
    let setid = reference!("setid");
    let netwatch = reference!("netwatch");
    let new = |rule| compile(rule, SetIdRule::Refuse).unwrap().filter;
    vec![
        (
            "network none",
            vec![setid.clone(), reference!("main-unix_only")],
            vec![new(SocketRule::UnixOnly)],
        ),
        (
            "network open",
            vec![setid.clone(), reference!("main-any")],
            vec![new(SocketRule::Any)],
        ),
        (
            "network allowlist (proxy; netwatch installed by PID 1 first)",
            vec![
                netwatch.clone(),
                setid.clone(),
                reference!("main-unix_and_inet"),
            ],
            vec![
                crate::native::netwatch::program().unwrap(),
                new(SocketRule::UnixAndInet),
            ],
        ),
        (
            "netwatch alone (PID 1's relay threads)",
            vec![netwatch],
            vec![crate::native::netwatch::program().unwrap()],
        ),
        (
            "wasm helper",
            vec![reference!("main-unix_only")],
            vec![
                compile(SocketRule::UnixOnly, SetIdRule::Leave)
                    .unwrap()
                    .filter,
            ],
        ),
    ]
}

fn check(
    what: &str,
    old: &[&[libc::sock_filter]],
    new: &[&[libc::sock_filter]],
    d: &Data,
    seen: &mut usize,
) {
    *seen += 1;
    let (o, n) = (interp::stacked(old, d), interp::stacked(new, d));
    assert_eq!(o, n, "{what}: {d:x?}: before {o:#x}, now {n:#x}");
}

#[test]
fn assembled_filters_decide_as_the_stacks_they_replace() {
    let vals = values();
    let mut seen = 0usize;
    for (what, old, new) in stacks() {
        let old: Vec<&[libc::sock_filter]> = old.iter().map(Vec::as_slice).collect();
        let new: Vec<&[libc::sock_filter]> = new.iter().map(Vec::as_slice).collect();
        let mut numbers: Vec<u32> = (0..=MAX_NR + 64).collect();
        numbers.extend((0..=MAX_NR + 1).map(|n| n | X32_SYSCALL_BIT));
        numbers.extend([X32_SYSCALL_BIT - 1, 0x8000_0000, u32::MAX - 1, u32::MAX]);
        for &n in &numbers {
            for arch in [AUDIT_ARCH_X86_64, 0x4000_0003, 0xc000_00b7, 0] {
                let d = Data {
                    nr: n,
                    arch,
                    args: [0; 6],
                };
                check(what, &old, &new, &d, &mut seen);
            }
            // Does any program of either stack look at this syscall's arguments?
            let zero = Data {
                nr: n,
                arch: AUDIT_ARCH_X86_64,
                args: [0; 6],
            };
            let reads = old
                .iter()
                .chain(&new)
                .any(|p| interp::run(p, &zero).read_args);
            if !reads {
                // One argument set is enough, but try a few anyway.
                for &v in &vals[..4] {
                    let d = Data {
                        args: [v; 6],
                        ..zero
                    };
                    check(what, &old, &new, &d, &mut seen);
                }
                continue;
            }
            for i in 0..6 {
                for &v in &vals {
                    let mut d = zero;
                    d.args[i] = v;
                    check(what, &old, &new, &d, &mut seen);
                }
            }
            for (i, j) in [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)] {
                for &a in &vals {
                    for &b in &vals {
                        let mut d = zero;
                        d.args[i] = a;
                        d.args[j] = b;
                        check(what, &old, &new, &d, &mut seen);
                    }
                }
            }
        }
    }
    assert!(seen > 1_000_000, "{seen} cases");
}

/// Every syscall whose verdict does not depend on its arguments reaches it
/// without loading one, so the kernel's action cache answers the allowed ones
/// (stat, read, mmap, ...) without running the filter; the old set-id filter
/// had the same property, this keeps it.
#[test]
fn fixed_verdicts_never_read_arguments() {
    for rule in [
        SocketRule::UnixOnly,
        SocketRule::UnixAndInet,
        SocketRule::Any,
    ] {
        for setid in [SetIdRule::Refuse, SetIdRule::Leave] {
            let filter = super::policy::sandbox_filter(rule, setid);
            let prog = filter.assemble().unwrap();
            for n in (0..=MAX_NR + 64).chain([X32_SYSCALL_BIT | 1, u32::MAX]) {
                let run = interp::run(
                    &prog,
                    &Data {
                        nr: n,
                        arch: AUDIT_ARCH_X86_64,
                        args: [0; 6],
                    },
                );
                match filter.action_of(n) {
                    Some(a) => {
                        assert!(!run.read_args, "{rule:?}/{setid:?}: nr {n} reads arguments");
                        assert_eq!(run.ret, a.ret(), "{rule:?}/{setid:?}: nr {n}");
                    }
                    None => assert!(run.read_args, "nr {n} should inspect its arguments"),
                }
            }
        }
    }
    assert_eq!(
        super::policy::sandbox_filter(SocketRule::Any, SetIdRule::Refuse)
            .action_of(libc::SYS_newfstatat as u32),
        Some(assembler::Action::Allow)
    );
}

/// The search tree reaches any verdict in a bounded number of steps: the
/// longest path through the sandbox's filter, arguments included.
#[test]
fn every_verdict_is_a_few_comparisons_away() {
    let prog = compile(SocketRule::UnixAndInet, SetIdRule::Refuse)
        .unwrap()
        .filter;
    let depth = |n: u32| {
        interp::run(
            &prog,
            &Data {
                nr: n,
                arch: AUDIT_ARCH_X86_64,
                args: [0; 6],
            },
        )
        .steps
    };
    let worst = (0..=MAX_NR + 64).map(depth).max().unwrap();
    assert!(worst <= 24, "longest path {worst} instructions");
    // Before, an allowed syscall the kernel could not cache (openat with a
    // plain mode) walked 5 + 8 * 7 instructions of the set-id filter and then
    // the main filter's chain.
}
