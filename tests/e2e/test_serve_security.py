"""Who may ask a served program (``tftrace.serve``) what, and what ``tftrace capture``
takes from an endpoint: loopback by default, a token beyond it, the ``Host`` header, no
secret in any answer, a stalled or reset client, task names, answer sizes and the recorded
environment."""

from __future__ import annotations

import http.client
import json
import re
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, WORKLOADS, free_port, free_port_pair, quiet_env
from conftest import tftrace as cli
from tftrace.errors import TftraceError
from tftrace.tracer import capture as capture_module
from tftrace.tracer.capture import Address, check_task_name, parse_addresses
from tftrace.tracer.environment import RECORDED_ENV_VARS, relevant_env
from tftrace.tracer.serve_access import TOKEN_ENV, access_for, endpoint_token, split_host

SECRETS = {
    "argv": "SECRET123",  # --api-key=SECRET123 on the program's command line
    "TF_TOKEN_example_com": "SECRET456",  # Terraform's credentials: TF_, not TensorFlow's
    "TF_HTTP_PASSWORD": "SECRET789",
}
SECRET_ENV = {"TF_TOKEN_example_com": "SECRET456", "TF_HTTP_PASSWORD": "SECRET789"}
POOLS = {"TF_NUM_INTRAOP_THREADS": "2", "TF_NUM_INTEROP_THREADS": "2"}
INFO = "/tftrace/v1/info"


