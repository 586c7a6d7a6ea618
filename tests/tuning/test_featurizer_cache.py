"""`CandidateFeaturizer` caches program graphs by scheduled module: same arrays, each module walked once."""

from __future__ import annotations

import numpy as np
import pytest

import tvm_cost.features.program_graph as program_graph
from tvm_cost.tuning.replay import CandidateFeaturizer


def counting(monkeypatch, name: str = "store_feature_rows") -> list[int]:
    """Record how many candidates each call of `program_graph.<name>` (the extraction; or the walk) receives."""
    sizes: list[int] = []
    real = getattr(program_graph, name)

    def spy(context, candidates, **kwargs):
        sizes.append(len(candidates))
        return real(context, candidates, **kwargs)

    monkeypatch.setattr(program_graph, name, spy)
    return sizes


def distinct(candidates: list) -> list:
    """The candidates with distinct scheduled modules (the fixture's sampled tiles repeat)."""
    from tvm_ffi import structural_hash

    seen: dict[int, object] = {}
    for cand in candidates:
        seen.setdefault(int(structural_hash(cand.sch.mod)), cand)
    return list(seen.values())


def assert_same_graphs(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b)
    for ga, gb in zip(a, b, strict=True):
        assert ga.keys() == gb.keys()
        for key in ga:
            np.testing.assert_array_equal(ga[key], gb[key])


@pytest.fixture(scope="module")
def distinct_task():
    """A task's context and 12 candidates with distinct scheduled modules (sampled tiles repeat across seeds)."""
    from tuning_tasks import make_task

    context, candidates, _ = make_task(count=40)
    assert len(distinct(candidates)) >= 12
    return context, distinct(candidates)[:12]


def test_cached_graphs_equal_fresh_ones_and_repeats_are_not_walked(distinct_task, monkeypatch):
    context, candidates = distinct_task
    uncached = CandidateFeaturizer(cache_size=0).graphs(context, candidates)
    sizes = counting(monkeypatch)
    featurizer = CandidateFeaturizer()
    first = featurizer.graphs(context, candidates[:8])
    # a later call with 4 known candidates, one of them twice, and 4 new ones: only the new ones are walked
    mixed = [candidates[2], *candidates[8:], candidates[5], candidates[2], candidates[7]]
    second = featurizer.graphs(context, mixed)
    assert sizes == [8, 4]
    assert (featurizer.hits, featurizer.misses) == (4, 12)
    assert_same_graphs(first, uncached[:8])
    assert_same_graphs(second, [uncached[i] for i in (2, 8, 9, 10, 11, 5, 2, 7)])


def test_duplicates_within_one_call_are_walked_once(distinct_task, monkeypatch):
    context, candidates = distinct_task
    sizes = counting(monkeypatch)
    graphs = CandidateFeaturizer().graphs(context, [candidates[0], candidates[1], candidates[0]])
    assert sizes == [2]
    assert_same_graphs(graphs[:1], graphs[2:])


def test_chunks_give_the_same_graphs_and_extract_each_module_once(distinct_task, monkeypatch):
    """A call featurized a chunk at a time (`extract_pipelined`) returns what one chunk would, and a module that
    repeats in a later chunk, or was cached by an earlier call, is not extracted again."""
    context, candidates = distinct_task
    whole = CandidateFeaturizer(cache_size=0).graphs(context, candidates)
    sizes = counting(monkeypatch)
    featurizer = CandidateFeaturizer(chunk_size=3)
    featurizer.graphs(context, candidates[:2])
    order = [0, 2, 3, 2, 4, 5, 1, 6, 6, 0, 7, 8, 9, 10, 11]
    assert_same_graphs(featurizer.graphs(context, [candidates[i] for i in order]), [whole[i] for i in order])
    # chunks of 3: {0 cached, 2, 3}, {2 seen, 4, 5}, {1 cached, 6, 6 seen}, {0, 7, 8}, {9, 10, 11}
    assert sizes == [2, 2, 2, 1, 2, 3]
    assert (featurizer.hits, featurizer.misses) == (5, 12)
    with pytest.raises(ValueError, match="chunk_size must be at least 1, not 0"):
        CandidateFeaturizer(chunk_size=0)


def test_cache_is_bounded_and_forgets_the_least_recently_used(distinct_task, monkeypatch):
    context, candidates = distinct_task
    sizes = counting(monkeypatch)
    featurizer = CandidateFeaturizer(cache_size=3)
    featurizer.graphs(context, candidates[:3])
    featurizer.graphs(context, [candidates[0]])  # 0 is now the most recent; 1 the least
    featurizer.graphs(context, [candidates[3]])  # evicts 1
    featurizer.graphs(context, [candidates[0], candidates[2], candidates[3], candidates[1]])
    assert sizes == [3, 1, 1]
    assert len(featurizer._cache) == 3  # noqa: SLF001


