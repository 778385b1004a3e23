"""/healthz says degraded (HTTP 503, with reasons) while the engine or every agent is
unreachable, ok (200) otherwise."""
import json
import os
import socket
import threading

import tyhelpers as H


class EngineProxy:
    """A unix-socket relay in front of the real engine, which a test can take away and bring
    back (the server does not start without an engine, so it is cut after start)."""

    def __init__(self, path, upstream):
        self.path = path
        self.upstream = upstream[len("unix://"):] if upstream.startswith("unix://") else upstream
        self.lsock = None
        self.conns = []

    def start(self):
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.lsock.bind(self.path)
        self.lsock.listen(64)
        threading.Thread(target=self._accept, args=(self.lsock,), daemon=True).start()

    def _accept(self, ls):
        while True:
            try:
                c, _ = ls.accept()
            except OSError:
                return
            u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                u.connect(self.upstream)
            except OSError:
                c.close()
                continue
            self.conns += [c, u]
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self):
        self.lsock.close()
        os.unlink(self.path)
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
                c.close()
            except OSError:
                pass
        self.conns = []


def _health(s):
    st, body = s.healthz()
    return st, json.loads(body)


def test_degraded_while_engine_unreachable(make_server, workdir):
    proxy = EngineProxy(os.path.join(workdir, "engine-proxy.sock"), H.DOCKER_HOST)
    proxy.start()
    try:
        s = make_server(agents=1, extra=["--docker-host", "unix://" + proxy.path])
        st, h = _health(s)
        assert st == 200 and h["status"] == "ok" and h["reasons"] == [], (st, h)
        proxy.stop()
        st, h = H.wait_for(lambda: (lambda r: r if r[0] == 503 else None)(_health(s)), 20,
                           "/healthz to say degraded")
        assert h["status"] == "degraded" and h["engine"]["ok"] is False, h
        assert any(r.startswith("engine:") for r in h["reasons"]), h
        assert h["redis"]["ok"] is True, h
        for k in ("redis", "engine", "agents", "version"):  # the fields it always had
            assert k in h, h
        proxy.start()
        H.wait_for(lambda: _health(s)[0] == 200, 20, "/healthz ok once the engine is back")
    finally:
        try:
            proxy.stop()
        except OSError:
            pass


def test_degraded_when_no_agent_is_live(make_server):
    s = make_server(agents=0)
    st, h = _health(s)
    assert st == 503 and h["status"] == "degraded", (st, h)
    assert any(r.startswith("agents:") for r in h["reasons"]), h
    assert h["live_agents"] == [], h
