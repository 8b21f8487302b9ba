"""Forms of session 45 (the known-wrong cases of wild192/193 and the blind sets from wild196 on).  Every text here
is written for the test, in the forms the real logs showed; the sets themselves stay a measure
(``bench/verdict_score.py tests/data/wild196``)."""

from __future__ import annotations

from orchestrator.logparse import analyze_bytes


def _log(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


_RAY = ("ray.exceptions.RayTaskError(ActorDiedError): ray::Runner.run() (pid=41, ip=127.0.0.1, "
        "actor_id=0b28, repr=<main.Runner object at 0x7f>)")


def test_a_fragment_after_rays_wrapper_line_is_not_the_remote_exception_line() -> None:
    """A paste cut in the next record's timestamp (``[20``) after Ray's wrapper line: the wrapper still says what
    the worker raised (wild192's form)."""
    a = analyze_bytes(_log("[2026-03-12 11:17:34]   File \"/x/worker.py\", line 968, in get_objects",
                           "[2026-03-12 11:17:34]     raise value.as_instanceof_cause()",
                           f"[2026-03-12 11:17:34] {_RAY}", "[20"))
    assert a.failed and a.root_cause is not None
    assert a.root_cause.exception == "ActorDiedError"
    assert "ray::Runner.run()" in a.root_cause.message


def test_a_word_after_rays_wrapper_line_is_still_read() -> None:
    a = analyze_bytes(_log(_RAY, '  File "/x/worker.py", line 3, in run', "    boom()",
                           "ValueError: bad shard index"))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.message) == ("ValueError", "bad shard index")


_WORKER = "(Worker_DP0_EP0 pid=26) ERROR 05-20 10:42:56 [multiproc_executor.py:962] "


def test_a_caret_line_a_paste_begins_at_is_not_named_as_the_error() -> None:
    """A worker's traceback pasted from its middle: its first record holds only a caret line, which says nothing
    (wild193's form)."""
    a = analyze_bytes(_log(_WORKER + "           ^^^^^^^^^^^^^^^^^^^^^",
                           _WORKER + '  File "/x/vllm/model_executor/models/deepseek_v2.py", line 1067, in forward',
                           _WORKER + "    return self.mla_attn(positions, hidden_states)",
                           "(EngineCore_DP0 pid=24) ERROR 05-20 10:42:56 [dump_input.py:81] Dumping scheduler stats: "
                           "SchedulerStats(num_running_reqs=809)"))
    assert a.failed and a.root_cause is not None
    assert "^^^" not in a.root_cause.message


def test_a_frame_line_cut_in_its_path_without_indentation_is_a_frame() -> None:
    """An SGLang scheduler's traceback, its indentation lost, cut in a frame line's path: the error line above it
    stays the cause, the cut frame is no exception line (wild193's form, flattened)."""
    a = analyze_bytes(_log(
        "[2025-05-15 19:49:08 DP49 TP49] Error fetching prefill parallel info from bootstrap: "
        "HTTPConnectionPool(host='prefill', port=8998): Max retries exceeded with url: /route (Caused by "
        "NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f>: Failed to establish a new "
        "connection: [Errno 111] Connection refused'))",
        "[2025-05-15 19:49:08 DP49 TP49] Scheduler hit an exception: Traceback (most recent call last):",
        'File "/sgl/python/sglang/srt/managers/scheduler.py", line 2233, in run_scheduler_process',
        "scheduler.event_loop_overlap_disagg_decode()",
        'File "/sgl/python/sglang/utils.py", line 471, in __call__',
        "return fn(obj)",
        'File "/sgl/python/sglang/srt/managers'))
    assert a.failed and a.root_cause is not None
    assert "Connection refused" in a.root_cause.message
