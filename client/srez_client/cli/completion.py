"""``srez completion bash|zsh``: a shell completion script built from the argument parser.

The parser tree is walked once into three tables keyed by the command path (``""``, ``runs``,
``runs results`` ...): the subcommands and fixed positional words at that path, its options, and
the options that take a value (with their choices, when they have some). The script holds the
tables as ``case`` statements (plain POSIX shell, read alike by bash and zsh) and one small
function per shell that finds the path in the words typed so far and offers what fits: an
option's choices after it, files after an option that takes another value, options after ``-``,
else the subcommands. Install: ``source <(srez completion bash)`` in ``~/.bashrc``, or
``srez completion zsh > ~/.zfunc/_srez`` with ``~/.zfunc`` on ``fpath`` before ``compinit``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

SHELLS: Final = ("bash", "zsh")
"""The shells ``srez completion`` writes a script for."""
_WORD: Final = re.compile(r"^[A-Za-z0-9_.:@/+-]+$")


@dataclass(slots=True)
class _Level:
    """What the completion offers at one command path."""

    words: list[str] = field(default_factory=list)
    """Subcommands, then fixed positional words (choices of a positional)."""
    subcommands: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)
    valued: dict[str, list[str]] = field(default_factory=dict)
    """Option -> its choices ([] for a free value such as a path)."""


def _safe(word: str) -> str:
    if not _WORD.match(word):
        msg = f"{word!r} cannot go into a completion script unquoted"
        raise ValueError(msg)
    return word


def _levels(parser: argparse.ArgumentParser, path: str = "") -> Iterator[tuple[str, _Level]]:
    level = _Level()
    children: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS:
            continue
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                level.subcommands.append(_safe(name))
                children.append((name, child))
            continue
        choices = [_safe(str(c)) for c in action.choices or ()]
        if not action.option_strings:
            level.words += choices
            continue
        level.options += [_safe(o) for o in action.option_strings]
        if action.nargs != 0:
            for option in action.option_strings:
                level.valued[option] = choices
    level.words = level.subcommands + level.words
    yield path, level
    for name, child in children:
        yield from _levels(child, f"{path} {name}".strip())


def _case(name: str, rows: list[tuple[str, str]]) -> str:
    arms = "".join(f'    "{key}") echo "{value}" ;;\n' for key, value in rows if value)
    return f'{name}() {{\n  case "$1" in\n{arms}  esac\n}}\n'


def _tables(parser: argparse.ArgumentParser) -> str:
    levels = list(_levels(parser))
    subs = [(p, " ".join(lv.subcommands)) for p, lv in levels]
    words = [(p, " ".join(lv.words)) for p, lv in levels]
    opts = [(p, " ".join(lv.options)) for p, lv in levels]
    valued = [(p, " ".join(lv.valued)) for p, lv in levels]
    choices = [
        (f"{p} {option}".strip(), " ".join(values))
        for p, lv in levels
        for option, values in lv.valued.items()
    ]
    return "".join(
        [
            _case("_srez_subs", subs),
            _case("_srez_words", words),
            _case("_srez_opts", opts),
            _case("_srez_valued", valued),
            _case("_srez_choices", choices),
        ]
    )


_BASH = """
_srez() {
  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
  local cmdpath="" w i subs
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="${COMP_WORDS[i]}"
    subs=" $(_srez_subs "$cmdpath") "
    if [[ "$w" != -* && "$subs" == *" $w "* ]]; then cmdpath="${cmdpath:+$cmdpath }$w"; fi
  done
  local choices="$(_srez_choices "${cmdpath:+$cmdpath }$prev")"
  if [[ -n "$choices" ]]; then
    COMPREPLY=($(compgen -W "$choices" -- "$cur"))
  elif [[ " $(_srez_valued "$cmdpath") " == *" $prev "* ]]; then
    COMPREPLY=($(compgen -f -- "$cur"))
  elif [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(_srez_opts "$cmdpath")" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$(_srez_words "$cmdpath")" -- "$cur"))
  fi
}
complete -o default -F _srez srez srez-client
"""

_ZSH = """
_srez() {
  local cur="${words[CURRENT]}" prev="${words[CURRENT-1]}"
  local cmdpath="" w i subs choices
  for ((i = 2; i < CURRENT; i++)); do
    w="${words[i]}"
    subs=" $(_srez_subs "$cmdpath") "
    if [[ "$w" != -* && "$subs" == *" $w "* ]]; then cmdpath="${cmdpath:+$cmdpath }$w"; fi
  done
  choices="$(_srez_choices "${cmdpath:+$cmdpath }$prev")"
  if [[ -n "$choices" ]]; then
    compadd -- ${=choices}
  elif [[ " $(_srez_valued "$cmdpath") " == *" $prev "* ]]; then
    _files
  elif [[ "$cur" == -* ]]; then
    compadd -- ${=$(_srez_opts "$cmdpath")}
  else
    local offered="$(_srez_words "$cmdpath")"
    if [[ -n "$offered" ]]; then compadd -- ${=offered}; else _files; fi
  fi
}
if [[ "$funcstack[1]" == _srez ]]; then _srez "$@"; else compdef _srez srez srez-client; fi
"""


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser`` for ``shell`` (one of :data:`SHELLS`).

    Raises:
        ValueError: If ``shell`` is not one of :data:`SHELLS`.
    """
    if shell not in SHELLS:
        msg = f"no completion for shell {shell!r} (one of {', '.join(SHELLS)})"
        raise ValueError(msg)
    head = f"# srez completion for {shell}: generated by 'srez completion {shell}'\n"
    if shell == "zsh":
        head = "#compdef srez srez-client\n" + head
    return head + _tables(parser) + (_BASH if shell == "bash" else _ZSH)


def cmd_completion(args: argparse.Namespace) -> int:
    """``srez completion bash|zsh`` (``args.root_parser``: the parser of ``srez``)."""
    sys.stdout.write(completion_script(args.root_parser, args.shell))
    return 0
