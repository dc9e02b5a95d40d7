/* Tries: raw IP sockets (ICMP, UDP, IPPROTO_RAW) and send a hand-made UDP
 * packet to the host listener. In a user namespace that owns its network
 * namespace, root gets CAP_NET_RAW there, so the kernel alone would allow it.
 * Stops it: all capabilities dropped, and seccomp allows only AF_UNIX. */
#include "escape_lib.h"
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <arpa/inet.h>
#include <sys/socket.h>

int main(void) {
    start("net_raw_socket");
    int protos[] = {IPPROTO_ICMP, IPPROTO_UDP, IPPROTO_RAW};
    const char *names[] = {"raw icmp", "raw udp", "raw ipproto_raw"};
    for (int i = 0; i < 3; i++) {
        int s = socket(AF_INET, SOCK_RAW, protos[i]);
        if (s < 0) {
            blocked_errno(names[i], errno);
            continue;
        }
        escaped(names[i], "raw socket created");
        if (protos[i] == IPPROTO_UDP) {
            char pkt[sizeof(struct udphdr) + 16];
            struct udphdr *u = (struct udphdr *)pkt;
            memset(pkt, 0, sizeof pkt);
            u->source = htons(4242);
            u->dest = htons((unsigned short)tgetl("UDP_PORT"));
            u->len = htons(sizeof pkt);
            memcpy(pkt + sizeof *u, "PWNED-raw-udp...", 16);
            struct sockaddr_in to = {.sin_family = AF_INET};
            inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
            sendto(s, pkt, sizeof pkt, 0, (struct sockaddr *)&to, sizeof to);
        }
        close(s);
    }
    int ping = socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
    if (ping < 0) blocked_errno("icmp datagram (ping) socket", errno);
    else escaped("icmp datagram (ping) socket", "created");
    return 0;
}
