import math

import pytest
import torch

from tvm_cost.train.losses import centered_log_mse_loss, listmle_loss, listnet_loss, log_mse_loss, pairwise_ranking_loss


def test_log_mse_by_hand_and_missing_targets():
    pred = torch.tensor([0.0, 1.0, 5.0])
    target = torch.tensor([1.0, math.exp(3.0), float("nan")])
    assert float(log_mse_loss(pred, target)) == pytest.approx(2.0)  # ((0-0)^2 + (1-3)^2) / 2
    empty = log_mse_loss(pred.requires_grad_(), torch.full((3,), float("nan")))
    empty.backward()
    assert float(empty.detach()) == 0.0


def test_centered_log_mse_by_hand():
    # group 0: centered targets (-1, +1), centered preds (-2, +2) -> errors 1, 1; group 1 has one member: skipped
    pred = torch.tensor([10.0, 14.0, 99.0])
    latency = torch.exp(torch.tensor([0.0, 2.0, 5.0]))
    group = torch.tensor([3, 3, 7])
    assert float(centered_log_mse_loss(pred, latency, group)) == pytest.approx(1.0)
    assert float(centered_log_mse_loss(pred + 50.0, latency, group)) == pytest.approx(1.0)  # level-free
    lone = centered_log_mse_loss(pred.requires_grad_(), latency, torch.tensor([0, 1, 2]))
    lone.backward()
    assert float(lone.detach()) == 0.0


def test_pairwise_by_hand() -> None:
    score = torch.tensor([2.0, 1.0, 0.0])
    latency = torch.tensor([1.0, 2.0, 3.0])
    same = torch.zeros(3, dtype=torch.long)
    # pairs (0,1), (0,2), (1,2) with score differences 1, 2, 1
    want = (2 * math.log1p(math.exp(-1)) + math.log1p(math.exp(-2))) / 3
    assert float(pairwise_ranking_loss(score, latency, same)) == pytest.approx(want)
    assert float(pairwise_ranking_loss(score, latency, same, kind="hinge", margin=1.5)) == pytest.approx(1 / 3)
    # cross-group pairs are ignored: only (0, 1) remains
    groups = torch.tensor([5, 5, 9])
    assert float(pairwise_ranking_loss(score, latency, groups)) == pytest.approx(math.log1p(math.exp(-1)))
    # near-ties within tie_tol are not pairs
    assert float(pairwise_ranking_loss(score, torch.tensor([1.0, 1.05, 3.0]), same, tie_tol=0.1)) == \
        pytest.approx((math.log1p(math.exp(-2)) + math.log1p(math.exp(-1))) / 2)
    with pytest.raises(ValueError, match="choices"):
        pairwise_ranking_loss(score, latency, same, kind="square")  # type: ignore[arg-type]


def test_pairwise_top_weight_by_hand():
    """top_weight p weighs each pair by (group best / faster member's latency)^p; 0 is the plain mean."""
    score = torch.tensor([2.0, 1.0, 0.0, 0.0, 1.0])
    latency = torch.tensor([1.0, 2.0, 4.0, 3.0, 6.0])
    group = torch.tensor([0, 0, 0, 1, 1])
    terms = {(0, 1): math.log1p(math.exp(-1)), (0, 2): math.log1p(math.exp(-2)), (1, 2): math.log1p(math.exp(-1)),
             (3, 4): math.log1p(math.exp(1))}
    weight = {(0, 1): 1.0, (0, 2): 1.0, (1, 2): 0.5 ** 2, (3, 4): 1.0}  # the faster member of (1, 2) is 2x the best
    want = sum(weight[p] * terms[p] for p in terms) / sum(weight.values())
    assert float(pairwise_ranking_loss(score, latency, group, top_weight=2.0)) == pytest.approx(want)
    assert float(pairwise_ranking_loss(score, latency, group, top_weight=0.0)) == \
        pytest.approx(sum(terms.values()) / 4)


def test_pairwise_gradient_sanity():
    """Descending the loss raises the faster candidate's score and lowers the slower one's."""
    score = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    latency = torch.tensor([1.0, 3.0, 2.0], dtype=torch.float64)
    group = torch.zeros(3, dtype=torch.long)
    pairwise_ranking_loss(score, latency, group).backward()
    grad = score.grad
    assert grad[0] < 0 < grad[1] and grad[0] < grad[2] < grad[1]
    assert float(grad.sum()) == pytest.approx(0.0, abs=1e-12)  # only differences matter
    check = torch.randn(5, dtype=torch.float64, generator=torch.Generator().manual_seed(0), requires_grad=True)
    lat = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda s: pairwise_ranking_loss(s, lat, torch.tensor([0, 0, 1, 1, 1])),
                                    (check,))


