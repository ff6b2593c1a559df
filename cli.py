"""Command line interface: ``gaplab train | path | grid | app | warmup``.

The CLI presents what the core returns (progress bar, summary table, JSON); the core prints
nothing.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

__all__ = ["main"]

DATASETS = ("ocr-small", "ocr-large", "conll2000")


def _load_dataset(name: str, data_home=None):
    """(train, test) SequenceData for a dataset name."""
    if name in ("ocr-small", "ocr-large"):
        from gaplab.core.datasets.ocr import load_ocr
        return load_ocr(name)
    if name == "conll2000":
        from gaplab.core.datasets.conll import load_conll2000
        return load_conll2000(data_home=data_home)
    raise ValueError(f"unknown dataset {name!r}; expected one of {', '.join(DATASETS)}")


def _positive_float(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return v


def _json_default(o):
    import numpy as np
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o))


def _clean(obj):
    """JSON-safe: NaN/inf -> None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def add_solver_arguments(p: argparse.ArgumentParser) -> None:
    """Solver options shared by train / path / grid."""
    p.add_argument("--dataset", default="ocr-small", choices=DATASETS)
    p.add_argument("--data-home", default=None, help="directory with CoNLL-2000 train.txt/test.txt")
    p.add_argument("--sampling", default="gap", choices=["uniform", "permutation", "gap", "maxgap"])
    p.add_argument("--gap-power", type=_positive_float, default=1.0, help="p of gap^p sampling")
    p.add_argument("--step", default="fw", choices=["fw", "pairwise", "away", "combined"])
    p.add_argument("--cache", dest="cache", action="store_true", default=False, help="use the oracle cache (Alg. 5)")
    p.add_argument("--no-cache", dest="cache", action="store_false")
    p.add_argument("--cache-factor", type=_positive_float, default=0.25, help="F of the cache hit rule")
    p.add_argument("--cache-nu", type=_positive_float, default=0.01, help="nu of the cache hit rule")
    p.add_argument("--cache-size", type=int, default=100, help="max cached labellings per block")
    p.add_argument("--batch-step", action="store_true", help="batch FW step after each gap check")
    p.add_argument("--gap-check", type=float, default=10, help="exact gap pass every N passes (inf: never)")
    p.add_argument("--seed", type=int, default=0)


def solver_config_from_args(args, **extra):
    from gaplab.core import CacheConfig, SolverConfig
    return SolverConfig(
        lam=extra.pop("lam", getattr(args, "lam", 0.01)),
        sampling=args.sampling, gap_power=args.gap_power, step=args.step,
        cache=CacheConfig(enabled=args.cache, factor=args.cache_factor, nu=args.cache_nu, size=args.cache_size),
        gap_check=args.gap_check, seed=args.seed, batch_step=args.batch_step, **extra,
    )


