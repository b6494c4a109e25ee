# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one HTTP backend of the tests: a ThreadingHTTPServer on a loopback port, served by a thread of this process,
stopped with a bound and checked.

    with HttpBackend(Handler) as backend:      # or backend = HttpBackend(Handler) ... backend.stop()
        backend.port

Why not http.server as is: its serve_forever waits on poll() and then calls accept() on a *blocking* socket. When
the connection poll announced is taken by anyone else (a second accept on the same open file, or the descriptor's
number closed behind the server's back and reused by another listening socket), that accept() blocks until the next
connection, which may never come, and shutdown() then waits forever: a CI run (stop 51) lost 296 s and its
10-pytest step in the teardown of test_onion_health_layers this way, its serve_forever thread found in accept().
Here the listening socket is non-blocking, so a connection someone else took is a BlockingIOError that
socketserver ignores; before each accept() the descriptor is checked to be still the socket this server made (a
number reused by another file is never waited on: the server stops serving and says so); stop() joins the thread
within a bound and, when it does not end or the descriptor was lost, fails with what it found instead of hanging.
"""

import http.server
import os
import sys
import threading
import traceback


class BackendError(AssertionError):
    pass


class Ok(http.server.BaseHTTPRequestHandler):
    """The plainest backend: 200 and "ok" to every GET, nothing logged."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


class HttpBackend(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler, address=("127.0.0.1", 0), name="http-backend"):
        super().__init__(address, handler)
        self.socket.setblocking(False)
        self.port = self.server_address[1]
        self._fd = self.socket.fileno()
        self._identity = self._fd_identity()
        self.lost = None
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="%s-%d" % (name, self.port), daemon=True)
        self._thread.start()
        self.stopped = False

    def _fd_identity(self):
        try:
            st = os.fstat(self._fd)
        except OSError as exc:
            return "closed (%s)" % exc.strerror
        return (st.st_dev, st.st_ino)

    def get_request(self):
        if self._fd_identity() != self._identity:
            # the number now names another file (which may be a blocking listening socket: its accept() would
            # wait for good): serve no more, and stop() names it
            self.lost = self.problem()
            self._BaseServer__shutdown_request = True
            raise OSError(self.lost)
        conn, peer = self.socket.accept()
        conn.setblocking(True)      # the accepted connection is served by a thread of its own, blocking
        return conn, peer

    def problem(self):
        """None while the server's descriptor is still the socket it made, else what it is now."""
        now = self._fd_identity()
        if now == self._identity:
            return None
        return ("descriptor %d of the backend on 127.0.0.1:%d is no longer its listening socket (inode %s, now %s): "
                "something in this process closed a descriptor it did not own" % (
                    self._fd, self.port, self._identity[1], now if isinstance(now, str) else "inode %s" % now[1]))

    def stop(self, timeout=10):
        """Stop serving and close; a thread that does not end within timeout fails with its stack."""
        if self.stopped:
            return
        self.stopped = True
        problem = self.lost or self.problem()
        self._BaseServer__shutdown_request = True     # what shutdown() sets, without its unbounded wait
        self._thread.join(timeout)
        alive = self._thread.is_alive()
        stack = ""
        if alive:
            frame = sys._current_frames().get(self._thread.ident)
            stack = "".join(traceback.format_stack(frame)) if frame is not None else ""
        try:
            self.server_close()
        except OSError as exc:      # the descriptor was closed by someone else already
            problem = problem or "closing the backend on 127.0.0.1:%d: %s" % (self.port, exc)
        if problem or alive:
            raise BackendError("%s%s" % (problem or "", "; its thread did not end within %ss:\n%s" % (timeout, stack)
                                         if alive else ""))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
