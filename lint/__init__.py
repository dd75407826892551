"""ddplint: static and runtime checks for distributed-training hazards."""

__version__ = "0.1.0"
