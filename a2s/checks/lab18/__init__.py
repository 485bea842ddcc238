"""Graders of lab 18 (paged KV cache): slot mapping, paged attention, copy-on-write append,
chained block hashes for prefix caching, and the predicted KV memory waste.

Ground truth is written here: a plain loop for slots, torch's ``scaled_dot_product_attention``
(computed outside the student's call) for attention, a simulated physical cache whose
contents are read back through every block table for copy-on-write, prefix equality for the
block hashes, and closed forms for the waste. The ``minitorch.runtime`` reference is blocked
and torch is forbidden in student code.
"""

from a2s.checks.lab18.cow import check_copy_on_write
from a2s.checks.lab18.prefix import check_prefix_hashes
from a2s.checks.lab18.slots import check_paged_attention, check_slot_mapping
from a2s.checks.lab18.waste import check_kv_waste

__all__ = [
    "check_copy_on_write",
    "check_kv_waste",
    "check_paged_attention",
    "check_prefix_hashes",
    "check_slot_mapping",
]
