"""The interpreter zygote: runs INSIDE one worker's bubblewrap sandbox, as root with a few
capabilities (see ``workbench.execute.zygote``), and starts each sample of that worker by
forking itself instead of starting a new sandbox and a new interpreter.

Started as ``python <the runner's options> -c <this source> CONTROL_FD SETTINGS``; it imports
standard library C modules only, and ``site`` (which a sample's harness imports first anyway;
with ``-S`` importing it runs nothing), so a forked sample's interpreter holds what a fresh one
holds, plus ``_ctypes``, ``_socket``, ``fcntl``, ``select`` and ``resource``.

Per sample (one request on CONTROL_FD, a ``SOCK_SEQPACKET`` socket: ``b"R"`` and the fds of
the request body, the token pipe, the pass pipe, the start pipe, stdout and stderr):

1. the zygote reads the body (a ``marshal`` dict, no secret in it: the token stays in its
   pipe, which only the sample's harness reads), then ``unshare(CLONE_NEWPID)``, forks the
   sample's *init* (PID 1 of a new PID namespace) and goes back to its own namespace for
   the next fork (``setns``);
2. the init enters new mount and IPC namespaces, mounts a fresh size-limited ``/tmp``
   holding the working directory with the sample's files, a fresh ``/proc`` of the new PID
   namespace (``/proc/sys``, ``/proc/sysrq-trigger``, ``/proc/irq``, ``/proc/bus``
   read-only, as bubblewrap does), then forks the sample (PID 2) and reaps until it exits,
   and exits with its status (128 + N for signal N), having first written the sample's raw
   ``waitpid`` status to a pipe of the zygote's (so a sample that exits with 128 + N itself is
   told from one that signal N ended): the kernel then kills whatever else is
   left in the namespace, and the init counts as exited only once it is all gone;
3. the sample starts its own session, places its fds (3, 4 ...: the runner's numbers;
   0 is ``/dev/null``), sets the rlimits, drops to the worker's user id (no groups, empty
   capability sets and bounding set, ``no_new_privs``: what ``setpriv`` does on the
   per-sample path), replaces the environment, writes the start byte and runs the
   runner's script as ``__main__`` with its arguments;
4. the zygote waits for the init with a pidfd and the request's timeout, kills it when the
   timeout passes, and answers
   ``b"<exit status> <timed out 0/1> <microseconds> <peak KiB> <sample's signal> <CPU microseconds>"``
   (the exit status as ``waitpid`` reports it, raw; the peak resident memory from ``wait4``'s
   ``ru_maxrss``, see ``_wait``; the signal that ended the sample, 0 when it exited, -1 when
   the init did not say: killed at the timeout; the user and system CPU time of the init and
   every process it, or a process it reaped, reaped, from ``wait4``).

Before its first request the zygote runs the whole of step 2-3 once with an empty script
and answers ``b"READY"`` (or ``b"FAIL <why>"``), so a machine where a nested namespace or
mount is refused never reaches a sample.
"""

import marshal
import os
import sys

import _ctypes
import _socket
import fcntl
import resource
import select
import time

# What any program of this interpreter has or imports first: with -S importing site runs
# nothing (without -S it ran at start-up already), so a sample finds what it would import.
import site  # noqa: F401

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWPID = 0x00020000, 0x08000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 38, 24
CAPABILITY_VERSION_3 = 0x20080522
SIGKILL = 9
#: exit status of a sample whose set-up failed (before its start byte: a sandbox failure)
SETUP_FAILED = 125
#: the /proc entries bubblewrap re-mounts read-only over a fresh /proc
READ_ONLY_PROC = ("sys", "sysrq-trigger", "irq", "bus")
#: fds at or above this are free for moving the received ones out of the way
HIGH_FD = 64


class _Int(_ctypes._SimpleCData):
    _type_ = "i"


class _Libc:
    _handle = _ctypes.dlopen(None, os.RTLD_NOW)


