/* Tries: the kernel keyrings, which are not namespaced: add a key with the
 * marker in its description to the user and session keyrings (the runner looks
 * for it in the host's /proc/keys), join a new session keyring, request_key.
 * Stops it: seccomp denies add_key, keyctl and request_key. */
#include "escape_lib.h"
#include <linux/keyctl.h>

int main(void) {
    start("kern_keyctl");
    char desc[128];
    snprintf(desc, sizeof desc, "airlock-escape-%s", tget("MARKER"));
    TRY("add_key(user keyring)", syscall(SYS_add_key, "user", desc, "pwned", 5, KEY_SPEC_USER_KEYRING));
    TRY("add_key(session keyring)", syscall(SYS_add_key, "user", desc, "pwned", 5, KEY_SPEC_SESSION_KEYRING));
    TRY("keyctl(JOIN_SESSION_KEYRING)", syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, desc));
    TRY("keyctl(GET_KEYRING_ID user)", syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0));
    errno = 0;
    long r = syscall(SYS_request_key, "user", "airlock-escape-absent", NULL, 0);
    if (r < 0 && errno == ENOKEY) escaped("request_key", "reached the keyring (ENOKEY)");
    else if (r < 0) blocked_errno("request_key", errno);
    else escaped("request_key", "found a key");
    return 0;
}
