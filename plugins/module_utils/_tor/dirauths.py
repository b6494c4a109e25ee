# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, onionlab.tor contributors
"""The directory authorities compiled into tor 0.4.9 (data only).

Source: tor's ``src/app/config/auth_dirs.inc``, tor 0.4.9 series (tpo/core/tor on
gitlab.torproject.org, branch main / maint-0.4.9).  The GitHub mirror torproject/tor stops at
commit 3cb6a690be60fcdab60130402ff88dcfc0657596 (tor-0.4.8.1-alpha-21, June 2023); its
auth_dirs.inc already has every entry below except the two that changed later: tor26's new
identity, v3ident and address (217.196.147.77) and the return of faravahar (216.218.219.41).
Those two were taken from verbatim copies of the current file (three independent public
copies, all agreeing).  Only the data (names, ports, addresses, fingerprints) is reproduced.

``v3ident`` is the hex SHA-1 of the authority's v3 identity key (what consensus ``dir-source``
lines and ``directory-signature`` lines name); ``fingerprint`` is its relay identity.
"Serge" is the bridge authority: it has no v3ident, signs no consensus, and is not counted
when judging whether a majority of directory authorities signed.
"""

from __future__ import annotations

# (nickname, v3ident or None, address, dir_port, or_port, ipv6 or None, relay fingerprint, bridge)
_DATA = (
    ("moria1", "F533C81CEF0BC0267857C99B2F471ADF249FA232", "128.31.0.39", 9231, 9201,
     None, "1A25C6358DB91342AA51720A5038B72742732498", False),
    ("tor26", "2F3DF9CA0E5D36F2685A2DA67184EB8DCB8CBA8C", "217.196.147.77", 80, 443,
     "[2a02:16a8:662:2203::1]:443", "FAA4BCA4A6AC0FB4CA2F8AD5A11D9E122BA894F6", False),
    ("dizum", "E8A9C45EDE6D711294FADF8E7951F4DE6CA56B58", "45.66.35.11", 80, 443,
     None, "7EA6EAD6FD83083C538F44038BBFA077587DD755", False),
    ("Serge", None, "66.111.2.131", 9030, 9001,
     None, "BA44A889E64B93FAA2B114E02C2A279A8555C533", True),
    ("gabelmoo", "ED03BB616EB2F60BEC80151114BB25CEF515B226", "131.188.40.189", 80, 443,
     "[2001:638:a000:4140::ffff:189]:443", "F2044413DAC2E02E3D6BCF4735A19BCA1DE97281", False),
    ("dannenberg", "0232AF901C31A04EE9848595AF9BB7620D4C5B2E", "193.23.244.244", 80, 443,
     "[2001:678:558:1000::244]:443", "7BE683E65D48141321C5ED92F075C55364AC7123", False),
    ("maatuska", "49015F787433103580E3B66A1707A00E60F2D15B", "171.25.193.9", 443, 80,
     "[2001:67c:289c::9]:80", "BD6A829255CB08E66FBE7D3748363586E46B3810", False),
    ("longclaw", "23D15D965BC35114467363C165C4F724B64B4F66", "199.58.81.140", 80, 443,
     None, "74A910646BCEEFBCD2E874FC1DC997430F968145", False),
    ("bastet", "27102BC123E7AF1D4741AE047E160C91ADC76B21", "204.13.164.118", 80, 443,
     "[2620:13:4000:6000::1000:118]:443", "24E2F139121D4394C54B5BCC368B3B411857C413", False),
    ("faravahar", "70849B868D606BAECFB6128C5E3D782029AA394F", "216.218.219.41", 80, 443,
     None, "E3E42D35F801C9D5AB23584E0025D56FE2B33396", False),
)


def _entry(row):
    nickname, v3ident, address, dir_port, or_port, ipv6, fingerprint, bridge = row
    return {
        "nickname": nickname,
        "v3ident": v3ident,
        "address": address,
        "dir_port": dir_port,
        "or_port": or_port,
        "ipv6": ipv6,
        "fingerprint": fingerprint,
        "bridge": bridge,
    }


def authorities(include_bridge=True):
    """All authorities as fresh dicts (JSON-serialisable), in auth_dirs.inc order."""
    return [_entry(row) for row in _DATA if include_bridge or not row[7]]


# v3ident -> nickname of the directory authorities that sign consensuses
V3IDENTS = dict((row[1], row[0]) for row in _DATA if row[1])


def is_known_authority(v3ident):
    """True if the (hex, any case) v3ident is one of tor 0.4.9's directory authorities."""
    return bool(v3ident) and v3ident.upper() in V3IDENTS


def nickname_for(v3ident):
    """Nickname of a known directory authority, or None."""
    return V3IDENTS.get((v3ident or "").upper())
