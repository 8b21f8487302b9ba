"""Forms found by the blind sets wild128-wild148 (sessions 32-33): frames a paster left out of a traceback, a
journal whose host was taken out, vLLM V0's engine loop re-raising its death through an asyncio callback, a
child's ``Process ...:`` line inside its parent's traceback, a script's logger relaying vLLM's records, an
exception raised without a message after the error line that says why, rpyc's proxy of an exception raised on
the other side, a paste that began inside a record's header or at the innermost frame's source line, a cloud
console's copy (newest first, a severity and a stamp before each line), a stamp replaced by dots, a tool-call
parser's traceback, a gated model's refusal, and a sticky CUDA error in a step old SGLang caught.  Every text
here is written for the test, in the forms the real logs showed."""

from __future__ import annotations

import pytest

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.prefixes import parse_line


def _frames(n: int) -> str:
    return "".join(f'  File "/srv/app/layer{i}.py", line {10 + i}, in __getattr__\n'
                   f"    return getattr(self.inner, name)\n" for i in range(n))


@pytest.mark.parametrize("elision", ["....", "...", "…", "[...]", "(...)"])
def test_frames_left_out_of_a_paste_do_not_end_the_traceback(elision: str) -> None:
    """A long traceback pasted with its middle replaced by ``....`` (blank lines around it): the exception line
    after the rest of the frames is still what was raised."""
    text = ("INFO 08-25 22:29:19 llm_engine.py:70] Initializing an LLM engine with config: model='/m'\n"
            "Traceback (most recent call last):\n" + _frames(2) + "\n" + elision + "\n\n" + _frames(3)
            + "RecursionError: maximum recursion depth exceeded\n")
    rc = analyze_bytes(text.encode()).root_cause
    assert rc is not None and (rc.exception, rc.message) == ("RecursionError", "maximum recursion depth exceeded")


def test_an_elision_is_no_exception_line_but_a_word_after_frames_is() -> None:
    text = "Traceback (most recent call last):\n" + _frames(1) + "ValueError: ...\n"
    rc = analyze_bytes(text.encode()).root_cause
    assert rc is not None and (rc.exception, rc.message) == ("ValueError", "...")


JOURNAL_NO_HOST = (
    "Mar 18 11:23:41 systemd[1]: Started Model Server.\n"
    "Mar 18 11:23:46 model-server[931930]: Traceback (most recent call last):\n"
    'Mar 18 11:23:46 model-server[931930]:   File "/venv/lib/python3.11/site-packages/srv/config.py", line 326, in '
    "get_text_config\n"
    "Mar 18 11:23:46 model-server[931930]:     class_name = config.architectures[0]\n"
    "Mar 18 11:23:46 model-server[931930]:                  ~~~~~~~~~~~~~~~~~~~~^^^\n"
    "Mar 18 11:23:46 model-server[931930]: TypeError: 'NoneType' object is not subscriptable\n"
    "Mar 18 11:23:47 systemd[1]: model-server.service: Main process exited, code=exited, status=1/FAILURE\n"
)


def test_a_journal_pasted_without_its_host_column_is_read_through_its_stamps() -> None:
    """``journalctl`` writes ``stamp host unit[pid]: ``; a paste with the host taken out keeps ``unit[pid]: ``."""
    assert parse_line("Mar 18 11:23:46 model-server[931930]: TypeError: boom").message == "TypeError: boom"
    rc = analyze_bytes(JOURNAL_NO_HOST.encode()).root_cause
    assert rc is not None and (rc.exception, rc.message) == ("TypeError", "'NoneType' object is not subscriptable")


def test_a_word_and_a_colon_after_a_syslog_stamp_stay_the_message() -> None:
    """Without ``[pid]`` a host is what tells a journal's unit from a message's first word."""
    assert parse_line("Mar 18 11:23:46 Error: disk full").message.endswith("Error: disk full")


