"""Plain page loads against an app server in this process: RSS after a warm-up batch and after
each further batch, with Python object counts (objgraph) to tell objects kept from heap kept.
``NO_TRIM=1`` leaves out the server's hand-back of freed memory (``malloc_trim``) for an A/B; the
server compiles no kernel (a page load's memory does not depend on it).

    python benchmarks/page_load_memory.py 30      # batches of 30 loads: warm-up, then 3
"""
import gc
import os
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import panel as pn

import gaplab.app.kernels as kernels
from gaplab.app import serve as serve_mod
from gaplab.app.session import load_problem
from gaplab.app.testing import free_port

if os.environ.get("NO_TRIM"):
    serve_mod._return_freed_memory = gc.collect
kernels.start = lambda *a, **k: None
load_problem("ocr-small")

port = free_port()
url = f"http://127.0.0.1:{port}/"
closed = [0]


def factory():
    app = serve_mod.app_factory()
    pn.state.on_session_destroyed(lambda ctx: closed.__setitem__(0, closed[0] + 1))
    return app


server = pn.serve({"/": factory}, port=port, address="127.0.0.1", start=False, show=False,
                  websocket_origin=[f"127.0.0.1:{port}"], unused_session_lifetime_milliseconds=1000,
                  check_unused_sessions_milliseconds=500)
server.start()
threading.Thread(target=server.io_loop.start, daemon=True).start()


def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024


def load(_):
    with urllib.request.urlopen(url, timeout=300) as r:
        r.read()


def batch(n):
    c0 = closed[0]
    with ThreadPoolExecutor(10) as ex:
        list(ex.map(load, range(n)))
    deadline = time.time() + 180
    while closed[0] < c0 + n and time.time() < deadline:
        time.sleep(0.5)
    time.sleep(2)
    gc.collect()


N = int(sys.argv[1]) if len(sys.argv) > 1 else 60
batch(N)
print(f"warm-up {N} loads: rss {rss():.0f} MB", flush=True)
try:
    import objgraph
    objgraph.show_growth(limit=5, file=open(os.devnull, "w"))
except ImportError:
    objgraph = None
for k in range(3):
    t0 = time.time()
    batch(N)
    print(f"batch {k}: rss {rss():.0f} MB, {time.time() - t0:.0f} s, load {os.getloadavg()[0]:.1f}", flush=True)
    if objgraph is not None:
        objgraph.show_growth(limit=10)
