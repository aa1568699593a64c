#!/usr/bin/env python3
"""Analyses one run of bench/routes-recover.sh and draws its curve.

Reads the job's results.jsonl (each record's route and finished_at) and the
instant route a recovered, prints a's share of the succeeded items before and
after the recovery, the time from the recovery to a's first success and to the
first second where a made at least 40% of the items, and optionally writes an
SVG: items per second by route over time, a vertical line at the recovery.
"""
import argparse
import datetime
import json
import math


def parse_time(s):
    # finished_at carries nanoseconds; Python's parser takes microseconds.
    s = s.rstrip("Z")
    if "." in s:
        head, frac = s.split(".")
        s = head + "." + frac[:6].ljust(6, "0")
    return datetime.datetime.fromisoformat(s).replace(tzinfo=datetime.timezone.utc).timestamp()


def load(path):
    done, failed = [], 0
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("error"):
                failed += 1
                continue
            done.append((parse_time(r["finished_at"]), r.get("route", "?")))
    done.sort()
    return done, failed


def share(rows):
    return 100.0 * sum(1 for _, r in rows if r == "a") / len(rows) if rows else float("nan")


def analyse(done, failed, recovered, strategy):
    start = done[0][0]
    before = [d for d in done if d[0] < recovered]
    after = [d for d in done if d[0] >= recovered]
    first_a = next((t for t, r in after if r == "a"), None)
    # Seconds counted from the recovery: second k holds [recovered+k, recovered+k+1).
    end = done[-1][0]
    k0 = math.floor(start - recovered)
    buckets = {}
    for t, r in done:
        k = math.floor(t - recovered)
        buckets.setdefault(k, {"a": 0, "b": 0})[r if r in ("a", "b") else "b"] += 1
    # "40% of the traffic": the first item after which at least 40% of the
    # last WINDOW items finished were a's (50 items is about a quarter of a
    # second here), counted from the recovery.
    window, reach40 = 50, None
    for i in range(window - 1, len(done)):
        if done[i][0] >= recovered and sum(1 for _, r in done[i - window + 1:i + 1] if r == "a") >= 0.4 * window:
            reach40 = done[i][0] - recovered
            break
    steady = [d for d in after if first_a is not None and d[0] >= first_a + 1]
    print(f"| routing | items ok / failed | before the recovery: on a | after: on a | after a's first success + 1 s: on a | recovery → a's first success | recovery → a ≥ 40% of the last 50 items | wall time |")
    print(f"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    fmt = lambda x: "never" if x is None else f"{x:.2f} s"
    print(f"| {strategy} | {len(done)} / {failed} | {share(before):.1f}% of {len(before)} | {share(after):.1f}% of {len(after)} "
          f"| {share(steady):.1f}% of {len(steady)} | {fmt(None if first_a is None else first_a - recovered)} "
          f"| {fmt(reach40)} | {end - start:.1f} s |")
    return buckets, k0, math.floor(end - recovered)


def svg(path, buckets, k0, k1, title):
    """Items per second by route, x in seconds since a's recovery.

    Only whole seconds are drawn: the first and last buckets, cut by the
    job's start and end, would show as dips that are not in the traffic.
    """
    w, h, ml, mr, mt, mb = 720, 320, 56, 16, 36, 44
    ks = list(range(k0 + 1, k1))
    ymax = max([buckets.get(k, {}).get(r, 0) for k in ks for r in ("a", "b")] + [1])
    step = 10 ** math.floor(math.log10(ymax)) if ymax >= 10 else 1
    while ymax / step > 8:
        step *= 2
    ytop = math.ceil(ymax / step) * step
    t0, t1 = k0 + 1, k1
    X = lambda t: ml + (t - t0) / (t1 - t0) * (w - ml - mr)
    Y = lambda v: h - mb - v / ytop * (h - mt - mb)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    for v in range(0, ytop + 1, step):
        out.append(f'<line x1="{ml}" x2="{w - mr}" y1="{Y(v):.1f}" y2="{Y(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{ml - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{v}</text>')
    tstep = 5 if t1 - t0 > 20 else 2
    for t in range(math.ceil(t0 / tstep) * tstep, t1 + 1, tstep):
        out.append(f'<text x="{X(t):.1f}" y="{h - mb + 16}" text-anchor="middle">{t}</text>')
    out.append(f'<text x="{(ml + w - mr) / 2}" y="{h - 8}" text-anchor="middle">seconds since route a recovered (each point: the items of one second)</text>')
    out.append(f'<text x="14" y="{(mt + h - mb) / 2}" text-anchor="middle" transform="rotate(-90 14 {(mt + h - mb) / 2})">items per second</text>')
    for route, colour in (("b", "#1f77b4"), ("a", "#d62728")):
        pts = " ".join(f"{X(k + 0.5):.1f},{Y(buckets.get(k, {}).get(route, 0)):.1f}" for k in ks)
        out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"/>')
    out.append(f'<line x1="{X(0):.1f}" x2="{X(0):.1f}" y1="{mt}" y2="{h - mb}" stroke="#555" stroke-dasharray="4 3"/>')
    out.append(f'<text x="{X(0) + 4:.1f}" y="{mt + 12}">a recovers</text>')
    lx = w - mr - 110
    for i, (route, colour) in enumerate((("a", "#d62728"), ("b", "#1f77b4"))):
        y = mt + 12 + 16 * i
        out.append(f'<line x1="{lx}" x2="{lx + 20}" y1="{y - 4}" y2="{y - 4}" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{lx + 26}" y="{y}">route {route}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--results", required=True)
    ap.add_argument("--recovered", required=True, type=float, help="Unix seconds at which route a recovered")
    ap.add_argument("--refused", help="file of the Unix seconds at which route a answered 503, one a line")
    ap.add_argument("--strategy", default="weighted")
    ap.add_argument("--svg")
    a = ap.parse_args()
    done, failed = load(a.results)
    if not done:
        raise SystemExit("no succeeded record")
    buckets, k0, k1 = analyse(done, failed, a.recovered, a.strategy)
    if a.refused:
        with open(a.refused) as f:
            refused = [float(x) for x in f if x.strip()]
        print()
        print(f"calls a answered 503 ({len(refused)}), seconds before its recovery:",
              " ".join(f"{a.recovered - t:.2f}" for t in refused))
    print()
    print("per second since the recovery (a b):", " ".join(f"{k}:{buckets.get(k, {}).get('a', 0)}/{buckets.get(k, {}).get('b', 0)}" for k in range(k0, k1 + 1)))
    if a.svg:
        svg(a.svg, buckets, k0, k1, f"routing: {a.strategy}, equal weights — items per second by route")


if __name__ == "__main__":
    main()
