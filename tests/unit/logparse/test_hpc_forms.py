"""Forms of jobs launched on HPC clusters (found by the blind sets wild71, session 27, and wild150, session 34):

* every argparse rejection is a cause, not only unknown arguments and invalid choices (``argument -tp:
  expected one argument``);
* torchrun's ``ChildFailedError`` says a rank it launched failed: a symptom of the rank's own error;
* a Slurm time limit ends a server that was serving (stopped), but cuts an offline job's work (failed), even
  when the step's ``CANCELLED`` line comes before the job's ``DUE TO TIME LIMIT``;
* pdsh's ``host: `` in front of every line of a multi-node job (DeepSpeed's launcher) is a collector's.

Every text here is written for the test, in the forms the real logs showed.
"""

from __future__ import annotations

import pytest

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.prefixes import parse_line

USAGE = "usage: generate.py [-h] [--model MODEL] [--tensor-parallel-size TENSOR_PARALLEL_SIZE]\n"


@pytest.mark.parametrize("said", [
    "argument --tensor-parallel-size/-tp: expected one argument",
    "argument --max-model-len: invalid int value: '8k'",
    "one of the arguments --model --config is required",
    "ambiguous option: --max could match --max-model-len, --max-num-seqs",
])
def test_any_argparse_rejection_is_the_cause(said: str) -> None:
    log = USAGE + f"generate.py: error: {said}\nsrun: error: gpu-1-98: task 0: Exited with exit code 2\n"
    a = analyze_bytes(log.encode())
    rc = a.root_cause
    assert a.failed and rc is not None and rc.signature == "cli_usage_error" and said in rc.message


TORCHRUN = USAGE + """generate.py: error: argument --quantization: invalid choice: 'None' (choose from 'awq', 'fp8')
E0314 02:01:03.000000 1234 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 2) local_rank: 0
Traceback (most recent call last):
  File "/usr/local/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/usr/local/lib/python3.12/dist-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 357, in wrapper
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
generate.py FAILED
"""


def test_torchruns_child_failed_is_the_symptom_of_the_ranks_own_error() -> None:
    rc = analyze_bytes(TORCHRUN.encode()).root_cause
    assert rc is not None and rc.signature == "cli_usage_error" and "invalid choice: 'None'" in rc.message


CANCELLED = ("slurmstepd: error: *** STEP 243421.0 ON gpu-1-16 CANCELLED AT 2026-03-14T02:22:26 ***\n"
             "slurmstepd: error: *** JOB 243421 ON gpu-1-16 CANCELLED AT 2026-03-14T02:22:26 DUE TO TIME LIMIT ***\n")
OFFLINE = ("INFO 03-14 02:01:00 [default_loader.py:262] Loading weights took 3.30 seconds\n"
           "Processed prompts:   0%|          | 0/1 [00:00<?, ?it/s]\n")
SERVING = ("INFO 03-14 02:01:00 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
           "INFO:     Application startup complete.\n"
           'INFO:     127.0.0.1:50000 - "POST /v1/completions HTTP/1.1" 200 OK\n')


@pytest.mark.parametrize("before, failed", [(OFFLINE, True), (SERVING, False)], ids=["offline", "serving"])
def test_a_slurm_time_limit_fails_an_offline_job_and_stops_a_server(before: str, failed: bool) -> None:
    a = analyze_bytes((before + CANCELLED).encode())
    assert a.failed is failed and "slurm_time_limit" in {s.id for s in a.signatures}


def test_fastchats_logger_prefix_is_a_collectors() -> None:
    """FastChat's vllm_worker logs its stderr through its own logger: ``ts | ERROR | stderr | `` on every line."""
    lines = ["Traceback (most recent call last):",
             '  File "/srv/FastChat/fastchat/serve/vllm_worker.py", line 291, in <module>',
             "    worker = VLLMWorker(", "AttributeError: 'AsyncLLM' object has no attribute 'engine'"]
    log = "".join(f"2025-03-24 22:04:27 | ERROR | stderr | {line}\n" for line in lines)
    rc = analyze_bytes(log.encode()).root_cause
    assert rc is not None and rc.exception == "AttributeError" and rc.message == "'AsyncLLM' object has no attribute 'engine'"


@pytest.mark.parametrize("front", ["", "2025-03-01T10:00:00.123456789Z ", "[pod/trainer-0/main] "])
@pytest.mark.parametrize("host", ["10.0.3.17", "worker-3", "gpu-node12"])
def test_pdshs_host_prefix_is_a_collectors(host: str, front: str) -> None:
    """A multi-node job run through pdsh (DeepSpeed's launcher) has ``host: `` in front of every line, before
    PyTorch's ``[rank0]: ``: the rank's traceback is read under it (wild150 dx06), also when another collector
    wrote its own column in front (kubectl's stamp or pod)."""
    lines = ["[rank0]: Traceback (most recent call last):",
             '[rank0]:   File "/srv/train/grpo_trainer.py", line 412, in _move_model_to_vllm',
             "[rank0]:     if self.state.global_step != self._last_loaded_step:",
             "[rank0]: AttributeError: 'GRPOTrainer' object has no attribute '_last_loaded_step'"]
    log = "".join(f"{front}{host}: {line}\n" for line in lines)
    a = analyze_bytes(log.encode())
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.process) == ("AttributeError", "rank0")
    assert a.root_cause.message == "'GRPOTrainer' object has no attribute '_last_loaded_step'"


def test_an_ipv4_pdsh_prefix_is_taken_off_any_line_but_a_word_is_not() -> None:
    """An address and a colon in front of a line is pdsh's (``10.0.0.1: Traceback ...``); a host name alone is
    not taken off (``node01: ...`` may be how a message starts), nor is an address later in a message."""
    assert parse_line("10.0.0.1: Traceback (most recent call last):").message == "Traceback (most recent call last):"
    assert parse_line("node01: ready").message == "node01: ready"
    assert parse_line("ValueError: 10.0.0.1: unreachable").message == "ValueError: 10.0.0.1: unreachable"
