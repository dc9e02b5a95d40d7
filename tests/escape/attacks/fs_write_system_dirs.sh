# Tries: create files in host system and private directories (/usr/bin, /etc,
# /, /root, /var/tmp, /dev/shm, the caller's $HOME). Stops it: system dirs are
# read-only binds; /, /tmp and /dev/shm are the sandbox's own tmpfs; $HOME and
# /root are not there. The runner looks for the planted names on the host.
# / belongs to sandbox root, as a container's root does, and stays read-only:
# owning it must not let the sandbox change its mode or owner.
. ./escape_lib.sh
start fs_write_system_dirs
for d in /usr/bin /etc / /root /var/tmp /dev/shm /tmp "$FAKE_HOME" "$TMP_CANARY_DIR" /usr/local/bin; do
  if (echo pwned > "$d/$PWNED") 2>/dev/null; then
    echo "wrote $d/$PWNED (inside: host must not see it)"
  else
    blocked "write $d" "refused"
  fi
done
# open for append but write nothing: harmless even when run with no sandbox
if (: >> /etc/passwd) 2>/dev/null; then escaped "open /etc/passwd for writing" "opened"; else blocked "open /etc/passwd for writing" "refused"; fi
if (: >> /etc/hostname) 2>/dev/null; then escaped "open /etc/hostname for writing" "opened"; else blocked "open /etc/hostname for writing" "refused"; fi
if chmod 0777 / 2>/dev/null; then escaped "chmod / (owned by sandbox root)" "changed"; else blocked "chmod /" "refused"; fi
if chown 1:1 / 2>/dev/null; then escaped "chown / (owned by sandbox root)" "changed"; else blocked "chown /" "refused"; fi
