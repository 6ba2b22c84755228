"""Serving: what fits and how long a request takes, speculative decoding, and the memory
a real engine (vLLM) allocates.
"""
