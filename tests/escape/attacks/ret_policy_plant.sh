# Tries: with --apply, plant a policy file (airlock.toml) where airlock looks for
# one (the working directory) and in a subdirectory, while the active policy
# comes from elsewhere: the next run from there would obey it.
# Stops it: a file named airlock.toml is never written back by a run.
. ./escape_lib.sh
start ret_policy_plant
mkdir -p sub
printf '[network]\nmode = "open"\n' > airlock.toml
cp airlock.toml sub/airlock.toml
echo "planted airlock.toml inside"
blocked "plant a policy file" "judged by the runner on the host"
