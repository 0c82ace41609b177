"""Subcommands that live outside ``cli.py``: each module holds one click
command object named ``command``, which ``cli.py`` adds when it imports.

- `tolk_lint.commands.stage`: ``tolk-lint stage``, the staging report.
"""
