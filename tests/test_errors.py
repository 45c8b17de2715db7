"""The error tree stays true: every exception class agentctl defines is a class of
`agentctl.errors` (or kept out of the tree on purpose, with the reason written down), and
each carries an HTTP status and an exit code."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import agentctl
from agentctl import errors
from agentctl.errors import OUTSIDE_THE_TREE, AgentctlError


def defined_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class defined in a module of agentctl, by `module.Class`."""
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(agentctl.__path__, "agentctl."):
        if module_info.name.rsplit(".", 1)[-1] == "__main__":  # importing it runs the CLI
            continue
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                found[f"{module.__name__}.{name}"] = value
    return found


def tree() -> list[type[AgentctlError]]:
    classes: list[type[AgentctlError]] = []
    pending: list[type[AgentctlError]] = [AgentctlError]
    while pending:
        cls = pending.pop()
        classes.append(cls)
        pending.extend(cls.__subclasses__())
    return classes


def test_every_exception_class_is_in_the_tree_or_listed_outside_it() -> None:
    strays = [
        qualified
        for qualified, cls in defined_exceptions().items()
        if qualified not in OUTSIDE_THE_TREE
        and not (issubclass(cls, AgentctlError) and cls.__module__ == errors.__name__)
    ]
    assert strays == [], (
        "derive these from AgentctlError in agentctl/errors.py (and regenerate docs/errors.md: "
        "python scripts/gen_errors_doc.py), or list them in OUTSIDE_THE_TREE with the reason"
    )


def test_the_classes_outside_the_tree_exist_and_are_outside_it() -> None:
    defined = defined_exceptions()
    for qualified in OUTSIDE_THE_TREE:
        assert qualified in defined, f"{qualified} is listed in OUTSIDE_THE_TREE but not defined"
        assert not issubclass(defined[qualified], AgentctlError), qualified


def test_every_class_of_the_tree_says_when_it_is_raised_and_is_drawn() -> None:
    drawn = (errors.__doc__ or "").split()
    for cls in tree():
        assert cls.__doc__, f"{cls.__name__} needs a docstring: docs/errors.md shows it"
        assert cls.__name__ in drawn, f"draw {cls.__name__} in errors.py's docstring"
        assert 400 <= cls.status <= 599, cls
        assert cls.exit_code > 0, cls


def test_a_request_refused_is_a_users_mistake_and_an_outage_is_not() -> None:
    assert issubclass(errors.ThreadBusyError, errors.Conflict)
    assert errors.ThreadBusyError.status == 409
    assert issubclass(errors.RedisUnavailable, errors.RuntimeFailure)
    assert errors.RedisUnavailable.status == 503
    assert not issubclass(errors.RedisUnavailable, errors.UserError)
    refused = [errors.BadRequest, errors.Forbidden, errors.NotFound, errors.Conflict]
    assert [cls.status for cls in refused] == [400, 403, 404, 409]
    assert all(issubclass(cls, errors.RequestError) for cls in refused)
