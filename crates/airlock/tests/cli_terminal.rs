//! Finding 5 of issue 13: agent text must not drive the operator's terminal.
//! Each listing gets a denied or pending agent command that carries an OSC 52
//! clipboard write, a screen clear, cursor movement, a bidi override, C1
//! controls and invisible characters, and must print them escaped. Live output
//! of `airlock run` on a real pty (util-linux `script`) passes text and SGR
//! colours only, unless `--raw-output` asks for the bytes.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_airlock");

const POLICY: &str = r#"[workspace]
root = "."
[commands]
allow = ["echo", "printf"]
approval = ["echo deploy"]
"#;

/// The gate refuses C0 and C1 controls in a command (it is denied and logged as
/// asked), so a command that reaches a person's approval carries the rest:
/// a right-to-left override, a zero-width space, a TAG character and DEL.
const PENDING_PAYLOAD: &str = "\u{202e}cod.txt\u{200b}\u{e0041}\u{7f}";

/// What an attacker puts in a command: OSC 52 (clipboard := "rm -rf ~"), clear
/// screen, cursor up + erase line, an 8-bit CSI, a right-to-left override, a
/// zero-width space and a TAG character.
const PAYLOAD: &str =
    "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b[1A\x1b[2K\u{9b}2J\u{202e}cod.txt\u{200b}\u{e0041}";

struct Env {
    _tmp: tempfile::TempDir,
    state: PathBuf,
    ws: PathBuf,
}

fn env() -> Env {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("airlock.toml"), POLICY).unwrap();
    Env {
        state: tmp.path().join("state"),
        ws: ws.canonicalize().unwrap(),
        _tmp: tmp,
    }
}

