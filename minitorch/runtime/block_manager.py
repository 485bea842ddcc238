"""A block manager for a paged KV cache: block tables, ref counts, copy-on-write, prefix caching.

The KV cache is cut into ``num_blocks`` physical blocks of ``block_size`` token slots. Each
sequence owns a **block table**, the list of its physical blocks in logical order, so token
``p`` lives in slot ``table[p // block_size] * block_size + p % block_size`` (its **slot
mapping**). Blocks are reference counted:

* ``allocate(seq, tokens)`` gives a new sequence the blocks of its prompt;
* ``append_slot(seq, token)`` finds the slot of one more token, taking a new block when the
  last one is full, and copying the last block first when it is shared (**copy-on-write**:
  it returns ``(src, dst)``, the copy the cache must make before writing);
* ``fork(parent, child)`` shares every block of the parent (parallel sampling, beam search);
* ``free(seq)`` drops the sequence's references; blocks at zero go back to the free list.

**Prefix caching.** A full block is named by a hash chained over token ids,
``h_i = hash(h_{i-1}, tokens of block i)``, so equal names mean equal *prefixes*, not just
equal blocks. A new prompt reuses every leading full block whose name is cached (a hit; its
K/V is not recomputed). Freed blocks keep their name while they sit in the free list, which
is kept in LRU order: a block is only evicted (its name forgotten) when it is taken again.

    bm = BlockManager(num_blocks=64, block_size=4)
    bm.allocate(0, [5, 1, 2, 3, 4, 9])       # 2 blocks; bm.block_table(0) == [0, 1]
    slot, copy = bm.append_slot(0, 7)        # slot 1*4 + 2 = 6, copy None
    bm.fork(0, 1); bm.append_slot(1, 8)      # shared last block: copy == (1, 2)

Lab: 18_paged_kv_cache
Paper: Kwon et al., "Efficient Memory Management for Large Language Model Serving with
PagedAttention", SOSP 2023 (vLLM); Zheng et al., "SGLang", 2024 (RadixAttention)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

__all__ = ["BlockManager", "NoFreeBlocksError", "block_hash"]


class NoFreeBlocksError(RuntimeError):
    """Raised when a block is needed and every block is in use (the scheduler preempts)."""


def block_hash(parent: int | None, tokens: Sequence[int]) -> int:
    """The name of a full block: a hash of its parent's name and its own token ids."""
    return hash((parent, tuple(int(t) for t in tokens)))


