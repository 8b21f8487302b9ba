"""The edges that reach a host: SSH and the local transport, the host registry, the worker bundle shipped
to a host, and the kernel-log evidence read from it."""
