"""The config schema (defaults, spellings, secrets, the compaction bridge) and the ``.env`` parser."""

from __future__ import annotations

import pytest

from ironhive.adapters.config.environment import parse_dotenv
from ironhive.adapters.config.schema import IronHiveConfig, OpenAISection, is_secret_key
from ironhive.domain.context.config import CompactionConfig


def test_top_level_spellings() -> None:
    assert list(IronHiveConfig().model_dump(by_alias=True)) == [
        "gpuStack",
        "openai",
        "anthropic",
        "googleai",
        "azureopenai",
        "xai",
        "ollama",
        "lmstudio",
        "lmsupply",
        "permissions",
        "compaction",
        "webSearch",
        "deepResearch",
        "chatBehavior",
        "advisor",
        "skills",
        "approval",
        "providers",
        "daemon",
        "server",
    ]


def test_defaults() -> None:
    dumped = IronHiveConfig().model_dump(by_alias=True)
    assert dumped["daemon"] == {"enabled": None, "idleSeconds": 300.0}
    assert dumped["openai"] == {"apiKey": None, "model": None, "endpoint": "https://api.openai.com/v1", "api": None}
    assert dumped["xai"]["endpoint"] == "https://api.x.ai/v1"
    assert dumped["ollama"] == {"endpoint": "http://localhost:11434", "model": None, "enabled": False}
    assert dumped["lmstudio"] == {"endpoint": "http://localhost:1234/v1", "model": None, "enabled": False}
    assert dumped["lmsupply"] == {
        "enabled": True,
        "embedderModel": "auto",
        "rerankerModel": "auto",
        "generatorModel": "gguf:auto",
        "maxContextLength": None,
        "modelPath": None,
        "huggingFaceRepo": None,
        "huggingFaceFile": None,
        "extraBufferTypes": None,
    }
    assert dumped["azureopenai"] == {"endpoint": None, "apiKey": None, "deploymentName": None, "api": None}
    assert dumped["chatBehavior"] == {"maximumIterationsPerRequest": 10, "maximumConsecutiveErrorsPerRequest": 3}
    assert dumped["advisor"] == {"provider": None, "model": None, "maxCalls": 5}
    assert dumped["skills"] == {
        "roots": [],
        "enabled": None,
        "exclude": [],
        "maxMetadataCharacters": 12000,
        "acceptUnknownFields": False,
    }
    assert dumped["approval"] == {"timeoutSeconds": 300.0}
    assert dumped["providers"] == {"chain": [], "maxRetries": 2, "initialBackoffSeconds": 1.0}
    assert dumped["webSearch"] == {
        "enabled": True,
        "defaultMaxResults": 10,
        "maxSitemapEntries": 50,
        "duckDuckGoRegion": None,
        "tavilyApiKey": None,
        "searchApiKey": None,
        "searchApiEngine": "google",
    }
    assert dumped["deepResearch"] == {
        "enabled": False,
        "tavilyApiKey": None,
        "maxIterations": 5,
        "provider": None,
        "model": None,
    }


def test_the_compaction_defaults_are_the_domain_defaults() -> None:
    assert IronHiveConfig().compaction.to_domain() == CompactionConfig()


def test_the_compaction_section_reaches_the_domain() -> None:
    section = IronHiveConfig.model_validate(
        {
            "compaction": {
                "protectRecentTokens": 1000,
                "targetRatio": 0.5,
                "protectedToolOutputs": ["read_file"],
                "goalReminder": {"enabled": False, "minMessages": 2},
                "maxContextTokens": 8192,
                "toolSchemaCompression": "aggressive",
            }
        }
    ).compaction
    domain = section.to_domain()
    assert domain.protect_recent_tokens == 1000
    assert domain.target_ratio == 0.5
    assert domain.protected_tool_outputs == ("read_file",)
    assert (domain.goal_reminder.enabled, domain.goal_reminder.min_messages) == (False, 2)
    assert domain.max_context_tokens == 8192
    assert domain.tool_schema_compression is None


def test_python_attributes_are_snake_case_and_secrets_stay_out_of_repr() -> None:
    section = OpenAISection(api_key="sk-very-secret-value", model="gpt")
    assert section.api_key == "sk-very-secret-value"
    assert "sk-very-secret-value" not in repr(section)
    assert "sk-very-secret-value" not in repr(IronHiveConfig(openai=section))


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("openai.apiKey", True),
        ("gpuStack.api_key", True),
        ("webSearch.tavilyApiKey", True),
        ("x.clientSecret", True),
        ("x.hfToken", True),
        ("x.token", True),
        ("openai.model", False),
        ("compaction.maxContextTokens", False),
        ("compaction.useTokenBasedCompaction", False),
        ("compaction.protectRecentTokens", False),
    ],
)
def test_is_secret_key(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


@pytest.mark.parametrize(
    ("line", "value"),
    [
        ("OPENAI_MODEL=plain", "plain"),
        ("OPENAI_MODEL = spaced ", "spaced"),
        ("export OPENAI_MODEL=exported", "exported"),
        ('OPENAI_MODEL="double quoted"', "double quoted"),
        ("OPENAI_MODEL='single quoted'", "single quoted"),
        ('OPENAI_MODEL="has # hash"', "has # hash"),
        ("OPENAI_MODEL=bare # comment", "bare"),
        ("OPENAI_MODEL=no#comment", "no#comment"),
        ('OPENAI_MODEL="line\\nbreak"', "line\nbreak"),
        ("OPENAI_MODEL='raw\\n'", "raw\\n"),
        ('OPENAI_MODEL="quoted" # comment', "quoted"),
        ('OPENAI_MODEL="escaped \\" quote"', 'escaped " quote'),
        ("OPENAI_MODEL=", ""),
    ],
)
def test_dotenv_values(line: str, value: str) -> None:
    parsed = parse_dotenv(f"# comment\n\n{line}\n", ".env")
    assert parsed.values == {"OPENAI_MODEL": value}
    assert parsed.warnings == ()


def test_dotenv_later_lines_win_and_bad_statements_are_reported_with_their_line() -> None:
    parsed = parse_dotenv('A=1\nnot a pair\nC="x" trailing\nA=2\nB=\'open\nD=4\n', "/p/.env")
    assert parsed.values == {"A": "2", "D": "4"}  # an unclosed quote spoils its own line only
    assert parsed.warnings == tuple(f"Unreadable statement at /p/.env:{n} ignored" for n in (2, 3, 5))
