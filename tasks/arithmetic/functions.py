"""Static and recurrent arithmetic (Trask et al. 2018, Section 4.1, Table 1), shared by both tasks.

An input ``x`` in R^n (static) or a sequence ``x_1..x_T`` in R^n (recurrent) holds two fixed,
overlapping, contiguous sub-sections; ``a`` and ``b`` are their sums (over time too, for the
recurrent task), and the target is ``op(a, b)``. Defaults follow Madsen & Johansen (ICLR 2020):
subsets of 25% of ``n``, overlapping by half, at an offset fixed per seed.

Evaluation sets are drawn once from fixed seeds, so every model and every seed sees the same
inputs (targets differ per seed, since the subsets do):
- ``validation``: interpolation inputs, used only to pick each seed's best step;
- ``interpolation``: interpolation inputs, reported;
- ``extrapolation``: inputs whose ``a`` lies above every training ``a`` (larger values for the
  static task, longer sequences for the recurrent one).
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig
from torch import Tensor, nn

from nalu.device import move
from nalu.ensemble import in_chunks, init_members
from nalu.errors import ConfigError, check_choice
from nalu.seeding import generator, training_streams
from nalu.train import Metrics
from nalu.units import sparsity_error
from tasks import Task
from tasks.cell import build_model, train_cell
from tasks.metrics import EXTRAPOLATION, INTERPOLATION, VALIDATION

# op name -> (the paper's row label, function of a and b)
OPS: dict[str, tuple[str, Callable[[Tensor, Tensor], Tensor]]] = {
    "add": ("a+b", lambda a, b: a + b),
    "sub": ("a-b", lambda a, b: a - b),
    "mul": ("a*b", lambda a, b: a * b),
    "div": ("a/b", lambda a, b: a / b),
    "square": ("a^2", lambda a, b: a * a),
    "sqrt": ("sqrt(a)", lambda a, b: torch.sqrt(a)),
}

@dataclass(frozen=True)
class Split:
    low: float
    high: float
    length: int  # time steps; 1 for the static task
    samples: int
    signed: bool = False  # each value's sign at random: U[low, high] or U[-high, -low] (the Primer's [[-6,-2],[2,6]])

    @classmethod
    def of(cls, rng: DictConfig, length: int, samples: int) -> Split:
        """From a config range ``{low, high[, signed]}`` (``signed`` absent: false)."""
        return cls(rng.low, rng.high, length, samples, bool(rng.get("signed", False)))

    def magnitudes(self) -> tuple[float, float]:
        """The least and greatest |value| the range holds."""
        if self.signed or self.low >= 0:
            return self.low, self.high
        if self.high <= 0:
            return -self.high, -self.low
        return 0.0, max(-self.low, self.high)

    def draw(self, x: Tensor, gen: torch.Generator) -> Tensor:
        """Fill ``x`` from this range in place (an unsigned range draws exactly what ``uniform_`` does)."""
        x.uniform_(self.low, self.high, generator=gen)
        if self.signed:
            x.mul_(torch.randint(0, 2, x.shape, generator=gen, dtype=x.dtype).mul_(2).sub_(1))
        return x


# success criteria (config ``task.success.kind``): Madsen & Johansen's near-perfect first layer, or the
# Primer's near-perfect outputs (Mistry et al., nalm-benchmark's generate_exp_thresholds.r)
CRITERIA = ("madsen_johansen", "primer")


def criterion(task: DictConfig) -> str:
    """The task's success criterion (``success.kind``; configs made before the Primer's have none)."""
    return check_choice("success.kind", task.success.get("kind", "madsen_johansen"), CRITERIA)


def subset_layout(n: int, subset_ratio: float, overlap_ratio: float) -> tuple[int, int, int]:
    """(subset size, overlap, span) of the two sub-sections of an n-vector."""
    size = max(1, math.floor(subset_ratio * n))
    overlap = math.floor(overlap_ratio * size)
    span = 2 * size - overlap
    if span > n:
        raise ConfigError(f"two subsets of {size} overlapping by {overlap} do not fit in {n} inputs")
    return size, overlap, span


def subset_offset(n: int, span: int, seed: int) -> int:
    """Where the two sub-sections start, drawn from ``seed``."""
    return int(torch.randint(0, n - span + 1, (1,), generator=generator(seed, "subsets")))


def subset_masks(n: int, size: int, overlap: int, seed: int, offset: int | None = None) -> tuple[Tensor, Tensor]:
    """0/1 masks of ``a`` and ``b`` over the n inputs, at an offset drawn from ``seed`` (or given)."""
    span = 2 * size - overlap
    offset = subset_offset(n, span, seed) if offset is None else min(offset, n - span)
    a, b = torch.zeros(n), torch.zeros(n)
    a[offset : offset + size] = 1
    b[offset + size - overlap : offset + span] = 1
    return a, b


def runs_of(items: Sequence[str]):
    """``(start, item, group)`` for each run of equal consecutive items."""
    start = 0
    for item, group in itertools.groupby(items):
        group = list(group)
        yield start, item, group
        start += len(group)


def check_splits(train: Split, extrap: Split, op: str) -> None:
    """Refuse ranges under which extrapolation would not test extrapolation."""
    for name, s in ((INTERPOLATION, train), (EXTRAPOLATION, extrap)):
        if not s.low < s.high:
            raise ConfigError(f"{name} range [{s.low}, {s.high}] is empty: low must be < high")
        if s.signed and s.low < 0:
            raise ConfigError(f"a signed {name} range takes magnitudes: low must be >= 0, got {s.low}")
        if op == "sqrt" and (s.low < 0 or s.signed):
            raise ConfigError(f"sqrt(a) needs a >= 0, but the {name} range holds negative values")
        if op == "div" and s.low <= 0 <= s.high:
            raise ConfigError(f"a/b needs b != 0, but the {name} range [{s.low}, {s.high}] holds 0")
    # every extrapolation ``a`` must lie beyond every training ``a`` in magnitude (a = length * size * x;
    # for ranges of non-negative values: above it)
    (_, train_hi), (extrap_lo, extrap_hi) = train.magnitudes(), extrap.magnitudes()
    if not (extrap.length * extrap_lo >= train.length * train_hi and extrap.length * extrap_hi > train.length * train_hi):
        raise ConfigError(
            f"extrapolation (values [{extrap.low}, {extrap.high}]{', either sign' if extrap.signed else ''}, "
            f"length {extrap.length}) does not exceed training (values [{train.low}, {train.high}], length "
            f"{train.length}): every extrapolation sum must lie beyond every training sum in magnitude"
        )


class ArithmeticProblem:
    """Data and evaluation of one arithmetic cell, for all its seeds (see ``nalu.train.Problem``),
    or of a fused group of cells that differ in their op: ``ops`` gives each member's."""

    def __init__(self, cfg: DictConfig, seeds: Sequence[int], recurrent: bool, ops: Sequence[str] | None = None):
        self.ops = [check_choice("op", op, OPS) for op in (ops or [cfg.op] * len(seeds))]
        if len(self.ops) != len(seeds):
            raise ValueError(f"{len(self.ops)} ops for {len(seeds)} members")
        self.op = self.ops[0] if len(set(self.ops)) == 1 else None
        # runs of members with one op, (start, stop, op): the members of one cell are contiguous
        self.runs = [(k, k + len(list(g)), op) for k, op, g in runs_of(self.ops)]
        self.recurrent = recurrent
        self.members = len(seeds)
        self.n = cfg.input_size
        self.batch_size = cfg.batch_size
        self.train = Split.of(cfg.interpolation, cfg.length, 0)
        self.extrap = extrap = Split.of(cfg.extrapolation, cfg.extrapolation_length, cfg.extrapolation_samples)
        for op in sorted(set(self.ops)):
            check_splits(self.train, extrap, op)
        size, overlap, span = subset_layout(self.n, cfg.subset_ratio, cfg.overlap_ratio)
        self.offsets = [subset_offset(self.n, span, s) for s in seeds]
        masks = [subset_masks(self.n, size, overlap, s, at) for s, at in zip(seeds, self.offsets, strict=True)]
        self.mask_a = torch.stack([a for a, _ in masks])  # [M, n]
        self.mask_b = torch.stack([b for _, b in masks])
        self.subset_size, self.overlap = size, overlap
        # shared_batches: every member trains on the same input stream (drawn from data_seed) and
        # the first layer's input work is done once for all; else each seed draws its own stream.
        self.shared_batches = cfg.shared_batches
        self.data_gens = training_streams("arithmetic", seeds, self.shared_batches, cfg.data_seed)
        interp = Split(self.train.low, self.train.high, self.train.length, cfg.test_samples, self.train.signed)
        self.sets = {
            VALIDATION: self._draw(interp, VALIDATION),
            INTERPOLATION: self._draw(interp, INTERPOLATION),
            EXTRAPOLATION: self._draw(extrap, EXTRAPOLATION),
        }

    def to(self, device: torch.device) -> ArithmeticProblem:
        self.mask_a, self.mask_b, self.sets = move((self.mask_a, self.mask_b, self.sets), device)
        return self

    # -- data ------------------------------------------------------------------------------
    def _shape(self, batch: int, length: int) -> tuple[int, ...]:
        return (batch, length, self.n) if self.recurrent else (batch, self.n)

    def _draw(self, split: Split, name: str, dtype: torch.dtype | None = None) -> tuple[Tensor, Tensor]:
        """A fixed evaluation set shared by every member: inputs ``[1, N, ...]``, targets ``[M, N, 1]``
        (in ``dtype``, torch's default where None; the horizon's are float64), drawn from the
        generator ``name`` names."""
        x = torch.empty(self._shape(split.samples, split.length), dtype=dtype)
        split.draw(x, generator("arithmetic", name, self.n))
        return x.unsqueeze(0), self.targets(x.unsqueeze(0))

    def operands(self, x: Tensor, masks: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        """``a`` and ``b`` per member, ``[M, N]``, for inputs ``[M|1, N, ...]`` (under the task's
        subset ``masks``, or others)."""
        if self.recurrent:
            x = x.sum(dim=2)  # sum over time
        mask_a, mask_b = masks or (self.mask_a, self.mask_b)
        mask_a, mask_b = mask_a.to(x.device, x.dtype), mask_b.to(x.device, x.dtype)
        if x.shape[0] == 1:
            return (x[0] @ mask_a.T).T, (x[0] @ mask_b.T).T
        return (x * mask_a[:, None]).sum(-1), (x * mask_b[:, None]).sum(-1)

    def fn(self, a: Tensor, b: Tensor) -> Tensor:
        """Each member's op of its operands ``[M, N]``."""
        if self.op is not None:
            return OPS[self.op][1](a, b)
        # elementwise on slices: the same values as unfused
        return torch.cat([OPS[op][1](a[start:stop], b[start:stop]) for start, stop, op in self.runs])

    def targets(self, x: Tensor) -> Tensor:
        return self.fn(*self.operands(x)).unsqueeze(-1)

    def batch(self) -> tuple[Tensor, Tensor]:
        x = torch.empty(len(self.data_gens), *self._shape(self.batch_size, self.train.length))
        for i, g in enumerate(self.data_gens):
            self.train.draw(x[i], g)
        x = x.to(self.mask_a.device)  # drawn on the CPU on every device: the same stream
        return x, self.targets(x)

    # -- evaluation ------------------------------------------------------------------------
    def evaluate(self, model: nn.Module) -> Metrics:
        return {name: mse(model, x, y) for name, (x, y) in self.sets.items()}

    def success_threshold(self, epsilon: float, widen: int = 0, kind: str = "madsen_johansen") -> Tensor:
        """``[M]``: the extrapolation MSE of a near-perfect model, whose first layer takes
        ``1 - epsilon`` of each selected input and ``epsilon`` of every other one, and whose second
        layer applies the operation exactly (Madsen & Johansen 2020, Section 4.1). A seed whose
        extrapolation MSE is below it counts as solved.

        ``widen=1`` gives the threshold behind Madsen & Johansen's *published* success rates:
        their R export built the near-perfect model's subsets with R's inclusive ranges, one input
        wider than their task's (26 inputs overlapping by 13 where the task has 25 overlapping by
        12), at the same offset. It is the looser of the two for +, /, sqrt; ours (``widen=0``)
        is the one that belongs to the task.

        ``kind="primer"``: the Primer benchmark's near-perfect model instead (Mistry et al.;
        nalm-benchmark's ``generate_exp_thresholds.r``), which perturbs the outputs: ``a + b`` and
        ``a - b`` off by ``-epsilon * sum |x|`` over every input; ``a * b`` times
        ``(1 - epsilon)^2``, ``a / b`` times ``(1 - epsilon) / (1 + epsilon)``, each also times
        ``prod (1 - epsilon |x_i|)`` over the inputs in neither subset (none at the Primer's input
        size 2). Computed on this task's extrapolation set, not on a fresh million samples."""
        return self.threshold_on(self.sets[EXTRAPOLATION][0], epsilon, widen, kind)

    def threshold_on(self, x: Tensor, epsilon: float, widen: int = 0, kind: str = "madsen_johansen") -> Tensor:
        """``success_threshold`` on the inputs ``x`` ``[1, N, ...]``."""
        x = x.double()  # float32 would blur an epsilon of 1e-5
        if kind == "primer":
            return self._primer_threshold(x, epsilon)
        masks = None
        if widen:
            size, overlap = self.subset_size + widen, self.overlap + widen
            pairs = [subset_masks(self.n, size, overlap, 0, at) for at in self.offsets]
            masks = torch.stack([a for a, _ in pairs]), torch.stack([b for _, b in pairs])
        a, b = self.operands(x, masks)
        total = (x.sum(dim=2) if self.recurrent else x).sum(-1)  # [1, N]: every input, summed
        near = self.fn((1 - epsilon) * a + epsilon * (total - a), (1 - epsilon) * b + epsilon * (total - b))
        return (near - self.fn(a, b)).square().mean(1).float()

    def _primer_threshold(self, x: Tensor, epsilon: float) -> Tensor:
        a, b = self.operands(x)  # [M, N]
        values = x.sum(dim=2) if self.recurrent else x  # [1, N, n]
        neither = 1 - torch.maximum(self.mask_a, self.mask_b).to(x)  # [M, n]
        scale = torch.exp(torch.log1p(-epsilon * values[0].abs()) @ neither.T).T  # [M, N]: prod over neither subset
        shift = -epsilon * values[0].abs().sum(-1)  # [N]
        factors = {"mul": (1 - epsilon) ** 2, "div": (1 - epsilon) / (1 + epsilon)}
        exact = self.fn(a, b)
        near = torch.cat([exact[i:j] + shift if op in ("add", "sub") else exact[i:j] * factors[op] * scale[i:j]
                          for i, j, op in self.runs])
        return (near - exact).square().mean(1).float()

    def horizon(self, model: nn.Module, rungs: Sequence[float], samples: int, epsilon: float,
                kind: str = "madsen_johansen") -> dict[str, list[float]]:
        """How far out each member stays solved: per precision (``float32``, as trained, and
        ``float64``, the same weights cast), the last rung of ``rungs`` (increasing) up to which every
        rung is solved, or 0. A rung ``r`` scales the extrapolation range's values by ``r`` (static
        task) or its length (recurrent); solved means an MSE, against float64 targets, below the
        near-perfect model's at that rung (``success_threshold``), so the criterion travels with the
        data. Drawn from fixed seeds of their own: every model meets the same inputs."""
        low, high, length = self.extrap.low, self.extrap.high, self.extrap.length
        solved = {"float32": [], "float64": []}
        wide = copy.deepcopy(model).double()
        for i, r in enumerate(rungs):
            split = (Split(low, high, int(round(r * length)), samples, self.extrap.signed) if self.recurrent
                     else Split(low * r, high * r, 1, samples, self.extrap.signed))
            x, y = (t.to(self.mask_a.device) for t in self._draw(split, f"horizon{i}", torch.float64))  # y: [M, N, 1]
            threshold = self.threshold_on(x, epsilon, kind=kind).double()
            for name, m, xs in (("float32", model, x.float()), ("float64", wide, x)):
                err = (predict(m, xs).double() - y).square().flatten(1).mean(1).cpu()
                solved[name].append(err < threshold)  # NaN: not solved
        out = {}
        for name, rows in solved.items():
            ok = torch.stack(rows, 1).cumprod(1).bool()  # [M, rungs]: solved at every rung so far
            reach = ok.sum(1)
            out[name] = [float(rungs[k - 1]) if k else 0.0 for k in reach.tolist()]
        return out

    def target_moments(self) -> dict[str, Metrics]:
        """Per range, each member's target variance (the MSE of predicting the test set's mean)
        and mean square (of predicting 0): the other references a scaled score may be taken
        against (``results/protocol_search.md``)."""
        out: dict[str, Metrics] = {"variance": {}, "mean_square": {}}
        for name in (INTERPOLATION, EXTRAPOLATION):
            t = self.sets[name][1][..., 0].double()  # [M, N]
            out["variance"][name] = t.var(1, unbiased=False).float()
            out["mean_square"][name] = t.square().mean(1).float()
        return out

    def least_squares_mse(self, samples: int = 20000) -> Metrics:
        """Per range, each member's MSE of the affine least-squares fit of its targets on training
        inputs (static task): what a linear model trained to convergence reaches, exactly (the
        "None" column's shortcut in ``results/protocol_search.md``)."""
        x = torch.empty(samples, self.n, dtype=torch.float64)
        x.uniform_(self.train.low, self.train.high, generator=generator("arithmetic", "least_squares", self.n))
        design = torch.cat([x, torch.ones(samples, 1, dtype=torch.float64)], 1)  # [S, n + 1]
        y = self.targets(x.unsqueeze(0).to(self.mask_a.device)).double().cpu()  # [M, S, 1]
        weights = torch.linalg.lstsq(design.expand(self.members, -1, -1), y).solution  # [M, n + 1, 1]
        out = {}
        for name in (INTERPOLATION, EXTRAPOLATION):
            xs, t = (v.double().cpu() for v in self.sets[name])
            fit = torch.cat([xs[0], torch.ones(xs.shape[1], 1, dtype=torch.float64)], 1) @ weights  # [M, N, 1]
            out[name] = (fit - t).square().mean((1, 2)).float()
        return out

    def reference_mse(self, model: nn.Module) -> Metrics:
        """Mean MSE over the members of a randomly initialised ``model``, against each seed's targets."""
        out = {}
        for name in (INTERPOLATION, EXTRAPOLATION):
            x, y = self.sets[name]
            pred = predict(model, x)[..., 0]  # [R, N]
            t = y[..., 0]  # [M, N]
            # mean_r mean_n (p_rn - t_mn)^2, without materialising [R, M, N]
            cross = pred.mean(0) @ t.T / t.shape[1]  # [M]
            out[name] = (pred.square().mean() - 2 * cross + t.square().mean(1)).clamp_min(0)
        return out


def predict(model: nn.Module, x: Tensor, chunk: int = 2000) -> Tensor:
    with torch.no_grad():
        return in_chunks(lambda s: model(x[:, s]), x.shape[1], chunk)


def mse(model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
    """Mean squared error per member, ``[M]``."""
    return (predict(model, x) - y).square().flatten(1).mean(1)


# config values in which the cells of one fused group may differ (``suite.runner.group_key``)
FUSES = ("task.op", "task.cell_name", "seeds")


def check(cfg: DictConfig) -> None:
    """Refusals known from the config alone (the runner asks before any cell runs): the op, the
    subsets and the ranges."""
    t = cfg.task
    op = check_choice("op", t.op, OPS)
    size, _, _ = subset_layout(t.input_size, t.subset_ratio, t.overlap_ratio)
    train, extrap = Split.of(t.interpolation, t.length, 0), Split.of(t.extrapolation, t.extrapolation_length, 0)
    check_splits(train, extrap, op)
    if (train.signed or extrap.signed) and (size > 1 or t.length > 1):
        raise ConfigError("a signed range needs a and b of one input each, on the static task: "
                          "sums of values of either sign can cancel into the training range")
    if criterion(t) == "primer" and op not in ("add", "sub", "mul", "div"):
        raise ConfigError(f"the Primer's success criterion covers a+b, a-b, a*b and a/b, not {OPS[op][0]}")


def run(cfg: DictConfig, log, recurrent: bool) -> dict:
    """Train every seed of one (model, op) cell and return its metrics (see ``suite.run``)."""
    return run_group([cfg], log, recurrent)[0]


def run_group(cfgs: Sequence[DictConfig], log, recurrent: bool) -> list[dict]:
    """Train cells that differ only in ``FUSES`` as one batched model, members = cells x seeds,
    and return each cell's metrics. Members never interact, so a cell's seeds train as they
    would alone, up to the rounding of matrix products of another member count."""
    cfg = cfgs[0]
    seeds = [s for c in cfgs for s in c.seeds]
    ops = [c.task.op for c in cfgs for _ in c.seeds]
    problem = ArithmeticProblem(cfg.task, seeds, recurrent, ops=ops)
    in_features = cfg.task.input_size
    result, fitted = train_cell(cfg, problem, in_features, 1, recurrent, log, select=VALIDATION, seeds=seeds)
    kind = criterion(cfg.task)
    threshold = problem.success_threshold(cfg.task.success.epsilon, kind=kind).cpu()
    # the threshold behind Madsen & Johansen's published rates, for the static task they ran
    published = (None if recurrent or kind != "madsen_johansen"
                 else problem.success_threshold(cfg.task.success.epsilon, widen=1).cpu())
    sparsity = sparsity_error(fitted.best_model)
    horizon = None
    if cfg.task.get("horizon"):  # configs/task/*_arithmetic.yaml: off (null) unless a sweep asks for it
        h = cfg.task.horizon
        horizon = problem.horizon(fitted.best_model, list(h.rungs), h.samples, cfg.task.success.epsilon, kind)

    ref_cfg = cfg.task.reference
    ref_seeds = [ref_cfg.seed + r for r in range(ref_cfg.members)]
    ref_model = build_model(instantiate(ref_cfg.model), in_features, 1, len(ref_seeds), recurrent)
    init_members(ref_model, ref_seeds)
    ref_model.to(problem.mask_a.device)
    reference = problem.reference_mse(ref_model)

    moments = problem.target_moments()
    least_squares = None if recurrent else problem.least_squares_mse()

    members = result.pop("members")
    for i, m in enumerate(members):
        m["reference"] = {k: float(v[i]) for k, v in reference.items()}
        m["targets"] = {kind: {k: float(v[i]) for k, v in by_range.items()} for kind, by_range in moments.items()}
        if least_squares is not None:  # the converged linear fit, for references and the protocol search
            m["least_squares"] = {k: float(v[i]) for k, v in least_squares.items()}
        # solved: extrapolation MSE at the best validation step below the near-perfect model's
        m["success_threshold"] = float(threshold[i])
        m["solved"] = bool(m["best"][EXTRAPOLATION] < threshold[i])  # NaN: not solved
        if published is not None:  # under the threshold behind Madsen & Johansen's published rates
            m["success_threshold_published"] = float(published[i])
            m["solved_published"] = bool(m["best"][EXTRAPOLATION] < published[i])
        m["sparsity_error"] = float(sparsity[i]) if sparsity is not None else None
        if horizon is not None:
            m["horizon"] = {name: reach[i] for name, reach in horizon.items()}
    out, start = [], 0
    for c in cfgs:
        op = check_choice("op", c.task.op, OPS)
        out.append({**result, "members": members[start : start + len(c.seeds)], "op": op, "label": OPS[op][0]})
        start += len(c.seeds)
    return out


STATIC = Task(run=partial(run, recurrent=False), check=check, run_group=partial(run_group, recurrent=False),
              fuses=FUSES, numerics=1)  # Table 1, left: op(a, b) of two subset sums of one vector x in R^100
RECURRENT = Task(run=partial(run, recurrent=True), check=check, run_group=partial(run_group, recurrent=True),
                 fuses=FUSES, numerics=1)  # Table 1, right: the same over a sequence, the sums accumulated over time
