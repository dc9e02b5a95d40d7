//! Text from agents, sandboxed programs and the audit log, made safe for a
//! person's terminal. Anything an agent wrote (a command, a file name, a reason
//! that quotes the command, program output) can carry control characters and
//! escape sequences: OSC 52 writes the clipboard, CSI sequences clear the screen
//! or move the cursor over what was printed, bidi overrides and invisible format
//! characters show a reviewer one command while another is stored.
//!
//! * [`chars`]: which characters are dangerous (one table, shared with the
//!   model-facing cleaner of the MCP server).
//! * [`escape`]: listings and messages: every dangerous character becomes a
//!   visible escape (`\x1b`, `\u{202e}`), so nothing is hidden and nothing acts.
//! * [`stream`]: live program output to a tty: plain text and SGR colours pass,
//!   every other control or escape sequence is shown escaped.

pub mod chars;
pub mod escape;
pub mod stream;

pub use escape::{escape_line, escape_text, json_safe};
pub use stream::StreamFilter;
