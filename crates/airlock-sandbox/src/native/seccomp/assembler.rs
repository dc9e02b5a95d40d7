//! The one classic-BPF builder every seccomp filter of airlock goes through (the
//! sandbox's filter, the wasm helper's, netwatch's user-notification filter).
//!
//! Two levels:
//! * [`Asm`]: instructions with forward jumps to labels, resolved and
//!   range-checked (conditional offsets are 8-bit) by [`Asm::finish`];
//! * [`Filter`]: a whole program from a decision per syscall number: the
//!   architecture check, then a binary search over the syscall numbers (about
//!   `log2(ranges)` comparisons to any verdict, whatever its place in the table),
//!   then the verdict: a return, or a body that inspects arguments.
//!
//! Every path through a program loads only the syscall number and the
//! architecture before the verdict of a syscall whose verdict does not depend
//! on its arguments, and uses only instructions the kernel's seccomp action
//! cache can emulate (`LD W ABS`, `JEQ/JGE/JSET K`, `JA`, `RET K`): the kernel
//! then skips the filter for every syscall that is always allowed.

use super::table::{self, OFF_ARCH, OFF_NR};
use crate::SandboxError;

/// What a filter answers for a syscall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    Allow,
    /// Fail the syscall with this errno.
    Errno(i32),
    /// Kill the whole process (SIGSYS).
    KillProcess,
    /// Hand the syscall to the listener of a `SECCOMP_FILTER_FLAG_NEW_LISTENER`
    /// filter.
    UserNotif,
}

pub(crate) const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
pub(crate) const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
pub(crate) const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;
pub(crate) const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;

impl Action {
    /// The `SECCOMP_RET_*` value of a `RET K`.
    pub const fn ret(self) -> u32 {
        match self {
            Action::Allow => SECCOMP_RET_ALLOW,
            Action::Errno(e) => SECCOMP_RET_ERRNO | (e as u32 & 0xffff),
            Action::KillProcess => SECCOMP_RET_KILL_PROCESS,
            Action::UserNotif => SECCOMP_RET_USER_NOTIF,
        }
    }
}

// BPF opcodes.
pub(crate) const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
pub(crate) const ALU_AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
pub(crate) const JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
pub(crate) const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
pub(crate) const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
pub(crate) const JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
pub(crate) const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// The kernel's limit on a filter's length.
pub const MAX_INSNS: usize = 4096;

/// A jump target: either the next instruction or a label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Next,
    Label(Label),
}

/// A position in the program, bound once with [`Asm::bind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label(usize);

enum Insn {
    Stmt {
        code: u16,
        k: u32,
    },
    Jump {
        code: u16,
        k: u32,
        jt: Target,
        jf: Target,
    },
    /// Unconditional jump (32-bit offset).
    Always(Label),
    Bind(Label),
}

/// Instructions with labels. Jumps go forward only (BPF has no backward jumps).
#[derive(Default)]
pub struct Asm {
    insns: Vec<Insn>,
    labels: usize,
}

impl Asm {
    pub fn label(&mut self) -> Label {
        self.labels += 1;
        Label(self.labels - 1)
    }

    pub fn bind(&mut self, label: Label) {
        self.insns.push(Insn::Bind(label));
    }

    /// `A = seccomp_data[offset]` (32 bits).
    pub fn load(&mut self, offset: u32) {
        self.insns.push(Insn::Stmt {
            code: LD_W_ABS,
            k: offset,
        });
    }

    /// `A = low 32 bits of args[i]`: all the kernel uses of an `int` argument,
    /// so garbage in the high half cannot dodge a comparison.
    pub fn load_arg_low(&mut self, i: u32) {
        self.load(table::arg_low(i));
    }

    /// `A = high 32 bits of args[i]`.
    pub fn load_arg_high(&mut self, i: u32) {
        self.load(table::arg_low(i) + 4);
    }

