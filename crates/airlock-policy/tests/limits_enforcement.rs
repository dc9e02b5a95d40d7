//! `[limits] enforcement`: what may stand in for a cgroup (rootless mode).

use airlock_policy::load;
use airlock_policy::model::LimitEnforcement;
use std::path::Path;

#[test]
fn cgroup_is_the_default_and_best_effort_must_be_said() {
    let p = load::from_str("", "p.toml", Path::new("/")).unwrap().policy;
    assert_eq!(p.limits.enforcement, LimitEnforcement::Cgroup);
    let d = load::builtin_default(Path::new("/tmp"));
    assert_eq!(d.limits.enforcement, LimitEnforcement::Cgroup);
    for (text, want) in [
        ("cgroup", LimitEnforcement::Cgroup),
        ("best_effort", LimitEnforcement::BestEffort),
    ] {
        let src = format!("[limits]\nenforcement = \"{text}\"\n");
        let p = load::from_str(&src, "p.toml", Path::new("/"))
            .unwrap()
            .policy;
        assert_eq!(p.limits.enforcement, want);
    }
}

#[test]
fn an_unknown_enforcement_is_located_and_lists_the_choices() {
    let e = load::from_str(
        "[limits]\nenforcement = \"rlimits\"\n",
        "p.toml",
        Path::new("/"),
    )
    .expect_err("must be rejected");
    let d = e.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].location.line, 2);
    assert!(
        d[0].message.contains("\"cgroup\"") && d[0].message.contains("\"best_effort\""),
        "{}",
        d[0].message
    );
}
