"""Write ``assets/weizmann_horse_sha256.json``: the sha256 of every file of the Weizmann Horse
Database, which :func:`gaplab.core.datasets.horse.load_weizmann_horses` checks by default
(``verify=True``) so that a cut or edited image or mask is refused with its name.

    python scripts/horse_checksums.py /path/to/weizmann_horse

The directory must be the official database: the files concatenated in sorted-path order must
hash to ``HORSE_SHA256`` (the value in the data folder's README.md), or nothing is written.
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from gaplab.core.datasets.horse import HORSE_SHA256

OUT = Path(__file__).resolve().parent.parent / "assets" / "weizmann_horse_sha256.json"


def main(root: str) -> int:
    root = Path(root)
    files = sorted(p for p in root.rglob("*") if p.is_file())
    total = hashlib.sha256()
    table = {}
    for p in files:
        data = p.read_bytes()
        total.update(data)
        table[p.relative_to(root).as_posix()] = hashlib.sha256(data).hexdigest()
    if total.hexdigest() != HORSE_SHA256:
        print(f"{root}: the files hash to {total.hexdigest()}, not HORSE_SHA256 = {HORSE_SHA256}; "
              "not the official database, nothing written", file=sys.stderr)
        return 1
    doc = {"description": "sha256 of every file of the Weizmann Horse Database (Borenstein and Ullman, "
                          "ECCV 2002): 328 photos rgb/horseNNN.jpg and 328 masks figure_ground/horseNNN.jpg; "
                          "written by scripts/horse_checksums.py, read by gaplab.core.datasets.horse",
           "files": table}
    OUT.write_text(json.dumps(doc, indent=0) + "\n")
    print(f"wrote {OUT}: {len(table)} files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
