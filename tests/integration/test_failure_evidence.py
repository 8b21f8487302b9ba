"""A command that fails without a traceback: `eorch show` gives its first error line and the log's tail."""

from __future__ import annotations

from pathlib import Path

from helpers import add_testbox, eorch, launch, show

SCRIPT = 'echo starting; for i in $(seq 1 30); do echo "step $i"; done; echo "error: something bad" >&2; exit 3'


class TestFailureEvidence:
    def test_show_prints_the_first_error_line_and_the_last_lines(self, eorch_home: Path, tmp_path: Path) -> None:
        add_testbox(tmp_path)
        run = launch("sh", "-c", SCRIPT)
        eorch("watch", run["id"], "--until-done", check=False)
        record = show(run["id"])
        assert record["status"] == "failed" and record["exit_code"] == 3 and record["root_cause"] is None
        assert record["evidence"]["first_error_line"] == "error: something bad"
        assert record["evidence"]["log_tail"][-2:] == ["step 30", "error: something bad"]
        text = eorch("show", run["id"]).stdout
        assert "no exception in the log" in text
        assert "first error line: error: something bad" in text
        assert "last 10 lines of the log:\n  step 22\n" in text and text.rstrip().endswith("error: something bad")

    def test_show_indents_the_lines_of_a_multi_line_root_cause_under_its_first(self, eorch_home: Path,
                                                                               tmp_path: Path) -> None:
        """A CUDA error in a vLLM record: its advice lines belong to the message, and read as part of it."""
        head = "ERROR 12-03 10:00:00 [core.py:1] "
        record = [head + "EngineCore failed to start.", head + "Traceback (most recent call last):",
                  head + '  File "core.py", line 1, in run', head + "    step()",
                  head + "RuntimeError: CUDA error: an illegal memory access was encountered",
                  head + "CUDA kernel errors might be asynchronously reported at some other API call."]
        add_testbox(tmp_path)
        run = launch("sh", "-c", 'printf "%s" "$1"; exit 1', "sh", "\r\n".join(record) + "\n")
        eorch("watch", run["id"], "--until-done", check=False)
        assert show(run["id"])["root_cause"]["message"] == (
            "CUDA error: an illegal memory access was encountered\n"
            "CUDA kernel errors might be asynchronously reported at some other API call.")
        text = eorch("show", run["id"]).stdout
        assert ("RuntimeError: CUDA error: an illegal memory access was encountered\n"
                "  CUDA kernel errors might be asynchronously reported at some other API call.\n") in text

    def test_succeeded_runs_carry_no_evidence(self, eorch_home: Path, tmp_path: Path) -> None:
        add_testbox(tmp_path)
        run = launch("sh", "-c", "echo fine")
        eorch("watch", run["id"], "--until-done")
        record = show(run["id"])
        assert record["status"] == "succeeded" and "evidence" not in record
        assert "no exception" not in eorch("show", run["id"]).stdout


class TestClientErrorsAreTold:
    def test_show_warns_when_speculators_skipped_samples(self, eorch_home: Path) -> None:
        """A recipe run whose files verified but whose client reported skipped samples (fp8 on speculators
        0.9.0 did that for every sample) says so instead of a plain success."""
        from orchestrator.context import Context
        from orchestrator.monitoring.follower import apply_step_event
        from orchestrator.store.models import Run
        from orchestrator.store.queries import utcnow

        ctx = Context.load()
        with ctx.db() as s:
            run = Run(id="c0ffee01", name="fp8", host="local", kind="eagle3-extract", command=["recipe"], env={},
                      status="succeeded", phase="stopped", exit_code=0, created_at=utcnow(), log_offset=0,
                      events_offset=0, cancel_requested=False)
            s.add(run)
            apply_step_event(run, {"kind": "outputs", "dir": "/data/hs", "samples": 24, "verified": True,
                                   "bytes": 5385860, "stray_locks": [], "client_errors": 24,
                                   "first_client_error": "\"aminmax_cpu\" not implemented for 'Float8_e4m3fn'"})
        out = eorch("show", "c0ffee01").stdout
        assert "warning: speculators reported 24 sample(s) skipped; first: \"aminmax_cpu\" not implemented" in out
        assert show("c0ffee01")["outputs"]["client_errors"] == 24
