//! `airlock policy compile --backend kubernetes`, run as the real binary and
//! compared with golden files (UPDATE_GOLDEN=1 rewrites them).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn airlock(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_airlock"))
        .args(args)
        .current_dir(dir)
        .env_remove("AIRLOCK_POLICY")
        .output()
        .expect("run airlock")
}

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

const NONE: &str = r#"
[workspace]
root = "."
mode = "overlay"
[network]
mode = "none"
[commands]
allow = ["python3", "pytest"]
[limits]
timeout = "90s"
memory = "256MiB"
cpus = 0.5
tmp = "32MiB"
[env]
set = { PYTHONDONTWRITEBYTECODE = "1" }
"#;

const ALLOWLIST_RW: &str = r#"
[workspace]
root = "."
mode = "rw"
[network]
mode = "allowlist"
allow = ["pypi.example.org"]
[commands]
allow = ["python3", "pytest"]
"#;

fn compile(policy: &str, golden_name: &str) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    std::fs::write(dir.path().join("airlock.toml"), policy).expect("write");
    let out = airlock(
        dir.path(),
        &[
            "policy",
            "compile",
            "--backend",
            "kubernetes",
            "airlock.toml",
            "--name",
            "run-1",
            "--image",
            "tools:1",
            "--",
            "python3",
            "-m",
            "pytest",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let path = golden(golden_name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
    }
    let want: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("golden file")).unwrap();
    assert_eq!(got, want, "differs from {}", path.display());
    // Every field is one the Kubernetes types know: the objects read back as them.
    let cm: k8s_openapi::api::core::v1::ConfigMap =
        serde_json::from_value(item(&got, "ConfigMap").clone()).expect("a ConfigMap");
    let git = &cm.data.expect("data")["gitconfig"];
    assert!(git.contains("directory = \"/workspace\""), "{git}");
    let pod: k8s_openapi::api::core::v1::Pod =
        serde_json::from_value(item(&got, "Pod").clone()).expect("a Pod");
    assert!(pod.spec.is_some());
    let np: k8s_openapi::api::networking::v1::NetworkPolicy =
        serde_json::from_value(item(&got, "NetworkPolicy").clone()).expect("a NetworkPolicy");
    assert!(np.spec.is_some());
    // The Pod's environment is the native sandbox's: a fresh home, and git
    // configured only by the read-only ConfigMap.
    let env = &item(&got, "Pod")["spec"]["containers"][0]["env"];
    let var = |name: &str| {
        env.as_array()
            .and_then(|a| a.iter().find(|e| e["name"] == name))
            .map(|e| e["value"].clone())
    };
    assert_eq!(var("HOME"), Some("/home/airlock".into()));
    assert_eq!(var("GIT_CONFIG_NOSYSTEM"), Some("1".into()));
    assert_eq!(
        var("GIT_CONFIG_GLOBAL"),
        Some("/etc/airlock/gitconfig".into())
    );
}

fn item<'a>(list: &'a serde_json::Value, kind: &str) -> &'a serde_json::Value {
    list["items"]
        .as_array()
        .and_then(|a| a.iter().find(|i| i["kind"] == kind))
        .unwrap_or_else(|| panic!("no {kind} in {list}"))
}

#[test]
fn network_none_compiles_to_a_gvisor_pod_and_a_deny_all_network_policy() {
    compile(NONE, "kube-none.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(golden("kube-none.json")).unwrap()).unwrap();
    let pod = item(&v, "Pod");
    assert_eq!(pod["spec"]["runtimeClassName"], "gvisor");
    assert_eq!(pod["spec"]["activeDeadlineSeconds"], 90);
    let c = &pod["spec"]["containers"][0];
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(c["securityContext"]["capabilities"]["drop"][0], "ALL");
    assert_eq!(c["resources"]["limits"]["memory"], "256Mi");
    assert_eq!(c["resources"]["limits"]["cpu"], "500m");
    let np = item(&v, "NetworkPolicy");
    assert_eq!(np["spec"]["egress"], serde_json::json!([]));
    assert_eq!(np["spec"]["ingress"], serde_json::json!([]));
}

#[test]
fn allowlist_egress_goes_to_the_proxy_only_and_rw_mounts_the_workspace_writable() {
    compile(ALLOWLIST_RW, "kube-allowlist-rw.json");
}

#[test]
fn a_denied_command_gets_no_pod() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    std::fs::write(dir.path().join("airlock.toml"), NONE).expect("write");
    let out = airlock(
        dir.path(),
        &[
            "policy",
            "compile",
            "--backend",
            "kubernetes",
            "airlock.toml",
            "--",
            "curl",
            "x",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let out = airlock(
        dir.path(),
        &[
            "policy",
            "compile",
            "--backend",
            "k8s",
            "airlock.toml",
            "--",
            "python3",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
}
