"""Fingerprints of solver runs, to check that a refactor of the core leaves every trace bitwise
unchanged: run the same configurations on two commits and compare the JSON.

    python scripts/trace_fingerprint.py --out fp_new.json [--conll DIR] [--quick]
    python scripts/trace_fingerprint.py --compare fp_old.json fp_new.json

Each fingerprint is the sha256 of the final solver state (w, v, μ, ℓ, gap estimates and
iterations, atoms, counters, RNG) and of the trace (every record without its wall time).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys

import numpy as np

STATE_FIELDS = ("w", "v", "mu", "ell", "gap_est", "gap_iter", "gap_exact", "tree", "counters", "scalars",
                "a_alpha", "a_loss", "a_hash", "a_count", "rng", "log")


def fingerprint(solver, result) -> dict:
    S = solver.S
    h = hashlib.sha256()
    for name in STATE_FIELDS:
        if hasattr(S, name):
            a = np.array(getattr(S, name))
            if name == "scalars" and a.shape[0] > 3:
                a[3] = 0.0  # S_GAP_REF: the gap-power reference (added after the first recorded traces)
            h.update(np.ascontiguousarray(a).tobytes())
    t = hashlib.sha256()
    for rec in result.trace:
        t.update(json.dumps({k: v for k, v in rec.items() if k != "wall_time_s"}, sort_keys=True,
                            default=float).encode())
    return {"state": h.hexdigest()[:16], "trace": t.hexdigest()[:16], "gap": result.exact_gap,
            "passes": result.effective_passes, "hits": result.cache_hits}


METHODS = [(s, st, c) for s in ("uniform", "gap") for st in ("fw", "pairwise") for c in (False, True)]
EXTRA = [("permutation", "away", False), ("maxgap", "combined", True), ("gap", "combined", False),
         ("uniform", "away", True)]


def configs(quick: bool):
    for (s, st, c) in METHODS + EXTRA:
        yield f"{s}-{st}-{'cache' if c else 'nocache'}", dict(sampling=s, step=st, cache={"enabled": c})
    yield "gap-fw-batch", dict(sampling="gap", step="fw", batch_step=True, gap_check=2)
    yield "gap-pairwise-cache-box", dict(sampling="gap", step="pairwise", cache={"enabled": True}, box=True)
    yield "uniform-fw-box", dict(sampling="uniform", step="fw", box=True)


def run_all(conll_home=None, quick=False, only=None):
    from gaplab.core import ChainModel, Solver, load_ocr
    from gaplab.toy_examples.hard_easy import make_hard_easy

    problems = []
    tr, _ = load_ocr("small")
    problems.append(("ocr-small", ChainModel(tr), 0.01, 6 if quick else 20))
    if not quick:
        tr, _ = load_ocr("large")
        problems.append(("ocr-large", ChainModel(tr), 0.001, 3))
        if conll_home:
            from gaplab.core.datasets.conll import load_conll2000
            tr, _ = load_conll2000(data_home=conll_home)
            problems.append(("conll2000", ChainModel(tr), 0.01, 2))
    toy = make_hard_easy(20, 50)
    toy_model = toy[0] if isinstance(toy, tuple) else toy
    problems.append(("toy", toy_model, 1.0 / 20, 30))
    if only and "pose" in only:   # opt-in: the pose kind (needs LSP's joints.mat)
        from gaplab.core.datasets.lsp import load_lsp
        from gaplab.core.models.pose import PoseModel
        from pathlib import Path
        here = Path(__file__).resolve().parents[2] / "shared" / "data"
        tr, _ = load_lsp(G=32, n_train=20, data_home=here if (here / "lsp").is_dir() else None)
        problems.append(("pose", PoseModel(tr), 0.01, 3))
    if only and "dense" in only:  # opt-in: the dense kind (a plain-Python chain on 40 OCR words)
        from gaplab.core.models.plain import PythonModel
        from gaplab.toy_examples.plain_chain import PlainChain, chain_examples
        tr, _ = load_ocr("small")
        m = ChainModel(tr)
        ex = chain_examples(m.data)
        ex = type(ex)(ex.X[:40], ex.Y[:40], name="ocr-40")
        problems.append(("dense", PythonModel(PlainChain(m.F, m.K), ex), 0.01, 4))
    out = {}
    for pname, model, lam, passes in problems:
        if only and pname not in only:
            continue
        for cname, cfg in configs(quick):
            cfg = dict(cfg)
            box = cfg.pop("box", False)
            from gaplab.core.problems import model_box
            kw = model_box(model)   # a model's own box (pose: w_def >= 0) in every configuration
            if box and not kw:
                rng = np.random.default_rng(1)
                lb = np.full(model.d, -np.inf)
                ub = np.full(model.d, np.inf)
                idx = rng.choice(model.d, size=max(1, model.d // 10), replace=False)
                lb[idx] = -0.01
                ub[idx[: len(idx) // 2]] = 0.02
                kw = dict(lb=lb, ub=ub)
            cfg.setdefault("gap_check", 5)
            s = Solver(model, lam=lam, max_passes=passes, seed=3, **cfg, **kw)
            r = s.run()
            out[f"{pname}/{cname}"] = fingerprint(s, r)
            print(pname, cname, out[f"{pname}/{cname}"], file=sys.stderr, flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--conll", default=None, help="CoNLL-2000 directory (skipped when not given)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--compare", nargs=2)
    ap.add_argument("--only", default=None, help="comma-separated problem names (ocr-small, ocr-large, conll2000, toy; "
                    "pose and dense only when named here)")
    a = ap.parse_args(argv)
    if a.compare:
        old, new = (json.load(open(p)) for p in a.compare)
        keys = sorted(set(old) | set(new))
        bad = [k for k in keys if old.get(k) != new.get(k)]
        for k in bad:
            print("DIFFERS", k, old.get(k), new.get(k))
        print(f"{len(keys) - len(bad)} identical, {len(bad)} differ")
        return 1 if bad else 0
    res = run_all(a.conll, a.quick, a.only.split(",") if a.only else None)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
