"""Forms found by the blind sets wild26-wild29 (session 25): recent vLLM, big MoE jobs, offline scripts and
serving platforms (Triton, Ray Serve, llm-d under stern).  Every text here is written for the test, in the
forms the real logs showed."""

from __future__ import annotations

import re

import pytest

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.prefixes import glued_header, parse_line


def _as(text: str, endings: str) -> bytes:
    return (text if endings == "stored" else re.sub(r"\r\n?", "\n", text)).encode()


ENGINE = "(EngineCore pid=2758276) "
LOADING = "".join(ENGINE + line + "\n" for line in [
    "INFO 08-01 01:16:30 [core.py:98] Initializing a V1 LLM engine (v0.23.1) with config: model='glm'",
    "INFO 08-01 01:16:32 [gpu_model_runner.py:5248] Starting to load model /srv/models/glm...",
])
FAILED_START = "".join(ENGINE + line + "\n" for line in [
    "INFO 08-01 01:16:38 [multiproc_executor.py:429] [shutdown] Executor: waiting for worker exit count=4",
    ("WARNING 08-01 01:16:43 [multiproc_executor.py:441] [shutdown] Executor: workers still running after grace "
    "period; sending SIGTERM count=1"),
]) + "".join(ENGINE + "ERROR 08-01 01:16:47 [core.py:1330] " + line + "\n" for line in [
    "EngineCore failed to start.",
    "Traceback (most recent call last):",
    '  File "/srv/vllm/v1/executor/multiproc_executor.py", line 765, in wait_for_ready',
    "    raise e from None",
    ("Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace "
    "for root cause."),
])


def test_the_executors_teardown_of_a_failed_start_is_not_a_clean_end() -> None:
    """Workers that vanished during the load leave only the engine's symptoms: a failure, not a stop."""
    a = analyze_bytes((LOADING + FAILED_START).encode())
    assert a.failed and a.root_cause is not None
    # Only symptoms: the record's traceback, which names what failed, not its first line.
    assert (a.root_cause.exception, a.root_cause.line_no) == ("Exception", 6)
    assert a.root_cause.message.startswith("WorkerProc initialization failed")


def test_an_orderly_shutdown_still_ends_cleanly() -> None:
    stop = "".join("(APIServer pid=9001) INFO 08-01 02:00:00 [launcher.py:110] " + line + "\n" for line in [
        "[shutdown] API server: shutdown triggered", "[shutdown] Executor: waiting for worker exit count=4"])
    a = analyze_bytes((LOADING + stop + "(APIServer pid=9001) INFO:     Application shutdown complete.\n").encode())
    assert not a.failed


REPLICA = "(ServeReplica:default:LLMDeployment pid=14262) "
DEAD_THEN_REQUEST = "".join(REPLICA + line + "\n" for line in [
    "    raise self._format_exception(outputs) from None",
    ("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for "
    "the root cause."),
    ("ERROR 2025-05-23 00:42:04,876 default_LLMDeployment rcja4aht 700823bf -- Encountered failure while "
    "handling request 700823bf"),
    '  File "/srv/ray/llm/_internal/serve/deployments/llm/llm_server.py", line 528, in _predict',
    "    async for llm_response in self.engine.generate(llm_request):",
])


def test_errors_after_a_process_died_are_what_its_death_did() -> None:
    a = analyze_bytes(DEAD_THEN_REQUEST.encode())
    assert a.failed and a.root_cause is not None
    assert a.root_cause.exception == "vllm.v1.engine.exceptions.EngineDeadError" and a.root_cause.line_no == 2


@pytest.mark.parametrize("endings", ["stored", "plain"])
def test_a_cut_traceback_takes_the_text_its_header_line_began_with(endings: str) -> None:
    record = "ERROR 05-06 01:55:26 [core.py:383] "
    text = "".join(record + line + "\r\n" for line in [
        "EngineCore hit an exception: Traceback (most recent call last):",
        '  File "/srv/vllm/v1/engine/core.py", line 374, in run_engine_core',
        "    engine_core = EngineCoreProc(*args, **kwargs)",
    ])
    a = analyze_bytes(_as(text, endings))
    assert a.failed and a.root_cause is not None
    # What the header said, and that the record was cut, with where it was raised from (its last frame).
    assert a.root_cause.message == ("EngineCore hit an exception (cut before its exception line; last frame "
                                    "core.py:374, in run_engine_core: engine_core = EngineCoreProc(*args, **kwargs))")


GLUED = ("Processed prompts:   0%|          | 0/1 [00:00<?, ?it/s, est. speed input: 0.00 toks/s][rank0]: Traceback "
         "(most recent call last):\n"
         '[rank0]:   File "/srv/app/test_mllm.py", line 54, in <module>\n'
         "[rank0]:     outputs = llm.generate(inputs, sampling_params=sampling_params)\n"
         "[rank0]: TypeError: MRotaryEmbedding.get_input_positions() got an unexpected keyword argument "
         "'image_token_id'\n"
         "[ERROR] 2025-02-23-21:39:09 (PID:360549, Device:0, RankID:-1) ERR99999 UNKNOWN application exception\n")


