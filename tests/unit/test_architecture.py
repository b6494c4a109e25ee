# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/architecture.md kept true (issue 41): its layering claims checked against the imports of the code (read with
ast, nothing imported), and its map against the files. What is checked here, claim by claim:

- "Nothing under plugins/module_utils/_tor/ imports Ansible": every import of the library is the standard library's
  or the library's own; the watchdog program (module_utils/_onion_watchdog.py), shipped to hosts with the library
  alone, imports only those too.
- "a layer uses the ones below it, never one above": the protocol layers (transport, reply, auth, client and the
  helpers the map says every level uses) never import a manager, and the library has no import circle (a circle
  hides a layer that uses one above it: config_value and torrc had one).
- The target side never imports the controller side: modules and module_utils never import plugin_utils, action,
  filter or lookup plugins (they are not shipped to a host).
- No function of plugins/ is over 80 lines.
- The map names every file of the library, the glue, the modules, the controller side and the harness; every
  ``name.py`` it names exists.
"""

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "plugins"
LIBRARY = PLUGINS / "module_utils" / "_tor"
PREFIX = "ansible_collections.onionlab.tor.plugins."
LIB = PREFIX + "module_utils._tor"
MAP = (ROOT / "docs" / "architecture.md").read_text()
# the protocol layers, lowest first, and the data helpers that the map says every level uses
PROTOCOL = ["errors", "reply", "transport", "auth", "client"]
EVERY_LEVEL = {"errors", "reply", "advice", "onion"}


def _imports(path):
    """Every module name path imports (from X import Y gives X.Y when X is a package of ours)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module == LIB:
                out.update("%s.%s" % (LIB, a.name) for a in node.names)
            else:
                out.add(node.module)
    return out


def _library_deps():
    """{library module: set of library modules it imports}."""
    deps = {}
    for path in sorted(LIBRARY.glob("*.py")):
        deps[path.stem] = {name[len(LIB) + 1:].split(".")[0] for name in _imports(path)
                           if name.startswith(LIB + ".")}
    return deps


def test_library_imports_only_the_standard_library_and_itself():
    foreign = {}
    for path in sorted(LIBRARY.glob("*.py")):
        bad = sorted(name for name in _imports(path) if not name.startswith(LIB + ".") and name != "__future__"
                     and name.split(".")[0] not in sys.stdlib_module_names)
        if bad:
            foreign[path.name] = bad
    assert not foreign, "the library imports beyond the standard library: %s" % foreign


def test_the_watchdog_program_imports_only_the_standard_library_and_the_library():
    """The onion_watchdog role ships module_utils/_onion_watchdog.py with _tor/ and nothing else to the host."""
    path = PLUGINS / "module_utils" / "_onion_watchdog.py"
    bad = sorted(name for name in _imports(path) if not name.startswith(LIB + ".") and name != "__future__"
                 and name.split(".")[0] not in sys.stdlib_module_names)
    assert not bad, "the watchdog program imports beyond the standard library and _tor: %s" % bad
    assert not any(name == LIB + ".watchdog" for path in LIBRARY.glob("*.py") for name in _imports(path))


def test_library_has_no_import_circle():
    deps = _library_deps()
    circles = []

    def visit(node, path):
        for dep in sorted(deps.get(node, ())):
            if dep in path:
                circle = path[path.index(dep):] + [dep]
                if sorted(circle[:-1]) not in [sorted(c[:-1]) for c in circles]:
                    circles.append(circle)
            else:
                visit(dep, path + [dep])

    for module in deps:
        visit(module, [module])
    assert not circles, "import circles in the library: %s" % [" -> ".join(c) for c in circles]


@pytest.mark.parametrize("layer", PROTOCOL)
def test_protocol_layers_use_only_the_layers_below(layer):
    below = set(PROTOCOL[:PROTOCOL.index(layer)]) | EVERY_LEVEL
    above = sorted(_library_deps()[layer] - below - {layer})
    assert not above, "%s.py imports %s: not a layer below it (%s)" % (layer, above, sorted(below))


def test_target_side_never_imports_the_controller_side():
    controller = tuple(PREFIX + part for part in ("plugin_utils", "action", "filter", "lookup"))
    found = {}
    for path in sorted((PLUGINS / "modules").glob("*.py")) + sorted((PLUGINS / "module_utils").rglob("*.py")):
        bad = sorted(name for name in _imports(path) if name.startswith(controller))
        if bad:
            found[str(path.relative_to(ROOT))] = bad
    assert not found, "shipped to hosts but importing controller code: %s" % found


@pytest.mark.parametrize("folder", ["plugins/module_utils/_tor", "plugins/module_utils", "plugins/modules",
                                    "plugins/plugin_utils", "plugins/action", "plugins/filter", "plugins/lookup",
                                    "tests/harness"])
def test_the_map_names_every_file(folder):
    missing = [p.name for p in sorted((ROOT / folder).glob("*.py"))
               if p.name != "__init__.py" and "`%s`" % p.name not in MAP and "`%s" % p.name not in MAP
               and "%s.py" % p.stem not in MAP]
    assert not missing, "docs/architecture.md does not say what these files of %s hold: %s" % (folder, missing)


def test_every_file_the_map_names_exists():
    names = set(re.findall(r"`(?:[\w./-]*/)?(\w+\.py)", MAP))
    present = {p.name for p in ROOT.rglob("*.py") if ".venv" not in p.parts and ".build" not in p.parts}
    gone = sorted(names - present)
    assert not gone, "docs/architecture.md names files that do not exist: %s" % gone


def test_no_function_of_the_plugins_is_over_80_lines():
    """Issue 41: small functions (Stem's median is about 10 lines; a function over 80 held several decisions)."""
    long = []
    for path in sorted(PLUGINS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 80:
                long.append("%s:%s (%d lines)" % (path.relative_to(ROOT), node.name, node.end_lineno - node.lineno + 1))
    assert not long, "functions over 80 lines: %s" % long
