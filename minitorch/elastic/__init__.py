"""Fault tolerance and elastic training: checkpoints, failure detection, restarts under torchrun.

``job`` (the training job and its full state), ``checkpoint`` (atomic save, manifest, torn
files), ``sharded`` (ZeRO shards, the asynchronous writer), ``reshard`` (read plans for
another world size), ``interval`` (Young/Daly and a
failure simulator), ``detect`` (heartbeats and collective timeouts on gloo ranks),
``stragglers`` (a slow rank in a synchronous step), ``elastic`` and ``train`` (a job under
``torchrun`` that survives a killed worker). Import modules by full name; nothing is
re-exported here.

Lab: 32_fault_tolerance_elastic
"""