impl Env {
    fn run(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .current_dir(&self.ws)
            .env("AIRLOCK_STATE_DIR", &self.state)
            .env_remove("AIRLOCK_POLICY")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Run `airlock ARGS` on a pseudo-terminal and return what the terminal got.
    fn on_tty(&self, args: &[&str]) -> Vec<u8> {
        let mut line = BIN.to_string();
        for a in args {
            line.push(' ');
            line.push_str(&shell_quote(a));
        }
        let out = Command::new("script")
            .args(["-q", "-e", "-c", &line, "/dev/null"])
            .current_dir(&self.ws)
            .env("AIRLOCK_STATE_DIR", &self.state)
            .env_remove("AIRLOCK_POLICY")
            .stdin(Stdio::null())
            .output()
            .expect("util-linux `script` provides the pty");
        out.stdout
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Nothing the terminal would act on: no ESC, no C1 control, no bidi, TAG or
/// invisible character. `allowed_sgr` lists SGR sequences that may stay.
fn assert_inert(what: &str, text: &str, allowed_sgr: &[&str]) {
    let mut t = text.to_string();
    for sgr in allowed_sgr {
        t = t.replace(sgr, "");
    }
    let bad: Vec<String> = t
        .chars()
        .filter(|&c| {
            c != '\n'
                && c != '\t'
                && c != '\r'
                && airlock_core::terminal::chars::classify(c).is_some()
        })
        .map(|c| format!("U+{:04X}", c as u32))
        .collect();
    assert!(bad.is_empty(), "{what} printed raw {bad:?}:\n{text:?}");
}

#[test]
fn listings_show_agent_escapes_escaped() {
    let e = env();
    // A denied command (curl reaches the network) and one that waits for approval.
    let denied = format!("curl x.example; echo '{PAYLOAD}'");
    let o = e.run(&["run", "-c", &denied]);
    assert_eq!(o.status.code(), Some(77), "{o:?}");
    assert_inert("run (denied)", &String::from_utf8_lossy(&o.stderr), &[]);
    let pending = format!("echo deploy '{PENDING_PAYLOAD}'");
    let o = e.run(&["run", "-c", &pending]);
    assert_eq!(o.status.code(), Some(75), "{o:?}");
    assert_inert("run (pending)", &String::from_utf8_lossy(&o.stderr), &[]);
    let o = e.run(&[
        "grant",
        "--write",
        ".",
        "--for",
        &format!("echo {PAYLOAD}"),
        "--ttl",
        "1m",
    ]);
    assert!(o.status.success(), "{o:?}");
    assert_inert("grant", &String::from_utf8_lossy(&o.stdout), &[]);

    let approvals: serde_json::Value =
        serde_json::from_slice(&e.run(&["approvals", "list", "--json"]).stdout).unwrap();
    let id = approvals[0]["id"].as_str().unwrap().to_string();
    // The JSON listing still holds the exact command, as escapes JSON readers undo.
    assert_eq!(
        approvals[0]["request"]["command"]["command"],
        pending.as_str()
    );

    for args in [
        vec!["audit", "tail", "-n", "50"],
        vec!["audit", "tail", "-n", "50", "--json"],
        vec!["audit", "query", "--decision", "deny"],
        vec!["audit", "query", "--json"],
        vec!["audit", "show", &id],
        vec!["approvals", "list"],
        vec!["approvals", "list", "--json"],
        vec!["approvals", "show", &id],
        vec!["approvals", "show", &id, "--json"],
        vec!["grants", "list"],
        vec!["grants", "list", "--json"],
        vec!["check", "-c", &denied],
        vec!["check", "--json", "-c", &denied],
        vec!["approvals", "approve", "ap-\u{1b}]52;c;eA==\u{7}"],
    ] {
        let o = e.run(&args);
        let out = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_inert(&format!("{args:?} stdout"), &out, &[]);
        assert_inert(&format!("{args:?} stderr"), &err, &[]);
        // The person still sees that something was there (tables and messages;
        // JSON carries it as \u escapes).
        let table = !args.contains(&"--json") && !args.contains(&"approve");
        if table && args[0] == "approvals" {
            assert!(out.contains("\\u{202e}cod.txt"), "{args:?}: {out}");
        } else if table && args[0] == "audit" && args[1] != "show" {
            assert!(out.contains("\\x1b]52;c;"), "{args:?}: {out}");
        }
    }
    // The full command is shown, escaped, in `approvals show`.
    let show = String::from_utf8_lossy(&e.run(&["approvals", "show", &id]).stdout).into_owned();
    assert!(
        show.contains("echo deploy '\\u{202e}cod.txt\\u{200b}\\u{e0041}\\x7f'"),
        "{show}"
    );
}

#[test]
fn live_output_on_a_tty_passes_text_and_colours_only() {
    let e = env();
    // printf's own escapes: \033]52 (OSC 52), \033[2J (clear), \033[31m (SGR red).
    let program = r"printf 'hello \033[31mred\033[0m \033]52;c;cm0gLXJmIH4=\007 \033[2J \033P1$qm\033\\ \342\200\256x\n'";
    let got = e.on_tty(&["run", "-c", program]);
    let text = String::from_utf8_lossy(&got).into_owned();
    assert!(
        text.contains("hello \x1b[31mred\x1b[0m"),
        "colours pass: {text:?}"
    );
    assert!(
        text.contains("\\x1b]52;c;cm0gLXJmIH4=\\x07"),
        "OSC 52 shown: {text:?}"
    );
    assert!(
        text.contains("\\x1b[2J") && text.contains("\\x1bP1$qm"),
        "{text:?}"
    );
    assert!(text.contains("\\u{202e}x"), "{text:?}");
    assert_inert("run on a tty", &text, &["\x1b[31m", "\x1b[0m"]);

    // The protection off: with --raw-output the terminal gets the OSC 52 as is.
    let raw = e.on_tty(&["run", "--raw-output", "-c", program]);
    assert!(
        raw.windows(7).any(|w| w == b"\x1b]52;c;"),
        "--raw-output passes bytes: {:?}",
        String::from_utf8_lossy(&raw)
    );

    // Not a tty (a pipe): the bytes are the program's own, unchanged.
    let piped = e.run(&["run", "-c", program]);
    assert!(piped.status.success(), "{piped:?}");
    assert!(piped.stdout.windows(7).any(|w| w == b"\x1b]52;c;"));
}

/// A reader that stops early (`airlock policy show-default | head -1`) ends a
/// listing as it ends any Unix filter: by SIGPIPE, with no panic on stderr.
#[test]
fn a_reader_that_stops_early_ends_a_listing_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(BIN)
        .args(["policy", "show-default"])
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    const SIGPIPE: i32 = 13;
    assert_eq!(out.status.signal(), Some(SIGPIPE), "{:?}", out.status);
}