def test_a_traceback_header_glued_to_a_progress_bar_is_its_writers() -> None:
    a = analyze_bytes(GLUED.encode())
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.process, a.root_cause.line_no) == ("TypeError", "rank0", 1)
    assert glued_header("x | 0/1 [00:00<?](Worker pid=7) Traceback (most recent call last):") == 17
    assert glued_header("[rank0]: Traceback (most recent call last):") is None  # at the start: nothing glued
    assert glued_header("EngineCore hit an exception: Traceback (most recent call last):") is None


def test_sterns_pod_and_container_are_a_collectors_prefix() -> None:
    line = parse_line("ms-pd-llm-d-modelservice-decode-6c8f9c4df6-vh88z vllm (APIServer pid=1) (EngineCore_DP0 "
                      "pid=296) ERROR 10-27 22:25:30 [v1/engine/core.py:710] EngineCore encountered a fatal error.")
    assert (line.process, line.pid, line.level) == ("EngineCore_DP0", 296, "ERROR")
    assert line.message == "EngineCore encountered a fatal error."
    assert parse_line("my-pod name: 3 items").process == "main"  # not a Deployment's pod name: left alone
    assert parse_line("my-pod name: 3 items").message == "my-pod name: 3 items"


TRITON = """\
INFO 11-15 02:58:48 llm_engine.py:205] # GPU blocks: 2361, # CPU blocks: 512
I1115 02:58:49.477216 1 pb_stub.cc:325] Failed to initialize Python stub: TypeError: 'NoneType' object is not subscriptable

At:
  /opt/tritonserver/backends/vllm/model.py(75): initialize

E1115 02:58:51.162611 1 backend_model.cc:634] ERROR: Failed to create instance: TypeError: 'NoneType' object is not subscriptable
E1115 02:58:51.162838 1 model_lifecycle.cc:621] failed to load 'vllm_model' version 1: Internal: TypeError: 'NoneType' object is not subscriptable
error: creating server: Internal - failed to load all models
"""


def test_a_model_triton_could_not_load_is_the_cause_with_the_exception_it_names() -> None:
    a = analyze_bytes(TRITON.encode())
    assert a.failed and a.root_cause is not None
    assert a.root_cause.signature == "triton_model_load_failed" and a.root_cause.exception == "TypeError"
    assert "'NoneType' object is not subscriptable" in a.root_cause.message
    assert a.first_error is not None and a.first_error.exception == "TypeError"  # the E record names it too


@pytest.mark.parametrize(("text", "signature", "exception"), [
    # Library drift (wild30): the interpreter the job ran has no vLLM; transformers older than the model; pip.
    (("/srv/app/.venv/bin/python: Error while finding module specification for 'vllm.entrypoints.openai.api_server'"
     " (ModuleNotFoundError: No module named 'vllm')"), "vllm_not_installed", "ModuleNotFoundError"),
    (("Value error, The checkpoint you are trying to load has model type `glm4v_moe` but Transformers does not "
     "recognize this architecture."), "model_type_unknown", None),
    (("Collecting outlines<0.1,>=0.0.43 (from vllm==0.6.3)\nERROR: Cannot install vllm because these package "
     "versions have conflicting dependencies.\n\nThe conflict is caused by:\n    outlines 0.0.46 depends on "
     "pyairports"), "pip_install_failed", None),
    # vLLM <= 0.10's start-up check that one sequence fits the KV cache, on a bare line (wild33).
    (("# GPU blocks: 1478, # CPU blocks: 2048\nThe model's max seq len (29000) is larger than the maximum number of "
     "tokens that can be stored in KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing "
     "`max_model_len` when initializing the engine."), "kv_cache_max_len", None),
])
def test_one_line_of_library_drift_or_a_full_kv_cache_is_the_cause(text: str, signature: str,
                                                                    exception: str | None) -> None:
    a = analyze_bytes((text + "\n").encode())
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.exception) == (signature, exception)


def test_a_missing_command_in_the_job_script_is_the_cause_of_the_wait_a_cancel_ended() -> None:
    """Written for the test after wild32's s07: the environment was never activated, the wrapper waited for a
    server that could not start, and the job was cancelled: not an orderly stop of a healthy job."""
    text = ("/var/spool/slurmd/job7/slurm_script: line 12: conda: command not found\n"
            "Waiting for vLLM server (PID=3042610) to start...\n"
            + "vLLM server not yet available, retrying in 10 seconds...\n" * 5
            + "slurmstepd: error: *** JOB 7 ON node05 CANCELLED AT 2026-01-27T10:57:36 ***\n")
    a = analyze_bytes(text.encode())
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "command_not_found"
    assert a.root_cause.message.endswith("conda: command not found")


def test_a_terminate_without_its_what_line_keeps_its_own_text() -> None:
    """wild31 r04: ``terminate called recursively`` came instead of ``what():``: the line itself is the message."""
    a = analyze_bytes(b"INFO:Neuron:Done Sharding weights in 0.96\n"
                      b"terminate called after throwing an instance of 'c10::Error'\n"
                      + b"terminate called recursively\n" * 3)
    assert a.failed and a.root_cause is not None and a.root_cause.exception == "c10::Error"
    assert a.root_cause.message == "terminate called after throwing an instance of 'c10::Error'"


