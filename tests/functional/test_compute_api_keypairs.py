"""/os-keypairs through the compute API: made, imported, listed in pages, shown,
deleted, per user (an admin may act for another), and bad input refused."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.hazmat.primitives.serialization import pkcs12

from tests.functional.compute_world import World

pytestmark = pytest.mark.all_backends


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


def ssh_public_key() -> str:
    key = ed25519.Ed25519PrivateKey.generate().public_key()
    return key.public_bytes(serialization.Encoding.OpenSSH,
                            serialization.PublicFormat.OpenSSH).decode() + " me@laptop"


def md5_fingerprint(public_key: str) -> str:
    digest = hashlib.md5(base64.b64decode(public_key.split()[1])).hexdigest()
    return ":".join(digest[i:i + 2] for i in range(0, 32, 2))


def test_a_made_key_pair_returns_its_private_key_once(world):
    alice = world.client.as_user("alice:team")
    resp = alice.post("/os-keypairs", json={"keypair": {"name": "made"}})
    assert resp.status_code == 201, resp.text
    pair = resp.json()["keypair"]
    assert pair["private_key"].startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert pair["public_key"].startswith("ssh-rsa ")
    assert pair["fingerprint"] == md5_fingerprint(pair["public_key"])
    assert (pair["type"], pair["user_id"]) == ("ssh", "alice")
    shown = alice.get("/os-keypairs/made").json()["keypair"]
    assert "private_key" not in shown and shown["public_key"] == pair["public_key"]


def test_a_made_x509_key_pair_is_a_certificate_with_its_key(world):
    """As Nova's generate_winrm_x509_cert: a self-signed certificate for the user (the
    public key), and the key with it as PKCS#12 in base64 (the private key)."""
    alice = world.client.as_user("alice:team")
    resp = alice.post("/os-keypairs", json={"keypair": {"name": "win", "type": "x509"}})
    assert resp.status_code == 201, resp.text
    pair = resp.json()["keypair"]
    cert = x509.load_pem_x509_certificate(pair["public_key"].encode())
    assert cert.subject.rfc4514_string() == "CN=alice"
    key, in_bundle, _ = pkcs12.load_key_and_certificates(
        base64.b64decode(pair["private_key"]), None)
    assert in_bundle == cert and key is not None
    der = cert.public_bytes(serialization.Encoding.DER)
    digest = hashlib.sha1(der).hexdigest()
    assert pair["fingerprint"] == ":".join(digest[i:i + 2] for i in range(0, 40, 2))
    assert alice.get("/os-keypairs/win").json()["keypair"]["type"] == "x509"


def test_import_list_show_delete_and_others_cannot_see_them(world):
    alice, bob = world.client.as_user("alice:team"), world.client.as_user("bob:team")
    key = ssh_public_key()
    made = alice.post("/os-keypairs", json={"keypair": {"name": "laptop",
                                                        "public_key": key}})
    assert made.status_code == 201, made.text
    assert made.json()["keypair"]["fingerprint"] == md5_fingerprint(key)
    assert "private_key" not in made.json()["keypair"]
    again = alice.post("/os-keypairs", json={"keypair": {"name": "laptop",
                                                         "public_key": key}})
    assert again.status_code == 409
    assert [k["keypair"]["name"] for k in alice.get("/os-keypairs").json()["keypairs"]] == [
        "laptop"]
    assert bob.get("/os-keypairs").json()["keypairs"] == []
    assert bob.get("/os-keypairs/laptop").status_code == 404
    assert bob.get("/os-keypairs", params={"user_id": "alice"}).status_code == 403
    admin = world.client.get("/os-keypairs", params={"user_id": "alice"})
    assert [k["keypair"]["name"] for k in admin.json()["keypairs"]] == ["laptop"]
    assert alice.delete("/os-keypairs/laptop").status_code == 204
    assert alice.delete("/os-keypairs/laptop").status_code == 404


def test_key_pairs_page_with_limit_and_marker(world):
    for name in ("a", "b", "c"):
        assert world.client.post("/os-keypairs", json={"keypair": {
            "name": name, "public_key": ssh_public_key()}}).status_code == 201
    first = world.client.get("/os-keypairs", params={"limit": "2"}).json()
    assert [k["keypair"]["name"] for k in first["keypairs"]] == ["a", "b"]
    assert "marker=b" in first["keypairs_links"][0]["href"]
    rest = world.client.get("/os-keypairs", params={"limit": "2", "marker": "b"}).json()
    assert [k["keypair"]["name"] for k in rest["keypairs"]] == ["c"]
    assert world.client.get("/os-keypairs", params={"marker": "zz"}).status_code == 400


@pytest.mark.parametrize("body", [
    {"keypair": {"name": "bad/name"}},
    {"keypair": {"name": " padded "}},
    {"keypair": {"name": ""}},
    {"keypair": {"name": "k", "public_key": "ssh-rsa not-base64!"}},
    {"keypair": {"name": "k", "public_key": "hello"}},
    {"keypair": {"name": "k", "type": "pgp"}},
    {"keypair": {"name": "k", "type": "x509", "public_key": "not a cert"}},
    {"keypair": {"name": "k", "extra": 1}},
    {"keypair": "k"},
])
def test_bad_key_pairs_are_400(world, body):
    resp = world.client.post("/os-keypairs", json=body)
    assert resp.status_code == 400, resp.text
    assert resp.json()["badRequest"]["message"]