class Served:
    """tests/workloads/served.py with secrets on its command line and in its environment;
    its stderr in a file, read while it runs."""

    def __init__(self, tmp: Path, host: str | None = None) -> None:
        self.port = free_port_pair()
        self.data_port = self.port + 1
        self.err_path = tmp / f"stderr-{self.port}.txt"
        command = [sys.executable, str(WORKLOADS / "served.py"), "--port", str(self.port)]
        command += ["--host", host] if host is not None else []
        command += [f"--api-key={SECRETS['argv']}"]
        with open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=quiet_env(**POOLS, **SECRET_ENV),
            )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if line != "serving":
            self.stop()
            pytest.fail(f"the served workload did not start ({line!r}): {self.stderr()[-2000:]}")

    def stderr(self) -> str:
        return self.err_path.read_text()

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.communicate(input="", timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()


def ask(
    port: int,
    path: str = INFO,
    host: str | None = "default",
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    """(status, body) of GET ``path`` on 127.0.0.1:``port`` with this ``Host`` header (None:
    none at all)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest("GET", path, skip_host=True)
        if host is not None:
            conn.putheader("Host", f"127.0.0.1:{port}" if host == "default" else host)
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _window(seconds: float = 1.0, ahead: float = 0.0) -> str:
    now = time.time_ns() + int(ahead * 1e9)
    return f"?start_wall_ns={now - int(seconds * 1e9)}&end_wall_ns={now}"


def _non_loopback_address() -> str | None:
    """An address of this machine other than loopback, None where it has none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: the route picks the address
            address = str(s.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def _listening(port: int) -> set[str]:
    """The local addresses listening on TCP ``port`` (/proc/net/tcp and tcp6)."""
    found = set()
    for name, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        path = Path("/proc/net") / name
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            address, port_hex = fields[1].split(":")
            if fields[3] != "0A" or int(port_hex, 16) != port:
                continue
            raw = bytes.fromhex(address)
            words = struct.unpack(f"<{len(raw) // 4}I", raw)  # each 32-bit word little-endian
            found.add(socket.inet_ntop(family, struct.pack(f">{len(words)}I", *words)))
    return found


@pytest.fixture(scope="module")
def loopback(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = Served(tmp_path_factory.mktemp("loopback"))
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, str]]:
    served = Served(tmp_path_factory.mktemp("wide"), host="0.0.0.0")
    try:
        lines = [line for line in served.stderr().splitlines() if "token" in line]
        assert len(lines) == 1, served.stderr()  # printed once, in one line
        token = re.search(r"\?token=(\S+)", lines[0])
        assert token is not None, lines[0]
        yield served, token.group(1)
    finally:
        served.stop()


@pytest.mark.slow
class TestLoopback:
    def test_the_endpoint_listens_on_loopback_only(self, loopback):
        assert _listening(loopback.data_port) == {"127.0.0.1"}
        assert ask(loopback.data_port)[0] == 200
        outside = _non_loopback_address()
        if outside is not None:
            with pytest.raises(OSError), socket.create_connection((outside, loopback.data_port), 5):
                pass
        assert "token" not in loopback.stderr()  # no token on loopback

    def test_a_foreign_host_header_is_refused(self, loopback):
        port = loopback.data_port
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "localhost"):
            assert ask(port, host=host)[0] == 200, host
        for host in (f"evil.example.com:{port}", "evil.example.com", f"localhost:{port + 5}", None):
            status, body = ask(port, host=host)
            assert status == 403, host
            assert "Host" in json.loads(body)["error"]
        # the machine's own name and addresses are for an endpoint bound beyond loopback
        outside = _non_loopback_address()
        if outside is not None:
            assert ask(port, host=f"{outside}:{port}")[0] == 403

    def test_no_answer_holds_the_command_line_or_other_environment(self, loopback):
        port = loopback.data_port
        answers = [ask(port)[1], ask(port, "/tftrace/v1/run" + _window())[1]]
        answers.append(ask(port, "/tftrace/v1/samples" + _window())[1])
        answers.append(ask(port, "/tftrace/v1/nothing")[1])
        for body in answers:
            for secret in SECRETS.values():
                assert secret.encode() not in body
        run = json.loads(answers[1])
        data = run["manifest"]
        assert "argv" not in data and "cwd" not in data
        assert data["target"]["args"] == [] and run["report"]["target"]["args"] == []
        assert data["workload_command"][-1].endswith("served.py")
        assert data["env"]["TF_NUM_INTRAOP_THREADS"] == "2"
        assert set(data["env"]) <= RECORDED_ENV_VARS

    def test_a_stalled_client_blocks_no_other(self, loopback):
        port = loopback.data_port
        stalled = socket.create_connection(("127.0.0.1", port))
        try:
            stalled.sendall(b"GET /tftrace/v1/info HTTP/1.1\r\nHost: local")  # never ends
            waiting: list[Any] = []  # a window that ends in 3 s: its answer waits for it
            later = "/tftrace/v1/run" + _window(1.0, ahead=3.0)
            thread = threading.Thread(target=lambda: waiting.append(ask(port, later)))
            thread.start()
            time.sleep(0.3)
            began = time.monotonic()
            assert ask(port)[0] == 200
            assert time.monotonic() - began < 2.0
            thread.join(30)
            assert waiting and waiting[0][0] == 200
        finally:
            stalled.close()

    def test_a_reset_client_prints_at_most_one_line(self, loopback):
        before = loopback.stderr()
        port = loopback.data_port
        for request in (b"GET /tftrace/v1/info HTT", b"GET /tftrace/v1/run" + _window().encode()):
            client = socket.create_connection(("127.0.0.1", port))
            if b"run" in request:
                request += f" HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
            client.sendall(request)
            time.sleep(0.2)
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()  # a reset
        time.sleep(3.0)
        assert ask(port)[0] == 200  # still answering
        added = loopback.stderr()[len(before) :]
        assert len(added.splitlines()) <= 1, added
        assert "Traceback" not in added


@pytest.mark.slow
class TestBeyondLoopback:
    def test_it_asks_for_the_token(self, wide):
        served, token = wide
        port = served.data_port
        assert _listening(port) == {"0.0.0.0"}
        status, body = ask(port)
        assert status == 403 and TOKEN_ENV in json.loads(body)["error"]
        assert ask(port, headers={"Authorization": "Bearer wrong"})[0] == 403
        assert ask(port, INFO + "?token=wrong")[0] == 403
        assert ask(port, headers={"Authorization": f"Bearer {token}"})[0] == 200
        assert ask(port, INFO + f"?token={token}")[0] == 200
        host = socket.gethostname()
        named = ask(port, host=f"{host}:{port}", headers={"Authorization": f"Bearer {token}"})
        assert named[0] == 200
        foreign = ask(port, host="evil.example.com", headers={"Authorization": f"Bearer {token}"})
        assert foreign[0] == 403
        run = ask(port, "/tftrace/v1/run" + _window(), headers={"Authorization": f"Bearer {token}"})
        assert run[0] == 200
        assert not any(secret.encode() in run[1] for secret in SECRETS.values())

    def test_a_capture_gives_the_token_or_gets_the_trace_alone(self, wide, tmp_path):
        served, token = wide
        address = f"grpc://localhost:{served.port}"
        done = cli("capture", address, "--duration", "1", "-o", tmp_path / "with", timeout=400,
                   env=quiet_env(**{TOKEN_ENV: token}))  # fmt: skip
        assert done.returncode == 0, done.stderr
        (host,) = json.loads((tmp_path / "with" / "capture.json").read_text())["hosts"]
        assert host["data"] == "received"
        manifest = (tmp_path / "with" / host["path"] / "manifest.json").read_text()
        assert token not in manifest and "SECRET" not in manifest
        assert "argv" not in json.loads(manifest)

        done = cli("capture", address, "--duration", "1", "-o", tmp_path / "without", timeout=400)
        assert done.returncode == 0, done.stderr
        (host,) = json.loads((tmp_path / "without" / "capture.json").read_text())["hosts"]
        assert host["answered"] and "refused" in host["data"] and TOKEN_ENV in host["data"]


# Without TensorFlow: the checks themselves, and a capture against a fake endpoint.


def test_host_headers_and_tokens_by_hand():
    assert split_host("LocalHost.:6010") == ("localhost", 6010)
    assert split_host("[::1]:6010") == ("::1", 6010) and split_host("[::1]") == ("::1", None)
    for bad in ("a:b", "[::1", "[::1]x", "a b:1", "", "h:123456", "user@h:1"):
        assert split_host(bad) is None, bad
    local = access_for("127.0.0.1", "127.0.0.1", 6010, {})
    assert local.token is None and not local.wide
    assert local.refusal("localhost:6010", None) is None
    assert local.refusal("127.0.0.2:6010", None) is None  # a loopback address
    assert local.refusal("192.0.2.7:6010", None) is not None
    assert local.refusal("rebound.example.com:6010", None) is not None
    assert local.refusal("localhost:6011", None) is not None
    config = '{"cluster": {"worker": ["w0.job.svc:2222"]}, "task": {"type": "worker", "index": 0}}'
    wide = access_for("0.0.0.0", "0.0.0.0", 6010, {TOKEN_ENV: "x" * 20, "TF_CONFIG": config})
    assert wide.wide and wide.token == "x" * 20 and "x" * 20 not in repr(wide)
    assert wide.refusal("w0.job.svc:6010", "x" * 20) is None  # its name in TF_CONFIG
    assert wide.refusal("192.0.2.7:6010", "x" * 20) is None  # an address of the machine
    assert wide.refusal(f"{socket.gethostname()}:6010", "x" * 20) is None
    assert wide.refusal("localhost:6010", None) is not None
    assert wide.refusal("localhost:6010", "x" * 19) == "wrong token"
    assert wide.refusal("evil.example.com:6010", "x" * 20) is not None


def test_a_short_or_missing_token_in_the_environment_is_replaced(capsys):
    made = endpoint_token({})
    assert len(made) >= 40 and made != endpoint_token({})
    assert endpoint_token({TOKEN_ENV: "short"}) not in ("short", made)
    assert "shorter than" in capsys.readouterr().err
    assert capture_module.TOKEN_ENV == TOKEN_ENV


@pytest.mark.parametrize("name", ["..", ".", "", "a/b", "/abs", "a\\b", "a\0b", "../../x"])
def test_a_task_name_that_is_not_one_directory_is_refused(name):
    with pytest.raises(TftraceError, match="task name"):
        check_task_name(name, "grpc://h:1")


def test_plain_task_names_pass():
    for name in ("worker-0", "chief-0", "ps-12", "evaluator-0"):
        check_task_name(name, "grpc://h:1")


def test_addresses_carry_their_token():
    a, b = parse_addresses("grpc://h0:6009?token=abc&data_port=7000,grpc://h1:6009", "dflt")
    assert (a.token, a.data_port, b.token) == ("abc", 7000, "dflt")
    assert "abc" not in repr(a) and a == Address("h0", 6009, 7000)
    with pytest.raises(TftraceError) as raised:
        parse_addresses("grpc://h0:6009?token=s3cr3t&other=1")
    assert "s3cr3t" not in str(raised.value)


class FakeEndpoint:
    """A local HTTP server answering GET with ``answers[path]``: (status, headers, body);
    it keeps the Authorization header of each request."""

    def __init__(self, answers: dict[str, tuple[int, dict[str, str], bytes]]) -> None:
        seen: list[str | None] = []
        self.seen = seen

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(self.headers.get("Authorization"))
                status, headers, body = answers.get(self.path.split("?")[0], (404, {}, b"{}"))
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = HTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.http.server_address[1]
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def _info_answer(task: Any) -> bytes:
    anchor = {"wall_ns": 1, "monotonic_ns": 1, "boottime_ns": 1, "uncertainty_ns": 1}
    return json.dumps({"protocol": 1, "task": task, "anchor": anchor}).encode()


def test_a_capture_refuses_a_task_name_outside_its_directory(tmp_path):
    fake = FakeEndpoint({INFO: (200, {}, _info_answer(".."))})
    try:
        address = f"grpc://127.0.0.1:{free_port()}?data_port={fake.port}"
        done = cli("capture", address, "--duration", "1", "-o", tmp_path / "out" / "job")
    finally:
        fake.close()
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "task name '..'" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["out"]  # -o removed, nothing else


def test_answers_are_read_up_to_a_limit_and_never_followed_elsewhere(tmp_path):
    other = FakeEndpoint({"/elsewhere": (200, {}, b"{}")})
    big = b"x" * 2000
    redirect = {"Location": f"http://127.0.0.1:{other.port}/elsewhere"}
    fake = FakeEndpoint({"/tftrace/v1/big": (200, {}, big), INFO: (302, redirect, b"")})
    address = Address("127.0.0.1", 1, fake.port, token="tok")
    try:
        assert capture_module._get(address, "big", 5, 2000) == big
        with pytest.raises(ValueError, match="over 1999 bytes"):
            capture_module._get(address, "big", 5, 1999)
        dest = tmp_path / "samples.npz"
        with pytest.raises(ValueError):
            capture_module._save(address, "big", 5, 1000, dest)
        assert list(tmp_path.iterdir()) == []  # nothing kept of an answer too large
        capture_module._save(address, "big", 5, 2000, dest)
        assert dest.read_bytes() == big
        info, problem, *_ = capture_module._info(address)
        assert info is None and problem is not None  # a redirect is not followed
    finally:
        fake.close()
        other.close()
    assert fake.seen and set(fake.seen) == {"Bearer tok"}
    assert other.seen == []  # the token went nowhere else


# The recorded environment: names, never prefixes.


def test_the_recorded_environment_is_an_allow_list():
    env = {
        "TF_NUM_INTRAOP_THREADS": "2",
        "OMP_NUM_THREADS": "1",
        "KMP_BLOCKTIME": "0",
        "TF_TOKEN_example_com": "s",
        "TF_HTTP_PASSWORD": "s",
        "TF_VAR_db_password": "s",
        "TF_CONFIG": "{}",
        "OMP_SECRET": "s",
        "MKL_LICENSE_KEY": "s",
        "HOME": "/x",
    }
    assert relevant_env(env) == {
        "KMP_BLOCKTIME": "0",
        "OMP_NUM_THREADS": "1",
        "TF_NUM_INTRAOP_THREADS": "2",
    }


def test_every_variable_the_analyses_read_is_recorded_and_documented():
    from tftrace.analysis.findings.contention_rules import LIBRARY_VARIABLES
    from tftrace.analysis.metrics.census_pools import ANY_SIZE_VAR, SIZE_VARS
    from tftrace.analysis.model.vocabulary import ONEDNN_ENV, POOL_ENV_VARS
    from tftrace.tracer.child.thread_libraries import SIZE_ENV_VARS

    read = {*POOL_ENV_VARS.values(), ONEDNN_ENV, *ANY_SIZE_VAR, *SIZE_ENV_VARS}
    read |= {v for names in SIZE_VARS.values() for v in names}
    read |= {v for _, v in LIBRARY_VARIABLES}
    assert read <= RECORDED_ENV_VARS, read - RECORDED_ENV_VARS
    documented = set(
        re.findall(r"^\| `([A-Z0-9_]+)`", (ROOT / "docs/analyses.md").read_text(), re.M)
    )
    assert documented == set(RECORDED_ENV_VARS), documented ^ set(RECORDED_ENV_VARS)


@pytest.mark.slow
def test_record_keeps_no_credential_of_the_environment(record):
    env = quiet_env(OMP_NUM_THREADS="1", **SECRET_ENV)
    done = record(WORKLOADS / "env_steps.py", "2", env=env)
    assert done.returncode == 0, done.stderr
    text = (done.run / "manifest.json").read_text()
    manifest = json.loads(text)
    assert manifest["env"]["OMP_NUM_THREADS"] == "1"
    assert not set(SECRET_ENV) & set(manifest["env"])
    assert not any(value in text for value in SECRET_ENV.values())
