#!/usr/bin/env bash
# On the device machine, from the repository root (bench/gpu/README.md says in which calls):
#   bash bench/gpu/device.sh stash N     copy the payload piece .gN/ (carried by this call) to ~/stash
#   bash bench/gpu/device.sh install     reassemble the pieces, check the sha256, pip-install the wheels
#                                        into the device's python3, then probe the imports
#   bash bench/gpu/device.sh probe       versions + imports only
set -euo pipefail
cd "$(dirname "$0")/../.."
STASH=${EORCH_GPU_STASH:-$HOME/stash}
PAYLOAD=${EORCH_GPU_PAYLOAD:-$HOME/payload}

probe() {
  python3 - <<'EOF'
import importlib, importlib.metadata as md, json
dists = ["vllm", "speculators", "hs-connectors", "flashinfer-python", "transformers", "torch", "textual", "asyncssh"]
found = {}
for d in dists:
    try:
        found[d] = md.version(d)
    except md.PackageNotFoundError:
        found[d] = None
for mod in ["vllm.entrypoints.cli.main", "speculators", "hs_connectors", "flashinfer", "orchestrator.cli.main",
            "tomli_w", "datasets"]:
    importlib.import_module(mod)
print(json.dumps({"versions": found, "imports": "ok"}))
EOF
}

case "${1:-}" in
  stash)
    mkdir -p "$STASH"
    cp ".g$2"/* "$STASH"/
    echo "stash: $(ls "$STASH" | tr '\n' ' ')"
    ;;
  install)
    t0=$(date +%s)
    (cd "$STASH" && cat $(ls payload.part* | sort -V) > payload.tar && sha256sum -c SHA256)
    mkdir -p "$PAYLOAD"
    tar -xf "$STASH/payload.tar" -C "$PAYLOAD"
    rm -f "$STASH"/payload.tar "$STASH"/payload.part*
    python3 -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check "$PAYLOAD"/wheels/*.whl
    # a cutlass DSL without its CUDA flavour raises "No CTK flavor installed" when flashinfer imports it
    python3 -m pip uninstall -y -q nvidia-cutlass-dsl >/dev/null 2>&1 || true
    probe
    echo "install: $(( $(date +%s) - t0 ))s"
    ;;
  probe) probe ;;
  *) echo "usage: bash bench/gpu/device.sh stash N | install | probe" >&2; exit 2 ;;
esac
