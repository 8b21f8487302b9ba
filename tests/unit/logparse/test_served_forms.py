"""Forms found by the blind sets wild42-wild49 (session 26): KV connectors, SGLang on Ascend, Triton builds.

* a traceback a serving process caught and logged is the failure unless a request is answered after it (a
  ``GET /health`` or ``POST`` with a 2xx): then the server lived through it; an engine that died is not
  brought back by a request answered before its death was logged;
* a record header with the full date (``ERROR 2026-01-12 16:28:02.921 [file.py:824]``);
* Ascend's runtime error lines (``[Error]: The aicore execution times out.``) are the cause that torch_npu's
  ``The Inner error is reported as above`` points at;
* C++ ``terminate called ...`` glued behind a progress bar still takes its ``what():`` text; a launcher's
  ``Server process exited with code -9`` and a bare ``EOFError`` (a pipe whose other end died) are symptoms;
* an exception message that ends with a colon goes on to the lines after it (Triton's ``at 1:0:``).

Every text here is written for the test, in the forms the real logs showed.
"""

from __future__ import annotations

import re

import pytest

from orchestrator.logparse import analyze_bytes

ENDINGS = ["stored", "plain"]


def _as(text: str, endings: str) -> bytes:
    return (text if endings == "stored" else re.sub(r"\r\n?", "\n", text)).encode()


API = "(APIServer pid=137932) "
CORE = "(EngineCore pid=138527) "
SERVING = "".join(API + line + "\n" for line in [
    "INFO 07-26 23:40:01 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000",
    "INFO:     Application startup complete.",
    'INFO:     127.0.0.1:60010 - "POST /v1/completions HTTP/1.1" 200 OK',
])
CAUGHT = "".join(CORE + "ERROR 07-26 23:49:34 [kv_connector.py:675] " + line + "\r\n" for line in [
    "Connector worker 0 --> selective pull plan failed",
    "Traceback (most recent call last):",
    '  File "/srv/app/kv_connector.py", line 665, in _pull_listener',
    "    self._prepare(uuid, block_ids)",
    '  File "/srv/app/kv_connector.py", line 716, in _prepare',
    '    raise KeyError(f"no pending pull for uuid={uuid}")',
]) + CORE + "ERROR 07-26 23:49:34 [kv_connector.py:675] KeyError: 'no pending pull for uuid=6894'\n"
HEALTH_OK = API + 'INFO:     127.0.0.1:60084 - "GET /health HTTP/1.1" 200 OK\n'
DIED = "".join(API + line + "\n" for line in [
    "ERROR 07-26 23:49:35 [async_llm.py:480] AsyncLLM output_handler failed.",
    ("ERROR 07-26 23:49:35 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered "
    "an issue. See stack trace (above) for the root cause."),
])


@pytest.mark.parametrize("endings", ENDINGS)
def test_a_caught_traceback_the_server_answers_after_is_not_its_failure(endings: str) -> None:
    a = analyze_bytes(_as(SERVING + CAUGHT + HEALTH_OK, endings))
    assert not a.failed and a.root_cause is None
    assert a.first_error is not None and a.first_error.message == "Connector worker 0 --> selective pull plan failed"


@pytest.mark.parametrize("endings", ENDINGS)
def test_a_caught_traceback_is_the_failure_when_nothing_answers_after_it(endings: str) -> None:
    a = analyze_bytes(_as(SERVING + CAUGHT, endings))
    assert a.failed and a.root_cause is not None and a.root_cause.exception == "KeyError"


@pytest.mark.parametrize("endings", ENDINGS)
def test_a_request_answered_after_the_engine_died_does_not_revive_it(endings: str) -> None:
    a = analyze_bytes(_as(SERVING + CAUGHT + DIED + HEALTH_OK, endings))
    assert a.failed and a.root_cause is not None and a.root_cause.exception == "KeyError"


def test_a_request_refused_with_a_5xx_is_no_sign_of_life() -> None:
    refused = API + 'INFO:     127.0.0.1:60090 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error\n'
    a = analyze_bytes(_as(SERVING + CAUGHT + refused, "plain"))
    assert a.failed and a.root_cause is not None and a.root_cause.exception == "KeyError"


