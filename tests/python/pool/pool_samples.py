"""One sample call of every pooling op, for the tests that run each op through PyTorch's machinery
(test_torch_integration.py): fakes, torch.compile, CUDA graphs, opcheck, errors."""

import solops
from support import Sample, random


def _planes(*spatial):
    """An [N, C, *spatial] input whose last dim is `size` long."""
    return lambda size, device, dtype: (random((2, 3, *spatial, size), device, dtype),)


SAMPLES = [
    Sample("max_pool1d", _planes(), lambda x: solops.max_pool1d(x, 3, 2, 1)),
    Sample("max_pool1d_with_indices", _planes(), lambda x: solops.max_pool1d(x, 4, 3, 2, ceil_mode=True,
                                                                             return_indices=True)),
    Sample("avg_pool1d", _planes(), lambda x: solops.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
    Sample("max_pool2d", _planes(11), lambda x: solops.max_pool2d(x, 3, 2, 1)),
    Sample("max_pool2d_with_indices", _planes(11), lambda x: solops.max_pool2d(x, (3, 2), 2, (1, 0), (1, 2),
                                                                               ceil_mode=True, return_indices=True)),
    Sample("avg_pool2d", _planes(11), lambda x: solops.avg_pool2d(x, 3, 2, 1, ceil_mode=True, divisor_override=5)),
    Sample("max_pool3d", _planes(4, 7), lambda x: solops.max_pool3d(x, 2, 2, 1)),
    Sample("max_pool3d_with_indices", _planes(4, 7), lambda x: solops.max_pool3d(x, (2, 3, 3), 2, 1,
                                                                                 return_indices=True)),
    Sample("avg_pool3d", _planes(4, 7), lambda x: solops.avg_pool3d(x, (2, 3, 3), (1, 2, 2), (1, 1, 0))),
    Sample("adaptive_max_pool2d", _planes(11), lambda x: solops.adaptive_max_pool2d(x, (3, None))),
    Sample("adaptive_max_pool2d_with_indices", _planes(11), lambda x: solops.adaptive_max_pool2d(x, 4, True)),
    Sample("adaptive_avg_pool2d", _planes(11), lambda x: solops.adaptive_avg_pool2d(x, (5, 2))),
    # S varies: 32 tokens a chunk, the last chunk short.
    Sample("mean_pooling", lambda size, device, dtype: (random((2, 8 * size, 3, 16), device, dtype),),
           lambda x: solops.mean_pooling(x, 32)),
]
