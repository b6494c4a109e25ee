"""What each bed container needs from this machine's kernel (a part of tests/harness/hosts.py):
cgroups of its own below ours (``own_cgroups``, entered by nspawn's child, removed at teardown),
enough inotify instances for many systemds at once, and whether overlayfs is there."""


from __future__ import annotations

import os

try:  # imported as harness.* (pytest) or from this directory (hosts.py run as a script)
    from .rootfs import log
except ImportError:  # pragma: no cover
    from rootfs import log


def overlay_supported():
    try:
        with open('/proc/filesystems') as f:
            return any(line.split()[-1] == 'overlay' for line in f if line.strip())
    except OSError:
        return False


# Every container's systemd (PID 1, journald, logind, ...) takes inotify instances of root's, whose
# kernel default limit is 128 (fs.inotify.max_user_instances): with ~25 containers at once (the docs
# bed's 15 hosts beside the other CI lanes' beds) a booting host's systemd failed with "Failed to
# create control group inotify object: Too many open files" and exited. Raised before a bed boots.
INOTIFY_INSTANCES = '/proc/sys/fs/inotify/max_user_instances'
INOTIFY_MINIMUM = 1024


def ensure_inotify_instances(minimum=INOTIFY_MINIMUM, path=INOTIFY_INSTANCES):
    """Raise the per-user inotify instance limit to at least minimum (never lower it); returns the
    limit in force (None when it cannot be read)."""
    try:
        with open(path) as f:
            current = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    if current >= minimum:
        return current
    try:
        with open(path, 'w') as f:
            f.write('%d\n' % minimum)
    except OSError as exc:
        log('fs.inotify.max_user_instances is %d and cannot be raised (%s): many hosts at once may fail to boot'
            % (current, exc))
        return current
    log('fs.inotify.max_user_instances raised from %d to %d (each host\'s systemd takes some)' % (current, minimum))
    return minimum


def own_cgroups(machine):
    """Make one empty cgroup per hierarchy for a container (below ours).

    With --keep-unit --register=no and no systemd on the host, nspawn keeps
    the cgroup it was started in as the container's root; containers that
    share one then remove each other's unit cgroups at random ("Failed at
    step CGROUP").  Returns the created directories."""
    made = []
    try:
        with open('/proc/self/cgroup') as f:
            entries = [line.rstrip('\n').split(':', 2) for line in f]
    except OSError:
        return made
    for _, controllers, path in entries:
        if controllers == 'name=systemd':
            base = '/sys/fs/cgroup/systemd'
        elif controllers == '':
            base = '/sys/fs/cgroup/unified' if os.path.isdir('/sys/fs/cgroup/unified') else '/sys/fs/cgroup'
        else:
            continue
        if not os.path.exists(os.path.join(base, 'cgroup.procs')):
            continue
        d = os.path.join(base + path.rstrip('/'), 'onionlab-' + machine)
        try:
            os.makedirs(d, exist_ok=True)
            made.append(d)
        except OSError:
            pass
    return made


def enter_cgroups(dirs):
    """In the child before exec: move this process into dirs."""
    for d in dirs:
        try:
            with open(os.path.join(d, 'cgroup.procs'), 'w') as f:
                f.write(str(os.getpid()))
        except OSError:
            pass


def remove_cgroups(dirs):
    """rmdir the container's cgroups, deepest first (they must be empty)."""
    for d in dirs:
        for sub, _, _ in sorted(os.walk(d), key=lambda x: -len(x[0])):
            try:
                os.rmdir(sub)
            except OSError:
                pass