@pytest.mark.parametrize("endings", ENDINGS)
def test_a_record_header_with_the_full_date_is_a_record(endings: str) -> None:
    head = "(Worker_DP0_TP1 pid=1041) ERROR 2026-01-12 16:28:02.921 [multiproc_executor.py:824] "
    lines = ["WorkerProc hit an exception.", "Traceback (most recent call last):",
             '  File "/srv/app/mooncake_connector.py", line 1328, in start_load_kv',
             "    remote_ports[rank][i],", "IndexError: list index out of range"]
    rc = analyze_bytes(_as("".join(head + line + "\r\n" for line in lines[:-1]) + head + lines[-1] + "\n",
                           endings)).root_cause
    assert rc is not None and (rc.exception, rc.message, rc.process) == (
        "IndexError", "list index out of range", "Worker_DP0_TP1")


ASCEND = "".join(line + "\n" for line in [
    ("[rank0]:[E1229 13:22:33.992084477 compiler_depend.ts:444] operator():build/CMakeFiles/torch_npu.dir/"
    "compiler_depend.ts:34 NPU function error: call aclnnRmsNorm failed, error code is 507014"),
    "[ERROR] 2025-12-29-13:22:33 (PID:359, Device:0, RankID:-1) ERR00100 PTA call acl api failed",
    "[Error]: The aicore execution times out.",
    "        Rectify the fault based on the error information in the ascend log.",
    "EH9999: Inner Error!",
]) + "".join("(Worker_DP0_TP0 pid=359) ERROR 12-29 13:22:33 [multiproc_executor.py:824] " + line + "\n" for line in [
    "WorkerProc hit an exception.",
    "Traceback (most recent call last):",
    '  File "/srv/vllm_ascend/ops/layernorm.py", line 60, in forward_oot',
    "    x, residual, _ = torch_npu.npu_add_rms_norm(x, residual, self.weight, self.variance_epsilon)",
    ("RuntimeError: The Inner error is reported as above. The process exits for this inner error, and the "
    "current working operator name is aclnnRmsNorm."),
])


def test_ascends_runtime_error_line_is_the_cause_the_npu_traceback_points_at() -> None:
    a = analyze_bytes(ASCEND.encode())
    rc = a.root_cause
    assert a.failed and rc is not None and rc.signature == "cann_error"
    assert rc.message == "[Error]: The aicore execution times out."


def test_the_npu_traceback_is_named_when_the_runtime_lines_were_cut() -> None:
    rc = analyze_bytes(ASCEND.split("EH9999: Inner Error!\n", 1)[1].encode()).root_cause
    assert rc is not None and rc.exception == "RuntimeError" and "Inner error" in rc.message


GLUED = "".join(line + "\n" for line in [
    ("Capturing batches (bs=24 avail_mem=11.91 GB):  11%|#         | 1/9 [00:23<03:10, 23.87s/it] terminate called "
    "after throwing an instance of 'c10::Error'"),
    "  what():  NPU out of memory. Tried to allocate 4.00 GiB (NPU 4; 61.27 GiB total capacity)",
    "Exception raised from malloc at build/CMakeFiles/torch_npu.dir/NPUCachingAllocator.cpp:1520",
    "[2026-01-19 20:23:32] DataParallelController hit an exception: Traceback (most recent call last):",
    '  File "/srv/sglang/srt/managers/data_parallel_controller.py", line 568, in run_controller',
    "    scheduler_info.append(reader.recv())",
    '  File "/usr/lib/python3.11/multiprocessing/connection.py", line 395, in _recv',
    "    raise EOFError",
    "EOFError",
    "",
    "Exception in thread Thread-2 (launch_node):",
    "Traceback (most recent call last):",
    '  File "/srv/sglang/test/test_utils.py", line 660, in popen_launch_server',
    "    raise Exception(",
    "Exception: Server process exited with code -9. Check server logs for errors.",
])


def test_a_cpp_abort_glued_behind_a_progress_bar_is_the_cause_before_its_processes_symptoms() -> None:
    rc = analyze_bytes(GLUED.encode()).root_cause
    assert rc is not None and (rc.exception, rc.line_no) == ("c10::Error", 1)
    assert rc.message.startswith("NPU out of memory. Tried to allocate 4.00 GiB")


