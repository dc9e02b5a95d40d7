# Tries: with --apply, plant what an already trusted hook manager or direnv
# configuration runs without asking again: a script in lefthook's
# `source_dir` (`.lefthook/pre-commit/`, run by the hook lefthook installed
# at the next `git commit`), an `.envrc.local` (an allowed `.envrc`'s
# `source_env_if_exists .envrc.local` runs it on the next `cd`, with no new
# `direnv allow`), and a `package.json` whose `husky.hooks` and
# `lint-staged` name commands (husky 4's installed hooks read them at every
# commit).
# Stops it: these need a person (builtin.approval; builtin.package_json_hooks,
# which compares the hook keys with the host's package.json), which holds the
# whole change set; the runner looks for them on the host.
. ./escape_lib.sh
start ret_hook_scripts
mkdir -p .lefthook/pre-commit
printf '#!/bin/sh\ntouch /tmp/pwned-lefthook\n' > .lefthook/pre-commit/lint.sh && chmod +x .lefthook/pre-commit/lint.sh
printf 'touch /tmp/pwned-envrc-local\n' > .envrc.local
printf '{"name":"x","husky":{"hooks":{"pre-commit":"touch /tmp/pwned-husky"}},"lint-staged":{"*":"touch /tmp/pwned-lint-staged"}}\n' > package.json
echo ".lefthook/pre-commit/lint.sh, .envrc.local and package.json written"
blocked "hook-manager scripts, .envrc.local and package.json hook keys" "judged by the runner on the host"
