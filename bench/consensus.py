#!/usr/bin/env python3
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: consensus.py against Stem (validate=True, and validate=False for reference).

For every consensus in tests/data/consensus/ (origins in tests/data/README.md):

* wall time: the document is read once; each repetition parses it with every parser in turn
  (interleaved, so all see the same machine load); best and median over the repetitions;
* peak memory: for each parser a fresh interpreter imports both parsers, reads the file, then
  parses once.  "rss" is the growth of ru_maxrss over that parse (the process's peak resident
  set after the parse minus before it: what the parse itself added at its peak); "py" is
  tracemalloc's peak of Python allocations during the parse, measured in another fresh
  interpreter (tracemalloc slows parsing, so it is kept out of the timed runs).  Both parsers
  are measured the same way, keeping their results alive until the measurement.  The memory
  runs come first, from a still-small parent: Linux carries the parent's peak RSS over
  fork+exec into the child's ru_maxrss.

"ours" is parse_consensus() with every router returned (all fields), the heaviest use;
"ours summary" is summary_only=True.  Signature verification: verify_signatures() of the 2017
microdesc consensus with the 2017 cached-certs (certificate parsing and checks, the document
digest and all signatures), at the document's valid-after time.

With --against DIR (another checkout of the collection, e.g. a git worktree of an earlier commit):
only "ours", "ours summary" and verify_signatures of both checkouts, each in a worker interpreter of its own, timed
repetition by repetition in alternation (who goes first alternates too), so that both see the same
machine load; wall time and the process's CPU time (less disturbed by other processes on a busy
machine), best and median, and the ratio this/other.

Usage: .venv/bin/python bench/consensus.py [--reps N] [--mem-reps N] [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.append(os.path.join(REPO, "tests"))
from harness.data import CONSENSUS_DIR  # noqa: E402  (the documents: tests/data/consensus/)

DATA = str(CONSENSUS_DIR)


def _import_paths(repo=REPO):
    collections = os.path.join(repo, ".build", "collections")
    link = os.path.join(collections, "ansible_collections", "onionlab", "tor")
    if not os.path.exists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(repo, link)
    if collections not in sys.path:
        sys.path.insert(0, collections)


def _parsers():
    _import_paths()
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import consensus
    from stem.descriptor.networkstatus import NetworkStatusDocumentV3

    return {
        "ours": lambda data: consensus.parse_consensus(data),
        "ours summary": lambda data: consensus.parse_consensus(data, summary_only=True),
        "stem validate": lambda data: NetworkStatusDocumentV3(data, validate=True),
        "stem no-validate": lambda data: NetworkStatusDocumentV3(data, validate=False),
    }


def child(kind, name, path):
    """Run in a fresh interpreter: one parse, print its memory figures as JSON."""
    parse = _parsers()[name]
    with open(path, "rb") as handle:
        data = handle.read()
    if kind == "rss":
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result = parse(data)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({"rss_kb": after - before, "total_kb": after}))
    else:
        import tracemalloc

        tracemalloc.start()
        result = parse(data)
        _current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(json.dumps({"py_bytes": peak}))
    del result


def measure_memory(name, path, reps):
    figures = {"rss": [], "py": []}
    for _ in range(reps):
        for kind in ("rss", "py"):
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", kind, name, path],
                                 capture_output=True, text=True, check=True)
            value = json.loads(out.stdout)
            figures[kind].append(value["rss_kb"] / 1024.0 if kind == "rss" else value["py_bytes"] / 1048576.0)
    # the smallest of several fresh runs: least disturbed by the allocator and the machine
    return min(figures["rss"]), min(figures["py"])


def measure_time(parsers, data, reps):
    times = dict((name, []) for name in parsers)
    for _ in range(reps):
        for name, parse in parsers.items():
            start = time.perf_counter()
            result = parse(data)
            times[name].append(time.perf_counter() - start)
            del result
    return dict((name, (min(v) * 1000, statistics.median(v) * 1000)) for name, v in times.items())


def bench_verify(reps):
    _import_paths()
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import consensus, rsa_verify

    with open(os.path.join(DATA, "2017-03-10-cached-microdesc-consensus"), "rb") as handle:
        doc = handle.read()
    with open(os.path.join(DATA, "2017-03-10-cached-certs"), "rb") as handle:
        certs = handle.read()
    now = "2017-03-10T10:00:00Z"
    total, cert_only = [], []
    result = None
    for _ in range(reps):
        start = time.perf_counter()
        result = consensus.verify_signatures(doc, certs, now=now)
        total.append(time.perf_counter() - start)
        start = time.perf_counter()
        for cert in rsa_verify.parse_certificates(certs):
            rsa_verify.check_certificate(cert, now)
        cert_only.append(time.perf_counter() - start)
    verified = sum(1 for s in result["signatures"] if s["verified"])
    return (min(total) * 1000, statistics.median(total) * 1000, min(cert_only) * 1000,
            verified, len(result["signatures"]), len(rsa_verify.parse_certificates(certs)))


