"""Forms the blind sets wild172 to wild176 found (session 42).  Every text here is written for the test, in the
forms the real logs showed; the sets themselves stay a measure (``bench/verdict_score.py tests/data/wild172``)."""

from __future__ import annotations

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.prefixes import parse_line


def _log(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


#: A Slurm job of ``LLM(...)`` on a compute node without internet (xg02's form): the hub's file list is retried
#: for ten minutes, an ERROR record says why, and nothing goes on until the time limit.
_HUNG_THEN_CANCELLED = [
    "INFO 03-02 10:00:01 [__init__.py:239] Automatically detected platform cuda.",
    "Running on node17",
    ("ERROR 03-02 10:10:05 [config.py:103] Error retrieving file list: (MaxRetryError(\"HTTPSConnectionPool("
    "host='huggingface.co', port=443): Max retries exceeded with url: /api/models/Qwen/Qwen3-8B/tree/main "
    "(Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f2c>: Failed to establish a "
    "new connection: [Errno 101] Network is unreachable'))\"), '(Request ID: 5b1e)')"),
    "slurmstepd: error: *** JOB 4242 ON node17 CANCELLED AT 2026-03-02T10:20:00 DUE TO TIME LIMIT ***",
]


def test_a_time_limit_after_an_error_nothing_went_on_from_blames_the_error() -> None:
    """The job hung on the error until Slurm stopped it: the error is the root cause, the time limit ended the
    wait (its signature stays listed)."""
    a = analyze_bytes(_log(*_HUNG_THEN_CANCELLED))
    assert a.failed and a.root_cause is not None
    assert a.root_cause.line_no == 3 and "Network is unreachable" in a.root_cause.message
    assert "time limit" in (a.root_cause.hint or "")
    assert "slurm_time_limit" in {s.id for s in a.signatures}


def test_a_time_limit_after_an_error_the_job_went_on_from_is_the_time_limits() -> None:
    """Progress after the error shows the job went on from it: the time limit cut the work short."""
    lines = [*_HUNG_THEN_CANCELLED[:3],
             "Loading safetensors checkpoint shards:  50% Completed | 2/4 [09:10<09:10, 275.00s/it]",
             _HUNG_THEN_CANCELLED[3]]
    a = analyze_bytes(_log(*lines))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("slurm_time_limit", 5)


#: Lemonade's server (``lemond``) in the journal, starting vLLM (xg11's form): its own records are
#: ``stamp [Level] (Component) message``; its child's output comes as ``(Process)`` records.
_LEMOND = [
    "Mar 03 09:12:01 box lemond[1200]: 2026-03-03 09:12:01.100 [Info] (vLLM) Starting vllm-server on port 8001...",
    ("Mar 03 09:12:01 box lemond[1200]: 2026-03-03 09:12:01.101 [Info] (ProcessManager) Process started successfully, "
    "PID: 1300"),
    "Mar 03 09:12:01 box lemond[1200]: Waiting for vllm-server to be ready (timeout: 0s)...",
    ("Mar 03 09:12:01 box lemond[1200]: 2026-03-03 09:12:01.102 [Error] (WrappedServer) vllm-server failed to start "
    "within timeout"),
    "Mar 03 09:12:01 box lemond[1300]: Shutdown signal received, exiting...",
    ("Mar 03 09:12:06 box lemond[1200]: 2026-03-03 09:12:06.110 [Warn] (ProcessManager) Process did not respond to "
    "SIGTERM, using SIGKILL"),
    ("Mar 03 09:12:08 box lemond[1200]: 2026-03-03 09:12:08.111 [Error] (Router) Backend load failed: vllm-server "
    "failed to start within timeout"),
]


def test_a_supervisors_own_records_have_its_level() -> None:
    line = parse_line(_LEMOND[3])
    assert (line.level, line.message) == ("ERROR", "(WrappedServer) vllm-server failed to start within timeout")
    assert parse_line(_LEMOND[5]).level == "WARNING"


def test_a_supervisor_that_gave_up_waiting_for_the_server_failed_its_start() -> None:
    a = analyze_bytes(_log(*_LEMOND))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("start_timeout", 4)
    assert "failed to start within timeout" in a.root_cause.message


def test_the_supervisors_give_up_outranks_the_error_lines_it_makes() -> None:
    """What the supervisor logs after it gave up (its router's ``Backend load failed``, cut in a paste) is what
    giving up did: the give-up says more."""
    a = analyze_bytes(_log(*_LEMOND[:-1], _LEMOND[-1][:-20]))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("start_timeout", 4)


def test_a_launchers_give_up_is_a_symptom_of_the_servers_error_it_prints_after() -> None:
    """A benchmark driver gives up on the server, then prints the tail of the server's log: the server's own
    error, below the give-up, is the cause."""
    a = analyze_bytes(_log(
        "[online] Waiting for the server on port 30000 ...",
        "[online] ERROR: Server failed to start within 600 seconds",
        "[online] Last 3 lines of the server's log:",
        "[2026-02-11 04:12:01 TP3] Init torch distributed begin.",
        "Memory access fault by GPU node-6 (Agent handle: 0x55d1c0) on address 0x7f3a00000000. Reason: Unknown.",
        "Fatal Python error: Aborted",
    ))
    assert a.failed and a.root_cause is not None
    assert "Memory access fault by GPU node-6" in a.root_cause.message


#: verl running vLLM (V0) on Ray (xg13's form): the driver shows the raylet's report of a dead worker first, then
#: the worker's own lines: dumping the failed step's inputs failed on the CUDA error that killed it.
_RAY_CUDA = [
    ("(raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the "
    "problem, check the logs for the dead worker. RayTask ID: ffffffffffffffff5d1c Worker ID: 9a0b Node ID: 77c1 "
    "Worker IP address: 127.0.0.1 Worker port: 40111 Worker PID: 5120 Worker exit type: SYSTEM_ERROR Worker exit "
    "detail: Worker unexpectedly exits with a connection error code 2. End of file."),
    ("(WorkerDict pid=5120) INFO 05-11 08:02:13 model_runner_base.py:120] Writing input of failed execution to "
    "/tmp/err_execute_model_input_20260511-080213.pkl..."),
    ("(WorkerDict pid=5120) WARNING 05-11 08:02:13 model_runner_base.py:143] Failed to pickle inputs of failed "
    "execution: CUDA error: an illegal memory access was encountered"),
    ("(WorkerDict pid=5120) WARNING 05-11 08:02:13 model_runner_base.py:143] CUDA kernel errors might be "
    "asynchronously reported at some other API call, so the stacktrace below might be incorrect."),
]


def test_the_cuda_error_a_failed_steps_dump_ran_into_is_the_cause_of_the_workers_death() -> None:
    a = analyze_bytes(_log(*_RAY_CUDA))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.process, a.root_cause.line_no) == ("cuda_error", "WorkerDict", 3)
    assert a.root_cause.message.endswith("CUDA error: an illegal memory access was encountered")