def _libc_function(name):
    class Function(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
        _restype_ = _Int

    function = Function((name, _Libc()))

    def call(*args):
        result = function(*args)
        result = getattr(result, "value", result)
        if result == -1:
            number = _ctypes.get_errno()
            raise OSError(number, f"{name}: {os.strerror(number)}")
        return result

    return call


_unshare, _setns, _mount = _libc_function("unshare"), _libc_function("setns"), _libc_function("mount")
_prctl, _capset = _libc_function("prctl"), _libc_function("capset")


def _say(fd, text):
    try:
        os.write(fd, text.encode("utf-8", "replace"))
    except OSError:
        pass


def _mount_sample_folders(tmpfs_bytes, files, keep=()):
    """Step 2: the sample's own /tmp (its working directory and files) and /proc; the
    toolchain folders in ``keep`` (read-only, under /tmp: a venv in a temp folder) are bound
    again into the new /tmp, or imports made later by the sample would not find them."""
    _unshare(CLONE_NEWNS | CLONE_NEWIPC)
    _mount(None, b"/", None, MS_REC | MS_PRIVATE, None)
    kept = [(path, os.open(path, os.O_PATH | os.O_CLOEXEC)) for path in keep if os.path.isdir(path)]
    _mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, b"size=%d,mode=1777" % tmpfs_bytes)
    for path, fd in kept:
        os.makedirs(path, exist_ok=True)
        _mount(b"/proc/self/fd/%d" % fd, path.encode(), None, MS_BIND | MS_REC, None)
        _mount(None, path.encode(), None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
        os.close(fd)
    os.mkdir("/tmp/work")
    os.chmod("/tmp/work", 0o777)
    for name, text in files:
        path = "/tmp/work/" + name
        folder = path.rsplit("/", 1)[0]
        if not os.path.isdir(folder):
            os.makedirs(folder)
            while folder != "/tmp/work":  # as bubblewrap's --perms 0777 --dir
                os.chmod(folder, 0o777)
                folder = folder.rsplit("/", 1)[0]
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            data = text.encode("utf-8", "surrogateescape")
            while data:
                data = data[os.write(fd, data):]
        finally:
            os.close(fd)
        os.chmod(path, 0o644)
    _mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    for name in READ_ONLY_PROC:
        path = b"/proc/" + name.encode()
        if os.path.exists(path):
            _mount(path, path, None, MS_BIND | MS_REC, None)
            _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, None)


