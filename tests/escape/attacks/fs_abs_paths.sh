# Tries: read the canaries with plain cat through absolute paths and through
# /./ and // spellings. Stops it: the host's $HOME and /tmp are not in the
# sandbox's filesystem view.
. ./escape_lib.sh
start fs_abs_paths
try_read "cat home canary" "$CANARY_HOME"
try_read "cat tmp canary" "$CANARY_TMP"
try_read "cat //./ spelling" "/.//$(echo "$CANARY_TMP" | sed 's#^/##')"
try_read "cat aws credentials" "$CANARY_AWS"
if ls "$FAKE_HOME" >/dev/null 2>&1; then escaped "list caller HOME" "$(ls -a "$FAKE_HOME" | tr '\n' ' ')"; else blocked "list caller HOME" "not visible"; fi
if ls "$TMP_CANARY_DIR" >/dev/null 2>&1; then escaped "list host /tmp canary dir" "$(ls "$TMP_CANARY_DIR")"; else blocked "list host /tmp canary dir" "not visible"; fi
