# Tries: read cargo's registry tokens (`cargo login` writes ~/.cargo/credentials.toml,
# older cargo ~/.cargo/credentials) through the rust preset, which shows the whole
# cargo home read-only. Rootless, the sandbox's uid is the caller's, so the files'
# 0600 would not stop it. Stops it: the preset shows the cargo home entry by
# entry and leaves both files out (on every backend: gVisor cannot cover a file).
import os
import escape_lib as L

L.start()
cargo = os.path.join(L.T["FAKE_HOME"], ".cargo")
if os.path.isdir(os.path.join(cargo, "bin")):
    L.say("INFO cargo home shown: its bin is there")
for name in ("credentials.toml", "credentials"):
    what = f"cargo's {name}"
    try:
        data = L.read_file(os.path.join(cargo, name))
    except OSError as e:
        L.blocked(what, L.ename(e))
        continue
    if data:
        L.escaped(what, data.decode("utf-8", "replace")[:400])
    else:
        L.blocked(what, "empty (masked)")
