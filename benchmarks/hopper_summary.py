"""Table of benchmarks/hopper_compare.py results: ours, upstream, yardstick, ratios."""
import json
import sys


def load(path):
    rows = {}
    try:
        for line in open(path):
            line = line.strip()
            if line.startswith("{"):
                r = json.loads(line)
                if r.get("kind") == "result":
                    rows[r["name"]] = r
                elif r.get("kind") in ("check", "error"):
                    print(f"{path.split('/')[-1]}: {r}")
    except FileNotFoundError:
        pass
    return rows


ours, peer = load(sys.argv[1]), load(sys.argv[2]) if len(sys.argv) > 2 else {}
print(f"{'kernel':28s} {'ours ms':>8s} {'upstream':>9s} {'yardstick':>10s} {'up/ours':>8s} {'yard/ours':>9s}  config")
for name in sorted(set(ours) | set(peer)):
    o, p = ours.get(name), peer.get(name)
    y = (o or p)["yardstick_ms"]
    om = o["ms"] if o else float("nan")
    pm = p["ms"] if p else float("nan")
    print(f"{name:28s} {om:8.3f} {pm:9.3f} {y:10.3f} {pm / om:8.2f} {y / om:9.2f}  "
          f"ours {o and o['cfg']} swz={o and o.get('swizzle')} | upstream {p and p['cfg']} swz={p and p.get('swizzle')}")
