//! `[changes]`: the change-set policy (what may flow back to the host).

use super::Walker;
use crate::changes::{ChangesPolicy, Pattern};
use toml::de::DeTable;

const CHANGES_KEYS: &[&str] = &[
    "approval",
    "allow",
    "deny",
    "discard",
    "max_files",
    "max_bytes",
    "keep_for",
    "keep_bytes",
];

impl Walker<'_> {
    pub(super) fn changes(&mut self, t: &DeTable<'_>, out: &mut ChangesPolicy) {
        for (key, v) in self.entries(t, "changes", CHANGES_KEYS) {
            let what = format!("changes.{key}");
            match key {
                "max_files" => {
                    if let Some(n) = self.integer(v, &what, 1, i64::MAX) {
                        out.max_files = Some(n as u64);
                    }
                }
                "keep_for" => {
                    if let Some(d) = self.duration(v, &what) {
                        out.keep_for_ms = Some(d.ms);
                    }
                }
                "keep_bytes" => {
                    if let Some(n) = self.size(v, &what, 0, "0 bytes") {
                        out.keep_bytes = Some(n);
                    }
                }
                "max_bytes" => {
                    if let Some(n) = self.size(v, &what, 1, "1 byte") {
                        out.max_bytes = Some(n);
                    }
                }
                _ => {
                    let mut list = Vec::new();
                    for (p, span) in self.strings(v, &what) {
                        if !self.clean_path(span.clone(), &what, &p) {
                            continue;
                        }
                        match Pattern::new(&p) {
                            Ok(_) => list.push(p),
                            Err(e) => self.error(span, format!("`{what}` entry \"{p}\": {e}")),
                        }
                    }
                    match key {
                        "approval" => out.approval = list,
                        "allow" => out.allow = list,
                        "deny" => out.deny = list,
                        _ => out.discard = list,
                    }
                }
            }
        }
    }
}
