# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One service option, described once: the doc fragment's SERVICES (tor_hidden_service's
`services`) lists each option of its DOCUMENTATION as it is there ("As O(...)", same type,
elements, choices and suboptions), and both agree with the argument spec that
_hidden_service_args.py makes from hidden_service.py's OPTIONS."""

import yaml

from ansible_collections.onionlab.tor.plugins.doc_fragments.hidden_service import ModuleDocFragment
from ansible_collections.onionlab.tor.plugins.module_utils import _hidden_service_args as args
from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs

OPTIONS = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
SERVICES = yaml.safe_load(ModuleDocFragment.SERVICES)["options"]["services"]["suboptions"]
SHAPE = ("type", "elements", "choices")


def shape(doc):
    """What must agree between a documentation entry and another: its type, elements, choices,
    and those of its suboptions."""
    out = {key: doc[key] for key in SHAPE if key in doc}
    if "suboptions" in doc:
        out["suboptions"] = {name: shape(sub) for name, sub in doc["suboptions"].items()}
    return out


def spec_shape(spec):
    out = {key: spec[key] for key in SHAPE if key in spec}
    if "options" in spec:
        out["suboptions"] = {name: spec_shape(sub) for name, sub in spec["options"].items()}
    return out


def test_services_lists_every_option_as_documented():
    for name, doc in OPTIONS.items():
        assert name in SERVICES, "%s is documented but not in SERVICES" % name
        assert shape(SERVICES[name]) == shape(doc), name
        assert SERVICES[name]["description"].startswith("As O(%s)" % name), name


def test_documentation_matches_the_spec_made_from_options():
    assert {name: shape(doc) for name, doc in OPTIONS.items()} == \
        {name: spec_shape(spec) for name, spec in args.SERVICE_OPTIONS.items()}


def test_every_options_row_is_in_the_spec():
    for option in hs.OPTIONS:
        group, dot, member = option.key.partition(".")
        assert (member in args.SERVICE_OPTIONS[group]["options"]) if dot else (group in args.SERVICE_OPTIONS)