#: ``ray job submit`` of an RL job (wild173's form): Ray's status lines, then the job's last logs, in which a worker's
#: lines end with the advice of Ray's out-of-memory error, and a progress bar the dump put after it.
_RAY_JOB_OOM = [
    "2026-04-02 09:14:20,118\tERR cli.py:70 -- ---------------------------------------",
    ("2026-04-02 09:14:20,118\tINFO cli.py:83 -- Status message: Job entrypoint command failed with exit code 1, "
    "last available logs (truncated to 20,000 chars):"),
    "(PolicyActor pid=3120) 3388\t2.41\tray::RewardModelActor",
    ("(PolicyActor pid=3120) Refer to the documentation on how to address the out of memory issue: "
    "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. Consider provisioning more memory "
    "on this node or reducing task parallelism by requesting more CPUs per task."),
    "Episode [1/20]:  12%|#2        | 9/75 [1:02:11<7:36:02, 414.58s/it, policy_loss=0.08]",
]


def test_rays_out_of_memory_kill_in_a_jobs_last_logs_is_the_cause() -> None:
    a = analyze_bytes(_log(*_RAY_JOB_OOM))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("ray_oom_killed", 4)
    assert "host RAM" in (a.root_cause.hint or "")


def test_a_ray_job_that_failed_with_no_reason_shown_failed() -> None:
    a = analyze_bytes(_log(*_RAY_JOB_OOM[:2]))
    assert a.failed and a.root_cause is not None
    assert a.root_cause.signature == "ray_job_failed"


def test_a_rank_torchrun_saw_killed_by_a_signal_is_the_cause_not_its_childfailederror() -> None:
    """torchrun's ChildFailedError is what a rank's failure did; its Root Cause table says the rank was killed by
    SIGKILL (wild174's form), with no error of the rank's own in the log."""
    a = analyze_bytes(_log(
        "Episode 2/1000: generating rollouts",
        "W0611 20:21:40.118000 3942700 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 3942776 "
        "closing signal SIGTERM",
        "E0611 20:21:46.702000 3942700 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) "
        "local_rank: 0 (pid: 3942775) of binary: /srv/env/bin/python",
        "Traceback (most recent call last):",
        '  File "/srv/env/lib/python3.12/site-packages/torch/distributed/launcher/api.py", line 269, in launch_agent',
        "    raise ChildFailedError(",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "========================================================",
        "train.py FAILED",
        "--------------------------------------------------------",
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "--------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-06-11_20:21:46",
        "  host      : node-a",
        "  rank      : 0 (local_rank: 0)",
        "  exitcode  : -9 (pid: 3942775)",
        "  error_file: <N/A>",
        "  traceback : Signal 9 (SIGKILL) received by PID 3942775",
        "========================================================",
    ))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("elastic_rank_signal", 21)
    assert "Signal 9 (SIGKILL)" in a.root_cause.message


