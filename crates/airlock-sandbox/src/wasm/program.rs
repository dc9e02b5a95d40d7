//! Which WebAssembly program an argv names: the CPython WASI build for
//! `python3 …`, or a WASI preview-1 module for `path/to/x.wasm …`. Anything
//! else is a host program, which this backend cannot run.

use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// CPython; `args` are its arguments after the program name.
    Python { args: Vec<String> },
    /// A WASI module at a host path (absolute, or relative to the cwd).
    Module { path: PathBuf, args: Vec<String> },
}

impl Program {
    pub fn describe(&self) -> String {
        match self {
            Program::Python { .. } => {
                "python3: CPython 3.12.0 (WASI build) in wasmtime 48.0.8".into()
            }
            Program::Module { path, .. } => {
                format!(
                    "{}: a WASI preview-1 module in wasmtime 48.0.8",
                    path.display()
                )
            }
        }
    }
}

fn is_python(name: &str) -> bool {
    let base = Path::new(name)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(name);
    base == "python"
        || base == "python3"
        || base
            .strip_prefix("python3.")
            .is_some_and(|minor| !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit()))
}

/// Classifies an argv, or says why the wasm backend cannot run it.
pub fn classify(argv: &[String]) -> Result<Program, String> {
    let Some(first) = argv.first() else {
        return Err("argv is empty".into());
    };
    if is_python(first) {
        return Ok(Program::Python {
            args: argv[1..].to_vec(),
        });
    }
    if first.ends_with(".wasm") {
        return Ok(Program::Module {
            path: PathBuf::from(first),
            args: argv[1..].to_vec(),
        });
    }
    let shown = if matches!(first.as_str(), "/bin/bash" | "/bin/sh" | "bash" | "sh") {
        format!("`{first}` (a shell line)")
    } else {
        format!("`{first}`")
    };
    Err(format!(
        "the wasm backend runs python3 code and WASI modules (.wasm), not the host program {shown}; \
         Hint: give an argv such as `-- python3 -c CODE` or `-- python3 script.py`, or use a backend that runs host programs (native)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn python_modules_and_refusals() {
        assert_eq!(
            classify(&v(&["python3", "-c", "print(1)"])),
            Ok(Program::Python {
                args: v(&["-c", "print(1)"])
            })
        );
        assert!(matches!(
            classify(&v(&["/usr/bin/python3.12", "x.py"])),
            Ok(Program::Python { .. })
        ));
        assert!(matches!(
            classify(&v(&["./hello.wasm", "a"])),
            Ok(Program::Module { .. })
        ));
        let why = classify(&v(&["/bin/bash", "-c", "ls"])).unwrap_err();
        assert!(
            why.contains("a shell line") && why.contains("Hint:"),
            "{why}"
        );
        assert!(classify(&v(&["python3x"])).is_err());
        assert!(classify(&v(&["python3.x"])).is_err());
    }
}
