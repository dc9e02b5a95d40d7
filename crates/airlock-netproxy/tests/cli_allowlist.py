#!/usr/bin/env python3
"""`airlock run` with `network.mode = "allowlist"`, through the CLI, the engine,
the real sandbox and the egress proxy, judged by the JSON outcome and the audit
log. Only names that the policy refuses before any lookup are used, and the
direct attempts target TEST-NET addresses that never leave the sandbox's empty
network namespace, so nothing here sends a packet off this machine.

Usage: cli_allowlist.py PATH_TO_AIRLOCK_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile

AIRLOCK = sys.argv[1]
PROBE = r'''
import urllib.request, socket, errno, os
print("env", os.environ.get("HTTPS_PROXY"), os.environ.get("ALL_PROXY"), os.environ.get("no_proxy"))
for url in ["https://evil.test/", "http://bad.files.test/x", "https://203.0.113.9/"]:
    try:
        urllib.request.urlopen(url, timeout=10)
        print(url, "-> fetched")
    except Exception as e:
        print(url, "->", str(e)[:100])
def attempt(name, fn):
    try:
        fn(); print(name, "ok")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno))
attempt("direct", lambda: socket.create_connection(("192.0.2.1", 443), timeout=3))
attempt("dns", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("192.0.2.53", 53)))
attempt("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0x0300))
'''
POLICY = '''
[workspace]
root = "ws"

[network]
mode = "allowlist"
allow = ["pypi.test", "*.files.test"]
deny = ["bad.files.test"]

[commands]
allow = ["python3"]
'''

results = []


def check(name, cond, detail=""):
    results.append(cond)
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else f"\n     {detail}"))


def main():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/ws")
        with open(f"{d}/policy.toml", "w") as f:
            f.write(POLICY)
        with open(f"{d}/ws/probe.py", "w") as f:
            f.write(PROBE)
        env = dict(os.environ, AIRLOCK_STATE_DIR=f"{d}/state")
        p = subprocess.run(
            [AIRLOCK, "run", "--policy", f"{d}/policy.toml", "--cwd", f"{d}/ws", "--json", "--", "python3", "probe.py"],
            capture_output=True, text=True, env=env, timeout=120,
        )
        try:
            out = json.loads(p.stdout)
        except ValueError:
            check("airlock run printed JSON", False, p.stdout + p.stderr)
            return
        stdout = out.get("stdout") or ""
        check("ran", out.get("status") == "ran" and out.get("exit_code") == 0, json.dumps(out)[:800])
        check("proxy env set inside", "env http://127.0.0.1:3128 socks5h://127.0.0.1:1080 localhost,127.0.0.1,::1" in stdout, stdout)
        check("non-allowlisted host refused with 403", "https://evil.test/ -> <urlopen error Tunnel connection failed: 403 Forbidden>" in stdout, stdout)
        check("deny beats allow", "http://bad.files.test/x -> HTTP Error 403: Forbidden" in stdout, stdout)
        check("IP literal refused", "https://203.0.113.9/ -> <urlopen error Tunnel connection failed: 403 Forbidden>" in stdout, stdout)
        check("direct connect refused", "direct EACCES" in stdout, stdout)
        check("UDP DNS refused", "dns EACCES" in stdout, stdout)
        check("raw socket refused", "raw EACCES" in stdout, stdout)
        check("packet socket refused", "packet EACCES" in stdout, stdout)
        v = out.get("violations") or []
        by_detail = {x["detail"]: x for x in v}
        rid = out.get("request_id")
        for detail, reason in [
            ("blocked: evil.test (not in allowlist)", "not_in_allowlist"),
            ("blocked: bad.files.test (denied by policy)", "denied_by_policy"),
            ("blocked: 203.0.113.9 (IP address not allowlisted)", "ip_literal_not_allowlisted"),
        ]:
            x = by_detail.get(detail)
            check(f"logged: {detail}", x is not None and x["kind"] == "network" and x["data"]["reason"] == reason
                  and x["data"]["request_id"] == rid, json.dumps(v)[:1500])
        for detail, dest in [
            ("blocked: connect to 192.0.2.1:443 (not via proxy)", "192.0.2.1:443"),
            ("blocked: DNS query to 192.0.2.53:53 (not via proxy)", "192.0.2.53:53"),
            ("blocked: raw socket (AF_INET) (not via proxy)", None),
            ("blocked: packet socket (not via proxy)", None),
        ]:
            x = by_detail.get(detail)
            check(f"logged: {detail}", x is not None and x["data"]["destination"] == dest, json.dumps(v)[:1500])
        msg = out.get("message", "")
        check("model summary in the message", "blocked: connect to 192.0.2.1:443 (not via proxy)" in msg
              and "blocked: evil.test (not in allowlist)" in msg, msg)
        audit = "".join(open(os.path.join(f"{d}/state/audit", n)).read()
                        for n in os.listdir(f"{d}/state/audit") if n.endswith(".jsonl"))
        check("audit record holds the proxy decisions", '"not_in_allowlist"' in audit and "192.0.2.53:53" in audit, audit[-500:])
        leftovers = os.listdir(f"{d}/state/proxy") if os.path.isdir(f"{d}/state/proxy") else []
        check("context socket removed after the run", leftovers == [], str(leftovers))
        mode = os.stat(f"{d}/state/proxy").st_mode & 0o777
        check("proxy dir is private", mode == 0o700, oct(mode))

        # A one-use network grant adds 203.0.113.9 to the next matching execution's
        # context only. That address is reserved (TEST-NET-3), so the proxy still
        # refuses it, now for the address rather than for the allowlist: proof that
        # the grant reached the context, without any connection being attempted.
        with open(f"{d}/ws/g.py", "w") as f:
            f.write("import urllib.request\ntry:\n    urllib.request.urlopen('https://203.0.113.9/', timeout=10)\n"
                    "except Exception as e:\n    print('->', e)\n")
        g = subprocess.run([AIRLOCK, "grant", "--policy", f"{d}/policy.toml", "--network", "203.0.113.9", "--for", "python3",
                            "--uses", "1", "--ttl", "10m"], capture_output=True, text=True, env=env, timeout=60)
        check("network grant created", g.returncode == 0, g.stdout + g.stderr)

        def reasons():
            p = subprocess.run([AIRLOCK, "run", "--policy", f"{d}/policy.toml", "--cwd", f"{d}/ws", "--json", "--",
                                "python3", "g.py"], capture_output=True, text=True, env=env, timeout=120)
            o = json.loads(p.stdout)
            return [x["data"].get("reason") for x in (o.get("violations") or []) if x["kind"] == "network"], o
        granted, o1 = reasons()
        check("granted run: the host is in the context", granted == ["resolved_to_blocked_address"]
              and "loosened by grant" in o1.get("message", ""), json.dumps(o1)[:800])
        again, o2 = reasons()
        check("next run: the used-up grant no longer applies", again == ["ip_literal_not_allowlisted"], json.dumps(o2)[:800])


main()
failed = results.count(False)
print(f"{len(results) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
