# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Other versions of the tor package for a bed host (issue 39: tor_version, upgrades): real .debs made on the host
from the tor it has installed (its files, its control fields and maintainer scripts, as dpkg-repack does), with
another version, in a flat apt repository on the host that apt knows after ``apt-get update`` of that source
alone (offline: a ``file:`` source). apt installs them and the package's own scripts restart tor, as with
Debian's. A *bad* build is the same tor whose packaged service defaults (``tor-service-defaults-torrc``) hold an
option tor refuses (it installs, and its tor never starts on the host's torrc), or a line that makes it start and
never publish (``SILENT``).

Standard library only; ``repo_script(builds)`` is a shell command for the host (run as root)."""

REPO = "/srv/onionlab-tor-versions"
SOURCE = "/etc/apt/sources.list.d/onionlab-tor-versions.list"
BAD_OPTION = "OnionlabRefusedOption 1"

_SCRIPT = r"""python3 - <<'EOF'
import hashlib, os, shutil, subprocess, sys, time
REPO, SOURCE, BAD_OPTION, BUILDS = @ARGS@
pkg = 'tor'
def sh(*argv):
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
status = sh('dpkg-query', '-s', pkg)
fields, last = [], None
for line in status.splitlines():
    if line.startswith((' ', '\t')) and last is not None:
        fields[-1] = (fields[-1][0], fields[-1][1] + '\n' + line)
    elif ':' in line:
        key, value = line.split(':', 1)
        fields.append((key, value.strip()))
        last = key
keep = ('Package', 'Version', 'Architecture', 'Maintainer', 'Installed-Size', 'Pre-Depends', 'Depends',
        'Recommends', 'Suggests', 'Conflicts', 'Breaks', 'Replaces', 'Provides', 'Section', 'Priority',
        'Homepage', 'Description')
files = [f for f in sh('dpkg-query', '-L', pkg).splitlines() if f and f != '/.']
conffiles = [l.split()[0] for l in status.split('Conffiles:', 1)[-1].splitlines()[1:] if l.startswith(' /')] \
    if 'Conffiles:' in status else []
shutil.rmtree(REPO, ignore_errors=True)
os.makedirs(REPO)
for version, bad in BUILDS:
    root = os.path.join(REPO, 'build-' + version)
    for f in files:
        src, dst = f, root + f
        if os.path.isdir(src):   # a directory, or a link to one (merged /usr: /lib -> usr/lib): a directory here
            os.makedirs(dst, exist_ok=True)
        elif os.path.islink(src):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.symlink(os.readlink(src), dst)
        elif os.path.isfile(src):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst)
    debian = os.path.join(root, 'DEBIAN')
    os.makedirs(debian)
    with open(os.path.join(debian, 'control'), 'w') as out:
        for key, value in fields:
            if key in keep:
                out.write('%s: %s\n' % (key, version if key == 'Version' else value))
    for script in ('preinst', 'postinst', 'prerm', 'postrm'):
        src = '/var/lib/dpkg/info/%s.%s' % (pkg, script)
        if os.path.exists(src):
            shutil.copy2(src, os.path.join(debian, script))
    if conffiles:
        with open(os.path.join(debian, 'conffiles'), 'w') as out:
            out.write('\n'.join(conffiles) + '\n')
    if bad is not False and str(bad).startswith('[Service] '):
        with open(root + '/lib/systemd/system/tor@default.service', 'a') as out:
            out.write('\n[Service]\n' + bad[len('[Service] '):] + '\n')
    elif bad:
        with open(root + '/usr/share/tor/tor-service-defaults-torrc', 'a') as out:
            out.write('\n' + (BAD_OPTION if bad is True else bad) + '\n')
    sh('dpkg-deb', '--root-owner-group', '-Zgzip', '--build', root, os.path.join(REPO, 'tor_%s.deb' % version))
    shutil.rmtree(root)
stanzas = []
for deb in sorted(f for f in os.listdir(REPO) if f.endswith('.deb')):
    data = open(os.path.join(REPO, deb), 'rb').read()
    stanzas.append(sh('dpkg-deb', '-f', os.path.join(REPO, deb)).rstrip('\n') + '\nFilename: ./%s\nSize: %d\n'
                   'SHA256: %s\n' % (deb, len(data), hashlib.sha256(data).hexdigest()))
open(os.path.join(REPO, 'Packages'), 'w').write('\n'.join(stanzas))
open(SOURCE, 'w').write('deb [trusted=yes] file:%s ./\n' % REPO)
subprocess.run(['apt-get', 'update', '-qq', '-o', 'Dir::Etc::sourcelist=' + SOURCE, '-o', 'Dir::Etc::sourceparts=-',
                '-o', 'APT::Get::List-Cleanup=0'], check=True)
print(sh('apt-cache', 'policy', pkg))
EOF"""


# A bad build that installs and starts, and whose tor never publishes a descriptor: the kind of fault a
# --verify-config cannot see (issue 39's gate catches it: no fresh client gets an answer)
SILENT = "PublishHidServDescriptors 0"
# A bad build that passes the gate and fails a minute later: its packaged unit has systemd stop tor after 60 s of
# running (and start it again: Restart=on-failure), as a crash would; a soak sees tor's PID change
CRASHES = "[Service] RuntimeMaxSec=60"


def repo_script(builds):
    """The host command that makes the repository: builds is [(version, bad)], each a .deb of the installed tor
    at that version; bad: False, True (its service defaults hold an option tor refuses: it never starts), a torrc
    line its service defaults end with (SILENT: it starts and never publishes) or '[Service] ' and a line its
    tor@default.service ends with (CRASHES: stopped after a minute). Prints `apt-cache policy tor`."""
    return _SCRIPT.replace("@ARGS@", repr((REPO, SOURCE, BAD_OPTION, [
        (str(v), b if isinstance(b, str) else bool(b)) for v, b in builds])))


REMOVE = "rm -rf %s %s" % (REPO, SOURCE)
