# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""atheris (libFuzzer) target: tor's MetricsPort answers (metrics.py).

Input: the bytes a MetricsPort would send after our GET, whole HTTP answer included. They go through the
answer's split and chunked decoding (as fetch() does), then the page through parse(), onion_services() with
every sample kept, and suggested_efforts(). Only MetricsError (a TorError) may escape; anything else (or a
hang: libFuzzer's -timeout) is a crash. Run (see tests/fuzz/README.md):

    .venv/bin/python tests/fuzz/fuzz_metrics.py -max_total_time=60 -timeout=10 CORPUS_DIR
"""

import sys

import atheris

from _setup import REPO, link_collection, write_seeds

link_collection()

with atheris.instrument_imports(include=["ansible_collections.onionlab.tor"]):
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import metrics

REAL = (REPO / "tests" / "unit" / "plugins" / "module_utils" / "data" / "metricsport-tor-0.4.9.11.prom").read_bytes()
SEEDS = [
    b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n" + REAL[:6000],
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1a\r\n# TYPE h histogram\nh_bucket\r\n"
    b"12\r\n{le=\"+Inf\"} 1 -5\n\r\n0\r\n\r\n",
    b'HTTP/1.0 200 OK\r\n\r\n# HELP m a\\\\b\\n\nm{a="x\\\\y\\"z\\nw",onion="o"} NaN\nm{onion="o"} +Inf 17\n',
    b"HTTP/1.0 404 Not Found\r\n\r\n",
]


def TestOneInput(data):
    try:
        status, _reason, headers, body = metrics._split_response("http://fuzz/", data)
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = metrics._dechunk("http://fuzz/", body)
        text = body.decode("utf-8", "replace")
        metrics.suggested_efforts(text)
        page = metrics.parse(text)
        metrics.onion_services(page, prefix="")
        metrics.onion_services(page, names=["m", "tor_hs_rdv_num_total"])
    except metrics.MetricsError:
        pass


def main():
    corpus = [a for a in sys.argv[1:] if not a.startswith("-")]
    if corpus:
        write_seeds(corpus[0], SEEDS)
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
