//! Printing a capability report: what a backend enforces of a policy.

use airlock_sandbox::capability::{CapabilityReport, Support};

pub fn print(r: &CapabilityReport) {
    println!("backend: {} ({})", r.backend, r.tier);
    match &r.available {
        Ok(how) => println!("  available  {how}"),
        Err(why) => println!("  MISSING    {why}"),
    }
    for l in &r.lines {
        let (mark, detail) = match &l.support {
            Support::Enforced(how) => ("enforced", how),
            Support::Missing(why) => ("MISSING ", why),
            Support::BestEffort(how) => ("best-eff", how),
        };
        println!(
            "  {mark}  {:<18} {:<28} {detail}",
            l.boundary.as_str(),
            l.asked
        );
    }
    match r.refusal() {
        None => println!(
            "every boundary of this policy is enforced by the {} backend",
            r.backend
        ),
        Some(why) => println!("a run would be refused: {why}"),
    }
}