TRITON = "".join(line + "\n" for line in [
    '  File "/srv/triton/compiler/compiler.py", line 80, in make_ir',
    "    return ast_to_ttir(self.fn, self, context=context, options=options)",
    "triton.compiler.errors.CompilationError: at 1:0:",
    "def _fwd_grouped_kernel_stage1(",
    "^",
    ("ValueError(\"type fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', "
    "'fp8e5')\")"),
    "",
    "[2026-06-10 06:37:50] Received sigquit from a child process. It usually means the child failed.",
])


def test_a_message_announced_by_a_colon_goes_on_to_the_blank_line() -> None:
    rc = analyze_bytes(TRITON.encode()).root_cause
    assert rc is not None and rc.exception == "triton.compiler.errors.CompilationError"
    assert rc.message.startswith("at 1:0:\ndef _fwd_grouped_kernel_stage1(")
    assert "type fp8e4nv not supported" in rc.message and "sigquit" not in rc.message


V0_DEATH = "".join(line + "\n" for line in [
    ("INFO 10-12 22:21:19 metrics.py:351] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 27.7 "
    "tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 18.9%."),
    "ERROR 10-12 22:21:31 client.py:244] TimeoutError('No heartbeat received from MQLLMEngine')",
    "ERROR 10-12 22:21:31 client.py:244] NoneType: None",
    "CRITICAL 10-12 22:21:34 launcher.py:99] MQLLMEngine is already dead, terminating server process",
    'INFO:     127.0.0.1:54752 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
    "INFO:     Shutting down",
    "INFO:     Application shutdown complete.",
])


def test_the_shutdown_after_an_engines_death_does_not_clear_the_error_before_it() -> None:
    a = analyze_bytes(V0_DEATH.encode())
    rc = a.root_cause
    assert a.failed and rc is not None and (rc.exception, rc.line_no) == ("TimeoutError", 2)


def test_an_llvm_abort_is_the_cause_of_the_engine_death_after_it() -> None:
    log = V0_DEATH.replace("ERROR 10-12 22:21:31 client.py:244] TimeoutError('No heartbeat received from MQLLMEngine')",
                           "LLVM ERROR: Unsupported rounding mode for conversion.")
    rc = analyze_bytes(log.encode()).root_cause
    assert rc is not None and (rc.signature, rc.line_no) == ("llvm_fatal", 2)


@pytest.mark.parametrize(("line", "exception"), [
    (b"LLM init error: [Errno 122] Disk quota exceeded\n", "OSError"),
    (b"ERROR 04-16 16:11:58 [launcher.py:12] cannot open [Errno 2] No such file or directory: '/srv/m'\n",
     "FileNotFoundError"),
], ids=["disk-full-printed", "errno-in-an-error-record"])
def test_an_oserrors_text_printed_without_its_name_names_it(line: bytes, exception: str) -> None:
    """A script's own line with an ``OSError``'s text: a full disk is a cause wherever it is said; the errno
    names the exception (``[Errno 2]`` is ``FileNotFoundError``)."""
    loading = b"INFO 04-16 16:11:57 [model_runner.py:1110] Starting to load model facebook/opt-30b...\n"
    a = analyze_bytes(loading + line + b"INFO 04-16 16:11:58 [multiproc_worker_utils.py:137] Terminating local "
                      b"vLLM worker processes\n")
    rc = a.root_cause
    assert rc is not None and (rc.exception, rc.line_no) == (exception, 2)
    assert a.failed is (exception == "OSError")  # the error record alone is evidence, not a failure