def test_returned_graphs_can_be_changed_without_touching_the_cache(distinct_task):
    context, candidates = distinct_task
    featurizer = CandidateFeaturizer()
    graph = featurizer.graphs(context, candidates[:1])[0]
    graph["x"] = graph["x"] * 0 + 7
    np.testing.assert_array_equal(featurizer.graphs(context, candidates[:1])[0]["x"],
                                  CandidateFeaturizer(cache_size=0).graphs(context, candidates[:1])[0]["x"])


def test_without_the_walk_rows_and_globals_match_the_graphs_and_nothing_is_walked(distinct_task, monkeypatch):
    from tvm_cost.features.schema import NUM_STORE_FEATURES
    from tvm_cost.tuning.ranker_model import RankerCostModel

    context, candidates = distinct_task
    graphs = CandidateFeaturizer().graphs(context, candidates)
    walked = counting(monkeypatch, "walk_candidates")
    rows_only = CandidateFeaturizer(walk=False)
    rows = rows_only.graphs(context, candidates)
    assert walked == [] and rows_only.misses == len(candidates)
    for g, r in zip(graphs, rows, strict=True):
        assert r.keys() == {"x", "u"} and r["x"].dtype == np.float32
        np.testing.assert_array_equal(r["x"], g["x"][:, :NUM_STORE_FEATURES])
        np.testing.assert_array_equal(r["u"], g["u"])
    # so the ranker, which reads only those, scores the same with either featurizer
    np.testing.assert_array_equal(RankerCostModel(None, featurizer=rows_only).features(context, candidates),
                                  RankerCostModel(None, featurizer=CandidateFeaturizer()).features(context, candidates))


def test_without_store_features_the_graphs_are_the_walks_and_nothing_is_extracted(distinct_task, monkeypatch):
    """`store_features=False`: the graphs with rows, their PerStoreFeature columns zero, from the walk alone; cached
    apart from the graphs with rows, so a model reading rows still gets them from the same featurizer."""
    from tvm_cost.features.schema import NUM_STORE_FEATURES

    context, candidates = distinct_task
    full = CandidateFeaturizer(cache_size=0).graphs(context, candidates)
    extracted = counting(monkeypatch)
    featurizer = CandidateFeaturizer(chunk_size=5)
    structure = featurizer.graphs(context, candidates, store_features=False)
    again = featurizer.graphs(context, candidates[:4], store_features=False)
    assert extracted == [] and (featurizer.hits, featurizer.misses) == (4, 12)
    for g, s in zip(full, structure, strict=True):
        assert s.keys() == g.keys() and s["x"].dtype == np.float32
        assert not s["x"][:, :NUM_STORE_FEATURES].any() and g["x"][:, :NUM_STORE_FEATURES].any()
        np.testing.assert_array_equal(s["x"][:, NUM_STORE_FEATURES:], g["x"][:, NUM_STORE_FEATURES:])
        for key in ("edge_index", "edge_attr", "u"):
            np.testing.assert_array_equal(s[key], g[key])
    assert_same_graphs(again, structure[:4])
    assert_same_graphs(featurizer.graphs(context, candidates[:4]), full[:4])
    assert extracted == [4]
    with pytest.raises(ValueError, match="nothing but the PerStoreFeature rows"):
        CandidateFeaturizer(walk=False).graphs(context, candidates, store_features=False)


def test_globals_are_the_tasks_then_each_candidates_trace_decisions(distinct_task):
    """What the GNN reads in a tune (`CANDIDATE_SCHEMA`): the same task globals, the decisions of each own trace."""
    from tvm_cost.features.program_schema import CANDIDATE_SCHEMA, PROGRAM_SCHEMA
    from tvm_cost.features.trace_decisions import decision_features, trace_json

    context, candidates = distinct_task
    featurizer = CandidateFeaturizer()
    graphs = featurizer.graphs(context, candidates)
    task = featurizer.task_globals(context)
    assert task.shape == (1, len(PROGRAM_SCHEMA.globals))
    for g, cand in zip(graphs, candidates, strict=True):
        assert g["u"].shape == (1, len(CANDIDATE_SCHEMA.globals)) and g["u"].dtype == np.float32
        decisions = decision_features(trace_json(cand.sch.trace))
        np.testing.assert_array_equal(g["u"][0], np.concatenate([task[0], decisions]))
    assert len({g["u"].tobytes() for g in graphs}) > 1  # the candidates' decisions differ