V0_LOOP_DEATH = (
    "INFO:     127.0.0.1:51234 - \"POST /v1/completions HTTP/1.1\" 500 Internal Server Error\n"
    "Exception in callback functools.partial(<function _raise_exception_on_finish at 0x7fdba4287400>, "
    "error_callback=<bound method AsyncLLMEngine._error_callback of <vllm.engine.async_llm_engine.AsyncLLMEngine "
    "object at 0x7fdbaf021510>>)\n"
    "handle: <Handle functools.partial(<function _raise_exception_on_finish at 0x7fdba4287400>)>\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/vllm/lora/worker_manager.py", line 149, in _load_lora\n'
    "    lora = self._lora_model_cls.from_local_checkpoint(\n"
    "FileNotFoundError: [Errno 2] No such file or directory: 'org/adapter/adapter_config.json'\n"
    "\n"
    "The above exception was the direct cause of the following exception:\n"
    "\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/vllm/engine/async_llm_engine.py", line 38, in '
    "_raise_exception_on_finish\n"
    "    task.result()\n"
    "vllm.engine.async_llm_engine.AsyncEngineDeadError: Task finished unexpectedly. This should never happen!\n"
)


def test_v0s_engine_loop_dying_through_its_callback_is_a_failure_and_its_chain_says_why() -> None:
    """asyncio's ``Exception in callback`` is usually lived with; vLLM V0's ``_raise_exception_on_finish`` is the
    engine's background loop re-raising what killed it."""
    analysis = analyze_bytes(V0_LOOP_DEATH.encode())
    assert analysis.failed
    assert analysis.root_cause is not None and analysis.root_cause.exception == "FileNotFoundError"
    assert "asyncio_callback_exception" not in {s.id for s in analysis.signatures}


def test_a_childs_process_header_written_into_the_parents_traceback_is_not_its_exception_line() -> None:
    """Two writers on one stderr: multiprocessing's ``Process SpawnProcess-1:`` lands between the frames of the
    parent's traceback; the parent's exception line is still the one after its last frame."""
    text = ("ERROR 02-07 05:08:37 engine.py:389] \n"
            "Traceback (most recent call last):\n"
            '  File "/venv/vllm/worker/model_runner.py", line 1112, in load_model\n'
            "    self.model = get_model(vllm_config=self.vllm_config)\n"
            "Process SpawnProcess-1:\n"
            "                 ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
            '  File "/venv/vllm/model_executor/model_loader/loader.py", line 1225, in load_model\n'
            "    assert param_data.shape == loaded_weight.shape\n"
            "AssertionError\n"
            "Traceback (most recent call last):\n"
            '  File "/venv/vllm/entrypoints/openai/api_server.py", line 230, in build_async_engine_client\n'
            "    raise RuntimeError(\n"
            "RuntimeError: Engine process failed to start. See stack trace for the root cause.\n")
    rc = analyze_bytes(text.encode()).root_cause
    assert rc is not None and rc.exception == "AssertionError"


RELAYED = (
    "2024-07-13 15:07:26,687 - INFO - vLLM: INFO 07-13 15:07:26 metrics.py:295] Avg prompt throughput: 0.0 "
    "tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 1 reqs\n"
    "2024-07-13 15:07:34,921 - INFO - vLLM: ERROR 07-13 15:07:34 async_llm_engine.py:616] Engine iteration timed "
    "out. This should never happen!\n"
    "2024-07-13 15:07:34,930 - INFO - vLLM: ERROR 07-13 15:07:34 async_llm_engine.py:53] Engine background task "
    "failed\n"
    "2024-07-13 15:07:34,930 - INFO - vLLM: ERROR 07-13 15:07:34 async_llm_engine.py:53] Traceback (most recent "
    "call last):\n"
    '2024-07-13 15:07:34,958 - INFO - vLLM: ERROR 07-13 15:07:34 async_llm_engine.py:53]   File "/venv/vllm/engine/'
    'async_timeout.py", line 178, in _do_exit\n'
    "2024-07-13 15:07:34,961 - INFO - vLLM: ERROR 07-13 15:07:34 async_llm_engine.py:53]     raise "
    "asyncio.TimeoutError\n"
    "2024-07-13 15:07:34,962 - INFO - vLLM: ERROR 07-13 15:07:34 async_llm_engine.py:53] "
    "asyncio.exceptions.TimeoutError\n"
)


