"""A Slurm login node through the loopback sshd: a real one-node cluster (munged, slurmctld, slurmd).

The host is added with ``--scheduler slurm --env SLURM_CONF=...`` (the sshd login inherits nothing, so the
cluster's config path is stored on the host and set for every worker operation). Each Slurm step costs about
a second, so the cases are few and each checks several things.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import db_rows, eorch, launch, show, wait_for
from slurm import SlurmCluster, make_cluster, missing_tools


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    missing = missing_tools()
    if missing:
        pytest.fail(f"Slurm is not installed ({', '.join(missing)} missing): run `make system-deps`")
    if os.geteuid() != 0:
        pytest.skip("the test Slurm cluster runs its daemons as root (SlurmUser=root, munged as munge)")
    cluster = make_cluster(tmp_path_factory.mktemp("slurm"))
    yield cluster
    cluster.stop()


@pytest.fixture
def cluster(eorch_home: Path, tmp_path: Path, slurm_cluster: SlurmCluster) -> SlurmCluster:
    """`cluster`: the loopback sshd as a Slurm login node of the test cluster."""
    out = eorch("host", "add", "cluster", "testbox", "--root", str(tmp_path / "remote-root"), "--scheduler", "slurm",
                "--env", f"SLURM_CONF={slurm_cluster.conf}")
    assert "jobs go through Slurm" in out.stdout and "debug" in out.stdout
    return slurm_cluster


def status_events(home: Path, run_id: str) -> list[dict]:
    rows = db_rows(home, "select data from events where run_id=? and kind='status' order by id", run_id)
    return [json.loads(data) for (data,) in rows]


def wait_running(cluster: SlurmCluster, run: dict) -> str:
    """The run's Slurm job is RUNNING and its wrapper has recorded itself (its TERM handler is in place)."""
    job_id = run["scheduler"]["job_id"]
    wait_for(lambda: cluster.job_state(job_id) == "RUNNING", what=f"slurm job {job_id} running")
    wait_for(lambda: Path(run["remote_dir"], "wrapper.json").exists(), what="wrapper started")
    return job_id


