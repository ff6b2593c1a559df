"""The on-disk numba cache of the drivers that link a model's primitives (and the phases of the
other kernel modules) is dropped when those sources change, in every folder numba caches them in.
Runs in a child process with its own empty NUMBA_CACHE_DIR (no compile: only cache files)."""
import json
import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import json, os
    from gaplab.core import kernels as kr
    from gaplab.core.kernels import registry
    from gaplab.core.models.chain import ChainArrays

    prims = {k: v for k, v in kr._KINDS[ChainArrays].items() if k != "__name__"}
    locator = kr.step._run_steps_nrt_free._cache._impl.locator
    sources = registry._linked_sources()
    names = {os.path.basename(s) for s in sources}
    assert {"step.py", "phases.py", "gaps.py", "state.py"} <= names, names

    def folder(src):
        return type(locator).from_function(kr.step._run_steps_nrt_free.py_func, src).get_cache_path()

    kernel_dir = folder(kr.step.__file__)
    state_dir = folder(os.path.join(os.path.dirname(os.path.dirname(kr.step.__file__)), "state.py"))
    rng_dir = folder(os.path.join(os.path.dirname(os.path.dirname(kr.step.__file__)), "rng.py"))

    def plant():
        files = [os.path.join(kernel_dir, "step._run_steps_nrt_free-1.py311.nbi"),
                 os.path.join(kernel_dir, "phases.x-2.py311.1.nbc"),
                 os.path.join(state_dir, "state.new_state-3.py311.nbi"),
                 os.path.join(rng_dir, "rng.rng_uniform-4.py311.nbi")]
        for f in files:
            os.makedirs(os.path.dirname(f), exist_ok=True)
            open(f, "w").close()
        return files

    out = {}
    files = plant()
    registry._drop_stale_driver_caches("stamp-test", prims)  # no stamp yet: stale
    out["first"] = [os.path.exists(f) for f in files]
    files = plant()
    registry._drop_stale_driver_caches("stamp-test", prims)  # same sources: kept
    out["same"] = [os.path.exists(f) for f in files]
    stamp = os.path.join(locator.get_cache_path(), "gaplab-model-stamp-test.sha256")
    with open(stamp, "w") as fh:
        fh.write("an older source")
    registry._drop_stale_driver_caches("stamp-test", prims)  # sources changed: dropped
    out["changed"] = [os.path.exists(f) for f in files]
    print(json.dumps(out))
""")


def test_stale_driver_caches_are_dropped_in_every_kernel_folder(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    res = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    # the package's drivers and state.py's kernels go; a module that links no primitive stays
    assert out["first"] == [False, False, False, True]
    assert out["same"] == [True, True, True, True]
    assert out["changed"] == [False, False, False, True]


CHILD_LINKED = textwrap.dedent("""
    import json, os
    from gaplab.core import kernels as kr
    from gaplab.core.kernels import registry
    from gaplab.core.models.pose import PoseArrays
    from gaplab.core.models.pose import oracle, transforms
    from gaplab.core.datasets import lsp_scoremaps

    prims = {k: v for k, v in kr._KINDS[PoseArrays].items() if k != "__name__"}
    locator = kr.step._run_steps_nrt_free._cache._impl.locator

    def planted(module, fname):
        folder = type(locator).from_function(kr.step._run_steps_nrt_free.py_func, module.__file__).get_cache_path()
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, fname)
        open(path, "w").close()
        return path

    registry._drop_stale_driver_caches("linked-test", prims)  # a stamp of today's sources
    files = [planted(oracle, "oracle.pose_oracle-1.py311.nbi"),
             planted(transforms, "transforms._dt1d-2.py311.1.nbc"),
             planted(lsp_scoremaps, "lsp_scoremaps.pose_score_map-3.py311.nbi")]
    registry._drop_stale_driver_caches("linked-test", prims)  # same sources: kept
    same = [os.path.exists(f) for f in files]
    with open(os.path.join(locator.get_cache_path(), "gaplab-model-linked-test.sha256"), "w") as fh:
        fh.write("an older source")
    registry._drop_stale_driver_caches("linked-test", prims)  # a linked source changed: dropped
    print(json.dumps({"same": same, "changed": [os.path.exists(f) for f in files]}))
""")


def test_a_change_to_a_file_the_primitives_call_into_drops_the_models_own_caches(tmp_path):
    # the pose oracle (pose/oracle.py) links the distance transforms (pose/transforms.py) and the
    # score-map generator (datasets/lsp_scoremaps.py) into its machine code; numba keys each
    # function's cache by its own file only, so the stamp covers every file the primitives reach
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    res = subprocess.run([sys.executable, "-c", CHILD_LINKED], env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["same"] == [True, True, True]
    assert out["changed"] == [False, False, False]
