"""Top-k family benchmark entries: TopkSelectorFwd (spec §5.1, §6.13) on the catalogue's rows and on
EXTRA_ROWS, shapes that serving runs and the catalogue lacks (each marked "catalogue": False): decode
batches, causal prefill chunks, kv groups, bf16 scores and sorted output.

Each row becomes a run.Case: index_score of random normal scores (the fixed seed, drawn on the GPU:
the catalogue's rows hold 8 GiB, which the CPU would take minutes to draw and select on), int32 starts
and ends as the row's windows say, the solops call (sorted as the row says: by default the positions
in ascending order), the cost model and the spec's tie-aware check (§5.1): per query row and group,
distinct positions inside the window whose scores are, as a multiset, torch.topk's values over the
window, then -1 in the slots past the window's count. The reference is those values, computed on the
GPU (torch.topk of the scores masked to -inf outside each window), as the spec defines the check.

Windows (the row's params "windows"): full (starts 0, ends S_kv: the catalogue's), lengths (decode:
starts 0, each query row's ends a length in (S_kv / 2, S_kv]), causal (a prefill chunk of S query rows
after S_kv - S earlier tokens: starts 0, ends s + S_kv - S + 1).

Alternatives:
    torch          torch.topk over S_kv, sorted as our call is (a fair match of the slot order), of
                   index_score itself where every window is full (the spec's reference call), else of
                   the scores masked to -inf outside each window, with the positions picked past the
                   window's count set to -1 (sorted, so that they come last, where a window is shorter
                   than topk)
    torch-compile  the same function under torch.compile
    flashinfer     flashinfer.top_k_ragged_transform(scores as [rows, S_kv], offsets 0, lengths = ends,
                   topk): int32, -1 past the length; where windows start at 0 and G = 1
    sgl-kernel     sgl_kernel.fast_topk_v2(scores as [rows, S_kv], lengths = ends, 2048): where topk is
                   2048, windows start at 0, G = 1 and scores are f32
FlashInfer's and sgl-kernel's wheels are not carried to the GPU machine (scripts/fetch-wheels.sh leaves
out what exceeds a device call's carry); where they import, they run.
"""

import importlib
from functools import partial

import torch

import solops
from solops.bench import run
from solops.bench.run import Case, Impl, UnsupportedRow

OP = "TopkSelectorFwd"
OPS = (OP,)

# One compare a score, on CUDA cores.
RATE_KIND = "cuda_core_f32"


def _extra_row(workload: str, queries: int, keys: int, topk: int, windows: str, dtype: str = "f32",
               groups: int = 1, sorted: bool = False) -> dict:
    """A row of the manifest's format for a shape beyond the catalogue."""
    return {"workload": workload, "dtype": dtype, "catalogue": False,
            "tensors": {"index_score": [1, queries, keys, groups], "starts": [1, queries], "ends": [1, queries]},
            "tensor_dtypes": {"starts": "i32", "ends": "i32"},
            "params": {"topk": topk, "windows": windows, "sorted": sorted},
            "dims": {"batch": 1, "seq_len": queries, "seq_len_kv": keys, "kv_group": groups}, "reference": None}


EXTRA_ROWS = {OP: [
    # Decode: 128 requests of one token each (DeepSeek-V3.2's topk 2048), contexts of 4k to 128k keys.
    _extra_row("decode-r128-kv4k", 128, 4096, 2048, "lengths"),
    _extra_row("decode-r128-kv16k", 128, 16384, 2048, "lengths"),
    _extra_row("decode-r128-kv64k", 128, 65536, 2048, "lengths"),
    _extra_row("decode-r128-kv128k", 128, 131072, 2048, "lengths"),
    # Fewer requests than SMs: clusters of CTAs split each row.
    _extra_row("decode-r16-kv128k", 16, 131072, 2048, "lengths"),
    _extra_row("decode-r128-kv64k-bf16", 128, 65536, 2048, "lengths", dtype="bf16"),
    _extra_row("decode-r128-kv64k-sorted", 128, 65536, 2048, "lengths", sorted=True),
    # Causal prefill chunks of 4096 query rows: the first rows see fewer than topk keys (padding).
    _extra_row("prefill-s4k-kv4k", 4096, 4096, 2048, "causal"),
    _extra_row("prefill-s4k-kv16k", 4096, 16384, 2048, "causal"),
    _extra_row("prefill-s4k-kv64k", 4096, 65536, 2048, "causal"),
    _extra_row("prefill-s4k-kv16k-g2", 4096, 16384, 2048, "causal", groups=2),
]}


