"""Relax passes that turn a model into the operator graph TVM will compile (TVM 0.27 has no Relay: these are the
"relay passes" of tvm-cost, written over Relax).

Modules, in data-flow order: `canonicalize` (binding order), `lower` (TVM's legalize + fuse passes), `tir_stats`
(FLOPs, bytes, loops), `schedule` (the schedule that will run and its PerStoreFeature rows), `build` (the
`OperatorGraph`), `graph` (the container, no TVM needed).
"""
