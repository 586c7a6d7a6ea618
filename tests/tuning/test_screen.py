"""ScreenedCostModel: the screen's best go to the model and rank above the rest; the contract with its two kinds."""

from __future__ import annotations

import numpy as np
import pytest
from cost_model_contract import assert_cost_model_contract

from tvm_cost.errors import TvmCostError
from tvm_cost.tuning import make_cost_model
from tvm_cost.tuning.screen import ScreenedCostModel, screened_scores


class Fixed:
    """A stand-in member scoring each candidate (an int) by a table, and remembering what it was asked."""

    def __init__(self, table: dict[int, float]) -> None:
        self.table, self.updates = table, 0
        self.asked: list[list[int]] = []

    def predict(self, context, candidates):
        self.asked.append(list(candidates))
        return np.array([self.table[c] for c in candidates], np.float64)

    def update(self, context, candidates, results):
        self.updates += 1


def test_the_model_ranks_the_screens_best_above_the_rest():
    screen = Fixed({c: float(c) for c in range(10)})  # the screen likes high numbers
    model = Fixed({c: -float(c) for c in range(10)})  # the model likes low ones
    out = ScreenedCostModel(screen, model, keep=0.3, min_kept=1)._inst.predict(None, list(range(10)))
    assert sorted(model.asked[0]) == [7, 8, 9]  # only the screen's best three cost the model anything
    assert list(np.argsort(-out)) == [7, 8, 9, 6, 5, 4, 3, 2, 1, 0]  # the model's order on top, then the screen's
    assert (out > 0).all() and out.max() == 1.0
    small = ScreenedCostModel(screen, model, keep=0.3, min_kept=16)._inst
    small.predict(None, list(range(10)))
    assert sorted(model.asked[-1]) == list(range(10)) and len(screen.asked) == 1  # a small call skips the screen
    tied = ScreenedCostModel(Fixed({0: 1.0, 1: 2.0, 2: 2.0, 3: 0.0}), model, keep=0.25, min_kept=1)._inst
    tied.predict(None, [0, 1, 2, 3])
    assert sorted(model.asked[-1]) == [1, 2]  # a tie at the cut keeps both, whatever their order
    tied.update(None, [0], [None])
    assert model.updates == 1 and tied.screen.updates == 1



def test_screened_scores_apply_the_screen_within_each_group_as_a_predict_call_would():
    group = np.repeat([0, 1], 40)
    screen = np.tile(np.arange(40.0), 2)  # the screen likes high numbers in both groups
    model = -screen  # the model likes low ones
    out = screened_scores(screen, model, group)
    for g in (0, 1):
        mine = out[group == g]
        expected = ScreenedCostModel(Fixed(dict(enumerate(screen[:40]))), Fixed(dict(enumerate(model[:40]))))
        assert np.allclose(mine, expected._inst.predict(None, list(range(40))))  # keep 0.25, at least 16
        assert list(np.argsort(-mine)[:16]) == list(range(24, 40))  # the kept 16, in the model's order

def test_settings_are_checked():
    for bad in ({"keep": 0.0}, {"keep": 1.5}, {"min_kept": 0}):
        with pytest.raises(ValueError, match="keep="):
            ScreenedCostModel(Fixed({}), Fixed({}), **bad)


def test_contract_with_the_trace_ranker_screening_the_rows_ranker(task, pretrained, tmp_path):
    def make():
        model = make_cost_model("ranker-screened", ranker=pretrained)
        model._inst.keep, model._inst.min_kept = 0.25, 1  # 12 candidates: the model ranks 3 (or ties) of them
        return model

    model = assert_cost_model_contract(make, *task, tmp_path)
    assert model.screen.describe()["measured"] == model.model.describe()["measured"] == len(task[1])
    assert model.screen.featurizer is model.model.featurizer  # the task's globals computed once for both
    with pytest.raises(TvmCostError, match="cannot read the screened cost model"):
        make().load(str(tmp_path / "nothing"))


def test_contract_with_the_trace_ranker_screening_the_gnn(task, pretrained, tmp_path):
    def make():
        model = make_cost_model("gnn-screened", checkpoint=None, ranker=pretrained, seed=3)
        model._inst.keep, model._inst.min_kept = 0.25, 1
        return model

    model = assert_cost_model_contract(make, *task, tmp_path)
    assert model.screen.describe()["measured"] == len(task[1])
    assert model.screen.featurizer is model.model.featurizer  # one graph cache: the GNN's, globals for the screen
