"""Command line of the router calibration: ``python -m sieve.calibration.router_calibrate``.

Re-runs every fit of :mod:`sieve.calibration.router_fit` and
:mod:`sieve.calibration.router_fit_real` and prints them as JSON (the content of
docs/calibration/router_fit*.json), or with ``--validate`` prints the validation tables of
docs/validation.md (:mod:`sieve.calibration.router_validation`). It sits on top of the three
modules so that none of them imports another's caller.
"""

from __future__ import annotations

import argparse
import json

from sieve.calibration.router_fit import (
    AGG_HN_TOL,
    SEED_TARGETS,
    _AggregateSampler,
    aggregate_skew,
    fiddler_targets,
    fit_popularity,
    olmoe_aggregate_targets,
)
from sieve.calibration.router_fit_real import fit_kappa, fit_qwen15
from sieve.calibration.router_validation import render_all
from sieve.model.moe import get_model
from sieve.outputs import write_text

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sieve.calibration.router_calibrate",
                                 description=__doc__)
    ap.add_argument("--validate", action="store_true", help="print validation tables instead")
    ap.add_argument("--out", help="also write the result as JSON to this file")
    ap.add_argument(
        "--seed-only",
        action="store_true",
        help="fit fine-grained models to the seed's numbers alone (no OLMoE aggregate term)",
    )
    args = ap.parse_args(argv)
    if args.validate:
        text = render_all()
        print(text)
        if args.out:
            write_text(args.out, text)
        return 0
    result: dict = {"qwen15": fit_qwen15()}
    for fam in ("olmoe", "mistral"):
        kappa, rows = fit_kappa(fam)
        result[f"kappa_{fam}"] = {"kappa": kappa, "per_domain": rows}
    fid = fiddler_targets()
    result["fiddler"] = fid
    olmoe = olmoe_aggregate_targets()
    result["olmoe_aggregate"] = olmoe
    for model in sorted({t.model for t in SEED_TARGETS}):
        tg = [t for t in SEED_TARGETS if t.model == model]
        extra = None
        if not model.startswith("mixtral") and args.seed_only:
            extra = None
        elif not model.startswith("mixtral"):
            # fine-grained models: long-run aggregate Hn as OLMoE's (64 experts, top-8), §C.1
            agg = _AggregateSampler(get_model(model).n_experts, get_model(model).top_k, 17)

            def extra(alpha, sigma, agg=agg, hn=olmoe["norm_entropy"]):
                return ((agg.norm_entropy(alpha, sigma) - hn) / AGG_HN_TOL) ** 2

        else:

            def extra(alpha, sigma, fid=fid):
                mm, hn = aggregate_skew(alpha, sigma, 8, 2, fid["n_tokens"])
                return ((mm - fid["max_over_mean"]) / 0.1) ** 2 + (
                    (hn - fid["norm_entropy"]) / 0.005
                ) ** 2

        (alpha, sigma), rows, loss = fit_popularity(model, tg, extra)
        (a0, _), rows0, loss0 = fit_popularity(model, tg, extra, static_only=True)
        if not model.startswith("mixtral") and not args.seed_only:
            result[model + "_aggregate_hn"] = {
                "fit": agg.norm_entropy(alpha, sigma),
                "static_only": agg.norm_entropy(a0, 0.0),
            }
        result[model] = {
            "alpha": alpha,
            "drift_sigma": sigma,
            "loss": loss,
            "targets": [(t.stat, t.batch, t.value, a) for t, a in rows],
            "static_only": {
                "alpha": a0,
                "loss": loss0,
                "targets": [(t.stat, t.batch, t.value, a) for t, a in rows0],
            },
        }
        if extra:
            # long-run aggregate (max/mean, Hn) of the fitted router in the model's own shape
            # (experts, top-k), over as many tokens as the Fiddler data has
            m = get_model(model)
            result[model]["aggregate"] = aggregate_skew(alpha, sigma, m.n_experts, m.top_k,
                                                        fid["n_tokens"])
    text = json.dumps(
        result, indent=1, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)
    )
    print(text)
    if args.out:
        write_text(args.out, text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