@pytest.mark.parametrize("tag", ["vLLM: ", "server: ", ""])
def test_a_scripts_logger_relaying_vllms_records_is_read_as_those_records(tag: str) -> None:
    """``logging.basicConfig(format="%(asctime)s - %(levelname)s - %(message)s")`` relaying each line of the
    server's output (tagged or not): the relayed vLLM record is the line's record."""
    line = parse_line(f"2024-07-13 15:07:34,930 - INFO - {tag}ERROR 07-13 15:07:34 async_llm_engine.py:53] boom")
    assert (line.level, line.record, line.message) == ("ERROR", "ERROR 07-13 15:07:34 [async_llm_engine.py:53]",
                                                       "boom")
    rc = analyze_bytes(RELAYED.replace("vLLM: ", tag).encode()).root_cause
    assert rc is not None and rc.exception == "asyncio.exceptions.TimeoutError"


def test_an_exception_raised_without_a_message_takes_the_words_its_process_logged_just_before() -> None:
    rc = analyze_bytes(RELAYED.encode()).root_cause
    assert rc is not None and rc.message == "Engine iteration timed out. This should never happen!"


def test_a_scripts_own_record_without_a_logger_name_has_its_level() -> None:
    line = parse_line("2024-07-13 15:07:34,930 - ERROR - the benchmark failed")
    assert (line.level, line.message) == ("ERROR", "the benchmark failed")


RPYC = (
    "Rank 0: load weight begin.\n"
    "Initialization failed. router_init_state: Traceback (most recent call last):\n"
    '  File "/venv/lib/python3.11/site-packages/srv/router/manager.py", line 71, in start_router_process\n'
    "    model_client = ModelRpcClient(server_args, port_args)\n"
    '  File "/venv/lib/python3.11/site-packages/rpyc/core/async_.py", line 111, in value\n'
    "    raise self._obj\n"
    "{local}: CUDA out of memory. Tried to allocate 112.00 MiB. GPU \n"
    "\n"
    "========= Remote Traceback (1) =========\n"
    "Traceback (most recent call last):\n"
    '  File "/venv/lib/python3.11/site-packages/rpyc/core/protocol.py", line 369, in _dispatch_request\n'
    "    res = self._HANDLERS[handler](self, *args)\n"
    '  File "/venv/lib/python3.11/site-packages/srv/router/model_runner.py", line 285, in __init__\n'
    "    self.load_model()\n"
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 112.00 MiB. GPU \n"
    "\n"
    "\n"
    "goodbye ('127.0.0.1', 57702)\n"
)


@pytest.mark.parametrize("local", ["rpyc.core.vinegar/torch.cuda._get_exception_class.<locals>.Derived",
                                   "RuntimeError"])
def test_the_remote_traceback_in_an_rpyc_proxys_message_says_what_was_raised(local: str) -> None:
    """rpyc re-raises the other side's exception as a proxy whose message holds that side's traceback, under
    a ``Remote Traceback`` banner: what the other side raised is the root cause, the proxy is its echo."""
    rc = analyze_bytes(RPYC.format(local=local).encode()).root_cause
    assert rc is not None and rc.exception == "torch.cuda.OutOfMemoryError"
    assert rc.message.startswith("CUDA out of memory. Tried to allocate 112.00 MiB") and rc.line_no == 2