class TestSlurmRuns:
    @pytest.mark.parametrize("code, status", [(0, "succeeded"), (7, "failed")])
    def test_exit_code_decides_after_launching_then_running(
        self, eorch_home: Path, cluster: SlurmCluster, code: int, status: str
    ) -> None:
        """sbatch returns at once (launching, job id); the monitor sees it run; the wrapper's rc decides."""
        job = f"import os; print('hello from job', os.environ['SLURM_JOB_ID']); raise SystemExit({code})"
        run = launch(sys.executable, "-c", job, host="cluster")
        assert run["status"] == "launching"
        job_id = run["scheduler"]["job_id"]
        assert job_id.isdigit()
        script = Path(run["remote_dir"], "job.sh").read_text()
        assert script.startswith("#!/bin/sh\nexec ") and " -I -c " in script and "PYTHONPATH" not in script
        proc = eorch("watch", run["id"], "--until-done", check=False)
        assert proc.returncode == (0 if code == 0 else 1)
        record = show(run["id"])
        assert (record["status"], record["exit_code"]) == (status, code)
        assert record["started_at"] is not None
        assert record["scheduler"]["job_id"] == job_id
        assert eorch("logs", run["id"]).stdout == f"hello from job {job_id}\n"
        moves = [(e["from"], e["to"]) for e in status_events(eorch_home, run["id"])]
        assert moves == [("pending", "launching"), ("launching", "running"), ("running", status)]
        assert f"slurm job {job_id}: {'COMPLETED' if code == 0 else 'FAILED'}" in eorch("show", run["id"]).stdout

    def test_pending_while_the_node_is_busy_then_runs(self, eorch_home: Path, cluster: SlurmCluster) -> None:
        """With the node held by an exclusive job, an --exclusive run stays launching with Slurm's reason."""
        blocker = cluster.client("sbatch", "--parsable", "--exclusive", "--output", "/dev/null",
                                 "--wrap", "sleep 300").stdout.strip()
        watcher = None
        try:
            wait_for(lambda: cluster.job_state(blocker) == "RUNNING", what="blocker running")
            run = launch("echo", "finally", host="cluster", extra=("--sbatch-arg=--exclusive",))
            watcher = subprocess.Popen([sys.executable, "-m", "orchestrator.cli.main", "watch", run["id"],
                                        "--until-done"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            pending = wait_for(lambda: (r := show(run["id"]))["scheduler"].get("reason") and r, what="pending reason")
            assert pending["status"] == "launching"
            assert pending["scheduler"]["state"] == "PENDING"
            reason = pending["scheduler"]["reason"]
            facts = json.loads(eorch("host", "check", "cluster", "--json").stdout)
            debug = {"partition": "debug*", "avail": "up", "nodes": "1", "state": "allocated"}
            assert debug in facts["slurm"]["partitions"]
            assert reason in ("Resources", "Priority")
            assert f"PENDING ({reason})" in eorch("show", run["id"]).stdout
            cluster.client("scancel", blocker)
            assert watcher.wait(60) == 0
        finally:
            if watcher is not None:
                watcher.kill()
            cluster.client("scancel", blocker, check=False)
        record = show(run["id"])
        assert record["status"] == "succeeded"
        assert eorch("logs", run["id"]).stdout == "finally\n"

    def test_cancel_terms_the_job_and_it_leaves_the_queue(self, eorch_home: Path, cluster: SlurmCluster) -> None:
        """`eorch cancel`: scancel --signal=TERM --full reaches the wrapper, which records 143; queue is empty."""
        run = launch("sleep", "300", host="cluster")
        job_id = wait_running(cluster, run)
        result = json.loads(eorch("cancel", run["id"], "--json").stdout)
        assert result["remaining"] == []
        assert not cluster.in_queue(job_id)
        # --signal only signals: the job ends by the wrapper's own exit (143, FAILED), not as CANCELLED.
        assert cluster.job_state(job_id) in ("FAILED", "CANCELLED")
        record = show(run["id"])
        assert (record["status"], record["exit_code"]) == ("cancelled", 143)

    def test_scancel_from_outside_is_lost_with_the_slurm_state(self, eorch_home: Path, cluster: SlurmCluster) -> None:
        """A job Slurm ended without eorch asking is lost, even though the wrapper wrote 143 on its way out."""
        run = launch("sleep", "300", host="cluster")
        job_id = wait_running(cluster, run)
        cluster.client("scancel", job_id)
        eorch("watch", run["id"], "--until-done", check=False)
        record = show(run["id"])
        assert (record["status"], record["exit_code"]) == ("lost", None)
        final = status_events(eorch_home, run["id"])[-1]
        assert final["to"] == "lost"
        assert final["scheduler"]["state"] == "CANCELLED"
        assert final["scheduler"]["job_id"] == job_id
        assert final["scheduler"]["wrapper_rc"] == 143


class TestSlurmHostCheck:
    def test_the_tui_and_the_cli_record_the_same_check(self, eorch_home: Path, cluster: SlurmCluster) -> None:
        """A check from the TUI's hosts screen records Slurm's partitions as `eorch host check` does (the TUI's
        own check once left them out), and either clears an earlier failure."""
        import asyncio

        from orchestrator.context import Context
        from tui.data import check_host, save_host_check

        def recorded() -> tuple[dict, str | None, int]:
            (facts, error, reachable), = db_rows(eorch_home, "select facts, last_error, reachable from hosts "
                                                 "where name='cluster'")
            return json.loads(facts), error, reachable

        async def tui_check() -> None:
            ctx = Context.load()
            try:
                facts, error = await check_host(ctx, "cluster")
                await asyncio.to_thread(save_host_check, ctx, "cluster", facts, error)
            finally:
                await ctx.close()

        save_host_check(Context.load(), "cluster", None, "ssh: connection refused")
        asyncio.run(tui_check())
        facts, error, reachable = recorded()
        assert "debug*" in [p["partition"] for p in facts["slurm"]["partitions"]]
        assert (error, reachable) == (None, 1)
        save_host_check(Context.load(), "cluster", None, "ssh: connection refused")
        eorch("host", "check", "cluster")
        facts, error, reachable = recorded()
        assert "debug*" in [p["partition"] for p in facts["slurm"]["partitions"]]
        assert (error, reachable) == (None, 1)
