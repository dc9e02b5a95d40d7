/* Tries: AF_PACKET sockets (raw link layer: sniff and inject frames), which the
 * issue says are always refused. Stops it: the seccomp socket-family filter (in
 * proxy mode netwatch, which also logs the attempt) and no CAP_NET_RAW. */
#include "escape_lib.h"
#include <sys/socket.h>
#include <linux/if_ether.h>

int main(void) {
    start("net_packet_socket");
    int s = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    if (s < 0) blocked_errno("AF_PACKET SOCK_RAW", errno);
    else escaped("AF_PACKET SOCK_RAW", "created");
    s = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP));
    if (s < 0) blocked_errno("AF_PACKET SOCK_DGRAM", errno);
    else escaped("AF_PACKET SOCK_DGRAM", "created");
    return 0;
}
