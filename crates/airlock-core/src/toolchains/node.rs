//! The `node` preset: a node installed outside the system directories (nvm's
//! `~/.nvm/versions/node/vX`, a tarball under a home) shown read-only with its
//! bin on PATH; npm's cache and logs in the run's `/tmp`.

use super::{Exposure, Host};
use std::path::Path;

pub fn exposure(root: &Path, host: &Host) -> Exposure {
    let mut e = Exposure::default();
    if let Some(node) =
        airlock_sandbox::native::interp::resolve("node", host.path_var(), root, None)
    {
        e.read_if_dir(&node.prefix);
        e.path.push(node.bin);
    }
    e.set("npm_config_cache", "/tmp/.npm");
    e.set("npm_config_update_notifier", "false");
    e.set("npm_config_fund", "false");
    e.set("npm_config_audit", "false");
    e.allow = vec![vec!["node"], vec!["npm", "test|run|start|ls|version"]];
    e
}
