//! The package registries each toolchain's tools use, as `network.allow` hosts,
//! for a policy in allowlist mode. They are asked of the tools themselves on
//! this host, so a mirror or a corporate index configured for pip, npm, cargo
//! or go is what gets allowed, and nothing is assumed: pip's configured or
//! built-in index (`PIP_INDEX_URL`/`pip.conf`, else pip's own default), `npm
//! config get registry`, `go env GOPROXY GOSUMDB`, and the registries in cargo's
//! index cache (each with the download and API hosts of its `config.json`).
//! A tool that is missing or says nothing adds nothing; `airlock policy check`
//! shows what was found.

use super::Host;
use airlock_policy::Toolchain;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long an answer is kept: asking pip, npm and go costs seconds, and a
/// policy is loaded by every `airlock run`.
const KEEP: Duration = Duration::from_secs(3600);

/// [`ask_tools`], answered from the state directory's cache when it is fresh
/// (`registries.json`; `airlock policy check` always asks again).
pub fn hosts(toolchain: Toolchain, host: &Host) -> Vec<String> {
    let cache = crate::resolve_state_dir()
        .ok()
        .map(|d| d.join("cache").join("registries.json"));
    let key = toolchain.as_str();
    let mut kept: serde_json::Map<String, serde_json::Value> = cache
        .as_ref()
        .and_then(|c| std::fs::read(c).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let now = crate::clock::now_ms();
    if std::env::var_os("AIRLOCK_REFRESH_REGISTRIES").is_none() {
        if let Some(entry) = kept.get(key) {
            let at = entry["at_ms"].as_u64().unwrap_or(0);
            if now.saturating_sub(at) < KEEP.as_millis() as u64 {
                if let Ok(hosts) = serde_json::from_value(entry["hosts"].clone()) {
                    return hosts;
                }
            }
        }
    }
    let hosts = ask_tools(toolchain, host);
    if let Some(cache) = cache {
        kept.insert(
            key.to_string(),
            serde_json::json!({ "at_ms": now, "hosts": hosts }),
        );
        // Written aside and renamed: a reader sees the old file or the new one.
        if let Some(dir) = cache.parent() {
            let tmp = dir.join(format!(".registries.{}.tmp", std::process::id()));
            let written = crate::state::ensure_private_dir(dir).is_ok()
                && std::fs::write(&tmp, serde_json::Value::Object(kept).to_string()).is_ok();
            if !written || std::fs::rename(&tmp, &cache).is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
        }
    }
    hosts
}

/// Hosts (with a port when the URL names one) for `toolchain` on this host,
/// asked of the tools now.
pub fn ask_tools(toolchain: Toolchain, host: &Host) -> Vec<String> {
    let mut out: Vec<String> = match toolchain {
        Toolchain::Python => python(host),
        Toolchain::Node => ask("npm", &["config", "get", "registry"])
            .map(|t| url_hosts(&t))
            .unwrap_or_default(),
        Toolchain::Go => ask("go", &["env", "GOPROXY", "GOSUMDB"])
            .map(|t| go_hosts(&t))
            .unwrap_or_default(),
        Toolchain::Rust => host
            .dir("CARGO_HOME", ".cargo")
            .map(|c| cargo_hosts(&c.join("registry/index")))
            .unwrap_or_default(),
    };
    out.sort();
    out.dedup();
    out
}

fn python(host: &Host) -> Vec<String> {
    let mut urls = String::new();
    for var in ["PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"] {
        if let Some(v) = host.var(var) {
            urls.push_str(v);
            urls.push(' ');
        }
    }
    if let Some(listed) = ask("python3", &["-m", "pip", "config", "list"]) {
        // Lines such as `global.index-url='https://…'`.
        for line in listed.lines() {
            if let Some((key, value)) = line.split_once('=') {
                if key.ends_with("index-url") {
                    urls.push_str(value.trim_matches(['\'', '"']));
                    urls.push(' ');
                }
            }
        }
    }
    if urls.trim().is_empty() {
        // pip's own default index and the host its files are served from.
        let code = "from pip._internal.models.index import PyPI; print(PyPI.url); print('https://' + PyPI.file_storage_domain + '/')";
        if let Some(t) = ask("python3", &["-c", code]) {
            urls = t;
        }
    }
    url_hosts(&urls)
}

/// Run a tool's own configuration query (bounded to 10 s); its stdout.
fn ask(program: &str, args: &[&str]) -> Option<String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(Some(_)) => return None,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut text).ok()?;
    Some(text)
}

