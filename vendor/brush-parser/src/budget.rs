//! A bound on the work one parse may do (added for airlock; not upstream).
//!
//! The PEG grammars here backtrack without memoization, so some inputs of a few
//! hundred bytes take exponential time (minutes). Every rule on a recursive path
//! of the grammars calls [`tick`]; once the budget a caller set with
//! [`with_budget`] is spent, every such rule fails at once, the parse unwinds in
//! time linear in the input, and the caller learns that its result cannot be
//! trusted. Outside [`with_budget`] the budget is unlimited, as upstream.

use std::cell::Cell;

thread_local! {
    static LEFT: Cell<u64> = const { Cell::new(u64::MAX) };
}

/// The budget ran out: the parse's result (success or error) is not the
/// grammar's answer and must not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exhausted;

/// Spends one step; `false` once none is left.
#[inline]
pub(crate) fn tick() -> bool {
    LEFT.with(|left| {
        let n = left.get();
        if n == 0 {
            false
        } else {
            left.set(n - 1);
            true
        }
    })
}

/// For the grammars' `{? }` actions: a step, or the failure that stops the rule.
#[inline]
pub(crate) fn step() -> Result<(), &'static str> {
    if tick() {
        Ok(())
    } else {
        Err("parse budget spent")
    }
}

/// For the entry rules' `{? }` actions: fails once the budget is spent.
#[inline]
pub(crate) fn not_spent() -> Result<(), &'static str> {
    if LEFT.with(Cell::get) == 0 {
        Err("parse budget spent")
    } else {
        Ok(())
    }
}

/// Runs `f` with at most `steps` grammar steps (fewer if an enclosing call has
/// fewer left); `Err(Exhausted)` if they ran out, whatever `f` returned. The
/// steps used are also taken from an enclosing budget.
pub fn with_budget<T>(steps: u64, f: impl FnOnce() -> T) -> Result<T, Exhausted> {
    struct Restore {
        outer: u64,
        inner: u64,
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            // Runs on unwinding too, so a parser panic leaves no budget behind.
            LEFT.with(|left| {
                let used = self.inner - left.get();
                left.set(self.outer.saturating_sub(used));
            });
        }
    }
    let outer = LEFT.with(Cell::get);
    let inner = steps.min(outer);
    LEFT.with(|left| left.set(inner));
    let restore = Restore { outer, inner };
    let value = f();
    let spent = LEFT.with(Cell::get) == 0;
    drop(restore);
    if spent { Err(Exhausted) } else { Ok(value) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_run_out_and_are_restored() {
        let r = with_budget(3, || (tick(), tick(), tick(), tick()));
        assert_eq!(r, Err(Exhausted));
        assert!(tick(), "outside a budget, steps are unlimited");
        assert_eq!(with_budget(3, || tick()), Ok(true));
    }

    #[test]
    fn an_inner_budget_is_bounded_by_the_outer() {
        let r = with_budget(2, || with_budget(100, || (tick(), tick(), tick())));
        assert_eq!(r, Err(Exhausted));
    }
}
