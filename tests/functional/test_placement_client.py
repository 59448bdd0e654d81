"""The services' Placement client: over sockets (its urllib3 pool, as the separate
services use it), over an httpx transport, and handed straight to the WSGI app.

Every path must behave the same: the same answers and the same typed errors,
because the all-in-one scheduler uses the direct path, the services the sockets,
and the tests mostly the httpx one.
"""

from __future__ import annotations

import threading
import time
import uuid

import httpx
import pytest

from stratus.placement import client as pc
from stratus.placement.http.app import build_wsgi
from stratus.retry import RetryPolicy
from tests.conftest import LiveServer

pytestmark = pytest.mark.all_backends


@pytest.fixture(params=["sockets", "httpx", "wsgi", "app"])
def placement(request, placement_app):
    wsgi = build_wsgi(placement_app)
    if request.param == "sockets":
        with LiveServer(wsgi) as server:
            client = pc.PlacementClient(server.url)
            yield client
            client.close()
        return
    if request.param == "httpx":
        client = pc.PlacementClient("http://placement.test",
                                    transport=httpx.WSGITransport(app=wsgi))
    elif request.param == "wsgi":
        client = pc.PlacementClient("http://placement.test", wsgi_app=wsgi)
    else:   # as stratus serve's scheduler: candidates and claims asked of the app itself
        client = pc.PlacementClient("http://placement.test", wsgi_app=wsgi,
                                    direct=placement_app)
    yield client
    client.close()


def test_over_sockets_a_server_restart_is_survived_and_a_dead_one_is_a_transport_error(
        placement_app):
    """The kept-alive connection of a Placement that went away is opened again for the next
    call; no Placement at all is the transport error every caller of the services' clients
    handles (httpx's), not a urllib3 exception."""
    wsgi = build_wsgi(placement_app)
    with LiveServer(wsgi) as server:
        client = pc.PlacementClient(server.url)
        rp = _host(client)
        port = server.port
    with LiveServer(wsgi, port=port) as again:
        assert again.port == port
        assert client.get_inventories(rp)[0]["VCPU"]["total"] == 4
    with pytest.raises(httpx.TransportError):
        client.get_inventories(rp)
    client.close()


def test_a_refused_connection_names_placement_and_its_url(placement_app):
    """Nobody listening: "cannot reach Placement at URL (connection refused)", an
    httpx.ConnectError (not a timeout), at once without a retry policy."""
    with LiveServer(build_wsgi(placement_app)) as server:
        url = server.url
    client = pc.PlacementClient(url)
    with pytest.raises(httpx.ConnectError) as caught:
        client.get_inventories(str(uuid.uuid4()))
    assert not isinstance(caught.value, httpx.TimeoutException)
    assert str(caught.value) == f"cannot reach Placement at {url} (connection refused)"
    client.close()


def test_a_placement_that_comes_back_within_the_retry_deadline_is_waited_for(placement_app):
    """A restart: requests sent meanwhile are sent again, with backoff, and answered once
    Placement listens again on its port."""
    wsgi = build_wsgi(placement_app)
    with LiveServer(wsgi) as server:
        client = pc.PlacementClient(server.url, retry=RetryPolicy(deadline=20))
        rp = _host(client)
        port = server.port
    answers: list[int] = []
    caller = threading.Thread(target=lambda: answers.append(
        client.get_inventories(rp)[0]["VCPU"]["total"]))
    caller.start()
    time.sleep(1.0)   # the caller is retrying by now
    assert answers == []
    with LiveServer(wsgi, port=port):
        caller.join(20)
    assert answers == [4]
    client.close()


