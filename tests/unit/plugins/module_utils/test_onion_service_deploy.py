# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host side of onion_service_deploy (module_utils/_onion_service_deploy.py) and its action
plugin's pure helpers: the access check, the role's record as the role always wrote it, the
PoW default, escrowed keys only where a directory holds none (and a key the controller refused stopping the
run there), the keys sent back."""

import base64
import json
import os
import stat

from ansible_collections.onionlab.tor.plugins.action.onion_service_deploy import combine, redacted
from ansible_collections.onionlab.tor.plugins.module_utils import _onion_service_deploy as deploy
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion, seal
from harness.keys import new_expanded_key


def test_denied_walks_up_to_the_nearest_existing_parent(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        assert deploy.denied([str(tmp_path / "a" / "b")]) == []
        if os.geteuid() != 0:      # root may write anything
            assert deploy.denied([str(locked / "x" / "y"), str(locked)]) == [str(locked)]
    finally:
        locked.chmod(0o700)


def test_record_reads_and_writes_the_roles_format(tmp_path):
    record = tmp_path / ".record.json"
    assert deploy.read_owned(str(record)) == []
    text = deploy.record_text(["/var/lib/tor/b", "/var/lib/tor/web"])
    assert text == json.dumps({"services": ["/var/lib/tor/b", "/var/lib/tor/web"]}, indent=4) + "\n"
    assert deploy.write_record(str(record), text) is True
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert deploy.write_record(str(record), text) is False          # unchanged: not written again
    record.chmod(0o644)
    assert deploy.write_record(str(record), text) is True and stat.S_IMODE(record.stat().st_mode) == 0o600
    assert deploy.read_owned(str(record)) == ["/var/lib/tor/b", "/var/lib/tor/web"]
    record.write_text("not json")
    try:
        deploy.read_owned(str(record))
    except deploy.ServiceError as exc:
        assert "is not JSON" in str(exc)
    else:
        raise AssertionError("a broken record was read")


def test_pow_default_only_where_not_said_and_where_tor_can():
    entries = [{"path": "/a"}, {"path": "/b", "pow": {"enabled": False}}, {"path": "/c", "pow": {"queue_rate": 5}}]
    assert [e["pow"] for e in deploy.with_pow_default(entries)] == [
        {"enabled": True}, {"enabled": False}, {"enabled": True, "queue_rate": 5}]
    assert deploy.pow_supported(True, "tor", None) is True
    assert deploy.pow_supported(None, "tor", lambda argv: "relay: yes\npow: yes\n") is True
    assert deploy.pow_supported(None, "tor", lambda argv: "pow: no\n") is False

    def missing(argv):
        raise OSError(2, "No such file or directory")
    assert deploy.pow_supported(None, "/no/such/tor", missing) is False


def test_escrowed_key_only_where_a_directory_holds_none(tmp_path):
    empty, holding = tmp_path / "empty", tmp_path / "holding"
    empty.mkdir()
    holding.mkdir()
    (holding / deploy.KEY_FILE).write_bytes(onion.SECRET_HEADER + new_expanded_key())
    key = new_expanded_key()
    blob = onion.key_blob(key)
    out = deploy.restorable({str(empty): blob, str(holding): blob, str(tmp_path / "vault"): blob},
                            {str(tmp_path / "vault"): b"x"})
    assert out == {str(empty): key}


def test_a_key_the_controller_refused_stops_the_run_only_where_it_would_be_restored(tmp_path):
    """Issue 42: the controller sends no key that does not give the escrowed address, only why (escrow_refused);
    a directory without a key refuses the run naming the service, one with a key (or a vault key) does not."""
    import pytest
    empty, holding = tmp_path / "web", tmp_path / "holding"
    holding.mkdir()
    (holding / deploy.KEY_FILE).write_bytes(onion.SECRET_HEADER + new_expanded_key())
    why = "/escrow/web1/web/hs_ed25519_secret_key gives b.onion, not the service's escrowed address a.onion"
    good = onion.key_blob(new_expanded_key())
    vault = {str(tmp_path / "vault"): b"x"}
    assert deploy.restorable({str(tmp_path / "ok"): good}, vault, {str(holding): why, str(tmp_path / "vault"): why}
                             ) == {str(tmp_path / "ok"): onion.parse_key_blob(good)}
    with pytest.raises(deploy.ServiceError) as caught:
        deploy.restorable({str(tmp_path / "ok"): good}, {}, {str(empty): why})
    assert str(caught.value) == "service web (%s): its escrowed key cannot be restored: %s" % (empty, why)
    assert not empty.exists()


def test_keys_sent_back_only_when_the_escrow_lacks_or_differs(tmp_path):
    same, other, none = tmp_path / "same", tmp_path / "other", tmp_path / "none"
    for d in (same, other, none):
        d.mkdir()
    data = onion.SECRET_HEADER + new_expanded_key()
    (same / deploy.KEY_FILE).write_bytes(data)
    (other / deploy.KEY_FILE).write_bytes(data)
    sums = {str(same): deploy.file_sum(data), str(other): "0" * 64}
    private, public = seal.new_key_pair()
    out = deploy.escrow_updates([str(same), str(other), str(none)], sums, public)
    assert list(out) == [str(other)]
    assert base64.b64encode(data).decode("ascii") not in out[str(other)]     # sealed, never in clear
    assert base64.b64encode(data[32:]).decode("ascii")[:40] not in out[str(other)]
    assert seal.open_box(private, out[str(other)]) == data


def test_action_helpers_merge_like_combine_and_redact_keys():
    assert combine({"pow": {"enabled": True}, "max_streams": 3}, {"pow": {"queue_rate": 4}}, {"max_streams": 5}) == \
        {"pow": {"enabled": True, "queue_rate": 4}, "max_streams": 5}
    blob = onion.key_blob(new_expanded_key())
    client = onion.generate_client_keypair()[0]
    text = redacted("refused %s and %s" % (blob, client))
    assert blob.split(":")[1] not in text and client not in text and "<redacted>" in text


def test_the_key_sent_back_is_never_read_through_a_link(tmp_path):
    """tor's user owns the service directory: a link in place of the key file must not make root read (and send
    to the controller's escrow) a file of its choosing."""
    import pytest
    service = tmp_path / "web"
    service.mkdir()
    secret = tmp_path / "roots-file"
    secret.write_bytes(b"not a key of tor's")
    os.symlink(str(secret), str(service / deploy.KEY_FILE))
    with pytest.raises(OSError):
        deploy.host_key(str(service))
    assert deploy.host_key(str(tmp_path / "none")) is None
