# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runnable code of the docs, as printed: YAML code blocks of the guides and the example files.

    from harness.doc_blocks import doc_blocks
    for block in doc_blocks():
        block.guide, block.number, block.line, block.kind, block.skip, block.playbook_text()

Sources, in order:

* every ``docs/docsite/rst/*.rst``: each ``.. code-block:: yaml`` or ``.. code-block:: yaml+jinja``
  (other languages, ``console`` or ``text``, are not Ansible and are left out), its text dedented;
* every ``docs/examples/*.yml``: the whole file is one block.

Marks: rst comments right before a block (blank lines aside), not rendered, printed by the test:

* ``.. onionlab-doc-test: skip (REASON)``: not run (in an example file: a line
  ``# onionlab-doc-test: skip (REASON)``); keep these rare.
* ``.. onionlab-doc-test: changes every run (REASON)``: its second run may report changes.
* ``.. onionlab-doc-test: given GUIDE#N``: the state the block starts from is what block N of
  GUIDE makes (the guide says so in its text): that block is run first.
* ``.. onionlab-doc-test: given a fresh host``: the block starts on a host as the guide's first
  block found it (e.g. a restore onto another host): the test puts the host back first.

What a block is (``kind``), decided from its YAML alone, and what is run (``playbook_text()``):

* ``play``: a list of mappings that all have ``hosts``: run as printed.
* ``tasks``: a list of mappings without ``hosts``: the printed text, indented, becomes the
  ``tasks:`` of one play ``{hosts: all, gather_facts: false, become: true}`` (a task shown
  alone runs in the reader's play; every play of the guides runs as root).
* ``file``: a mapping whose first line is a comment naming a file of an inventory or playbook
  directory (``# host_vars/web1.yml``, ``# group_vars/all/vault.yml``): written to that path
  (``file_path``) of the inventory directory; nothing runs. Later blocks of the guide see it.
* ``role_vars``: a mapping whose keys are all options of one role's ``meta/argument_specs.yml``:
  the printed text becomes that role's ``vars`` in one play ``{hosts: all, gather_facts: false,
  become: true}``.
* ``other``: anything else (a fragment); it cannot run and must be fixed or marked skip.

Plain Python (yaml from Ansible's own dependency PyYAML), no Ansible import.
"""

import re
import textwrap
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
RST_DIR = REPO / "docs" / "docsite" / "rst"
EXAMPLES_DIR = REPO / "docs" / "examples"
ROLES_DIR = REPO / "roles"

LANGUAGES = ("yaml", "yaml+jinja")
_DIRECTIVE = re.compile(r"^(\s*)\.\. code-block::\s*(\S+)\s*$")
_RST_MARK = re.compile(r"^\s*\.\. onionlab-doc-test: (.+?)\s*$")
_SKIP = re.compile(r"^skip \((.+)\)$")
_CHANGES = re.compile(r"^changes every run \((.+)\)$")
_GIVEN = re.compile(r"^given (a fresh host|[\w/.-]+#\d+)$")
_YAML_SKIP = re.compile(r"^\s*# onionlab-doc-test: skip \((.+)\)\s*$")
_FILE_HEADER = re.compile(r"^#\s*((?:host_vars|group_vars)/[\w./-]+\.ya?ml)\b")
_WRAP = "- hosts: all\n  gather_facts: false\n  become: true\n"


def role_options():
    """{role name: set of its main entry point's option names}."""
    out = {}
    for spec in sorted(ROLES_DIR.glob("*/meta/argument_specs.yml")):
        try:
            data = yaml.safe_load(spec.read_text()) or {}
        except yaml.YAMLError:
            continue  # a spec that does not parse owns no block (its own tests say why)
        main = (data.get("argument_specs") or {}).get("main") or {}
        out[spec.parents[1].name] = set(main.get("options") or {})
    return out


