//! The `go` preset: a Go installed outside the system directories (`~/go` SDKs,
//! `~/sdk/goX`) read-only with its bin on PATH; offline, the host's module cache
//! read-only with `GOPROXY=off`; with a network, a fresh
//! module cache in the run's `/tmp`. The build cache is always the run's own
//! (`/tmp/go-build`), and `GOTOOLCHAIN=local` keeps go from fetching another go.

use super::{Exposure, Host};

pub fn exposure(host: &Host, offline: bool) -> Exposure {
    let mut e = Exposure::default();
    if let Some(go) = airlock_sandbox::native::interp::resolve(
        "go",
        host.path_var(),
        std::path::Path::new("/"),
        None,
    ) {
        e.read_if_dir(&go.prefix);
        e.path.push(go.bin);
    }
    let gopath = host.dir("GOPATH", "go");
    let modcache = host
        .var("GOMODCACHE")
        .map(std::path::PathBuf::from)
        .or_else(|| gopath.map(|g| g.join("pkg/mod")));
    match modcache.filter(|m| m.is_dir()) {
        Some(m) if offline => {
            e.read_if_dir(&m);
            e.set("GOMODCACHE", m.display().to_string());
        }
        _ => e.set("GOMODCACHE", "/tmp/go/pkg/mod"),
    }
    if offline {
        e.set("GOPROXY", "off");
    }
    e.set("GOPATH", "/tmp/go");
    e.set("GOCACHE", "/tmp/go-build");
    e.set("GOTOOLCHAIN", "local");
    e.set("GOTELEMETRY", "off");
    e.allow = vec![
        vec!["go", "build|test|vet|run|fmt|env|version|list"],
        vec!["gofmt"],
    ];
    e
}
