"""The README's "Use it from your code" examples, run against a live ragd
so they cannot rot."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from conftest import REPO


def _examples(kind: str) -> list[str]:
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"<!-- example: " + re.escape(kind) + r" -->\n```\w+\n(.*?)```", text, re.S)
    assert blocks, f"README has no {kind} example"
    return blocks


def test_readme_python_examples(ragd):
    env = dict(os.environ, RAGD_URL=ragd.url, RAGD_API_KEY=ragd.admin_key)
    blocks = _examples("python")
    assert len(blocks) >= 4, "client, LangChain, LlamaIndex and MCP examples"
    for code in blocks:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, f"example failed:\n{code}\nstderr:\n{out.stderr}"
        assert "w1" in out.stdout or "wing-1" in out.stdout, f"example printed no hit:\n{code}\nstdout:\n{out.stdout}"


def test_readme_mcp_config():
    (block,) = _examples("mcp-config")
    cfg = json.loads(block)
    server = cfg["mcpServers"]["ragd"]
    assert server["url"].endswith("/mcp") and server["type"] == "http"
    assert server["headers"]["Authorization"].startswith("Bearer ")
