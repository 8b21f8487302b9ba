"""eorch's remote side: stdlib-only code uploaded to each host (content-addressed) and run with its python3."""
