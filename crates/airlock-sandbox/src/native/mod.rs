//! The native Linux backend: namespaces, mounts, seccomp, landlock, cgroups.
//! Each layer is its own module.

pub mod caps;
pub mod cgroup;
pub mod landlock;
pub mod rlimits;
pub mod seccomp;
