# shellcheck shell=bash
# The per-machine test cache: what the tests build or install that does not
# depend on the checkout (scripts/test says what it holds), kept outside any
# checkout so that a fresh clone does not make it again. AIRLOCK_TEST_CACHE
# moves it; deleting it starts cold. Source it.
TEST_CACHE=${AIRLOCK_TEST_CACHE:-/var/cache/airlock-test}

# cache_make DONE COMMAND...: unless DONE exists, runs COMMAND, which makes it.
# One maker at a time on the machine (two test runs, or a benchmark beside
# one): a second caller waits for the lock and then finds DONE made.
cache_make() {
  local done=$1 lock rc=0
  shift
  [ -e "$done" ] && return 0
  mkdir -p "$TEST_CACHE" && exec {lock}>"$TEST_CACHE/.lock" && flock "$lock" || return 1
  [ -e "$done" ] || "$@" || rc=1
  exec {lock}>&-
  return $rc
}
