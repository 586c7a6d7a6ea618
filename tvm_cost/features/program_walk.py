"""Walk a scheduled PrimFunc and list its buffer stores exactly as MetaSchedule's `PerStoreFeature` rows them.

`PerStoreFeature` (src/s_tir/meta_schedule/feature_extractor/per_store_feature.cc) first lowers a copy of the
module (`PassListForPerStoreFeature`: drop weight-layout-rewrite blocks, simplify, lower cross-thread reductions
and init blocks, ...), then visits it in pre-order and

- skips every store whose value is an integer or float constant (the zero of an init block),
- keeps one row per *written buffer*, ordered by that buffer's first remaining store, holding the features of its
  *last* store.

Running that pass list again here would cost more than the extractor itself (~17 ms a candidate on a conv2d), so
the walker reads the scheduled TIR as it is and reproduces the passes' effect on the list of stores: init bodies
come before the block body; unit serial loops (dropped by the simplifier) are not counted and their variables are
constant; a thread loop inside one of the same tag (cooperative fetch) merges into it, as `UnifyThreadBinding`
does; layout-rewrite blocks are skipped; and on GPUs a reduction bound to `threadIdx` becomes an in-thread store
into a local `in_thread_<buf>` (when a reduction loop stays serial or the block has a predicate) plus a write-back
into `<buf>`. `lower_for_features` runs the real passes (with a Python port of the one TVM does not export) for
the rare candidate where that shortcut and the extractor disagree on the number of rows.

FFI arrays are read through a slice (``arr[:]``, one Python list): iterating one element by element costs three
times as much, and the walk runs on every candidate of a search.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import tvm
import tvm_ffi
from tvm import s_tir, tirx
from tvm.ir.expr import Call, TensorLoad

# For.kind values (tirx.ForKind)
SERIAL, PARALLEL, VECTORIZED, UNROLLED, THREAD_BINDING = range(5)
_LAYOUT_REWRITE = "meta_schedule.layout_rewrite_preproc"
_BINARY = (tirx.Add, tirx.Sub, tirx.Mul, tirx.Div, tirx.Mod, tirx.FloorDiv, tirx.FloorMod, tirx.Min, tirx.Max,
           tirx.EQ, tirx.NE, tirx.LT, tirx.LE, tirx.GT, tirx.GE, tirx.And, tirx.Or)
_CONST = (tirx.IntImm, tirx.FloatImm)


class Loop(NamedTuple):
    """One loop around a store: `uid` identifies it within one walk. (A named tuple: the walk makes one per loop of
    every candidate, and a frozen dataclass takes 2.5 times as long to build.)"""

    uid: int
    extent: int
    kind: int
    thread_tag: str = ""


@dataclass
class StoreNode:
    """One written buffer: a node of the program graph and one `PerStoreFeature` row.

    Attributes:
        name: Buffer name (`in_thread_<buf>` for a lowered cross-thread reduction's scratch buffer).
        key: The buffer object (or a stand-in for buffers only the lowering creates).
        scope: Storage scope ("global", "shared", "local", ...).
        nbytes: Size of the buffer in bytes.
        loops: Loops around its last store, outermost first, without the unit loops the simplifier drops.
        reads: Keys of the buffers its stores load.
        is_output: Whether the buffer is a parameter of the function.
        is_reduction: Whether a store reads the buffer it writes (an accumulation).
        has_init: Whether the buffer also gets constant stores (init of a reduction), which have no row.
        is_copy: Whether its last store only moves data (the value is a single load).
    """

    name: str
    key: object
    scope: str
    nbytes: float
    loops: tuple[Loop, ...] = ()
    reads: set = field(default_factory=set)
    is_output: bool = False
    is_reduction: bool = False
    has_init: bool = False
    is_copy: bool = False


def buffer_nbytes(buf: tirx.Buffer) -> float:
    elems = 1
    for dim in buf.shape[:]:
        elems *= int(dim.value) if isinstance(dim, tirx.IntImm) else 1
    return elems * _dtype_bytes(buf)


def _scope(buf: tirx.Buffer) -> str:
    return str(buf.scope()) or "global"


def loads(expr: Any, out: list) -> list:
    """Append the buffers `expr` loads (also inside indices) to `out`."""
    t = type(expr)
    if t is TensorLoad:
        out.append(expr.source)
        for index in expr.indices[:]:
            loads(index, out)
    elif t in _BINARY:
        loads(expr.a, out)
        loads(expr.b, out)
    elif t is Call:
        for arg in expr.args[:]:
            loads(arg, out)
    elif t is tirx.Var or t in _CONST:
        pass
    else:  # Cast, Select, Ramp, Broadcast, Let, Not, ...: rare enough for the generic walk
        tvm_ffi.structural_walk(expr, lambda n: out.append(n.source) if type(n) is TensorLoad else None)
    return out


class StoreWalker:
    """Collect the `StoreNode`s of a module's PrimFuncs in `PerStoreFeature` row order.

    Args:
        mod: The scheduled module (or one lowered by `lower_for_features`).
        is_gpu: Whether the target has the "gpu" key.
        emulate_cross_thread: Rewrite reductions bound to threadIdx as `LowerCrossThreadReduction` would (on GPUs);
            off for a module that went through that pass already.
    """

    def __init__(self, mod: tvm.IRModule, *, is_gpu: bool, emulate_cross_thread: bool = True) -> None:
        self.is_gpu = is_gpu and emulate_cross_thread
        self.nodes: dict[object, StoreNode] = {}
        self._const_stores: set = set()
        self._loops: list[tuple[Loop, object, bool]] = []  # (loop, loop_var, survives the simplifier)
        self._unit_vars: set = set()
        self._realizes: list[s_tir.SBlockRealize] = []
        self._uid = 0
        for func in mod.functions.values():  # the extractor's order; one rank over all functions
            if isinstance(func, tirx.PrimFunc):
                self.params = set(func.params)
                self.stmt(func.body)
        for key in self._const_stores:
            if key in self.nodes:
                self.nodes[key].has_init = True

    # --- statements ---------------------------------------------------------------------------------------
    def stmt(self, s: Any) -> None:
        t = type(s)
        if t is tirx.SeqStmt:
            for child in s.seq[:]:
                self.stmt(child)
        elif t is tirx.For:
            self._for(s)
        elif t is s_tir.SBlockRealize:
            self._realize(s)
        elif t is tirx.BufferStore:
            self._store(s, s.buffer, self._nest())
        elif t is tirx.IfThenElse:
            self.stmt(s.then_case)
            if s.else_case is not None:
                self.stmt(s.else_case)
        elif t is s_tir.SBlock:
            self.stmt(s.body)
        elif hasattr(s, "body"):  # AttrStmt, LetStmt, DeclBuffer, While, ...
            self.stmt(s.body)

    def _for(self, loop: tirx.For) -> None:
        extent = int(loop.extent.value) if isinstance(loop.extent, tirx.IntImm) else -1
        if extent == 0:  # the simplifier removes the loop and its body
            return
        kind = int(loop.kind)
        unit = (extent == 1 and kind == SERIAL and isinstance(loop.min, tirx.IntImm) and loop.min.value == 0
                and len(loop.annotations) == 0)
        if unit:
            self._unit_vars.add(loop.loop_var)
        tag = str(loop.thread_binding.thread_tag) if kind == THREAD_BINDING else ""
        # UnifyThreadBinding merges a thread loop into an enclosing one of the same tag (cooperative fetch).
        keep = not unit and not (tag and any(tag == outer.thread_tag for outer, _, _ in self._loops))
        self._uid += 1
        self._loops.append((Loop(self._uid, max(extent, 1), kind, tag), loop.loop_var, keep))
        self.stmt(loop.body)
        self._loops.pop()

    def _nest(self) -> tuple[Loop, ...]:
        return tuple(loop for loop, _, keep in self._loops if keep)

    def _realize(self, realize: s_tir.SBlockRealize) -> None:
        block = realize.block
        if _LAYOUT_REWRITE in block.annotations:
            return
        self._realizes.append(realize)
        if not (block.init is not None and self.is_gpu and self._cross_thread(realize)):
            if block.init is not None:  # LowerInitBlock puts the init before the body
                self.stmt(block.init)
            self.stmt(block.body)
        self._realizes.pop()

    def _cross_thread(self, realize: s_tir.SBlockRealize) -> bool:
        """Emulate `LowerCrossThreadReduction` on a reduction block; False when it does not apply."""
        if not any(loop.kind == THREAD_BINDING for loop, _, _ in self._loops):
            return False
        block = realize.block
        red_vars: set = set()
        for iv, value in zip(block.iter_vars[:], realize.iter_values[:]):
            if int(iv.iter_type) == 2:  # CommReduce
                tvm_ffi.structural_walk(value, lambda n: red_vars.add(n) if type(n) is tirx.Var else None)
        # Reduction-related loops, after SimplifyForFeatureExtraction has dropped the unit ones.
        red = [i for i, (_, var, _) in enumerate(self._loops) if var in red_vars and var not in self._unit_vars]
        if not red or not any(self._loops[i][0].kind == THREAD_BINDING for i in red):
            return False
        body = block.body
        if type(body) is not tirx.BufferStore:  # multi-buffer reductions: leave them to the fallback
            return False
        outer = [(loop, keep) for loop, _, keep in self._loops[:red[0]]]
        bound = [(self._loops[i][0], self._loops[i][2]) for i in red if self._loops[i][0].kind == THREAD_BINDING]
        serial = [(self._loops[i][0], self._loops[i][2]) for i in red if self._loops[i][0].kind != THREAD_BINDING]
        predicate = realize.predicate
        trivial = isinstance(predicate, tirx.IntImm) and predicate.value == 1
        buf = body.buffer
        nest = tuple(loop for loop, keep in outer + bound if keep)
        if serial or not trivial:
            key = ("in_thread", buf)
            node = self._store(body, key, nest + tuple(loop for loop, keep in serial if keep),
                               name=f"in_thread_{buf.name}", scope="local", nbytes=_dtype_bytes(buf))
            if node is not None:  # it accumulates into its own scratch buffer, not into `buf`
                node.reads = {key if r.same_as(buf) else r for r in node.reads}
                node.is_reduction = True
            self._const_stores.add(key)  # `in_thread_buf[0] = identity`
            sources = {key}
        else:  # the all-reduce consumes the loaded values directly
            sources = {r for r in loads(body.value, []) if not r.same_as(buf)}
        # The write-back `buf[...] = cross_thread_buf[0]`: its data comes through the all-reduce.
        node = self._node(buf, buf.name, _scope(buf), buffer_nbytes(buf))
        node.loops = nest
        node.reads.update(sources)
        node.is_copy = True
        return True

    # --- stores -------------------------------------------------------------------------------------------
    def _node(self, key: object, name: str, scope: str, nbytes: float) -> StoreNode:
        node = self.nodes.get(key)
        if node is None:
            node = self.nodes[key] = StoreNode(name, key, scope, nbytes, is_output=key in self.params)
        return node

    def _store(self, store: tirx.BufferStore, key: object, nest: tuple[Loop, ...], *, name: str | None = None,
               scope: str | None = None, nbytes: float | None = None) -> StoreNode | None:
        value = store.value
        if self._is_const(value):
            self._const_stores.add(key)
            return None
        buf = store.buffer
        node = self._node(key, name or buf.name, scope or _scope(buf), buffer_nbytes(buf) if nbytes is None else nbytes)
        read = loads(value, [])
        node.reads.update(read)
        node.loops = nest
        node.is_reduction = node.is_reduction or buf in read
        node.is_copy = type(value) is TensorLoad
        return node

    def _is_const(self, e: Any) -> bool:
        """Whether the feature pass list folds `e` to a constant (then the store has no row)."""
        t = type(e)
        if t in _CONST:
            return True
        if t is TensorLoad or t is Call:
            return False
        if t in _BINARY:
            return self._is_const(e.a) and self._is_const(e.b)
        if t is tirx.Var:
            return self._var_is_const(e)
        if t is tirx.Select:  # SimplifyForFeatureExtraction turns a select without loads into 1
            return not loads(e, [])
        if t is tirx.Cast or t is tirx.Broadcast:
            return self._is_const(e.value)
        return False

    def _var_is_const(self, var: object) -> bool:
        if var in self._unit_vars:
            return True
        for realize in reversed(self._realizes):
            for iv, value in zip(realize.block.iter_vars[:], realize.iter_values[:]):
                if iv.var.same_as(var):
                    return self._is_const(value)
        return False


def _dtype_bytes(buf: tirx.Buffer) -> float:
    dtype = tvm.runtime.DataType(str(buf.dtype))
    return float(max(dtype.bits * dtype.lanes // 8, 1))


def store_nodes(mod: tvm.IRModule, *, is_gpu: bool, emulate_cross_thread: bool = True) -> list[StoreNode]:
    """The written buffers of the PrimFuncs in `mod`, in `PerStoreFeature` row order (see the module docstring)."""
    return list(StoreWalker(mod, is_gpu=is_gpu, emulate_cross_thread=emulate_cross_thread).nodes.values())


def simplify_for_features(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """A port of `SimplifyForFeatureExtraction` (not exported to Python): drop unit serial loops (their variable
    becomes 0) and empty loops, and replace selects that load nothing by 1."""
    unit_vars: set = set()

    def on_for(loop: tirx.For, mutator: Any) -> object:
        extent = loop.extent
        if isinstance(extent, tirx.IntImm) and extent.value == 0:
            return tirx.Evaluate(0)
        if (isinstance(extent, tirx.IntImm) and extent.value == 1 and isinstance(loop.min, tirx.IntImm)
                and loop.min.value == 0 and int(loop.kind) == SERIAL and len(loop.annotations) == 0):
            unit_vars.add(loop.loop_var)
            return mutator.mutate(loop.body)
        return mutator.default_mutate(loop)

    def on_var(var: tirx.Var, mutator: Any) -> object:
        return tirx.const(0, str(var.ty)) if var in unit_vars else var

    def on_select(select: tirx.Select, mutator: Any) -> object:
        return mutator.default_mutate(select) if loads(select, []) else tirx.const(1.0, str(select.ty))

    body = tvm_ffi.structural_mutate(func.body, [(tirx.For, on_for), (tirx.Var, on_var), (tirx.Select, on_select)])
    return func.with_body(body)


def lower_for_features(mod: tvm.IRModule, *, full: bool = True) -> tvm.IRModule:
    """`PassListForPerStoreFeature`, the lowering `PerStoreFeature` applies before it reads the stores.

    Args:
        full: All passes (as slow as the extractor itself), or only the simplification and
            `LowerCrossThreadReduction`, the two that decide which stores exist on GPUs (a few milliseconds).
    """
    from tvm.s_tir import transform as st
    from tvm.tirx import transform as tt

    mod = tvm.IRModule({gv: simplify_for_features(f) if isinstance(f, tirx.PrimFunc) else f
                        for gv, f in mod.functions.items()})
    if not full:
        return st.LowerCrossThreadReduction()(mod)
    passes = tvm.transform.Sequential([
        st.RemoveWeightLayoutRewriteBlock(True), st.LowerCrossThreadReduction(), st.LowerInitBlock(),
        st.PlanAndUpdateBufferAllocationLocation(), st.ConvertBlocksToOpaque(), st.CompactBufferAllocation(),
        tt.StmtSimplify(), st.LowerAutoCopy(), st.UnifyThreadBinding(), st.LowerMatchBuffer(), tt.StmtSimplify(),
    ])
    return passes(mod)
