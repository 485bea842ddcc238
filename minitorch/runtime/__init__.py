"""The runtime: streams and events, a caching allocator, a paged KV cache, continuous batching.

Import modules by full name (``minitorch.runtime.allocator``); nothing is re-exported here.
"""