def test_the_base_exception_class_is_an_exception_line() -> None:
    """wild31 r06: vLLM raises a bare ``Exception`` for workers that failed to start; a pasted tail of its
    record names it, and a cut traceback after it is not the cause."""
    head = "(EngineCore_DP0 pid=12247) ERROR 01-27 11:08:03 [core.py:935] "
    text = "".join(head + line + "\n" for line in [
        '  File "/srv/vllm/v1/executor/multiproc_executor.py", line 658, in wait_for_ready',
        "    raise e from None",
        ("Exception: WorkerProc initialization failed due to an exception in a background process. See stack "
        "trace for root cause."),
    ]) + "(EngineCore_DP0 pid=12247) Process EngineCore_DP0:\n"
    text += "(EngineCore_DP0 pid=12247) Traceback (most recent call last):\n"
    a = analyze_bytes(text.encode())
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.line_no) == ("Exception", 3)
    said = analyze_bytes(b"(APIServer pid=1) ERROR 01-27 11:08:03 [serving.py:9] Exception caught. Request id: None\n")
    assert said.root_cause is None or said.root_cause.exception != "Exception"  # a word, not the class


def test_rays_actor_died_error_carries_why_the_actor_died() -> None:
    """wild36 n07: after its indented fields, Ray's message says why (the worker's exit detail) at column 0."""
    text = """\
Traceback (most recent call last):
  File "/srv/vllm/executor/ray_distributed_executor.py", line 625, in _compiled_ray_dag
    raise value
ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
        class_name: RayWorkerWrapper
        actor_id: fe713f58191a21501ebfc6af07000000
        pid: 20430
The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2.

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/srv/vllm/engine/llm_engine.py", line 1430, in step
RuntimeError: Ray compiled graph teardown failed
"""
    a = analyze_bytes(text.encode())
    assert a.failed and a.root_cause is not None
    assert a.root_cause.exception == "ray.exceptions.ActorDiedError"
    assert "Worker unexpectedly exits with a connection error code 2" in a.root_cause.message


def test_a_ray_node_marked_dead_is_the_cause() -> None:
    """wild36 n05: the raylet says a node stopped answering; no Python exception follows in the paste."""
    a = analyze_bytes(b"2024-05-08 14:22:55,484\tINFO worker.py:1740 -- Connected to Ray cluster.\n"
                      b"(raylet) The node with node id: 0f21 and address: node-7 and node name: node-7 has been "
                      b"marked dead because the detector has missed too many heartbeats from it.\n"
                      b"(raylet) Raylet is terminated. Termination is unexpected.\n")
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "ray_node_dead"


def test_torchruns_signal_exception_is_a_stop_not_a_failure() -> None:
    """wild38 v07: torchrun's agent raises ``SignalException`` when it is sent SIGTERM (a scheduler, a user)."""
    text = """\
Traceback (most recent call last):
  File "/opt/conda/lib/python3.12/site-packages/torch/distributed/elastic/multiprocessing/api.py", line 84, in _terminate_process_handler
    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)
torch.distributed.elastic.multiprocessing.api.SignalException: Process 3816713 got signal: 15
rank 0: bind to device 0
rank 0: Initialized distributed environment
"""
    assert not analyze_bytes(text.encode()).failed


@pytest.mark.parametrize("fault", [
    "HW Exception by GPU node-6 (Agent handle: 0x602106c068c0) reason :GPU Hang",
    ("Memory access fault by GPU node-2 (Agent handle: 0x55d0c4f5c0) on address 0x7f1c0000. Reason: Page not present "
    "or supervisor privilege."),
])
def test_a_rocm_gpu_fault_is_the_cause(fault: str) -> None:
    """wild39 l07: ROCm's runtime aborts the process with no Python exception; the first fault may come glued to
    a progress bar's last frame."""
    a = analyze_bytes(f" 36%|###      | 166/456 [44:53<1:11:07, 14.71s/it]{fault}\n{fault}\n".encode())
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "rocm_gpu_fault"


def test_a_missing_command_the_job_went_on_from_is_an_error_it_lived_with() -> None:
    """A harness script's ``npu-smi: command not found``, then the model loads and the benchmark runs to its end
    (wild93 pt10): the job lived with it, so the log has not failed; it is still counted and shown."""
    text = ("/data/test/run_ascend_testcase.sh: line 9: npu-smi: command not found\n"
            "INFO 12-24 01:10:00 [model_runner.py:1200] Loading model weights took 12.3 GB\n"
            + "".join(f"{p}%|##########| {p * 2}/200 [01:44<00:01,  2.50it/s]\n" for p in range(90, 101, 5))
            + "Accuracy: 0.975\n.\n----------------------------------------------------------------------\n"
              "Ran 1 test in 600.333s\n\nOK\n")
    a = analyze_bytes(text.encode())
    assert not a.failed and a.root_cause is None
    assert "command_not_found" in {s.id for s in a.signatures}
