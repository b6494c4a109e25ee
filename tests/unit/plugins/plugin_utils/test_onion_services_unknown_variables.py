# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/onion_services.unknown_variables (was the onion_service_unknown_variables filter, never
released): typos of a role's variables, with the closest match."""

import pytest

from ansible_collections.onionlab.tor.plugins.plugin_utils.onion_services import OnionServicesError
from ansible_collections.onionlab.tor.plugins.plugin_utils.onion_services import (
    unknown_variables as onion_service_unknown_variables,
)

KNOWN = ['onion_services', 'onion_service_dir', 'onion_service_prune', 'onion_service_entries']


def test_typos_named_with_their_match():
    names = ['onion_service', 'onion_servics', 'onion_services', 'onion_service_purne', 'onion_service_zzz_mine']
    assert onion_service_unknown_variables(names, KNOWN) == [
        {'name': 'onion_service', 'suggestion': 'onion_services',
         'text': 'onion_service (did you mean onion_services?)'},
        {'name': 'onion_service_purne', 'suggestion': 'onion_service_prune',
         'text': 'onion_service_purne (did you mean onion_service_prune?)'},
        {'name': 'onion_service_zzz_mine', 'suggestion': None, 'text': 'onion_service_zzz_mine'},
        {'name': 'onion_servics', 'suggestion': 'onion_services',
         'text': 'onion_servics (did you mean onion_services?)'},
    ]
    assert onion_service_unknown_variables(KNOWN, KNOWN) == []


def test_bad_input():
    with pytest.raises(OnionServicesError):
        onion_service_unknown_variables('onion_service', KNOWN)
