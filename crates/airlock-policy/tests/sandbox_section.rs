//! `[sandbox]`: the backend a policy names, with located errors.

use airlock_policy::load;
use airlock_policy::model::SandboxBackend;
use std::path::Path;

fn one_error(text: &str) -> (usize, usize, String) {
    let e = load::from_str(text, "p.toml", Path::new("/")).expect_err("must be rejected");
    let d = e.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    (
        d[0].location.line,
        d[0].location.column,
        d[0].message.clone(),
    )
}

#[test]
fn every_backend_name_loads_and_native_is_the_default() {
    for (name, b) in SandboxBackend::ALL {
        let text = format!("[sandbox]\nbackend = \"{name}\"\n");
        let p = load::from_str(&text, "p.toml", Path::new("/"))
            .unwrap()
            .policy;
        assert_eq!(p.sandbox.backend, b);
        assert_eq!(b.as_str(), name);
    }
    let p = load::from_str("", "p.toml", Path::new("/")).unwrap().policy;
    assert_eq!(p.sandbox.backend, SandboxBackend::Native);
    let d = load::builtin_default(Path::new("/tmp"));
    assert_eq!(d.sandbox.backend, SandboxBackend::Native);
}

#[test]
fn a_misspelt_backend_or_key_is_located_with_a_suggestion() {
    let (l, c, m) = one_error("[sandbox]\nbackend = \"wasmm\"\n");
    assert_eq!((l, c), (2, 11));
    assert!(m.contains("did you mean \"wasm\"?"), "{m}");
    assert!(
        m.contains("\"native\", \"gvisor\", \"oci\", \"docker\", \"microvm\", \"wasm\""),
        "{m}"
    );
    let (l, c, m) = one_error("[sandbox]\nbakend = \"wasm\"\n");
    assert_eq!((l, c), (2, 1));
    assert_eq!(
        m,
        "unknown key `bakend` in [sandbox]; did you mean `backend`?"
    );
    let (_, _, m) = one_error("[sandbox]\nbackend = 3\n");
    assert!(m.contains("must be a string"), "{m}");
    let (_, _, m) = one_error("[sandbx]\n");
    assert!(m.contains("did you mean `sandbox`?"), "{m}");
}
