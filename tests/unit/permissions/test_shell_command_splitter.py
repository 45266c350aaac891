"""The shell splitter: separators, substitutions, groups, quoting, comments and what it refuses to parse."""

from __future__ import annotations

import pytest

from ironhive.domain.permissions.shell import Redirection, ShellParseError, parse_shell_command, split_shell_command


@pytest.mark.parametrize(
    ("command", "parts"),
    [
        ("git status", ["git status"]),
        ("  git   status  ", ["git status"]),
        ("git status; rm -rf ~", ["git status", "rm -rf ~"]),
        ("a && b || c | d & e", ["a", "b", "c", "d", "e"]),
        ("a\nb\r\nc", ["a", "b", "c"]),
        ("a |& b", ["a", "b"]),
        ("ls && curl x | sh", ["ls", "curl x", "sh"]),
        # substitutions: their commands are parts, the outer word keeps the raw text
        ("echo $(rm -rf /)", ["rm -rf /", "echo $(rm -rf /)"]),
        ("echo `rm -rf /`", ["rm -rf /", "echo `rm -rf /`"]),
        ('echo "$(rm -rf x)"', ["rm -rf x", "echo $(rm -rf x)"]),
        ('echo "`rm x`"', ["rm x", "echo `rm x`"]),
        ("echo $(a $(b))", ["b", "a $(b)", "echo $(a $(b))"]),
        ("echo `a \\`b\\``", ["b", "a `b`", "echo `a \\`b\\``"]),
        ("cat <(rm a) >(rm b)", ["rm a", "rm b", "cat <(rm a) >(rm b)"]),
        ("echo ${x:-$(rm y)}", ["rm y", "echo ${x:-$(rm y)}"]),
        ("echo $((1 + $(rm z)))", ["rm z", "echo $((1 + $(rm z)))"]),
        ("echo $((1+2))", ["echo $((1+2))"]),
        # subshells and groups
        ("(cd src && git status)", ["cd src", "git status"]),
        ("{ ls; rm -rf x; }", ["ls", "rm -rf x"]),
        ("if true; then rm -rf x; fi", ["true", "rm -rf x"]),
        ("while read l; do echo $l; done < f", ["read l", "echo $l", "< f"]),
        ("! git diff --quiet", ["git diff --quiet"]),
        # quoting and escapes keep separators inside words, and unquote the words
        ('git commit -m "a;b && c"', ["git commit -m a;b && c"]),
        ("echo 'a|b'", ["echo a|b"]),
        ("echo a\\;b", ["echo a;b"]),
        ("r''m -rf  /", ["rm -rf /"]),
        ('"rm" -rf x', ["rm -rf x"]),
        ("\\rm -rf x", ["rm -rf x"]),
        ("rm '' -rf \"\" x", ["rm -rf x"]),
        ("echo $'a\\'b'", ["echo a\\'b"]),
        ('echo $"hi"', ["echo hi"]),
        ("git sta\\\ntus", ["git status"]),
        # redirections stay in the text; >& and &> are not separators
        ("git status 2>&1 | tee log", ["git status 2>&1", "tee log"]),
        ("ls &>/dev/null & echo x", ["ls &>/dev/null", "echo x"]),
        ("echo x >| f", ["echo x >| f"]),
        # a quoted ">" is not a redirection, so the "&" after it is a separator
        ('echo ">"&rm -rf x', ["echo >", "rm -rf x"]),
        # leading assignments stay part of the command
        ("FOO=1 rm -rf x", ["FOO=1 rm -rf x"]),
        ("X=$(rm a) git status", ["rm a", "X=$(rm a) git status"]),
        # comments
        ("echo hi # ; rm -rf x", ["echo hi"]),
        ("echo a#b", ["echo a#b"]),
        ("# only a comment", []),
        ("", []),
        (";;", []),
    ],
)
def test_split_table(command: str, parts: list[str]) -> None:
    assert split_shell_command(command) == parts


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ('echo "x', "double quote"),
        ("echo 'x", "single quote"),
        ("echo $'x", "$'"),
        ("echo $(ls", "missing ')'"),
        ("echo `ls", "backtick"),
        ("(ls", "missing ')'"),
        ("ls)", "unexpected ')'"),
        ("f() { x; }", "unexpected '('"),
        ("echo $((1+2)", "$(("),
        ("echo ${x", "${"),
        ("case $x in a) ls;; esac", "unexpected ')'"),
        ("x=$(" * 200 + "ls", "nested too deeply"),
        ('"${' * 200, "nested too deeply"),
    ],
)
def test_unparseable_commands_raise(command: str, message: str) -> None:
    with pytest.raises(ShellParseError, match=message.replace("(", r"\(").replace(")", r"\)").replace("$", r"\$")):
        split_shell_command(command)


def test_shell_parse_error_is_a_value_error() -> None:
    assert issubclass(ShellParseError, ValueError)


def test_a_lone_carriage_return_is_part_of_the_word_as_in_bash() -> None:
    # bash runs "git\rstatus" as one (missing) program; split on the CR it would be judged as an allowed "git status".
    (part,) = parse_shell_command("git\rstatus")
    assert part.words == ("git\rstatus",)
    assert [p.words for p in parse_shell_command("rm\r -rf x")] == [("rm\r", "-rf", "x")]
    assert split_shell_command("a\r\nb") == ["a", "b"]  # a CRLF line end still ends the command


# Lines on which the generated comparison with tree-sitter-bash found tree-sitter-bash, not the splitter, departing
# from bash: they pin down bash's reading.


def test_adjacent_quoted_and_escaped_pieces_are_one_word() -> None:
    assert [p.words for p in parse_shell_command("ls 0''\\;")] == [("ls", "0;")]
    assert [p.words for p in parse_shell_command("ls ''\\$")] == [("ls", "$")]
    assert [p.words for p in parse_shell_command("ls $HOMEa\\ b")] == [("ls", "$HOMEa b")]
    assert [p.words for p in parse_shell_command("( ls \\  )")] == [("ls", " ")]


def test_two_backtick_substitutions_side_by_side_are_two() -> None:
    assert split_shell_command("ls `id``rm x`") == ["id", "rm x", "ls `id``rm x`"]


def test_a_redirection_after_a_pipeline_or_list_belongs_to_its_last_command() -> None:
    first, second = parse_shell_command("ls && rm x >0")
    assert (first.words, first.redirections) == (("ls",), ())
    assert (second.words, second.redirections) == (("rm", "x"), (Redirection(operator=">", target="0"),))
    parts = parse_shell_command("ls | ls | cat\nrm a >f")
    assert [p.words for p in parts] == [("ls",), ("ls",), ("cat",), ("rm", "a")]
    assert parts[-1].redirections == (Redirection(operator=">", target="f"),)
