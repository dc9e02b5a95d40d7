//! External anchoring of the chain: an operator-held ed25519 key signs
//! checkpoints of the chain's head, so that someone who can write the state
//! directory (and so rewrite every record and `head.json` consistently) cannot
//! do it unseen by `airlock audit verify --key PUB` (finding 7 of issue 13).
//!
//! A checkpoint is a record of its own (`kind: "checkpoint"`) that signs the
//! seq and hash of the record right before it; being in the chain, it is itself
//! covered by the next checkpoint. Checkpoints are written when the last one is
//! older than the interval (by whichever airlock process appends next, and by
//! `airlock serve` on a timer), on `airlock audit checkpoint`, and each one is
//! also exported: appended to a file the operator ships elsewhere, and sent to
//! syslog/journald. The key lives outside the state directory, in a file only
//! its owner can read (PKCS#8 PEM, as `openssl genpkey -algorithm ed25519`
//! writes it); the public half (SPKI PEM) is what `verify --key` takes.

use super::record::CheckpointEvent;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use ed25519_dalek::{Signer, Verifier};
use sha2::{Digest, Sha256};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often a checkpoint is due when nothing else is configured.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum AnchorError {
    #[error("audit signing key {path}: {detail}")]
    Key { path: PathBuf, detail: String },
    #[error("{what} {path} is inside the state directory {state}: whoever can rewrite the log could read or replace it. Keep it elsewhere (Hint: /etc/airlock/, or a directory only the operator owns)")]
    InsideStateDir {
        what: &'static str,
        path: PathBuf,
        state: PathBuf,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The id of a public key: the first 16 hex digits of the SHA-256 of its 32 bytes.
pub fn key_id(key: &ed25519_dalek::VerifyingKey) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))[..16].to_string()
}

/// The exact bytes a checkpoint's signature covers.
pub fn payload(seq: u64, hash: &str, time: &str, key_id: &str) -> Vec<u8> {
    format!("airlock-audit-checkpoint/v1\nseq={seq}\nhash={hash}\ntime={time}\nkey={key_id}\n")
        .into_bytes()
}

/// Where checkpoints go besides the log itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exports {
    /// Appended one JSON line per checkpoint (fsynced), for shipping elsewhere.
    pub file: Option<PathBuf>,
    /// A syslog datagram socket (`/dev/log`, which journald also serves).
    pub syslog: Option<PathBuf>,
}

/// The signing side, as the log writer holds it.
pub struct Anchor {
    key: ed25519_dalek::SigningKey,
    key_id: String,
    pub interval: Duration,
    pub exports: Exports,
}

impl std::fmt::Debug for Anchor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Anchor")
            .field("key_id", &self.key_id)
            .field("interval", &self.interval)
            .field("exports", &self.exports)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Anchor {
    fn eq(&self, other: &Self) -> bool {
        self.key_id == other.key_id
            && self.interval == other.interval
            && self.exports == other.exports
    }
}