class Block(object):
    def __init__(self, source, guide, number, line, lang, text, skip, marks=()):
        self.source = source      # path relative to the repository
        self.guide = guide        # file name without suffix
        self.number = number      # 1-based, among the guide's YAML blocks
        self.line = line          # 1-based line of the directive (1 for an example file)
        self.lang = lang
        self.text = text
        self.skip = skip          # the reason, or None
        self.changes_every_run = None   # the reason, or None
        self.given = []           # "a fresh host" or "GUIDE#N", in order
        for mark in marks:
            m = _SKIP.match(mark) or _CHANGES.match(mark) or _GIVEN.match(mark)
            if not m:
                raise ValueError("%s line %d: unknown mark '.. onionlab-doc-test: %s'" % (source, line, mark))
            if m.re is _SKIP:
                self.skip = m.group(1)
            elif m.re is _CHANGES:
                self.changes_every_run = m.group(1)
            else:
                self.given.append(m.group(1))
        self.kind, self.file_path, self.role = self._classify()

    @property
    def label(self):
        return "%s#%d" % (self.guide, self.number)

    def _classify(self):
        try:
            data = yaml.safe_load(self.text)
        except yaml.YAMLError as exc:
            return "other", None, "not YAML: %s" % exc
        if isinstance(data, list) and data and all(isinstance(x, dict) for x in data):
            if all("hosts" in x for x in data):
                return "play", None, None
            if not any("hosts" in x for x in data) and all(_looks_like_task(x) for x in data):
                return "tasks", None, None
            return "other", None, None
        if isinstance(data, dict) and data:
            first = self.text.lstrip().splitlines()[0]
            m = _FILE_HEADER.match(first)
            if m:
                return "file", m.group(1), None
            owners = [name for name, opts in role_options().items() if set(data) <= opts]
            if len(owners) == 1:
                return "role_vars", None, owners[0]
        return "other", None, None

    def playbook_text(self):
        """The playbook that runs this block (None for ``file`` and ``other``)."""
        if self.kind == "play":
            return self.text
        if self.kind == "tasks":
            return _WRAP + "  tasks:\n" + textwrap.indent(self.text, "    ")
        if self.kind == "role_vars":
            return (_WRAP + "  roles:\n    - role: onionlab.tor.%s\n      vars:\n" % self.role
                    + textwrap.indent(self.text, "        "))
        return None

    def __repr__(self):
        return "Block(%s line %d, %s%s)" % (self.label, self.line, self.kind,
                                           ", skip: %s" % self.skip if self.skip else "")


def _looks_like_task(item):
    """A task has a name or a module: a key with a dot (FQCN) or one of Ansible's block keywords."""
    return any("." in k or k in ("block", "include_tasks", "import_tasks", "include_role", "import_role")
               for k in item)


def _rel(path):
    """The path relative to the repository (as given when it is outside)."""
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def rst_blocks(path):
    lines = Path(path).read_text().splitlines()
    guide = Path(path).stem
    out = []
    i = 0
    while i < len(lines):
        m = _DIRECTIVE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = len(m.group(1)), m.group(2)
        start = i
        j = i + 1
        while j < len(lines) and lines[j].strip().startswith(":") and lines[j].strip():
            j += 1  # directive options (:caption: ...)
        body = []
        while j < len(lines):
            line = lines[j]
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            body.append(line)
            j += 1
        i = j
        if lang not in LANGUAGES:
            continue
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        text = textwrap.dedent("\n".join(body)) + "\n"
        marks = []
        k = start - 1
        while k >= 0 and (not lines[k].strip() or _RST_MARK.match(lines[k])):
            if lines[k].strip():
                marks.insert(0, _RST_MARK.match(lines[k]).group(1))
            k -= 1
        out.append(Block(_rel(path), guide, len(out) + 1, start + 1, lang, text, None,
                         marks))
    return out


def example_block(path):
    text = Path(path).read_text()
    skip = None
    for line in text.splitlines():
        s = _YAML_SKIP.match(line)
        if s:
            skip = s.group(1)
    return Block(_rel(path), "examples/" + Path(path).stem, 1, 1, "yaml", text, skip)


def doc_blocks():
    """Every YAML block of the guides, then every example file."""
    out = []
    for rst in sorted(RST_DIR.glob("*.rst")):
        out += rst_blocks(rst)
    for example in sorted(EXAMPLES_DIR.glob("*.yml")):
        out.append(example_block(example))
    return out


if __name__ == "__main__":
    for b in doc_blocks():
        print("%-40s line %4d  %-9s %s" % (b.label, b.line, b.kind, " ".join(
            ["skip: " + b.skip] if b.skip else [] + ["given: %s" % g for g in b.given])))
