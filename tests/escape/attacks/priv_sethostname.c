/* Tries: change the host name (the runner checks the host's
 * name afterwards and restores it if a run without a sandbox changed it).
 * Stops it: UTS namespace, and no CAP_SYS_ADMIN. */
#include "escape_lib.h"

int main(void) {
    start("priv_sethostname");
    const char *name = "airlock-escape-pwned";
    if (sethostname(name, strlen(name)) == 0) escaped("sethostname", "changed");
    else blocked_errno("sethostname", errno);
    return 0;
}
