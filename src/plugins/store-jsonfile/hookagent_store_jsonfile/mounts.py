"""Is a path on a network filesystem? There, flock is unreliable and multi-writer is refused."""

from __future__ import annotations

import os

NETWORK_TYPES = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "ncpfs",
        "afs",
        "9p",
        "ceph",
        "glusterfs",
        "lustre",
        "gpfs",
        "fuse.sshfs",
        "fuse.s3fs",
        "fuse.gcsfuse",
        "fuse.rclone",
        "fuse.glusterfs",
        "fuse.ceph",
    }
)


def _unescape(field: str) -> str:
    return (
        field.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
    )


def fs_type(path: str | os.PathLike[str]) -> str | None:
    """The type of the filesystem holding ``path`` (from /proc/self/mounts), None if unknown."""
    real = os.path.realpath(path)
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    best, best_type = "", None
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        mount = _unescape(fields[1])
        inside = real == mount or real.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, best_type = mount, fields[2]
    return best_type


def is_network(path: str | os.PathLike[str]) -> bool:
    kind = fs_type(path)
    return kind is not None and kind in NETWORK_TYPES


LOCAL_TYPES = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "jfs", "zfs", "bcachefs", "tmpfs", "overlay"}
)
"""Filesystems whose metadata calls (``open``, ``mkdir``, ``rename``) are page-cache work that
never waits on a network: a save's may run on the event loop's thread (``hops``)."""


def is_local(path: str | os.PathLike[str]) -> bool:
    """True only for a filesystem known local (an unknown one is treated as remote)."""
    return fs_type(path) in LOCAL_TYPES
