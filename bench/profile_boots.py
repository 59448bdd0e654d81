"""Where a boot's CPU goes, per process: the distributed deployment of
``bench/boots_vs_nova.py`` (Stratus side), one warm-up round, then a measured round with
py-spy sampling every process (``py-spy record --gil --format raw``: only the thread that
holds the GIL), and for each process the functions that take the most samples, by own
time and by time including callees.

    .venv/bin/python -m bench.profile_boots --hosts 100 --boots 200 [--out DIR]

py-spy must be installed (``pip install py-spy``) and allowed to read other processes
(root, or ptrace permitted). Samples are of CPU time (idle threads are left out).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import boots
from bench.boots_vs_nova import StratusSide
from bench.cpu import CpuMeter
from stratus.cli.common import positive_int
from tools import procs


def summarise(raw: Path, top: int) -> str:
    own: collections.Counter[str] = collections.Counter()
    incl: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = [f.split(" (")[0] + " " + f.split("/")[-1].rstrip(")")
                  for f in stack.split(";")]
        own[frames[-1]] += n
        for f in set(frames):
            incl[f] += n
    if not total:
        return "  (no samples)"
    lines = [f"  {total} samples"]
    lines += [f"  own  {100 * n / total:5.1f}%  {f}" for f, n in own.most_common(top)]
    lines += [f"  incl {100 * n / total:5.1f}%  {f}" for f, n in incl.most_common(top * 3)
              if "<module>" not in f and "run" not in f.split(" ")[0]][:top * 2]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=positive_int, default=100)
    parser.add_argument("--boots", type=positive_int, default=200)
    parser.add_argument("--clients", type=positive_int, default=8)
    parser.add_argument("--top", type=positive_int, default=12)
    parser.add_argument("--out", type=Path, default=None, help="keep the raw profiles here")
    parser.add_argument("--rate", type=positive_int, default=250,
                        help="py-spy samples a second (more: a finer picture, and py-spy's "
                        "own cost on the cores the cloud shares)")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="stratus-profile-"))
    out.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        side = StratusSide(args.hosts, 1, Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="stratus-profile-"))), stack)
        boots.run_round(side.api_url, min(50, args.boots), args.clients, side.headers,
                        side.body, side.interval)
        boots.clean(side.api_url, side.headers)
        spies = {}
        for role, pid in side.roles().items():
            for p in procs.tree(pid):
                spies[(role, p)] = subprocess.Popen(
                    [str(Path(sys.executable).with_name("py-spy")), "record", "--gil",
                     "--nonblocking", "--format", "raw", "--rate", str(args.rate),
                     "-p", str(p), "-o", str(out / f"{role}-{p}.txt")],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        meter = CpuMeter(side.roles())
        before = meter.read()
        result = boots.run_round(side.api_url, args.boots, args.clients, side.headers,
                                 side.body, side.interval)
        after = meter.read()
        for spy in spies.values():
            spy.send_signal(signal.SIGINT)
        for spy in spies.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                spy.wait(timeout=30)
        boots.clean(side.api_url, side.headers)
        print(f"# {args.boots} boots, {result.per_second:.2f}/s, {result.errors} errors; "
              f"raw profiles in {out}")
        for role in sorted(after, key=lambda r: -(after[r] - before.get(r, 0))):
            ms = 1000 * (after[role] - before.get(role, 0)) / max(1, args.boots)
            print(f"\n## {role}: {ms:.1f} ms CPU per boot")
            for (r, p), _ in spies.items():
                if r == role and (out / f"{role}-{p}.txt").exists():
                    print(f"# pid {p}")
                    print(summarise(out / f"{role}-{p}.txt", args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
