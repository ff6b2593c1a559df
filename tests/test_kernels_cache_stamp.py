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
