# Control: /tmp is writable (and readable back) inside the sandbox.
echo CONTROL-START
echo hello > /tmp/ctl.txt && [ "$(cat /tmp/ctl.txt)" = hello ] && rm /tmp/ctl.txt && echo "CONTROL-OK /tmp writable"
