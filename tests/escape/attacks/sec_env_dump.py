# Tries: read the caller's secrets from the environment (AWS_SECRET_ACCESS_KEY,
# GITHUB_TOKEN, ...). Stops it: the environment is rebuilt from env.pass/env.set
# only; everything else of the caller is dropped.
import os
import escape_lib as L

L.start()
leaked = [k for k in os.environ if k in ("AIRLOCK_ESCAPE_SECRET", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "OPENAI_API_KEY", "SSH_AUTH_SOCK")]
for k, v in sorted(os.environ.items()):
    print(f"env {k}={v}")
if leaked:
    L.escaped("caller environment variables", ", ".join(leaked))
else:
    L.blocked("caller environment variables", "absent")
if os.environ.get("HOME") == L.T["FAKE_HOME"]:
    L.escaped("caller HOME", "passed through")
