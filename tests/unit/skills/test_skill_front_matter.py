"""Front matter splitting and the specification's validation of a skill's fields."""

from __future__ import annotations

from pathlib import Path

import pytest

from ironhive.domain.skills.frontmatter import split_front_matter
from ironhive.domain.skills.validation import FrontMatterCheck, is_valid_skill_name, validate_front_matter

ROOT = Path("/skills")


def check(fields: dict[str, object], directory: str = "pdf-tools", *, accept: bool = False) -> FrontMatterCheck:
    folder = ROOT / directory
    return validate_front_matter(
        fields, directory=folder, skill_file=folder / "SKILL.md", root=ROOT, accept_unknown_fields=accept
    )


# --- splitting -----------------------------------------------------------------------------------------------------


def test_split_returns_the_yaml_and_the_body() -> None:
    split = split_front_matter("---\nname: a\ndescription: b\n---\n# Title\n\nBody text\n")
    assert split is not None
    assert split.front_matter == "name: a\ndescription: b"
    assert split.body == "# Title\n\nBody text\n"


def test_split_accepts_crlf_a_bom_and_trailing_spaces_on_delimiters() -> None:
    split = split_front_matter("\ufeff--- \r\nname: a\r\n---\r\nBody\r\n")
    assert split is not None
    assert split.front_matter == "name: a"
    assert split.body == "Body\r\n"


def test_a_dashes_line_inside_the_body_does_not_end_the_front_matter_twice() -> None:
    split = split_front_matter("---\nname: a\n---\nintro\n---\nmore\n")
    assert split is not None
    assert split.front_matter == "name: a"
    assert split.body == "intro\n---\nmore\n"


@pytest.mark.parametrize(
    "content",
    [
        "name: a\n---\nbody",  # no opening line
        "\n---\nname: a\n---\n",  # opening line not first
        "---\nname: a\ndescription: b\n",  # never closed
        "----\nname: a\n----\n",  # not the delimiter
        "",
    ],
)
def test_split_needs_an_opening_and_a_closing_line(content: str) -> None:
    assert split_front_matter(content) is None


# --- validation ----------------------------------------------------------------------------------------------------


def test_a_valid_skill_keeps_every_field() -> None:
    result = check(
        {
            "name": "pdf-tools",
            "description": "Extract text and tables from PDF files.",
            "license": "Apache-2.0",
            "compatibility": "Requires python3 and pdftotext",
            "allowed-tools": "Bash(pdftotext:*) Read",
            "metadata": {"author": "example-org", "version": "1.0"},
        }
    )
    assert result.errors == ()
    assert result.warnings == ()
    manifest = result.manifest
    assert manifest is not None
    assert manifest.name == "pdf-tools"
    assert manifest.description == "Extract text and tables from PDF files."
    assert manifest.license == "Apache-2.0"
    assert manifest.compatibility == "Requires python3 and pdftotext"
    assert manifest.allowed_tools == ("Bash(pdftotext:*)", "Read")
    assert manifest.metadata == {"author": "example-org", "version": "1.0"}
    assert manifest.directory == ROOT / "pdf-tools"
    assert manifest.skill_file == ROOT / "pdf-tools" / "SKILL.md"
    assert manifest.root == ROOT


def test_allowed_tools_may_be_a_list() -> None:
    result = check({"name": "pdf-tools", "description": "d", "allowed-tools": ["Read", "Bash(git:*)"]})
    assert result.manifest is not None
    assert result.manifest.allowed_tools == ("Read", "Bash(git:*)")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a", True),
        ("pdf-tools", True),
        ("v2-x9", True),
        ("a" * 64, True),
        ("a" * 65, False),
        ("", False),
        ("PDF-tools", False),
        ("-pdf", False),
        ("pdf-", False),
        ("pdf--tools", False),
        ("pdf_tools", False),
        ("pdf tools", False),
        ("café", False),
    ],
)
def test_name_rule(name: str, expected: bool) -> None:
    assert is_valid_skill_name(name) is expected


