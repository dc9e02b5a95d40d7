//! Opening the audit directory's files: never through a symlink, never a FIFO,
//! socket or device, and (to write) never a file with another name elsewhere.
//!
//! Everything in `<state>/audit/` is a regular file airlock made itself. A
//! symlink put there would redirect a torn-tail repair (`set_len`), an
//! append or the head anchor's in-place write to a file outside the state
//! directory; a FIFO would hang a reader. So every open adds `O_NOFOLLOW`
//! (a symlink fails with `ELOOP`) and `O_NONBLOCK` (a FIFO opens at once
//! instead of waiting for a peer), then `fstat`s what it got and refuses
//! anything but a regular file, naming what it found and what to do.

use std::fs::{File, OpenOptions};
use std::io::{Error, ErrorKind};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Open `path` with `options` plus `O_NOFOLLOW | O_NONBLOCK`, and refuse
/// anything but a regular file. With `write`, also refuse a file with more
/// than one link (a hard link would let a write reach a file by another name).
pub(crate) fn open(path: &Path, options: &mut OpenOptions, write: bool) -> std::io::Result<File> {
    let flags = (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits();
    let file = match options.custom_flags(flags as i32).open(path) {
        Ok(f) => f,
        Err(e) => {
            // ELOOP (a symlink), ENXIO (a FIFO with no reader, opened to
            // write), ENOTDIR and the like: say what is there instead.
            return Err(match std::fs::symlink_metadata(path) {
                Ok(meta) if !meta.file_type().is_file() => refusal(path, &meta),
                _ => e,
            });
        }
    };
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(refusal(path, &meta));
    }
    if write && meta.nlink() > 1 {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "it has {} hard links: the same file has another name, perhaps outside the state directory, and airlock writes only files of its own there; remove this name (airlock makes a fresh file) and find out who linked it",
                meta.nlink()
            ),
        ));
    }
    Ok(file)
}

/// Read-only: [`open`] without writing.
pub(crate) fn open_read(path: &Path) -> std::io::Result<File> {
    open(path, OpenOptions::new().read(true), false)
}

/// Refuse a directory of the audit log (or the state directory) that is a
/// symlink: its files could then be anywhere.
pub(crate) fn check_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "it is {}, and airlock never follows a link in its state directory (its files could be anywhere); remove the link and set AIRLOCK_STATE_DIR to the real directory",
                describe(dir, &meta)
            ),
        )),
        _ => Ok(()),
    }
}

fn refusal(path: &Path, meta: &std::fs::Metadata) -> Error {
    Error::new(
        ErrorKind::InvalidInput,
        format!(
            "it is {}, not a regular file; airlock reads and writes only regular files of its own in its state directory, and never follows a link there: remove it (and find out who put it there)",
            describe(path, meta)
        ),
    )
}

/// "a symlink (to /etc/passwd)", "a FIFO", …
pub(crate) fn describe(path: &Path, meta: &std::fs::Metadata) -> String {
    let t = meta.file_type();
    if t.is_symlink() {
        match std::fs::read_link(path) {
            Ok(to) => format!("a symlink (to {})", to.display()),
            Err(_) => "a symlink".into(),
        }
    } else if t.is_fifo() {
        "a FIFO".into()
    } else if t.is_socket() {
        "a socket".into()
    } else if t.is_dir() {
        "a directory".into()
    } else if t.is_char_device() {
        "a character device".into()
    } else if t.is_block_device() {
        "a block device".into()
    } else if t.is_file() {
        "a regular file".into()
    } else {
        "not a regular file".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_fifo_and_hard_link_are_refused_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        std::fs::write(&target, "keep me").unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = open(&link, OpenOptions::new().read(true).write(true), true).unwrap_err();
        assert!(e.to_string().contains("a symlink (to "), "{e}");
        assert!(e.to_string().contains("remove it"), "{e}");
        let fifo = tmp.path().join("fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        // Read-only would block without O_NONBLOCK; write-only would fail ENXIO.
        let e = open_read(&fifo).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        let e = open(&fifo, OpenOptions::new().append(true), true).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        let hard = tmp.path().join("hard");
        std::fs::hard_link(&target, &hard).unwrap();
        assert!(open_read(&hard).is_ok());
        let e = open(&hard, OpenOptions::new().write(true), true).unwrap_err();
        assert!(e.to_string().contains("2 hard links"), "{e}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        let dir_link = tmp.path().join("dirlink");
        std::os::unix::fs::symlink(tmp.path(), &dir_link).unwrap();
        assert!(check_dir(&dir_link).is_err());
        assert!(check_dir(tmp.path()).is_ok());
    }
}
