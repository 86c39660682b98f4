"""The compiled engine: node-level planning, the event loop and their kernels."""