def present_alternatives() -> dict[str, str | None]:
    """Each alternative mapped to None when usable here, or to the reason it is absent."""
    present = {"torch": None, "torch-compile": None}
    for name, module in (("flashinfer", "flashinfer"), ("sgl-kernel", "sgl_kernel")):
        present[name] = run.import_failure(module)
    return present


def row_windows(row: dict, device) -> tuple[torch.Tensor, torch.Tensor]:
    """The row's int32 starts and ends [B, S], as its "windows" param says (full by default)."""
    batch, queries, keys, _ = row["tensors"]["index_score"]
    windows = row["params"].get("windows", "full")
    query = torch.arange(queries, device=device, dtype=torch.int32).repeat(batch, 1)
    starts = torch.zeros_like(query)
    if windows == "full":
        ends = torch.full_like(query, keys)
    elif windows == "lengths":
        ends = keys - (query * 7919) % (keys // 2)
    elif windows == "causal":
        ends = query + (keys - queries + 1)
    else:
        raise ValueError(f"{row['workload']}: unknown windows {windows!r}")
    return starts, ends


def _bounds(index_score, starts, ends):
    """Each query row's clamped window [low, high) as int64 [B, S] tensors."""
    batch, queries, keys, _ = index_score.shape
    device = index_score.device
    low = (starts.long().clamp_min(0) if starts is not None
           else torch.zeros(batch, queries, dtype=torch.long, device=device))
    high = (ends.long().clamp_max(keys) if ends is not None
            else torch.full((batch, queries), keys, dtype=torch.long, device=device))
    return low, torch.maximum(low, high)


def _inside(index_score, starts, ends):
    """[B, S, S_kv]: whether each key is in its query row's window."""
    low, high = _bounds(index_score, starts, ends)
    positions = torch.arange(index_score.shape[2], device=index_score.device)
    return (positions >= low[..., None]) & (positions < high[..., None])


def window_top_values(index_score, starts, ends, topk):
    """The spec's reference (§5.1): torch.topk's values over each window, [B, S, G, topk] float32,
    descending (NaN first); past a window's count the slots hold -inf."""
    scores = index_score.float()
    inside = _inside(index_score, starts, ends)
    if not bool(inside.all()):
        scores = scores.masked_fill(~inside[..., None], float("-inf"))
    return torch.topk(scores, topk, dim=2).values.permute(0, 1, 3, 2)


def check_selection(index_score, starts, ends, topk, indexes, top_values):
    """The spec's tie-aware check (§5.1) of indexes [B, S, G, topk] against window_top_values: raises
    AssertionError naming the first failing query row. Runs where index_score is."""
    device = index_score.device
    indexes, top_values = indexes.to(device).long(), top_values.to(device)
    assert indexes.shape == top_values.shape, f"indexes {list(indexes.shape)} must be {list(top_values.shape)}"
    low, high = _bounds(index_score, starts, ends)
    low, high = low[..., None, None], high[..., None, None]
    slots = torch.arange(topk, device=device)
    selected = (slots < torch.clamp(high - low, max=topk)).expand_as(indexes)

    def first(failing, what):
        rows = failing.flatten(2).any(-1).nonzero()
        assert rows.numel() == 0, f"query row (b, s) = {tuple(rows[0].tolist())}: {what}"

    first(~selected & (indexes != -1), "a slot past the window's count is not -1")
    first(selected & ((indexes < low) | (indexes >= high)), "a position is outside the window")
    # Distinct: the unselected slots, all -1, made distinct (below every position) before sorting.
    marked = torch.where(selected, indexes, -1 - slots).sort(dim=-1).values
    first(marked[..., 1:] == marked[..., :-1], "a position comes twice")
    values = index_score.float().permute(0, 1, 3, 2).gather(3, torch.where(selected, indexes, 0))
    values = torch.where(selected, values, float("-inf")).sort(dim=-1, descending=True).values
    same = (values == top_values) | (values.isnan() & top_values.isnan())
    first(selected & ~same, "the selected scores are not the window's top scores")


def torch_topk_selector(index_score, starts, ends, topk, sorted):
    """The `torch` alternative for windows that are not all full: torch.topk of the scores masked to
    -inf outside each window, the positions picked outside the window set to -1."""
    inside = _inside(index_score, starts, ends)[..., None].expand_as(index_score)
    picked = torch.topk(index_score.masked_fill(~inside, float("-inf")), topk, dim=2, sorted=sorted).indices
    return torch.where(inside.gather(2, picked), picked, -1).permute(0, 1, 3, 2).int()


def torch_topk_full(index_score, topk, sorted):
    """The `torch` alternative where every window is full: the spec's reference call."""
    return torch.topk(index_score, topk, dim=2, sorted=sorted).indices.permute(0, 1, 3, 2).int()


def alternative_impl(name, scores, starts, ends, topk, sorted, full_windows, short_windows) -> Impl:
    batch, queries, keys, groups = scores.shape
    if name in ("torch", "torch-compile"):
        if full_windows:
            fn = partial(torch_topk_full, topk=topk, sorted=sorted)
            args = (scores,)
        else:
            fn = partial(torch_topk_selector, topk=topk, sorted=sorted or short_windows)
            args = (scores, starts, ends)
        if name == "torch-compile":
            fn = run.compile_for_benchmark(fn)
        return Impl(name, partial(fn, *args))
    if groups != 1 or bool((starts != 0).any()):
        return Impl(name, None, not_applicable="takes 2-D scores [rows, S_kv] (G = 1) and windows from position 0")
    rows = scores.view(batch * queries, keys)
    lengths = ends.reshape(-1).contiguous()
    if name == "flashinfer":
        flashinfer = importlib.import_module("flashinfer")
        offsets = torch.zeros_like(lengths)
        return Impl(name, lambda: flashinfer.top_k_ragged_transform(rows, offsets, lengths, topk).view(
            batch, queries, 1, topk))
    if name == "sgl-kernel":
        if topk != 2048 or scores.dtype != torch.float32:
            return Impl(name, None, not_applicable="fast_topk_v2 takes f32 scores and topk = 2048 only")
        sgl_kernel = importlib.import_module("sgl_kernel")
        return Impl(name, lambda: sgl_kernel.fast_topk_v2(rows, lengths, topk).view(batch, queries, 1, topk))
    raise ValueError(f"unknown alternative {name!r}")


def build_case(op: str, row: dict, alternatives: list[str]) -> Case:
    if op != OP:
        raise UnsupportedRow(f"{op} is not a top-k op")
    dtype = run.torch_dtype(row["dtype"])
    shape = row["tensors"]["index_score"]
    topk = row["params"]["topk"]
    sorted = row["params"].get("sorted", False)
    generator = torch.Generator(device="cuda").manual_seed(run.INPUT_SEED)
    scores = torch.randn(shape, generator=generator, device="cuda").to(dtype)
    starts, ends = row_windows(row, scores.device)
    counts = ends - starts
    full_windows = bool((starts == 0).all() and (ends == shape[2]).all())
    short_windows = bool((counts < topk).any())
    impls = [Impl("solops", partial(solops.topk_selector, scores, starts, ends, topk, sorted))]
    impls += [alternative_impl(name, scores, starts, ends, topk, sorted, full_windows, short_windows)
              for name in alternatives]
    return run.row_case(op, row, solops.cost.of(solops.topk_selector, scores, starts, ends, topk, sorted), RATE_KIND,
                        partial(window_top_values, scores, starts, ends, topk),
                        partial(check_selection, scores, starts, ends, topk), impls)
