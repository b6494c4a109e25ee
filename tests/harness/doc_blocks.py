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
* ``.. onionlab-doc-test: check after the first run (REASON)``: its ``--check`` runs after its first
  run, not before (what check mode needs exists only after a real run, e.g. a key made on a host).
* ``.. onionlab-doc-test: given GUIDE#N``: the state the block starts from is what block N of
  GUIDE makes (the guide says so in its text): that block is run first.
* ``.. onionlab-doc-test: given a fresh host``: the block starts on a host as the guide's first
  block found it (e.g. a restore onto another host): the test puts the host back first.
* ``.. onionlab-doc-test: after #N (REASON)``: the block runs right after block N of its guide
  instead of in its place (a play shown before the one that makes what it needs, e.g. the frontend
  play of a guide before the whole sequence).
* ``.. onionlab-doc-test: fragment of FILE, then #N``: the block is a part of the YAML file FILE
  written by an earlier block (``host_vars/web1.yml``): its keys replace the same keys of the first
  mapping in FILE that has them all, and block N (the play that reads FILE) runs again.
* ``.. onionlab-doc-test: torrc lines`` before a ``code-block:: text``: lines the guide tells the
  reader to put in torrc; they are appended to ``/etc/tor/torrc`` of the guide's hosts and tor is
  restarted (kind ``torrc``).

What a block is (``kind``), decided from its YAML alone, and what is run (``playbook_text()``):

* ``play``: a list of mappings that all have ``hosts`` (or are an ``import_playbook``, e.g. of a playbook
  of the collection): run as printed.
* ``tasks``: a list of mappings without ``hosts``: the printed text, indented, becomes the
  ``tasks:`` of one play ``{hosts: all, gather_facts: false, become: true}`` (a task shown
  alone runs in the reader's play; every play of the guides runs as root).
* ``file``: a mapping whose first line is a comment naming a file of an inventory or playbook
  directory (``# host_vars/web1.yml``, ``# group_vars/all/vault.yml``): written to that path
  (``file_path``) of the inventory directory; nothing runs. Later blocks of the guide see it.
* ``role_vars``: a mapping whose keys are all options of one role's ``meta/argument_specs.yml``:
  the printed text becomes that role's ``vars`` in one play ``{hosts: all, gather_facts: false,
  become: true}``.
* ``torrc``: a ``text`` block marked ``torrc lines`` (above).
* ``fragment``: a block marked ``fragment of FILE, then #N`` (above).
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
TORRC_LANGUAGES = ("text",)  # taken only when marked 'torrc lines'
_DIRECTIVE = re.compile(r"^(\s*)\.\. code-block::\s*(\S+)\s*$")
_RST_MARK = re.compile(r"^\s*\.\. onionlab-doc-test: (.+?)\s*$")
_SKIP = re.compile(r"^skip \((.+)\)$")
_CHANGES = re.compile(r"^changes every run \((.+)\)$")
_CHECK_AFTER = re.compile(r"^check after the first run \((.+)\)$")
_GIVEN = re.compile(r"^given (a fresh host|[\w/.-]+#\d+)$")
_AFTER = re.compile(r"^after #(\d+) \((.+)\)$")
_FRAGMENT = re.compile(r"^fragment of ((?:host_vars|group_vars)/[\w./-]+\.ya?ml), then #(\d+)$")
_TORRC = re.compile(r"^torrc lines$")
_YAML_SKIP = re.compile(r"^\s*# onionlab-doc-test: skip \((.+)\)\s*$")
_FILE_HEADER = re.compile(r"^#\s*((?:host_vars|group_vars)/[\w./-]+\.ya?ml)\b")
_IMPORT_PLAYBOOK = {"import_playbook", "ansible.builtin.import_playbook"}   # a play too (the collection's playbooks)
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
        self.after = None         # (N, reason): runs right after block N of the guide
        self.fragment = None      # (FILE, N): replaces keys of FILE, then block N runs
        self.torrc = False        # text block of torrc lines
        self.check_after_run = None  # the reason, or None
        for mark in marks:
            m = (_SKIP.match(mark) or _CHANGES.match(mark) or _GIVEN.match(mark) or _AFTER.match(mark)
                 or _FRAGMENT.match(mark) or _TORRC.match(mark) or _CHECK_AFTER.match(mark))
            if not m:
                raise ValueError("%s line %d: unknown mark '.. onionlab-doc-test: %s'" % (source, line, mark))
            if m.re is _SKIP:
                self.skip = m.group(1)
            elif m.re is _CHANGES:
                self.changes_every_run = m.group(1)
            elif m.re is _AFTER:
                self.after = (int(m.group(1)), m.group(2))
            elif m.re is _FRAGMENT:
                self.fragment = (m.group(1), int(m.group(2)))
            elif m.re is _TORRC:
                self.torrc = True
            elif m.re is _CHECK_AFTER:
                self.check_after_run = m.group(1)
            else:
                self.given.append(m.group(1))
        if self.torrc and lang != "text":
            raise ValueError("%s line %d: 'torrc lines' marks a code-block:: text" % (source, line))
        self.kind, self.file_path, self.role = self._classify()

    @property
    def label(self):
        return "%s#%d" % (self.guide, self.number)

    def _classify(self):
        if self.torrc:
            return "torrc", None, None
        if self.fragment:
            return "fragment", self.fragment[0], None
        try:
            data = yaml.safe_load(self.text)
        except yaml.YAMLError as exc:
            return "other", None, "not YAML: %s" % exc
        if isinstance(data, list) and data and all(isinstance(x, dict) for x in data):
            if all("hosts" in x or _IMPORT_PLAYBOOK & set(x) for x in data):
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

    def torrc_lines(self):
        """The torrc lines of a ``torrc`` block."""
        return [line.strip() for line in self.text.splitlines() if line.strip()] if self.kind == "torrc" else []

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
        if lang not in LANGUAGES + TORRC_LANGUAGES:
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
        if lang in TORRC_LANGUAGES and "torrc lines" not in marks:
            continue
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


def run_order(blocks):
    """One guide's blocks in the order they run: a block marked ``after #N`` right after block N
    (after the blocks already moved there)."""
    moved = [b for b in blocks if b.after]
    out = [b for b in blocks if not b.after]
    for b in moved:
        targets = [i for i, x in enumerate(out) if x.number == b.after[0]]
        if not targets:
            raise ValueError("%s: after #%d: no such block in %s" % (b.label, b.after[0], b.guide))
        i = targets[0] + 1
        while i < len(out) and out[i].after and out[i].after[0] == b.after[0]:
            i += 1
        out.insert(i, b)
    return out


def doc_blocks():
    """Every YAML block of the guides (and the text blocks marked torrc lines), then every example file."""
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