@pytest.mark.parametrize(
    ("name", "directory", "message"),
    [
        (
            "PDF-Tools",
            "PDF-Tools",
            "Skill name 'PDF-Tools' must be lowercase letters a-z, digits 0-9 and single hyphens",
        ),
        ("-pdf-tools", "-pdf-tools", "not starting or ending with a hyphen"),
        ("a" * 65, "a" * 65, f"Skill name '{'a' * 65}' is 65 characters long; the limit is 64."),
        ("pdf-tools", "pdf-utils", "Directory name 'pdf-utils' must match skill name 'pdf-tools'."),
    ],
)
def test_invalid_names_reject_the_skill(name: str, directory: str, message: str) -> None:
    result = check({"name": name, "description": "d"}, directory)
    assert result.manifest is None
    assert len(result.errors) == 1
    assert message in result.errors[0]


def test_the_name_and_the_directory_are_compared_after_nfkc() -> None:
    # Fullwidth letters normalise (NFKC) to ASCII: the skill is "pdf" in both places.
    result = check({"name": "\uff50\uff44\uff46", "description": "d"}, "pdf")
    assert result.manifest is not None
    assert result.manifest.name == "pdf"


def test_missing_and_empty_required_fields() -> None:
    assert check({}).errors == (
        "Missing required field in front matter: name.",
        "Missing required field in front matter: description.",
    )
    assert check({"name": "pdf-tools", "description": "   "}).errors == (
        "Field 'description' must be a non-empty string.",
    )
    assert check({"name": ["pdf-tools"], "description": "d"}).errors == ("Field 'name' must be a non-empty string.",)


def test_description_limit_is_1024_characters() -> None:
    assert check({"name": "pdf-tools", "description": "x" * 1024}).manifest is not None
    result = check({"name": "pdf-tools", "description": "x" * 1025})
    assert result.manifest is None
    assert result.errors == ("Description is 1025 characters long; the limit is 1024.",)


def test_compatibility_limit_is_500_characters() -> None:
    assert check({"name": "pdf-tools", "description": "d", "compatibility": "c" * 500}).manifest is not None
    assert check({"name": "pdf-tools", "description": "d", "compatibility": "c" * 501}).errors == (
        "Compatibility is 501 characters long; the limit is 500.",
    )
    assert check({"name": "pdf-tools", "description": "d", "compatibility": ""}).errors == (
        "Field 'compatibility' must be a string of 1 to 500 characters.",
    )


@pytest.mark.parametrize("metadata", ["author", ["a", "b"], {"tags": ["x"]}, {"nested": {"a": "b"}}])
def test_metadata_must_map_strings_to_strings(metadata: object) -> None:
    result = check({"name": "pdf-tools", "description": "d", "metadata": metadata})
    assert result.errors == ("Field 'metadata' must map string keys to string values.",)


def test_unknown_fields_reject_the_skill_by_default() -> None:
    result = check({"name": "pdf-tools", "description": "d", "version": "2", "author": "me"})
    assert result.manifest is None
    assert result.errors == (
        "Unexpected fields in front matter: author, version. Only allowed-tools, compatibility, description, "
        "license, metadata, name are allowed; extension keys belong under 'metadata'.",
    )


def test_unknown_fields_are_a_warning_when_accepted() -> None:
    result = check({"name": "pdf-tools", "description": "d", "version": "2"}, accept=True)
    assert result.errors == ()
    assert result.manifest is not None
    assert len(result.warnings) == 1
    assert result.warnings[0].startswith("Unexpected fields in front matter: version.")
    assert result.warnings[0].endswith("They are ignored (acceptUnknownFields).")


def test_accepting_unknown_fields_does_not_excuse_other_errors() -> None:
    result = check({"name": "Bad", "description": "d", "version": "2"}, "Bad", accept=True)
    assert result.manifest is None
    assert len(result.errors) == 1


def test_every_error_is_reported_at_once() -> None:
    result = check({"name": "Bad_Name", "description": "x" * 2000, "license": 5, "metadata": "m"}, "Bad_Name")
    assert len(result.errors) == 4
