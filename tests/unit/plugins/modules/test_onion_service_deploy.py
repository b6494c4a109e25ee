# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""onion_service_deploy end to end without tor: the action plugin's controller part (plugins/action, the escrow in
a temporary directory) and the module's main() on the "host" (conftest.py's runner, against the stateful fake
control port). Issue 42: a key restored on a rebuilt host gives the escrowed address, checked on the controller
before it is sent; a swapped, truncated or linked escrowed key is a refusal that names the service and the host
and leaves the host untouched (no directory, no key, no change of tor's services or of the drop-in).

The same restore against a real tor through ansible-playbook: tests/integration/roles/test_role_onion_service.py
(test_vault_key_escrow_restore_prune)."""

import copy
import json
import os
import shutil
import types

import pytest

from ansible_collections.onionlab.tor.plugins.action import onion_service_deploy as action
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.modules import onion_service_deploy as module
from ansible_collections.onionlab.tor.plugins.plugin_utils import escrow as esc

HOST = "web1"
SERVICES = [{"name": "web", "ports": [{"port": 80, "target_port": 8080}]},
            {"name": "blog", "ports": [{"port": 80, "target_port": 8081}]}]


class Action(action.ActionModule):
    """The action plugin's controller part, its one run of the module being main() in this process."""

    def __init__(self, runner):   # no ActionBase: _deploy needs only the task's check mode and _run_module
        self._task = types.SimpleNamespace(check_mode=False)
        self.runner = runner
        self.module_runs = 0

    def _run_module(self, module_args, task_vars):
        self.module_runs += 1
        return dict(self.runner.run(module, **copy.deepcopy(module_args)))


def task_args(fake, tmp_path, **over):
    args = dict((k, copy.deepcopy(v.get("default"))) for k, v in action.TASK_SPEC.items())
    args.update(services=copy.deepcopy(SERVICES), service_dir=str(tmp_path / "svc"),
                backup_dir=str(tmp_path / "escrow"), control_port=fake.port, pow_supported=False,
                config_file=str(tmp_path / "torrc.d" / "onionlab.conf"))
    args.update(over)
    return args


def deploy(runner, fake, tmp_path, **over):
    """(the action's result, or the _Fail's message; how many times the host was asked)."""
    act = Action(runner)
    try:
        out = act._deploy(task_args(fake, tmp_path, **over), HOST, {"groups": {"all": [HOST]}})
    except action._Fail as exc:
        out = exc.msg
    fake.settle()
    return out, act.module_runs


def host_state(tmp_path, fake):
    """Everything of the host's that a run could change: the service tree (names, bytes), tor's services, the
    drop-in."""
    tree = {}
    for top, dirs, files in os.walk(str(tmp_path / "svc")):
        for name in dirs + files:
            path = os.path.join(top, name)
            tree[path] = open(path, "rb").read() if name in files else None
    drop_in = tmp_path / "torrc.d" / "onionlab.conf"
    return tree, list(fake.hs_block), drop_in.read_text() if drop_in.exists() else None


def secret_text(key_file):
    """The start of a key file's key as an ADD_ONION blob shows it: never in a message."""
    return onion.key_blob(key_file[len(onion.SECRET_HEADER):]).split(":")[1][:24]


def escrowed(tmp_path, name, filename=esc.KEY_FILE):
    return tmp_path / "escrow" / HOST / name / filename


def rebuilt_host(tmp_path, fake):
    """The host as a rebuild leaves it: no service directory, tor runs no service, no drop-in."""
    shutil.rmtree(str(tmp_path / "svc"))
    (tmp_path / "svc").mkdir(mode=0o700)
    fake.hs_block = []
    os.unlink(str(tmp_path / "torrc.d" / "onionlab.conf"))


@pytest.fixture
def first(runner, fake, tmp_path):
    """A first run: each service's key made on the host, escrowed with its hostname; their addresses."""
    (tmp_path / "svc").mkdir(mode=0o700)
    (tmp_path / "torrc.d").mkdir()
    out, runs = deploy(runner, fake, tmp_path)
    assert isinstance(out, dict) and runs == 1, out
    addresses = out["ansible_facts"]["onion_service_addresses"]
    for name in ("web", "blog"):
        assert esc.key_address(escrowed(tmp_path, name).read_bytes()) == addresses[name]
        assert escrowed(tmp_path, name, "hostname").read_text() == addresses[name] + "\n"
    return addresses


def test_a_rebuilt_host_gets_the_escrowed_keys_back(runner, fake, tmp_path, first):
    rebuilt_host(tmp_path, fake)
    out, runs = deploy(runner, fake, tmp_path)
    assert isinstance(out, dict) and runs == 1, out
    assert sorted(out["restored"]) == [str(tmp_path / "svc" / "blog"), str(tmp_path / "svc" / "web")]
    assert out["ansible_facts"]["onion_service_addresses"] == first
    for name in ("web", "blog"):
        assert onion.service_dir_address(str(tmp_path / "svc" / name)) == first[name]


def _swapped(tmp_path):
    """blog's key under web's directory, beside web's hostname."""
    shutil.copyfile(str(escrowed(tmp_path, "blog")), str(escrowed(tmp_path, "web")))


def _truncated(tmp_path):
    data = escrowed(tmp_path, "web").read_bytes()
    escrowed(tmp_path, "web").write_bytes(data[:60])


def _linked_directory(tmp_path):
    """web's directory a link to blog's: a key and a hostname that agree, of another service."""
    shutil.rmtree(str(escrowed(tmp_path, "web").parent))
    os.symlink(str(escrowed(tmp_path, "blog").parent), str(escrowed(tmp_path, "web").parent))


def _linked_key(tmp_path):
    os.unlink(str(escrowed(tmp_path, "web")))
    os.symlink(str(escrowed(tmp_path, "blog")), str(escrowed(tmp_path, "web")))


@pytest.mark.parametrize("damage, runs, reason", [
    (_swapped, 1, "{key} gives {blog}, not the service's escrowed address {web} ({hostname}): a key of another "
                  "service. Nothing was restored: put the service's own key and hostname back in {dir}"),
    (_truncated, 1, "{key} is not a tor ed25519 secret key file (60 bytes; one is 96: the header and the 64-byte "
                    "expanded key), truncated or damaged. Nothing was restored"),
    (_linked_directory, 0, "{dir} is a symbolic link: nothing below the escrow's directory {root} is followed "
                           "through a link"),
    (_linked_key, 0, "{key} is a symbolic link: nothing below the escrow's directory {root} is followed "
                     "through a link"),
], ids=["swapped", "truncated", "linked-directory", "linked-key"])
def test_an_escrowed_key_that_is_not_the_services_is_refused_and_the_host_left_untouched(
        runner, fake, tmp_path, first, damage, runs, reason):
    keys = dict((name, escrowed(tmp_path, name).read_bytes()) for name in ("web", "blog"))
    rebuilt_host(tmp_path, fake)
    damage(tmp_path)
    before = host_state(tmp_path, fake)
    setconfs = len([c for c in fake.received if c.startswith("SETCONF")])
    message, asked = deploy(runner, fake, tmp_path)
    assert isinstance(message, str), message
    assert asked == runs          # a link: refused before the host is asked anything
    expected = reason.format(key=escrowed(tmp_path, "web"), hostname=escrowed(tmp_path, "web", "hostname"),
                             dir=escrowed(tmp_path, "web").parent, root=tmp_path / "escrow",
                             web=first["web"], blog=first["blog"])
    assert expected in message, message
    if runs:
        assert message.startswith("onion_service role: the services of %s were refused before anything was written "
                                  "on the host: service web (%s): its escrowed key cannot be restored: "
                                  % (HOST, tmp_path / "svc" / "web")), message
    else:
        assert message.startswith("onion_service role: the escrow of service web of %s cannot be read: " % HOST)
        assert message.endswith("Nothing was changed on %s." % HOST)
    assert host_state(tmp_path, fake) == before
    assert sorted(os.listdir(str(tmp_path / "svc"))) == []
    assert len([c for c in fake.received if c.startswith("SETCONF")]) == setconfs
    for data in keys.values():
        assert secret_text(data) not in message
    if damage is _swapped:      # the vault's key for web: the escrow's is not sent, nor checked
        vault = onion.key_blob(keys["web"][len(onion.SECRET_HEADER):])
        out, _runs = deploy(runner, fake, tmp_path, private_keys={"web": vault})
        assert isinstance(out, dict) and out["ansible_facts"]["onion_service_addresses"] == first, out


def test_a_bad_escrowed_key_the_host_does_not_need_is_replaced_by_the_hosts(runner, fake, tmp_path, first):
    """The host still holds web's key: nothing is restored, the run goes on, and the host's key goes back to the
    escrow (the swapped one kept under replaced/<its address>/, with a warning)."""
    _swapped(tmp_path)
    blog_key = escrowed(tmp_path, "blog").read_bytes()
    out, runs = deploy(runner, fake, tmp_path)
    assert isinstance(out, dict) and runs == 1, out
    assert out["restored"] == [] and out["ansible_facts"]["onion_service_addresses"] == first
    assert esc.key_address(escrowed(tmp_path, "web").read_bytes()) == first["web"]
    assert (tmp_path / "escrow" / HOST / "web" / "replaced" / first["blog"] / esc.KEY_FILE).read_bytes() == blog_key
    assert any("not the escrowed key of %s" % first["blog"] in w for w in out["warnings"]), out["warnings"]
    assert secret_text(blog_key) not in json.dumps(out)