@pytest.mark.parametrize(("log", "exception"), [
    ((b"2024-07-01 07:28:04.488 1 kserve ERROR [__main__.py:<module>():254] Failed to start model server: integer "
     b"division or modulo by zero\n"), "ZeroDivisionError"),
    ((b"ERROR 05-26 00:17:47 [engine.py:448] 'ColumnParallelLinear' object has no attribute 'input_scale'\n"
     b"ERROR 05-26 00:17:47 [engine.py:448] Traceback (most recent call last):\n"
     b'ERROR 05-26 00:17:47 [engine.py:448]   File "/srv/vllm/engine/multiprocessing/engine.py", line 436, in run\n'),
     "AttributeError"),
], ids=["wrapper-gave-up", "record-head-of-a-cut-traceback"])
def test_pythons_own_message_names_the_builtin_exception_a_line_does_not(log: bytes, exception: str) -> None:
    """A line that quotes a built-in exception's message without its name (``logger.error(f"...: {e}")``, the
    head of a record whose traceback was cut): Python's own wording names it."""
    a = analyze_bytes(log)
    assert a.failed and a.root_cause is not None and a.root_cause.exception == exception


def test_ray_executor_v2s_dead_worker_is_a_death() -> None:
    """``RayWorkerProc rank=[3] died unexpectedly`` (RayExecutorV2) says a worker died: the error before it is
    the cause, and the log has failed."""
    log = (b"ERROR 06-01 10:00:00 [core.py:2178] RuntimeError: Timed out waiting 1800000ms for recv operation\n"
           b"ERROR 06-01 10:00:01 [ray_executor_v2.py:310] RayWorkerProc rank=[3] died unexpectedly, shutting down "
           b"executor.\n")
    a = analyze_bytes(log)
    assert a.failed and a.root_cause is not None and (a.root_cause.exception, a.root_cause.line_no) == ("RuntimeError", 1)


def _chain(first: str, marker: str, later: str) -> bytes:
    return "".join(line + "\n" for line in [
        "Traceback (most recent call last):",
        '  File "/srv/transformers/models/auto/configuration_auto.py", line 1155, in from_pretrained',
        "    config_class = CONFIG_MAPPING[config_dict['model_type']]",
        first, "", marker, "",
        "Traceback (most recent call last):",
        '  File "/srv/transformers/models/auto/configuration_auto.py", line 1157, in from_pretrained',
        "    raise ValueError(",
        later,
    ]).encode()


HANDLING = "During handling of the above exception, another exception occurred:"
DIRECT = "The above exception was the direct cause of the following exception:"


@pytest.mark.parametrize(("first", "marker", "later", "exception"), [
    ("KeyError: 'qwen3_tts'", HANDLING, ("ValueError: The checkpoint you are trying to load has model type `qwen3_tts` "
     "but Transformers does not recognize this architecture."), "ValueError"),
    ("ModuleNotFoundError: No module named 'bitsandbytes'", DIRECT, ("ImportError: Please install bitsandbytes>=0.46.1 "
     "via `pip install bitsandbytes>=0.46.1` to use bitsandbytes quantizer."), "ImportError"),
    ("OSError: 'org/model' is not a valid model identifier listed on 'https://huggingface.co/models'", DIRECT,
     "ValueError: Failed to load 'org/model'", "OSError"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", HANDLING,
     "RuntimeError: cleanup failed while releasing the 'kv_cache' buffers of every layer of the model", "torch.OutOfMemoryError"),
], ids=["key-told-as-unknown-model", "module-told-as-install-hint", "wrapper-says-less", "another-trouble"])
def test_a_chained_exception_that_tells_the_same_trouble_at_length_is_the_cause(
        first: str, marker: str, later: str, exception: str) -> None:
    rc = analyze_bytes(_chain(first, marker, later)).root_cause
    assert rc is not None and rc.exception == exception


def test_a_container_that_could_not_start_with_gpus_names_the_hooks_error() -> None:
    """docker's own line says the GPU hook failed; nvidia-container-cli's line after it says why."""
    log = (b"docker: Error response from daemon: failed to create task for container: failed to create shim task: "
           b"OCI runtime create failed: runc create failed: unable to start container process: error during container "
           b"init: error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as "
           b"'legacy'\nnvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.9, please update your "
           b"driver to a newer version, or use an earlier cuda container: unknown.\n")
    a = analyze_bytes(log)
    rc = a.root_cause
    assert a.failed and rc is not None and (rc.signature, rc.line_no) == ("container_start_failed", 2)


