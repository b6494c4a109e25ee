# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run all_modules.yml against a throwaway tor with only the installed collection visible, with
the ansible-playbook of the given bin directory (an ansible-core of the tested range); fail
unless the play succeeded with that ansible-core and the modules came from the installed copy.

Usage: run_installed.py COLLECTIONS_PATH ANSIBLE_BIN_DIR"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from harness.data import CONSENSUS_DIR  # noqa: E402
from harness.ports import free_port  # noqa: E402
from harness.tor_instance import TorInstance  # noqa: E402


def main(collections, bin_dir):
    playbook = os.path.join(bin_dir, "ansible-playbook")
    version = subprocess.run([playbook, "--version"], stdout=subprocess.PIPE,
                             universal_newlines=True, check=True).stdout.splitlines()[0]
    print("-- all_modules.yml with %s (%s)" % (version, bin_dir))
    base = Path(tempfile.mkdtemp(prefix="onionlab-installed-"))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_NOCOLOR="1",
               PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    consensus = CONSENSUS_DIR / "2022-11-19-cached-microdesc-consensus"
    metrics_port = free_port()      # nothing listens there: this tor has DisableNetwork 1, which opens no MetricsPort
    with TorInstance(base / "tor") as tor:
        extra = {"tor_control_port": tor.control_port, "work_dir": str(base), "consensus_file": str(consensus),
                 "tor_metrics_port": metrics_port}
        proc = subprocess.run([playbook, "-i", "localhost,", "-c", "local", "-v", str(HERE / "all_modules.yml"),
                               "-e", json.dumps(extra)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True)
    print(proc.stdout[-4000:])
    if proc.returncode != 0:
        return proc.returncode
    installed = os.path.join(collections, "ansible_collections", "onionlab", "tor")
    if installed not in proc.stdout and "onionlab.tor" not in proc.stdout:
        print("the run does not show the installed collection")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
