//! `[sandbox]`: which isolation backend runs what the gate allows.

use super::Walker;
use crate::model::{SandboxBackend, SandboxPolicy};
use toml::de::DeTable;

const SANDBOX_KEYS: &[&str] = &["backend"];

impl Walker<'_> {
    pub(super) fn sandbox(&mut self, t: &DeTable<'_>, out: &mut SandboxPolicy) {
        for (key, v) in self.entries(t, "sandbox", SANDBOX_KEYS) {
            if key == "backend" {
                if let Some(b) = self.enum_value(v, "sandbox.backend", &SandboxBackend::ALL) {
                    out.backend = b;
                }
            }
        }
    }
}
