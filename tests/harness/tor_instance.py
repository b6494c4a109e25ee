# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A real, throwaway tor for tests: own DataDirectory, free loopback ControlPort, a
ControlSocket, cookie auth, DisableNetwork 1, bound to this process by
__OwningControllerProcess and stopped by its PID."""

import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

try:  # imported as harness.tor_instance (pytest) or from this directory
    from . import procs
    from .ports import free_port
except ImportError:  # pragma: no cover
    import procs
    from ports import free_port

TOR = os.environ.get("ONIONLAB_TOR", "tor")


def hash_password(password):
    out = subprocess.run([TOR, "--quiet", "--hash-password", password], check=True,
                         stdout=subprocess.PIPE, universal_newlines=True).stdout
    return [line for line in out.splitlines() if line.startswith("16:")][-1]


class TorInstance(object):
    """tor with DisableNetwork 1. Use as a context manager or call start()/stop()."""

    def __init__(self, base_dir=None, password=None, cookie=True, extra=None, control_socket=True):
        self.base = Path(base_dir or tempfile.mkdtemp(prefix="onionlab-tor-"))
        self.data_dir = self.base / "data"
        self.password = password
        self.cookie = cookie
        self.extra = list(extra or [])
        self.use_socket = control_socket
        self.control_port = None
        self.control_socket = str(self.base / "control.sock") if control_socket else None
        self.cookie_path = str(self.data_dir / "control_auth_cookie")
        self.torrc = self.base / "torrc"
        self.proc = None

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def config_lines(self):
        lines = [
            "DataDirectory %s" % self.data_dir,
            "DisableNetwork 1",
            "SocksPort 0",
            "ControlPort 127.0.0.1:%d" % self.control_port,
            "CookieAuthentication %d" % (1 if self.cookie else 0),
            "Log notice file %s" % (self.base / "tor.log"),
            "__OwningControllerProcess %d" % os.getpid(),
            "ShutdownWaitLength 0",
            "AvoidDiskWrites 1",
            # no GeoIP parsing: ~250 ms of CPU per start that no test needs
            "GeoIPFile /dev/null",
            "GeoIPv6File /dev/null",
        ]
        if self.use_socket:
            lines.append("ControlSocket %s RelaxDirModeCheck" % self.control_socket)
        if self.password is not None:
            lines.append("HashedControlPassword %s" % hash_password(self.password))
        return lines + self.extra

    def write_torrc(self):
        self.torrc.write_text("\n".join(self.config_lines()) + "\n")

    def start(self, timeout=30):
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(str(self.data_dir), 0o700)
        for attempt in range(5):
            self.control_port = free_port()
            self.write_torrc()
            self.proc = subprocess.Popen([TOR, "-f", str(self.torrc), "--defaults-torrc", "/dev/null"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._wait_ready(timeout):
                return self
            self.stop()
        raise RuntimeError("tor did not start; see %s" % (self.base / "tor.log"))

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.control_port), timeout=1):
                    pass
                if self.use_socket:
                    # the socket file exists from bind(); connections are refused until listen()
                    # (seen once: "Connection refused" right after start)
                    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
                        unix.settimeout(1)
                        unix.connect(str(self.control_socket))
                if not self.cookie or os.path.exists(self.cookie_path):
                    return True
            except OSError:
                pass
            time.sleep(0.02)
        return False

    def stop(self, grace=5):
        proc, self.proc = self.proc, None
        procs.stop(proc, grace)

    def restart(self, timeout=30):
        """Stop and start again with the same torrc (kept as it is: modules may have edited it)."""
        port = self.control_port
        self.stop()
        self.control_port = port
        self.proc = subprocess.Popen([TOR, "-f", str(self.torrc), "--defaults-torrc", "/dev/null"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not self._wait_ready(timeout):
            raise RuntimeError("tor did not restart; see %s" % (self.base / "tor.log"))
        return self

    def service_options(self):
        """tor's own options of each onion service it runs now, {directory name: {option: value}}
        (HiddenServicePort left out), read over the control port."""
        from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
        with connect(port=self.control_port) as ctl:
            lines = ctl.get_conf("HiddenServiceOptions")
        out, current = {}, None
        for key, value in lines:
            if key == "HiddenServiceDir":
                current = out.setdefault(os.path.basename(value), {})
            elif key != "HiddenServicePort":
                current[key] = value
        return out

    def log(self):
        try:
            return (self.base / "tor.log").read_text()
        except OSError:
            return ""

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
