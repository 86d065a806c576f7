"""docs/configuration.md lists every key of every table in that table's section, and the
starter file shows every key; both stay in step with the attrs classes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agcore_actors.config import (
    AgentSettings,
    AnthropicProviderSettings,
    ClusterSettings,
    HostSettings,
    HttpServerSettings,
    LocalProviderSettings,
    LoggingSettings,
    OpenAIProviderSettings,
    RetrySettings,
    Settings,
    StdioServerSettings,
    StoreSettings,
    TelemetrySettings,
    TimeoutSettings,
    parse_settings,
    starter_text,
)
from agcore_actors.config._problems import toml_keys

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"

SECTIONS: dict[type, str] = {
    Settings: "## Top level",
    OpenAIProviderSettings: '### kind = "openai"',
    AnthropicProviderSettings: '### kind = "anthropic"',
    LocalProviderSettings: '### kind = "local"',
    AgentSettings: "## `[agents.NAME]`",
    StdioServerSettings: "## `[mcpServers.NAME]`",
    HttpServerSettings: "## `[mcpServers.NAME]`",
    StoreSettings: "## `[store]`",
    HostSettings: "## `[host]`",
    ClusterSettings: "## `[cluster]`",
    RetrySettings: "## `[retry]`",
    TimeoutSettings: "## `[timeouts]`",
    LoggingSettings: "## `[logging]`",
    TelemetrySettings: "## `[telemetry]`",
}


def section(text: str, heading: str) -> str:
    start = text.index(heading + "\n")
    level = heading.split(" ")[0]
    rest = text[start + len(heading) :]
    ends = [m.start() for m in re.finditer(rf"^#{{1,{len(level)}}} ", rest, re.MULTILINE)]
    return rest[: ends[0]] if ends else rest


@pytest.mark.parametrize("cls", list(SECTIONS), ids=lambda c: c.__name__)
def test_every_key_is_in_its_tables_section_of_the_reference(cls: type) -> None:
    body = section(DOC.read_text(encoding="utf-8"), SECTIONS[cls])
    listed = set(re.findall(r"^\| `([^`]+)` \|", body, re.MULTILINE))
    missing = set(toml_keys(cls)) - listed
    assert not missing, f"{SECTIONS[cls]} lacks {sorted(missing)}"


@pytest.mark.parametrize("cls", list(SECTIONS), ids=lambda c: c.__name__)
def test_the_starter_file_shows_every_key(cls: type) -> None:
    text = starter_text()
    shown = set(re.findall(r"^#? ?([A-Za-z_]+) = ", text, re.MULTILINE))
    keys = set(toml_keys(cls)) - {"providers", "agents", "mcpServers", "store", "host", "cluster"}
    keys -= {"retry", "timeouts", "logging", "telemetry"}
    assert not keys - shown, f"the starter file does not show {sorted(keys - shown)}"


def test_the_starter_file_loads_with_every_example_uncommented_too() -> None:
    """The commented examples are themselves valid: uncommenting any of them is safe."""
    lines = []
    for line in starter_text().splitlines():
        body = line.removeprefix("# ")
        if line.startswith("# ") and (
            re.match(r"\[[A-Za-z.]+\]$", body) or re.match(r"[a-z_]+ = ", body)
        ):
            lines.append(body)
        else:
            lines.append(line)
    text = "\n".join(lines).replace('python = "/path/to/python"', "")
    text = re.sub(r'api_key_env = "\w+"', "", text)
    settings = parse_settings(text)
    assert set(settings.providers) == {"openai", "claude", "local"}
    assert set(settings.mcp_servers) == {"time", "remote"}
