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
left=$(ls -A "$HOME" 2>&1 | head -c 300)
if [ -n "$left" ]; then escaped "HOME is not empty" "$left"; else blocked "HOME is not empty" "empty"; fi
if [ -e /tmp/.airlock-left-behind ] || [ -e "$HOME/.airlock-left-behind" ] || [ -e "$HOME/.airlock-left-behind-2" ]; then
  escaped "an earlier run's HOME file" "found"
else
  blocked "an earlier run's HOME file" "none"
fi
if [ "$(stat -c %d "$HOME" 2>/dev/null)" = "$(stat -c %d /tmp 2>/dev/null)" ]; then
  escaped "HOME shares /tmp's filesystem" "same device"
else
  blocked "HOME shares /tmp's filesystem" "a filesystem of its own"
fi
if echo ok > "$HOME/.airlock-left-behind-2" && [ "$(cat "$HOME/.airlock-left-behind-2")" = ok ]; then
  echo "HOME is writable"
else
  escaped "HOME unusable" "cannot write to $HOME"
fi
