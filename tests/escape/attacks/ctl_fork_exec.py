# Control: ordinary process creation: subprocess, a few children, exit codes.
import subprocess
import escape_lib as L

print("CONTROL-START")
codes = [subprocess.run(["sh", "-c", f"exit {i}"]).returncode for i in range(5)]
out = subprocess.run(["ls", "/usr/bin"], capture_output=True, text=True).stdout
if codes == [0, 1, 2, 3, 4] and "python3" in out:
    L.control_ok("subprocess works")
