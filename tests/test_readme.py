"""The README's API examples are valid shell and work, as written, against real gunicorn."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from app.config import PROJECT_ROOT
from tests.reliability.harness import ADMIN_TOKEN, Server, build_sample_bundle

README = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
SHELL_BLOCKS = re.findall(r"```sh\n(.*?)```", README, re.S)
API_SECTION = README.split("## Using the API", 1)[1].split("\n## ", 1)[0]
API_BLOCKS = re.findall(r"```sh\n(.*?)```", API_SECTION, re.S)


@pytest.mark.parametrize("block", SHELL_BLOCKS)
def test_every_shell_example_parses(block: str) -> None:
    result = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.e2e
def test_api_examples_answer_without_error(tmp_path: Path) -> None:
    assert len(API_BLOCKS) >= 2  # articles and comments
    build_sample_bundle(tmp_path / "bundle")
    with Server(tmp_path / "server", tmp_path / "bundle") as server:
        for block in API_BLOCKS:
            # As written, except: this server's port, and curl failing on any HTTP error.
            script = block.replace("http://127.0.0.1:8000", server.base_url)
            script = script.replace("curl -s ", "curl -sS --fail-with-body ")
            result = subprocess.run(
                ["bash", "-euo", "pipefail"],
                input=script,
                capture_output=True,
                text=True,
                env={**os.environ, "NEWS_ADMIN_TOKEN": ADMIN_TOKEN},
                timeout=60,
            )
            assert result.returncode == 0, result.stdout[-2000:] + result.stderr
            assert "detail" not in result.stdout, result.stdout[-2000:]


def _granian_commands(text: str) -> list[list[str]]:
    """Each `granian ...` command of the shell blocks, its continuation lines joined."""
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            words = line.split()
            starts = [i for i, w in enumerate(words) if w.endswith("/granian")]
            commands += [words[i + 1 :] for i in starts]
    return commands


@pytest.mark.parametrize("doc", ["README.md", "docs/operations.md"])
def test_documented_granian_commands_pass_the_one_set_of_options(doc: str) -> None:
    """make serve, the tests and the benchmarks read deploy/granian/options; the commands
    operators copy must pass the same options, in the same order."""
    options = (PROJECT_ROOT / "deploy" / "granian" / "options").read_text().split()
    commands = _granian_commands((PROJECT_ROOT / doc).read_text(encoding="utf-8"))
    assert commands, f"{doc} shows no granian command"
    for args in commands:
        assert args[: len(options)] == options, f"{doc}: granian {' '.join(args)}"
