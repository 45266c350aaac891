"""Loading an untrusted project's files: what they may set, what is ignored and said once, and the one trust store."""

from __future__ import annotations

import io
import json
import stat
from pathlib import Path

import pytest

from ironhive.adapters.config.loader import LoadedConfig, load_config, project_trust_files
from ironhive.adapters.config.trust import ProjectTrust, TrustStore, sha256_of

USER_CONFIG = "openai:\n  apiKey: sk-user\n  model: gpt-user\nanthropic:\n  apiKey: an-user\n  model: claude\n"
REPO_CONFIG = """\
openai:
  endpoint: http://127.0.0.1:18765/v1
  apiKey: sk-repo
  model: gpt-repo
anthropic:
  endpoint: http://127.0.0.1:18766
advisor:
  model: big
webSearch:
  tavilyApiKey: tv-repo
providers:
  chain: [openai]
ollama:
  enabled: true
compaction:
  targetRatio: 0.5
permissions:
  defaultAction: allow
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    (path / ".ironhive").mkdir(parents=True)
    (path / ".ironhive" / "config.yaml").write_text(USER_CONFIG + "permissions:\n  defaultAction: ask\n")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    (path / ".ironhive").mkdir(parents=True)
    return path


def load(home: Path, repo: Path, environ: dict[str, str] | None = None) -> LoadedConfig:
    return load_config(home=home, project=repo, environ=environ or {})


def test_an_untrusted_project_config_sets_no_endpoint_key_provider_advisor_or_web_tool(home: Path, repo: Path) -> None:
    project_file = repo / ".ironhive" / "config.yaml"
    project_file.write_text(REPO_CONFIG)
    loaded = load(home, repo)
    config = loaded.config
    assert (config.openai.endpoint, config.openai.api_key) == ("https://api.openai.com/v1", "sk-user")
    assert config.anthropic.endpoint is None
    assert config.advisor.model is None and config.web_search.tavily_api_key is None
    assert config.providers.chain == [] and config.ollama.enabled is False
    assert config.permissions == {"defaultAction": "ask"}  # the user's section; the repository's only narrows
    assert config.openai.model == "gpt-repo" and config.compaction.target_ratio == 0.5  # harmless keys apply
    (item,) = loaded.ignored
    for key in ("openai.endpoint", "openai.apiKey", "anthropic.endpoint", "advisor.model", "webSearch.tavilyApiKey"):
        assert key in item
    assert "permissions (its deny and ask rules still apply)" in item and str(project_file) in item
    assert loaded.untrusted_files == ((project_file, sha256_of(project_file.read_bytes())),)
    assert loaded.trust_notice is not None and loaded.notices.count(loaded.trust_notice) == 1
    assert "ironhive trust" in loaded.trust_notice and "IRONHIVE_TRUST_PROJECT=1" in loaded.trust_notice


def test_trusting_the_exact_content_honours_it_and_an_edit_does_not(home: Path, repo: Path) -> None:
    project_file = repo / ".ironhive" / "config.yaml"
    project_file.write_text(REPO_CONFIG)
    TrustStore.for_home(home).trust(project_file)
    trusted = load(home, repo)
    assert trusted.config.openai.endpoint == "http://127.0.0.1:18765/v1" and trusted.trust_notice is None
    assert trusted.config.permissions == {"defaultAction": "allow"}

    project_file.write_text(REPO_CONFIG.replace("18765", "18767"))
    edited = load(home, repo)
    assert edited.config.openai.endpoint == "https://api.openai.com/v1"
    assert edited.trust_notice is not None


def test_an_untrusted_dotenv_sets_model_names_only(home: Path, repo: Path) -> None:
    dotenv = repo / ".env"
    dotenv.write_text(
        "OPENAI_ENDPOINT=http://127.0.0.1:18765/v1\nOPENAI_API_KEY=sk-repo\nOPENAI_MODEL=gpt-env\n"
        "OLLAMA_ENABLED=true\nXAI_ENDPOINT=http://127.0.0.1:1\nUNRELATED=1\n"
    )
    loaded = load(home, repo)
    assert loaded.config.openai.endpoint == "https://api.openai.com/v1"
    assert (loaded.config.openai.api_key, loaded.config.openai.model) == ("sk-user", "gpt-env")
    assert loaded.config.ollama.enabled is False
    assert loaded.ignored == (f"OPENAI_API_KEY, OPENAI_ENDPOINT, XAI_ENDPOINT, OLLAMA_ENABLED in {dotenv}",)
    TrustStore.for_home(home).trust(dotenv)
    assert load(home, repo).config.openai.endpoint == "http://127.0.0.1:18765/v1"


def test_the_real_environment_and_the_trust_variable_are_the_users(home: Path, repo: Path) -> None:
    (repo / ".ironhive" / "config.yaml").write_text(REPO_CONFIG)
    (repo / ".env").write_text("IRONHIVE_TRUST_PROJECT=1\n")  # a repository cannot trust itself
    assert load(home, repo).config.openai.endpoint == "https://api.openai.com/v1"
    assert load(home, repo, {"OPENAI_ENDPOINT": "http://127.0.0.1:9/v1"}).config.openai.endpoint.endswith(":9/v1")
    trusted = load(home, repo, {"IRONHIVE_TRUST_PROJECT": "1"})
    assert trusted.config.openai.endpoint == "http://127.0.0.1:18765/v1" and trusted.ignored == ()
    assert not TrustStore.for_home(home).path.exists()  # the variable remembers nothing


def test_a_project_with_nothing_to_ignore_says_nothing(home: Path, repo: Path) -> None:
    (repo / ".ironhive" / "config.yaml").write_text("compaction:\n  targetRatio: 0.6\nopenai:\n  model: gpt-x\n")
    (repo / ".env").write_text("TOKEN=abc\nOPENAI_MODEL=gpt-y\n")
    loaded = load(home, repo)
    assert loaded.notices == () and loaded.ignored == () and loaded.untrusted_files == ()


def test_the_home_directory_as_the_project_is_the_users_own(home: Path) -> None:
    (home / ".ironhive" / "config.yaml").write_text("openai:\n  endpoint: http://127.0.0.1:5/v1\n")
    (home / ".ironhive" / "permissions.yaml").write_text("permissions:\n  default_action: allow\n")
    loaded = load(home, home)
    assert loaded.config.openai.endpoint == "http://127.0.0.1:5/v1" and loaded.notices == ()
    trust = ProjectTrust.for_user(home=home, environ={})
    assert trust.is_trusted(home / ".ironhive" / "permissions.yaml", "any digest")


def test_permission_and_plugin_files_are_named_in_the_one_notice(home: Path, repo: Path) -> None:
    permissions = repo / ".ironhive" / "permissions.yaml"
    permissions.write_text("permissions:\n  default_action: allow\n")
    plugins = repo / ".ironhive" / "plugins.yaml"
    plugins.write_text("plugins: {x: {url: 'http://127.0.0.1:1/mcp'}}\n")
    loaded = load(home, repo)
    assert loaded.ignored == (
        f"the allow rules and widening settings of {permissions} (its deny and ask rules apply)",
        f"the MCP servers of {plugins}",
    )
    assert {path for path, _ in loaded.untrusted_files} == {permissions, plugins}
    assert project_trust_files(repo, home) == (permissions, plugins)


# -- the store ------------------------------------------------------------------------------------------------------


def test_the_store_is_owner_only_and_takes_over_the_plugin_trust_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    file = tmp_path / "repo" / "plugins.yaml"
    file.parent.mkdir()
    file.write_text("plugins: {}\n")
    other = tmp_path / "repo" / "config.yaml"
    other.write_text("a: 1\n")
    (home / ".ironhive").mkdir(parents=True)
    legacy = home / ".ironhive" / "trusted-plugins.json"
    legacy.write_text(
        json.dumps({"version": 1, "files": {str(file.resolve()): {"sha256": sha256_of(b"plugins: {}\n")}}})
    )
    store = TrustStore.for_home(home)
    assert store.is_trusted(file, sha256_of(file.read_bytes()))  # an earlier `ironhive mcp trust` still counts

    store.trust(other)
    assert not legacy.exists()
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert store.is_trusted(file, sha256_of(file.read_bytes())) and store.is_trusted(other, sha256_of(b"a: 1\n"))
    assert store.revoke(file) and not store.is_trusted(file, sha256_of(file.read_bytes()))


def test_a_new_store_directory_is_owner_only(tmp_path: Path) -> None:
    store = TrustStore.for_home(tmp_path / "fresh-home")
    file = tmp_path / "config.yaml"
    file.write_text("a: 1\n")
    store.trust(file)
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700


def test_a_hostile_file_cannot_be_trusted(tmp_path: Path) -> None:
    link = tmp_path / ".env"
    link.symlink_to("/dev/zero")
    with pytest.raises(OSError, match="not a regular file"):
        TrustStore.for_home(tmp_path / "home").trust(link)


# -- the one question on a terminal ---------------------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_yes_on_a_terminal_trusts_the_files_and_a_no_is_not_asked_again(
    home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ironhive.adapters.config.trust import was_declined
    from ironhive.cli.trust_command import ask_to_trust

    monkeypatch.setenv("HOME", str(home))
    project_file = repo / ".ironhive" / "config.yaml"
    project_file.write_text(REPO_CONFIG)
    loaded = load(home, repo)

    assert ask_to_trust(loaded, stdin=io.StringIO("y\n"), stderr=Terminal()) is False  # no terminal: nobody asked
    question = Terminal()
    assert ask_to_trust(loaded, stdin=Terminal("n\n"), stderr=question) is False
    assert "openai.endpoint" in question.getvalue() and "[y] yes  [N] no" in question.getvalue()
    assert was_declined(project_file, sha256_of(project_file.read_bytes()))
    assert load(home, repo).trust_notice is not None

    assert ask_to_trust(loaded, stdin=Terminal("y\n"), stderr=Terminal()) is True
    assert load(home, repo).config.openai.endpoint == "http://127.0.0.1:18765/v1"
