import torch

from tvm_cost.train.pcgrad import PCGrad, project_conflicting


def test_projects_conflicting_gradients_by_hand():
    g = torch.tensor([[1.0, 0.0], [-1.0, 1.0]])  # dot = -1: conflicting
    out = project_conflicting(g, generator=torch.Generator().manual_seed(0))
    # g1 - (g1.g2 / |g2|^2) g2 = (1, 0) + 0.5 (-1, 1);  g2 - (g2.g1 / |g1|^2) g1 = (-1, 1) + (1, 0)
    torch.testing.assert_close(out, torch.tensor([[0.5, 0.5], [0.0, 1.0]]))
    assert float(out[0] @ g[1]) == 0.0 and float(out[1] @ g[0]) == 0.0  # now orthogonal


def test_leaves_agreeing_gradients_alone():
    g = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    torch.testing.assert_close(project_conflicting(g, generator=torch.Generator()), g)


def test_wrapper_sets_grads_and_steps():
    w = torch.zeros(2, requires_grad=True)
    head = torch.zeros(1, requires_grad=True)  # reached by the first task only
    opt = PCGrad(torch.optim.SGD([w, head], lr=1.0), generator=torch.Generator().manual_seed(0))
    opt.zero_grad()
    projected = opt.backward([w @ torch.tensor([1.0, 0.0]) + head.sum(), w @ torch.tensor([-1.0, 1.0])])
    assert projected.shape == (2, 2)  # shared parameters only
    # surgery over the shared w only; the head keeps its own task's gradient
    torch.testing.assert_close(w.grad, torch.tensor([0.5, 1.5]))
    torch.testing.assert_close(head.grad, torch.tensor([1.0]))
    opt.step()
    torch.testing.assert_close(w.detach(), torch.tensor([-0.5, -1.5]))