def test_pairwise_without_pairs_is_zero_with_grad():
    score = torch.tensor([1.0, 2.0], requires_grad=True)
    loss = pairwise_ranking_loss(score, torch.tensor([1.0, 2.0]), torch.tensor([0, 1]))
    loss.backward()
    assert float(loss.detach()) == 0.0 and torch.equal(score.grad, torch.zeros(2))


def test_listnet_by_hand():
    # uniform prediction over two items: cross entropy is log 2 whatever the target
    loss = listnet_loss(torch.zeros(2), torch.tensor([1.0, math.e]), torch.tensor([0, 0]))
    assert float(loss) == pytest.approx(math.log(2))
    # the target puts 1/(1+e^-1) on item 0; predicting the same distribution gives the target's entropy
    p = 1 / (1 + math.exp(-1))
    got = listnet_loss(torch.tensor([0.0, -1.0]), torch.tensor([1.0, math.e]), torch.tensor([3, 3]))
    assert float(got) == pytest.approx(-(p * math.log(p) + (1 - p) * math.log(1 - p)), rel=1e-5)


def test_listmle_by_hand_and_invariances():
    # group of two, faster item scored 1, slower 0: (log(e^1 + e^0) - 1) + (0 - 0)
    want = math.log1p(math.exp(-1))
    assert float(listmle_loss(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 2.0]), torch.tensor([0, 0]))) == \
        pytest.approx(want)
    gen = torch.Generator().manual_seed(0)
    score, latency = torch.randn(7, generator=gen), torch.rand(7, generator=gen) + 0.1
    group = torch.tensor([4, 4, 4, 9, 9, 1, 1])
    base = listmle_loss(score, latency, group)
    perm = torch.randperm(7, generator=gen)
    torch.testing.assert_close(listmle_loss(score[perm], latency[perm], group[perm]), base)
    torch.testing.assert_close(listmle_loss(score, latency, group * 10 + 3), base)
    # the right order beats the reverse order
    good = -latency.log()
    assert listmle_loss(good, latency, group) < listmle_loss(-good, latency, group)


def test_listwise_gradients_finite_with_ragged_groups():
    score = torch.randn(6, generator=torch.Generator().manual_seed(1), requires_grad=True)
    latency = torch.tensor([1.0, 2.0, 3.0, 1.0, 2.0, 7.0])
    group = torch.tensor([0, 0, 0, 0, 1, 2])  # sizes 4, 1, 1: padding in the dense layout
    (listmle_loss(score, latency, group) + listnet_loss(score, latency, group)).backward()
    assert torch.isfinite(score.grad).all()
    assert score.grad[4] == 0 and score.grad[5] == 0  # singleton groups carry no ranking signal


def test_task_loss_leaves_rank_only_graphs_out_of_the_absolute_error_only():
    from types import SimpleNamespace

    from tvm_cost.train import TaskLoss, TrainConfig

    loss = TaskLoss(TrainConfig(listwise_weight=1.0, task_mse_weight=1.0), ("latency",))
    pred = torch.tensor([[0.0], [1.0], [4.0], [6.0]])
    y = torch.exp(torch.tensor([[0.0], [3.0], [0.0], [1.0]]))  # another machine: the last two, 4x4 / 5x5 off
    group = torch.tensor([0, 0, 1, 1])
    both = loss(pred, SimpleNamespace(y=y, group=group))
    home = loss(pred, SimpleNamespace(y=y, group=group, rank_only=torch.tensor([False, False, True, True])))
    assert float(home["mse_latency"]) == pytest.approx(2.0)  # ((0-0)^2 + (1-3)^2) / 2
    assert float(both["mse_latency"]) == pytest.approx((0 + 4 + 16 + 25) / 4)
    for term in ("listwise", "task_mse"):  # ranking within each task still sees every graph
        assert float(home[term]) == pytest.approx(float(both[term]))


def test_task_loss_passes_rank_top_weight_to_the_pairwise_term():
    from types import SimpleNamespace

    from tvm_cost.train import TaskLoss, TrainConfig

    # group 0: the pair among the fast ones (1 ms, 2 ms) misordered, the pair among the slow ones (8, 9 ms) right
    pred = torch.log(torch.tensor([[3.0], [1.0], [8.0], [9.0]]))
    batch = SimpleNamespace(y=torch.tensor([[1.0], [2.0], [8.0], [9.0]]), group=torch.tensor([0, 0, 0, 0]))
    plain = TaskLoss(TrainConfig(rank_weight=1.0), ("latency",))(pred, batch)["rank"]
    top = TaskLoss(TrainConfig(rank_weight=1.0, rank_top_weight=4.0), ("latency",))(pred, batch)["rank"]
    score, latency, group = -pred[:, 0], batch.y[:, 0], batch.group
    torch.testing.assert_close(top, pairwise_ranking_loss(score, latency, group, top_weight=4.0))
    assert float(top) > float(plain)  # the misordered fast pair weighs more
    with pytest.raises(ValueError, match="rank_top_weight"):
        TrainConfig(rank_top_weight=-1.0)
