"""Pose oracle cost against the grid side G (the "cost dial"; Paper: App. I).

For each G, in a fresh interpreter (so its peak RSS is its own): load LSP (1,000 training poses,
T types), build PoseModel, draw a w with random unary/pair weights and positive quadratic
deformation weights (seeded), and time the loss-augmented max oracle (the numba primitive
pose_oracle, after pose_scores, scratch allocated once) on ``--images`` images, ``--reps``
times each; report the median ms per call, the 10/90 % quantiles, and the child's peak RSS
(model arrays + scratch + one pass of the oracle over every training image).

With ``--reference`` the same child also times the previous implementation of the oracle
(tests/pose_oracle_reference.py: the envelope transform with back-pointers) on
the same images, interleaved call by call, and checks that both attain the same value (to
1e-12 relative) and how often the labelling is the same (near-ties may be broken differently):
``ref_cpu_ms_median`` and ``speedup_cpu`` in the JSON (before/after under the same machine
load). With ``--both-transforms`` it also times the oracle forced to the direct and to the
envelope distance transform (``direct_cpu_ms_median``, ``envelope_cpu_ms_median``; the default
picks direct for G <= DIRECT_MAX_G): the crossover.

Run from the repository root:  python benchmarks/bench_pose.py [--G 32 64 128] [--types 6]
[--full-pass] [--reference] [--both-transforms] [--out FILE]. CPU times are the process's
(1 thread: NUMBA_NUM_THREADS does not matter, the oracle is serial). Wall-clock medians and CPU-time medians are both
reported (the latter is less sensitive to other processes on a shared machine).
Needs joints.mat ($GAPLAB_DATA, data_home, or the user cache).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import run_child, write_json  # noqa: E402

CHILD = r"""
import json, time, numpy as np
from gaplab.core.datasets.lsp import load_lsp
from gaplab.core.models.pose import PoseModel, pose_scores, pose_oracle, build_pose_arrays, DIRECT_MAX_G
G, T, n_img, reps, data_home, full, refer, both = {G}, {T}, {images}, {reps}, {data_home!r}, {full}, {reference}, {both}
if refer:
    import sys
    sys.path.insert(0, {tests_dir!r})
    from pose_oracle_reference import old_pose_oracle, old_scratch_f, old_scratch_i
t0 = time.perf_counter()
tr, te = load_lsp(G, n_types=T, seed=0, data_home=data_home)
model = PoseModel(tr)
M = model.arrays
t_load = time.perf_counter() - t0
rng = np.random.default_rng(0)
w = rng.normal(0, 0.3, size=model.d)
w[:M.N] = 1.0 + rng.random(M.N)
q = model.quadratic_index()
w[q] = rng.uniform(0.05, 1.0, size=q.size)
h = np.empty(model.d + 1)
y = np.empty(2 * M.N, dtype=np.int64)
sf, si = model.scratch()
pose_scores(M, 0, w, h)
t0 = time.perf_counter(); pose_oracle(M, 0, h, y, sf, si); t_compile = time.perf_counter() - t0
if refer:
    of, oi = np.empty(old_scratch_f(M)), np.empty(old_scratch_i(M), dtype=np.int64)
    y_old = np.empty_like(y)
    old_pose_oracle(M, 0, h, y_old, of, oi)
forced = {{}}
if both:
    y_f = np.empty_like(y)
    for tr_name in ("direct", "envelope"):
        forced[tr_name] = build_pose_arrays(tr, model.deform_unit, tr_name)
        pose_oracle(forced[tr_name], 0, h, y_f, sf, si)
forced_cpu = {{k: [] for k in forced}}
times, cpu, ref_cpu, same, same_val = [], [], [], 0, 0
for i in range(n_img):
    pose_scores(M, i, w, h)
    for r in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        val = pose_oracle(M, i, h, y, sf, si)
        times.append(time.perf_counter() - t0)
        cpu.append((time.process_time() - c0) * 1e3)
        if refer:
            c0 = time.process_time()
            val_old = old_pose_oracle(M, i, h, y_old, of, oi)
            ref_cpu.append((time.process_time() - c0) * 1e3)
            same += int(np.array_equal(y, y_old))
            same_val += int(abs(val - val_old) <= 1e-12 * max(1.0, abs(val_old)))
        for k, Mf in forced.items():
            c0 = time.process_time()
            pose_oracle(Mf, i, h, y_f, sf, si)
            forced_cpu[k].append((time.process_time() - c0) * 1e3)
