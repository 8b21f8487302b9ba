"""The run header shows the preflight report stored on the run (summary, then each warning/failure)."""

from __future__ import annotations

from textual.widgets import Static

from orchestrator.store import queries
from tui.screens.run_detail import RunDetailScreen

REPORT = {"verdict": "fail", "failed": 1, "warnings": 1, "seconds": 1.8, "forced": True, "gpus": [0],
          "checks": [{"id": "model_config", "status": "ok", "evidence": "/m: LlamaForCausalLM", "todo": ""},
                     {"id": "load_timeouts", "status": "warn", "evidence": "590 GiB of safetensors (163 files)",
                      "todo": "raise them in eagle3.env"},
                     {"id": "gpu_processes", "status": "fail", "evidence": "GPU 0: pid 541 user alice 41478 MiB",
                      "todo": "stop them"}]}


async def test_header_shows_the_preflight(make_app, seeded, ctx) -> None:
    """Summary line with --force, the warning and the failure with what to do; ok checks left out."""
    with ctx.db() as s:
        queries.get_run(s, seeded["running"]).preflight = REPORT
    app = make_app(open_run=seeded["running"])
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, RunDetailScreen)
        for _ in range(150):
            header = str(screen.query_one("#run-header", Static).content)
            if "preflight" in header:
                break
            await pilot.pause(0.02)
        assert "preflight fail (1 failed, 1 warnings, 3 checks) in 1.8 s · launched with --force" in header
        assert "WARN load_timeouts: 590 GiB of safetensors (163 files)" in header
        assert "FAIL gpu_processes: GPU 0: pid 541 user alice 41478 MiB" in header
        assert "→ stop them" in header and "model_config" not in header


async def test_launch_form_runs_the_preflight(make_app, seeded, ctx, tmp_path) -> None:
    """An eagle3-extract spec launched from the form is checked like `eorch launch --spec`: refused, no run."""
    import sys

    from test_other_screens import open_launch_on_local, text_of, until
    from textual.widgets import Input

    spec = tmp_path / "job.toml"
    spec.write_text(f'kind = "eagle3-extract"\n[eagle3]\nmodel = "{tmp_path / "no-model"}"\n'
                    f'data = "{tmp_path / "no-data"}"\noutput = "{tmp_path / "hs"}"\n'
                    f'vllm_python = "{sys.executable}"\nspeculators_python = "{sys.executable}"\n')
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await open_launch_on_local(pilot, app)
        screen.query_one("#launch-spec", Input).value = str(spec)
        await until(pilot, lambda: "will run" in text_of(screen, "#launch-preview"), "preview")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "launch refused" in text_of(screen, "#launch-error"), "refusal", tries=1500)
        error = text_of(screen, "#launch-error")
        assert "launch failed: launch refused on local: preflight failed" in error
        assert f"model_config: no config.json in {tmp_path / 'no-model'}" in error
    with ctx.db() as s:
        from orchestrator.store.models import Run

        assert s.query(Run).filter(Run.name == "eagle3-extract").count() == 0
    assert not (tmp_path / "hs").exists()