impl Anchor {
    /// Load the signing key from `path`, which must be outside `state_dir` and
    /// readable by its owner only; the export file must be outside it too.
    pub fn load(
        path: &Path,
        state_dir: &Path,
        interval: Duration,
        exports: Exports,
    ) -> Result<Anchor, AnchorError> {
        outside_state_dir("the audit signing key", path, state_dir)?;
        if let Some(file) = &exports.file {
            outside_state_dir("the checkpoint export file", file, state_dir)?;
        }
        let key_err = |detail: String| AnchorError::Key {
            path: path.to_path_buf(),
            detail,
        };
        let meta = std::fs::metadata(path).map_err(|e| key_err(e.to_string()))?;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(key_err(format!(
                "is readable by others (mode {:o}); chmod 600 it",
                meta.permissions().mode() & 0o777
            )));
        }
        let pem = std::fs::read_to_string(path).map_err(|e| key_err(e.to_string()))?;
        let key = ed25519_dalek::SigningKey::from_pkcs8_pem(&pem).map_err(|e| {
            key_err(format!(
                "not an ed25519 private key in PKCS#8 PEM ({e}); make one with `airlock audit keygen --out FILE` or `openssl genpkey -algorithm ed25519 -out FILE`"
            ))
        })?;
        Ok(Anchor {
            key_id: key_id(&key.verifying_key()),
            key,
            interval,
            exports,
        })
    }

    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    pub fn verifying_key(&self) -> ed25519_dalek::VerifyingKey {
        self.key.verifying_key()
    }

    /// Sign the head `(seq, hash)` at `time`.
    pub fn sign(&self, seq: u64, hash: &str, time: &str) -> CheckpointEvent {
        let signature = self.key.sign(&payload(seq, hash, time, &self.key_id));
        CheckpointEvent {
            signed_seq: seq,
            signed_hash: hash.to_string(),
            signed_at: time.to_string(),
            key_id: self.key_id.clone(),
            signature: hex::encode(signature.to_bytes()),
        }
    }

    /// Whether `c` is a checkpoint this anchor made (a forged record at the end
    /// of the log must not postpone the next real checkpoint).
    pub fn made(&self, c: &CheckpointEvent) -> bool {
        check_signature(&self.verifying_key(), c).is_ok()
    }

    /// Send a checkpoint to the configured exports. Failures are returned for
    /// the caller to report; the checkpoint is in the log either way.
    pub fn export(&self, c: &CheckpointEvent) -> Vec<String> {
        let mut problems = Vec::new();
        let line = serde_json::to_string(c).unwrap_or_default();
        if let Some(path) = &self.exports.file {
            if let Err(e) = append_line(path, &line) {
                problems.push(format!("checkpoint export file {}: {e}", path.display()));
            }
        }
        if let Some(socket) = &self.exports.syslog {
            if let Err(e) = send_syslog(socket, &line) {
                problems.push(format!("syslog {}: {e}", socket.display()));
            }
        }
        problems
    }
}

/// Why a checkpoint does not hold.
pub fn check_signature(
    key: &ed25519_dalek::VerifyingKey,
    c: &CheckpointEvent,
) -> Result<(), String> {
    let expected = key_id(key);
    if c.key_id != expected {
        return Err(format!(
            "it was signed by key {}, not by the given key {expected}",
            c.key_id
        ));
    }
    let bytes = hex::decode(&c.signature).map_err(|_| "its signature is not hex".to_string())?;
    let signature = ed25519_dalek::Signature::from_slice(&bytes)
        .map_err(|_| "its signature is not 64 bytes".to_string())?;
    key.verify(&payload(c.signed_seq, &c.signed_hash, &c.signed_at, &c.key_id), &signature)
        .map_err(|_| "its signature does not verify: the signed seq, hash or time was changed, or the checkpoint was forged".to_string())
}

/// Read a public key (SPKI PEM, `-----BEGIN PUBLIC KEY-----`).
pub fn load_public_key(path: &Path) -> Result<ed25519_dalek::VerifyingKey, AnchorError> {
    let err = |detail: String| AnchorError::Key {
        path: path.to_path_buf(),
        detail,
    };
    let pem = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    ed25519_dalek::VerifyingKey::from_public_key_pem(&pem).map_err(|e| {
        err(format!(
            "not an ed25519 public key in PEM ({e}); `airlock audit keygen` wrote it as FILE.pub, or `openssl pkey -in KEY -pubout` makes one"
        ))
    })
}

/// Make a new key pair: `out` (PKCS#8 PEM, mode 0600, never overwritten) and
/// `out.pub` (SPKI PEM). Returns the key id.
pub fn generate(out: &Path) -> Result<(PathBuf, String), AnchorError> {
    let io = |path: &Path, source| AnchorError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut seed = [0u8; 32];
    std::io::Read::read_exact(
        &mut std::fs::File::open("/dev/urandom").map_err(|e| io(Path::new("/dev/urandom"), e))?,
        &mut seed,
    )
    .map_err(|e| io(Path::new("/dev/urandom"), e))?;
    let key = ed25519_dalek::SigningKey::from_bytes(&seed);
    let private = key
        .to_pkcs8_pem(LineEnding::LF)
        .map_err(|e| io(out, std::io::Error::other(e.to_string())))?;
    let public = key
        .verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .map_err(|e| io(out, std::io::Error::other(e.to_string())))?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(out)
        .map_err(|e| io(out, e))?;
    std::io::Write::write_all(&mut file, private.as_bytes()).map_err(|e| io(out, e))?;
    file.sync_all().map_err(|e| io(out, e))?;
    let mut pub_path = out.as_os_str().to_owned();
    pub_path.push(".pub");
    let pub_path = PathBuf::from(pub_path);
    std::fs::write(&pub_path, public).map_err(|e| io(&pub_path, e))?;
    Ok((pub_path, key_id(&key.verifying_key())))
}