# one loss-augmented pass over all training images (what an exact gap pass costs)
t0 = time.perf_counter()
losses = []
for i in range(M.n if full else 0):
    pose_scores(M, i, w, h)
    pose_oracle(M, i, h, y, sf, si)
    losses.append(model.loss(i, y))
t_pass = time.perf_counter() - t0
ms = np.array(times) * 1e3
print(json.dumps(dict(G=G, T=T, n=M.n, d=model.d, p_i=model.d + 1, K=M.K, positions=M.G * M.G,
    scratch_mb=(sf.nbytes + si.nbytes) / 2**20, load_s=t_load, first_call_s=t_compile,
    oracle_ms_median=float(np.median(ms)), oracle_ms_q10=float(np.quantile(ms, 0.1)),
    oracle_ms_q90=float(np.quantile(ms, 0.9)), calls=len(ms), full_pass_s=t_pass if full else None, est_pass_s=float(np.median(ms)) * M.n / 1e3,
    cpu_ms_median=float(np.median(cpu)),
    ref_cpu_ms_median=float(np.median(ref_cpu)) if refer else None,
    speedup_cpu=float(np.median(ref_cpu) / np.median(cpu)) if refer else None,
    same_labelling_as_ref=f"{{same}}/{{len(ref_cpu)}}" if refer else None,
    same_value_as_ref=f"{{same_val}}/{{len(ref_cpu)}}" if refer else None,
    transform="direct" if G <= M.direct_max_G else "envelope", direct_max_G=DIRECT_MAX_G,
    direct_cpu_ms_median=float(np.median(forced_cpu["direct"])) if both else None,
    envelope_cpu_ms_median=float(np.median(forced_cpu["envelope"])) if both else None,
    mean_loss_aug=float(np.mean(losses)) if losses else None)))
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--G", type=int, nargs="+", default=[32, 64, 128])
    ap.add_argument("--types", type=int, default=4)
    ap.add_argument("--images", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--data-home", default=None)
    ap.add_argument("--full-pass", action="store_true", help="also time one oracle pass over all 1,000 images")
    ap.add_argument("--reference", action="store_true",
                    help="also time the previous oracle (tests/pose_oracle_reference.py) on the same calls")
    ap.add_argument("--both-transforms", action="store_true",
                    help="also time the oracle forced to the direct and to the envelope transform")
    ap.add_argument("--out", default="bench_pose.json")
    a = ap.parse_args(argv)
    rows = []
    for G in a.G:
        res = run_child(CHILD.format(G=G, T=a.types, images=a.images, reps=a.reps, data_home=a.data_home,
                                     full=a.full_pass, reference=a.reference, both=a.both_transforms,
                                     tests_dir=str(Path(__file__).resolve().parents[1] / "tests")))
        rows.append(res)
        print(f"G={G:4d}  oracle median {res['oracle_ms_median']:8.2f} ms  "
              f"[{res['oracle_ms_q10']:.2f}, {res['oracle_ms_q90']:.2f}] (CPU {res['cpu_ms_median']:.2f} ms)  "
              f"pass over n={res['n']}: ~{res['est_pass_s']:.1f} s  scratch {res['scratch_mb']:.1f} MB  "
              f"peak RSS {res['peak_rss_mb']:.0f} MB"
              + (f"  previous oracle CPU {res['ref_cpu_ms_median']:.2f} ms (x{res['speedup_cpu']:.2f}, "
                 f"same value {res['same_value_as_ref']}, same labelling {res['same_labelling_as_ref']})"
                 if a.reference else "")
              + (f"  direct {res['direct_cpu_ms_median']:.2f} ms, envelope {res['envelope_cpu_ms_median']:.2f} ms"
                 if a.both_transforms else ""), flush=True)
    p = write_json(a.out, {"rows": rows, "args": vars(a)})
    print(json.dumps({"out": str(p)}))


if __name__ == "__main__":
    main()
