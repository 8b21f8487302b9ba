"""Phases move forward on the right lines; shard progress carries rate and ETA."""

from __future__ import annotations

import pytest

from orchestrator.logparse import Phase
from orchestrator.logparse.phases import read_progress, read_shards

from .conftest import parse_all

W = b"(Worker_TP0 pid=1) INFO 02-21 21:43:01 [x.py:1] "
E = b"(EngineCore_DP0 pid=2) INFO 02-21 21:43:01 [x.py:1] "


class TestShards:
    @pytest.mark.parametrize("desc", ["Loading safetensors checkpoint shards", "Loading pt checkpoint shards",
                                      "Loading np_cache checkpoint shards",
                                      "Loading safetensors checkpoint shards (eager)"])
    def test_loader_variants(self, desc: str) -> None:
        """Every loader description is read."""
        r = read_shards(f"{desc}:  84% Completed | 54/64 [15:18<02:50, 17.00s/it]")
        assert r is not None and (r.done, r.total) == (54, 64)
        assert r.rate_per_s == pytest.approx(1 / 17)
        assert r.eta_s == 170

    def test_rate_in_it_per_s_and_unknown_eta(self) -> None:
        """`2.55it/s` is a rate; `?` remaining gives an ETA from the rate."""
        r = read_shards("Loading safetensors checkpoint shards:   2% Completed | 1/64 [00:00<?, 2.55it/s]")
        assert r is not None and r.rate_per_s == 2.55 and r.eta_s == pytest.approx(63 / 2.55)

    def test_first_frame_has_no_rate(self) -> None:
        r = read_shards("Loading safetensors checkpoint shards:   0% Completed | 0/64 [00:00<?, ?it/s]")
        assert r is not None and r.rate_per_s is None and r.eta_s is None

    def test_shard_events_carry_rate_and_eta(self) -> None:
        """ShardsProgressed events report rate and ETA; the phase becomes loading."""
        events, p = parse_all(W + b"Starting to load model /m...\n" + b"\rLoading safetensors checkpoint shards:"
                              b"  84% Completed | 54/64 [15:18<02:50, 17.00s/it]\n")
        shard = next(e.to_dict() for e in events if e.kind == "shards_progressed")
        assert shard["done"] == 54 and shard["eta_s"] == 170 and shard["line_no"] == 2  # an editor's line 2
        assert p.analysis().phase is Phase.LOADING


class TestPhaseLine:
    def test_full_lifecycle(self) -> None:
        """starting -> loading -> loaded -> serving -> running -> stopped."""
        log = (E + b"Initializing a V1 LLM engine (v0.16.0) with config: x\n"
               + W + b"Starting to load model /m...\n"
               + W + b"Loading weights took 12.50 seconds\n"
               + W + b"Model loading took 67.83 GiB memory and 80.1 seconds\n"
               + E + b"init engine (profile, create kv cache, warmup model) took 39.52 seconds\n"
               + b'INFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 200 OK\n'
               + b"INFO:     Shutting down\n")
        events, p = parse_all(log)
        phases = [e.to_dict()["phase"] for e in events if e.kind == "phase_changed"]
        assert phases == ["loading", "loaded", "serving", "running", "stopped"]
        assert p.analysis().weights_load_s == 12.5

    def test_drafter_weights_time_is_ignored(self) -> None:
        """The bogus second `Loading weights took` (speculative drafter) neither moves nor times anything."""
        log = (W + b"Loading weights took 0.02 seconds\n" + W + b"Loading drafter model...\n"
               + W + b"Loading weights took 483.53 seconds\n")
        events, p = parse_all(log)
        assert p.analysis().weights_load_s == 0.02
        assert len([e for e in events if e.kind == "phase_changed"]) == 1

    def test_application_startup_complete_means_serving(self) -> None:
        _, p = parse_all(b"INFO:     Application startup complete.\n")
        assert p.analysis().phase is Phase.SERVING


class TestUserProgress:
    def test_tqdm_and_processed_lines(self) -> None:
        """A client's tqdm bar and `Processed N/M samples` are user progress."""
        a = read_progress(b" 37%|###7      | 37/100 [00:01<00:02, 30.00it/s, ok=37, err=0]")
        b = read_progress(b"Processed 37/100 samples")
        assert a is not None and (a.done, a.total, a.unit) == (37, 100, "it")
        assert b is not None and (b.done, b.total, b.unit) == (37, 100, "samples")

    def test_cuda_graph_and_shard_bars_are_not_user_progress(self) -> None:
        assert read_progress(b"Capturing CUDA graphs (decode, FULL): 45%|####5 | 30/67 [00:03<00:04, 9.1it/s]") is None
        assert read_progress(b"Loading safetensors checkpoint shards: 84% Completed | 54/64 [15:18<02:50, 1it/s]") is None

    def test_progress_events_are_coalesced_per_percent(self) -> None:
        """A bar of 10 000 steps reports at most one event per percent (plus completion)."""
        frames = b"".join(b"\r%d/10000 [00:01<00:02, 30.00it/s]" % k for k in range(0, 10001, 7))
        events, p = parse_all(frames + b"\n")
        reported = [e for e in events if e.kind == "progress_reported"]
        assert 90 <= len(reported) <= 102
        assert p.analysis().progress is not None and p.analysis().progress.done == 9996