def test_a_paste_that_began_inside_a_records_header_reads_the_message_after_it() -> None:
    """The first line keeps only the end of vLLM's header (``[multiproc_executor.py:492] ``): the exception
    line after it is the root cause, not an echo of the symptom records below."""
    text = ("[multiproc_executor.py:492] ValueError: Free memory on device (31.44/47.38 GiB) on startup is less "
            "than desired GPU memory utilization (0.95, 45.01 GiB).\n"
            "ERROR 06-30 13:53:19 [core.py:515] EngineCore failed to start.\n"
            "ERROR 06-30 13:53:19 [core.py:515] Traceback (most recent call last):\n"
            'ERROR 06-30 13:53:19 [core.py:515]   File "/usr/lib/vllm/v1/executor/abstract.py", line 53, in __init__\n'
            "ERROR 06-30 13:53:19 [core.py:515]     self._init_executor()\n"
            "ERROR 06-30 13:53:19 [core.py:515] Exception: WorkerProc initialization failed due to an exception in "
            "a background process. See stack trace for root cause.\n"
            "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n")
    rc = analyze_bytes(text.encode()).root_cause
    assert rc is not None and (rc.exception, rc.line_no) == ("ValueError", 1)
    assert rc.message.startswith("Free memory on device")
    assert parse_line("[model_runner.py:1234] Loading weights").message == "Loading weights"


@pytest.mark.parametrize("above", ["if self.sampling_params.max_new_tokens > 0:", "    x = f(y)"])
def test_a_paste_that_began_at_the_innermost_frames_source_line_is_a_cut_traceback(above: str) -> None:
    text = (f"{above}\n"
            "TypeError: '>' not supported between instances of 'NoneType' and 'int'\n"
            "[2025-03-03 06:49:28 TP5] Scheduler hit an exception: Traceback (most recent call last):\n"
            'File "/srv/sglang/srt/managers/scheduler.py", line 1796, in run_scheduler_process\n')
    rc = analyze_bytes(text.encode()).root_cause
    assert rc is not None and (rc.exception, rc.line_no) == ("TypeError", 2)


CLOUD_CONSOLE = [  # oldest first; the console lists them newest first
    ("INFO", "[2025-04-05 00:00:52] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-70B-Instruct')"),
    ("ERROR", "[2025-04-05 00:01:19 TP0] Scheduler hit an exception: Traceback (most recent call last):"),
    ("ERROR", 'File "/srv/sglang/srt/managers/scheduler.py", line 1999, in run_scheduler_process'),
    ("ERROR", "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)"),
    ("ERROR", 'File "/venv/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 2501, in all_reduce'),
    ("ERROR", "work = group.allreduce([tensor], opts)"),
    ("ERROR", "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:317, unhandled system error"),
    ("ERROR", "[2025-04-05 00:01:19] Received sigquit from a child process. It usually means the child failed."),
    ("ERROR", "./entrypoint.sh: line 48: 28 Killed python3 -m sglang.launch_server --port 30000"),
]


def test_a_cloud_consoles_copy_newest_first_with_its_severity_column_is_read_as_the_log() -> None:
    """Google Cloud Logging's console lists a container's lines newest first, each behind its severity and a
    UTC stamp: read oldest first without them, the worker's exception is the root cause."""
    lines = [f"{sev} 2025-04-05T00:01:19.{209000 + n:09d}Z {text}" for n, (sev, text) in enumerate(CLOUD_CONSOLE)]
    a = analyze_bytes("".join(line + "\n" for line in reversed(lines)).encode())
    rc = a.root_cause
    assert rc is not None and rc.exception == "torch.distributed.DistBackendError"
    assert rc.message.startswith("NCCL error in") and rc.line_no == len(lines) - 1
    assert parse_line(lines[1]).message.startswith("Scheduler hit an exception")


@pytest.mark.parametrize("elided", ["...", "\u2026"])
def test_a_record_whose_stamp_the_paster_replaced_by_dots_is_still_a_record(elided: str) -> None:
    text = (f"INFO {elided} [shm_broadcast.py:698] No available shared memory broadcast block found in 600 seconds.\n"
            f"ERROR {elided} [core.py:2178] RuntimeError: {elided} [/pytorch/third_party/gloo/gloo/transport/tcp/"
            "unbound_buffer.cc:78] Timed out waiting 1800000ms for recv operation to complete\n"
            f"ERROR {elided} RayWorkerProc rank=[3] died unexpectedly, shutting down executor.\n")
    a = analyze_bytes(text.encode())
    assert a.failed and a.root_cause is not None and (a.root_cause.exception, a.root_cause.line_no) == ("RuntimeError", 2)
    assert parse_line(text.splitlines()[0]).level == "INFO"


