# Tries: plant git configuration where git looks for it -- ~/.gitconfig,
# /tmp/.gitconfig (the old sandbox HOME), $XDG_CONFIG_HOME/git/config and
# ~/.config/git/config -- with core.fsmonitor, core.pager and a `!` alias that
# run a payload, then `git status`, `git st`, `git log` (under a pty, so the
# pager runs) in the same run. The payload appends to a marker file in the
# workspace; any line there is a planted command that ran.
# Stops it: GIT_CONFIG_GLOBAL names airlock's read-only /etc/airlock/gitconfig
# (so ~/.gitconfig and $XDG_CONFIG_HOME/git/config are never read),
# GIT_CONFIG_NOSYSTEM=1, and HOME is a fresh tmpfs, not /tmp.
# A last step unsets that protection by hand and must then see the payload
# run: proof that the marker would have caught it (printed as a note, not as
# ESCAPED, since a command may always change its own environment).
. ./escape_lib.sh
start cfg_git_planted_config
command -v git >/dev/null 2>&1 || { echo "CONTROL-FAIL git is not installed"; exit 1; }
MARK="$PWD/git-planted-marker"
P=/tmp/git-payload.sh
printf '#!/bin/sh\necho "$1" >> "%s"\n' "$MARK" > "$P"
chmod +x "$P"
echo "HOME=$HOME XDG_CONFIG_HOME=${XDG_CONFIG_HOME:-} GIT_CONFIG_GLOBAL=${GIT_CONFIG_GLOBAL:-} GIT_CONFIG_NOSYSTEM=${GIT_CONFIG_NOSYSTEM:-}"

REPO=/tmp/git-planted-repo
rm -rf "$REPO"
git init -q "$REPO" && cd "$REPO" && echo x > f && git add f \
  && git -c user.name=a -c user.email=a@example.invalid commit -qm x || { echo "CONTROL-FAIL git init/commit"; exit 1; }
cd - >/dev/null

plant() { # FILE TAG
  mkdir -p "$(dirname "$1")" 2>/dev/null
  printf '[core]\n\tfsmonitor = "%s %s-fsmonitor"\n\tpager = "%s %s-pager; cat"\n[alias]\n\tst = "!%s %s-alias"\n' \
    "$P" "$2" "$P" "$2" "$P" "$2" > "$1" 2>/dev/null
}
# Runs a command under a new pty until it exits (not until the master reads
# EOF, which gVisor's pty never reports: pty.spawn would hang there).
IN_PTY='
import os, pty, select, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
while True:
    if select.select([fd], [], [], 0.1)[0]:
        try:
            if not os.read(fd, 4096):
                break
        except OSError:
            break
    elif os.waitpid(pid, os.WNOHANG)[0]:
        break
'
run_git() {
  ( cd "$REPO" || exit 1
    git status >/dev/null 2>&1
    git st >/dev/null 2>&1
    PAGER=cat timeout 10 python3 -c "$IN_PTY" git log -1 >/dev/null 2>&1 </dev/null
  )
}
verdict() { # WHAT
  if [ -s "$MARK" ]; then
    escaped "$1" "planted command ran: $(tr '\n' ' ' < "$MARK")"
  else
    blocked "$1" "git ran nothing from it"
  fi
  rm -f "$MARK"
}

for spot in "$HOME/.gitconfig:home" "/tmp/.gitconfig:tmp" \
            "${XDG_CONFIG_HOME:-$HOME/.config}/git/config:xdg" "$HOME/.config/git/config:dotconfig"; do
  file=${spot%:*}; tag=${spot##*:}
  if plant "$file" "$tag"; then
    run_git
    verdict "planted $file"
    rm -f "$file"
  else
    blocked "plant $file" "could not write it"
  fi
done

# The same with HOME pointed at /tmp by hand, as the old sandbox had it: still
# closed, because GIT_CONFIG_GLOBAL wins over HOME.
plant /tmp/.gitconfig tmphome
(HOME=/tmp; export HOME; run_git)
verdict "HOME=/tmp with /tmp/.gitconfig planted"

# Sanity: with the protection undone by hand the same plant must run, or the
# marker proves nothing.
(cd "$REPO" && env -u GIT_CONFIG_GLOBAL -u GIT_CONFIG_NOSYSTEM HOME=/tmp git status >/dev/null 2>&1)
if [ -s "$MARK" ]; then
  echo "NOTE sanity: with GIT_CONFIG_GLOBAL unset the planted fsmonitor ran ($(tr '\n' ' ' < "$MARK"))"
else
  echo "NOTE sanity: the planted fsmonitor did not run even unprotected: this case proves nothing"
  echo "ESCAPED sanity: the marker is not reachable"
fi
rm -f "$MARK" /tmp/.gitconfig
# Left behind on purpose: cfg_home_fresh (the next case) must not find it.
echo "planted by cfg_git_planted_config" > "$HOME/.airlock-left-behind" 2>/dev/null
