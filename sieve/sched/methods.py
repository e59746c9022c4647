"""The scheduler registry: method names -> a function and its options (a plain dict).

:data:`SCHEDULERS` maps every name the CLI, the step simulator and the sweeps accept to a
:class:`Method`: the function ``(LayerLoad, Estimator, **options) -> Partition`` and the
options that make the variant. The Sieve ablations (issue 9) are variants of "sieve":

* ``sieve-noattn``: decides as if attention did not occupy PIM;
* ``sieve-nocomm``: decides as if the layer had no inter-GPU communication;
* ``sieve-nofixed``: decides with the GPU's expert work alone (the seed's ``T_comp`` counts
  the layer's other GPU work too: projections, router, shared experts);
* ``sieve-roofline``: PIM estimates from the roofline alone (the EMA table never updated) - an
  estimator setting, carried by ``pim_source``;
* ``optimal``: the exhaustive optimum of the same objective (small layers only).

``sieve-cp`` (:mod:`sieve.sched.cp`) is not an ablation but a variant: the same sort, scan and
cost table, judged by the end of the layer's expert phase on its dependency graph; it reads the
table's unobserved counts from its observed ones, and ``sieve-cp-seedtable`` is the same method
reading them at the seed's roofline fallback. Both skip a layer's decision after one that saved
less than it cost (:mod:`sieve.sched.amortize`); ``sieve-cp-always`` decides every time.
``sieve-cp-nolook`` leaves out its look ahead under two-batch overlap (the scan's split);
``sieve-cp-look2``'s look watches the decisions two layers on instead of the next ones, its
savings (the skip rule's) still rated to the next (docs/schedulers.md, "A look two layers on");
sieve-cp's look also rates the last sampled layer's splits, to the step's end on the GPU
(``Method.look_tail``, since 2026-12-08); ``sieve-cp-notail`` has no look there, the scan's
split (sieve-cp's rule before: docs/schedulers.md, "The last layer's look").
``sieve-cp-mirror``'s second decision of a layer on a GPU (two-batch overlap, like
micro-batches) takes as many GPU experts as the first took there (docs/schedulers.md, "The
second micro-batch's split").
Under two-batch overlap on one GPU, between like micro-batches, ``sieve-cp`` breaks its look's
exact ties toward a static split and, where its decision put every expert on the GPU, counts
that decision as saving nothing and runs the same split without deciding while it does not
pay (``skip_gpu``); ``sieve-cp-pimskip`` is sieve-cp without that (ties to the scan's split,
skips always all on PIM): the method as it was before the thirty-first session but for the
load gate (docs/schedulers.md, "Skips that run all on the GPU"). A skip is taken at a load up
to the largest at which a decision of the layer did not pay on any GPU (``Method.gate``
"pooled"); ``sieve-cp-layergate`` gates it by this GPU's load at the layer's last such
decision (sieve-cp's gate before the thirty-fourth session) and ``sieve-cp-nogate`` not at all
(docs/schedulers.md, "The load gate under expert parallelism").

:func:`get_method` looks a name up with one clear error listing the valid names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sieve.errors import ConfigError, lookup
from sieve.sched.baselines import allexp, duplex, gpu_only, noexp, pimoe
from sieve.sched.cp import sieve_cp, sieve_cp_start
from sieve.sched.estimator import Estimator
from sieve.sched.greedy import sieve
from sieve.sched.optimal import optimal
from sieve.sched.partition import LayerLoad, Partition

__all__ = ["METHODS_MAIN", "SCHEDULERS", "Method", "get_method", "schedule"]


@dataclass(frozen=True)
class Method:
    """A named scheduler: its function, fixed options and the PIM estimate source it needs
    (``None``: whatever the estimator it is handed uses).

    ``static``: the partition is fixed, not decided per step (no decision time is charged);
    ``uses_pim``: the method runs anything on PIM (False: the GPU-only reference, which also
    leaves attention on the GPU); ``start``: the split the method takes without deciding
    when a decision did not pay for itself (``(load, est, **options) -> Partition``; None:
    it decides every time; :mod:`sieve.sched.amortize`); ``skip_gpu``: under two-batch
    overlap on one GPU, between like micro-batches, its look breaks exact ties toward a
    static split and a decision that put every expert on the GPU is skipped the way one that
    did not pay is, its skips running all on the GPU, with one skip verdict per layer and
    micro-batch (:class:`sieve.sched.partition.LayerLoad` ``static_ties`` and the memo's key,
    set by the step); ``look_layers``: under two-batch overlap its look rates a split to the
    decisions that many sampled layers on (1: the next ones), while what a decision saves,
    for the skip rule, is still rated to the next ones (``LayerLoad.saving_lookahead``);
    ``gate``: the load gate of its scheduled skips (:data:`sieve.sched.amortize.GATES`;
    "pooled", sieve-cp's since 2026-12-07, the thirty-fourth session); ``look_tail``: under
    two-batch overlap, at the last sampled layer (no decision follows in the step) its look
    rates a split to the start of the GPU's LM head, the step's end there (False: no look
    there, the scan's split); ``mirror``: under two-batch overlap between like micro-batches,
    the second decision of a layer on a GPU takes as many of its most popular experts onto the
    GPU as the first decision of that layer there took (one of the two answers the first
    decision's look guessed for it: :data:`sieve.system.step.STAND_INS`, the count guess), in
    place of its own look's split."""

    name: str
    fn: Callable[..., Partition]
    options: Mapping[str, Any] = field(default_factory=dict)
    pim_source: str | None = None
    doc: str = ""
    static: bool = False
    uses_pim: bool = True
    start: Callable[..., Partition] | None = None
    skip_gpu: bool = False
    look_layers: int = 1
    gate: str = "pooled"
    look_tail: bool = False
    mirror: bool = False

    def __call__(self, load: LayerLoad, est: Estimator) -> Partition:
        return self._label(self.fn(load, est, **self.options))

    def start_split(self, load: LayerLoad, est: Estimator) -> Partition:
        """The split taken when a decision is skipped (``start``; ConfigError if none)."""
        if self.start is None:
            raise ConfigError(f"scheduler {self.name!r} never skips a decision (no start split)")
        return self._label(self.start(load, est, **self.options))

    def _label(self, part: Partition) -> Partition:
        if part.method != self.name:
            part.__dict__["method"] = self.name  # a fresh object: label it with the variant
        return part


SCHEDULERS: dict[str, Method] = {m.name: m for m in (
    Method("sieve", sieve, doc="seed §5 greedy from all-on-PIM over experts by popularity"),
    Method("sieve-cp", sieve_cp, start=sieve_cp_start, skip_gpu=True, look_tail=True,
           doc="the seed's greedy judged by the layer's critical path (end of the expert phase "
           "on its dependency graph) instead of one max; skips decisions that do not pay"),
    Method("sieve-cp-seedtable", sieve_cp, {"fallback": "roofline"}, start=sieve_cp_start,
           skip_gpu=True, look_tail=True,
           doc="sieve-cp reading unobserved cost-table counts at the roofline, as the seed's"),
    Method("sieve-cp-always", sieve_cp, skip_gpu=True, look_tail=True,
           doc="sieve-cp deciding every layer of every step, whether or not deciding pays"),
    Method("sieve-cp-nolook", sieve_cp, {"look": False}, start=sieve_cp_start,
           doc="sieve-cp without its look ahead under two-batch overlap (the scan's split)"),
    Method("sieve-cp-look2", sieve_cp, start=sieve_cp_start, skip_gpu=True, look_layers=2,
           look_tail=True,
           doc="sieve-cp whose look (two-batch overlap) rates a split to the decisions two "
           "layers on; its savings, for skipping, still to the next ones"),
    Method("sieve-cp-notail", sieve_cp, start=sieve_cp_start, skip_gpu=True,
           doc="sieve-cp with no look (two-batch overlap) at the last sampled layer: the "
           "scan's split there (sieve-cp's rule before 2026-12-08)"),
    Method("sieve-cp-mirror", sieve_cp, start=sieve_cp_start, skip_gpu=True, look_tail=True,
           mirror=True,
           doc="sieve-cp whose second decision of a layer (two-batch overlap, like "
           "micro-batches) takes as many GPU experts as the first took there"),
    Method("sieve-cp-nogate", sieve_cp, start=sieve_cp_start, skip_gpu=True, gate="none",
           look_tail=True,
           doc="sieve-cp whose scheduled skips are taken whatever the layer's load"),
    Method("sieve-cp-layergate", sieve_cp, start=sieve_cp_start, skip_gpu=True, gate="layer",
           look_tail=True,
           doc="sieve-cp whose skips are gated by this GPU's own load at the layer's last "
           "decision that did not pay (sieve-cp's gate before the thirty-fourth session)"),
    Method("sieve-cp-pimskip", sieve_cp, start=sieve_cp_start, look_tail=True,
           doc="sieve-cp whose skips always run all on PIM and whose look breaks ties toward "
           "the scan's split (under two-batch overlap on one GPU; elsewhere sieve-cp)"),
    Method("noexp", noexp, doc="attention on PIM, every expert on the GPU", static=True),
    Method("allexp", allexp, doc="every expert on PIM", static=True),
    Method("pimoe", pimoe, doc="EP over PIM channel groups, busiest group's top expert to GPU"),
    Method("duplex", duplex, doc="Duplex co-processing: fewest-token experts to PIM"),
    Method("gpu-only", gpu_only, doc="no PIM: attention and experts on the GPU", static=True,
           uses_pim=False),
    Method("sieve-noattn", sieve, {"attention_aware": False},
           doc="Sieve deciding as if PIM held no attention"),
    Method("sieve-nocomm", sieve, {"comm_aware": False},
           doc="Sieve deciding as if the layer had no communication"),
    Method("sieve-nofixed", sieve, {"fixed_aware": False},
           doc="Sieve deciding with the GPU's expert work only (not the layer's other work)"),
    Method("sieve-roofline", sieve, pim_source="roofline",
           doc="Sieve with roofline-only PIM estimates (no EMA table)"),
    Method("optimal", optimal, doc="exhaustive optimum of seed Eq. 1 (<= 16 active experts)"),
)}

#: The methods of the seed's evaluation plus the two extra baselines, in plotting order.
METHODS_MAIN = ("gpu-only", "noexp", "allexp", "pimoe", "duplex", "sieve", "sieve-cp")


def get_method(name: str | Method) -> Method:
    """A registered method by name (case-insensitive), or ConfigError listing the names."""
    if isinstance(name, Method):
        return name
    return lookup(SCHEDULERS, name, "scheduler")


def schedule(method: str | Method, load: LayerLoad, est: Estimator) -> Partition:
    """Run one scheduler on one layer."""
    return get_method(method)(load, est)
