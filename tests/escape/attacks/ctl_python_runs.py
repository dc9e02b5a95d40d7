# Control: python3 on PATH runs (the interpreter may live under a home
# directory, as with pyenv), with its standard library.
import json
import sys
import escape_lib as L

print("CONTROL-START")
json.dumps({"ok": True})
L.control_ok(f"python {sys.version.split()[0]} at {sys.executable}")
