"""Placement in the analysis core: a read of a value already on the host copies nothing
from a device (``analysis.placement``), both ways."""

from __future__ import annotations

import ast
import textwrap

from ddplint.analysis.host_waits import HostWaits
from ddplint.analysis.placement import Placement


def _reads(source: str) -> tuple[Placement, HostWaits, dict[int, ast.Call]]:
    module = ast.parse(textwrap.dedent(source))
    reads = {
        node.lineno: node
        for node in ast.walk(module)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("item", "cpu")
    }
    waits = HostWaits(module)
    return Placement(waits), waits, reads


def _on_host(source: str) -> dict[int, bool]:
    placement, waits, reads = _reads(source)
    return {
        line: placement.read_on_host(call, waits.nodes.call_scopes[id(call)])
        for line, call in reads.items()
    }


def test_parts_of_a_tensor_copied_to_the_host_are_on_the_host() -> None:
    found = _on_host(
        """
        import torch

        def log(gather, losses, device):
            total = gather(torch.stack(losses)).mean(dim=0).cpu()
            loss, pixel = total.unbind()
            print(loss.item())
            print(pixel.item())
            moved = total.to(device)
            first, second = gather(torch.stack(losses)).unbind()
            print(moved.item())
            print(first.item())
        """
    )
    assert found[7] is True
    assert found[8] is True
    # moved back to a device, or never copied to the host: a real read
    assert found[11] is False
    assert found[12] is False


def test_a_tensor_built_without_a_device_and_returned_by_a_helper_is_on_the_host() -> None:
    found = _on_host(
        """
        import torch

        def sample(model, prompts):
            scores = [float(len(p)) for p in prompts]
            return model(prompts), torch.tensor(scores, dtype=torch.float32)

        def sample_on_device(model, prompts):
            return model(prompts), torch.tensor([1.0], device="cuda")

        def step(model, prompts):
            outputs, rewards = sample(model, prompts)
            print(rewards.max().item())
            print(outputs.max().item())
            _, placed = sample_on_device(model, prompts)
            print(placed.max().item())
            zeros = torch.zeros(3)
            print(zeros.sum().item())
        """
    )
    assert found[13] is True
    assert found[14] is False
    assert found[16] is False
    assert found[18] is True


def test_a_parameter_or_a_name_also_bound_to_a_device_value_is_not_known() -> None:
    found = _on_host(
        """
        import torch

        def step(loss, model, x, flag):
            value = torch.tensor(0.0)
            if flag:
                value = model(x)
            print(loss.item())
            print(value.item())
        """
    )
    assert found[8] is False
    assert found[9] is False
