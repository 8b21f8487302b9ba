"""The controller↔agent protocol (worker/protocol.py): what one side encodes the other decodes, and the agent
answers every request, however bad, with a reply and keeps serving."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.core import commands
from worker.cli import handle
from worker.protocol import (
    CRASHED,
    REFUSED,
    ErrorReply,
    LaunchReply,
    LaunchSpec,
    OkReply,
    ProtocolError,
    Request,
    RunStatusReport,
    StatusManyReport,
    decode_reply,
    encode_reply,
)

REPO = Path(__file__).resolve().parents[2]


class TestRoundTrip:
    def test_a_request_reads_back_as_sent(self) -> None:
        """The controller's request line is the agent's request."""
        request = Request(7, "status", {"run_dir": "/r/runs/a"})
        assert Request.from_json(json.loads(request.to_line())) == request

    def test_replies_read_back_as_sent(self) -> None:
        """Both kinds of reply, with the error's kind and where, survive the wire."""
        for reply in (OkReply(3, {"x": [1, 2]}), ErrorReply(4, "no such dir", REFUSED),
                      ErrorReply(None, "boom", CRASHED, "ops.py:12 in status")):
            assert decode_reply(encode_reply(reply)) == reply

    def test_a_status_report_reads_back_as_sent(self) -> None:
        """Every field of the report the monitor judges by, and the per-run error, survive the wire."""
        report = StatusManyReport([
            RunStatusReport("/r/runs/a", started=True, alive=True, log_size=10, log_inode=5, log_mtime=1.5,
                            marked_pids=[3], scheduler={"kind": "slurm", "job_id": "9"}),
            RunStatusReport.unreadable("/r/runs/b", "wrapper.json is not JSON (3 bytes)"),
        ], "boot", 12.0)
        assert StatusManyReport.from_json(json.loads(json.dumps(report.to_json()))) == report

    def test_a_launch_spec_and_reply_read_back_as_sent(self) -> None:
        spec = LaunchSpec("/r/runs/a", "a", ["sleep", "1"], env={"A": "1"}, cwd="/tmp", files={"f": "x"},
                          scheduler="slurm", sbatch_args=["-p", "x"], secret_env={"T": "s"}, gpu_locks=[0],
                          force_locks=True)
        assert LaunchSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec
        reply = LaunchReply("/r/runs/a", "/r/runs/a/log", pid=4, pgid=4, start_time=99, boot_id="b",
                            subreaper=True, gpu_locks={"taken": [0]})
        assert LaunchReply.from_json(json.loads(json.dumps(reply.to_json()))) == reply

    def test_a_report_of_the_wrong_shape_is_named(self) -> None:
        """A worker of another version (or noise on stdout) is a ProtocolError naming the field, not a KeyError."""
        with pytest.raises(ProtocolError, match=r"status.alive: expected true/false"):
            RunStatusReport.from_json({"run_dir": "/r", "alive": "yes"})
        with pytest.raises(ProtocolError, match="unknown field"):
            LaunchSpec.from_json({"run_dir": "/r", "run_id": "a", "argv": ["x"], "nope": 1})
        with pytest.raises(ProtocolError, match="not JSON"):
            decode_reply(b"Welcome to the host!\n")


class TestHandle:
    def test_unexpected_arguments_are_refused(self) -> None:
        """`{"op": "status", "args": {"nope": 1}}` made the agent exit; now it is a refusal naming the argument."""
        reply = handle({"id": 1, "op": "status", "args": {"nope": 1}})
        assert isinstance(reply, ErrorReply) and reply.kind == REFUSED and reply.id == 1
        assert reply.error == "bad arguments for 'status': missing a required argument: 'run_dir'"
        reply = handle({"id": 1, "op": "status", "args": {"run_dir": "/r", "nope": 1}})
        assert isinstance(reply, ErrorReply) and "unexpected keyword argument 'nope'" in reply.error

    def test_an_exception_in_an_op_is_a_crashed_reply_naming_the_line(self) -> None:
        """Anything an op raises becomes an error reply saying where, never an exit."""
        reply = handle({"id": 2, "op": "status_many", "args": {"run_dirs": 5}})
        assert isinstance(reply, ErrorReply) and reply.kind == CRASHED
        assert reply.error.startswith("eorch's worker failed: TypeError") and ".py:" in reply.where

    def test_a_corrupt_wrapper_json_spoils_only_its_own_run(self, tmp_path: Path) -> None:
        """status_many: the run whose wrapper.json is corrupt has its error; the others their facts."""
        good, bad = tmp_path / "good", tmp_path / "bad"
        for d in (good, bad):
            d.mkdir()
            (d / "log").write_text("hello\n")
        (good / "rc").write_text("0\n")
        (bad / "wrapper.json").write_text("[1, 2]")
        reply = handle({"id": 3, "op": "status_many", "args": {"run_dirs": [str(good), str(bad)]}})
        assert isinstance(reply, OkReply)
        report = StatusManyReport.from_json(reply.result)
        assert report.runs[0].error is None and report.runs[0].rc == 0 and report.runs[0].log_size == 6
        assert report.runs[1].error == "wrapper.json holds a list, not the wrapper's identity"


class TestAgentProcess:
    def test_the_agent_keeps_serving_after_bad_requests(self, tmp_path: Path) -> None:
        """The real agent process (as started on a host): garbage, a bad op, bad args, then a good request."""
        lines = [b"not json\n", b'{"id": 1, "op": "nope"}\n', b'{"id": 2, "op": "status", "args": {"nope": 1}}\n',
                 b'{"id": 3, "op": "status_many", "args": {"run_dirs": 5}}\n',
                 Request(4, "resolve_root", {"root": str(tmp_path / "root")}).to_line()]
        proc = subprocess.run(commands.worker_agent(sys.executable, str(REPO)), input=b"".join(lines),
                              capture_output=True, timeout=60, check=False)
        replies = [decode_reply(line) for line in proc.stdout.splitlines()]
        assert proc.returncode == 0 and len(replies) == 5
        assert [r.id for r in replies] == [None, 1, 2, 3, 4]
        assert all(isinstance(r, ErrorReply) for r in replies[:4])
        last = replies[4]
        assert isinstance(last, OkReply) and last.result["root"] == str(tmp_path / "root")