def cmd_train(args) -> int:
    from tqdm import tqdm

    from gaplab.core import ChainModel, Solver

    t0 = time.perf_counter()
    train, test = _load_dataset(args.dataset, args.data_home)
    model = ChainModel(train)
    cfg = solver_config_from_args(args, lam=args.lam, gap_threshold=args.gap_threshold,
                                  max_passes=args.max_passes, time_limit=args.time_limit)
    solver = Solver(model, cfg, test_data=test if args.test_every_check else None)
    load_s = time.perf_counter() - t0
    bar = tqdm(total=round(args.max_passes, 2), unit="pass", disable=args.quiet or not sys.stderr.isatty() and not args.progress,
               bar_format="{l_bar}{bar}| {n:.1f}/{total} passes [{elapsed}] {postfix}")

    def callback(s, rec):
        bar.n = min(rec["effective_passes"], bar.total)
        post = {"heur_gap": f"{rec['heuristic_gap']:.2e}"}
        if rec["kind"] == "gap_check":
            post["gap"] = f"{rec['exact_gap']:.2e}"
        bar.set_postfix(post, refresh=False)
        bar.refresh()
        return False

    result = solver.run(callback=callback)
    bar.close()
    train_err = model.error(result.w)
    test_err = model.error(result.w, test)
    out = result.to_dict()
    out.update({
        "dataset": args.dataset, "lam": args.lam, "n": model.n, "d": model.d,
        "config": {"sampling": args.sampling, "gap_power": args.gap_power, "step": args.step,
                   "cache": args.cache, "cache_factor": args.cache_factor, "cache_nu": args.cache_nu,
                   "cache_size": args.cache_size, "gap_check": args.gap_check, "seed": args.seed,
                   "batch_step": args.batch_step, "gap_threshold": args.gap_threshold,
                   "max_passes": args.max_passes},
        "train_error": train_err, "test_error": test_err, "load_time_s": load_s,
    })
    if args.dataset == "conll2000":
        from gaplab.core.datasets.conll import conlleval
        pred = model.predict(result.w, test)
        names = test.label_names
        chunks = test.extras.get("chunks")  # the original gold tags (labels map unseen I-X to B-X)
        gold_seqs, pred_seqs = [], []
        for i in range(test.n):
            sl = test.tokens(i)
            gold_seqs.append(list(chunks[i]) if chunks is not None else [names[k] for k in test.labels[sl]])
            pred_seqs.append([names[k] for k in pred[sl]])
        out["conlleval"] = conlleval(gold_seqs, pred_seqs)
    if not args.quiet:
        rows = [("status", result.status.name.lower()), ("primal", f"{result.primal:.8f}"),
                ("dual", f"{result.dual:.8f}"), ("exact duality gap", f"{result.exact_gap:.3e}"),
                ("heuristic gap (stale)", f"{result.heuristic_gap:.3e}"),
                ("effective passes", f"{result.effective_passes:.1f}"), ("oracle calls", result.oracle_calls),
                ("cache hits", result.cache_hits), ("solver time (s)", f"{result.wall_time_s:.2f}"),
                ("train error", f"{train_err:.4f}"), ("test error", f"{test_err:.4f}")]
        if "conlleval" in out:
            rows.append(("test chunk F1", f"{100 * out['conlleval']['f1']:.2f}"))
        width = max(len(r[0]) for r in rows)
        print(f"gaplab train: {args.dataset}, lam={args.lam}, {args.sampling} sampling, {args.step} steps"
              f"{', cache' if args.cache else ''}")
        for k, v in rows:
            print(f"  {k:<{width}}  {v}")
    if args.out:
        Path(args.out).write_text(json.dumps(_clean(out), indent=1, default=_json_default))
        if not args.quiet:
            print(f"  wrote {args.out}")
    return 0


def cmd_warmup(args) -> int:
    from gaplab.core.warmup import warmup
    secs = warmup()
    print(f"compiled the numba kernels in {secs:.1f} s (cached for the next start)")
    return 0


def cmd_app(args) -> int:
    from gaplab.app.serve import serve
    return serve(port=args.port, address=args.address, show=args.show)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gaplab", description="Block-coordinate Frank-Wolfe for structured SVMs (Osokin et al., ICML 2016)")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("train", help="train an SSVM and report the duality gap")
    add_solver_arguments(p)
    p.add_argument("--lam", type=_positive_float, default=0.01, help="regularization lambda")
    p.add_argument("--gap-threshold", type=float, default=1e-3, help="stop at this exact duality gap")
    p.add_argument("--max-passes", type=_positive_float, default=1000, help="budget in effective passes")
    p.add_argument("--time-limit", type=_positive_float, default=math.inf, help="budget in seconds")
    p.add_argument("--test-every-check", action="store_true", help="evaluate test error at every gap check")
    p.add_argument("--out", default=None, help="write the result as JSON here")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--progress", action="store_true", help="show the progress bar even without a terminal")
    p.set_defaults(func=cmd_train)
    p = sub.add_parser("warmup", help="compile (and cache) every numba kernel once")
    p.set_defaults(func=cmd_warmup)
    p = sub.add_parser("app", help="serve the Panel app")
    p.add_argument("--port", type=int, default=5006)
    p.add_argument("--address", default="127.0.0.1")
    p.add_argument("--show", action="store_true", help="open a browser")
    p.set_defaults(func=cmd_app)
    try:  # regularization path commands (gaplab path / gaplab grid)
        from gaplab.cli_path import add_commands
    except ImportError:
        pass
    else:
        add_commands(sub)
    from gaplab.cli_sweep import add_commands as add_sweep_commands  # gaplab sweep / gaplab figure
    add_sweep_commands(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError) as exc:
        print(f"gaplab {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