    pub fn and(&mut self, mask: u32) {
        self.insns.push(Insn::Stmt {
            code: ALU_AND_K,
            k: mask,
        });
    }

    pub fn ret(&mut self, action: Action) {
        self.insns.push(Insn::Stmt {
            code: RET_K,
            k: action.ret(),
        });
    }

    /// A conditional jump (`JEQ_K`, `JGE_K`, `JSET_K`): to `jt` if true, else `jf`.
    pub fn jump(&mut self, code: u16, k: u32, jt: Target, jf: Target) {
        self.insns.push(Insn::Jump { code, k, jt, jf });
    }

    /// `if A == k goto jt else goto jf`.
    pub fn jeq(&mut self, k: u32, jt: Target, jf: Target) {
        self.jump(JEQ_K, k, jt, jf);
    }

    pub fn goto(&mut self, label: Label) {
        self.insns.push(Insn::Always(label));
    }

    /// Resolves the labels. Fails (naming the layer) on a jump past 255
    /// instructions or a program longer than the kernel accepts.
    pub fn finish(self) -> Result<Vec<libc::sock_filter>, SandboxError> {
        let internal = |detail: String| SandboxError::Layer {
            layer: super::LAYER,
            detail,
        };
        let mut at = vec![usize::MAX; self.labels];
        let mut pc = 0;
        for insn in &self.insns {
            match insn {
                Insn::Bind(l) => at[l.0] = pc,
                _ => pc += 1,
            }
        }
        let mut out = Vec::with_capacity(pc);
        for insn in &self.insns {
            let here = out.len();
            let dest = |t: Target| -> Result<usize, SandboxError> {
                let dest = match t {
                    Target::Next => here + 1,
                    Target::Label(l) => at[l.0],
                };
                if dest == usize::MAX || dest <= here {
                    return Err(internal("internal: BPF jump to an unbound label".into()));
                }
                Ok(dest - here - 1)
            };
            let short = |t: Target| -> Result<u8, SandboxError> {
                u8::try_from(dest(t)?)
                    .map_err(|_| internal("internal: BPF jump out of range".into()))
            };
            match *insn {
                Insn::Bind(_) => {}
                Insn::Stmt { code, k } => out.push(stmt(code, k)),
                Insn::Jump { code, k, jt, jf } => out.push(libc::sock_filter {
                    code,
                    jt: short(jt)?,
                    jf: short(jf)?,
                    k,
                }),
                Insn::Always(l) => {
                    let k = u32::try_from(dest(Target::Label(l))?)
                        .map_err(|_| internal("internal: BPF jump out of range".into()))?;
                    out.push(stmt(JA, k));
                }
            }
        }
        if out.len() > MAX_INSNS {
            return Err(internal(format!(
                "filter has {} instructions (max {MAX_INSNS})",
                out.len()
            )));
        }
        Ok(out)
    }
}

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

/// A verdict for a syscall number.
pub enum Verdict {
    /// The same action whatever the arguments.
    Always(Action),
    /// Code that inspects the arguments and returns on every path. It starts
    /// with the syscall number in A and must load what it compares.
    Args(Box<dyn Fn(&mut Asm)>),
}

/// A whole filter: the architecture check, one verdict per syscall number (or
/// range of numbers), a default for the rest. [`Filter::assemble`] turns it
/// into a binary search over the syscall numbers.
pub struct Filter {
    arch: u32,
    foreign_arch: Action,
    default: Action,
    /// `(first, last, verdict)`, inclusive ranges.
    rules: Vec<(u32, u32, Verdict)>,
}

/// A run of syscall numbers with one verdict, as laid out in the search tree.
struct Span<'a> {
    first: u32,
    verdict: SpanVerdict<'a>,
}

#[derive(Clone, Copy)]
enum SpanVerdict<'a> {
    Always(Action),
    Args(&'a dyn Fn(&mut Asm)),
}

