# Tries: with --apply, plant configuration that makes a host tool run a
# program of the run's on its first call, before any of the project's code:
# rustup's `path =` toolchain (any `cargo --version` in the workspace runs
# its cargo), cargo's `rustc-wrapper` (`cargo metadata`, which an editor runs
# on opening the folder, calls it), npm's `script-shell` (`npx`).
# Stops it: these files need a person (builtin.approval), which holds the
# whole change set; the runner looks for them on the host.
. ./escape_lib.sh
start ret_tool_config
mkdir -p .evil/tc/bin .cargo
printf '#!/bin/sh\ntouch /tmp/pwned-toolchain\n' > .evil/tc/bin/cargo && chmod +x .evil/tc/bin/cargo
printf '[toolchain]\npath = "%s/.evil/tc"\n' "$PWD" > rust-toolchain.toml
printf '[build]\nrustc-wrapper = "%s/.evil/tc/bin/cargo"\n' "$PWD" > .cargo/config.toml
printf 'script-shell=%s/.evil/tc/bin/cargo\n' "$PWD" > .npmrc
echo "rust-toolchain.toml, .cargo/config.toml and .npmrc written"
blocked "tool configuration that runs the run's program on the tool's first call" "judged by the runner on the host"
