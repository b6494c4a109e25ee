# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""atheris (libFuzzer) target: the control-reply framing and what the client does with replies.

Input: byte 0 picks the chunk size the fake socket hands out (1-256 bytes), the rest is the
stream tor would send. Every reply is read with small limits and fed to raise_for_status,
parse_key_values, parse_protocolinfo and parse_mapping. Only TorError may escape; anything
else (or a hang: libFuzzer's -timeout) is a crash. Run (see tests/fuzz/README.md):

    .venv/bin/python tests/fuzz/fuzz_reply.py -max_total_time=60 -timeout=10 CORPUS_DIR
"""

import sys

import atheris

from _setup import ChunkSocket, link_collection, write_seeds

link_collection()

with atheris.instrument_imports(include=["ansible_collections.onionlab.tor"]):
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import auth, reply
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.transport import ControlSocket

SEEDS = [
    b"\x07250-PROTOCOLINFO 1\r\n250-AUTH METHODS=COOKIE,SAFECOOKIE COOKIEFILE=\"/var/lib/tor/control_auth_cookie\"\r\n"
    b"250-VERSION Tor=\"0.4.9.1\"\r\n250 OK\r\n",
    b"\x03250-ServiceID=abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrstuvwx\r\n250-PrivateKey=ED25519-V3:AAAA\r\n"
    b"250 OK\r\n",
    b"\x40650 WARN something\r\n250+config-text=\r\nA 1\r\n..dot\r\n.\r\n250 OK\r\n",
    b"\x01250-HiddenServiceDir=/var/lib/tor/a\r\n250 HiddenServicePort=80 127.0.0.1:80\r\n552 Unrecognized key \"x\"\r\n",
    b"\x10250 AUTHCHALLENGE SERVERHASH=00 SERVERNONCE=\"\\x41\\101\"\r\n",
]


def TestOneInput(data):
    if not data:
        return
    sock = ControlSocket(ChunkSocket(data[1:], [data[0] + 1]), "fuzz", timeout=5, max_line=2048, max_reply=16384)
    try:
        for _ in range(len(data)):
            message = sock.recv_reply()
            for fn in (lambda m: m.raise_for_status("X"), reply.parse_key_values,
                       lambda m: reply.parse_key_values(m, unquote_values=False), auth.parse_protocolinfo,
                       lambda m: [reply.parse_mapping(line.text) for line in m.lines]):
                try:
                    fn(message)
                except TorError:
                    pass
    except TorError:
        pass


def main():
    corpus = [a for a in sys.argv[1:] if not a.startswith("-")]
    if corpus:
        write_seeds(corpus[0], SEEDS)
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
