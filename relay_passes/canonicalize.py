"""A deterministic binding order, so that one network gives the same kernels from any frontend.

FuseOps fuses a residual add into whichever of its producers comes last in the binding order, and frontends order
independent branches differently (torch's ONNX exporter emits a ResNet's downsample conv before the main branch,
`torch.export` after it). Re-emitting each dataflow block in post-order from its outputs, operands in argument
order, fixes the order by the dataflow alone.
"""

from __future__ import annotations

from typing import Any

import tvm
from tvm import relax


def _uses(expr: Any) -> list[relax.Var]:
    """Variables an expression reads, in argument order."""
    if isinstance(expr, relax.Var):
        return [expr]
    if isinstance(expr, relax.Tuple):
        return [v for field in expr.fields for v in _uses(field)]
    if isinstance(expr, relax.TupleGetItem):
        return _uses(expr.tuple_value)
    if isinstance(expr, relax.Call):
        return [v for arg in expr.args for v in _uses(arg)]
    return []


def _reorder(block: relax.DataflowBlock, live: list[relax.Var]) -> relax.DataflowBlock:
    bindings = list(block.bindings)
    by_var = {b.var: b for b in bindings}
    order: list[Any] = []
    done: set[Any] = set()
    for root in live:
        stack: list[tuple[Any, bool]] = [(root, False)]
        while stack:  # iterative post-order DFS: deep networks overflow Python's recursion
            var, expanded = stack.pop()
            if var in done or var not in by_var:
                continue
            if expanded:
                done.add(var)
                order.append(by_var[var])
                continue
            stack.append((var, True))
            stack.extend((u, False) for u in reversed(_uses(by_var[var].value)) if u not in done)
    order += [b for b in bindings if b.var not in done]  # unused bindings keep their place at the end
    return relax.DataflowBlock(order)


def canonical_order(mod: tvm.IRModule) -> tvm.IRModule:
    """Reorder the dataflow blocks of `main`; other functions and non-dataflow blocks are left as they are."""
    main = mod["main"]
    seq = main.body
    if not isinstance(seq, relax.SeqExpr):
        return mod
    blocks = []
    for i, block in enumerate(seq.blocks):
        if not isinstance(block, relax.DataflowBlock):
            blocks.append(block)
            continue
        # live roots: what later blocks and the function body read
        later = [b.value for blk in seq.blocks[i + 1:] for b in blk.bindings] + [seq.body]
        defined = {b.var for b in block.bindings}
        roots = [v for expr in later for v in _uses(expr) if v in defined]
        blocks.append(_reorder(block, list(dict.fromkeys(roots))))
    new_main = relax.Function(main.params, relax.SeqExpr(blocks, seq.body), main.ret_ty, main.is_pure, main.attrs)
    out = mod.shallow_copy() if hasattr(mod, "shallow_copy") else tvm.IRModule(dict(mod.functions.items()))
    out["main"] = new_main
    return out