class BlockManager:
    """Physical blocks, per-sequence block tables, ref counts and a prefix cache."""

    def __init__(self, num_blocks: int, block_size: int, prefix_caching: bool = True) -> None:
        if num_blocks < 1 or block_size < 1:
            raise ValueError("num_blocks and block_size must be positive")
        self.num_blocks, self.block_size = num_blocks, block_size
        self.prefix_caching = prefix_caching
        self.ref_count = [0] * num_blocks
        self.free_blocks: OrderedDict[int, None] = OrderedDict.fromkeys(range(num_blocks))
        self.block_name: dict[int, int] = {}  # block -> hash (full, cached blocks)
        self.cached: dict[int, int] = {}  # hash -> block
        self.tables: dict[int, list[int]] = {}
        self.tokens: dict[int, list[int]] = {}
        self.names: dict[int, list[int]] = {}  # seq -> hashes of its full blocks
        self.cached_tokens: dict[int, int] = {}  # seq -> prompt tokens found in the cache
        self.queries = self.hits = self.evictions = self.copies = 0

    # ------------------------------------------------------------------ queries
    def blocks_needed(self, n_tokens: int) -> int:
        return -(-n_tokens // self.block_size)

    def num_free_blocks(self) -> int:
        return len(self.free_blocks)

    def num_used_blocks(self) -> int:
        return self.num_blocks - len(self.free_blocks)

    def can_allocate(self, n_tokens: int) -> bool:
        """Enough free blocks for a prompt of n_tokens even with no prefix hit."""
        return self.blocks_needed(n_tokens) <= len(self.free_blocks)

    def block_table(self, seq: int) -> list[int]:
        return list(self.tables[seq])

    def slot_mapping(self, seq: int, start: int = 0, end: int | None = None) -> list[int]:
        """Slots of the sequence's tokens start..end-1 (default: all)."""
        table, bs = self.tables[seq], self.block_size
        end = len(self.tokens[seq]) if end is None else end
        return [table[p // bs] * bs + p % bs for p in range(start, end)]

    def hit_rate(self) -> float:
        """Prefix-cache hits over full-block lookups so far."""
        return self.hits / self.queries if self.queries else 0.0

    # ------------------------------------------------------------------ blocks
    def _take(self) -> int:
        if not self.free_blocks:
            raise NoFreeBlocksError(f"all {self.num_blocks} blocks are in use")
        block, _ = self.free_blocks.popitem(last=False)  # least recently freed first
        name = self.block_name.pop(block, None)
        if name is not None:  # evict: forget the cached name
            self.evictions += 1
            if self.cached.get(name) == block:
                del self.cached[name]
        self.ref_count[block] = 1
        return block

    def _share(self, block: int) -> None:
        if self.ref_count[block] == 0:
            del self.free_blocks[block]
        self.ref_count[block] += 1

    def _name(self, seq: int, block: int) -> None:
        """Register the sequence's newest full block under its chained hash."""
        names, bs = self.names[seq], self.block_size
        i = len(names)
        name = block_hash(names[-1] if names else None, self.tokens[seq][i * bs : (i + 1) * bs])
        names.append(name)
        if self.prefix_caching and name not in self.cached:
            self.cached[name] = block
            self.block_name[block] = name

    # ------------------------------------------------------------------ operations
    def allocate(self, seq: int, tokens: Sequence[int]) -> list[int]:
        """Blocks for a new sequence's prompt; leading full blocks come from the cache."""
        if seq in self.tables:
            raise ValueError(f"sequence {seq} already has blocks")
        bs, n = self.block_size, len(tokens)
        table: list[int] = []
        self.tables[seq], self.tokens[seq], self.names[seq] = table, [], []
        parent, hitting = None, self.prefix_caching
        try:
            for i in range(self.blocks_needed(n)):
                chunk = [int(t) for t in tokens[i * bs : (i + 1) * bs]]
                self.tokens[seq].extend(chunk)
                self.queries += len(chunk) == bs and self.prefix_caching
                if len(chunk) == bs and hitting:
                    parent = block_hash(parent, chunk)
                    if parent in self.cached:
                        self.hits += 1
                        block = self.cached[parent]
                        self._share(block)
                        table.append(block)
                        self.names[seq].append(parent)
                        continue
                    hitting = False  # after the first miss, no later block can hit
                table.append(self._take())
                if len(chunk) == bs:
                    self._name(seq, table[-1])
        except NoFreeBlocksError:
            self.free(seq)
            raise
        self.cached_tokens[seq] = len(self.names[seq]) * bs if self.prefix_caching else 0
        return list(table)

    def append_slot(self, seq: int, token: int) -> tuple[int, tuple[int, int] | None]:
        """Slot of one more token, and the block copy ``(src, dst)`` needed first, if any."""
        table, toks, bs = self.tables[seq], self.tokens[seq], self.block_size
        n, copy = len(toks), None
        if n % bs == 0:  # the last block is full (or there is none): a fresh block
            table.append(self._take())
        elif self.ref_count[table[-1]] > 1:  # shared and partly filled: copy-on-write
            src = table[-1]
            dst = self._take()
            self.ref_count[src] -= 1
            table[-1], copy = dst, (src, dst)
            self.copies += 1
        toks.append(int(token))
        if (n + 1) % bs == 0:
            self._name(seq, table[-1])
        return table[-1] * bs + n % bs, copy

    def fork(self, parent: int, child: int) -> None:
        """The child shares every block of the parent (ref counts + 1)."""
        if child in self.tables:
            raise ValueError(f"sequence {child} already has blocks")
        for block in self.tables[parent]:
            self._share(block)
        self.tables[child] = list(self.tables[parent])
        self.tokens[child] = list(self.tokens[parent])
        self.names[child] = list(self.names[parent])
        self.cached_tokens[child] = self.cached_tokens.get(parent, 0)

    def free(self, seq: int) -> None:
        """Drop the sequence; blocks no one holds go to the free list's recent end (last
        block first, so a prompt's tail is evicted before its head)."""
        for block in reversed(self.tables.pop(seq)):
            self.ref_count[block] -= 1
            if self.ref_count[block] == 0:
                self.free_blocks[block] = None
        self.tokens.pop(seq, None)
        self.names.pop(seq, None)
        self.cached_tokens.pop(seq, None)
