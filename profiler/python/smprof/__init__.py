"""smprof - SageMaker Profiler's Python API on top of trainyard's libtyprof (through ctypes).

Scripts written for SageMaker Profiler run unchanged:

    import smprof
    SMProf = smprof.SMProfiler.instance()
    config = smprof.Config(); config.profiler = {"EnableCuda": "1"}
    SMProf.configure(config); SMProf.start_profiling()
    with smprof.annotate("Forward"): ...
    h = smprof.annotation_begin("step_0"); ...; smprof.annotation_end(h)
    SMProf.stop_profiling()

The library is found through $TYPROF_LIB (set by `typrof run`), next to this package
(<lib>/python/smprof -> <lib>/libtyprof.so), or by the loader ("libtyprof.so"). If it cannot be
loaded every call is a no-op and one warning is printed, so training never fails because of
the profiler. Output goes to $TYPROF_OUT, else /opt/ml/output/profiler when /opt/ml is
writable, else ./typrof-out. Extensions beyond SageMaker's API: mark(), step_begin(),
step_end().
"""
import ctypes
import functools
import os
import sys
import threading

__all__ = ["SMProfiler", "Config", "annotate", "annotation_begin", "annotation_end", "mark",
           "step_begin", "step_end", "library"]

_lock = threading.Lock()
_lib = None
_tried = False


def _candidates():
    env = os.environ.get("TYPROF_LIB")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.normpath(os.path.join(here, "..", "..", "libtyprof.so"))
    yield "libtyprof.so"


def library():
    """The loaded ctypes.CDLL of libtyprof, or None when it cannot be loaded."""
    global _lib, _tried
    with _lock:
        if _tried:
            return _lib
        _tried = True
        err = None
        for path in _candidates():
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                err = e
                continue
            lib.typrof_start.argtypes = [ctypes.c_char_p]
            lib.typrof_start.restype = ctypes.c_int
            lib.typrof_stop.restype = ctypes.c_int
            lib.typrof_flush.restype = ctypes.c_int
            lib.typrof_is_active.restype = ctypes.c_int
            lib.typrof_range_begin.argtypes = [ctypes.c_char_p]
            lib.typrof_range_begin.restype = ctypes.c_uint64
            lib.typrof_range_end.argtypes = [ctypes.c_uint64]
            lib.typrof_range_end.restype = None
            lib.typrof_mark.argtypes = [ctypes.c_char_p]
            lib.typrof_mark.restype = None
            lib.typrof_step_begin.argtypes = [ctypes.c_int64]
            lib.typrof_step_begin.restype = None
            lib.typrof_step_end.argtypes = [ctypes.c_int64]
            lib.typrof_step_end.restype = None
            _lib = lib
            return _lib
        sys.stderr.write("smprof: libtyprof not loadable (%s); profiling calls are no-ops\n" % err)
        return None


def _b(name):
    return str(name).encode("utf-8", "replace")


def _default_out():
    out = os.environ.get("TYPROF_OUT")
    if out:
        return out
    if os.access("/opt/ml", os.W_OK):
        return "/opt/ml/output/profiler"
    return os.path.abspath("typrof-out")


class Config(object):
    """Holds `profiler` settings ({"EnableCuda": "1", ...}); accepted and recorded, the
    library decides from the environment what it can trace."""

    def __init__(self):
        self.profiler = {}


class SMProfiler(object):
    _instance = None

    @classmethod
    def instance(cls):
        with _lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def __init__(self):
        self.config = Config()

    def configure(self, config):
        self.config = config

    def start_profiling(self):
        lib = library()
        if lib is None or lib.typrof_is_active():
            return
        rc = lib.typrof_start(_b(_default_out()))
        if rc != 0:
            sys.stderr.write("smprof: typrof_start failed (%d)\n" % rc)

    def stop_profiling(self):
        lib = library()
        if lib is not None and lib.typrof_is_active():
            lib.typrof_stop()

    def flush(self):
        lib = library()
        if lib is not None and lib.typrof_is_active():
            lib.typrof_flush()


def annotation_begin(name):
    """Opens a range; returns a handle for annotation_end (0 when not recording)."""
    lib = library()
    return lib.typrof_range_begin(_b(name)) if lib is not None else 0


def annotation_end(handle):
    lib = library()
    if lib is not None and handle:
        lib.typrof_range_end(handle)


def mark(name):
    lib = library()
    if lib is not None:
        lib.typrof_mark(_b(name))


def step_begin(step):
    lib = library()
    if lib is not None:
        lib.typrof_step_begin(int(step))


def step_end(step):
    lib = library()
    if lib is not None:
        lib.typrof_step_end(int(step))


class annotate(object):
    """`with smprof.annotate("Forward"):` or `@smprof.annotate("load")`."""

    def __init__(self, name):
        self.name = name
        self._h = []

    def __enter__(self):
        self._h.append(annotation_begin(self.name))
        return self

    def __exit__(self, *exc):
        if self._h:
            annotation_end(self._h.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **kw):
            h = annotation_begin(self.name)
            try:
                return fn(*a, **kw)
            finally:
                annotation_end(h)
        return wrapper
