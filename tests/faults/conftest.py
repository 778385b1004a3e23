"""Fixtures for trainyard's fault tests: the integration suite's own (tests/integration/conftest.py,
loaded here under another module name) - per-test servers (make_server), extra processes
(procs), the work dir, the engine check at session start (exit 77 when no engine answers) and
the API-description check of every SageMaker response.

Environment: as tests/integration (TY_SERVER_BIN, TY_AGENT_BIN, TY_RUNTIME_TAR, TY_DOCKER_HOST).
"""
import importlib.util
import os
import sys

_IT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration")
sys.path.insert(0, _IT)

_spec = importlib.util.spec_from_file_location("ty_it_conftest", os.path.join(_IT, "conftest.py"))
_it = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_it)

pytest_sessionstart = _it.pytest_sessionstart
pytest_report_header = _it.pytest_report_header
workdir = _it.workdir
make_server = _it.make_server
procs = _it.procs
_responses_match_api_description = _it._responses_match_api_description

_FAULT_LINES = []


def pytest_runtest_logreport(report):
    """Keeps the `FAULT <case>: ...` lines a test printed, whether it passed or not."""
    if report.when == "call":
        _FAULT_LINES.extend(l.strip() for l in report.capstdout.splitlines()
                            if l.startswith("FAULT "))


def pytest_terminal_summary(terminalreporter):
    """Every case's counts per terminal state, in one place at the end of the run."""
    if _FAULT_LINES:
        terminalreporter.section("fault counts")
        for line in _FAULT_LINES:
            terminalreporter.write_line(line)
