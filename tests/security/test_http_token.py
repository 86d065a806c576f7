"""The HTTP server refuses requests without the bearer token when it is not bound to
loopback: it cannot even be configured so without a token, and bound to every interface
it answers nothing but ``/healthz`` and the static observer page to a request whose token
is missing, wrong, in another scheme, or only a prefix of the right one."""

from __future__ import annotations

import socket

import httpx2
import pytest

from agcore_actors.serve import HttpConfig
from tests.serve.runtime import served

TOKEN = "tok-9c1e5b7f-not-guessable"


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "localhost.example.com",
                                  "127.0.0.1.nip.io", "10.0.0.1"])  # fmt: skip
@pytest.mark.parametrize("token", [None, ""])
def test_a_non_loopback_bind_without_a_token_cannot_be_configured(
    host: str, token: str | None
) -> None:
    with pytest.raises(ValueError, match="needs a bearer token"):
        HttpConfig(host=host, token=token)


def _reachable_address() -> str:
    """An address of this machine other than 127.0.0.1 when it has one."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # no packet is sent for a UDP connect
            return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"


ROUTES = [
    ("GET", "/v1/sessions"),
    ("GET", "/v1/sessions/a"),
    ("POST", "/v1/sessions/a/turns"),
    ("POST", "/v1/sessions/a/cancel"),
    ("POST", "/v1/sessions/a/approvals/c1"),
    ("DELETE", "/v1/sessions/a"),
    ("GET", "/metrics"),
    ("GET", "/observer/state"),
    ("GET", "/nowhere"),
]
WRONG = [
    {},
    {"authorization": ""},
    {"authorization": "Bearer"},
    {"authorization": f"Basic {TOKEN}"},
    {"authorization": f"bearer{TOKEN}"},
    {"authorization": f"Bearer {TOKEN[:-1]}"},
    {"authorization": f"Bearer {TOKEN}x"},
    {"authorization": f"Bearer  {TOKEN}"},
    {"x-api-key": TOKEN},
]


async def test_bound_to_every_interface_it_refuses_requests_without_the_token() -> None:
    async with served(host="0.0.0.0", token=TOKEN) as s:
        port = s.url.rsplit(":", 1)[1].split("/")[0]
        base = f"http://{_reachable_address()}:{port}"
        async with httpx2.AsyncClient(base_url=base, timeout=10) as client:
            assert (await client.get("/healthz")).status_code == 200
            for method, path in ROUTES:
                for headers in WRONG:
                    response = await client.request(method, path, headers=headers, json={})
                    assert response.status_code == 401, (method, path, headers)
                    assert response.json()["error_kind"] == "unauthorized"
                    assert TOKEN not in response.text
                # A token in the query string is never taken.
                query = await client.request(method, f"{path}?access_token=wrong")
                assert query.status_code == 401, (method, path)
            good = {"authorization": f"Bearer {TOKEN}"}
            assert (await client.get("/v1/sessions", headers=good)).status_code == 200
            observer = await client.get(f"/observer/state?access_token={TOKEN}")
            assert observer.status_code == 401