/// The host (and explicit port) of every `scheme://host[:port]/…` in `text`.
pub fn url_hosts(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || c == ',' || c == '|')
        .filter_map(|word| {
            let word = word.strip_prefix("sparse+").unwrap_or(word);
            let rest = word
                .strip_prefix("https://")
                .or_else(|| word.strip_prefix("http://"))?;
            let authority = rest.split(['/', '?', '#']).next()?;
            let authority = authority.rsplit('@').next()?;
            let host = authority.to_ascii_lowercase();
            let valid = !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':'));
            valid.then_some(host)
        })
        .collect()
}

/// `go env GOPROXY GOSUMDB`: the proxies' hosts (`direct` and `off` are not
/// hosts) and the checksum database's (`name[+key] [url]`).
fn go_hosts(text: &str) -> Vec<String> {
    let mut lines = text.lines();
    let mut out = url_hosts(lines.next().unwrap_or(""));
    if let Some(sumdb) = lines
        .next()
        .map(str::trim)
        .filter(|s| !s.is_empty() && *s != "off")
    {
        let mut parts = sumdb.split_whitespace();
        let name = parts.next().unwrap_or("");
        match parts.next() {
            Some(url) => out.extend(url_hosts(url)),
            None => out.push(name.split('+').next().unwrap_or(name).to_ascii_lowercase()),
        }
    }
    out
}

/// Cargo names each registry's index cache `<index host>-<hash>`; a sparse
/// index's `config.json` names where crates download from and its API.
fn cargo_hosts(index_dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(index_dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((host, hash)) = name.rsplit_once('-') else {
            continue;
        };
        if hash.len() != 16 || !hash.chars().all(|c| c.is_ascii_hexdigit()) || !host.contains('.') {
            continue;
        }
        out.push(host.to_ascii_lowercase());
        if let Ok(config) = std::fs::read_to_string(entry.path().join("config.json")) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&config) {
                for key in ["dl", "api"] {
                    if let Some(url) = v.get(key).and_then(|u| u.as_str()) {
                        out.extend(url_hosts(url));
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_read_from_urls_as_the_tools_print_them() {
        assert_eq!(
            url_hosts("https://Index.Example.org/simple/ http://mirror.example.net:8080/pypi"),
            vec!["index.example.org", "mirror.example.net:8080"]
        );
        assert_eq!(
            url_hosts("sparse+https://u:p@idx.example.com/ direct,off"),
            vec!["idx.example.com"]
        );
        assert_eq!(
            go_hosts("https://proxy.example.com,direct\nsum.example.com+abc123\n"),
            vec!["proxy.example.com", "sum.example.com"]
        );
        assert_eq!(go_hosts("off\noff\n"), Vec::<String>::new());
    }

    #[test]
    fn cargo_registries_come_from_its_index_cache() {
        let t = tempfile::tempdir().unwrap();
        let idx = t.path().join("index.example.com-0123456789abcdef");
        std::fs::create_dir_all(&idx).unwrap();
        std::fs::write(
            idx.join("config.json"),
            r#"{"dl":"https://dl.example.com/crates","api":"https://api.example.com"}"#,
        )
        .unwrap();
        std::fs::create_dir_all(t.path().join("not-a-registry")).unwrap();
        let mut got = cargo_hosts(t.path());
        got.sort();
        assert_eq!(
            got,
            vec!["api.example.com", "dl.example.com", "index.example.com"]
        );
    }
}
