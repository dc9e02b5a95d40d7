# Tries: the shell's view of the environment (env, set, export -p).
# Stops it: environment scrubbing before the command starts.
. ./escape_lib.sh
start sec_env_sh
env
set
if env | grep -q 'SECRET\|TOKEN\|API_KEY'; then escaped "secret-named variables" "$(env | grep 'SECRET\|TOKEN\|API_KEY' | cut -d= -f1 | tr '\n' ' ')"; else blocked "secret-named variables" "absent"; fi