impl Filter {
    /// A filter for syscalls of `arch` (`AUDIT_ARCH_*`); calls made through any
    /// other architecture's entry get `foreign_arch`, unlisted numbers `default`.
    pub fn new(arch: u32, foreign_arch: Action, default: Action) -> Filter {
        Filter {
            arch,
            foreign_arch,
            default,
            rules: Vec::new(),
        }
    }

    /// The verdict for one syscall number.
    pub fn set(&mut self, nr: u32, verdict: Verdict) {
        self.set_range(nr, nr, verdict);
    }

    /// The verdict for every number from `first` to `last` inclusive.
    pub fn set_range(&mut self, first: u32, last: u32, verdict: Verdict) {
        self.rules.push((first, last, verdict));
    }

    /// The fixed verdict for `nr`, or `None` when it depends on the arguments.
    pub fn action_of(&self, nr: u32) -> Option<Action> {
        match self.rules.iter().find(|(f, l, _)| (*f..=*l).contains(&nr)) {
            None => Some(self.default),
            Some((_, _, Verdict::Always(a))) => Some(*a),
            Some((_, _, Verdict::Args(_))) => None,
        }
    }

    /// The BPF program. Fails (naming the layer) if two rules cover the same
    /// number or the program does not fit the kernel's limits.
    pub fn assemble(&self) -> Result<Vec<libc::sock_filter>, SandboxError> {
        let spans = self.spans()?;
        // Short conditional jumps first; a tree too large for 8-bit offsets
        // gets an unconditional trampoline on each far branch instead.
        match self.emit(&spans, false).finish() {
            Ok(p) => Ok(p),
            Err(_) => self.emit(&spans, true).finish(),
        }
    }

    /// The number line from 0 to `u32::MAX` cut into spans, neighbours with the
    /// same fixed action merged.
    fn spans(&self) -> Result<Vec<Span<'_>>, SandboxError> {
        let mut rules: Vec<&(u32, u32, Verdict)> = self.rules.iter().collect();
        rules.sort_by_key(|(first, _, _)| *first);
        let mut spans: Vec<Span> = Vec::new();
        fn push<'a>(spans: &mut Vec<Span<'a>>, first: u32, verdict: SpanVerdict<'a>) {
            if let (Some(last), SpanVerdict::Always(a)) = (spans.last(), verdict) {
                if matches!(last.verdict, SpanVerdict::Always(b) if b == a) {
                    return;
                }
            }
            spans.push(Span { first, verdict });
        }
        let mut next: u64 = 0; // the first number not yet covered
        for (first, last, verdict) in rules {
            if u64::from(*first) < next || last < first {
                return Err(SandboxError::Layer {
                    layer: super::LAYER,
                    detail: format!("internal: syscall {first} has two verdicts in one filter"),
                });
            }
            if u64::from(*first) > next {
                push(&mut spans, next as u32, SpanVerdict::Always(self.default));
            }
            let v = match verdict {
                Verdict::Always(a) => SpanVerdict::Always(*a),
                Verdict::Args(body) => SpanVerdict::Args(body.as_ref()),
            };
            push(&mut spans, *first, v);
            next = u64::from(*last) + 1;
        }
        if next <= u64::from(u32::MAX) {
            push(&mut spans, next as u32, SpanVerdict::Always(self.default));
        }
        Ok(spans)
    }

    fn emit(&self, spans: &[Span], far: bool) -> Asm {
        let mut asm = Asm::default();
        let native = asm.label();
        asm.load(OFF_ARCH);
        asm.jeq(self.arch, Target::Label(native), Target::Next);
        asm.ret(self.foreign_arch);
        asm.bind(native);
        asm.load(OFF_NR);
        tree(&mut asm, spans, far);
        asm
    }
}

