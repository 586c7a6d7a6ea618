"""`LegalizeCache`: reuse the PrimFunc TVM's LegalizeOps made for an identical op call in an earlier module.

Converting thousands of similar networks (NAS-Bench-201's 15,625 cells) legalizes the same conv2d, add or pool
with the same shapes again and again; building each PrimFunc (TE compute + ``create_prim_func``) is most of
``lower``'s time. The cache wraps each op's registered ``FLegalize`` (as `relax.transform.LegalizeOps`'s
``customize_legalize_map``): an op call whose op, attributes and argument/result struct info were seen before gets
the stored PrimFunc added through the same ``BlockBuilder.add_func`` TVM's own path uses (same name hint, same
de-duplication), so the lowered module is the one TVM would have made. Only plain results are stored: a
``call_tir`` of one PrimFunc on exactly the call's own arguments; anything else is legalized afresh every time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import tvm
import tvm_ffi
from tvm import relax

__all__ = ["LegalizeCache"]

_CALL_TIR = tvm.ir.Op.get("relax.call_tir")
_PATCH_LOCK = threading.RLock()
"""Held while a miss is legalized: TVM's TE legalizations keep their op tag in one process-wide scope, and
`BlockBuilder.add_func` is patched to record names, so threads must legalize one at a time and restore it in the
order they patched it (re-entrant: a legalization may run inside another)."""


class LegalizeCache:
    """PrimFuncs of legalized op calls, keyed by the call's op, attributes and struct infos; counts hits."""

    def __init__(self) -> None:
        self._funcs: dict[tuple[Any, ...], tuple[tvm.tirx.PrimFunc, str, Any]] = {}
        self._map: dict[str, Callable[[Any, relax.Call], relax.Expr]] | None = None
        self.hits = 0
        self.misses = 0

    def legalize_map(self) -> dict[str, Callable[[Any, relax.Call], relax.Expr]]:
        """``customize_legalize_map`` for `relax.transform.LegalizeOps`: every op with an ``FLegalize``, cached."""
        with _PATCH_LOCK:  # built whole before it is shared: an op missing from it would be legalized unlocked
            if self._map is None:
                ops = [tvm.ir.Op.get(name) for name in tvm.ir.Op.list_op_names()]
                self._map = {op.name: self._wrap(op.get_attr("FLegalize")) for op in ops if op.has_attr("FLegalize")}
        return self._map

    def _wrap(self, legalize: Callable[[Any, relax.Call], relax.Expr]) -> Callable[[Any, relax.Call], relax.Expr]:
        def cached(bb: Any, call: relax.Call) -> relax.Expr:
            key = _key(call)
            hit = self._funcs.get(key)
            if hit is not None:
                func, name, ty_args = hit
                self.hits += 1
                return relax.Call(_CALL_TIR, [bb.add_func(func, name), relax.Tuple(list(call.args))],
                                  ty_args=ty_args)
            self.misses += 1
            names: list[str] = []
            cls = type(bb)  # the legalizer sees its own Python wrapper of `bb`: record on the class
            with _PATCH_LOCK:
                add_func = cls.add_func

                def recording(self: Any, func: Any, name: str) -> tvm.ir.GlobalVar:
                    names.append(name)  # the name asked for, not the de-duplicated one ("add", not "add3")
                    return add_func(self, func, name)

                cls.add_func = recording
                try:
                    out = legalize(bb, call)
                finally:
                    cls.add_func = add_func
            func = _plain_call_tir(bb, call, out)
            if func is not None and len(names) == 1:
                self._funcs[key] = (func, names[0], out.ty_args)
            return out

        return cached


def _key(call: relax.Call) -> tuple[Any, ...]:
    return (call.op.name, tvm_ffi.structural_hash(call.attrs) if call.attrs is not None else 0,
            tuple((type(a).__name__, tvm_ffi.structural_hash(a.ty)) for a in call.args),
            tuple(tvm_ffi.structural_hash(s) for s in call.ty_args),
            tvm_ffi.structural_hash(call.ty))


def _plain_call_tir(bb: Any, call: relax.Call, out: relax.Expr) -> tvm.tirx.PrimFunc | None:
    """The PrimFunc if `out` is ``call_tir(gv, (call's args...))``, else None."""
    if not (isinstance(out, relax.Call) and out.op.same_as(_CALL_TIR) and len(out.args) == 2):
        return None
    gv, args = out.args
    if not isinstance(gv, tvm.ir.GlobalVar) or not isinstance(args, relax.Tuple) \
            or len(args.fields) != len(call.args) \
            or not all(a.same_as(b) for a, b in zip(args.fields, call.args, strict=True)):
        return None
    func = bb.get()[gv]
    return func if isinstance(func, tvm.tirx.PrimFunc) else None