fn outside_state_dir(what: &'static str, path: &Path, state: &Path) -> Result<(), AnchorError> {
    let real = |p: &Path| {
        std::fs::canonicalize(p).unwrap_or_else(|_| {
            // A file not created yet: judge by its folder.
            p.parent()
                .and_then(|d| std::fs::canonicalize(d).ok())
                .map(|d| d.join(p.file_name().unwrap_or_default()))
                .unwrap_or_else(|| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
        })
    };
    let (path_r, state_r) = (real(path), real(state));
    if path_r.starts_with(&state_r) {
        return Err(AnchorError::InsideStateDir {
            what,
            path: path.to_path_buf(),
            state: state.to_path_buf(),
        });
    }
    Ok(())
}

fn append_line(path: &Path, line: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o644)
        .open(path)?;
    std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes())?;
    f.sync_data()
}

/// One RFC 3164 datagram, facility authpriv, severity notice (`<85>`): what
/// rsyslog and journald both take on `/dev/log`.
fn send_syslog(socket: &Path, line: &str) -> std::io::Result<()> {
    let sock = std::os::unix::net::UnixDatagram::unbound()?;
    let message = format!(
        "<85>airlock-audit[{}]: checkpoint {line}",
        std::process::id()
    );
    sock.send_to(message.as_bytes(), socket).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_then_verify_and_every_change_fails() {
        let dir = tempfile::tempdir().unwrap();
        let (pub_path, id) = generate(&dir.path().join("k.pem")).unwrap();
        assert_eq!(
            std::fs::metadata(dir.path().join("k.pem"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
        assert!(
            generate(&dir.path().join("k.pem")).is_err(),
            "never overwritten"
        );
        let state = tempfile::tempdir().unwrap();
        let anchor = Anchor::load(
            &dir.path().join("k.pem"),
            state.path(),
            DEFAULT_INTERVAL,
            Exports::default(),
        )
        .unwrap();
        assert_eq!(anchor.key_id(), id);
        let public = load_public_key(&pub_path).unwrap();
        let c = anchor.sign(7, &"ab".repeat(32), "2026-12-02T08:00:00.000Z");
        assert_eq!(check_signature(&public, &c), Ok(()));
        for tamper in [
            |c: &mut CheckpointEvent| c.signed_seq += 1,
            |c: &mut CheckpointEvent| c.signed_hash = "cd".repeat(32),
            |c: &mut CheckpointEvent| c.signed_at = "2030-01-01T00:00:00.000Z".into(),
            |c: &mut CheckpointEvent| c.signature = "00".repeat(64),
        ] {
            let mut bad = c.clone();
            tamper(&mut bad);
            assert!(check_signature(&public, &bad).is_err());
        }
        // Another key: named as such.
        let (other_pub, _) = generate(&dir.path().join("other.pem")).unwrap();
        let err = check_signature(&load_public_key(&other_pub).unwrap(), &c).unwrap_err();
        assert!(err.contains("signed by key"), "{err}");
    }

    #[test]
    fn the_key_must_be_private_and_outside_the_state_dir() {
        let state = tempfile::tempdir().unwrap();
        let inside = state.path().join("k.pem");
        generate(&inside).unwrap();
        let err =
            Anchor::load(&inside, state.path(), DEFAULT_INTERVAL, Exports::default()).unwrap_err();
        assert!(matches!(err, AnchorError::InsideStateDir { .. }), "{err}");
        let other = tempfile::tempdir().unwrap();
        let key = other.path().join("k.pem");
        generate(&key).unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err =
            Anchor::load(&key, state.path(), DEFAULT_INTERVAL, Exports::default()).unwrap_err();
        assert!(err.to_string().contains("readable by others"), "{err}");
    }
}
