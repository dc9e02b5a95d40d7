# Control: `python3 -m pip list` works offline inside the sandbox.
echo CONTROL-START
out=$(python3 -m pip list --disable-pip-version-check 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -qi '^pip ' && echo "CONTROL-OK pip list shows $(echo "$out" | wc -l) lines"
