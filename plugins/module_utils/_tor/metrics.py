# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor's MetricsPort (Prometheus text, over http.client), for what the control port does not say: the effort an
onion service with proof of work currently suggests to its clients.

This is a private module_utils file of onionlab.tor; its API may change at any time.

tor (0.4.8 and later) writes one line per PoW service, labelled with its address without .onion:

    tor_hs_pow_suggested_effort{onion="5vt2f6p3...nsid"} 0

The port needs `MetricsPort 127.0.0.1:PORT` and `MetricsPortPolicy accept 127.0.0.1` in torrc.
"""

from __future__ import annotations

import re

import math
from http.client import HTTPConnection, HTTPException, HTTPSConnection
from urllib.parse import urlparse

from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError

SUGGESTED_EFFORT = "tor_hs_pow_suggested_effort"
MAX_BYTES = 16 * 1024 * 1024
_LINE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}\s+(\S+)')
_LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


class MetricsError(TorError):
    """The MetricsPort could not be read."""


def check_url(url):
    parsed = urlparse(url or "")
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise MetricsError("metrics_url must be an http:// URL of tor's MetricsPort, such as "
                           "http://127.0.0.1:9035/metrics, got %r" % (url,))
    return url


def suggested_efforts(text):
    """{service id (no .onion): suggested effort} from a MetricsPort page."""
    efforts = {}
    for line in text.splitlines():
        if not line.startswith(SUGGESTED_EFFORT + "{"):
            continue
        m = _LINE_RE.match(line)
        if not m or m.group(1) != SUGGESTED_EFFORT:
            continue
        labels = dict(_LABEL_RE.findall(m.group(2)))
        sid = labels.get("onion", "")
        sid = sid[:-len(".onion")] if sid.endswith(".onion") else sid
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        if sid and not math.isnan(value) and value >= 0:   # NaN and negatives are not efforts
            efforts[sid] = int(value)
    return efforts


def fetch(url, timeout=10.0):
    """The body of a GET of url, or MetricsError. http.client, because module_utils/_tor imports
    nothing of Ansible (whose open_url the sanity tests want instead of urllib's opener)."""
    parsed = urlparse(check_url(url))
    connection_class = HTTPSConnection if parsed.scheme == "https" else HTTPConnection
    connection = connection_class(parsed.hostname, parsed.port, timeout=timeout)
    try:
        connection.request("GET", (parsed.path or "/") + ("?" + parsed.query if parsed.query else ""))
        response = connection.getresponse()
        body = response.read(MAX_BYTES)
        if response.status != 200:
            raise MetricsError("cannot read tor's MetricsPort at %s: HTTP %d %s" % (url, response.status,
                                                                                    response.reason))
    except (OSError, HTTPException, ValueError) as exc:
        raise MetricsError("cannot read tor's MetricsPort at %s: %s (torrc needs MetricsPort and a "
                           "MetricsPortPolicy that accepts this host)" % (url, getattr(exc, "strerror", None) or exc))
    finally:
        connection.close()
    return body.decode("utf-8", "replace")


def read_suggested_efforts(url, timeout=10.0):
    """Fetch url (tor's MetricsPort) and return suggested_efforts() of it, or MetricsError."""
    return suggested_efforts(fetch(url, timeout))
