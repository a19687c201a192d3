"""PyTorch eager variants: the lecture's torch code, ATen's kernels."""

import torch
import torch.nn.functional as F

from kernelscope.ops.gelu import SQRT_2_OVER_PI


def square(x):
    return torch.square(x)


def square_mul(x):
    return x * x


def square_pow(x):
    return x**2


def mean(x):
    return torch.mean(x)


def mean_method(x):
    return x.mean()


def mean_sum_div(x):
    return x.sum() / x.numel()


def softmax_manual(x):
    """The lecture's softmax: five separate passes over memory."""
    x_max = x.max(dim=-1, keepdim=True).values
    z = x - x_max  # subtracting the row max keeps exp from overflowing
    numerator = torch.exp(z)
    denominator = numerator.sum(dim=-1, keepdim=True)
    return numerator / denominator


def softmax(x):
    return torch.softmax(x, dim=-1)


def gelu(x):
    return F.gelu(x, approximate="tanh")


def gelu_formula(x):
    """The tanh formula written op by op; eager runs one kernel per op."""
    return 0.5 * x * (1.0 + torch.tanh(SQRT_2_OVER_PI * (x + 0.044715 * torch.pow(x, 3.0))))
