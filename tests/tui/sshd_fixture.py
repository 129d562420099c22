"""A real OpenSSH server on a free loopback port, for the remote-view tests.

``start_sshd(tmp)`` makes a throwaway host key and user key, an
``sshd_config`` that accepts only that key, and a client ``ssh_config``
naming the server ``ptest`` (known_hosts in ``tmp``, the state directories
passed with SetEnv/AcceptEnv), starts ``sshd -D`` and waits until a login
works. The far side gets a HOME of its own (``tmp/home``, no shell rc files):
sshd runs each command through the user's shell, and bash reads ~/.bashrc
for ssh commands; one that waits (pyenv's rehash on a lock a killed shell
left behind waits 60 s) would hang every login. Its numba cache stays the
user's (XDG_CACHE_HOME), so the far side does not compile again. It returns
the environment a ``probetop --remote ptest`` needs (``PROBETOP_SSH`` with
``-F``, ``PROBETOP_REMOTE`` = this Python running probetop), or
raises ``Unavailable`` with the reason (the tests skip).
Nothing listens beyond 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = "/usr/sbin/sshd"


class Unavailable(Exception):
    """sshd cannot run here; the message says why."""


@dataclass
class Sshd:
    proc: subprocess.Popen[bytes]
    env: dict[str, str]
    config: Path
    port: int

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_sshd(tmp: Path, state: Path, runtime: Path) -> Sshd:
    if not os.path.exists(SSHD) or shutil.which("ssh") is None:
        raise Unavailable("openssh-server/openssh-client not installed (make system-deps)")
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation dir
    for key in ("host", "user"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / key)], check=True
        )
    (tmp / "authorized_keys").write_text((tmp / "user.pub").read_text())
    (tmp / "authorized_keys").chmod(0o600)
    port = _free_port()
    home = tmp / "home"
    home.mkdir(mode=0o700, exist_ok=True)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    user = pwd.getpwuid(os.getuid()).pw_name  # not $USER: a CI job may set it to anything
    (tmp / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {tmp / 'host'}\n"
        f"AuthorizedKeysFile {tmp / 'authorized_keys'}\nPidFile {tmp / 'sshd.pid'}\n"
        "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
        "AcceptEnv XDG_STATE_HOME XDG_RUNTIME_DIR\n"
        # The server's SetEnv (OpenSSH 8.7+) is the one that may replace HOME.
        f"SetEnv HOME={home} XDG_CACHE_HOME={cache}\n"
    )
    config = tmp / "ssh_config"
    config.write_text(
        f"Host ptest\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n"
        f"  IdentityFile {tmp / 'user'}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {tmp / 'known_hosts'}\n  StrictHostKeyChecking accept-new\n"
        f"  SetEnv XDG_STATE_HOME={state} XDG_RUNTIME_DIR={runtime}\n"
    )
    log = open(tmp / "sshd.log", "wb")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(tmp / "sshd_config")], stdout=log, stderr=log
    )
    env = dict(
        os.environ,
        PROBETOP_SSH=f"ssh -F {shlex.quote(str(config))}",
        PROBETOP_REMOTE=f"{shlex.quote(sys.executable)} -m probetop.tui.main",
    )
    deadline = time.monotonic() + 60
    why = "no attempt finished"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Unavailable(f"sshd exited: {(tmp / 'sshd.log').read_text()[-300:]}")
        try:
            ok = subprocess.run(
                ["ssh", "-F", str(config), "-o", "BatchMode=yes", "ptest", "true"],
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=30,
            )
        except subprocess.TimeoutExpired:  # a loaded machine: try again until the deadline
            why = "`ssh ptest true` did not return in 30 s"
            continue
        if ok.returncode == 0:
            return Sshd(proc, env, config, port)
        why = f"ssh exit {ok.returncode}: {ok.stderr.decode(errors='replace')[-300:]}"
        time.sleep(0.2)
    proc.terminate()
    raise Unavailable(
        f"no login through sshd in 60 s ({why}); its log: {(tmp / 'sshd.log').read_text()[-300:]}"
    )
