# Tries: with --apply, forge the change report with file names holding a newline
# ("x\n  deleted  readme.txt" prints a fake line), terminal escapes and a bidi
# override, and a symlink whose target holds a newline (issue 11, finding 7).
# Stops it: names and targets are reported escaped (\n, \x1b, \u{202e}),
# losslessly; the runner looks at the JSON report.
import os
from escape_lib import *

start("ret_names_control")
for name in ["x\n  deleted  readme.txt", "\x1b[2Jclear", "bidi\u202etxt.exe", "tab\there", "cr\rhere"]:
    with open(name, "w") as f:
        f.write("data\n")
os.symlink("readme.txt\n  deleted readme.txt", "link-nl")
blocked("forge the change report with control characters", "judged by the runner on the report")