def test_over_sockets_a_placement_that_does_not_answer_is_a_timeout():
    """A Placement that takes the connection and never answers: httpx's TimeoutException
    after the client's timeout, as the callers of the services' clients expect."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    client = pc.PlacementClient(f"http://127.0.0.1:{listener.getsockname()[1]}",
                                timeout=0.3)
    try:
        with pytest.raises(httpx.TimeoutException):
            client.get_inventories(str(uuid.uuid4()))
    finally:
        client.close()
        listener.close()


def _host(placement: pc.PlacementClient, vcpus: int = 4) -> str:
    rp = str(uuid.uuid4())
    placement.create_provider(rp, f"host-{rp[:8]}")
    placement.set_inventories(rp, 0, {"VCPU": {"total": vcpus}, "MEMORY_MB": {"total": 2048}})
    return rp


def test_candidates_claims_and_typed_errors(placement):
    rp = _host(placement)
    found = placement.allocation_candidates([("resources", "VCPU:2,MEMORY_MB:512"),
                                             ("limit", "5")])
    assert [list(ar["allocations"]) for ar in found.allocation_requests] == [[rp]]
    assert found.provider_summaries[rp]["resources"]["VCPU"] == {"capacity": 4, "used": 0}

    first, second, third = (str(uuid.uuid4()) for _ in range(3))
    claim = found.allocation_requests[0]["allocations"]
    placement.put_allocations(first, claim, "proj", "user", None)
    placement.put_allocations(second, claim, "proj", "user", None)
    assert placement.usages(rp) == {"VCPU": 4, "MEMORY_MB": 1024}

    with pytest.raises(pc.Conflict) as full:        # capacity: a plain conflict
        placement.put_allocations(third, claim, "proj", "user", None)
    assert not isinstance(full.value, pc.ConcurrentUpdate)
    assert full.value.status == 409 and "capacity" in full.value.detail

    with pytest.raises(pc.ConcurrentUpdate) as stale:   # a stale consumer generation
        placement.put_allocations(first, claim, "proj", "user", 7)
    assert stale.value.code == pc.CONCURRENT_UPDATE

    with pytest.raises(pc.PlacementClientError) as unknown:   # no such provider
        placement.put_allocations(third, {str(uuid.uuid4()): {"resources": {"VCPU": 1}}},
                                  "proj", "user", None)
    assert unknown.value.status == 400 and "does not exist" in unknown.value.detail
    with pytest.raises(pc.PlacementClientError) as invalid:   # the body's schema
        placement.put_allocations(third, {rp: {"resources": {"VCPU": -1}}}, "proj", "user",
                                  None)
    assert invalid.value.status == 400
    with pytest.raises(pc.PlacementClientError) as malformed:
        placement.put_allocations("not-a-uuid", claim, "proj", "user", None)
    assert malformed.value.status == 400 and "Malformed consumer_uuid" in malformed.value.detail
    with pytest.raises(pc.PlacementClientError) as nul:       # not storable as text
        placement.put_allocations(third, claim, "pro\x00j", "user", None)
    assert nul.value.status == 400 and "NUL" in nul.value.detail

    assert placement.get_allocations(first)["consumer_generation"] == 1
    assert placement.delete_allocations(first) is True
    assert placement.delete_allocations(first) is False
    assert placement.usages(rp) == {"VCPU": 2, "MEMORY_MB": 512}


def test_not_found_bad_request_and_query_parameters(placement):
    assert placement.get_provider(str(uuid.uuid4())) is None
    with pytest.raises(pc.NotFound):
        placement.delete_provider(str(uuid.uuid4()))
    with pytest.raises(pc.PlacementClientError) as bad:
        placement.allocation_candidates([("resources", "NO_SUCH_CLASS:1")])
    assert bad.value.status == 400 and "NO_SUCH_CLASS" in bad.value.detail

    root = _host(placement)
    child = str(uuid.uuid4())
    placement.create_provider(child, "numa0", parent=root)
    assert {p["uuid"] for p in placement.providers_in_tree(root)} == {root, child}
    traits, generation = placement.get_traits(root)
    assert traits == set()
    placement.ensure_trait("CUSTOM_FAST")
    placement.set_traits(root, generation, {"CUSTOM_FAST"})
    found = placement.allocation_candidates([("resources", "VCPU:1"),
                                             ("required", "CUSTOM_FAST")])
    assert [list(ar["allocations"]) for ar in found.allocation_requests] == [[root]]
    found = placement.allocation_candidates([("resources", "VCPU:1"),
                                             ("required", "!CUSTOM_FAST")])
    assert found.allocation_requests == []


def test_a_stratus_scheduler_gets_candidates_as_a_table_others_get_the_api_json(
        placement_app):
    """The scheduler's client asks for ``WIRE_TYPE``; Stratus's Placement answers in it,
    and the same query without that Accept is the API's JSON, unchanged."""
    from stratus.placement import candidate_table

    wsgi = build_wsgi(placement_app)
    client = pc.PlacementClient("http://placement.test", wsgi_app=wsgi)
    client.create_provider("11111111-1111-1111-1111-111111111111", "cn1")
    _, gen = client.get_inventories("11111111-1111-1111-1111-111111111111")
    client.set_inventories("11111111-1111-1111-1111-111111111111", gen, {
        "VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}})
    params = [("resources", "VCPU:2,MEMORY_MB:512"), ("limit", "10")]
    asked = client._http.request("GET", "/allocation_candidates", params=params,
                                 headers=pc._ASK_TABLE)
    assert asked.headers["content-type"].startswith(candidate_table.WIRE_TYPE)
    plain = client._http.request("GET", "/allocation_candidates", params=params)
    assert plain.headers["content-type"].startswith("application/json")
    body = plain.json()
    table = client.candidate_table(params)
    assert table.roots == ["11111111-1111-1111-1111-111111111111"]
    assert table.requests_of(0) == body["allocation_requests"]
    assert int(table.usage["VCPU"].capacity[0]) == 8
    assert int(table.usage["MEMORY_MB"].used[0]) == 0


def test_only_a_client_preferring_the_table_gets_it_and_errors_read_alike(placement_app):
    from stratus.placement import candidate_table

    wsgi = build_wsgi(placement_app)
    client = pc.PlacementClient("http://placement.test", wsgi_app=wsgi)
    direct = pc.PlacementClient("http://placement.test", wsgi_app=wsgi, direct=placement_app)
    params = [("resources", "VCPU:1"), ("limit", "5")]
    for accept in ("*/*", f"{candidate_table.WIRE_TYPE};q=0, application/json",
                   f"application/json, {candidate_table.WIRE_TYPE};q=0.5",
                   # malformed headers naming the type: the API's JSON, never a 500
                   f"{candidate_table.WIRE_TYPE};q=abc", f"{candidate_table.WIRE_TYPE};;;",
                   f"{candidate_table.WIRE_TYPE}/x/y"):
        answer = client._http.request("GET", "/allocation_candidates", params=params,
                                      headers={"Accept": accept})
        assert answer.status_code == 200, accept
        assert answer.headers["content-type"].startswith("application/json"), accept
    table = client._http.request("GET", "/allocation_candidates", params=params,
                                 headers=pc._ASK_TABLE)
    assert table.headers["vary"] == "openstack-api-version, Accept"
    # A query Placement refuses: the same error over HTTP and straight from the app.
    bad = [("resources", "VCPU:1,NO_SUCH_CLASS:2")]
    errors = []
    for one in (client, direct):
        with pytest.raises(pc.PlacementClientError) as err:
            one.candidate_table(bad)
        errors.append((type(err.value), err.value.status, err.value.detail))
    assert errors[0] == errors[1]
    assert errors[0][1] == 400