def test_a_server_that_cannot_bind_its_port_has_failed_though_uvicorn_stops_in_order() -> None:
    log = (b"INFO:     Started server process [1851872]\nINFO:     Waiting for application startup.\n"
           b"INFO:     Application startup complete.\n"
           b"ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use\n"
           b"INFO:     Waiting for application shutdown.\nINFO:     Application shutdown complete.\n")
    a = analyze_bytes(log)
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "port_in_use"


def test_an_asyncio_tasks_unretrieved_exception_is_not_a_failure() -> None:
    """asyncio reports a task's exception nobody awaited when the task is collected (``Task exception was never
    retrieved``, its future, then the traceback): the server went on, so the run has not failed."""
    log = (b"INFO 07-11 13:13:30 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
           b"INFO:     Application startup complete.\n"
           b"INFO 07-11 13:13:34 [async_llm_engine.py:222] Aborted request 85bac0a6.\n"
           b"Task exception was never retrieved\n"
           b"future: <Task finished name='Task-456' coro=<listen_for_disconnect() done> exception=AttributeError(\"'State' "
           b"object has no attribute 'enable_server_load_tracking'\")>\n"
           b"Traceback (most recent call last):\n"
           b'  File "/v/entrypoints/utils.py", line 36, in listen_for_disconnect\n'
           b"    if request.app.state.enable_server_load_tracking:\n"
           b"AttributeError: 'State' object has no attribute 'enable_server_load_tracking'\n"
           b'INFO:     127.0.0.1:50122 - "POST /v1/completions HTTP/1.1" 200 OK\n')
    a = analyze_bytes(log)
    assert not a.failed and a.root_cause is None
    assert "asyncio_task_exception" in {s["id"] for s in a.to_json(file="x.log")["signatures"]}


def test_a_rollout_servers_failed_call_is_one_requests_failure() -> None:
    """ms-swift's rollout server logs a failed call (``[ERROR:swift] Method execution failed: async_infer``, its
    traceback) and answers the request with a 500: an error of one request while the server serves, not a
    failure of the run."""
    log = (b'INFO:     127.0.0.1:34776 - "POST /reset_prefix_cache/ HTTP/1.1" 200 OK\n'
           b"[WARNING:swift] max_model_len(8096) - num_tokens(12052) < max_tokens(2048). Setting max_tokens: -3956\n"
           b"[ERROR:swift] Method execution failed: async_infer\n"
           b"Traceback (most recent call last):\n"
           b'  File "/w/swift/llm/infer/rollout.py", line 144, in async_llm_worker\n'
           b"    result = await method(*args, **kwargs)\n"
           b"ValueError: max_tokens must be at least 1, got -3956.\n"
           b'INFO:     127.0.0.1:34776 - "POST /infer/ HTTP/1.1" 500 Internal Server Error\n')
    a = analyze_bytes(log)
    assert not a.failed
    assert a.root_cause is not None and a.root_cause.exception == "ValueError"  # offered, pending
    assert a.errors == 1 and a.first_error_at == 3


def test_the_engine_cores_own_traceback_while_serving_is_not_one_requests() -> None:
    """vLLM 0.8 prints the engine core's death unprefixed, like the front end's lines (``EngineCore hit an
    exception: Traceback ...``): while serving it is still the engine's failure, not one request's, and the
    throughput record after it (the front end still logging) does not clear it."""
    r = b"ERROR 04-16 10:35:25 [core.py:387] "
    log = (b"INFO 04-16 10:35:05 [api_server.py:1081] Starting vLLM API server on http://0.0.0.0:8000\n"
           b'INFO:     172.20.235.128:30878 - "GET /health HTTP/1.1" 200 OK\n'
           + r + b"EngineCore hit an exception: Traceback (most recent call last):\n"
           + r + b'  File "/r/dag/compiled_dag_node.py", line 2344, in _execute_until\n'
           + r + b"    result = self._dag_output_fetcher.read(timeout)\n"
           + r + b"ray.exceptions.RayChannelTimeoutError: System error: Timed out waiting for object available to "
                 b"read.\n"
           + b"INFO 04-16 10:35:27 [loggers.py:87] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
             b"throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs\n")
    a = analyze_bytes(log)
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception == "ray.exceptions.RayChannelTimeoutError"
