"""The runtime around the trees: the GIL is released during calls, Ctrl-C
interrupts cleanly, the runtime is finalised at exit after every tree let go
of its memory."""

import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import kdforge
from conftest import make_points


def _run(code, env=None, **kw):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=e, **kw)


def test_runtime_info():
    info = kdforge.runtime_info()
    assert info["backend"] in ("OpenMP", "Cuda", "Serial", "Threads")
    assert info["initialized"] and info["concurrency"] >= 1
    assert info["fast_dimensions"]
    assert kdforge.__version__.count(".") == 2


def test_gil_released_during_queries(rng):
    """With preemptive switching off, the main thread runs during a query of
    another thread only if the query released the GIL."""
    pts = make_points("uniform", 200000, 3, rng)
    tree = kdforge.KDTree(pts)
    started, finished = threading.Event(), threading.Event()

    def work():
        started.set()
        tree.query(pts, k=16)
        finished.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    try:
        t = threading.Thread(target=work)
        t.start()
        started.wait()
        ran_during_query = not finished.is_set()
    finally:
        sys.setswitchinterval(old)
        t.join()
    assert ran_during_query


def test_threads_share_the_runtime(rng):
    pts = make_points("uniform", 20000, 3, rng)
    q = make_points("uniform", 5000, 3, rng)
    tree = kdforge.KDTree(pts)
    want = tree.query(q, k=4)[1]
    results, errors = [], []

    def work():
        try:
            for _ in range(5):
                results.append(tree.query(q, k=4)[1])
                kdforge.KDTree(pts[:1000]).query_ball_point(q[:10], 0.1)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 20 and all((r == want).all() for r in results)


@pytest.mark.parametrize("phase", ["query", "build"])
def test_ctrl_c_interrupts_cleanly(phase):
    child = _run(f"""
        import signal, sys, numpy as np, kdforge
        signal.signal(signal.SIGINT, signal.default_int_handler)  # even where SIGINT was ignored
        rng = np.random.default_rng(1)
        pts = rng.random((300000, 3))
        tree = kdforge.KDTree(pts)
        print("ready", flush=True)
        try:
            while True:
                if "{phase}" == "query":
                    tree.query(pts, k=8)
                else:
                    kdforge.KDTree(pts)
        except KeyboardInterrupt:
            d, i = tree.query(pts[:5], k=1)
            assert (i == np.arange(5)).all() and (d == 0).all()
            print("interrupted and still answering", flush=True)
    """)
    assert child.stdout.readline().strip() == "ready"
    import time

    time.sleep(0.5)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert "interrupted and still answering" in out


def test_finalized_at_exit_and_after_finalize():
    child = _run("""
        import numpy as np, kdforge
        trees = [kdforge.KDTree(np.random.rand(1000, d)) for d in (2, 3, 7)]
        held = trees[0].query(np.random.rand(10, 2), k=3)
        kdforge.finalize()
        for t in trees:
            try:
                t.query(np.zeros(t.m))
            except RuntimeError as e:
                assert "released" in str(e)
            else:
                raise AssertionError("a released tree answered")
        try:
            kdforge.KDTree(np.zeros((3, 3)))
        except RuntimeError as e:
            assert "finalised" in str(e)
        print("ok")
    """)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert out.strip() == "ok"
    assert "Kokkos" not in err and "deallocat" not in err, err
    # trees still alive at exit: released before Kokkos is finalised
    child = _run("""
        import numpy as np, kdforge
        tree = kdforge.KDTree(np.random.rand(5000, 3))
        other = kdforge.KDTree(np.random.rand(100, 9))
        tree.query(np.random.rand(10, 3), k=3)
        print("ok")
    """)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0 and out.strip() == "ok", err
    assert "Kokkos" not in err and "deallocat" not in err, err


def test_threads_from_environment():
    if kdforge.runtime_info()["backend"] != "OpenMP":
        pytest.skip("the OpenMP backend's pool")
    for env, want in (({"OMP_NUM_THREADS": "1"}, 1), ({"KDFORGE_NUM_THREADS": "2", "OMP_NUM_THREADS": "1"}, 2)):
        child = _run("""
            import numpy as np, kdforge
            kdforge.KDTree(np.random.rand(10, 3))
            print(kdforge.runtime_info()["concurrency"])
        """, env=env)
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        assert int(out) == want
