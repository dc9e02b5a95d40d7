/* Tries: netlink families beyond what `ip` needs to show loopback: audit,
 * kobject uevents, sock_diag, netfilter, generic, xfrm, selinux. (NETLINK_ROUTE
 * is allowed by design; net_netlink_route tries to change things with it.)
 * Stops it: seccomp refuses AF_NETLINK except NETLINK_ROUTE. */
#include "escape_lib.h"
#include <sys/socket.h>
#include <linux/netlink.h>

int main(void) {
    start("net_netlink");
    struct { int proto; const char *name; } fams[] = {
        {NETLINK_AUDIT, "netlink audit"},
        {NETLINK_KOBJECT_UEVENT, "netlink kobject_uevent"},
        {NETLINK_SOCK_DIAG, "netlink sock_diag"},
        {NETLINK_NETFILTER, "netlink netfilter"},
        {NETLINK_GENERIC, "netlink generic"},
        {NETLINK_XFRM, "netlink xfrm"},
        {NETLINK_SELINUX, "netlink selinux"},
        {NETLINK_CONNECTOR, "netlink connector"},
    };
    for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++) {
        int s = socket(AF_NETLINK, SOCK_RAW, fams[i].proto);
        if (s < 0) blocked_errno(fams[i].name, errno);
        else { escaped(fams[i].name, "socket created"); close(s); }
    }
    return 0;
}
