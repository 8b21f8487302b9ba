"""Job recipes run on the host by the detached wrapper (stdlib only at import time)."""
