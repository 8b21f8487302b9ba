"""Reading a process's environment and argv from /proc, right after it was started: a fresh child is in the
middle of execve() when ``Popen`` returns, and its /proc files read empty for a moment (the suite's hygiene
scan missed an `eorch watch` so under a CPU hog)."""

from __future__ import annotations

import subprocess

from worker import procs


def test_a_child_read_the_moment_popen_returns_shows_its_marker_and_argv() -> None:
    for i in range(30):
        child = subprocess.Popen(["sleep", "30"], env={"EORCH_TEST_MARK": str(i)})
        try:
            seen = procs.environ_and_argv(child.pid)
            assert seen is not None
            env, argv = seen
            assert f"EORCH_TEST_MARK={i}".encode() in env
            assert argv[:2] == [b"sleep", b"30"]
            assert child.pid in procs.pids_with_marker("EORCH_TEST_MARK", str(i))
        finally:
            child.kill()
            child.wait()


def test_kernel_threads_zombies_and_the_gone_read_as_none_without_waiting() -> None:
    kernel_threads = [pid for pid in procs.all_pids() if (fields := procs.stat_fields(pid))
                      and len(fields) > 6 and int(fields[6]) & procs.PF_KTHREAD]
    for pid in kernel_threads[:5]:
        assert procs.environ_and_argv(pid) is None
    zombie = subprocess.Popen(["true"])
    while not procs.is_zombie(zombie.pid):
        pass
    assert procs.environ_and_argv(zombie.pid) is None
    zombie.wait()
    assert procs.environ_and_argv(zombie.pid) is None


def test_a_process_with_an_empty_environment_is_still_read() -> None:
    child = subprocess.Popen(["sleep", "30"], env={})
    try:
        seen = procs.environ_and_argv(child.pid)
        assert seen is not None and seen[0] == [b""] and seen[1][0] == b"sleep"
    finally:
        child.kill()
        child.wait()