#: V0's engine process logging the exception that kills it at start-up, one error record a line (wild174's
#: form), the paste cut above and below: frames only, the next frame line cut before its line number.
_ENGINE_FRAMES = [
    ("ERROR 02-07 18:06:25 engine.py:389]   File \"/srv/vllm/model_executor/models/deepseek_v2.py\", line 496, in "
    "__init__"),
    "ERROR 02-07 18:06:25 engine.py:389]     self.self_attn = attn_cls(",
    ("ERROR 02-07 18:06:25 engine.py:389]   File \"/srv/vllm/model_executor/layers/rotary_embedding.py\", line 1098, "
    "in get_rope"),
    "ERROR 02-07 18:06:25 engine.py:389]     rotary_emb = DeepseekScalingRotaryEmbedding(",
    "ERROR 02-07 18:06:25 engine.py:389]   File \"/srv/vllm/model_executor/layers/rota",
]


def test_a_start_ups_error_records_that_are_a_tracebacks_frames_cut_both_ends_failed() -> None:
    a = analyze_bytes(_log(*_ENGINE_FRAMES))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.line_no) == (None, 3)
    assert a.root_cause.traceback is not None and "rotary_embedding.py\", line 1098" in a.root_cause.traceback


def test_a_servers_error_records_of_frames_stay_error_lines() -> None:
    """Once the server served, frames logged as error records may be one request's: not a failure by
    themselves."""
    a = analyze_bytes(_log("INFO 02-07 18:00:01 api_server.py:512] Application startup complete.",
                           'INFO:     127.0.0.1:41022 - "POST /v1/completions HTTP/1.1" 200 OK', *_ENGINE_FRAMES))
    assert not a.failed


def test_rsyslogs_written_out_carriage_returns_are_read_as_carriage_returns() -> None:
    """rsyslog writes control bytes in octal: ``#033`` for a colour code's escape, ``#015`` for the carriage
    return vLLM ends a record's lines with but its last."""
    lines = ["Jul 15 08:09:04 gpu1 vllm[382]: #033[1;36m(VllmWorkerProcess pid=382)#033[0;0m ERROR 07-15 08:09:04 "
             f"[multiproc_worker_utils.py:239] {text}#015" for text in (
                 "Exception in worker VllmWorkerProcess while processing method determine_num_available_blocks.",
                 "Traceback (most recent call last):",
                 '  File "/srv/vllm/worker/model_runner.py", line 1359, in _dummy_run',
                 "    max_mm_tokens = self.mm_registry.get_max_multimodal_tokens(")]
    lines.append("Jul 15 08:09:04 gpu1 vllm[382]: #033[1;36m(VllmWorkerProcess pid=382)#033[0;0m ERROR 07-15 "
                 "08:09:04 [multiproc_worker_utils.py:239] KeyError: 'image'")
    notes: list[str] = []
    a = analyze_bytes(_log(*lines), notes)
    assert any("carriage returns (#015)" in note for note in notes)
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.process) == ("KeyError", "VllmWorkerProcess")


def test_a_request_handlers_error_records_of_frames_stay_error_lines() -> None:
    """A request handler's records (``serving_chat.py``) log one request's failure, whatever the phase read."""
    a = analyze_bytes(_log(
        "ERROR 11-11 21:14:55 serving_chat.py:158] jinja2.exceptions.TemplateSyntaxError: expected token 'end of "
        "print statement', got 'name'",
        'ERROR 11-11 21:14:55 serving_chat.py:158]   File "<unknown>", line 27, in template',
        "ERROR 11-11 21:14:55 serving_chat.py:158]     {{ messages[0].content }",
    ))
    assert not a.failed


#: ``kubectl get pods`` then ``kubectl describe pod`` of a vLLM server that keeps dying (wild176's form).
_KUBECTL = [
    "NAME                           READY   STATUS             RESTARTS        AGE",
    "pod/router-5c5c865cc8-h46l2    1/1     Running            0               21h",
    "pod/vllm-7bc97cf5c5-rdvgz      0/1     CrashLoopBackOff   41 (2m10s ago)  3h",
    "Name:             vllm-7bc97cf5c5-rdvgz",
    "    State:          Waiting",
    "      Reason:       CrashLoopBackOff",
    "    Last State:     Terminated",
    "      Reason:       OOMKilled",
    "      Exit Code:    137",
]


def test_a_crash_looping_pod_failed() -> None:
    a = analyze_bytes(_log(*_KUBECTL[:3]))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("k8s_crash_loop", 3)


def test_a_pod_killed_at_its_memory_limit_is_the_cause_of_its_crash_loop() -> None:
    a = analyze_bytes(_log(*_KUBECTL))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("k8s_oom_killed", 8)
    assert "memory limit" in (a.root_cause.hint or "")
