# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Role templates and task expressions rendered by Ansible's own Templar (the collection's filters found through
its collection loader, as in a play), in a child process: the loader never enters the test process.

    render([{"template": "roles/tor/templates/torrc.j2", "vars": {...}},
            {"data": {"options": "{{ tor_options }}"}, "vars": {...}}])
    -> [{"text": "..."} or {"value": ...} or {"error": "..."}, ...] in the same order

"data" is any structure of strings (a task's arguments as a role file has them), templated as a play does. The
strings of "vars" are trusted as a role's files are (a default that names another variable is templated when
used). All jobs run in one child (about a second for Ansible's start, then milliseconds each)."""

import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def render(jobs, timeout=120):
    p = subprocess.run([sys.executable, os.path.abspath(__file__)], input=json.dumps(jobs), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout, cwd=REPO)
    if p.returncode != 0:
        raise RuntimeError("the template child failed (exit status %d): %s" % (p.returncode, p.stderr[-3000:]))
    return json.loads(p.stdout)


def _child():
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import init_plugin_loader
    from ansible.template import Templar, trust_as_template

    def trusted(data):
        if isinstance(data, str):
            return trust_as_template(data)
        if isinstance(data, dict):
            return dict((key, trusted(value)) for key, value in data.items())
        if isinstance(data, list):
            return [trusted(item) for item in data]
        return data

    init_plugin_loader()
    loader = DataLoader()
    out = []
    for job in json.load(sys.stdin):
        templar = Templar(loader=loader, variables=trusted(job.get("vars") or {}))
        try:
            if job.get("template"):
                with open(os.path.join(REPO, job["template"])) as handle:
                    out.append({"text": templar.template(trust_as_template(handle.read()))})
            else:
                value = templar.template(trusted(job["data"]))
                out.append({"value": json.loads(json.dumps(value, default=str))})
        except Exception as exc:  # the refusal is the answer: a filter's or Ansible's message
            out.append({"error": "%s: %s" % (type(exc).__name__, exc)})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    _child()
