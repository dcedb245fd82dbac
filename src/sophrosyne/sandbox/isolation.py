"""Kernel isolation layers for the Python sandbox: namespaces, capabilities, rlimits, Landlock, seccomp (ctypes)."""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import struct
import sys
from pathlib import Path

# Everything here runs in the sandbox child before the program does; each function raises Unavailable
# when its layer cannot be set up, and the child then refuses to run the program at all.


class Unavailable(Exception):
    """An isolation layer could not be set up; the message names it and the reason."""


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]

# x86_64 syscall numbers: the seccomp filter and Landlock need them, and other architectures are refused.
SYS_capset = 126
SYS_landlock_create_ruleset = 444
SYS_landlock_add_rule = 445
SYS_landlock_restrict_self = 446

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_THREAD = 0x00010000
NAMESPACE_FLAGS = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | 0x02000000

PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


def _fail(layer: str) -> Unavailable:
    errno = ctypes.get_errno()
    return Unavailable(f"{layer}: {os.strerror(errno) if errno else 'not supported'}")


def check_platform() -> None:
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise Unavailable(f"the sandbox needs Linux on x86_64 (this is {sys.platform} on {platform.machine()})")


def enter_namespaces() -> None:
    """New network (no interface up: no network at all), IPC, UTS and PID namespaces for the next fork.

    As root directly; otherwise inside a new user namespace, where the caller maps to itself."""
    flags = CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID
    uid, gid = os.geteuid(), os.getegid()
    if uid != 0:
        flags |= CLONE_NEWUSER
    if _libc.unshare(flags) != 0:
        raise _fail("namespaces (network, IPC, UTS, PID)")
    if uid != 0:
        try:
            with open("/proc/self/setgroups", "w") as f:
                f.write("deny")
            with open("/proc/self/uid_map", "w") as f:
                f.write(f"{uid} {uid} 1")
            with open("/proc/self/gid_map", "w") as f:
                f.write(f"{gid} {gid} 1")
        except OSError as exc:
            raise Unavailable(f"user namespace mapping: {exc.strerror}") from None


def die_with_parent() -> None:
    if _libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0) != 0:
        raise _fail("parent-death signal")


def set_limits(memory_mb: int, cpu_s: float, files_mb: int) -> None:
    """Address space, CPU seconds (SIGXCPU, then SIGKILL a second later), file size, open files, no core."""
    cpu = max(1, int(cpu_s + 0.999))
    limits = {
        resource.RLIMIT_AS: memory_mb * 1024 * 1024,
        resource.RLIMIT_CPU: (cpu, cpu + 1),
        resource.RLIMIT_FSIZE: files_mb * 1024 * 1024,
        resource.RLIMIT_NOFILE: 256,
        resource.RLIMIT_CORE: 0,
    }
    for which, value in limits.items():
        soft, hard = value if isinstance(value, tuple) else (value, value)
        try:
            resource.setrlimit(which, (soft, hard))
        except (OSError, ValueError) as exc:
            raise Unavailable(f"resource limit {which}: {exc}") from None


def drop_capabilities() -> None:
    """No capability left in any set, and none to regain: a root uid then has no more power than nobody."""
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for cap in range(last + 1):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:
            raise _fail("capability bounding set")
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = bytes(24)  # two {effective, permitted, inheritable} words, all zero
    if _libc.syscall(SYS_capset, header, data) != 0:
        raise _fail("capabilities")
    status = Path("/proc/self/status").read_text()
    effective = next(line.split()[1] for line in status.splitlines() if line.startswith("CapEff"))
    if int(effective, 16) != 0:
        raise Unavailable("capabilities: some remain after dropping them")
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise _fail("no_new_privs")


# -- Landlock ----------------------------------------------------------------------------------------------

FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1, 2, 4, 8
FS_READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
# Rights a rule on a single file (not a folder) may carry.
FS_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | (1 << 14) | (1 << 15)