def test_a_tool_call_parsers_traceback_while_serving_is_one_requests_failure() -> None:
    """A tool-call parser runs only for a request: its exception (logged by the parser, or with the record
    that announced it cut off) loses that request's tool call, not the server."""
    tb = ("Traceback (most recent call last):\n"
          '  File "/app/hermes_tool_parser.py", line 228, in extract_tool_calls_streaming\n'
          '    function_name: Union[str, None] = current_tool_call.get("name")\n'
          "AttributeError: 'NoneType' object has no attribute 'get'\n")
    serving = ("INFO 05-02 10:00:00 [api_server.py:1090] Starting vLLM API server on http://0.0.0.0:8000\n"
               "INFO:     Application startup complete.\n")
    assert not analyze_bytes((serving + tb + "Error trying to handle streaming tool call.\n" + tb).encode()).failed
    loading = tb.replace("hermes_tool_parser.py", "model_loader.py").replace("extract_tool_calls_streaming",
                                                                              "load_model")
    assert analyze_bytes((serving + loading).encode()).failed


GATED = ("Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-2-7b-chat-hf/resolve/main/config.json.\n"
         "Access to model meta-llama/Llama-2-7b-chat-hf is restricted. You must be authenticated to access it.\n")


def test_a_gated_models_refusal_fails_the_start_and_says_what_to_do() -> None:
    """Hugging Face refuses a gated model's files to a host that is not logged in with an account that accepted
    its licence: the load cannot start.  Pasted alone (no exception line) it is the root cause; inside the
    exception transformers raises for it, that exception is, with the same hint."""
    alone = analyze_bytes(GATED.encode())
    assert alone.failed and alone.root_cause is not None and alone.root_cause.signature == "hf_gated_repo"
    assert alone.root_cause.hint is not None and "HF_TOKEN" in alone.root_cause.hint
    raised = analyze_bytes((
        "Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.10/site-packages/transformers/utils/hub.py", line 470, in cached_files\n'
        "    raise OSError(\n"
        "OSError: You are trying to access a gated repo.\n"
        "Make sure to have access to it at https://huggingface.co/meta-llama/Llama-2-7b-chat-hf.\n"
        "401 Client Error. (Request ID: Root=1-6650)\n\n" + GATED).encode())
    rc = raised.root_cause
    assert raised.failed and rc is not None and (rc.exception, rc.signature) == ("OSError", "hf_gated_repo")


STEP_CAUGHT = (
    "INFO:     Application startup complete.\n"
    "new fill batch. #seq: 1. #cached_token: 35. #new_token: 39. #remaining_req: 0. #running_req: 0.\n"
    "Exception in ModelRpcClient:\n"
    "Traceback (most recent call last):\n"
    '  File "/venv/lib/python3.10/site-packages/sglang/srt/managers/router/model_rpc.py", line 168, in exposed_step\n'
    "    self.forward_step()\n"
    "{exc}\n"
    'INFO:     127.0.0.1:58036 - "POST /generate HTTP/1.1" 200 OK\n'
)


@pytest.mark.parametrize("exc, failed", [
    ("RuntimeError: CUDA error: device-side assert triggered", True),
    ("RuntimeError: CUDA error: an illegal memory access was encountered", True),
    ("ValueError: regex could not be compiled", False),
])
def test_a_caught_steps_cuda_error_that_sticks_to_the_device_is_a_failure(exc: str, failed: bool) -> None:
    """Old SGLang's router catches an error in one step of its model worker and goes on: one bad request.  A
    CUDA error that sticks to the context (a device-side assert, an illegal access) is no request's: every
    later step fails with it."""
    a = analyze_bytes(STEP_CAUGHT.format(exc=exc).encode())
    assert a.failed is failed
    if failed:
        assert a.root_cause is not None and a.root_cause.exception == "RuntimeError"
