# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a Sphinx objects.inv with the few Ansible docs labels our generated pages link to.

Used by docs/build-site.sh --offline (see docs/site_conf.py for why). Usage: offline_inventory.py OUT
Add a label here when an offline build reports it as undefined and the online build resolves it.
"""

import sys
import zlib

# (label, page relative to https://docs.ansible.com/projects/ansible/devel/, title)
LABELS = [
    ('ansible_configuration_settings', 'reference_appendices/config.html#ansible-configuration-settings',
     'Ansible Configuration Settings'),
    ('common_return_values', 'reference_appendices/common_return_values.html#common-return-values',
     'Return Values'),
    # the note on a module that has an action plugin (tor_setup)
    ('action_plugins', 'plugins/action.html#action-plugins', 'Action plugins'),
]


def main(out):
    header = (b'# Sphinx inventory version 2\n'
              b'# Project: Ansible (offline subset)\n'
              b'# Version: devel\n'
              b'# The remainder of this file is compressed using zlib.\n')
    body = ''.join('%s std:label -1 %s %s\n' % entry for entry in LABELS).encode('utf-8')
    with open(out, 'wb') as f:
        f.write(header + zlib.compress(body))


if __name__ == '__main__':
    main(sys.argv[1])
