"""eorch: launch, follow and understand long GPU jobs on remote hosts over SSH."""

__version__ = "0.1.0"
