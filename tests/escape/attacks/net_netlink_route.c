/* Tries: change the network with NETLINK_ROUTE: add 127.77.7.7/32 to lo (the
 * runner looks for it on the host's lo) and bring a link up. With caps in the
 * sandbox's user namespace this only touches the sandbox's own netns, but it
 * means CAP_NET_ADMIN was kept (the netfilter-CVE surface).
 * Stops it: no capabilities; separate network namespace. */
#include "escape_lib.h"
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/if_addr.h>
#include <arpa/inet.h>
#include <net/if.h>

int main(void) {
    start("net_netlink_route");
    int s = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
    if (s < 0) {
        blocked_errno("netlink route socket", errno);
        return 0;
    }
    struct {
        struct nlmsghdr nh;
        struct ifaddrmsg ifa;
        char attrs[64];
    } req;
    memset(&req, 0, sizeof req);
    req.nh.nlmsg_type = RTM_NEWADDR;
    req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
    req.ifa.ifa_family = AF_INET;
    req.ifa.ifa_prefixlen = 32;
    req.ifa.ifa_index = if_nametoindex("lo");
    struct rtattr *rta = (struct rtattr *)req.attrs;
    rta->rta_type = IFA_LOCAL;
    rta->rta_len = RTA_LENGTH(4);
    inet_pton(AF_INET, tget("LO_MARK_ADDR"), RTA_DATA(rta));
    req.nh.nlmsg_len = NLMSG_LENGTH(sizeof req.ifa) + RTA_ALIGN(rta->rta_len);
    struct sockaddr_nl kern = {.nl_family = AF_NETLINK};
    if (sendto(s, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&kern, sizeof kern) < 0) {
        blocked_errno("RTM_NEWADDR send", errno);
        return 0;
    }
    char buf[4096];
    ssize_t n = recv(s, buf, sizeof buf, 0);
    struct nlmsghdr *h = (struct nlmsghdr *)buf;
    if (n > 0 && h->nlmsg_type == NLMSG_ERROR) {
        int err = -((struct nlmsgerr *)NLMSG_DATA(h))->error;
        if (err == 0) escaped("RTM_NEWADDR 127.77.7.7 on lo", "the kernel accepted it (CAP_NET_ADMIN kept)");
        else blocked_errno("RTM_NEWADDR 127.77.7.7 on lo", err);
    } else {
        blocked("RTM_NEWADDR", "no answer");
    }
    return 0;
}