def worker(repo):
    """Run in a fresh interpreter: import repo's parser; for each "FILE KIND" line on stdin, time one
    parse (KIND: ours, summary or verify) and print "wall_ms cpu_ms"."""
    _import_paths(os.path.abspath(repo))
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import consensus

    with open(os.path.join(DATA, "2017-03-10-cached-certs"), "rb") as handle:
        certs = handle.read()
    calls = {"ours": lambda data: consensus.parse_consensus(data),
             "summary": lambda data: consensus.parse_consensus(data, summary_only=True),
             "verify": lambda data: consensus.verify_signatures(data, certs, now="2017-03-10T10:00:00Z")}
    documents = {}
    for line in sys.stdin:
        name, kind = line.split()
        if name not in documents:
            with open(os.path.join(DATA, name), "rb") as handle:
                documents[name] = handle.read()
        wall, cpu = time.perf_counter(), time.process_time()
        result = calls[kind](documents[name])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        del result
        print("%f %f" % (wall * 1000, cpu * 1000), flush=True)


def compare(other, reps):
    """This checkout against another: alternating workers, one repetition at a time."""
    workers = dict((label, subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", root],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
                   for label, root in (("this", REPO), ("other", other)))

    def timed(label, name, kind):
        workers[label].stdin.write("%s %s\n" % (name, kind))
        workers[label].stdin.flush()
        return [float(x) for x in workers[label].stdout.readline().split()]

    jobs = [(name, kind) for name in sorted(f for f in os.listdir(DATA) if f.endswith("consensus"))
            for kind in ("ours", "summary")] + [("2017-03-10-cached-microdesc-consensus", "verify")]
    times = {}
    for job in jobs:  # a first, untimed round: imports, caches
        for label in workers:
            timed(label, *job)
    for rep in range(reps):
        for job in jobs:
            for label in (("this", "other") if rep % 2 == 0 else ("other", "this")):
                times.setdefault(job + (label,), []).append(timed(label, *job))
    for handle in workers.values():
        handle.stdin.close()
        handle.wait()
    print("Python %s, %d alternating repetitions; this: %s, other: %s" % (sys.version.split()[0], reps, REPO, other))
    header = "%-38s %-8s %-5s %9s %9s %9s %9s %8s %8s" % (
        "file", "parser", "clock", "this best", "othr best", "this med", "othr med", "best t/o", "med t/o")
    print(header)
    print("-" * len(header))
    for name, kind in jobs:
        for index, clock in ((0, "wall"), (1, "cpu")):
            this = [t[index] for t in times[(name, kind, "this")]]
            that = [t[index] for t in times[(name, kind, "other")]]
            print("%-38s %-8s %-5s %9.1f %9.1f %9.1f %9.1f %8.3f %8.3f" % (
                name, kind, clock, min(this), min(that), statistics.median(this), statistics.median(that),
                min(this) / min(that), statistics.median(this) / statistics.median(that)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reps", type=int, default=7, help="timed repetitions per parser and file")
    parser.add_argument("--mem-reps", type=int, default=2, help="fresh interpreters per memory figure")
    parser.add_argument("--against", metavar="DIR", help="time this checkout's parser against DIR's (see above)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if args.worker:
        worker(args.worker)
        return
    if args.against:
        compare(os.path.abspath(args.against), args.reps)
        return
    files = sorted(f for f in os.listdir(DATA) if f.endswith("consensus"))
    names = ("ours", "ours summary", "stem validate", "stem no-validate")
    # Memory first, while this process is still small: Linux carries a process's peak RSS
    # over fork+exec into the child's ru_maxrss, which would hide the child's own growth.
    memories = dict((name, dict((p, measure_memory(p, os.path.join(DATA, name), args.mem_reps))
                                for p in names)) for name in files)
    parsers = _parsers()
    print("Python %s, %d repetitions (wall time), memory: min of %d fresh interpreters"
          % (sys.version.split()[0], args.reps, args.mem_reps))
    header = "%-38s %-16s %9s %9s %9s %9s %8s %8s" % (
        "file", "parser", "best ms", "median ms", "rss MB", "py MB", "speedup", "rss/stem")
    print(header)
    print("-" * len(header))
    for name in files:
        path = os.path.join(DATA, name)
        with open(path, "rb") as handle:
            data = handle.read()
        times = measure_time(parsers, data, args.reps)
        memory = memories[name]
        stem_best = times["stem validate"][0]
        stem_rss = memory["stem validate"][0]
        for pname in parsers:
            best, median = times[pname]
            rss, py = memory[pname]
            print("%-38s %-16s %9.1f %9.1f %9.1f %9.1f %7.1fx %8.2f" % (
                name, pname, best, median, rss, py, stem_best / best, rss / stem_rss if stem_rss else 0))
        print()
    best, median, certs_ms, verified, total, ncerts = bench_verify(args.reps)
    print("verify_signatures(2017-03-10 microdesc consensus, 2017-03-10 cached-certs): best %.1f ms, "
          "median %.1f ms (%d of %d signatures verified; parsing and checking the %d certificates alone: "
          "%.1f ms)" % (best, median, verified, total, ncerts, certs_ms))


if __name__ == "__main__":
    main()
