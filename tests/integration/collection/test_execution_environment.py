# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Execution environments (issue 21): what the collection declares for ansible-builder, the EE
example of docs/examples/ee, and the site playbook run by ansible-runner from a project
directory with the collection installed from its Galaxy tarball.

No container engine is needed: `ansible-builder create` only writes the build context, the
galaxy stage of its Containerfile is replayed here (ansible-galaxy in the context's _build
directory, as WORKDIR /build), and ansible-runner runs with process isolation off.
"""

import ast
import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.ansible_run import _python, _tool

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "docs" / "examples" / "ee"
VERSION = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
TARBALL = "onionlab-tor-%s.tar.gz" % VERSION


def _env(**extra):
    env = dict(os.environ)
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)  # conftest's: the repository itself
    env.update({"ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "false", "ANSIBLE_NOCOLOR": "1",
                "PATH": "%s:%s" % (Path(_tool("ansible-playbook")).parent, env.get("PATH", ""))})
    env.update(extra)
    return env


def _run(cmd, cwd=None, env=None, timeout=300):
    r = subprocess.run([str(c) for c in cmd], cwd=str(cwd) if cwd else None, env=env or _env(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                       timeout=timeout)
    out = r.stdout.decode(errors="replace")
    assert r.returncode == 0, "%s -> rc %d:\n%s" % (" ".join(map(str, cmd)), r.returncode, out[-4000:])
    return out


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    """The collection as Galaxy gets it: ansible-galaxy collection build of this tree."""
    out = tmp_path_factory.mktemp("dist")
    _run([_tool("ansible-galaxy"), "collection", "build", "--output-path", out, REPO],
         env=_env(ANSIBLE_HOME=str(out / ".ansible")))
    path = out / TARBALL
    assert path.is_file()
    return path


def _install(tarball, dest):
    _run([_tool("ansible-galaxy"), "collection", "install", "--offline", "-p", dest, tarball],
         env=_env(ANSIBLE_HOME=str(Path(dest) / ".ansible")))
    installed = Path(dest) / "ansible_collections" / "onionlab" / "tor"
    assert (installed / "MANIFEST.json").is_file()
    return installed


def _introspect(path):
    out = _run([_tool("ansible-builder"), "introspect", path])
    return yaml.safe_load(out[out.index("---"):])


# ---------------------------------------------------------------------------
# meta/execution-environment.yml: what the collection needs on the controller
# ---------------------------------------------------------------------------

def _imported_modules(path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def test_controller_code_needs_only_stdlib_and_ansible_core():
    """The claim of meta/execution-environment.yml (no Python package, no system package): every
    plugin and module imports the standard library, ansible-core or this collection only."""
    meta = yaml.safe_load((REPO / "meta" / "execution-environment.yml").read_text())
    assert meta["version"] == 1
    deps = meta["dependencies"]
    assert sorted(deps) == ["python", "system"]
    for rel in deps.values():
        lines = [ln for ln in (REPO / rel).read_text().splitlines() if ln.strip() and not ln.startswith("#")]
        assert lines == [], "%s lists %s: update this test's claim and the guide" % (rel, lines)

    files = sorted(p for p in (REPO / "plugins").rglob("*.py") if "__pycache__" not in p.parts)
    assert any(p.parent.name == "filter" for p in files) and any(p.parent.name == "lookup" for p in files)
    foreign = {}
    for path in files:
        for mod in _imported_modules(path):
            root = mod.split(".")[0]
            if root in sys.stdlib_module_names or root == "__future__":
                continue
            if root == "ansible" or mod.startswith("ansible_collections.onionlab.tor."):
                continue
            foreign.setdefault(str(path.relative_to(REPO)), []).append(mod)
    assert foreign == {}


def test_introspect_installed_collection_finds_no_requirement(tarball, tmp_path):
    """ansible-builder introspect on the copy installed from the tarball: the metadata ships (not
    in build_ignore) and adds nothing; the same copy with one requirement added to
    meta/ee-requirements.txt is listed, so the files are really the ones ansible-builder reads."""
    installed = _install(tarball, tmp_path / "collections")
    for name in ("execution-environment.yml", "ee-requirements.txt", "ee-bindep.txt"):
        assert (installed / "meta" / name).read_bytes() == (REPO / "meta" / name).read_bytes()
    assert _introspect(tmp_path / "collections") == {"python": [], "system": []}

    with (installed / "meta" / "ee-requirements.txt").open("a") as f:
        f.write("jmespath>=1.0\n")
    with (installed / "meta" / "ee-bindep.txt").open("a") as f:
        f.write("tor [platform:rpm]\n")
    assert _introspect(tmp_path / "collections") == {
        "python": ["jmespath>=1.0  # from collection onionlab.tor"],
        "system": ["tor [platform:rpm]  # from collection onionlab.tor"]}


# ---------------------------------------------------------------------------
# docs/examples/ee/execution-environment.yml: ansible-builder create
# ---------------------------------------------------------------------------

def test_builder_create_context_installs_the_collection(tarball, tmp_path):
    ee = tmp_path / "ee"
    shutil.copytree(str(EXAMPLE), str(ee), ignore=shutil.ignore_patterns("runner", "context", "*.tar.gz"))
    shutil.copy2(str(tarball), str(ee / TARBALL))
    definition = yaml.safe_load((ee / "execution-environment.yml").read_text())
    assert definition["version"] == 3
    requirements = yaml.safe_load((ee / "requirements.yml").read_text())
    assert requirements["collections"] == [{"name": "collections/" + TARBALL, "type": "file"}], \
        "docs/examples/ee/requirements.yml names another tarball than galaxy.yml's version %s" % VERSION
    pins = dict(ln.split("==") for ln in (REPO / "requirements-dev.txt").read_text().splitlines()
                if "==" in ln and not ln.startswith("#"))
    assert definition["dependencies"]["ansible_core"]["package_pip"] == "ansible-core==" + pins["ansible-core"]
    assert definition["dependencies"]["ansible_runner"]["package_pip"] == "ansible-runner==" + pins["ansible-runner"]

    _run([_tool("ansible-builder"), "create", "--output-filename", "Containerfile", "-v3"], cwd=ee)
    context = ee / "context"
    containerfile = (context / "Containerfile").read_text()
    assert 'ARG ANSIBLE_INSTALL_REFS="ansible-core==%s ansible-runner==%s"' % (
        pins["ansible-core"], pins["ansible-runner"]) in containerfile
    assert "FROM base AS galaxy" in containerfile
    assert "COPY _build /build\nWORKDIR /build\n" in containerfile
    galaxy_step = [ln for ln in containerfile.splitlines() if "ansible-galaxy collection install" in ln]
    assert len(galaxy_step) == 1 and "-r requirements.yml" in galaxy_step[0], galaxy_step
    build = context / "_build"
    assert (build / "requirements.yml").read_text() == (EXAMPLE / "requirements.yml").read_text()
    assert (build / "collections" / TARBALL).read_bytes() == tarball.read_bytes()
    assert (build / "scripts" / "introspect.py").is_file()

    # The galaxy stage, replayed: in /build (= _build), the same install, offline.
    dest = tmp_path / "usr-share-ansible" / "collections"
    _run([_tool("ansible-galaxy"), "collection", "install", "--offline", "-r", "requirements.yml",
          "--collections-path", dest], cwd=build, env=_env(ANSIBLE_HOME=str(tmp_path / ".ansible")))
    manifest = json.loads((dest / "ansible_collections" / "onionlab" / "tor" / "MANIFEST.json").read_text())
    assert manifest["collection_info"]["version"] == VERSION
    # The builder stage's introspection (the context's own script) writes no requirement file.
    pip_out, bindep_out = tmp_path / "src" / "requirements.txt", tmp_path / "src" / "bindep.txt"
    _run([sys.executable, build / "scripts" / "introspect.py", "introspect", dest,
          "--write-pip", pip_out, "--write-bindep", bindep_out])
    assert not pip_out.exists() and not bindep_out.exists()


# ---------------------------------------------------------------------------
# ansible-runner: the site playbook from a project directory, and where the escrow lives
# ---------------------------------------------------------------------------

def _private_data_dir(tarball, base, inventory_vars):
    """A private data directory as AWX lays one out: the example project and settings, the
    collection installed from the tarball into requirements_collections, an inventory."""
    pdd = base / "pdd"
    shutil.copytree(str(EXAMPLE / "runner"), str(pdd), ignore=shutil.ignore_patterns("hosts.yml", "envvars", "artifacts", "requirements_collections"))
    collections = pdd / "requirements_collections"
    _install(tarball, collections)
    inventory = {"onion_hosts": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": _python()}},
        "vars": inventory_vars}}
    (pdd / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (pdd / "env" / "envvars").write_text(yaml.safe_dump({
        "ANSIBLE_COLLECTIONS_PATH": str(collections), "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "false",
        "ANSIBLE_HOME": str(pdd / ".ansible"), "ANSIBLE_GATHERING": "explicit"}))
    return pdd, collections


def _runner(pdd, ident):
    r = subprocess.run([_tool("ansible-runner"), "run", str(pdd), "-p", "site.yml", "--ident", ident],
                       env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       stdin=subprocess.DEVNULL, timeout=600)
    artifacts = pdd / "artifacts" / ident
    events = [json.loads(p.read_text()) for p in sorted((artifacts / "job_events").glob("*.json"),
                                                          key=lambda p: int(p.name.split("-")[0]))]
    return r.returncode, r.stdout.decode(errors="replace"), (artifacts / "status").read_text(), events


def test_runner_site_playbook_escrow_outlives_the_private_data_dir(tarball, tor, tmp_path):
    """ansible-runner runs the example site playbook (roles from the installed tarball, not this
    tree) against a real tor; the escrow is an absolute path outside the private data dir.
    The job's directory is then deleted, as an EE container's is, and the host loses its key:
    a second job from a fresh directory restores the same address from the escrow."""
    persistent = tmp_path / "persistent"
    escrow = persistent / "escrow"
    role_vars = {
        "onion_service_control_port": tor.control_port,
        "onion_service_dir": str(tmp_path / "svc"),
        "onion_service_tor_user": "root",
        "onion_service_config_file": str(tmp_path / "onionlab.conf"),
        "onion_service_backup_dir": str(escrow),
        "onion_service_summary_file": str(persistent / "onion-services.yml"),
        "onion_services": [{"name": "web", "ports": [{"port": 80, "target_port": 8080}]}],
    }
    (tmp_path / "svc").mkdir(mode=0o700)

    pdd, collections = _private_data_dir(tarball, tmp_path / "job1", role_vars)
    rc, out, status, events = _runner(pdd, "job1")
    assert (rc, status) == (0, "successful"), out[-4000:]
    installed = str(collections / "ansible_collections" / "onionlab" / "tor" / "roles" / "onion_service")
    role_tasks = [e["event_data"]["task_path"] for e in events
                  if e.get("event") == "runner_on_ok" and "/roles/onion_service/" in e["event_data"].get("task_path", "")]
    assert role_tasks and all(p.startswith(installed + "/") for p in role_tasks), role_tasks[:3]
    key = escrow / "localhost" / "web" / "hs_ed25519_secret_key"
    secret = key.read_bytes()
    assert secret == (tmp_path / "svc" / "web" / "hs_ed25519_secret_key").read_bytes()
    # Neither the job's output nor the events AWX would store hold the key, in any form.
    events_text = "".join(p.read_text() for p in (pdd / "artifacts" / "job1" / "job_events").glob("*.json"))
    for form in (secret[32:].hex(), base64.b64encode(secret[32:]).decode(), base64.b64encode(secret).decode()):
        assert form not in out and form not in events_text
    address = yaml.safe_load((persistent / "onion-services.yml").read_text())[0]["onion_address"]

    shutil.rmtree(str(tmp_path / "job1"))  # the EE container and its /runner are gone
    shutil.rmtree(str(tmp_path / "svc" / "web"))  # and the host lost the service's key
    assert key.read_bytes() == secret

    pdd, _ = _private_data_dir(tarball, tmp_path / "job2", role_vars)
    rc, out, status, _ = _runner(pdd, "job2")
    assert (rc, status) == (0, "successful"), out[-4000:]
    assert (tmp_path / "svc" / "web" / "hs_ed25519_secret_key").read_bytes() == secret
    assert yaml.safe_load((persistent / "onion-services.yml").read_text())[0]["onion_address"] == address


def test_runner_site_playbook_refuses_an_escrow_inside_the_job(tarball, tor, tmp_path):
    """Without onion_service_backup_dir the role would escrow under {{ playbook_dir }}, inside the
    job's directory: the site playbook stops before the role changes anything."""
    role_vars = {
        "onion_service_control_port": tor.control_port,
        "onion_service_dir": str(tmp_path / "svc"),
        "onion_service_tor_user": "root",
        "onion_service_config_file": str(tmp_path / "onionlab.conf"),
        "onion_services": [{"name": "web", "ports": [{"port": 80, "target_port": 8080}]}],
    }
    (tmp_path / "svc").mkdir(mode=0o700)
    for name, extra in (("unset", {}), ("inside", {"onion_service_backup_dir": "{{ playbook_dir }}/onion-keys"})):
        pdd, _ = _private_data_dir(tarball, tmp_path / name, dict(role_vars, **extra))
        rc, out, status, _ = _runner(pdd, name)
        assert (rc, status) != (0, "successful")
        assert "onion_service_backup_dir must be an absolute path outside the project" in out, out[-3000:]
        assert list((tmp_path / "svc").iterdir()) == []
        assert not (pdd / "project" / "onion-keys").exists()
        assert not (tmp_path / "onionlab.conf").exists()
