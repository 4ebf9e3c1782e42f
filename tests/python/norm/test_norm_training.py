"""Training equivalence (issue 42): a small CNN with GroupNorm and InstanceNorm layers (the latter
tracking running statistics), with and without affine parameters, trained for 20 SGD steps twice from
the same weights on the same data, once with PyTorch's norms and once with solops' swapped in as
modules; the loss curves, the final weights and the running statistics must match. Needs a CUDA
device; skips loudly without one."""

import copy

import pytest
import torch
import torch.nn as nn

import solops
from support import HAS_CUDA

if not HAS_CUDA:
    pytest.skip("SKIPPED: no CUDA device on this machine; these tests need one", allow_module_level=True)

STEPS = 20


class SolopsGroupNorm(nn.GroupNorm):
    def forward(self, input):
        return solops.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)


class SolopsInstanceNorm2d(nn.InstanceNorm2d):
    def _apply_instance_norm(self, input):
        # nn.InstanceNorm2d's own call of F.instance_norm, with solops' function.
        return solops.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                                    self.training or not self.track_running_stats,
                                    self.momentum if self.momentum is not None else 0.0, self.eps)


def small_cnn(affine):
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.GroupNorm(8, 32, affine=affine), nn.ReLU(),
        nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.InstanceNorm2d(32, affine=affine, track_running_stats=True),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.GroupNorm(16, 64, affine=affine), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def with_solops_norms(model):
    """A copy of model with each norm replaced by its solops module (same parameters and buffers)."""
    swapped = copy.deepcopy(model)
    for index, layer in enumerate(swapped):
        if isinstance(layer, nn.GroupNorm):
            replacement = SolopsGroupNorm(layer.num_groups, layer.num_channels, layer.eps, layer.affine)
        elif isinstance(layer, nn.InstanceNorm2d):
            replacement = SolopsInstanceNorm2d(layer.num_features, layer.eps, layer.momentum, layer.affine,
                                               layer.track_running_stats)
        else:
            continue
        replacement.load_state_dict(layer.state_dict())
        swapped[index] = replacement.to(next(model.parameters()).device)
    return swapped


def train(model, batches):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    model.train()
    for images, labels in batches:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


# Without affine parameters the norms' backward computes grad_x alone (output_mask [False, False]).
@pytest.mark.parametrize("affine", [True, False])
def test_twenty_steps_match_pytorch(affine):
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    reference = small_cnn(affine).cuda()
    ours = with_solops_norms(reference)
    assert sum(isinstance(layer, (SolopsGroupNorm, SolopsInstanceNorm2d)) for layer in ours) == 3
    generator = torch.Generator(device="cuda").manual_seed(1)
    # Two batches, seen in turn: random labels the model can learn by heart, so the loss falls.
    fixed = [(torch.randn(8, 3, 32, 32, device="cuda", generator=generator),
              torch.randint(0, 10, (8,), device="cuda", generator=generator)) for _ in range(2)]
    batches = [fixed[step % 2] for step in range(STEPS)]
    want, got = train(reference, batches), train(ours, batches)
    torch.testing.assert_close(torch.tensor(got), torch.tensor(want), rtol=1e-3, atol=1e-4)
    assert want[-2] < want[0]  # it trained: the first batch's loss, then and at its last visit
    # The two norms sum in different orders, and 20 steps with momentum grow the
    # rounding: each tensor is held to 1e-3 of its own largest magnitude (a wrong gradient is far off).
    for (name, theirs), (_, mine) in zip(reference.state_dict().items(), ours.state_dict().items()):
        scale = theirs.abs().max().item() if theirs.is_floating_point() else 0.0
        torch.testing.assert_close(mine, theirs, rtol=1e-3, atol=max(1e-4, 1e-3 * scale),
                                   msg=lambda message: f"{name}: {message}")
    # The running statistics moved, and match (they are in the state dicts compared above too).
    instance = ours[4]
    assert not torch.equal(instance.running_var, torch.ones_like(instance.running_var))
    # Eval mode normalizes by them: the same predictions.
    reference.eval()
    ours.eval()
    with torch.no_grad():
        torch.testing.assert_close(ours(batches[0][0]), reference(batches[0][0]), rtol=1e-3, atol=1e-4)
