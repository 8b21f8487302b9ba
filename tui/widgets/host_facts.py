"""`host check` facts as text: GPUs with free memory per GPU, and free disk under the eorch root."""

from __future__ import annotations

from typing import Any

from rich.text import Text

GIB = 2**30


def gpu_summary(facts: dict[str, Any] | None) -> str:
    """`2× H100: 79.1, 12.0 GiB free` — compact, for a table cell."""
    if not facts:
        return "not checked"
    gpus = facts.get("gpus") or []
    if not gpus:
        return "no GPUs"
    free = ", ".join(f"{(g['memory_total_mib'] - g['memory_used_mib']) / 1024:.1f}" for g in gpus)
    return f"{len(gpus)}× {gpus[0].get('name', 'GPU')}: {free} GiB free"


def disk_summary(facts: dict[str, Any] | None) -> str:
    if not facts or facts.get("disk_free_bytes") is None:
        return "—"
    return f"{facts['disk_free_bytes'] / GIB:.1f} GiB"


def facts_text(name: str, facts: dict[str, Any] | None, error: str | None = None) -> Text:
    """Everything a check said about one host, one GPU a line."""
    text = Text()
    if error:
        text.append(f"{name}: unreachable — {error}", style="red")
        if not facts:
            return text
        text.append("\nlast known facts:\n", style="dim")
    if not facts:
        return Text(f"{name}: not checked yet (ctrl+r / r to check)", style="dim")
    text.append_text(Text.assemble((name, "bold"), f": {facts.get('hostname', '?')} · {facts.get('os', '?')} · "
                                   f"Python {facts.get('python', '?')}"))
    text.append(f"\ndisk: {disk_summary(facts)} free under {facts.get('root', '?')}")
    gpus = facts.get("gpus") or []
    if not gpus:
        text.append("\nGPUs: none (no nvidia-smi or no devices)", style="dim")
    for g in gpus:
        free = g["memory_total_mib"] - g["memory_used_mib"]
        text.append(f"\nGPU {g['index']}: {g['name']} · {free / 1024:.1f} GiB free of "
                    f"{g['memory_total_mib'] / 1024:.1f} GiB")
    return text
