# Tries: find what an earlier run left in HOME (cfg_git_planted_config leaves
# ~/.airlock-left-behind; this case leaves ~/.airlock-left-behind-2 for the
# next corpus run), and use /tmp as HOME.
# Stops it: every run gets HOME=/home/airlock on an empty tmpfs of its own,
# separate from /tmp, made for that run and gone with it.
. ./escape_lib.sh
start cfg_home_fresh
echo "HOME=$HOME"
case "$HOME" in
  /tmp|/tmp/*) escaped "HOME under /tmp" "$HOME" ;;
  *) blocked "HOME under /tmp" "HOME is $HOME" ;;
esac
# Python's listdir and stat, not coreutils' (whose statx flags some user-space
# kernels reject): a failed look must not read as an empty HOME or a shared device.
left=$(python3 -c 'import os,sys; print(" ".join(os.listdir(sys.argv[1])))' "$HOME" 2>&1 | head -c 300)
if [ -n "$left" ]; then escaped "HOME is not empty" "$left"; else blocked "HOME is not empty" "empty"; fi
if [ -e /tmp/.airlock-left-behind ] || [ -e "$HOME/.airlock-left-behind" ] || [ -e "$HOME/.airlock-left-behind-2" ]; then
  escaped "an earlier run's HOME file" "found"
else
  blocked "an earlier run's HOME file" "none"
fi
devs=$(python3 -c 'import os,sys; print(*(os.stat(p).st_dev for p in sys.argv[1:]))' "$HOME" /tmp 2>&1)
case "$devs" in
  *[!0-9\ ]*|"") escaped "HOME shares /tmp's filesystem" "cannot tell: $devs" ;;
esac
if [ "${devs% *}" = "${devs#* }" ]; then
  escaped "HOME shares /tmp's filesystem" "same device"
else
  blocked "HOME shares /tmp's filesystem" "a filesystem of its own"
fi
if echo ok > "$HOME/.airlock-left-behind-2" && [ "$(cat "$HOME/.airlock-left-behind-2")" = ok ]; then
  echo "HOME is writable"
else
  escaped "HOME unusable" "cannot write to $HOME"
fi
