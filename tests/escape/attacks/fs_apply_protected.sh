# Tries: with workspace.apply = auto, smuggle changes to protected paths back to
# the host: a new .git/hooks/pre-commit (runs on the host at the next commit), an
# edited .git/config (core.fsmonitor/hooksPath also run code), and a setuid
# executable. Stops it: protected paths are never written back; the copy-back
# must not carry setuid/setgid bits.
. ./escape_lib.sh
start fs_apply_protected
printf '#!/bin/sh\necho %s > /tmp/%s\n' "$PWNED" "$PWNED" > .git/hooks/pre-commit && chmod 755 .git/hooks/pre-commit
printf '[core]\n\tfsmonitor = "echo %s"\n\thooksPath = /tmp\n' "$PWNED" >> .git/config
mkdir -p .git/hooks/sub && echo x > .git/hooks/sub/extra
cp /bin/true ./suidbin && chmod 4755 ./suidbin && chmod 2755 ./suidbin 2>/dev/null; chmod 6755 ./suidbin
echo ordinary > ordinary.txt
blocked "apply of protected paths" "judged by the runner on the host"
