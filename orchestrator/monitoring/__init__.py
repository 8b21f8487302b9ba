"""Following runs: the monitor, split into a pure decision and the edges that feed it.

The pure core: ``decide`` (a liveness report and the stored run in, the status/phase change out),
``liveness`` (the report as facts) and ``truncation`` (when a log counts as cut): no SSH, no SQLite, no
clock; mypy strict and ``tests/unit/test_pure_core.py`` keep them so.

The edges around it each do one job: ``connection`` (the host's session, backoff, reachability),
``followers`` (one log / step-event follower per run, restarted when they die, drained at the end),
``truncationrecovery`` (a log replaced or shrunk: start over), ``slurmstate`` (the scheduler's view of a
Slurm run), ``observed`` (when a run was checked, when it last wrote), ``watcher`` (one host's loop over
them) and ``monitor`` (a watcher per host). ``lock`` is the one place that takes the monitor lock or, when
another process holds it, reads the history.

This file imports nothing, so that importing the pure core pulls in no I/O library.
"""
