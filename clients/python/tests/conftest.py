"""A live ragd for the tests: the binary named by RAGD_BIN, or one built
from this checkout with `go build`, serving embedded stores in a temporary
directory with auth on and fault injection enabled."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import httpx
import pytest

REPO = Path(__file__).resolve().parents[3]
ADMIN_KEY = "py-admin-key-0123456789"
QUERY_KEY = "py-query-key-0123456789"
TENANT_KEY = "py-tenant-key-0123456789"
TENANT = "acme"

DOCS = [
    {"id": "wing-1", "title": "Wing flutter", "text": "flutter of swept wings at transonic speed", "metadata": {"topic": "aero"}},
    {"id": "wing-2", "title": "Flutter of panels", "text": "panel flutter in supersonic flow", "metadata": {"topic": "aero"}},
    {"id": "heat-1", "title": "Heat transfer", "text": "heat transfer in a laminar boundary layer", "metadata": {"topic": "heat"}},
    {"id": "acme-1", "tenant": TENANT, "title": "Acme wing", "text": "acme wing flutter report"},
]


@dataclass
class Ragd:
    url: str
    admin_key: str = ADMIN_KEY
    query_key: str = QUERY_KEY
    tenant_key: str = TENANT_KEY
    tenant: str = TENANT

    def fault(self, source: str, **fault: object) -> None:
        """Set (or, with no arguments, clear) a fault of a source."""
        h = {"Authorization": f"Bearer {self.admin_key}"}
        if fault:
            r = httpx.put(f"{self.url}/debug/faults/{source}", json=fault, headers=h)
        else:
            r = httpx.delete(f"{self.url}/debug/faults/{source}", headers=h)
        r.raise_for_status()

    def force(self, breaker: str, verb: str) -> None:
        r = httpx.post(f"{self.url}/v1/status/breakers/{breaker}/force-{verb}",
                       headers={"Authorization": f"Bearer {self.admin_key}"})
        r.raise_for_status()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _binary(tmp: Path) -> str:
    if os.environ.get("RAGD_BIN"):
        return os.environ["RAGD_BIN"]
    out = tmp / "ragd"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/ragd"], cwd=REPO, check=True)
    return str(out)


@pytest.fixture(scope="session")
def ragd() -> Iterator[Ragd]:
    with tempfile.TemporaryDirectory(prefix="ragd-py-") as d:
        tmp = Path(d)
        binary = _binary(tmp)
        port = _free_port()
        cfg = tmp / "rag.yaml"
        cfg.write_text(f"""
data_dir: {tmp / 'data'}
server:
  listen: 127.0.0.1:{port}
  debug_faults: true
embedder:
  kind: hashing
auth:
  enabled: true
  keys:
    - {{name: admin, key: "{ADMIN_KEY}", role: admin}}
    - {{name: reader, key: "{QUERY_KEY}", role: query}}
    - {{name: acme-reader, key: "{TENANT_KEY}", role: query, tenant: {TENANT}}}
  public: [health, ready, openapi]  # not metrics beside a tenant's key
breakers:
  failure_threshold: 1000
""")
        log = open(tmp / "ragd.log", "w")
        proc = subprocess.Popen([binary, "serve", "-c", str(cfg)], stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"ragd exited with {proc.returncode}: {(tmp / 'ragd.log').read_text()}")
                try:
                    if httpx.get(url + "/readyz", headers={"Authorization": f"Bearer {QUERY_KEY}"}).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("ragd did not become ready in 60 s")
                time.sleep(0.1)
            r = httpx.post(url + "/v1/documents", params={"wait": "10s"}, json={"documents": DOCS},
                           headers={"Authorization": f"Bearer {ADMIN_KEY}"})
            r.raise_for_status()
            yield Ragd(url=url)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()
