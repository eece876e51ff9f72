"""A PostgreSQL server of the test run's own, from Debian's package, set up as an operator sets up a shared one:
its own data directory (initdb), TCP on one loopback address only with TLS (a certificate naming the address,
signed by the run's CA), scram-sha-256 passwords and a client certificate signed by that CA required for every
connection over the network; a role and a database for the history. Started as the package's `postgres` user
(the server refuses root), stopped by its PID at the end.

The password reaches libpq through a password file of mode 0600 (PGPASSFILE), never a URL or a command line.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time

ADDRESS = "127.0.0.1"
ROLE = "tactician"
DATABASE = "tactician_history"


def binaries():
    """The directory of the newest PostgreSQL server binaries Debian's package installed, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4]))
    return os.path.dirname(found[-1]) if found else None


def missing():
    """What this machine lacks to start the server (empty when nothing), for a skip message."""
    lacks = []
    if binaries() is None:
        lacks.append("the postgresql package (make bootstrap installs it)")
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        lacks.append("the postgres user (the postgresql package adds it)")
    if os.geteuid() != 0:
        lacks.append("root (the server runs as the postgres user)")
    return lacks


def _free_port():
    with socket.socket() as sock:
        sock.bind((ADDRESS, 0))
        return sock.getsockname()[1]


class PostgresServer:
    def __init__(self, authority):
        self.bin = binaries()
        self.user = pwd.getpwnam("postgres")
        # Under /tmp, owned by postgres: the server must reach its files, which a root-only test folder hides.
        self.folder = tempfile.mkdtemp(prefix="tactician-pg-")
        os.chown(self.folder, self.user.pw_uid, self.user.pw_gid)
        self.data = os.path.join(self.folder, "data")
        self.port = _free_port()
        self.password = secrets.token_urlsafe(18)
        self.process = None
        self._log = None
        cert, key = authority.issue("postgres", names=[ADDRESS], server=True)
        self.server_cert = self._own(cert, "server.pem")
        self.server_key = self._own(key, "server-key.pem")
        self.ca = self._own(authority.ca_file, "ca.pem")
        self.client_cert, self.client_key = authority.issue("history-client", server=False, client=True)
        self.passfile = os.path.join(authority.folder, "pgpass")
        with open(self.passfile, "w", encoding="utf-8") as handle:
            handle.write("%s:%d:%s:%s:%s\n" % (ADDRESS, self.port, DATABASE, ROLE, self.password))
        os.chmod(self.passfile, 0o600)
        self.ca_file = authority.ca_file

    def _own(self, source, name):
        target = os.path.join(self.folder, name)
        shutil.copyfile(source, target)
        os.chown(target, self.user.pw_uid, self.user.pw_gid)
        os.chmod(target, 0o600)
        return target

    def _as_postgres(self, argv, **kwargs):
        return subprocess.run(["runuser", "-u", "postgres", "--"] + argv, check=True, capture_output=True, **kwargs)

    def url(self, client_certificate=True):
        """The history's URL: the server's certificate verified and its address checked, the client certificate
        presented (unless told otherwise); no password in it."""
        query = "sslmode=verify-full&sslrootcert=%s" % self.ca_file
        if client_certificate:
            query += "&sslcert=%s&sslkey=%s" % (self.client_cert, self.client_key)
        return "postgresql://%s@%s:%d/%s?%s" % (ROLE, ADDRESS, self.port, DATABASE, query)

    def environ(self):
        """What a process that opens the history needs in its environment: the password file."""
        return {"PGPASSFILE": self.passfile}

    def start(self):
        self._as_postgres(
            [os.path.join(self.bin, "initdb"), "-D", self.data, "-U", "postgres", "-E", "UTF8", "--auth-local=trust"]
        )
        with open(os.path.join(self.data, "postgresql.conf"), "a", encoding="utf-8") as handle:
            handle.write(
                "\n".join(
                    [
                        "listen_addresses = '%s'" % ADDRESS,
                        "port = %d" % self.port,
                        "unix_socket_directories = '%s'" % self.folder,
                        "ssl = on",
                        "ssl_cert_file = '%s'" % self.server_cert,
                        "ssl_key_file = '%s'" % self.server_key,
                        "ssl_ca_file = '%s'" % self.ca,
                        "password_encryption = 'scram-sha-256'",
                        "fsync = off",
                        "",
                    ]
                )
            )
        with open(os.path.join(self.data, "pg_hba.conf"), "w", encoding="utf-8") as handle:
            # the superuser on the local socket only; over the network TLS, a password and a certificate of the CA
            handle.write(
                "local all postgres trust\nhostssl all all %s/32 scram-sha-256 clientcert=verify-ca\n" % ADDRESS
            )
        log = self._log = open(os.path.join(self.folder, "server.log"), "w", encoding="utf-8")
        os.chown(log.name, self.user.pw_uid, self.user.pw_gid)
        self.process = subprocess.Popen(
            ["runuser", "-u", "postgres", "--", os.path.join(self.bin, "postgres"), "-D", self.data],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready = subprocess.run(
                [os.path.join(self.bin, "pg_isready"), "-h", self.folder, "-p", str(self.port)],
                capture_output=True,
                check=False,
            )
            if ready.returncode == 0:
                break
            if self.process.poll() is not None:
                raise RuntimeError("postgres exited: %s" % open(log.name, encoding="utf-8").read()[-3000:])
            time.sleep(0.2)
        else:
            tail = open(log.name, encoding="utf-8").read()[-3000:]
            raise RuntimeError("postgres did not accept connections: %s" % tail)
        # The role's password goes in on standard input, not on a command line.
        script = "CREATE ROLE %s LOGIN PASSWORD '%s';\nCREATE DATABASE %s OWNER %s;\n" % (
            ROLE,
            self.password,
            DATABASE,
            ROLE,
        )
        self._as_postgres(
            [
                os.path.join(self.bin, "psql"),
                "-v",
                "ON_ERROR_STOP=1",
                "-q",
                "-h",
                self.folder,
                "-p",
                str(self.port),
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-f",
                "-",
            ],
            input=script.encode("utf-8"),
        )
        return self

    def stop(self):
        """A fast shutdown by the server's PID; the data directory is removed. Returns what was left running."""
        left = []
        if self.process is not None and self.process.poll() is None:
            pidfile = os.path.join(self.data, "postmaster.pid")
            try:
                with open(pidfile, encoding="utf-8") as handle:
                    os.kill(int(handle.readline().strip()), signal.SIGINT)
            except (OSError, ValueError):
                self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                left.append("postgres (runuser PID %d)" % self.process.pid)
        if self._log is not None:
            self._log.close()
        shutil.rmtree(self.folder, ignore_errors=True)
        return left