def landlock_abi() -> int:
    abi = _libc.syscall(SYS_landlock_create_ruleset, None, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION
    return int(abi) if abi > 0 else 0


def restrict_paths(read: list[str], write: list[str]) -> int:
    """Landlock: read (and execute) only beneath `read`, read and write only beneath `write`, for this
    process and all it starts; with ABI 4+ also no TCP bind or connect, with ABI 6+ no signal or abstract
    socket outside. Returns the ABI used."""
    abi = landlock_abi()
    if abi < 1:
        raise Unavailable("Landlock: not enabled in this kernel")
    handled_fs = (1 << 13) - 1  # execute .. make_sym (ABI 1)
    if abi >= 2:
        handled_fs |= 1 << 13  # refer
    if abi >= 3:
        handled_fs |= 1 << 14  # truncate
    if abi >= 5:
        handled_fs |= 1 << 15  # ioctl on devices
    handled_net = 0b11 if abi >= 4 else 0
    scoped = 0b11 if abi >= 6 else 0
    attr = struct.pack("QQQ", handled_fs, handled_net, scoped)[: 8 if abi < 4 else 16 if abi < 6 else 24]
    ruleset = _libc.syscall(SYS_landlock_create_ruleset, attr, len(attr), 0)
    if ruleset < 0:
        raise _fail("Landlock ruleset")
    try:
        for paths, rights in ((read, FS_READ), (write, handled_fs)):
            for path in paths:
                _allow(int(ruleset), path, rights & handled_fs)
        if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _fail("no_new_privs")
        if _libc.syscall(SYS_landlock_restrict_self, ruleset, 0) != 0:
            raise _fail("Landlock restrict_self")
    finally:
        os.close(int(ruleset))
    return abi


def _allow(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a path that does not exist here needs no rule
    try:
        if not os.path.isdir(path):
            rights &= FS_FILE_RIGHTS
        rule = struct.pack("=Qi", rights, fd)  # struct landlock_path_beneath_attr is packed
        if _libc.syscall(SYS_landlock_add_rule, ruleset, 1, rule, 0) != 0:
            raise _fail(f"Landlock rule for {path}")
    finally:
        os.close(fd)


# -- seccomp -----------------------------------------------------------------------------------------------

EPERM, ENOSYS = 1, 38
RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
AUDIT_ARCH_X86_64 = 0xC000003E


def _errno(code: int) -> int:
    return 0x00050000 | code


# No sockets of any kind, no new processes or programs, and none of the calls that reach into the kernel's
# configuration, other processes or other namespaces.
DENIED = {
    41: EPERM,  # socket
    53: EPERM,  # socketpair
    57: EPERM,  # fork
    58: EPERM,  # vfork
    59: EPERM,  # execve
    322: EPERM,  # execveat
    435: ENOSYS,  # clone3: its flags cannot be inspected; glibc falls back to clone, which is
    101: EPERM,  # ptrace
    310: EPERM,  # process_vm_readv
    311: EPERM,  # process_vm_writev
    112: EPERM,  # setsid: the process group is how the wall-time limit kills everything
    109: EPERM,  # setpgid
    165: EPERM,  # mount
    166: EPERM,  # umount2
    155: EPERM,  # pivot_root
    161: EPERM,  # chroot
    272: EPERM,  # unshare
    308: EPERM,  # setns
    321: EPERM,  # bpf
    298: EPERM,  # perf_event_open
    248: EPERM,  # add_key
    249: EPERM,  # request_key
    250: EPERM,  # keyctl
    175: EPERM,  # init_module
    313: EPERM,  # finit_module
    176: EPERM,  # delete_module
    246: EPERM,  # kexec_load
    320: EPERM,  # kexec_file_load
    169: EPERM,  # reboot
    167: EPERM,  # swapon
    168: EPERM,  # swapoff
    303: EPERM,  # name_to_handle_at
    304: EPERM,  # open_by_handle_at
    323: EPERM,  # userfaultfd
    425: EPERM,  # io_uring_setup (its operations bypass this filter)
    426: EPERM,  # io_uring_enter
    427: EPERM,  # io_uring_register
    163: EPERM,  # acct
    164: EPERM,  # settimeofday
    227: EPERM,  # clock_settime
    159: EPERM,  # adjtimex
    305: EPERM,  # clock_adjtime
    172: EPERM,  # iopl
    173: EPERM,  # ioperm
    103: EPERM,  # syslog
    179: EPERM,  # quotactl
    135: EPERM,  # personality
    300: EPERM,  # fanotify_init
    133: EPERM,  # mknod
    259: EPERM,  # mknodat
}
SYS_clone = 56


def seccomp_program(denied: dict[int, int], threads_only: bool) -> list[tuple[int, int, int, int]]:
    """The BPF filter as (code, jt, jf, k) instructions: `denied` system calls fail with their errno; with
    `threads_only`, clone may only start threads."""

    def load(offset: int) -> tuple[int, int, int, int]:
        return (0x20, 0, 0, offset)  # BPF_LD | BPF_W | BPF_ABS

    def ret(value: int) -> tuple[int, int, int, int]:
        return (0x06, 0, 0, value)  # BPF_RET | BPF_K

    def jeq(k: int, jt: int, jf: int) -> tuple[int, int, int, int]:
        return (0x15, jt, jf, k)

    prog = [load(4), jeq(AUDIT_ARCH_X86_64, 1, 0), ret(RET_KILL_PROCESS), load(0)]
    prog += [(0x35, 0, 1, 0x40000000), ret(_errno(EPERM))]  # x32 system calls: JGE
    for nr, code in denied.items():
        prog += [jeq(nr, 0, 1), ret(_errno(code))]
    if not threads_only:
        return [*prog, ret(RET_ALLOW)]
    # clone: threads only (CLONE_THREAD set, no namespace flag); anything else is a new process.
    prog += [
        jeq(SYS_clone, 0, 5),
        load(16),  # args[0], low 32 bits
        (0x45, 2, 0, NAMESPACE_FLAGS),  # BPF_JSET: any namespace flag -> EPERM
        (0x45, 0, 1, CLONE_THREAD),
        ret(RET_ALLOW),
        ret(_errno(EPERM)),
        ret(RET_ALLOW),
    ]
    return prog


def install_seccomp(denied: dict[int, int] = DENIED, *, threads_only: bool = True) -> None:
    prog = seccomp_program(denied, threads_only)
    raw = b"".join(struct.pack("HBBI", *ins) for ins in prog)
    buffer = ctypes.create_string_buffer(raw, len(raw))
    fprog = struct.pack("HxxxxxxP", len(prog), ctypes.addressof(buffer))
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise _fail("no_new_privs")
    fprog_buffer = ctypes.create_string_buffer(fprog, len(fprog))
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog_buffer), 0, 0) != 0:
        raise _fail("seccomp filter")
