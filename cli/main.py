"""The ``factsieve`` command line.

``main()`` is the edge: it builds the settings and one ``Services`` (the same lazily built parts
the API and the workers hold), dispatches to one function per subcommand, and turns FactSieve
errors into a one-line message and the error's exit code (never a traceback). Commands live by
area — ``corpus`` (templates, ingestion, index versions, the model), ``search`` (match, demo),
``evidence`` (ingest-evidence, evidence-search), ``verify`` (verify, evaluate-verification), ``verdict`` (train-verdict), ``blend`` (blend-weight: the LLM/model blend's weight), ``lab`` (evaluation, benchmarks, training), ``claims`` (claim clusters), ``channels`` (tiplines), ``ops`` (API server, workers, keys), ``review`` (the decision log) and ``learn`` (learning from it) — and nothing
heavy is built until a command touches it, so ``factsieve --help`` is instant.
"""
from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

from pydantic import ValidationError

from plugin.errors import BadInput, FactSieveError
from plugin.service.services import Services
from plugin.settings import Settings

from cli import blend, channels, claims, corpus, evidence, lab, learn, ops, review, search, verdict, verify
from cli.common import check_outputs

log = logging.getLogger("factsieve")

#: Command areas, in the order ``--help`` lists them.
AREAS = (corpus, search, evidence, verify, verdict, blend, lab, claims, channels, ops, review, learn)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="factsieve", description="The factsieve command line.")
    p.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, fn: Callable[..., int], help_: str, parent=sub) -> argparse.ArgumentParser:
        sp = parent.add_parser(name, help=help_, description=help_)
        sp.set_defaults(func=fn)
        return sp

    for area in AREAS:
        area.register(sub, add)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        check_outputs(args)  # never into the installed package, whatever the command
        try:
            settings = Settings()
        except ValidationError as exc:
            raise BadInput(f"invalid FACTSIEVE_* setting: {exc.errors()[0]['loc'][0]}: "
                           f"{exc.errors()[0]['msg']}") from None
        return args.func(args, Services(settings))
    except FactSieveError as exc:
        print(f"factsieve: {exc.title.lower()}: {exc.detail}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("factsieve: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
