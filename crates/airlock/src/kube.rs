//! A policy compiled for Kubernetes: the Pod that runs one execution under it
//! and the NetworkPolicy that walls it in, built with the k8s-openapi types so
//! that the output is structurally what the API server expects.
//!
//! What maps onto what: gVisor as the Pod's `runtimeClassName`, the limits as
//! container resources and `activeDeadlineSeconds`, the sandbox's user and
//! privilege rules as security contexts (non-root, no privilege escalation,
//! every capability dropped, read-only root, RuntimeDefault seccomp), /tmp as a
//! size-capped memory emptyDir, and the network mode as a NetworkPolicy
//! (none: deny all; allowlist: egress to the airlock egress proxy only).
//! The environment is the native sandbox's own ([`airlock_core::spec::environment`]
//! with nothing inherited): an empty per-run home, and git reading its global
//! configuration only from a read-only ConfigMap built from the policy, never
//! from a file a command could plant.

use airlock_policy::model::{NetworkMode, WorkspaceMode};
use airlock_policy::Policy;
use airlock_sandbox::{GIT_CONFIG_FILE, SANDBOX_HOME};
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMap, ConfigMapVolumeSource, Container, EmptyDirVolumeSource, EnvVar,
    PersistentVolumeClaimVolumeSource, Pod, PodSecurityContext, PodSpec, ResourceRequirements,
    SeccompProfile, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;
use std::path::Path;

/// The RuntimeClass a gVisor node pool registers (`handler: runsc`).
pub const RUNTIME_CLASS: &str = "gvisor";
/// The uid the command runs as (the native sandbox maps its root to the same:
/// out of the ranges `useradd` delegates, see its definition).
pub const RUN_AS: i64 = airlock_sandbox::native::namespaces::SANDBOX_HOST_UID as i64;
/// Where the workspace is mounted in the Pod.
pub const WORKSPACE_MOUNT: &str = "/workspace";
/// The label that ties the NetworkPolicy to the Pod.
pub const RUN_LABEL: &str = "airlock.dev/run";
/// The egress proxy's pods, for network mode allowlist.
pub const PROXY_LABEL: (&str, &str) = ("app.kubernetes.io/name", "airlock-egress-proxy");
pub const PROXY_PORT: i32 = 3128;

/// What one execution needs besides the policy.
pub struct Execution<'a> {
    pub name: &'a str,
    pub image: &'a str,
    pub argv: Vec<String>,
    /// The PersistentVolumeClaim holding the workspace.
    pub workspace_claim: String,
}

fn quantity(bytes: u64) -> Quantity {
    if bytes.is_multiple_of(1 << 20) {
        Quantity(format!("{}Mi", bytes >> 20))
    } else {
        Quantity(bytes.to_string())
    }
}

fn labels(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "app.kubernetes.io/managed-by".to_string(),
            "airlock".to_string(),
        ),
        (RUN_LABEL.to_string(), name.to_string()),
    ])
}

