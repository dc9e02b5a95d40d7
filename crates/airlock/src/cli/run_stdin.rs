//! What `airlock run` does with its own stdin: streamed to the command where
//! the backend can (native, OCI, Docker), read whole first where it takes
//! stdin only with the spec (wasm, microvm, and a server's API), never when it
//! is a terminal or `/dev/null` (the command reads the sandbox's own).

use std::io::Read;

/// The most stdin read whole before a run: the whole of it sits in memory,
/// and a server's request must carry it.
pub(super) const MAX_WHOLE: u64 = 64 << 20;

/// Whether fd 0 is `/dev/null` (1:3), or closed: nothing to hand over.
pub(super) fn is_dev_null() -> bool {
    match rustix::fs::fstat(rustix::stdio::stdin()) {
        Err(_) => true,
        Ok(st) => {
            rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::CharacterDevice
                && rustix::fs::major(st.st_rdev) == 1
                && rustix::fs::minor(st.st_rdev) == 3
        }
    }
}

/// Reads `source` (named `what` in errors) to its end, refusing more than
/// [`MAX_WHOLE`] bytes; `why` says, in the refusal, why it must be whole.
pub(super) fn read_whole(mut source: impl Read, what: &str, why: &str) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    if let Err(e) = (&mut source).take(MAX_WHOLE + 1).read_to_end(&mut bytes) {
        return Err(format!("{what}: cannot read it: {e}"));
    }
    if bytes.len() as u64 > MAX_WHOLE {
        return Err(format!(
            "{what} is larger than {} MiB, more than airlock reads whole ({why}).",
            MAX_WHOLE >> 20
        ));
    }
    Ok(bytes)
}
