"""The path's defaults live in PathConfig: the command line, the sweep spec and the app read them."""
import argparse

from gaplab.core.regpath import HEURISTIC_KAPPA, PathConfig, path_defaults


def test_path_defaults_are_pathconfigs():
    assert path_defaults() == {k: getattr(PathConfig(), k) for k in path_defaults()}
    assert path_defaults()["lam_min"] == 2.0 ** -15 and 0 < HEURISTIC_KAPPA < path_defaults()["kappa"]


def test_cli_path_and_grid_defaults_equal_pathconfig():
    from gaplab.cli import path as cli_path

    sub = argparse.ArgumentParser().add_subparsers()
    cli_path.add_commands(sub)
    d = PathConfig()
    path = sub.choices["path"].parse_args([])
    assert (path.eps, path.lam_min, path.time_limit, path.check_every, path.check_factor,
            path.max_passes_per_breakpoint) == (d.eps, d.lam_min, d.time_limit, d.check_every, d.check_factor,
                                                d.max_passes_per_breakpoint)
    grid = sub.choices["grid"].parse_args([])
    assert (grid.eps, grid.check_factor, grid.max_passes_per_point) == (d.eps, d.check_factor,
                                                                         d.max_passes_per_breakpoint)


def test_sweep_spec_defaults_equal_pathconfig():
    from gaplab.core.sweep.spec import _check_method

    d = PathConfig()
    m = _check_method("p", {"kind": "path"})
    assert (m["eps"], m["kappa"], m["lam_min"], m["max_passes_per_breakpoint"], m["check_factor"]) == \
        (d.eps, d.kappa, d.lam_min, d.max_passes_per_breakpoint, d.check_factor)
    g = _check_method("g", {"kind": "grid"})
    assert (g["eps"], g["max_passes_per_point"], g["check_factor"]) == (d.eps, d.max_passes_per_breakpoint,
                                                                         d.check_factor)


def test_app_path_defaults_equal_pathconfig():
    from gaplab.app.pathlab import PathLab

    d = PathConfig()
    assert (PathLab.param["eps"].default, PathLab.param["kappa"].default, PathLab.param["lam_min"].default) == \
        (d.eps, d.kappa, d.lam_min)
