"""A cluster the collection did not build: hosts set up the way operators run them, reached by Ansible over SSH.

Each host is an OpenSSH server (Debian's openssh-server) on a loopback address of its own, started in a mount
namespace of its own whose packaged directories (/etc/redis, /var/lib/redis, ...) are bind mounts of a folder of
this fixture. A command that arrives over SSH therefore sees the host's own files at the paths Debian's packages
use, and the OS service manager (the package's SysV script, through `service`) runs the server as on a real
host. Nothing here goes through the collection's lab roles or runners.

The hosts share the machine's PID and network namespaces: every host listens on its own address; its processes
are told apart by the PID files in its own /run directories.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

SSHD = "/usr/sbin/sshd"


def missing():
    """What this machine lacks to run foreign hosts (empty when nothing), for a skip message."""
    lacks = []
    if not os.path.exists(SSHD):
        lacks.append("openssh-server (make bootstrap installs it)")
    if shutil.which("unshare") is None:
        lacks.append("unshare (util-linux)")
    if os.geteuid() != 0:
        lacks.append("root (a mount namespace per host)")
    return lacks


def _wait_port(address, port, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((address, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def _ssh_port(addresses):
    for port in (22, 2222):
        try:
            for address in addresses:
                with socket.socket() as sock:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    sock.bind((address, port))
            return port
        except OSError:
            continue
    raise RuntimeError("neither port 22 nor 2222 is free on %s" % ", ".join(addresses))


class Host:
    """One host: its inventory name, its address, its folder, and the packaged directories it owns."""

    def __init__(self, cluster, name, address, dirs):
        self.cluster = cluster
        self.name = name
        self.address = address
        self.folder = os.path.join(cluster.folder, name)
        # {path on the host: folder of this fixture}; each made with the owner and mode of the machine's own
        self.dirs = {path: os.path.join(self.folder, "fs", path.strip("/").replace("/", "-")) for path in dirs}
        self.sshd_pid = None

    def path(self, host_path):
        """The fixture's folder behind a path on the host (which must be under one of its directories)."""
        for root, folder in self.dirs.items():
            if host_path == root or host_path.startswith(root.rstrip("/") + "/"):
                return os.path.join(folder, os.path.relpath(host_path, root))
        raise KeyError("%s is not under a directory of host %s (%s)" % (host_path, self.name, sorted(self.dirs)))

    def _prepare(self, seed):
        os.makedirs(os.path.join(self.folder, "ssh"), exist_ok=True)
        for path, folder in self.dirs.items():
            os.makedirs(folder, exist_ok=True)
            if os.path.isdir(path) and path in seed:  # the package's files, owners and modes kept
                subprocess.run(["cp", "-a", path + "/.", folder], check=True)
            if os.path.isdir(path):
                shutil.copystat(path, folder)
                stat = os.stat(path)
                os.chown(folder, stat.st_uid, stat.st_gid)
        key = os.path.join(self.folder, "ssh", "host_key")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
        config = os.path.join(self.folder, "ssh", "sshd_config")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write(
                "\n".join(
                    [
                        "ListenAddress %s:%d" % (self.address, self.cluster.ssh_port),
                        "HostKey %s" % key,
                        "PidFile %s" % os.path.join(self.folder, "ssh", "sshd.pid"),
                        "AuthorizedKeysFile %s" % self.cluster.authorized_keys,
                        "PermitRootLogin prohibit-password",
                        "PasswordAuthentication no",
                        "KbdInteractiveAuthentication no",
                        "UsePAM no",
                        "StrictModes no",
                        "AcceptEnv LANG LC_*",
                        "Subsystem sftp internal-sftp",
                        "",
                    ]
                )
            )
        with open(key + ".pub", encoding="utf-8") as handle:
            return "%s %s" % (self.address, " ".join(handle.read().split()[:2]))

    def start(self):
        """sshd in a mount namespace of its own, the host's directories (and the ones every host shares, such as
        a package's installation) bound over the packaged paths."""
        mounts = []
        for path, folder in list(self.dirs.items()) + list(self.cluster.shared.items()):
            if not os.path.isdir(path):  # a mount point the machine lacks: made here, removed at the end
                made = path
                while not os.path.isdir(os.path.dirname(made)):
                    made = os.path.dirname(made)
                os.makedirs(path)
                self.cluster.made.append(made)
            mounts.append("mount --bind %s %s" % (shlex.quote(folder), shlex.quote(path)))
        script = " && ".join(mounts + ["exec %s -D -e -f %s" % (SSHD, os.path.join(self.folder, "ssh", "sshd_config"))])
        log = open(os.path.join(self.folder, "sshd.log"), "ab")
        proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        self.sshd_pid = proc.pid
        self._proc = proc
        if not _wait_port(self.address, self.cluster.ssh_port):
            raise RuntimeError("sshd of %s did not listen on %s:%d" % (self.name, self.address, self.cluster.ssh_port))

    def ssh(self, command, check=True, env=None, timeout=120):
        """Run a shell command on the host over SSH, as an operator would; env is sent as exported variables in
        its standard input (never on a command line)."""
        prelude = "".join("export %s=%s\n" % (k, shlex.quote(str(v))) for k, v in (env or {}).items())
        proc = subprocess.run(
            self.cluster.ssh_argv(self) + ["sh", "-s"],
            input=prelude + command + "\n",
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            raise RuntimeError(
                "on %s: %s exited %d: %s"
                % (self.name, command[:200], proc.returncode, (proc.stderr + proc.stdout)[-800:])
            )
        return proc

    def stop(self):
        proc = getattr(self, "_proc", None)
        if proc is None:
            return
        # The sessions it forked (Ansible's persistent connections among them) end with it.
        for pid in _children(proc.pid):
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._proc = None


class ForeignCluster:
    """Hosts reached over SSH with a key of this fixture, their host keys checked against its known_hosts."""

    def __init__(self, folder, hosts, dirs, seed=(), ssh_port=None, shared=None):
        """hosts: [(inventory name, loopback address)]; dirs: the packaged directories each host owns; seed: the
        ones copied from this machine's packaged files (a config directory as the package installed it);
        ssh_port: 22 unless the machine's own sshd holds it on every address, then 2222 (as the inventory says);
        shared: {path on every host: one folder of this fixture} (an installation the hosts' packages share)."""
        self.folder = folder
        self.ssh_port = ssh_port or _ssh_port([address for _name, address in hosts])
        self.client_key = os.path.join(folder, "client_key")
        self.authorized_keys = os.path.join(folder, "authorized_keys")
        self.known_hosts = os.path.join(folder, "known_hosts")
        self.hosts = [Host(self, name, address, dirs) for name, address in hosts]
        self._seed = set(seed)
        self.shared = dict(shared or {})
        self.made = []  # mount points made on this machine, removed by stop()
        self.stoppers = []  # commands each host runs at the end (its servers' service stop)
        self.pidfiles = []  # host paths of its servers' PID files: what the stoppers left running is ended by PID

    def start(self):
        os.makedirs(self.folder, exist_ok=True)
        os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege separation directory
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", self.client_key], check=True)
        shutil.copyfile(self.client_key + ".pub", self.authorized_keys)
        lines = [host._prepare(self._seed) for host in self.hosts]
        with open(self.known_hosts, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
        for host in self.hosts:
            host.start()
        return self

    def ssh_options(self):
        return [
            "-i",
            self.client_key,
            "-o",
            "UserKnownHostsFile=%s" % self.known_hosts,
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=10",
        ]

    def ssh_argv(self, host):
        return ["ssh"] + self.ssh_options() + ["-p", str(self.ssh_port), "root@%s" % host.address]

    def connection_vars(self):
        """The inventory variables Ansible needs to reach the hosts: SSH as root with this fixture's key, host keys
        checked, and the managed node's Python (the one whose libraries the modules import)."""
        return dict(
            ansible_connection="ssh",
            ansible_user="root",
            ansible_port=self.ssh_port,
            ansible_ssh_private_key_file=self.client_key,
            ansible_ssh_common_args="-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes" % self.known_hosts,
            ansible_python_interpreter=sys.executable,
        )

    def tls_vars(self):
        """The inventory's TLS variables for the client certificate this fixture made (self.tls)."""
        return dict(
            tactician_tls=True,
            tactician_ca_file=self.tls["ca"],
            tactician_client_cert_file=self.tls["client_cert"],
            tactician_client_key_file=self.tls["client_key"],
        )

    def write_inventory(self, folder, group, group_vars, all_vars=None, host_vars=None):
        """The operator's inventory in folder: the controller (localhost) and the hosts in group, reached over
        SSH; group_vars/<group>.yml and group_vars/all.yml (secrets: mode 0600). Returns its directory."""
        import yaml

        os.makedirs(os.path.join(folder, "group_vars"))
        hosts = {
            host.name: dict(self.connection_vars(), ansible_host=host.address, **(host_vars or {}).get(host.name, {}))
            for host in self.hosts
        }
        controller = {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}
        files = {
            "hosts.yml": {"all": {"children": {"controller": {"hosts": controller}, group: {"hosts": hosts}}}},
            os.path.join("group_vars", group + ".yml"): group_vars,
            os.path.join("group_vars", "all.yml"): all_vars or {},
        }
        for name, content in files.items():
            path = os.path.join(folder, name)
            with open(path, "w", encoding="utf-8") as handle:
                yaml.safe_dump(content, handle)
            os.chmod(path, 0o600)
        self.inventory = folder
        return folder

    def roll(self, store, settings, check=False, extra_vars=None, on_event=None):
        """playbooks/rolling_reconfigure.yml on this cluster's inventory (check mode with diff when check);
        extra_vars are added to the store and the settings, on_event is run_playbook's."""
        from ansible_run import ROOT, run_playbook

        return run_playbook(
            os.path.join(ROOT, "playbooks", "rolling_reconfigure.yml"),
            self.inventory,
            extra_vars=dict(extra_vars or {}, tactician_store=store, tactician_settings=settings),
            check=check,
            diff=check,
            on_event=on_event,
        )

    def roll_killing_the_first_restart(self, store, settings, pid_of, rejoin_timeout):
        """A restart roll of settings during which the first server that comes back with a new PID (pid_of(host),
        which may raise OSError or ValueError while its PID file is being written) is killed with SIGKILL the moment
        its PID file names it. Returns (the roll's result, {host, pid} of the server killed, or {} when none was)."""
        import threading
        import time

        before = {host.name: pid_of(host) for host in self.hosts}
        killed = {}
        stop = threading.Event()

        def kill_the_first_new_server():
            while not stop.is_set() and not killed:
                for host in self.hosts:
                    try:
                        pid = pid_of(host)
                    except (OSError, ValueError):
                        continue
                    if pid != before[host.name]:
                        os.kill(pid, signal.SIGKILL)
                        killed.update(host=host, pid=pid)
                        return
                time.sleep(0.05)

        killer = threading.Thread(target=kill_the_first_new_server, daemon=True)
        killer.start()
        try:
            result = self.roll(store, settings, extra_vars={"tactician_rejoin_timeout": rejoin_timeout})
        finally:
            stop.set()
            killer.join(timeout=10)
        return result, killed

    def stop(self):
        """Each host's stop commands (its servers), then its sshd; returns what could not be stopped."""
        left = []
        for host in self.hosts:
            for command in self.stoppers:
                try:
                    host.ssh(command, check=False, timeout=60)
                except (OSError, subprocess.SubprocessError) as exc:
                    left.append("%s: %s (%s)" % (host.name, command, exc))
            for pidfile in self.pidfiles:
                pid = _pid_of(host.path(pidfile))
                if pid is not None:
                    left.append("%s: %s still ran (PID %d), ended" % (host.name, pidfile, pid))
                    os.kill(pid, signal.SIGKILL)
            host.stop()
        for path in sorted(set(self.made), key=len, reverse=True):
            if _only_dirs(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                left.append("%s is not empty" % path)
        return left


def install_load_driver():
    """The load driver where the lab installs it (role tactician.nosql.load_driver, resolved once per checkout):
    the bench host of a foreign cluster runs it from there, as an operator runs it from where they installed it.
    Returns its directory."""
    from ansible_run import ROOT, run_playbook

    base = os.path.join(ROOT, ".lab")
    folder = os.path.join(base, "driver-install")
    os.makedirs(folder, exist_ok=True)
    playbook = os.path.join(folder, "install.yml")
    with open(playbook, "w", encoding="utf-8") as handle:
        handle.write(
            "- hosts: localhost\n  gather_facts: false\n  roles:\n    - role: tactician.nosql.load_driver\n"
            "      load_driver_base_dir: %s\n" % base
        )
    result = run_playbook(playbook, os.path.join(ROOT, "tests", "integration", "inventory", "localhost.yml"))
    if result.returncode != 0:
        raise RuntimeError("installing the load driver failed: %s" % result.stderr[-3000:])
    return os.path.join(base, "load-driver")


def _only_dirs(path):
    """Whether path holds nothing but (empty) directories: a mount point tree this fixture made."""
    for _root, _dirs, files in os.walk(path):
        if files:
            return False
    return True


def _children(parent):
    """PIDs whose parent is parent (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, encoding="utf-8") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == parent:
            found.append(int(entry))
    return found


def _pid_of(path):
    """The PID in a PID file when that process still runs, else None."""
    try:
        with open(path, encoding="utf-8") as handle:
            pid = int(handle.read().strip() or 0)
    except (OSError, ValueError):
        return None
    if pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except OSError:
        return None
    return pid