/// The Pod for one execution.
pub fn pod(policy: &Policy, run: &Execution<'_>) -> Pod {
    let l = &policy.limits;
    let limits = BTreeMap::from([
        ("memory".to_string(), quantity(l.memory)),
        (
            "cpu".to_string(),
            Quantity(format!("{}m", (l.cpus * 1000.0).round() as u64)),
        ),
        ("ephemeral-storage".to_string(), quantity(l.tmp)),
    ]);
    // requests = limits: the Guaranteed QoS class, never overcommitted.
    let requests = limits.clone();
    let env: Vec<EnvVar> = airlock_core::spec::environment(policy, &[], None)
        .into_iter()
        .map(|(name, value)| EnvVar {
            name,
            value: Some(value),
            ..Default::default()
        })
        .collect();
    let git_config_dir = Path::new(GIT_CONFIG_FILE)
        .parent()
        .map_or("/etc/airlock".to_string(), |d| d.display().to_string());
    let read_only_workspace = policy.workspace.mode != WorkspaceMode::Rw;
    let container = Container {
        name: "run".into(),
        image: Some(run.image.to_string()),
        command: Some(run.argv.clone()),
        working_dir: Some(WORKSPACE_MOUNT.into()),
        env: Some(env),
        resources: Some(ResourceRequirements {
            limits: Some(limits),
            requests: Some(requests),
            ..Default::default()
        }),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            privileged: Some(false),
            read_only_root_filesystem: Some(true),
            run_as_non_root: Some(true),
            run_as_user: Some(RUN_AS),
            run_as_group: Some(RUN_AS),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                add: None,
            }),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".into(),
                localhost_profile: None,
            }),
            ..Default::default()
        }),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "workspace".into(),
                mount_path: WORKSPACE_MOUNT.into(),
                read_only: Some(read_only_workspace),
                ..Default::default()
            },
            VolumeMount {
                name: "tmp".into(),
                mount_path: "/tmp".into(),
                ..Default::default()
            },
            VolumeMount {
                name: "home".into(),
                mount_path: SANDBOX_HOME.into(),
                ..Default::default()
            },
            VolumeMount {
                name: "gitconfig".into(),
                mount_path: git_config_dir,
                read_only: Some(true),
                ..Default::default()
            },
        ]),
        stdin: Some(false),
        tty: Some(false),
        ..Default::default()
    };
    Pod {
        metadata: ObjectMeta {
            name: Some(run.name.to_string()),
            labels: Some(labels(run.name)),
            annotations: Some(BTreeMap::from([
                (
                    "airlock.dev/policy-sha256".to_string(),
                    policy.sha256.clone(),
                ),
                (
                    "airlock.dev/workspace-mode".to_string(),
                    format!("{:?}", policy.workspace.mode).to_lowercase(),
                ),
            ])),
            ..Default::default()
        },
        spec: Some(PodSpec {
            runtime_class_name: Some(RUNTIME_CLASS.into()),
            restart_policy: Some("Never".into()),
            active_deadline_seconds: Some(l.timeout.ms.div_ceil(1000).max(1) as i64),
            automount_service_account_token: Some(false),
            enable_service_links: Some(false),
            host_network: Some(false),
            host_pid: Some(false),
            host_ipc: Some(false),
            share_process_namespace: Some(false),
            termination_grace_period_seconds: Some(0),
            security_context: Some(PodSecurityContext {
                run_as_non_root: Some(true),
                run_as_user: Some(RUN_AS),
                run_as_group: Some(RUN_AS),
                fs_group: Some(RUN_AS),
                seccomp_profile: Some(SeccompProfile {
                    type_: "RuntimeDefault".into(),
                    localhost_profile: None,
                }),
                ..Default::default()
            }),
            containers: vec![container],
            volumes: Some(vec![
                Volume {
                    name: "workspace".into(),
                    persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                        claim_name: run.workspace_claim.clone(),
                        read_only: Some(read_only_workspace),
                    }),
                    ..Default::default()
                },
                Volume {
                    name: "tmp".into(),
                    empty_dir: Some(EmptyDirVolumeSource {
                        medium: Some("Memory".into()),
                        size_limit: Some(quantity(l.tmp)),
                    }),
                    ..Default::default()
                },
                // A fresh, empty home per execution, as in the native sandbox.
                Volume {
                    name: "home".into(),
                    empty_dir: Some(EmptyDirVolumeSource {
                        medium: Some("Memory".into()),
                        size_limit: Some(quantity(l.tmp)),
                    }),
                    ..Default::default()
                },
                Volume {
                    name: "gitconfig".into(),
                    config_map: Some(ConfigMapVolumeSource {
                        name: git_config_name(run.name),
                        default_mode: Some(0o444),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The NetworkPolicy for the execution's Pod: no ingress; egress per the mode.
pub fn network_policy(policy: &Policy, run: &Execution<'_>) -> NetworkPolicy {
    let egress = match policy.network.mode {
        NetworkMode::None => vec![],
        NetworkMode::Allowlist => vec![NetworkPolicyEgressRule {
            to: Some(vec![NetworkPolicyPeer {
                pod_selector: Some(LabelSelector {
                    match_labels: Some(BTreeMap::from([(
                        PROXY_LABEL.0.to_string(),
                        PROXY_LABEL.1.to_string(),
                    )])),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            ports: Some(vec![NetworkPolicyPort {
                port: Some(IntOrString::Int(PROXY_PORT)),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
        }],
        // What the policy opens, the NetworkPolicy opens: egress anywhere.
        NetworkMode::Open => vec![NetworkPolicyEgressRule::default()],
    };
    NetworkPolicy {
        metadata: ObjectMeta {
            name: Some(run.name.to_string()),
            labels: Some(labels(run.name)),
            ..Default::default()
        },
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(
                    RUN_LABEL.to_string(),
                    run.name.to_string(),
                )])),
                ..Default::default()
            }),
            policy_types: Some(vec!["Ingress".into(), "Egress".into()]),
            ingress: Some(vec![]),
            egress: Some(egress),
        }),
    }
}

fn git_config_name(run: &str) -> String {
    // Pod names are at most 63 bytes; ConfigMap names may be 253.
    format!("{run}-gitconfig")
}

/// The run's only global git configuration, as the native sandbox writes it,
/// with `safe.directory` naming the workspace where the Pod mounts it.
pub fn git_config(policy: &Policy, run: &Execution<'_>) -> ConfigMap {
    let mut in_pod = policy.clone();
    in_pod.workspace.root = WORKSPACE_MOUNT.into();
    let file = Path::new(GIT_CONFIG_FILE)
        .file_name()
        .map_or("gitconfig".to_string(), |f| {
            f.to_string_lossy().into_owned()
        });
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(git_config_name(run.name)),
            labels: Some(labels(run.name)),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            file,
            airlock_core::spec::git_config_text(&in_pod),
        )])),
        immutable: Some(true),
        ..Default::default()
    }
}

/// The objects as one `v1 List` (what `kubectl apply -f` takes).
pub fn manifest(policy: &Policy, run: &Execution<'_>) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            with_kind(
                serde_json::to_value(git_config(policy, run)).unwrap_or_default(),
                "v1",
                "ConfigMap",
            ),
            with_kind(serde_json::to_value(pod(policy, run)).unwrap_or_default(), "v1", "Pod"),
            with_kind(
                serde_json::to_value(network_policy(policy, run)).unwrap_or_default(),
                "networking.k8s.io/v1",
                "NetworkPolicy",
            ),
        ],
    })
}

fn with_kind(mut v: serde_json::Value, api: &str, kind: &str) -> serde_json::Value {
    // k8s-openapi's Serialize writes apiVersion and kind itself; this keeps
    // them first and present whatever its version does.
    if let serde_json::Value::Object(m) = &mut v {
        m.insert("apiVersion".into(), api.into());
        m.insert("kind".into(), kind.into());
    }
    v
}