/// `spans` is contiguous and A holds a number inside it: the lower half if A is
/// below the middle span's first number, else the upper half.
fn tree(asm: &mut Asm, spans: &[Span], far: bool) {
    if let [span] = spans {
        match span.verdict {
            SpanVerdict::Always(a) => asm.ret(a),
            SpanVerdict::Args(body) => body(asm),
        }
        return;
    }
    let mid = spans.len() / 2;
    let lower = asm.label();
    if far {
        let upper = asm.label();
        asm.jump(JGE_K, spans[mid].first, Target::Label(upper), Target::Next);
        asm.goto(lower);
        asm.bind(upper);
        tree(asm, &spans[mid..], far);
        asm.bind(lower);
        tree(asm, &spans[..mid], far);
    } else {
        asm.jump(JGE_K, spans[mid].first, Target::Next, Target::Label(lower));
        tree(asm, &spans[mid..], far);
        asm.bind(lower);
        tree(asm, &spans[..mid], far);
    }
}

/// A classic-BPF interpreter for the instructions the assembler emits, so tests
/// can ask a program what it answers without installing it.
#[cfg(test)]
pub(crate) mod interp {
    use super::*;

    /// One `struct seccomp_data`.
    #[derive(Debug, Clone, Copy)]
    pub struct Data {
        pub nr: u32,
        pub arch: u32,
        pub args: [u64; 6],
    }

    /// What a program returned, and whether it read an argument on the way
    /// (a syscall whose path reads none is one the kernel's action cache
    /// answers without running the filter, when the answer is ALLOW).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Run {
        pub ret: u32,
        pub read_args: bool,
        /// Instructions executed.
        pub steps: usize,
    }

    fn word(d: &Data, off: u32) -> u32 {
        match off {
            OFF_NR => d.nr,
            OFF_ARCH => d.arch,
            8 | 12 => 0, // instruction pointer: never read by our filters
            o if (16..64).contains(&o) && o % 4 == 0 => {
                let a = d.args[((o - 16) / 8) as usize];
                if o % 8 == 0 {
                    a as u32
                } else {
                    (a >> 32) as u32
                }
            }
            o => panic!("load from offset {o}"),
        }
    }

    pub fn run(prog: &[libc::sock_filter], d: &Data) -> Run {
        let mut a: u32 = 0;
        let mut pc = 0usize;
        let mut read_args = false;
        let mut steps = 0;
        loop {
            let i = prog[pc];
            pc += 1;
            steps += 1;
            match i.code {
                LD_W_ABS => {
                    read_args |= i.k >= 16;
                    a = word(d, i.k);
                }
                ALU_AND_K => {
                    a &= i.k;
                }
                RET_K => {
                    return Run {
                        ret: i.k,
                        read_args,
                        steps,
                    }
                }
                JA => pc += i.k as usize,
                JEQ_K | JGE_K | JSET_K => {
                    let t = match i.code {
                        JEQ_K => a == i.k,
                        JGE_K => a >= i.k,
                        _ => a & i.k != 0,
                    };
                    pc += usize::from(if t { i.jt } else { i.jf });
                }
                // Anything else is also outside what the kernel's action
                // cache emulates (LD nr/arch, ALU AND, JA, JEQ/JGE/JSET, RET).
                c => panic!("instruction {c:#x} not interpreted"),
            }
        }
    }

    /// The kernel's rule for stacked filters (`seccomp_run_filters`): every
    /// filter runs, newest first; the action of highest precedence wins (the
    /// lowest as a signed 32-bit number, so KILL_PROCESS beats everything),
    /// and among equal actions the newest filter's value stays.
    pub fn stacked(install_order: &[&[libc::sock_filter]], d: &Data) -> u32 {
        const ACTION_FULL: u32 = 0xffff_0000;
        let mut ret = SECCOMP_RET_ALLOW;
        for prog in install_order.iter().rev() {
            let cur = run(prog, d).ret;
            if ((cur & ACTION_FULL) as i32) < ((ret & ACTION_FULL) as i32) {
                ret = cur;
            }
        }
        ret
    }
}
