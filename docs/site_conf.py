# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Appended by docs/build-site.sh to the conf.py that `antsibull-docs sphinx-init` generates, so that
# the generated part follows the pinned antsibull-docs and only our changes live here.
# (Runs inside Sphinx's conf.py namespace: os and the generated settings are available there.)
import os as _os

project = 'onionlab.tor'
copyright = 'onionlab.tor contributors'
title = 'onionlab.tor documentation'
html_short_title = 'onionlab.tor docs'

# Offline builds (docs/build-site.sh --offline, which CI uses): the generated intersphinx_mapping
# downloads the inventories of docs.python.org, jinja.palletsprojects.com and docs.ansible.com when
# Sphinx starts, and with -W (warnings are errors) an unreachable site fails the build. Those
# sites cannot be reached from the machines this project's CI runs on. The generated module pages
# link to three labels of the Ansible docs (common_return_values, ansible_configuration_settings,
# action_plugins),
# so instead of dropping the Ansible mapping (and silencing 'undefined label' warnings, which
# would hide real broken links of our own guides too) an offline build reads a small local
# inventory with exactly those labels, made by docs/offline_inventory.py; the links still point at
# docs.ansible.com. Online builds (no --offline) keep the generated mapping as it is.
if _os.environ.get('ONIONLAB_DOCS_OFFLINE_INVENTORY'):
    intersphinx_mapping = {
        'ansible_devel': ('https://docs.ansible.com/projects/ansible/devel/',
                          _os.environ['ONIONLAB_DOCS_OFFLINE_INVENTORY']),
    }
