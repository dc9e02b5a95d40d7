//! The facts of the host a preset reads: the caller's environment (where the
//! tools and their homes are) and nothing else. Tests build one by hand.

use std::collections::HashMap;
use std::path::PathBuf;

#[derive(Debug, Clone, Default)]
pub struct Host {
    env: HashMap<String, String>,
}

impl Host {
    /// This process's environment.
    pub fn from_process() -> Host {
        Host {
            env: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        }
    }

    /// A host with exactly these variables.
    pub fn with_env<'a>(vars: impl IntoIterator<Item = (&'a str, &'a str)>) -> Host {
        Host {
            env: vars
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    /// A variable, when set and not empty.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.env
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// `$HOME`.
    pub fn home(&self) -> Option<PathBuf> {
        self.var("HOME").map(PathBuf::from)
    }

    /// `$NAME`, else `$HOME/<default>`.
    pub fn dir(&self, name: &str, default_under_home: &str) -> Option<PathBuf> {
        match self.var(name) {
            Some(v) => Some(PathBuf::from(v)),
            None => self.home().map(|h| h.join(default_under_home)),
        }
    }

    pub fn path_var(&self) -> &str {
        self.var("PATH").unwrap_or("")
    }
}
