# Tries: list and read /root and /home (the real home of the user running
# airlock; only /root/.pyenv may be visible, read-only, so python3 works).
# Contents are not printed, only what is visible. Stops it: only the
# interpreter's directory is bound from the home.
import os
import escape_lib as L

L.start()
for d in ("/root", "/home"):
    try:
        names = sorted(os.listdir(d))
    except OSError as e:
        L.blocked(f"list {d}", L.ename(e))
        continue
    extra = [n for n in names if n != ".pyenv"]
    if extra:
        L.escaped(f"list {d}", f"visible: {extra[:12]}")
    else:
        L.blocked(f"list {d}", f"only {names}")
for p in ("/root/.bash_history", "/root/.ssh/authorized_keys", "/root/.cargo/credentials.toml", "/root/.gitconfig", "/etc/shadow", "/etc/gshadow", "/etc/ssh/ssh_host_ed25519_key"):
    L.try_read(p, p, show=False)
# .pyenv, if visible, must be read-only
pe = "/root/.pyenv/" + L.T["PWNED"]
try:
    with open(pe, "w") as f:
        f.write("x")
    os.unlink(pe)
    L.escaped("write into /root/.pyenv", "writable")
except OSError as e:
    L.blocked("write into /root/.pyenv", L.ename(e))
