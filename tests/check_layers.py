#!/usr/bin/env python3
"""Fails when a header includes a header of a higher layer.

The layers, lowest first: base -> backends -> kernels -> core -> distributed.
A header may include its own layer and the layers below it
(docs/architecture.md):

  base/include/kdforge/base/          Kokkos and the standard library only
  backends/include/kdforge/backends/  base
  kernels/include/kdforge/kernels/    backends, base
  core/include/kdforge/               kernels, backends, base
  distributed/include/kdforge/        core and below, and MPI (the kdforge::mpi
                                      component: kdforge/distributed_tree.hpp,
                                      kdforge/distributed/...)

Usage: check_layers.py [repository root]   (prints each offending include)
       check_layers.py --self-test          (a planted upward include is caught)
"""
import pathlib
import re
import sys

LAYERS = ["base", "backends", "kernels", "core", "distributed"]
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](kdforge/[^>"]+)[>"]')


def layer_of_include(path):
    """The layer an include path <kdforge/...> belongs to."""
    parts = path.split("/")
    if len(parts) > 2 and parts[1] in ("base", "backends", "kernels", "distributed"):
        return parts[1]
    if path == "kdforge/distributed_tree.hpp":
        return "distributed"
    return "core"  # kdforge/<name>.hpp and kdforge/detail/...


def check(root):
    bad = []
    checked = 0
    for layer in LAYERS:
        for f in sorted((root / layer / "include").rglob("*.hpp")):
            checked += 1
            for lineno, line in enumerate(f.read_text().splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = layer_of_include(m.group(1))
                if LAYERS.index(target) > LAYERS.index(layer):
                    bad.append(f"{f.relative_to(root)}:{lineno}: the {layer} layer includes <{m.group(1)}> "
                               f"of the {target} layer")
    return checked, bad


def self_test():
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        files = {
            "base/include/kdforge/base/a.hpp": "#include <Kokkos_Core.hpp>\n",
            "kernels/include/kdforge/kernels/b.hpp": "#include <kdforge/base/a.hpp>\n",
            "backends/include/kdforge/backends/c.hpp": "#include <kdforge/kernels/b.hpp>\n",  # upward
            "core/include/kdforge/d.hpp": "#include <kdforge/kernels/b.hpp>\n",
            "core/include/kdforge/e.hpp": "#include <kdforge/distributed_tree.hpp>\n",  # upward
            "distributed/include/kdforge/distributed/f.hpp": "#include <kdforge/d.hpp>\n",
            "distributed/include/kdforge/distributed_tree.hpp": "#include <kdforge/distributed/f.hpp>\n",
        }
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        checked, bad = check(root)
        ok = (checked == 7 and len(bad) == 2 and "backends/c.hpp" in bad[0] and "core/include/kdforge/e.hpp" in bad[1])
        print("self-test", "passed" if ok else f"FAILED: {bad}")
        return 0 if ok else 1


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        return self_test()
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[1])
    checked, bad = check(root)
    for b in bad:
        print(b)
    if checked == 0:
        print(f"no headers found under {root}")
        return 1
    print(f"{checked} headers checked, {len(bad)} includes against the layer order")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