def _drop_privileges(uid):
    """As ``setpriv --reuid --regid --clear-groups --inh-caps=-all --ambient-caps=-all
    --bounding-set=-all --no-new-privs``."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    for capability in range(64):
        try:
            _prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
        except OSError:  # past the last capability this kernel knows
            break
    os.setresuid(uid, uid, uid)  # clears the permitted, effective and ambient sets
    header = CAPABILITY_VERSION_3.to_bytes(4, sys.byteorder) + bytes(4)
    _capset(header, bytes(24))  # and the inheritable one
    _prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def _place_fds(placements, keep):
    """Give the sample exactly its fds: ``placements`` (child fd -> fd held now) at their
    numbers, ``keep`` (fds held now) at numbers >= :data:`HIGH_FD`, every other fd (the
    control socket above all) closed. Returns ``keep`` as moved."""
    high = {target: fcntl.fcntl(fd, fcntl.F_DUPFD, HIGH_FD) for target, fd in placements.items()}
    kept = [fcntl.fcntl(fd, fcntl.F_DUPFD, HIGH_FD) for fd in keep]
    previous = -1
    for fd in sorted([*high.values(), *kept]):
        os.closerange(previous + 1, fd)
        previous = fd
    os.closerange(previous + 1, 1 << 20)
    for target, fd in high.items():
        os.dup2(fd, target, inheritable=True)
        os.close(fd)
    return kept


def _run_sample(request, code, fds, stderr_fd):
    """Step 3 (in the sample's process, PID 2 of its namespace): run ``code`` (the runner's
    script, compiled once by the zygote) as ``__main__``. Never returns."""
    try:
        os.setsid()
        placements = {0: os.open("/dev/null", os.O_RDONLY), 1: fds["stdout"], 2: fds["stderr"]}
        placements.update({target: fds[name] for target, name in request["fds"].items()})
        (started,) = _place_fds(placements, [fds["started"]])
        stderr_fd = 2
        os.chdir("/tmp/work")
        for kind, soft, hard in request["rlimits"]:
            resource.setrlimit(kind, (soft, hard))
        if request["uid"] is not None:
            _drop_privileges(request["uid"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv[:] = request["argv"]
        main = type(sys)("__main__")
        main.__file__, main.__cached__, main.__builtins__ = code.co_filename, None, __builtins__
        os.write(started, b".")
        os.close(started)
    except BaseException as error:  # the set-up failed: no start byte, a sandbox failure
        _say(stderr_fd, f"workbench zygote: the sample's set-up failed: {error!r}\n")
        os._exit(SETUP_FAILED)
    status = 0
    try:
        sys.modules["__main__"] = main
        exec(code, main.__dict__)
    except SystemExit as error:  # as the interpreter's own exit handling
        if error.code is None or isinstance(error.code, int):
            status = error.code or 0
        else:
            _say(2, f"{error.code}\n")
            status = 1
    except BaseException:
        sys.excepthook(*sys.exc_info())
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    os._exit(status & 0xFF)


def _init(request, code, fds, status_write):
    """Step 2 (PID 1 of the sample's namespace). Never returns. ``status_write``: where the
    sample's raw wait status goes (decimal) before the init exits."""
    stderr_fd = fds["stderr"]
    try:
        _mount_sample_folders(request["tmpfs_bytes"], request["files"], request.get("keep", ()))
        sample = os.fork()
    except BaseException as error:
        _say(stderr_fd, f"workbench zygote: the sample's namespace could not be set up: {error!r}\n")
        os._exit(SETUP_FAILED)
    if sample == 0:
        _run_sample(request, code, fds, stderr_fd)
    os.closerange(3, status_write)  # the init holds nothing of the sample's pipes
    os.closerange(status_write + 1, 1 << 30)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(SETUP_FAILED)
        except InterruptedError:
            continue
        if pid == sample:
            break
    try:
        os.write(status_write, b"%d" % status)
    except OSError:
        pass
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


#: the runner's script text -> its code object (compiled once per worker, not per sample)
_compiled = {}


def _start(request, fds, own_pid_namespace):
    """Step 1 in the zygote: fork the sample's init in a new PID namespace; return its pid and
    the read end of the pipe where the init says how the sample ended."""
    text = dict(request["files"])[request["script"]]
    code = _compiled.get(text)
    if code is None:
        if len(_compiled) >= 4:  # a runner's script rarely changes: keep the few last ones
            _compiled.clear()
        code = _compiled[text] = compile(text, "/tmp/work/" + request["script"], "exec", dont_inherit=True)
    status_read, status_write = os.pipe()
    _unshare(CLONE_NEWPID)
    try:
        pid = os.fork()
        if pid == 0:
            try:
                _init(request, code, fds, status_write)
            finally:
                os._exit(SETUP_FAILED)
    except BaseException:
        os.close(status_read)
        raise
    finally:
        os.close(status_write)
        _setns(own_pid_namespace, CLONE_NEWPID)
    return pid, status_read


def _largest_high_water_kib():
    """The largest ``VmHWM`` (KiB) among the processes of this worker's sandbox other than the
    zygote and its sandbox's init: those of the one sample running (read before a timeout's kill,
    after which nobody reaps them who could report their ``ru_maxrss``); ``None`` when none."""
    own, peak = os.getpid(), None
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (own, 1):
            continue
        try:
            fd = os.open("/proc/" + name + "/status", os.O_RDONLY | os.O_CLOEXEC)
            try:
                text = os.read(fd, 1 << 16)
            finally:
                os.close(fd)
        except OSError:
            continue
        for line in text.split(b"\n"):
            if line.startswith(b"VmHWM:"):
                value = int(line.split()[1])
                peak = value if peak is None else max(peak, value)
    return peak


def _sample_signal(status_read):
    """The signal that ended the sample (0: it exited) from its init's report on ``status_read``
    (closed here), or -1 when the init said nothing (killed first)."""
    try:
        said = os.read(status_read, 64)
    except OSError:
        said = b""
    finally:
        os.close(status_read)
    if not said.isdigit():
        return -1
    status = int(said)
    return os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0


def _wait(pid, timeout_ms, control=None):
    """Step 4: ``(waitpid status, timed out, peak KiB or None, CPU microseconds)`` of the init, killed at
    ``timeout_ms``, or at once when the host hung up (``control``: its socket). The peak is
    ``ru_maxrss`` of the init from ``wait4``: the largest of its own and of every process it
    (or a process it reaped) reaped, the sample's included; at a timeout also the live
    processes' high-water marks read just before the kill."""
    pidfd = os.pidfd_open(pid)
    live_peak = None
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if control is not None:
            poller.register(control.fileno(), select.POLLRDHUP)
        events = dict(poller.poll(timeout_ms))
        timed_out = not events
        if pidfd not in events:  # timed out, or the host is gone
            if timed_out:
                live_peak = _largest_high_water_kib()
            os.kill(pid, SIGKILL)  # our unreaped child: its pid cannot name another process
    finally:
        os.close(pidfd)
    while True:
        try:
            _pid, status, usage = os.wait4(pid, 0)
        except InterruptedError:
            continue
        peak = usage.ru_maxrss if live_peak is None else max(live_peak, usage.ru_maxrss)
        return status, timed_out, peak, int((usage.ru_utime + usage.ru_stime) * 1e6)


def _receive(control):
    """One request: ``(body dict, named fds)``, or ``None`` when the host closed the socket."""
    names = ("body", "token", "pass", "started", "stdout", "stderr")
    message, ancillary, _flags, _address = control.recvmsg(16, _socket.CMSG_SPACE(4 * len(names)))
    if not message:
        return None
    received = []
    for level, kind, data in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            received += [int.from_bytes(data[i:i + 4], sys.byteorder) for i in range(0, len(data) - len(data) % 4, 4)]
    fds = dict(zip(names, received))
    if message != b"R" or len(received) != len(names):
        for fd in received:
            os.close(fd)
        raise ValueError(f"malformed request {message[:16]!r} with {len(received)} fds")
    body = b""
    os.lseek(fds["body"], 0, os.SEEK_SET)
    while True:
        chunk = os.read(fds["body"], 1 << 20)
        if not chunk:
            break
        body += chunk
    os.close(fds.pop("body"))
    request = marshal.loads(body)
    request["fds"] = {int(target): name for target, name in request["fds"].items()}
    return request, fds


def _self_test(own_pid_namespace, settings):
    """Run the whole set-up once with an empty script; return None or why it failed."""
    read_end, write_end = os.pipe()
    started_read, started_write = os.pipe()
    null_out = os.open("/dev/null", os.O_WRONLY)
    fds = {"token": os.open("/dev/null", os.O_RDONLY), "pass": os.open("/dev/null", os.O_WRONLY),
           "started": started_write, "stdout": null_out, "stderr": write_end}
    request = dict(settings, files=[("probe.py", "")], argv=["probe.py"], script="probe.py", rlimits=[], env={},
                   fds={})
    try:
        pid, status_read = _start(request, fds, own_pid_namespace)
    except OSError as error:
        return f"unshare(CLONE_NEWPID) or fork failed: {error}"
    finally:
        for fd in fds.values():
            os.close(fd)
    status = _wait(pid, 20_000)[0]
    if _sample_signal(status_read) != 0:
        return "the probe's init did not report how its sample ended"
    said = os.read(read_end, 4096).decode("utf-8", "replace").strip()
    started = os.read(started_read, 1)
    os.close(read_end)
    os.close(started_read)
    if status != 0 or not started:
        return said or f"the probe sample ended with wait status {status}"
    return None


def serve(control_fd):
    control = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET, 0, control_fd)
    own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    settings = marshal.loads(bytes.fromhex(sys.argv[2]))
    why = _self_test(own_pid_namespace, settings)
    control.sendall(b"READY" if why is None else b"FAIL " + why.encode("utf-8", "replace")[:2000])
    if why is not None:
        return
    while True:
        try:
            received = _receive(control)
        except Exception as error:  # a request it cannot read: said, and the next one served
            control.sendall(b"E " + repr(error).encode()[:2000])
            continue
        if received is None:  # the host closed its end (or died): the sandbox ends with us
            return
        request, fds = received
        request.setdefault("keep", settings.get("keep", ()))
        start = _monotonic_us()
        try:
            pid, status_read = _start(request, fds, own_pid_namespace)
        except Exception as error:
            reply = b"E " + repr(error).encode()[:2000]
        else:
            for fd in fds.values():
                os.close(fd)
            fds = {}
            status, timed_out, peak, cpu_us = _wait(pid, request["timeout_ms"], control)
            reply = b"%d %d %d %d %d %d" % (status, timed_out, _monotonic_us() - start, peak,
                                            _sample_signal(status_read), cpu_us)
        for fd in fds.values():
            os.close(fd)
        control.sendall(reply)


def _monotonic_us():
    return time.monotonic_ns() // 1000


if __name__ == "__main__":
    serve(int(sys.argv[1]))
